"""Each line read once (`[embedding] chunk_vectors = parts`): a definition no chunk speaks for is
read once under its own name, the rest of its chunk once, and the chunk's vector is the mean of
its parts'. The parts cover every line that says something exactly once; a definition with none
inside keeps the vector it has with whole texts; the sweep, the vectors that follow the rows and
an index written model-free then taken up all give the same vectors; the setting is part of the
index's identity (a worker cut the other way is refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from cart_source import CART
from ollama_standin import OllamaStandin, ollama_standin
from psycopg import sql as pgsql

from chunkers import (
    Chunk,
    ChunkerConfig,
    chunk_file,
    embedding_text,
    lone_definitions,
    vector_parts,
)
from indexer.db import Database, Schema, store
from indexer.embed import DEFAULT_CHUNK_VECTORS, EmbeddingModel, make_embedder
from indexer.errors import InvalidArgument
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, embed_pending, sweep_project
from indexer.sweep.parts import content_hash, file_keys, parts_hash
from rag_server.worker import refusal

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]


VECTORS = """
SELECT 'c' || c.ordinal, c.content_sha256, c.embedding
  FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE f.path = %(path)s
UNION ALL
SELECT s.qualified_name, s.content_sha256, s.embedding
  FROM {schema}.rag_symbol s JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE f.path = %(path)s AND s.content_sha256 IS NOT NULL
"""


def stored(conn: Conn, project: str, path: str) -> dict[str, tuple[str, np.ndarray | None]]:
    rows = conn.execute(
        pgsql.SQL(VECTORS).format(schema=pgsql.Identifier(project)), {"path": path}
    ).fetchall()
    conn.rollback()
    return {
        name: (key, None if vector is None else vector.to_numpy()) for name, key, vector in rows
    }


def assert_own_vector(
    rows: dict[str, tuple[str, np.ndarray | None]], lone: list[Chunk], embedder: Any, name: str
) -> None:
    """The stored vector of the definition `name` is the model's of its own text."""
    [own] = [d for d in lone if d.symbol == name]
    [vector] = embedder.embed_documents([embedding_text(own, "cart.py")]).vectors
    found = rows[name][1]
    assert found is not None and np.allclose(found, vector, atol=1e-6)


def parts_of(source: str, path: str = "cart.py", config: ChunkerConfig | None = None) -> Any:
    result = chunk_file(path, source.encode(), config or ChunkerConfig())
    lone = [chunk for _, chunk in lone_definitions(result)]
    return result, lone, vector_parts(result.chunks, lone, result.text.split("\n"))


def test_parts_hold_each_line_that_says_something_once() -> None:
    result, lone, made = parts_of(CART)
    [chunk] = result.chunks  # one merged chunk
    [chunk_parts] = made.chunks
    lines = CART.split("\n")
    # The rest of the chunk (the import), the class's own lines, then each function's.
    assert [(p.symbol, p.start_line, p.end_line) for p in chunk_parts] == [
        (chunk.symbol, 1, 1),
        ("Cart", 4, 5),
        ("Cart.add", 7, 8),
        ("Cart.total", 10, 11),
        ("checkout", 14, 15),
    ]
    held = [n for p in chunk_parts for n in range(p.start_line, p.end_line + 1)
            if lines[n - 1].strip() and n in _numbers(p, lines)]  # fmt: skip
    said = [n for n in range(chunk.start_line, chunk.end_line + 1) if lines[n - 1].strip()]
    assert sorted(held) == said  # every line with something on it, once
    by_name = dict(zip([d.symbol for d in lone], made.definitions, strict=True))
    # The class is its own lines and its methods'; a method is its own lines, exactly the
    # text it has with whole texts, so the same key and the same vector.
    assert [p.symbol for p in by_name["Cart"]] == ["Cart", "Cart.add", "Cart.total"]
    for name in ("Cart.add", "Cart.total", "checkout"):
        [part] = by_name[name]
        [own] = [d for d in lone if d.symbol == name]
        assert part == own and parts_hash(by_name[name]) == content_hash(own)
    keys = file_keys("parts", result.chunks, lone, result.text)
    assert keys.parts[keys.chunks[0]] == chunk_parts
    assert len(set(keys.chunks + keys.definitions)) == 5
    # With whole texts every key is the item's own.
    whole = file_keys("whole", result.chunks, lone, result.text)
    assert whole.chunks == (content_hash(chunk),) and not whole.parts


