"""Configuration: `application.ini` and `rag-projects.json`, read once into typed objects.

This is the only module that reads configuration files or the environment. Every error names the
file, the key, the bad value and what is expected. Paths in the ini are relative to the ini's
folder; roots in the projects file are relative to the projects file's folder. The token, when
not configured, is generated once and kept under the data folder with owner-only permissions; it
is never logged.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexer.embed import (
    CHUNK_VECTORS,
    DEFAULT_CHUNK_VECTORS,
    DEFAULT_OLLAMA_HOST,
    DEFAULT_PROVIDER,
    MIN_DOCUMENT_TOKENS,
    PROVIDER_NONE,
    PROVIDERS,
)
from indexer.errors import ConfigError, ProjectNotFound
from indexer.project import Project, Root, project_name_problem
from indexer.search import DEFAULT_EF_SEARCH
from indexer.sweep import (
    DEFAULT_FILES_PER_COMMIT,
    DEFAULT_MAX_FILE_BYTES,
    SweepOptions,
    WalkOptions,
)

if TYPE_CHECKING:
    from indexer.embed import Embedder

CONFIG_ENV = "CODE_RAG_CONFIG"
TOKEN_ENV = "CODE_RAG_TOKEN"
DSN_ENV = "CODE_RAG_DSN"

DEFAULT_CONFIG_NAME = "application.ini"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 17080
DEFAULT_DOCUMENT_TOKENS = 0  # whole texts (see docs/operations.md for the trade-off)
DEFAULT_EMBEDDING_THREADS = 0  # local: ONNX Runtime's intra-op threads; 0 = the machine's cores
DEFAULT_SWEEP_INTERVAL_MINUTES = 10
# How long file events gather into one batch: a burst of saves or a checkout is applied once.
DEFAULT_WATCH_DEBOUNCE_MS = 300
DEFAULT_DATA = ".data"
DEFAULT_PROJECTS = "rag-projects.json"
TOKEN_FILE = "token"
MIN_TOKEN_LENGTH = 16


@dataclass(frozen=True)
class ServerSettings:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str = field(default="", repr=False)


@dataclass(frozen=True)
class DatabaseSettings:
    dsn: str = field(default="", repr=False)

    @property
    def embedded(self) -> bool:
        return not self.dsn


@dataclass(frozen=True)
class EmbeddingSettings:
    provider: str = DEFAULT_PROVIDER
    model: str = ""  # empty: the provider's default model
    host: str = DEFAULT_OLLAMA_HOST
    threads: int = DEFAULT_EMBEDDING_THREADS
    # Each chunk and definition embedded from its first this many tokens; 0: the whole text
    # (docs/operations.md: what a shorter cut saves and costs).
    document_tokens: int = DEFAULT_DOCUMENT_TOKENS
    # whole: each chunk's text, and each definition no chunk speaks for again; parts: each
    # line read once, a chunk's vector the mean of its parts' (`indexer.sweep.parts`).
    chunk_vectors: str = DEFAULT_CHUNK_VECTORS

    @property
    def model_free(self) -> bool:
        """provider = none: no model is loaded or asked, nothing is embedded; search answers
        from keywords and names."""
        return self.provider == PROVIDER_NONE


@dataclass(frozen=True)
class IndexerSettings:
    # False: a read replica, which answers from the database and never writes to it (no
    # sweeps, no watchers, no background vectors, no schema changes).
    enabled: bool = True
    sweep_interval_minutes: int = DEFAULT_SWEEP_INTERVAL_MINUTES
    files_per_commit: int = DEFAULT_FILES_PER_COMMIT
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    watch: bool = True  # follow file events between sweeps
    watch_debounce_ms: int = DEFAULT_WATCH_DEBOUNCE_MS


@dataclass(frozen=True)
class SearchSettings:
    ef_search: int = DEFAULT_EF_SEARCH


@dataclass(frozen=True)
class Settings:
    config_path: Path
    data_dir: Path
    projects_path: Path
    server: ServerSettings
    database: DatabaseSettings
    embedding: EmbeddingSettings
    indexer: IndexerSettings
    search: SearchSettings
    projects: dict[str, Project]
    # Named groups of projects, each served as one endpoint over all its projects.
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def members(self, name: str) -> tuple[str, ...] | None:
        """The projects the endpoint `name` serves: the project itself, or a group's members;
        None when `name` is neither."""
        if name in self.projects:
            return (name,)
        return self.groups.get(name)


# --- application.ini ------------------------------------------------------------------------


def _int(lo: int, hi: int) -> tuple[str, Any]:
    return (f"an integer from {lo} to {hi}", (int, lo, hi))


# section -> key -> (what is expected, parser spec). A spec is `str` or `(int, lo, hi)` or a
# tuple of allowed strings.
INI_KEYS: dict[str, dict[str, tuple[str, Any]]] = {
    "server": {
        "host": ("a host name or IP address", str),
        "port": _int(1, 65535),
        "token": (f"a secret of at least {MIN_TOKEN_LENGTH} characters, or empty", str),
    },
    "database": {"dsn": ("a PostgreSQL connection string, or empty for embedded", str)},
    "embedding": {
        "provider": ("one of: " + ", ".join(PROVIDERS), PROVIDERS),
        "model": ("a model name (ollama) or model directory (local), or empty", str),
        "host": ("an http:// or https:// URL", str),
        "threads": ("an integer from 0 to 256 (0: the machine's cores)", (int, 0, 256)),
        "document_tokens": (
            f"0 (whole texts) or an integer from {MIN_DOCUMENT_TOKENS} to 8192",
            (int, 0, 8192),
        ),
        "chunk_vectors": ("one of: " + ", ".join(CHUNK_VECTORS), CHUNK_VECTORS),
    },
    "indexer": {
        "enabled": ("true or false", bool),
        "sweep_interval_minutes": _int(1, 10_080),
        "files_per_commit": _int(1, 100_000),
        "max_file_bytes": _int(1, 1_000_000_000),
        "watch": ("true or false", bool),
        "watch_debounce_ms": _int(10, 60_000),
    },
    "search": {"ef_search": _int(1, 1000)},
    "paths": {"data": ("a folder path", str), "projects": ("a file path", str)},
}


BOOLEAN_WORDS = {"true": True, "yes": True, "on": True, "1": True}
BOOLEAN_WORDS.update({"false": False, "no": False, "off": False, "0": False})


def _parse_value(file: Path, section: str, key: str, raw: str) -> Any:
    expected, spec = INI_KEYS[section][key]
    value = raw.strip()
    where = f"{file}: [{section}] {key} = {raw!r}"
    if isinstance(spec, tuple) and spec and spec[0] is int:
        _, lo, hi = spec
        try:
            number = int(value.replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where} is not valid: expected {expected}") from None
        if key == "document_tokens" and 0 < number < MIN_DOCUMENT_TOKENS:
            raise ConfigError(f"{where} is too short to embed: expected {expected}")
        if not lo <= number <= hi:
            raise ConfigError(f"{where} is out of range: expected {expected}")
        return number
    if spec is bool:
        flag = value.lower()
        if flag not in BOOLEAN_WORDS:
            raise ConfigError(f"{where} is not valid: expected {expected}")
        return BOOLEAN_WORDS[flag]
    if isinstance(spec, tuple):
        if value not in spec:
            raise ConfigError(f"{where} is not valid: expected {expected}")
        return value
    if key == "host" and section == "embedding" and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where} is not valid: expected {expected}")
    if key == "token" and value and len(value) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"{file}: [server] token is too short: expected {expected}")
    return value


def read_ini(path: Path) -> dict[str, dict[str, Any]]:
    """Parse and check `application.ini`; a missing file means all defaults."""
    parser = configparser.ConfigParser(interpolation=None, default_section="__no_defaults__")
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    if path.exists():
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot be parsed as an ini file: {exc}") from None
    values: dict[str, dict[str, Any]] = {}
    for section in parser.sections():
        if section not in INI_KEYS:
            raise ConfigError(
                f"{path}: unknown section [{section}]: expected one of "
                + ", ".join(f"[{s}]" for s in INI_KEYS)
            )
        for key, raw in parser.items(section):
            if key not in INI_KEYS[section]:
                raise ConfigError(
                    f"{path}: unknown key {key!r} in [{section}]: expected one of "
                    + ", ".join(INI_KEYS[section])
                )
            values.setdefault(section, {})[key] = _parse_value(path, section, key, raw)
    return values


# --- rag-projects.json ----------------------------------------------------------------------

PROJECT_KEYS = ("roots", "include", "exclude", "tests", "docs", "code")
ROOT_KEYS = ("path", "name")


def _globs(file: Path, name: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise ConfigError(
            f"{file}: projects.{name}.{key} = {json.dumps(value)} is not valid: "
            'expected a list of glob strings such as ["**/generated/**"]'
        )
    return tuple(value)


def _root(file: Path, name: str, index: int, entry: object) -> Root:
    where = f"{file}: projects.{name}.roots[{index}]"
    raw_path: object
    label: object
    if isinstance(entry, str):
        raw_path, label = entry, None
    elif isinstance(entry, dict):
        unknown = sorted(set(entry) - set(ROOT_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}: expected path and name")
        raw_path, label = entry.get("path"), entry.get("name")
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise ConfigError(f"{where}.name = {json.dumps(label)}: expected a non-empty string")
    else:
        raise ConfigError(
            f"{where} = {json.dumps(entry)} is not valid: expected a path string "
            'or {"path": ..., "name": ...}'
        )
    if not isinstance(raw_path, str) or not raw_path:
        raise ConfigError(f"{where}.path = {json.dumps(raw_path)}: expected a folder path")
    path = (file.parent / Path(raw_path).expanduser()).resolve()
    if not path.is_dir():
        raise ConfigError(
            f"{where} = {raw_path!r}: the folder {path} does not exist; "
            "create it or remove this root"
        )
    return Root(path=path, name=label if isinstance(label, str) else path.name)


def _project(file: Path, name: object, body: object) -> Project:
    problem = project_name_problem(name)
    if problem:
        raise ConfigError(f"{file}: projects: {problem}")
    assert isinstance(name, str)
    if not isinstance(body, dict):
        raise ConfigError(f'{file}: projects.{name} is not valid: expected an object with "roots"')
    unknown = sorted(set(body) - set(PROJECT_KEYS))
    if unknown:
        raise ConfigError(
            f"{file}: projects.{name}: unknown key {unknown[0]!r}: expected "
            + ", ".join(PROJECT_KEYS)
        )
    roots_value = body.get("roots")
    if not isinstance(roots_value, list) or not roots_value:
        raise ConfigError(
            f"{file}: projects.{name}.roots = {json.dumps(roots_value)} is not valid: "
            "expected a non-empty list of folders"
        )
    roots = tuple(_root(file, name, i, entry) for i, entry in enumerate(roots_value))
    labels = [r.name for r in roots]
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(
                f"{file}: projects.{name}.roots: two roots are both named {label!r}: "
                'give one a distinct "name"'
            )
    return Project(
        name=name,
        roots=roots,
        include=_globs(file, name, "include", body.get("include", [])),
        exclude=_globs(file, name, "exclude", body.get("exclude", [])),
        tests=_globs(file, name, "tests", body.get("tests", [])),
        docs=_globs(file, name, "docs", body.get("docs", [])),
        code=_globs(file, name, "code", body.get("code", [])),
    )


def read_projects(path: Path) -> tuple[dict[str, Project], dict[str, tuple[str, ...]]]:
    """Parse and check `rag-projects.json`: its projects and its groups of projects; a missing
    file means no projects yet."""
    if not path.exists():
        return {}, {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f'{path}: expected an object like {{"projects": {{...}}}}')
    unknown = sorted(set(document) - {"projects", "groups"})
    if unknown:
        raise ConfigError(f'{path}: unknown key {unknown[0]!r}: expected "projects" or "groups"')
    projects = document.get("projects", {})
    if not isinstance(projects, dict):
        raise ConfigError(
            f"{path}: projects = {json.dumps(projects)[:80]} is not valid: "
            "expected an object mapping project names to their roots"
        )
    found = {name: _project(path, name, body) for name, body in projects.items()}
    return found, _groups(path, document.get("groups", {}), found)


def _groups(
    file: Path, groups: object, projects: Mapping[str, Project]
) -> dict[str, tuple[str, ...]]:
    """The groups of the projects file: each a valid name no project has (a group is served
    at /rag-mcp/<group> beside the projects), over one or more configured projects."""
    if not isinstance(groups, dict):
        raise ConfigError(
            f"{file}: groups = {json.dumps(groups)[:80]} is not valid: expected an object "
            'mapping group names to lists of projects, such as {"platform": ["shop", "billing"]}'
        )
    checked: dict[str, tuple[str, ...]] = {}
    for name, members in groups.items():
        problem = project_name_problem(name)
        if problem:
            raise ConfigError(f"{file}: groups: {problem.replace('project name', 'group name')}")
        if name in projects:
            raise ConfigError(
                f"{file}: groups.{name}: a project is named {name!r} too: "
                "give the group another name (both would be served at the same URL)"
            )
        if (
            not isinstance(members, list)
            or not members
            or not all(isinstance(m, str) for m in members)
        ):
            raise ConfigError(
                f"{file}: groups.{name} = {json.dumps(members)[:80]} is not valid: "
                "expected a non-empty list of project names"
            )
        for member in members:
            if member not in projects:
                known = ", ".join(sorted(projects)) or "none"
                raise ConfigError(
                    f"{file}: groups.{name}: {member!r} is not a project of this file "
                    f"(its projects: {known})"
                )
        checked[name] = tuple(dict.fromkeys(members))
    return checked


def reread_projects(settings: Settings) -> Settings:
    """`settings` with its projects and groups read anew from the projects file (the rest of
    the settings stays as read at start). Raises `ConfigError` when the file does not parse, or
    names a root that is not there; a missing file is an error here (see `read_projects`):
    a file that vanished while serving is more often a save in progress than a wish to serve
    nothing."""
    path = settings.projects_path
    if not path.exists():
        raise ConfigError(
            f"{path}: the projects file is gone: restore it, or write "
            '{"projects": {}} to serve no project'
        )
    projects, groups = read_projects(path)
    return replace(settings, projects=projects, groups=groups)


# --- the token --------------------------------------------------------------------------------


def ensure_token(data_dir: Path, *, fresh: bool = False) -> str:
    """The saved token, generated (cryptographically random, mode 0600) on first use, or
    anew when `fresh`."""
    token_path = data_dir / TOKEN_FILE
    if token_path.exists() and not fresh:
        token = token_path.read_text(encoding="utf-8").strip()
        if len(token) >= MIN_TOKEN_LENGTH:
            return token
    data_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    # Create with owner-only permissions from the start: no window where others can read it.
    fd = os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    os.chmod(token_path, 0o600)
    return token


# --- loading ----------------------------------------------------------------------------------


def default_config_path() -> Path:
    """The `application.ini` a command reads when `--config` and `CODE_RAG_CONFIG` name none:
    the current folder's when it has one (a folder's own instance, a checkout's); else a
    checkout's current folder (where `./bld up` writes one), and the installed command's
    user-wide one (`~/.config/code-rag/application.ini`), which serves every folder
    `code-rag up` was run in."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser().resolve()
    here = Path(DEFAULT_CONFIG_NAME).resolve()
    if here.exists() or source_checkout() is not None:
        return here
    return user_config_dir() / DEFAULT_CONFIG_NAME


