"""Definitions no chunk speaks for (merged with small neighbours, nested in a bigger definition's
chunk) get a vector of their own: the sweep embeds them beside the chunks, reuses their vectors
from the cache, fails a file whose definition the embedder refuses alone, and the vector ranker
lets such a vector raise the chunk holding the definition, under the same filters."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from cart_source import CART
from fixed_vectors import DIM, FixedEmbedder
from ollama_standin import OllamaStandin, ollama_standin
from psycopg import sql as pgsql

from chunkers import chunk_file, embedding_text, lone_definitions
from indexer import lexical
from indexer.db import Database, Schema, lookup, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import SweepOptions, sweep_project
from indexer.sweep.prepare import content_hash

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]


SYMBOL_VECTORS = """
SELECT s.qualified_name, s.content_sha256, s.embedding
  FROM {schema}.rag_symbol s JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE f.path = %(path)s
 ORDER BY s.ordinal
"""
CHUNK_CONTENT = """
SELECT c.content FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE f.path = %(path)s ORDER BY c.ordinal
"""


def read(conn: Conn, project: str, query: str, path: str) -> list[tuple[Any, ...]]:
    found = conn.execute(
        pgsql.SQL(query).format(schema=pgsql.Identifier(project)), {"path": path}
    ).fetchall()
    conn.rollback()
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "cart.py").write_text(CART)
    return root


@pytest.fixture
def project(tree: Path, project_name: str) -> Project:
    return Project(project_name, (Root(tree, "shop"),))


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    # Each text read whole, so a definition's vector is its own text's (each line read once,
    # the default, composes chunks of the same texts: tests/test_chunk_vectors.py).
    emb = make_embedder(
        "ollama", "nomic-embed-text:v1.5", ollama_standin.url, chunk_vectors="whole"
    )
    yield emb
    emb.close()


def test_each_definition_without_a_chunk_of_its_own_is_embedded_alone(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok"
    result = chunk_file("cart.py", CART.encode())
    lone = {chunk.symbol: chunk for _, chunk in lone_definitions(result)}
    assert set(lone) == {"Cart", "Cart.add", "Cart.total", "checkout"}  # one merged chunk
    assert (report.chunks_embedded, report.definitions_embedded) == (len(result.chunks), 4)
    stored = read(conn, project.name, SYMBOL_VECTORS, "cart.py")
    assert [name for name, _, _ in stored] == [s.qualified_name for s in result.symbols]
    for name, key, vector in stored:
        chunk = lone[name]
        assert key == content_hash(chunk)
        # The vector is the embedder's for the definition's own text, with the chunk header.
        [expected] = embedder.embed_documents([embedding_text(chunk, "cart.py")]).vectors
        assert np.allclose(vector.to_numpy(), expected, atol=1e-6), name


def test_definition_vectors_come_from_the_cache(
    database: Database,
    conn: Conn,
    project: Project,
    tree: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    sweep_project(database, project, embedder, SweepOptions())
    # Every file chunked again (a new chunker version), and the file moved: nothing embedded.
    store.set_meta(conn, Schema(project.name), "chunker_version", 1)
    conn.commit()
    (tree / "cart.py").rename(tree / "basket.py")
    ollama_standin.reset_counters()
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok" and report.files_changed == 1
    assert ollama_standin.embedding_calls == 0
    stored = read(conn, project.name, SYMBOL_VECTORS, "basket.py")
    assert sum(vector is not None for _, _, vector in stored) == 4
    # A new method is the only thing embedded, with the chunk that now holds it.
    (tree / "basket.py").write_text(
        CART.replace("def total", "def clear(self):\n        pass\n\n    def total")
    )
    ollama_standin.reset_counters()
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok"
    assert ollama_standin.embedded_inputs == 3  # the file's chunk, Cart, Cart.clear


def test_a_refused_definition_fails_its_file_and_keeps_what_was_indexed(
    database: Database,
    conn: Conn,
    project: Project,
    tree: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    sweep_project(database, project, embedder, SweepOptions())
    before = read(conn, project.name, CHUNK_CONTENT, "cart.py")
    (tree / "cart.py").write_text(CART.replace("append(item)", "insert(0, item)"))
    # Only the definition's own text names it so (the chunk's header names Cart).
    ollama_standin.poison = {"Symbol: Cart.add (method)"}
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "partial"
    [failure] = report.failures
    assert failure["path"] == "cart.py" and "cart.py:7-8 Cart.add" in failure["reason"]
    assert read(conn, project.name, CHUNK_CONTENT, "cart.py") == before
    assert (
        sum(v is not None for _, _, v in read(conn, project.name, SYMBOL_VECTORS, "cart.py")) == 4
    )
    ollama_standin.poison = set()
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok" and report.files_changed == 1
    assert "insert(0" in read(conn, project.name, CHUNK_CONTENT, "cart.py")[0][0]


def unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


def write_file(
    conn: Conn,
    project: str,
    path: str,
    language: str,
    chunk_vector: np.ndarray,
    definitions: list[tuple[str, np.ndarray | None]],
) -> None:
    """One file of one chunk named after its first definition, holding the others."""
    content = "\n".join(f"def {name}():\n    pass" for name, _ in definitions)
    chunk = store.ChunkRow(
        ordinal=0,
        start_line=1,
        end_line=2 * len(definitions),
        symbol=definitions[0][0],
        kind="function",
        content=content,
        content_sha256=hashlib.sha256(content.encode()).hexdigest(),
        embedding=chunk_vector,
        symbol_terms=lexical.terms_text(definitions[0][0]),
        path_terms=lexical.path_terms_text(path),
        body_terms=lexical.terms_text(content),
    )
    symbols = [
        store.SymbolRow(
            ordinal=i,
            chunk=0,
            name=name,
            qualified_name=name,
            kind="function",
            start_line=2 * i + 1,
            end_line=2 * i + 2,
            signature_line=2 * i + 1,
            signature=f"def {name}():",
            parent=None,
            content_sha256=None if vector is None else hashlib.sha256(name.encode()).hexdigest(),
            embedding=vector,
        )
        for i, (name, vector) in enumerate(definitions)
    ]
    record = store.FileRecord(
        "app", path, 1, 1, hashlib.sha256(path.encode()).hexdigest(), language
    )
    store.upsert_file(conn, Schema(project), record, [chunk], symbols)


def test_a_definitions_vector_raises_the_chunk_holding_it(
    database: Database, conn: Conn, project_name: str
) -> None:
    rng = np.random.default_rng(7)
    query = unit(rng.standard_normal(DIM))
    other = unit(rng.standard_normal(DIM) - 3 * query)  # far from the query
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), DIM)
    store.set_meta(conn, Schema(project_name), "embedding", FixedEmbedder.identity.to_dict())
    near = unit(query + 0.1 * other)  # a small definition, nested in a chunk about else
    write_file(
        conn, project_name, "paint.py", "python", other, [("palette", None), ("blend", near)]
    )
    middling = unit(query + 1.5 * other)
    write_file(conn, project_name, "mix.py", "python", middling, [("mix", None)])
    write_file(conn, project_name, "far.go", "go", other, [("far", other)])
    conn.commit()
    ids = dict(
        conn.execute(
            pgsql.SQL("SELECT f.path, c.id FROM {} c JOIN {} f ON f.id = c.file_id").format(
                pgsql.Identifier(project_name, "rag_chunk"),
                pgsql.Identifier(project_name, "rag_file"),
            )
        ).fetchall()
    )
    conn.rollback()
    filters = {"repo": None, "language": None, "path_re": None}
    with conn.transaction():
        found = lookup.vector_candidates(
            conn, Schema(project_name), query, filters, 10, 40, iterative_scan=False
        )
    # paint.py's own chunk vector is the farthest of the three; its nested definition's is
    # the nearest of all, so its chunk comes first, once, with that definition's similarity.
    assert [r.chunk_id for r in found] == [ids["paint.py"], ids["mix.py"], ids["far.go"]]
    assert found[0].score == pytest.approx(float(near @ query), abs=1e-5)
    project = Project(project_name, (Root(Path("/nowhere"), "app"),))
    [first, *_] = search_code(database, project, FixedEmbedder(query), "blend", mode="vector")
    assert first.path == "paint.py" and first.symbols == ["palette", "blend"]
    # The filters hold for the definitions' vectors too.
    for extra in ({"language": "go"}, {"path_re": "^mix"}, {"repo": "elsewhere"}):
        with conn.transaction():
            found = lookup.vector_candidates(
                conn,
                Schema(project_name),
                query,
                filters | extra,
                10,
                40,
                iterative_scan=database.iterative_scan,
            )
        assert ids["paint.py"] not in [r.chunk_id for r in found], extra