def _numbers(part: Chunk, lines: list[str]) -> set[int]:
    """The line numbers whose text the part holds (its lines need not be consecutive)."""
    texts = part.content.split("\n")
    return {n for n in range(part.start_line, part.end_line + 1) if lines[n - 1] in texts}


def test_overlapping_windows_are_read_once() -> None:
    # A language with no grammar is cut into windows that overlap: the second window's part
    # starts after the first window's last line.
    source = "\n".join(f"step {i}: turn the valve number {i} clockwise" for i in range(1, 121))
    config = ChunkerConfig(window_lines=60, window_overlap=10)
    result, lone, made = parts_of(source, "notes.txt", config)
    assert not lone and len(result.chunks) >= 2
    first, second = result.chunks[:2]
    assert second.start_line <= first.end_line  # they overlap
    assert made.chunks[0] == (first,)
    [part] = made.chunks[1]
    assert part.start_line == first.end_line + 1 and part.end_line == second.end_line
    assert part.content == "\n".join(source.split("\n")[first.end_line : second.end_line])


def test_a_chunk_of_a_long_line_is_its_own_part() -> None:
    # Character windows of a minified line are not its lines: each is read as it is.
    source = "var a=" + ",".join(f"x{i}:{i}" for i in range(3000)) + ";\n"
    result, _, made = parts_of(source, "app.min.js")
    assert len(result.chunks) > 1
    assert [parts for parts in made.chunks] == [(c,) for c in result.chunks]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "cart.py").write_text(CART)
    (root / "notes.txt").write_text(
        "\n".join(f"step {i}: turn the valve number {i} clockwise" for i in range(1, 151))
    )
    return root


@pytest.fixture
def project(tree: Path, project_name: str) -> Project:
    return Project(project_name, (Root(tree, "shop"),))


@pytest.fixture
def others(conn: Conn) -> Any:
    """Names for more projects than the test's own, each dropped afterwards."""
    made: list[str] = []

    def name(base: str, suffix: str) -> str:
        made.append(f"{base}_{suffix}")
        return made[-1]

    yield name
    conn.rollback()
    for name_made in made:
        if store.project_exists(conn, Schema(name_made)):
            store.drop_project(conn, Schema(name_made))
    conn.commit()


def embedder_for(standin: OllamaStandin, mode: str) -> Any:
    return make_embedder("ollama", "nomic-embed-text:v1.5", standin.url, chunk_vectors=mode)


def unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v / np.linalg.norm(v), dtype=np.float32)


def mean_of(embedder: Any, parts: tuple[Chunk, ...]) -> np.ndarray:
    """The vector of `parts` as the sweep composes it: their vectors' mean by length, unit."""
    texts = [embedding_text(p, "cart.py") for p in parts]
    vectors = np.asarray(embedder.embed_documents(texts).vectors, dtype=np.float32)
    weights = np.asarray([len(p.content) for p in parts], dtype=np.float32)
    return unit((vectors * weights[:, None]).sum(axis=0))


def test_a_sweep_reads_each_line_once_and_averages_a_chunks_parts(
    database: Database,
    conn: Conn,
    project: Project,
    ollama_standin: OllamaStandin,
) -> None:
    embedder = embedder_for(ollama_standin, "parts")
    report = sweep_project(database, project, embedder, SweepOptions(defer_vectors=False))
    assert report.outcome == "ok"
    _, lone, made = parts_of(CART)
    # Five parts for the file's chunk and its four definitions: no line read twice.
    read = [t for batch in ollama_standin.batches for t in batch if "File: cart.py" in t]
    assert len(read) == 5
    rows = stored(conn, project.name, "cart.py")
    parts = made.chunks[0]
    key, vector = rows["c0"]
    assert key == parts_hash(parts)
    assert vector is not None
    assert np.allclose(vector, mean_of(embedder, parts), atol=1e-5)
    # A method's vector is its own text's, as with whole texts.
    [own] = [d for d in lone if d.symbol == "Cart.add"]
    [expected] = embedder.embed_documents([embedding_text(own, "cart.py")]).vectors
    add = rows["Cart.add"][1]
    assert add is not None and np.allclose(add, expected, atol=1e-6)
    # Fewer characters go through the model than with whole texts (each chunk and lone
    # definition read on its own).
    prefix = embedder.document_prefix
    whole_texts = [
        prefix + embedding_text(c, "cart.py") for c in (*parts_of(CART)[0].chunks, *lone)
    ]
    assert sum(map(len, read)) < sum(map(len, whole_texts))


