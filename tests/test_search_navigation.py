"""search_code meets the symbol table and the stored text: an identifier the query names
verbatim puts the code holding it first (code before prose that mentions it), a hit names every
definition in its chunk, and a definition split into pieces is found by its signature piece."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from indexer.db import Schema, store
from indexer.project import Project, Root
from indexer.search import candidates, parts, search_code
from indexer.sweep import SweepOptions, sweep_project
from tests.ollama_standin import OllamaStandin, ollama_standin

__all__ = ["ollama_standin"]

DOCS = {
    "docs/security.md": "# Security\n\nTokens are compared in constant time with "
    "`hmac.compare_digest`, so a wrong token takes as long to refuse as a right one to accept."
    "\n\nThe comparison (compare_digest) never short-circuits on the first differing byte.\n",
    "docs/mcp.md": "# MCP\n\nEvery request carries X-RAG-Token; the server checks it with "
    "compare_digest before routing.\n\n## Tools\n\nsearch_code, get_chunk, list_repos.\n",
    "README.md": "# code-rag\n\nLocal code search. Tokens: constant-time compare_digest "
    "comparison, see docs/security.md.\n",
}
APP = '''"""The Litestar app: routes, auth, lifespan."""

import hmac
import logging

log = logging.getLogger("code_rag.app")


def create_app(settings, database, embedder):
    """Build the app with its routes and the lifespan that opens the pool."""
    routes = [mcp_route(settings), admin_route(settings)]
    return {"routes": routes, "database": database, "embedder": embedder}


def mcp_route(settings):
    return {"path": "/rag-mcp/{project}", "settings": settings}


def admin_route(settings):
    return {"path": "/rag-admin", "settings": settings}


def token_ok(given: str, expected: str) -> bool:
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def origin_ok(origin: str | None, host: str) -> bool:
    return origin is None or origin.endswith(host)
'''
GO = """package p

type T struct{}

func (t T) A() int { return 1 }

func (t T) B() int { return 2 }
"""
LONG = (
    "def helper():\n    return 0\n\n\ndef reconcile_ledger(entries):\n"
    + "".join(
        f"    total_{i} = sum(e.amount for e in entries if e.kind == {i})\n" for i in range(120)
    )
    + "    return total_0\n"
)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def demo(
    tmp_path: Path, database: Any, project_name: str, ollama_standin: OllamaStandin
) -> tuple[Any, Project, Any]:
    from indexer.embed import make_embedder

    root = tmp_path / "code-rag"
    write(root, {**DOCS, "rag_server/app.py": APP, "p/t.go": GO, "ledger.py": LONG})
    project = Project(project_name, (Root(root, "code-rag"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok"
    return database, project, embedder


@pytest.mark.parametrize(
    "query", ["compare_digest", "where is the token checked with compare_digest"]
)
def test_an_identifier_named_verbatim_puts_its_code_first(
    demo: tuple[Any, Project, Any], query: str
) -> None:
    # The one line of code calling hmac.compare_digest beats the docs that mention it.
    database, project, embedder = demo
    hits = search_code(database, project, embedder, query, top_k=5)
    assert hits[0].path == "rag_server/app.py"
    assert (
        hits[0].start_line
        <= APP.splitlines().index(
            "    return hmac.compare_digest(given.encode(), expected.encode())"
        )
        + 1
        <= hits[0].end_line
    )
    assert "token_ok" in hits[0].symbols


def test_during_a_bulk_load_the_search_reads_the_keyword_index_and_skips_the_exact_text(
    demo: tuple[Any, Project, Any],
) -> None:
    # A bulk load keeps the keyword and symbol indexes and drops the trigram one until its
    # end: the verbatim side, which would scan every block of text without it, reads nothing,
    # and the search answers from the keyword index.
    database, project, embedder = demo
    schema = Schema(project.name)
    part = parts.Part(0, schema, {"repo": None, "language": None, "path_re": None})
    with database.connection() as conn:
        assert parts.verbatim_code(conn, [part], "compare_digest") != []
        store.drop_bulk_indexes(conn, schema)
        conn.commit()
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (project.name,)
            ).fetchall()
        }
        assert {"rag_chunk_tsv", "rag_symbol_name", "rag_symbol_qualified_name"} <= indexes
        assert "rag_text_block_spelled_trgm" not in indexes
        assert store.bulk_load_cut_short(conn, schema)
        assert parts.verbatim_code(conn, [part], "compare_digest") == []
        conn.rollback()
    hits = search_code(database, project, embedder, "compare_digest", top_k=5, mode="keyword")
    assert "rag_server/app.py" in {h.path for h in hits}
    with database.connection() as conn:
        store.build_bulk_indexes(conn, schema)
        conn.commit()
        assert parts.verbatim_code(conn, [part], "compare_digest") != []
        conn.rollback()


def test_a_common_identifier_gets_no_verbatim_boost(
    demo: tuple[Any, Project, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An identifier in more chunks than the cap is not distinctive: nothing is promoted.
    database, project, _embedder = demo
    monkeypatch.setattr(parts, "MAX_VERBATIM_CHUNKS", 1)
    part = parts.Part(0, Schema(project.name), {"repo": None, "language": None, "path_re": None})
    with database.reading() as conn:
        assert parts.verbatim_code(conn, [part], "compare_digest") == []
    assert candidates.query_identifiers("where is the Token checked") == []
    assert candidates.query_identifiers("how does parseConfig use MAX_SIZE") == [
        "parseConfig",
        "MAX_SIZE",
    ]
    # Too short for a trigram: looking it up would read every block of text.
    assert candidates.query_identifiers("obs-utext = %d0 / x1 / v_12") == ["v_12"]


def test_a_hit_names_every_definition_merged_into_it(demo: tuple[Any, Project, Any]) -> None:
    # Small Go methods share one chunk: asking for the second finds that chunk, which names all.
    database, project, embedder = demo
    [hit, *_] = search_code(database, project, embedder, "T.B", top_k=3)
    assert (hit.path, hit.symbols) == ("p/t.go", ["T", "T.A", "T.B"])


def test_a_split_definition_is_found_by_its_signature_piece(
    demo: tuple[Any, Project, Any],
) -> None:
    database, project, embedder = demo
    hits = search_code(database, project, embedder, "reconcile_ledger", top_k=5)
    signature = LONG.splitlines().index("def reconcile_ledger(entries):") + 1
    assert hits[0].path == "ledger.py"
    assert hits[0].start_line <= signature <= hits[0].end_line
    assert hits[0].symbols == ["reconcile_ledger"]
