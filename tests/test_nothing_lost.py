"""Nothing lost: a root that vanishes keeps its index; a hostile tree fails no neighbour.

A root folder that is missing, unreadable or suddenly empty is *unavailable*, not empty: its
rows stay (marked stale in results, named in the status) until it comes back, when nothing is
re-embedded. File names that are not UTF-8, FIFOs, symlinks out and in loops, very deep paths
and control characters each cost at most their own file, with the reason in the report.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama_standin import OllamaStandin, ollama_standin
from server_fixtures import Served, call, make_project, serve, unique_name, wait_for

from indexer.db import Database
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import sweep_project

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
