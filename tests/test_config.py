"""application.ini and rag-projects.json: defaults, overrides, the token, and error messages
that name the file, the key, the bad value and what is expected."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from indexer.embed import CHUNK_VECTORS
from indexer.errors import ConfigError
from rag_server.config import (
    DEFAULT_EF_SEARCH,
    DEFAULT_FILES_PER_COMMIT,
    DEFAULT_PORT,
    add_folder_project,
    default_config_path,
    folder_project_name,
    load_settings,
    make_settings_embedder,
    source_checkout,
    user_config_dir,
    user_data_dir,
    write_initial_config,
)

ROOT = Path(__file__).resolve().parent.parent


def write(folder: Path, ini: str = "", projects: object | None = None) -> Path:
    path = folder / "application.ini"
    path.write_text(ini, encoding="utf-8")
    if projects is not None:
        document = {"projects": projects}
        (folder / "rag-projects.json").write_text(json.dumps(document), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    return str(info.value)


def test_defaults_with_an_empty_ini(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path))
    assert settings.server.host == "127.0.0.1"
    assert settings.server.port == DEFAULT_PORT == 17080
    assert settings.database.embedded
    assert settings.embedding.provider == "local"
    assert settings.indexer.sweep_interval_minutes == 10
    assert settings.indexer.files_per_commit == DEFAULT_FILES_PER_COMMIT == 50
    assert settings.search.ef_search == DEFAULT_EF_SEARCH == 400
    assert settings.data_dir == tmp_path / ".data"
    assert settings.projects == {}


def test_the_shipped_examples_load(tmp_path: Path) -> None:
    # The examples are what `./bld init` copies: they must stay loadable as they are.
    ini = (ROOT / "application.ini.example").read_text(encoding="utf-8")
    (tmp_path / "application.ini").write_text(ini, encoding="utf-8")
    example = json.loads((ROOT / "rag-projects.json.example").read_text(encoding="utf-8"))
    for project in example["projects"].values():
        for root in project["roots"]:
            path = root["path"] if isinstance(root, dict) else root
            (tmp_path / path).mkdir(parents=True, exist_ok=True)
    (tmp_path / "rag-projects.json").write_text(json.dumps(example), encoding="utf-8")
    settings = load_settings(tmp_path / "application.ini")
    assert settings.projects


def test_generated_token_is_saved_owner_only_and_stable(tmp_path: Path) -> None:
    first = load_settings(write(tmp_path)).server.token
    token_file = tmp_path / ".data" / "token"
    assert len(first) >= 32
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert load_settings(tmp_path / "application.ini").server.token == first


def test_settings_repr_never_shows_the_token(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "[server]\ntoken = s3cret-s3cret-s3cret\n"))
    assert settings.server.token == "s3cret-s3cret-s3cret"
    assert "s3cret" not in repr(settings)


def test_environment_overrides_token_and_dsn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODE_RAG_TOKEN", "from-the-environment-123")
    monkeypatch.setenv("CODE_RAG_DSN", "postgresql://u@localhost/x")
    settings = load_settings(write(tmp_path, "[server]\ntoken = from-the-file-123456\n"))
    assert settings.server.token == "from-the-environment-123"
    assert settings.database.dsn == "postgresql://u@localhost/x"
    assert not settings.database.embedded


def test_projects_roots_labels_and_globs(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "web-ui").mkdir()
    path = write(
        tmp_path,
        projects={
            "shop": {
                "roots": ["api", {"path": str(tmp_path / "web-ui"), "name": "web"}],
                "exclude": ["**/generated/**"],
            }
        },
    )
    shop = load_settings(path).projects["shop"]
    assert [(r.name, r.path) for r in shop.roots] == [
        ("api", tmp_path / "api"),
        ("web", tmp_path / "web-ui"),
    ]
    assert shop.exclude == ("**/generated/**",)
    assert shop.include == ()
    assert (shop.tests, shop.docs, shop.code) == ((), (), ())


def test_project_folders_of_tests_docs_and_code(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    path = write(
        tmp_path,
        projects={
            "app": {
                "roots": ["src"],
                "tests": ["qa/**"],
                "docs": ["handbook/"],
                "code": ["testing/**"],
            }
        },
    )
    app = load_settings(path).projects["app"]
    assert (app.tests, app.docs, app.code) == (("qa/**",), ("handbook/",), ("testing/**",))
    write(tmp_path, projects={"app": {"roots": ["src"], "tests": "qa/**"}})
    assert error_of(path) == (
        f'{tmp_path / "rag-projects.json"}: projects.app.tests = "qa/**" is not valid: '
        'expected a list of glob strings such as ["**/generated/**"]'
    )


def test_bad_port_names_file_key_value_and_expectation(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nport = 99999\n")
    assert error_of(path) == (
        f"{path}: [server] port = '99999' is out of range: expected an integer from 1 to 65535"
    )
    path = write(tmp_path, "[server]\nport = http\n")
    assert error_of(path) == (
        f"{path}: [server] port = 'http' is not valid: expected an integer from 1 to 65535"
    )


def test_unknown_key_and_section(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nprot = 80\n")
    assert error_of(path) == (
        f"{path}: unknown key 'prot' in [server]: expected one of host, port, token"
    )
    path = write(tmp_path, "[sever]\nport = 80\n")
    assert error_of(path).startswith(f"{path}: unknown section [sever]: expected one of [server]")


def test_bad_provider(tmp_path: Path) -> None:
    path = write(tmp_path, "[embedding]\nprovider = openai\n")
    assert error_of(path) == (
        f"{path}: [embedding] provider = 'openai' is not valid: "
        "expected one of: local, ollama, none"
    )


def test_embedding_threads_reach_the_local_embedder(tmp_path: Path) -> None:
    # [embedding] threads sets ONNX Runtime's intra-op threads; 0 (the default) means the
    # machine's cores. Building the embedder reads the model's manifest only.
    from indexer.embed.local import LocalEmbedder, default_threads

    settings = load_settings(write(tmp_path, "[embedding]\nthreads = 3\n"))
    embedder = make_settings_embedder(settings)
    assert isinstance(embedder, LocalEmbedder) and embedder.threads == 3
    default = make_settings_embedder(load_settings(write(tmp_path, "")))
    assert isinstance(default, LocalEmbedder) and default.threads == default_threads() >= 1
    path = write(tmp_path, "[embedding]\nthreads = -1\n")
    assert error_of(path) == (
        f"{path}: [embedding] threads = '-1' is out of range: "
        "expected an integer from 0 to 256 (0: the machine's cores)"
    )


def test_a_document_cut_reaches_the_embedder_and_a_cut_too_short_is_refused(
    tmp_path: Path,
) -> None:
    # [embedding] document_tokens: 0 (the default) embeds whole texts; a cut goes to either
    # provider's embedder and so into the index's recorded identity.
    settings = load_settings(write(tmp_path, "[embedding]\ndocument_tokens = 128\n"))
    embedder = make_settings_embedder(settings)
    assert embedder is not None and embedder.identity.document_tokens == 128
    default = make_settings_embedder(load_settings(write(tmp_path, "")))
    assert default is not None and default.identity.document_tokens == 0
    path = write(tmp_path, "[embedding]\ndocument_tokens = 8\n")
    assert error_of(path) == (
        f"{path}: [embedding] document_tokens = '8' is too short to embed: "
        "expected 0 (whole texts) or an integer from 32 to 8192"
    )


def test_the_way_chunks_are_read_reaches_the_embedder_and_an_unknown_one_is_refused(
    tmp_path: Path,
) -> None:
    # [embedding] chunk_vectors: each way (rest the default) into the recorded identity.
    for setting in CHUNK_VECTORS:
        text = f"[embedding]\nchunk_vectors = {setting}\n"
        embedder = make_settings_embedder(load_settings(write(tmp_path, text)))
        assert embedder is not None and embedder.identity.chunk_vectors == setting
    default = make_settings_embedder(load_settings(write(tmp_path, "")))
    assert default is not None and default.identity.chunk_vectors == "rest"
    path = write(tmp_path, "[embedding]\nchunk_vectors = halves\n")
    assert error_of(path) == (
        f"{path}: [embedding] chunk_vectors = 'halves' is not valid: "
        "expected one of: whole, parts, rest, outline"
    )


def test_invalid_project_name(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    path = write(tmp_path, projects={"My-App": {"roots": ["src"]}})
    projects = tmp_path / "rag-projects.json"
    assert error_of(path) == (
        f"{projects}: projects: 'My-App' is not a valid project name: use lowercase letters, "
        "digits and underscores, starting with a letter, at most 63 characters, not `public`, "
        "`information_schema` or `pg_*`"
    )
    write(tmp_path, projects={"pg_catalog": {"roots": ["src"]}})
    assert "'pg_catalog' is reserved by PostgreSQL" in error_of(path)


def test_missing_root(tmp_path: Path) -> None:
    path = write(tmp_path, projects={"app": {"roots": ["nowhere"]}})
    projects = tmp_path / "rag-projects.json"
    assert error_of(path) == (
        f"{projects}: projects.app.roots[0] = 'nowhere': the folder {tmp_path / 'nowhere'} "
        "does not exist; create it or remove this root"
    )


def test_unknown_project_key_and_bad_json(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    path = write(tmp_path, projects={"app": {"roots": ["src"], "exclude_dirs": ["x"]}})
    projects = tmp_path / "rag-projects.json"
    assert error_of(path) == (
        f"{projects}: projects.app: unknown key 'exclude_dirs': expected roots, include, "
        "exclude, tests, docs, code"
    )
    projects.write_text('{"projects": {"app": {"roots": ["src"],}}}', encoding="utf-8")
    assert error_of(path).startswith(f"{projects}: line 1 column ")
    assert "invalid JSON" in error_of(path)


def test_duplicate_root_labels(tmp_path: Path) -> None:
    (tmp_path / "a" / "src").mkdir(parents=True)
    (tmp_path / "b" / "src").mkdir(parents=True)
    path = write(tmp_path, projects={"app": {"roots": ["a/src", "b/src"]}})
    assert "two roots are both named 'src': give one a distinct \"name\"" in error_of(path)


def test_explicit_missing_config_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ini"
    assert error_of(missing) == (
        f"{missing}: no such configuration file (run `code-rag init` to write one)"
    )


def _with_groups(folder: Path, groups: object) -> Path:
    """An ini and a projects file with projects `app` and `web`, and `groups`."""
    for name in ("app", "web"):
        (folder / name).mkdir(exist_ok=True)
    path = write(folder)
    document = {"projects": {"app": {"roots": ["app"]}, "web": {"roots": ["web"]}}}
    document["groups"] = groups  # type: ignore[assignment]
    (folder / "rag-projects.json").write_text(json.dumps(document), encoding="utf-8")
    return path


def test_groups_name_configured_projects(tmp_path: Path) -> None:
    settings = load_settings(_with_groups(tmp_path, {"platform": ["app", "web", "app"]}))
    assert settings.groups == {"platform": ("app", "web")}  # a repeat counts once
    assert settings.members("platform") == ("app", "web")
    assert settings.members("app") == ("app",)
    assert settings.members("nothing") is None


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ({"platform": ["app", "billing"]}, "groups.platform: 'billing' is not a project of this"),
        ({"app": ["web"]}, "groups.app: a project is named 'app' too"),
        ({"Platform": ["app"]}, "'Platform' is not a valid group name"),
        ({"platform": []}, "groups.platform = [] is not valid: expected a non-empty list"),
        ({"platform": "app"}, "expected a non-empty list of project names"),
        (["app"], 'groups = ["app"] is not valid: expected an object'),
    ],
)
def test_a_bad_group_names_the_fix(tmp_path: Path, groups: object, message: str) -> None:
    assert message in error_of(_with_groups(tmp_path, groups))


# --- where an instance lives: a checkout, a folder, the user's own ---------------------------


def test_a_folder_is_named_as_a_project_may_be() -> None:
    # A folder's name becomes a valid schema name; a taken one is numbered.
    assert folder_project_name(Path("/src/Shop-API"), ()) == "shop_api"
    assert folder_project_name(Path("/src/2048 game"), ()) == "project_2048_game"
    assert folder_project_name(Path("/src/pg_tools"), ()) == "project_pg_tools"
    assert folder_project_name(Path("/src/public"), ()) == "project_public"
    assert folder_project_name(Path("/src/shop"), ("shop", "shop_2")) == "shop_3"
    assert len(folder_project_name(Path("/src/" + "a" * 90), ())) <= 63


def test_the_user_folders_follow_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert user_config_dir() == tmp_path / "config" / "code-rag"
    assert user_data_dir() == tmp_path / "data" / "code-rag"
    # A relative value is not a base folder (the XDG rule): the default under $HOME applies.
    monkeypatch.setenv("XDG_DATA_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_data_dir() == tmp_path / "home" / ".local" / "share" / "code-rag"


def test_a_checkout_reads_the_current_folders_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run from this checkout, the default is the current folder's application.ini (where
    # `./bld up` writes one); CODE_RAG_CONFIG names another.
    assert source_checkout() == ROOT
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CODE_RAG_CONFIG", raising=False)
    assert default_config_path() == tmp_path / "application.ini"
    monkeypatch.setenv("CODE_RAG_CONFIG", str(tmp_path / "other.ini"))
    assert default_config_path() == tmp_path / "other.ini"


def test_the_user_config_registers_folders_and_keeps_data_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    shop, billing = tmp_path / "src" / "shop", tmp_path / "src" / "billing"
    for folder in (shop / "api", billing):
        folder.mkdir(parents=True)
        (folder / "main.py").write_text("x = 1\n", encoding="utf-8")
    ini = user_config_dir() / "application.ini"
    written = write_initial_config(ini, folder=shop)
    assert written[-1] == tmp_path / "data" / "code-rag" / "token"
    settings = load_settings(ini)
    # The data (database, token) lives with the user's data, never among the config.
    assert settings.data_dir == tmp_path / "data" / "code-rag"
    assert [r.path for r in settings.projects["shop"].roots] == [shop]
    # A folder inside a project is that project; another folder joins as a project of its
    # own, and the file's other contents stay.
    assert add_folder_project(settings, shop / "api") is None
    document = json.loads(settings.projects_path.read_text(encoding="utf-8"))
    document["groups"] = {"everything": ["shop"]}
    settings.projects_path.write_text(json.dumps(document), encoding="utf-8")
    assert add_folder_project(load_settings(ini), billing) == "billing"
    settings = load_settings(ini)
    assert sorted(settings.projects) == ["billing", "shop"]
    assert settings.groups == {"everything": ("shop",)}
    # A home folder is no project: the error says what to do instead.
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="is your home folder, not a project: run `code-rag up`"):
        add_folder_project(settings, tmp_path)
    # The user's config missing altogether: the defaults, with the data still the user's.
    (user_config_dir() / "application.ini").unlink()
    assert load_settings(ini, missing_ok=True).data_dir == tmp_path / "data" / "code-rag"