def load_settings(
    config_path: Path | None = None, *, create_token: bool = True, missing_ok: bool = False
) -> Settings:
    """Read `application.ini` and the projects file it names into one `Settings`. A file named
    by the caller must exist unless `missing_ok`; with none, the defaults apply."""
    path = (config_path or default_config_path()).expanduser().resolve()
    if config_path is not None and not missing_ok and not path.exists():
        raise ConfigError(f"{path}: no such configuration file (run `code-rag init` to write one)")
    ini = read_ini(path)
    base = path.parent
    paths = ini.get("paths", {})
    # The user-wide configuration keeps its data with the user's data, not among its config.
    default_data = user_data_dir() if is_user_config(path) else DEFAULT_DATA
    data_dir = (base / Path(paths.get("data", default_data)).expanduser()).resolve()
    projects_path = (base / Path(paths.get("projects", DEFAULT_PROJECTS)).expanduser()).resolve()

    server = ServerSettings(**ini.get("server", {}))
    env_token = os.environ.get(TOKEN_ENV, "").strip()
    if env_token:
        if len(env_token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"{TOKEN_ENV} is too short: expected at least {MIN_TOKEN_LENGTH} characters"
            )
        server = ServerSettings(server.host, server.port, env_token)
    elif not server.token and create_token:
        server = ServerSettings(server.host, server.port, ensure_token(data_dir))

    projects, groups = read_projects(projects_path)
    database = DatabaseSettings(**ini.get("database", {}))
    env_dsn = os.environ.get(DSN_ENV, "").strip()
    if env_dsn:
        database = DatabaseSettings(dsn=env_dsn)

    return Settings(
        config_path=path,
        data_dir=data_dir,
        projects_path=projects_path,
        server=server,
        database=database,
        embedding=EmbeddingSettings(**ini.get("embedding", {})),
        indexer=IndexerSettings(**ini.get("indexer", {})),
        search=SearchSettings(**ini.get("search", {})),
        projects=projects,
        groups=groups,
    )