def test_rows_first_and_a_model_free_index_taken_up_give_the_sweeps_vectors(
    database: Database,
    conn: Conn,
    project: Project,
    project_name: str,
    ollama_standin: OllamaStandin,
    others: Any,
) -> None:
    embedder = embedder_for(ollama_standin, "parts")
    sweep_project(database, project, embedder, SweepOptions(defer_vectors=False))
    inline = {p: stored(conn, project.name, p) for p in ("cart.py", "notes.txt")}
    # Rows first, the vectors after them, in another project over the same tree.
    later = Project(others(project_name, "later"), project.roots)
    sweep_project(database, later, embedder, SweepOptions(defer_vectors=True))
    assert embed_pending(database, later, embedder).outcome == "ok"
    # Written with no model (keys of whole texts), then taken up by this one.
    adopted = Project(others(project_name, "adopted"), project.roots)
    sweep_project(database, adopted, None, SweepOptions())
    before = stored(conn, adopted.name, "cart.py")
    assert before["c0"][0] != inline["cart.py"]["c0"][0]  # keyed for its whole text
    assert embed_pending(database, adopted, embedder).outcome == "ok"
    for other in (later, adopted):
        for path, rows in inline.items():
            found = stored(conn, other.name, path)
            assert found.keys() == rows.keys()
            for name, (key, vector) in rows.items():
                assert found[name][0] == key, (other.name, name)
                assert vector is not None and found[name][1] is not None
                assert np.allclose(found[name][1], vector, atol=1e-5), (other.name, name)


def test_the_setting_is_part_of_the_index_identity(
    database: Database, conn: Conn, project: Project, ollama_standin: OllamaStandin
) -> None:
    whole = embedder_for(ollama_standin, "whole").identity
    parts = embedder_for(ollama_standin, "parts").identity
    # Another index, the same cache of texts' vectors (a vector of parts has a key of its own).
    assert whole.index_key != parts.index_key and whole.cache_key == parts.cache_key
    assert EmbeddingModel.from_dict(parts.to_dict()) == parts
    assert "chunk_vectors" not in whole.to_dict()  # an index from before keeps its key
    for identity in (whole, parts):  # messages name the setting where it is not the default
        shown = f"chunk_vectors = {identity.chunk_vectors}" in identity.describe()
        assert shown == (identity.chunk_vectors != DEFAULT_CHUNK_VECTORS)
    with pytest.raises(InvalidArgument, match="chunk_vectors"):
        EmbeddingModel.from_dict({**parts.to_dict(), "chunk_vectors": "halves"})
    with pytest.raises(InvalidArgument, match="each line read once"):
        embedder_for(ollama_standin, "halves")
    # Vectors cut the other way are refused, and a worker is told the setting to use.
    sweep_project(database, project, embedder_for(ollama_standin, "parts"), SweepOptions())
    report = embed_pending(database, project, embedder_for(ollama_standin, "whole"), adopt=False)
    assert report.outcome == "failed" and "another model" in (report.error or "")
    assert "chunk_vectors = parts" in refusal(project.name, parts, whole)


def test_a_changed_method_is_read_again_alone_and_its_chunk_mean_made_of_stored_parts(
    database: Database,
    conn: Conn,
    project: Project,
    tree: Path,
    ollama_standin: OllamaStandin,
) -> None:
    """The parts a file keeps when one of its methods changes come from the index (as the
    database returns them), so only the changed part goes through the model, both in the
    sweep and in the vectors that follow the rows."""
    embedder = embedder_for(ollama_standin, "parts")
    sweep_project(database, project, embedder, SweepOptions(defer_vectors=False))
    for n, defer in enumerate((False, True), start=1):
        source = CART.replace("self.items.append(item)", f"self.items.insert({n}, item)")
        (tree / "cart.py").write_text(source)
        ollama_standin.batches.clear()
        report = sweep_project(database, project, embedder, SweepOptions(defer_vectors=defer))
        assert report.outcome == "ok", report.error
        if defer:
            assert embed_pending(database, project, embedder).outcome == "ok"
        read = [t for batch in ollama_standin.batches for t in batch if "File: cart.py" in t]
        assert len(read) == 1 and f"insert({n}, item)" in read[0]
        _, _, made = parts_of(source)
        parts = made.chunks[0]
        key, vector = stored(conn, project.name, "cart.py")["c0"]
        assert key == parts_hash(parts) and vector is not None
        assert np.allclose(vector, mean_of(embedder, parts), atol=1e-5)


