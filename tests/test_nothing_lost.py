"""Nothing lost: a root that vanishes keeps its index; a hostile tree fails no neighbour.

A root folder that is missing, unreadable or suddenly empty is *unavailable*, not empty: its
rows stay (marked stale in results, named in the status) until it comes back, when nothing is
re-embedded. File names that are not UTF-8, FIFOs, symlinks out and in loops, very deep paths
and control characters each cost at most their own file, with the reason in the report.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama_standin import OllamaStandin, ollama_standin
from server_fixtures import Served, call, make_project, serve, unique_name, wait_for

import chunkers.symbols
import indexer.sweep.run
from chunkers import ChunkerConfig
from indexer.db import Database
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import find_symbol, grep, search_code
from indexer.sweep import SweepOptions, sweep_project

__all__ = ["ollama_standin"]

LIB_FILES = {"pricing/tax.py": "def vat_for_country(code):\n    return RATES[code]\n"}
APP_FILES = {"main.py": "def start_checkout_flow(cart):\n    return cart\n"}


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="code-rag-lost-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def two_roots(
    base: Path, database: Database, ollama_standin: OllamaStandin
) -> Iterator[tuple[Served, Project]]:
    app = make_project(unique_name("lost"), base / "app", APP_FILES, label="app")
    lib = make_project("unused", base / "lib", LIB_FILES, label="lib")
    project = Project(app.name, (*app.roots, *lib.roots))
    sweep_project(
        database, project, make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    )
    for served in serve(base, {project.name: project}, ollama_standin, database):
        served.standin = ollama_standin
        yield served, project


def reindex(served: Served, project: str) -> dict[str, Any]:
    before = served.service.last_run(project)
    response = served.http.post(
        "/rag-admin",
        json={"jsonrpc": "2.0", "id": 1, "method": "reindex", "params": {"project": project}},
    )
    assert response.json()["result"]["projects"][project] == "started"
    run = wait_for(
        lambda: (r := served.service.last_run(project)) is not before and r,
        what="the sweep to finish",
    )
    assert run.outcome == "ok", run.message
    return dict(run.report)


def search(served: Served, project: str, query: str) -> list[dict[str, Any]]:
    return list(call(served, project, "search_code", {"query": query})["hits"])


def status(served: Served, project: str) -> dict[str, Any]:
    return call(served, project, "index_status", {})


@pytest.mark.parametrize("how", ["renamed", "emptied"])
def test_a_vanished_root_keeps_its_index_until_it_is_back(
    two_roots: tuple[Served, Project], base: Path, how: str
) -> None:
    served, project = two_roots
    lib = base / "lib"
    before = {r["repo"]: (r["files"], r["chunks"]) for r in status(served, project.name)["repos"]}
    moved = base / "lib-away"
    lib.rename(moved)
    if how == "emptied":  # an unmounted disk leaves its empty mount point behind
        lib.mkdir()

    report = reindex(served, project.name)
    assert report["outcome"] == "partial" and report["files_deleted"] == 0
    [gone] = report["roots_unavailable"]
    assert gone["repo"] == "lib"
    assert gone["reason"] == (
        "the folder is missing" if how == "renamed" else "the folder is empty"
    )
    now = status(served, project.name)
    repos = {r["repo"]: r for r in now["repos"]}
    assert (repos["lib"]["files"], repos["lib"]["chunks"]) == before["lib"]
    assert repos["lib"]["available"] is False and repos["lib"]["problem"] == gone["reason"]
    assert repos["app"]["available"] is True
    assert any("root lib" in w for w in now["last_sweep"]["warnings"])
    hits = search(served, project.name, "vat_for_country")
    assert hits[0]["path"] == "pricing/tax.py" and hits[0]["stale"] is True
    assert search(served, project.name, "start_checkout_flow")[0]["stale"] is False

    if how == "emptied":
        lib.rmdir()
    moved.rename(lib)
    assert served.standin is not None
    served.standin.reset_counters()
    report = reindex(served, project.name)
    assert report["outcome"] == "ok" and report["roots_unavailable"] == []
    assert report["chunks_embedded"] == 0 and report["files_changed"] == 0
    assert served.standin.embed_requests == 0
    assert search(served, project.name, "vat_for_country")[0]["stale"] is False


def test_a_project_whose_roots_all_vanished_keeps_everything(
    base: Path, database: Database, project_name: str, ollama_standin: OllamaStandin
) -> None:
    project = make_project(project_name, base / "app", APP_FILES, label="app")
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    first = sweep_project(database, project, embedder)
    shutil.rmtree(base / "app")
    report = sweep_project(database, project, embedder)
    assert report.outcome == "partial" and report.files_deleted == 0
    hits = search_code(database, project, embedder, "start_checkout_flow", mode="keyword")
    assert hits and hits[0].stale
    # An explicit full re-index is the way to let them go.
    full = sweep_project(database, project, embedder, full=True)
    assert full.roots_unavailable and first.files_changed == 1
    assert not search_code(database, project, embedder, "start_checkout_flow", mode="keyword")


# --- a hostile tree ----------------------------------------------------------------------------

BAD_NAME = b"bad\xff\xfename.py"
CONTROL_NAMES = ("tab\tname.py", "bell\x07name.py", "new\nline.py", "esc\x1bname.py")


def hostile_tree(root: Path) -> dict[str, str]:
    """Write the tree; return {stored path: a word only that file holds} for indexable files."""
    root.mkdir(parents=True)
    expected: dict[str, str] = {}

    def put(rel: str, word: str, raw: bytes | None = None) -> None:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw if raw is not None else f"def {word}():\n    return 1\n".encode())

    put("plain.py", "plainword")
    expected["plain.py"] = "plainword"
    bad = os.path.join(os.fsencode(root), BAD_NAME)
    with open(bad, "wb") as f:
        f.write(b"def undecodable_name_word():\n    return 2\n")
    expected["bad\\xff\\xfename.py"] = "undecodable_name_word"
    for i, name in enumerate(CONTROL_NAMES):
        put(name, f"controlword{i}")
        expected[name] = f"controlword{i}"
    deep = "/".join(["d"] * 120) + "/deep.py"
    put(deep, "deepword")
    expected[deep] = "deepword"
    put("latin1.py", "", raw=b"def latin_word():\n    return 'caf\xe9'\n")
    expected["latin1.py"] = "latin_word"
    os.mkfifo(root / "pipe.py")
    os.symlink("/etc/passwd", root / "passwd.py")
    os.symlink(root / "loop_b.py", root / "loop_a.py")
    os.symlink(root / "loop_a.py", root / "loop_b.py")
    os.symlink(root, root / "self_dir")
    return expected


@pytest.mark.parametrize("provider", ["ollama", "local"])
def test_a_hostile_tree_indexes_every_indexable_file(
    base: Path, database: Database, project_name: str, ollama_standin: OllamaStandin, provider: str
) -> None:
    root = base / "tree"
    expected = hostile_tree(root)
    project = Project(project_name, (Root(root.resolve(), "tree"),))
    if provider == "ollama":
        embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    else:
        embedder = make_embedder("local")
    report = sweep_project(database, project, embedder)
    assert report.outcome in ("ok", "partial"), report.error
    assert report.files_failed == 0, report.failures
    assert report.skipped["not a regular file"] == 1  # the FIFO
    assert report.skipped["symlink leading out of the root"] == 1
    assert report.skipped["broken symlink"] == 2  # the loop
    assert any("not valid UTF-8" in w and "bad\\xff\\xfename.py" in w for w in report.warnings)
    for path, word in expected.items():
        hits = search_code(database, project, embedder, word, mode="keyword", top_k=3)
        assert hits and hits[0].path == path, (path, [h.path for h in hits])
    vector_hits = search_code(database, project, embedder, "undecodable_name_word")
    assert vector_hits[0].path == "bad\\xff\\xfename.py"


# A name of 9,610 characters that do not compress: a grammar misreading a macro-heavy C header
# produced one of 9,655, which no PostgreSQL index can hold (a b-tree row takes 2,704 bytes).
HUGE = "generated_" + "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(150))
# Past 512 characters (`chunkers.symbols.MAX_NAME_CHARS`) a name is taken for a misreading.
LONG = HUGE[:600]


@pytest.mark.parametrize("bulk", [False, True], ids=["file by file", "bulk load"])
def test_a_name_too_long_to_index_fails_its_own_file_and_nothing_else(
    database: Database,
    project_name: str,
    base: Path,
    ollama_standin: OllamaStandin,
    monkeypatch: pytest.MonkeyPatch,
    bulk: bool,
) -> None:
    # By default such a "name" is left out by the chunker (the file is indexed without it).
    # Let through, the database refuses the file's rows (a limit of the data, which psycopg
    # counts among its operational errors): that file fails with the reason, the sweep goes on.
    monkeypatch.setattr(chunkers.symbols, "MAX_NAME_CHARS", 100_000)
    if bulk:
        monkeypatch.setattr(indexer.sweep.run, "BULK_LOAD_FILES", 1)
    root = base / "tree"
    root.mkdir()
    (root / "huge.py").write_text(f"def {HUGE}():\n    return 1\n", encoding="utf-8")
    for i in range(6):
        (root / f"ok{i}.py").write_text(f"def fine_{i}():\n    return {i}\n", encoding="utf-8")
    project = Project(project_name, (Root(root, "tree"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)

    long_lines = SweepOptions(chunker=ChunkerConfig(max_line_chars=100_000))  # not "minified"
    report = sweep_project(database, project, embedder, long_lines)

    assert report.outcome == "partial"
    assert (report.files_changed, report.files_failed) == (6, 1)
    [failure] = report.failures
    assert failure["path"] == "huge.py"
    assert "could not be stored" in failure["reason"] and "index row" in failure["reason"]
    assert search_code(database, project, embedder, "fine_3", top_k=3)[0].path == "ok3.py"


def test_a_grammars_misread_name_is_left_out_and_its_file_indexed(
    database: Database, project_name: str, base: Path, ollama_standin: OllamaStandin
) -> None:
    root = base / "tree"
    root.mkdir()
    (root / "huge.py").write_text(
        f"def {LONG}():\n    return 1\n\n\ndef small_neighbour():\n    return 2\n",
        encoding="utf-8",
    )
    project = Project(project_name, (Root(root, "tree"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)

    report = sweep_project(database, project, embedder)

    assert (report.outcome, report.files_changed) == ("ok", 1)
    found = find_symbol(database, project, "small_neighbour").symbols
    assert [s.qualified_name for s in found] == ["small_neighbour"]
    assert all(len(s.name) < 512 for s in find_symbol(database, project, LONG[:30]).symbols)
    assert [m.line for m in grep(database, project, LONG[:40]).matches] == [1]  # its text stays
