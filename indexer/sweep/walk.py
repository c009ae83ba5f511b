"""Walking a project's roots: which files get indexed, and why the others are skipped.

`.gitignore` files are honoured with git's semantics (nested files, negations, anchored and
directory patterns, `.git/info/exclude`; a deeper file overrides a shallower one; nothing inside
an ignored folder can be re-included), through `pathspec`. Then the project's include/exclude
globs, the default skip lists (vendored and build folders, secret files), a size cap, and
symlinks: a link is followed only when its target stays inside the root. Binary content is
judged later, by the chunker, when the file is read.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pathspec

from indexer.project import Project, Root, root_problem

DEFAULT_SKIP_DIRS: tuple[str, ...] = (
    ".git", ".hg", ".svn", "node_modules", "bower_components", "dist", "build", "target", "out",
    ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".nox", ".eggs", "*.egg-info", ".gradle", ".idea", ".next", ".nuxt", ".svelte-kit",
    ".terraform", ".cache", "coverage", "htmlcov", "site-packages", "vendor", "Pods",
    ".dart_tool", "_build", "deps", ".stack-work", "zig-cache", "zig-out",
)  # fmt: skip
# A folder holding one of these is a Python environment (`python -m venv`, virtualenv, conda),
# skipped whatever its name (`venv`, `env`, `py311`), while a source folder named `env` or `venv`
# (a command's sources, a module of that name) is walked like any other.
ENVIRONMENT_MARKERS: tuple[str, ...] = ("pyvenv.cfg", "conda-meta")
DEFAULT_SECRET_FILES: tuple[str, ...] = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.kdbx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "credentials*",
    ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", "*.tfvars", "secrets.*",
    "*.secret", "*.secrets",
)  # fmt: skip
# Known binary formats, skipped without being read (anything else binary is caught by content).
DEFAULT_BINARY_SUFFIXES: tuple[str, ...] = (
    ".so", ".a", ".o", ".obj", ".dll", ".dylib", ".exe", ".bin", ".pyc", ".pyo", ".pyd",
    ".class", ".jar", ".war", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar",
    ".tar", ".whl", ".egg", ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff",
    ".pdf", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".wav", ".ogg", ".flac",
    ".avi", ".mov", ".mkv", ".sqlite", ".sqlite3", ".db", ".pkl", ".pickle", ".npy", ".npz",
    ".parquet", ".onnx", ".pt", ".safetensors", ".iso", ".dmg", ".psd", ".DS_Store",
)  # fmt: skip
DEFAULT_MAX_FILE_BYTES = 1_000_000

# Skip reasons, as reported and counted.
GITIGNORED = "gitignored"
EXCLUDED = "excluded by the project's globs"
NOT_INCLUDED = "not matched by the project's include globs"
SKIPPED_DIR = "in a skipped folder"
SECRET = "secret file"
TOO_LARGE = "over the size cap"
SYMLINK_OUT = "symlink leading out of the root"
BROKEN_LINK = "broken symlink"
NOT_REGULAR = "not a regular file"
UNREADABLE = "unreadable"
EMPTY = "empty"
BINARY_FILE = "binary file"


@dataclass(frozen=True)
class WalkOptions:
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    skip_dirs: tuple[str, ...] = DEFAULT_SKIP_DIRS
    secret_files: tuple[str, ...] = DEFAULT_SECRET_FILES
    binary_suffixes: tuple[str, ...] = DEFAULT_BINARY_SUFFIXES


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file to consider for indexing: where it is and what `stat` said."""

    repo: str
    path: str  # relative to the root, with forward slashes
    absolute: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Skipped:
    repo: str
    path: str
    reason: str


@dataclass
class WalkResult:
    files: list[Candidate] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    root_problems: dict[str, str] = field(default_factory=dict)  # repo -> why it was not walked
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (repo, stored path) escaped

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped).most_common())