def test_an_index_read_the_other_way_finds_the_texts_both_ways_read_in_the_shared_cache(
    database: Database,
    conn: Conn,
    project: Project,
    project_name: str,
    ollama_standin: OllamaStandin,
    others: Any,
) -> None:
    """Whole texts and parts share the embedding cache: a project read whole after one read by
    parts sends the model only the texts parts never read (a chunk's whole text, a class's
    text with its methods), and each vector it reuses is the one the model gives."""
    sweep_project(database, project, embedder_for(ollama_standin, "parts"), SweepOptions())
    result, lone, made = parts_of(CART)
    read_by_parts = {content_hash(p) for item in (*made.chunks, *made.definitions) for p in item}
    whole_items = (*result.chunks, *lone)
    expected = [
        embedding_text(i, "cart.py") for i in whole_items if content_hash(i) not in read_by_parts
    ]
    assert 0 < len(expected) < len(whole_items)
    ollama_standin.batches.clear()
    whole = Project(others(project_name, "whole"), project.roots)
    embedder = embedder_for(ollama_standin, "whole")
    assert sweep_project(database, whole, embedder, SweepOptions()).outcome == "ok"
    read = [t for batch in ollama_standin.batches for t in batch if "File: cart.py" in t]
    assert sorted(read) == sorted(embedder.document_prefix + t for t in expected)
    rows = stored(conn, whole.name, "cart.py")
    [add] = [d for d in lone if d.symbol == "Cart.add"]
    [vector] = embedder.embed_documents([embedding_text(add, "cart.py")]).vectors
    found = rows["Cart.add"][1]
    assert found is not None and np.allclose(found, vector, atol=1e-6)


def test_with_rest_a_chunk_holding_definitions_is_the_rest_of_its_lines_alone(
    database: Database, conn: Conn, project: Project, ollama_standin: OllamaStandin
) -> None:
    """`chunk_vectors = rest` reads the same parts as `parts`; a chunk holding definitions of
    their own is the vector of the rest of its lines, and each definition keeps its own."""
    embedder = embedder_for(ollama_standin, "rest")
    report = sweep_project(database, project, embedder, SweepOptions(defer_vectors=False))
    assert report.outcome == "ok"
    _, lone, made = parts_of(CART)
    read = [t for batch in ollama_standin.batches for t in batch if "File: cart.py" in t]
    assert len(read) == len({content_hash(p) for p in made.chunks[0]})  # the same texts
    result, _, _ = parts_of(CART)
    rest = vector_parts(result.chunks, lone, result.text.split("\n"), rest_alone=True).chunks[0]
    assert len(rest) == 1 and rest[0] in made.chunks[0] and rest[0].symbol != "Cart.add"
    [expected] = embedder.embed_documents([embedding_text(rest[0], "cart.py")]).vectors
    rows = stored(conn, project.name, "cart.py")
    key, vector = rows["c0"]
    assert key == content_hash(rest[0]) and vector is not None
    assert np.allclose(vector, expected, atol=1e-6)
    assert_own_vector(rows, lone, embedder, "Cart.add")


def test_with_outline_the_rest_of_a_chunk_also_holds_its_definitions_signature_lines(
    database: Database, conn: Conn, project: Project, ollama_standin: OllamaStandin
) -> None:
    """`chunk_vectors = outline` is `rest` whose rest also holds the line that names each
    definition inside the chunk (after its decorators): the chunk's vector knows what it
    holds, for one line a definition; each definition keeps its own vector."""
    result, lone, _ = parts_of(CART)
    lines = result.text.split("\n")
    made = vector_parts(result.chunks, lone, lines, rest_alone=True, signatures=True)
    [outline] = made.chunks[0]
    assert [line for line in outline.content.split("\n") if line.strip()] == [
        "import decimal",
        "class Cart:",
        "    def add(self, item):",
        "    def total(self):",
        "def checkout(cart):",
    ]
    decorated = CART.replace("    def total", "    @property\n    def total")
    result, lone, _ = parts_of(decorated)
    made = vector_parts(result.chunks, lone, result.text.split("\n"), True, True)
    assert "    @property" not in made.chunks[0][0].content.split("\n")
    assert "    def total(self):" in made.chunks[0][0].content.split("\n")

    embedder = embedder_for(ollama_standin, "outline")
    report = sweep_project(database, project, embedder, SweepOptions(defer_vectors=False))
    assert report.outcome == "ok"
    [expected] = embedder.embed_documents([embedding_text(outline, "cart.py")]).vectors
    rows = stored(conn, project.name, "cart.py")
    key, vector = rows["c0"]
    assert key == content_hash(outline) and vector is not None
    assert np.allclose(vector, expected, atol=1e-6)
    assert_own_vector(rows, lone, embedder, "Cart.add")
