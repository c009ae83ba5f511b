"""The bulk load (COPY into an empty project, indexes built at the end, parsing in worker
processes) writes exactly the rows the per-file path writes, fails a broken file or a refused
embedding alone, and a parser that crashes or hangs costs its own file only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ollama_standin import OllamaStandin, ollama_standin
from psycopg import sql as pgsql

import indexer.sweep
from chunkers import ChunkerConfig
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project
from indexer.sweep.prepare import Prepared, failed_in_worker, prepare_in_worker
from indexer.sweep.walk import Candidate
from indexer.sweep.workers import WORKER_NICENESS, ProcessMap, WorkersUnavailable

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
FIXTURES = Path(__file__).parent / "fixtures"

# Every stored column but ids and times, keyed by (path, ordinal): what both paths must agree on.
FILES = """
SELECT repo, path, size, mtime_ns, sha256, language, chunk_count, error
  FROM {schema}.rag_file ORDER BY repo, path
"""
CHUNKS = """
SELECT f.path, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.content,
       c.content_sha256, c.embedding::text, c.tsv::text
  FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
 ORDER BY f.path, c.ordinal
"""
SYMBOLS = """
SELECT f.path, s.ordinal, c.ordinal, s.name, s.qualified_name, s.kind, s.start_line,
       s.end_line, s.signature_line, s.signature, s.parent, s.content_sha256, s.embedding::text
  FROM {schema}.rag_symbol s JOIN {schema}.rag_file f ON f.id = s.file_id
  LEFT JOIN {schema}.rag_chunk c ON c.id = s.chunk_id
 ORDER BY f.path, s.ordinal
"""
# The file-text rows whatever their shape: every column but the file id, as JSON.
TEXT = """
SELECT f.path, to_jsonb(t) - 'file_id'
  FROM {schema}.rag_text_block t JOIN {schema}.rag_file f ON f.id = t.file_id
 ORDER BY 1, 2::text
"""
INDEXES = "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s ORDER BY 1"


def rows(conn: Conn, project: str, query: str) -> list[tuple[Any, ...]]:
    found = conn.execute(pgsql.SQL(query).format(schema=pgsql.Identifier(project))).fetchall()
    conn.rollback()
    return found


def indexes(conn: Conn, project: str) -> list[str]:
    # Definitions without the schema: the two projects' must read the same.
    found = [
        f"{name}: {definition.replace(project, '{schema}')}"
        for name, definition in conn.execute(INDEXES, (project,)).fetchall()
    ]
    conn.rollback()
    return found


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The fixture sources, a file the embedder refuses and a binary one."""
    root = tmp_path / "corpus"
    shutil.copytree(FIXTURES, root)
    (root / "poison.py").write_text("def poisoned():\n    return 'POISON'\n", encoding="utf-8")
    (root / "blob.py").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    return root


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    return make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)


def test_the_bulk_load_writes_exactly_the_rows_of_the_per_file_path(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexer.sweep.run, "BULK_LOAD_FILES", 1)  # the fixture tree is small
    ollama_standin.poison = {"POISON"}
    per_file = Project(project_name, (Root(corpus, "corpus"),))
    bulk = Project(f"{project_name}_bulk", (Root(corpus, "corpus"),))
    options = SweepOptions(files_per_commit=4)
    try:
        # Both embed as they write: the rows-first way is compared in test_vectors_later.
        old = sweep_project(
            database,
            per_file,
            embedder,
            SweepOptions(files_per_commit=4, bulk_load=False, defer_vectors=False),
        )
        new = sweep_project(
            database,
            bulk,
            embedder,
            SweepOptions(files_per_commit=4, prepare_workers=2, defer_vectors=False),
        )
        assert "copy" in new.seconds and "copy" not in old.seconds  # each took its own path
        for report in (old, new):
            assert report.outcome == "partial"
            assert [f["path"] for f in report.failures] == ["poison.py"]
            assert report.skipped.get("binary content") == 1
        assert new.files_changed == old.files_changed > 10
        assert new.chunks_written == old.chunks_written
        for query in (FILES, CHUNKS, SYMBOLS, TEXT):
            expected = rows(conn, per_file.name, query)
            assert expected
            assert rows(conn, bulk.name, query) == expected
        # Every index the migrations create is there again after the load, built alike.
        assert indexes(conn, bulk.name) == indexes(conn, per_file.name)
        [hnsw] = [i for i in indexes(conn, bulk.name) if i.startswith("rag_chunk_embedding_hnsw")]
        assert "ef_construction='200'" in hnsw
        # The definitions no chunk speaks for went in with their vectors, and their index too.
        assert any(r[-1] is not None for r in rows(conn, bulk.name, SYMBOLS))
        [hnsw] = [i for i in indexes(conn, bulk.name) if i.startswith("rag_symbol_embedding")]
        assert "hnsw (embedding vector_cosine_ops)" in hnsw

        # Nothing changed: nothing is written, the index stays as it is.
        again = sweep_project(database, bulk, embedder, options)
        assert again.files_changed == 0 and "copy" not in again.seconds
        # The refused file, accepted now, goes in through the per-file path.
        ollama_standin.poison = set()
        retried = sweep_project(database, bulk, embedder, options)
        assert retried.outcome == "ok" and retried.files_changed == 1
        assert "copy" not in retried.seconds
    finally:
        conn.rollback()
        if store.project_exists(conn, Schema(bulk.name)):
            store.drop_project(conn, Schema(bulk.name))
        conn.commit()