def _stored(item: Candidate | Skipped) -> Candidate | Skipped:
    path = storable(item.path)
    return replace(item, path=path) if path != item.path else item


def storable(rel: str) -> str:
    """A path as the index stores and shows it. File names that are not valid UTF-8 reach
    Python with their bad bytes as surrogate escapes, which neither PostgreSQL, JSON nor a
    tokenizer accept: those bytes are written as `\\xNN` instead."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return rel


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec.patterns) else None


def _read_ignore(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        return _spec(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


class _Ignores:
    """The gitignore rules in force for one folder: (folder relative to root, spec) pairs,
    shallowest first. `.git/info/exclude` ranks below the root's `.gitignore`, as in git."""

    def __init__(self, layers: list[tuple[str, pathspec.GitIgnoreSpec]]) -> None:
        self.layers = layers

    def entered(self, rel_dir: str, directory: Path) -> _Ignores:
        spec = _read_ignore(directory / ".gitignore")
        return _Ignores([*self.layers, (rel_dir, spec)]) if spec else self

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        for base, spec in reversed(self.layers):  # the deepest decision wins
            sub = rel_path[len(base) + 1 :] if base else rel_path
            result = spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                return bool(result.include)
        return False


class Walker:
    """Walks the roots of one project with its globs and the walk options."""

    def __init__(self, project: Project, options: WalkOptions = WalkOptions()) -> None:
        self.project = project
        self.options = options
        self.include = _spec(project.include) if project.include else None
        self.exclude = _spec(project.exclude) if project.exclude else None
        self.skip_dirs = _spec(list(options.skip_dirs))
        self.secrets = _spec(list(options.secret_files))
        self.binary_suffixes = tuple(s.lower() for s in options.binary_suffixes)

    def walk(self) -> WalkResult:
        result = WalkResult()
        for root in self.project.roots:
            problem = root_problem(root.path)
            if problem is not None:
                result.root_problems[root.name] = problem
                continue
            for item in self.walk_root(root):
                path = storable(item.path)
                if path != item.path:
                    item = replace(item, path=path)
                    if isinstance(item, Candidate):
                        result.renamed.append((item.repo, path))
                if isinstance(item, Candidate):
                    result.files.append(item)
                else:
                    result.skipped.append(item)
        return result

    def walk_root(self, root: Root) -> Iterator[Candidate | Skipped]:
        base = root.path.resolve()
        layers: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        exclude = _read_ignore(base / ".git" / "info" / "exclude")
        if exclude:
            layers.append(("", exclude))
        yield from self._walk_dir(root.name, base, base, "", _Ignores(layers))

    def _walk_dir(
        self, repo: str, base: Path, directory: Path, rel_dir: str, ignores: _Ignores
    ) -> Iterator[Candidate | Skipped]:
        ignores = ignores.entered(rel_dir, directory)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            yield Skipped(repo, rel_dir or ".", UNREADABLE)
            return
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                yield Skipped(repo, rel, UNREADABLE)
                continue
            if is_link:
                try:
                    target = Path(entry.path).resolve(strict=True)
                except (OSError, RuntimeError):
                    yield Skipped(repo, rel, BROKEN_LINK)
                    continue
                if not target.is_relative_to(base):
                    yield Skipped(repo, rel, SYMLINK_OUT)
                    continue
                if target.is_dir():
                    # Linked folders are not descended (their files are reached by their own
                    # path inside the root, and cycles are impossible this way).
                    continue
            if is_dir:
                if self._skipped_dir(entry.name, Path(entry.path)):
                    yield Skipped(repo, rel + "/", SKIPPED_DIR)
                elif ignores.ignored(rel, is_dir=True):
                    yield Skipped(repo, rel + "/", GITIGNORED)
                elif self.exclude and self.exclude.match_file(rel + "/"):
                    yield Skipped(repo, rel + "/", EXCLUDED)
                else:
                    yield from self._walk_dir(repo, base, Path(entry.path), rel, ignores)
                continue
            yield self._consider(repo, rel, Path(entry.path), ignores)

    def _skipped_dir(self, name: str, path: Path) -> bool:
        """True for a folder of the skip list by its name, or a Python environment."""
        if self.skip_dirs and self.skip_dirs.match_file(name + "/"):
            return True
        return any(os.path.lexists(path / marker) for marker in ENVIRONMENT_MARKERS)

    def walk_paths(self, root: Root, rels: Iterable[str]) -> Iterator[Candidate | Skipped]:
        """Just these paths under `root` (as file events name them), judged by the same rules
        as a walk: a file alone, a folder with everything under it; a path where nothing is
        (deleted) yields nothing."""
        base = root.path.resolve()
        for rel in rels:
            parents = self._ancestors(root.name, base, rel)
            if isinstance(parents, Skipped):
                yield _stored(parents)
                continue
            path = base / rel
            if path.is_dir() and not path.is_symlink():
                items: Iterable[Candidate | Skipped] = self._walk_dir(
                    root.name, base, path, rel, parents
                )
            elif path.is_symlink() or path.exists():
                items = [self._link_or_file(root.name, base, rel, path, parents)]
            else:
                items = ()
            for item in items:
                yield _stored(item)

    def _ancestors(self, repo: str, base: Path, rel: str) -> _Ignores | Skipped:
        """The gitignore rules in force for `rel`'s folder, or why one of its folders is
        skipped (as the walk would have skipped it)."""
        layers: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        exclude = _read_ignore(base / ".git" / "info" / "exclude")
        if exclude:
            layers.append(("", exclude))
        ignores = _Ignores(layers).entered("", base)
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            rel_dir = "/".join(parts[:depth])
            if self._skipped_dir(parts[depth - 1], base / rel_dir):
                return Skipped(repo, rel_dir + "/", SKIPPED_DIR)
            if ignores.ignored(rel_dir, is_dir=True):
                return Skipped(repo, rel_dir + "/", GITIGNORED)
            if self.exclude and self.exclude.match_file(rel_dir + "/"):
                return Skipped(repo, rel_dir + "/", EXCLUDED)
            ignores = ignores.entered(rel_dir, base / rel_dir)
        return ignores

    def _link_or_file(
        self, repo: str, base: Path, rel: str, path: Path, ignores: _Ignores
    ) -> Candidate | Skipped:
        if path.is_symlink():
            try:
                target = path.resolve(strict=True)
            except (OSError, RuntimeError):
                return Skipped(repo, rel, BROKEN_LINK)
            if not target.is_relative_to(base):
                return Skipped(repo, rel, SYMLINK_OUT)
        return self._consider(repo, rel, path, ignores)

    def _consider(self, repo: str, rel: str, path: Path, ignores: _Ignores) -> Candidate | Skipped:
        name = rel.rsplit("/", 1)[-1]
        if self.secrets and self.secrets.match_file(name):
            return Skipped(repo, rel, SECRET)
        if ignores.ignored(rel, is_dir=False):
            return Skipped(repo, rel, GITIGNORED)
        if name.lower().endswith(self.binary_suffixes):
            return Skipped(repo, rel, BINARY_FILE)
        if self.exclude and self.exclude.match_file(rel):
            return Skipped(repo, rel, EXCLUDED)
        if self.include and not self.include.match_file(rel):
            return Skipped(repo, rel, NOT_INCLUDED)
        try:
            info = path.stat()
        except OSError:
            return Skipped(repo, rel, UNREADABLE)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(repo, rel, NOT_REGULAR)
        if info.st_size > self.options.max_file_bytes:
            return Skipped(repo, rel, TOO_LARGE)
        if info.st_size == 0:
            return Skipped(repo, rel, EMPTY)
        return Candidate(repo, rel, path, info.st_size, info.st_mtime_ns)


def walk_project(project: Project, options: WalkOptions = WalkOptions()) -> WalkResult:
    return Walker(project, options).walk()