# --- where an instance lives, and its first run ------------------------------------------------

# The folder above the packages: a checkout when `./bld` runs them (or an editable install),
# site-packages when installed from a wheel. What the product needs at run time lives inside
# its packages (this example, the templates, the model), so both forms find it.
CHECKOUT = Path(__file__).resolve().parent.parent
INI_EXAMPLE = Path(__file__).resolve().parent / "application.ini.example"
APP_FOLDER = "code-rag"  # under the user's config and data folders
DEMO_PROJECT = "code_rag"
# The product's source at any depth (chunkers' tree-sitter queries included) and its docs; of
# indexer/ only the Python, as the bundled model folder (a 0.5 MB tokenizer.json) is data.
DEMO_INCLUDE = ["/README.md", "docs/**", "chunkers/**", "indexer/**/*.py", "rag_server/**"]
# A folder's project name is its own name made a valid one; one that cannot start with a letter
# gets this in front.
FOLDER_NAME_PREFIX = "project_"


def source_checkout() -> Path | None:
    """The checkout the code runs from (`./bld`, an editable install), or None when installed."""
    if (CHECKOUT / "bld").is_file() and (CHECKOUT / "pyproject.toml").is_file():
        return CHECKOUT
    return None


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    base = Path(value) if value and Path(value).is_absolute() else Path(fallback).expanduser()
    return base.resolve() / APP_FOLDER