def test_a_refused_bulk_batch_is_written_file_by_file(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row the database refuses undoes the COPY of its batch; the batch then goes in file
    by file, so only the file at fault fails."""
    monkeypatch.setattr(indexer.sweep.run, "BULK_LOAD_FILES", 1)
    project = Project(project_name, (Root(corpus, "corpus"),))
    store.ensure_project(conn, Schema(project_name))
    # A rule the product does not have: no chunk may hold the word "Invoice".
    conn.execute(
        pgsql.SQL("ALTER TABLE {} ADD CONSTRAINT no_invoice CHECK (content !~ 'Invoice')").format(
            pgsql.Identifier(project_name, "rag_chunk")
        )
    )
    conn.commit()
    report = sweep_project(database, project, embedder, SweepOptions(files_per_commit=4))
    refused = {f["path"] for f in report.failures if "could not be stored" in f["reason"]}
    holding = {
        p.relative_to(corpus).as_posix()
        for p in corpus.rglob("*")
        if p.is_file() and b"Invoice" in p.read_bytes()
    }
    assert refused and refused == holding
    assert "copy" in report.seconds  # the other batches went in with COPY
    states = store.file_states(conn, Schema(project_name))
    conn.rollback()
    stored = {path for (_r, path), s in states.items() if s.error is None}
    assert len(stored) == report.files_changed > 10


def crash_on_three(context: Any, item: int) -> int:
    """A stand-in for a parser: it kills its process on item 3."""
    if item == 3:
        os._exit(7)
    return item * 10


def test_a_crashing_worker_fails_its_item_only_and_order_is_kept() -> None:
    with ProcessMap(2, crash_on_three, None) as pool:
        out = list(pool.imap(range(8), lambda item, reason: f"failed {item}: {reason}"))
    assert out[:3] == [0, 10, 20] and out[4:] == [40, 50, 60, 70]
    assert out[3].startswith("failed 3: the parser's process died") and "exit code 7" in out[3]


def own_niceness(context: Any, item: int) -> int:
    """The CPU niceness of the process running the item."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def test_parsing_workers_yield_the_cores_to_what_answers_meanwhile() -> None:
    # Parsing runs below the sweep's priority: searches, the server and PostgreSQL come first.
    with ProcessMap(2, own_niceness, None) as pool:
        seen = set(pool.imap(range(4), lambda item, reason: f"failed {item}: {reason}"))
    assert seen == {min(os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS, 19)}


def test_a_hanging_parse_fails_its_file_only(tmp_path: Path) -> None:
    """Reading a FIFO never returns: the worker is stopped after the timeout, its file fails
    with the reason and the files after it are prepared as usual."""
    fifo = tmp_path / "stuck.py"
    os.mkfifo(fifo)
    good = tmp_path / "good.py"
    good.write_text("def fine():\n    return 1\n", encoding="utf-8")
    items = [
        (Candidate("r", name, path, 10, 1), None)
        for name, path in (("stuck.py", fifo), ("good.py", good), ("again.py", good))
    ]
    with ProcessMap(1, prepare_in_worker, (ChunkerConfig(), False, "whole"), timeout_s=2) as pool:
        out: list[Prepared] = [p for p, _s in pool.imap(items, failed_in_worker)]
    assert [p.candidate.path for p in out] == ["stuck.py", "good.py", "again.py"]
    assert out[0].error is not None and "longer than 2 s" in out[0].error
    assert out[1].error is None and out[1].chunks and out[2].chunks


# A script that sweeps at module level, with no `if __name__ == "__main__":` guard: every
# spawned worker runs it again on start (and stops there: the sweep's lock is taken).
UNGUARDED_SCRIPT = """
import sys
from pathlib import Path

from indexer.db import Database
from indexer.embed import EmbedBatchResult, EmbeddingModel
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project


class Flat:
    identity = EmbeddingModel("test", "flat", 4)

    def embed_documents(self, texts, labels=None):
        return EmbedBatchResult(vectors=[[1.0, 0.0, 0.0, 0.0] for _ in texts], requests=1)

    def embed_query(self, text):
        return [1.0, 0.0, 0.0, 0.0]

    def close(self):
        pass


db = Database(sys.argv[1], Path(sys.argv[3])).open()
project = Project(sys.argv[2], (Root(Path(sys.argv[3]), "src"),))
report = sweep_project(db, project, Flat(), SweepOptions(prepare_workers=2))
print("swept", report.outcome, report.files_changed, report.files_failed, flush=True)
db.close()
"""


def test_workers_that_cannot_start_leave_the_parsing_to_the_sweep_itself(
    dsn: str, conn: Conn, project_name: str, tmp_path: Path
) -> None:
    """A script with no main guard re-runs itself in every spawned worker, which then exits
    before its first file: the sweep says so and parses in its own process, and no file
    fails."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(12):
        (src / f"m{i:02d}.py").write_text(f"def f{i}():\n    return {i}\n", encoding="utf-8")
    script = tmp_path / "sweep_now.py"
    script.write_text(UNGUARDED_SCRIPT, encoding="utf-8")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, str(script), dsn, project_name, str(src)],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "swept ok 12 0" in done.stdout, (done.stdout, done.stderr[-2000:])
    assert "could not start" in done.stderr and "in this process instead" in done.stderr
    states = store.file_states(conn, Schema(project_name))
    conn.rollback()
    assert len(states) == 12 and all(s.error is None for s in states.values())


def test_a_process_map_whose_workers_cannot_start_says_so() -> None:
    # The function lives in a module only this process has: a spawned worker cannot load it.
    module = types.ModuleType("only_here")
    exec("def double(context, item):\n    return item * 2\n", module.__dict__)
    sys.modules["only_here"] = module
    try:
        with pytest.raises(WorkersUnavailable, match="could not start: it exited with code"):
            ProcessMap(2, module.double, None)
    finally:
        del sys.modules["only_here"]
