"""The demo project a fresh `./bld init` writes holds the whole product: every source file of
the checkout's packages at any depth, and the docs. The checkout is walked by the product's own
walker twice, whole and through the demo's globs, so a file added anywhere in a package that
the demo's globs miss fails here."""

from __future__ import annotations

from pathlib import Path

from chunkers import detect_language, has_symbols
from indexer.project import Project, Root
from indexer.sweep import walk_project
from rag_server.config import CHECKOUT, DEMO_PROJECT, load_settings, write_initial_config

PACKAGES = ("chunkers", "indexer", "rag_server")


def test_the_demo_indexes_every_source_file_and_doc_of_the_checkout(tmp_path: Path) -> None:
    ini = tmp_path / "application.ini"
    write_initial_config(ini)
    demo = load_settings(ini).projects[DEMO_PROJECT]
    indexed = {c.path for c in walk_project(demo).files}
    # The checkout as a sweep without globs sees it: .gitignore, skipped folders, size cap.
    whole = walk_project(Project("checkout", (Root(CHECKOUT, "checkout"),))).files
    source = {
        c.path
        for c in whole
        if c.path.split("/", 1)[0] in PACKAGES and has_symbols(detect_language(c.path))
    }
    docs = {c.path for c in whole if c.path == "README.md" or c.path.startswith("docs/")}
    assert {"rag_server/cli/search.py", "indexer/search/hybrid.py", "chunkers/queries/go.scm"} <= (
        source
    )
    assert "docs/usage.md" in docs
    assert sorted(source - indexed) == []
    assert sorted(docs - indexed) == []
    # The bundled model's data stays out: it is not code a newcomer asks about.
    assert not any(p.startswith("indexer/embed/models/") for p in indexed)