def user_config_dir() -> Path:
    """Where the installed command keeps its configuration: `$XDG_CONFIG_HOME/code-rag`
    (default `~/.config/code-rag`)."""
    return _xdg("XDG_CONFIG_HOME", "~/.config")


def user_data_dir() -> Path:
    """Where the user-wide configuration keeps its data (database, token):
    `$XDG_DATA_HOME/code-rag` (default `~/.local/share/code-rag`)."""
    return _xdg("XDG_DATA_HOME", "~/.local/share")


def is_user_config(config_path: Path) -> bool:
    """Whether `config_path` is the user-wide configuration (which `code-rag up` extends with
    the folder it runs in)."""
    return config_path == user_config_dir() / DEFAULT_CONFIG_NAME


def initial_files(config_path: Path) -> tuple[Path, Path]:
    """Where `init` writes: the ini, and the projects file next to it."""
    return config_path, config_path.parent / DEFAULT_PROJECTS


def write_initial_config(
    config_path: Path, *, force: bool = False, folder: Path | None = None
) -> list[Path]:
    """Write `application.ini` (the example) and a `rag-projects.json` that registers `folder`
    as a project named after it (None: this checkout, as a small demo project), and save a
    fresh token under the data folder (where clients and scripts read it), so no secret sits
    in the ini. The user-wide configuration keeps its data in the user's data folder; any
    other, in `.data` beside it.

    Existing files are kept unless `force`; returns the files written.
    """
    ini_path, projects_path = initial_files(config_path)
    existing = [p for p in (ini_path, projects_path) if p.exists()]
    if existing and not force:
        names = " and ".join(str(p) for p in existing)
        raise ConfigError(f"{names} already exist: keep them, or run `code-rag init --force`")
    if folder is None:
        checkout = source_checkout()
        if checkout is None:
            raise ConfigError("no folder to index: run `code-rag init` in your project's folder")
        projects: dict[str, Any] = {
            DEMO_PROJECT: {
                "roots": [str(checkout)],
                # code-rag's own source and docs (about 1,000 chunks): a first `./bld up`
                # answers by name and keyword once the rows are in, seconds after the start,
                # and embeds the vectors in the background.
                "include": DEMO_INCLUDE,
            }
        }
    else:
        folder = folder.resolve()
        problem = folder_problem(folder)
        if problem:
            raise ConfigError(problem)
        projects = {folder_project_name(folder, ()): {"roots": [str(folder)]}}
    ini = INI_EXAMPLE.read_text(encoding="utf-8")
    data_dir = ini_path.parent / DEFAULT_DATA
    if is_user_config(ini_path):
        data_dir = user_data_dir()
        ini = ini.replace(f"\ndata = {DEFAULT_DATA}\n", f"\ndata = {data_dir}\n")
    ini_path.parent.mkdir(parents=True, exist_ok=True)
    ini_path.write_text(ini, encoding="utf-8")
    _write_json(projects_path, {"projects": projects})
    ensure_token(data_dir, fresh=True)
    return [ini_path, projects_path, data_dir / TOKEN_FILE]


def folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot be indexed as a project of its own (None: it can)."""
    if folder == Path.home().resolve() or folder.parent == folder:
        which = "the filesystem's root" if folder.parent == folder else "your home folder"
        return (
            f"{folder} is {which}, not a project: run `code-rag up` in a project's folder, "
            f"or list the folders to index in rag-projects.json (docs/usage.md)"
        )
    return None


def folder_project_name(folder: Path, taken: Collection[str]) -> str:
    """The project name of `folder`: its own name in lowercase letters, digits and underscores
    (`My-App` -> `my_app`), numbered when `taken` holds it already."""
    base = re.sub(r"[^a-z0-9]+", "_", folder.name.lower()).strip("_")
    if not base[:1].isalpha():
        base = FOLDER_NAME_PREFIX + base
    base = base.rstrip("_")[:56]
    if project_name_problem(base):  # `public`, `pg_*`
        base = FOLDER_NAME_PREFIX + base
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def add_folder_project(settings: Settings, folder: Path) -> str | None:
    """Register `folder` in the settings' projects file as a project named after it and return
    the name; None when a project already covers it (it is one of its roots, or inside one).
    The file's other contents are kept; it is replaced whole, so a running server never reads
    half of it."""
    folder = folder.resolve()
    for project in settings.projects.values():
        if any(folder.is_relative_to(root.path) for root in project.roots):
            return None
    problem = folder_problem(folder)
    if problem:
        raise ConfigError(problem)
    path = settings.projects_path
    document: dict[str, Any] = {"projects": {}}
    if path.exists():
        document = json.loads(path.read_text(encoding="utf-8"))  # read_projects checked it
        document.setdefault("projects", {})
    name = folder_project_name(folder, [*document["projects"], *settings.groups])
    document["projects"][name] = {"roots": [str(folder)]}
    _write_json(path, document)
    return name


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


# --- what the settings build -------------------------------------------------------------------

MCP_PATH = "/rag-mcp"
ADMIN_PATH = "/rag-admin"
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


def server_url(settings: Settings, path: str) -> str:
    """The URL a local client uses to reach `path` on the configured server."""
    host = settings.server.host
    if host in WILDCARD_HOSTS:
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.server.port}{path}"


def mcp_url(settings: Settings, project: str) -> str:
    return server_url(settings, f"{MCP_PATH}/{project}")


ALL_PROJECTS = "all"


def select_projects(settings: Settings, target: str) -> list[Project]:
    """One configured project by name, or every one for "all" (the CLI's and the admin
    endpoint's spelling alike)."""
    if target == ALL_PROJECTS:
        return list(settings.projects.values())
    if target not in settings.projects:
        known = ", ".join(sorted(settings.projects)) or "none yet"
        raise ProjectNotFound(
            f"unknown project {target!r}: {settings.projects_path} configures {known}; "
            f"add it there, or use `{ALL_PROJECTS}`"
        )
    return [settings.projects[target]]


def endpoint_projects(settings: Settings, name: str) -> list[Project]:
    """The projects `name` reads: a configured project, or a group's projects (the CLI's
    spelling of an endpoint)."""
    members = settings.members(name)
    if members is None:
        projects = ", ".join(sorted(settings.projects)) or "none yet"
        groups = ", ".join(sorted(settings.groups)) or "none"
        raise ProjectNotFound(
            f"unknown project or group {name!r}: {settings.projects_path} configures the "
            f"projects {projects} and the groups {groups}"
        )
    return [settings.projects[m] for m in members]


def make_settings_embedder(settings: Settings) -> Embedder | None:
    """The embedder the settings ask for (not yet loaded or contacted); None when they ask
    for none (model-free)."""
    emb = settings.embedding
    if emb.model_free:
        return None
    from indexer.embed import make_embedder

    options: dict[str, Any] = {}
    if emb.provider == "local" and emb.threads:
        options["threads"] = emb.threads
    if emb.document_tokens:
        options["document_tokens"] = emb.document_tokens
    options["chunk_vectors"] = emb.chunk_vectors
    return make_embedder(emb.provider, emb.model or None, emb.host, **options)


def sweep_options(settings: Settings) -> SweepOptions:
    """`SweepOptions` from the [indexer] section."""
    return SweepOptions(
        files_per_commit=settings.indexer.files_per_commit,
        walk=WalkOptions(max_file_bytes=settings.indexer.max_file_bytes),
    )
