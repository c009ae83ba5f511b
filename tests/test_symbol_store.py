"""The symbol table and the file text in the database: the sweep writes each file's definitions
and text with its chunks, replaces them when the file changes, drops them with the file, and
fills both for an index built before they existed without embedding its chunks again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from cart_source import CART
from index_rows import execute, file_symbols
from ollama_standin import OllamaStandin, ollama_standin

from chunkers import CHUNKER_VERSION, chunk_file, lone_definitions
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "cart.py").write_text(CART)
    (root / "notes.md").write_text("# Notes\n\nNothing to define here.\n")
    return root


@pytest.fixture
def project(tree: Path, project_name: str) -> Project:
    return Project(project_name, (Root(tree, "shop"),))


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    emb = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    yield emb
    emb.close()


def sweep(database: Database, project: Project, embedder: Any) -> None:
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok", report


def expected(text: str) -> list[tuple[Any, ...]]:
    result = chunk_file("cart.py", text.encode())
    return [
        (
            s.name,
            s.qualified_name,
            s.kind,
            s.start_line,
            s.end_line,
            s.signature_line,
            s.signature,
            s.parent,
            s.chunk,
        )
        for s in result.symbols
    ]


def test_sweep_writes_each_files_symbols_with_their_chunk(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    sweep(database, project, embedder)
    rows = file_symbols(conn, project.name, "shop", "cart.py")
    assert rows == expected(CART)
    assert [r[1] for r in rows] == ["Cart", "Cart.add", "Cart.total", "checkout"]
    assert file_symbols(conn, project.name, "shop", "notes.md") == []
    conn.rollback()


def test_a_changed_file_gets_its_new_symbols_and_a_deleted_one_none(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    sweep(database, project, embedder)
    changed = CART.replace("def total(self)", "def grand_total(self)")
    (tree / "cart.py").write_text(changed)
    sweep(database, project, embedder)
    rows = file_symbols(conn, project.name, "shop", "cart.py")
    assert rows == expected(changed)
    assert "Cart.total" not in [r[1] for r in rows]
    conn.rollback()
    (tree / "cart.py").unlink()
    sweep(database, project, embedder)
    count = conn.execute(
        psycopg.sql.SQL("SELECT count(*) FROM {}.rag_symbol").format(
            psycopg.sql.Identifier(project.name)
        )
    ).fetchone()
    assert count == (0,)
    conn.rollback()


def test_an_index_from_before_the_symbol_table_fills_it_without_re_embedding(
    database: Database,
    conn: Conn,
    project: Project,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    # Stage an index as an older release left it: no symbol table, the previous chunker.
    sweep(database, project, embedder)
    execute(conn, project.name, "DROP TABLE {schema}.rag_symbol")
    execute(conn, project.name, "DROP TABLE {schema}.rag_text_block")
    execute(conn, project.name, "DROP TABLE {schema}.rag_name")
    execute(conn, project.name, "DROP FUNCTION {schema}.rag_name_add, {schema}.rag_name_drop")
    execute(
        conn,
        project.name,
        "DELETE FROM {schema}.rag_migration"
        " WHERE name IN ('m002_symbols', 'm003_file_text', 'm004_text_blocks',"
        " 'm007_definition_vectors')",
    )
    store.set_meta(conn, Schema(project.name), "chunker_version", 1)
    conn.execute('TRUNCATE "code-rag".embedding_cache')  # no shared cache back then either
    conn.commit()
    ollama_standin.reset_counters()
    sweep(database, project, embedder)
    # No chunk is embedded again: only the definitions no chunk speaks for, which had no
    # vector before.
    lone = lone_definitions(chunk_file("cart.py", CART.encode()))
    assert ollama_standin.embedded_inputs == len(lone) > 0
    assert file_symbols(conn, project.name, "shop", "cart.py") == expected(CART)
    assert file_text(conn, project.name, "cart.py") == CART
    conn.rollback()


class Stopped(Exception):
    """Stands for anything that ends a sweep early: Ctrl-C, a kill, a lost connection."""


def test_a_sweep_stopped_after_a_chunker_change_leaves_the_redo_to_the_next(
    database: Database,
    conn: Conn,
    project: Project,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    # An index made by an older chunker (here: without its text blocks). The sweep that
    # would chunk every file again is stopped before writing anything; the index must still
    # say it needs that, so the next sweep does it.
    sweep(database, project, embedder)
    execute(conn, project.name, "DELETE FROM {schema}.rag_text_block")
    store.set_meta(conn, Schema(project.name), "chunker_version", 1)
    conn.commit()

    def stop(progress: Any) -> None:
        raise Stopped(progress.phase)

    with pytest.raises(Stopped):
        sweep_project(database, project, embedder, SweepOptions(), progress=stop)
    assert store.get_meta(conn, Schema(project.name), "chunker_version") == 1
    conn.rollback()
    ollama_standin.reset_counters()
    sweep(database, project, embedder)
    assert ollama_standin.embedding_calls == 0
    assert file_text(conn, project.name, "cart.py") == CART
    assert store.get_meta(conn, Schema(project.name), "chunker_version") == CHUNKER_VERSION
    conn.rollback()


def file_text(conn: Conn, project: str, path: str) -> str | None:
    """The file's text put back together from its blocks (each line ends in a newline)."""
    rows = conn.execute(
        psycopg.sql.SQL(
            "SELECT b.content FROM {s}.rag_text_block b JOIN {s}.rag_file f ON f.id = b.file_id"
            " WHERE f.path = %(path)s ORDER BY b.start_line"
        ).format(s=psycopg.sql.Identifier(project)),
        {"path": path},
    ).fetchall()
    return "".join(str(r[0]) + "\n" for r in rows) if rows else None


def test_each_file_keeps_its_text_as_the_chunker_read_it(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    # CRLF and a BOM are normalised as the chunker does, so line N is the chunks' line N.
    (tree / "crlf.py").write_bytes(b"\xef\xbb\xbfdef a():\r\n    return 1\r\n")
    sweep(database, project, embedder)
    assert file_text(conn, project.name, "cart.py") == CART
    assert file_text(conn, project.name, "crlf.py") == "def a():\n    return 1\n"
    conn.rollback()
    (tree / "crlf.py").unlink()
    sweep(database, project, embedder)
    assert file_text(conn, project.name, "crlf.py") is None
    conn.rollback()


def fuzzy_names(conn: Conn, project: str) -> set[str]:
    rows = conn.execute(
        psycopg.sql.SQL("SELECT name FROM {}.rag_name").format(psycopg.sql.Identifier(project))
    ).fetchall()
    conn.rollback()
    return {str(r[0]) for r in rows}


def test_the_names_for_fuzzy_look_up_follow_the_symbols(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    # Each distinct name, lower-cased, while at least one symbol carries it; no other.
    (tree / "other.py").write_text("class CART:\n    def total(self):\n        return 0\n")
    sweep(database, project, embedder)
    assert fuzzy_names(conn, project.name) == {"cart", "add", "total", "checkout"}
    (tree / "cart.py").write_text(CART.replace("def total(self)", "def grand_total(self)"))
    sweep(database, project, embedder)
    assert fuzzy_names(conn, project.name) == {"cart", "add", "total", "grand_total", "checkout"}
    (tree / "other.py").unlink()
    sweep(database, project, embedder)
    assert fuzzy_names(conn, project.name) == {"cart", "add", "grand_total", "checkout"}
    (tree / "cart.py").unlink()
    sweep(database, project, embedder)
    assert fuzzy_names(conn, project.name) == set()
