"""Rows first, vectors after: a sweep of many files writes every row without waiting for the
embedder, the navigation tools and the keyword side answer at once, and `embed_pending` then
gives every chunk and definition exactly the vector an inline sweep would have; what is
pending survives a stop, never takes a vector of an older text, and a refusal or an embedder
outage costs what it costs inline, no more."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from ollama_standin import RUNNER_ERROR, OllamaStandin, ollama_standin
from psycopg import sql as pgsql
from test_sweep_bulk import CHUNKS, FILES, FIXTURES, SYMBOLS, TEXT, rows

from indexer.db import Database, Schema, queries, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import find_symbol, grep, search_code
from indexer.sweep import SweepOptions, apply_changes, sweep_project
from indexer.sweep.run import DEFER_VECTORS_FILES
from indexer.sweep.vectors import VectorProgress, embed_pending

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
ROWS_FIRST = SweepOptions(files_per_commit=4, defer_vectors=True)
INLINE = SweepOptions(files_per_commit=4, defer_vectors=False)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(FIXTURES, root)
    return root


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    return make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)


def forget_shared_vectors(conn: Conn) -> None:
    conn.execute('TRUNCATE "code-rag".embedding_cache')
    conn.commit()


def failed_paths(conn: Conn, name: str) -> list[str]:
    found = [f.path for f in store.failures(conn, Schema(name))]
    conn.rollback()
    return found


def pending(conn: Conn, name: str) -> int:
    found = store.pending_counts(conn, Schema(name)).total
    conn.rollback()
    return found


def test_rows_first_then_vectors_give_exactly_the_rows_of_an_inline_sweep(
    database: Database, conn: Conn, project_name: str, corpus: Path, embedder: Any
) -> None:
    inline = Project(project_name, (Root(corpus, "corpus"),))
    later = Project(f"{project_name}_later", (Root(corpus, "corpus"),))
    try:
        first = sweep_project(database, inline, embedder, INLINE)
        forget_shared_vectors(conn)  # or the second project would find every vector there
        second = sweep_project(database, later, embedder, ROWS_FIRST)
        assert first.vectors_deferred == 0 and first.chunks_embedded > 0
        assert second.vectors_deferred > 0 and second.chunks_embedded == 0
        waiting = store.pending_counts(conn, Schema(later.name), of_all=True)
        conn.rollback()
        assert waiting.chunks == waiting.all_chunks > 0 and waiting.definitions > 0
        assert waiting.ready_share == 0.0
        # Everything but the vectors is there at once, and the same.
        for query in (FILES, TEXT):
            assert rows(conn, later.name, query) == rows(conn, inline.name, query)
        without = [r[:-2] + r[-1:] for r in rows(conn, later.name, CHUNKS)]
        assert without == [r[:-2] + r[-1:] for r in rows(conn, inline.name, CHUNKS)]
        assert all(r[-2] is None for r in rows(conn, later.name, CHUNKS))

        report = embed_pending(database, later, embedder)
        assert report.outcome == "ok" and report.pending == 0
        assert report.written == waiting.chunks + waiting.definitions
        assert report.chunks_embedded > 0 and report.definitions_embedded > 0
        assert pending(conn, later.name) == 0
        for query in (FILES, CHUNKS, SYMBOLS, TEXT):
            assert rows(conn, later.name, query) == rows(conn, inline.name, query), query
        again = embed_pending(database, later, embedder)
        assert (again.outcome, again.written) == ("ok", 0)
    finally:
        with database.connection() as c:
            store.drop_project(c, Schema(later.name))


def test_while_vectors_are_pending_every_navigation_tool_and_the_keyword_side_answer(
    database: Database, conn: Conn, project_name: str, corpus: Path, embedder: Any
) -> None:
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    assert pending(conn, project.name) > 0
    defined = find_symbol(database, project, "Invoice").symbols
    assert [s.path for s in defined] == ["chunkers/python/invoice.py"]
    matches = grep(database, project, "def ")
    assert matches.matches
    # Hybrid search answers from the keyword side and the exact-name lift meanwhile.
    hits = search_code(database, project, embedder, "Invoice")
    assert hits and hits[0].symbol is not None and "Invoice" in hits[0].symbol
    keyword = search_code(database, project, embedder, "Invoice", mode="keyword")
    assert {h.chunk_id for h in hits} >= {keyword[0].chunk_id}
    sentence = "the subtotal of an invoice's line items"
    assert search_code(database, project, embedder, sentence, mode="vector") == []
    assert search_code(database, project, embedder, sentence)  # the keyword side
    embed_pending(database, project, embedder)
    assert search_code(database, project, embedder, sentence, mode="vector")


def test_pending_vectors_are_read_back_from_the_database_after_a_stop(
    database: Database, conn: Conn, project_name: str, corpus: Path, embedder: Any
) -> None:
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    before = pending(conn, project.name)
    stop = threading.Event()
    seen: list[VectorProgress] = []

    def stop_after_two(p: VectorProgress) -> None:
        seen.append(p)
        if len(seen) == 2:
            stop.set()

    first = embed_pending(database, project, embedder, batch=8, progress=stop_after_two, stop=stop)
    assert first.outcome == "stopped"
    # Two batches of 8 (each with the definitions of its chunks' files), and no more.
    assert 0 < first.written < before and first.pending == before - first.written
    assert seen[-1].pending == first.pending and seen[-1].per_second > 0
    assert seen[-1].eta_seconds is not None
    assert pending(conn, project.name) == first.pending
    # Another process (nothing shared but the database) goes on where it stopped.
    second = embed_pending(database, project, embedder, batch=64)
    assert second.outcome == "ok" and second.written == first.pending
    assert pending(conn, project.name) == 0


def stored_vectors(conn: Conn, name: str) -> dict[int, str]:
    """The vectors in the project's rows, by chunk id (as text: compared, not used)."""
    query = pgsql.SQL("SELECT id, embedding::text FROM {}.rag_chunk WHERE embedding IS NOT NULL")
    found = dict(conn.execute(query.format(pgsql.Identifier(name))).fetchall())
    conn.rollback()
    return found


def test_a_kill_during_the_vectors_loses_one_batch_at_most_and_a_restart_finishes(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    # kill -9 while another process embeds what is pending: what it committed stays, the
    # batch in flight is lost with it, and a restart embeds exactly what is still pending,
    # no stored vector computed again, nothing left over.
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    before = pending(conn, project.name)
    assert before > 40
    ollama_standin.delay_seconds = 0.3  # each batch of 8 waits on the "model"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from indexer.db import Database
        from indexer.embed import make_embedder
        from indexer.project import Project, Root
        from indexer.sweep.vectors import embed_pending
        db = Database({database.dsn!r}, Path(".")).open()
        project = Project({project_name!r}, (Root(Path({str(corpus)!r}), "corpus"),))
        embedder = make_embedder("ollama", "nomic-embed-text:v1.5", {ollama_standin.url!r})
        embed_pending(db, project, embedder, batch=8)
        print("finished")
        """
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and pending(conn, project.name) > before - 16:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    left = pending(conn, project.name)
    assert 0 < left <= before - 16
    kept = stored_vectors(conn, project.name)
    # The killed process's request in flight is still answered (and counted) by the
    # stand-in after its delay: let it end before counting what the restart embeds.
    time.sleep(ollama_standin.delay_seconds + 0.5)
    ollama_standin.delay_seconds = 0.0
    ollama_standin.reset_counters()
    restart = embed_pending(database, project, embedder, batch=8)
    assert restart.outcome == "ok" and restart.written == left
    # Each text it needed, once (a chunk read by parts takes several); the stored ones kept.
    embedded = restart.chunks_embedded + restart.definitions_embedded
    assert ollama_standin.embedded_inputs == embedded < before
    assert pending(conn, project.name) == 0
    after = stored_vectors(conn, project.name)
    assert {cid: after[cid] for cid in kept} == kept


def test_a_vector_never_goes_to_a_row_whose_text_changed_meanwhile(
    database: Database, conn: Conn, project_name: str, work_dir: Path, embedder: Any
) -> None:
    root = work_dir / "src"
    root.mkdir()
    for i in range(DEFER_VECTORS_FILES):
        (root / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    project = Project(project_name, (Root(root, "src"),))
    schema = Schema(project.name)
    sweep_project(database, project, embedder, ROWS_FIRST)
    [old] = [c for c in store.pending_chunks(conn, schema, 100) if c.path == "m0.py"]
    conn.rollback()
    # The file changes before the vector of its first text is written: same row, new text.
    (root / "m0.py").write_text("def f0(x):\n    return x * 1000\n", encoding="utf-8")
    sweep_project(database, project, embedder, ROWS_FIRST)
    [new] = [c for c in store.pending_chunks(conn, schema, 100) if c.path == "m0.py"]
    conn.rollback()
    assert new.id == old.id and new.content_sha256 != old.content_sha256
    stale = embedder.embed_documents(["the old text"]).vectors[0]
    store.set_vectors(conn, schema, [(old.id, old.content_sha256, stale)])
    conn.commit()
    assert pending(conn, project.name) == DEFER_VECTORS_FILES
    embed_pending(database, project, embedder)
    inline = Project(f"{project_name}_inline", project.roots)
    try:
        sweep_project(database, inline, embedder, INLINE)
        query = CHUNKS.replace("ORDER BY", "WHERE f.path = 'm0.py' ORDER BY")
        assert rows(conn, project.name, query) == rows(conn, inline.name, query)
    finally:
        with database.connection() as c:
            store.drop_project(c, Schema(inline.name))


def test_an_input_the_embedder_refuses_fails_its_file_alone_until_the_next_sweep(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    (corpus / "poison.py").write_text("def poisoned():\n    return 'POISON'\n", encoding="utf-8")
    ollama_standin.poison = {"POISON"}
    project = Project(project_name, (Root(corpus, "corpus"),))
    swept = sweep_project(database, project, embedder, ROWS_FIRST)
    assert swept.outcome == "ok"
    report = embed_pending(database, project, embedder)
    assert report.outcome == "partial" and report.files_failed == 1
    assert [f["path"] for f in report.failures] == ["poison.py"]
    assert "refused" in report.failures[0]["reason"]
    # Its rows stay (keyword search finds it); nothing else waits; status names it.
    assert pending(conn, project.name) == 0
    assert failed_paths(conn, project.name) == ["poison.py"]
    assert search_code(database, project, embedder, "poisoned", mode="keyword")
    # The next sweep reads it again; once the embedder takes it, it has its vectors.
    ollama_standin.poison = set()
    again = sweep_project(database, project, embedder, ROWS_FIRST)
    assert again.files_changed == 1
    assert embed_pending(database, project, embedder).outcome == "ok"
    assert failed_paths(conn, project.name) == [] and pending(conn, project.name) == 0


def test_an_embedder_outage_ends_the_run_and_leaves_the_rest_pending(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    before = pending(conn, project.name)
    ollama_standin.fail_all = RUNNER_ERROR
    report = embed_pending(database, project, embedder)
    assert report.outcome == "failed" and report.error and report.written == 0
    assert pending(conn, project.name) == before
    assert failed_paths(conn, project.name) == []  # the embedder failed, not the files
    ollama_standin.fail_all = None
    assert embed_pending(database, project, embedder).outcome == "ok"
    assert pending(conn, project.name) == 0


def test_vectors_of_another_model_never_go_in(
    database: Database,
    conn: Conn,
    project_name: str,
    corpus: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    before = pending(conn, project.name)
    other = make_embedder("ollama", "all-minilm", ollama_standin.url)
    report = embed_pending(database, project, other)
    assert report.outcome == "failed" and "another model" in (report.error or "")
    assert pending(conn, project.name) == before


def test_a_sweep_of_many_files_writes_rows_first_and_a_few_changes_embed_at_once(
    database: Database, conn: Conn, project_name: str, work_dir: Path, embedder: Any
) -> None:
    root = work_dir / "src"
    root.mkdir()
    for i in range(DEFER_VECTORS_FILES):
        (root / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    project = Project(project_name, (Root(root, "src"),))
    first = sweep_project(database, project, embedder)  # the default: by the amount of work
    assert first.vectors_deferred == DEFER_VECTORS_FILES and first.chunks_embedded == 0
    embed_pending(database, project, embedder)
    for i in range(3):
        (root / f"m{i}.py").write_text(f"def g{i}():\n    return {i}\n", encoding="utf-8")
    few = sweep_project(database, project, embedder)
    assert few.files_changed == 3 and few.vectors_deferred == 0 and few.chunks_embedded == 3
    (root / "m5.py").write_text("def saved():\n    return 5\n", encoding="utf-8")
    saved = apply_changes(database, project, embedder, {"src": ["m5.py"]})
    assert saved is not None and saved.chunks_embedded == 1 and saved.vectors_deferred == 0
    assert pending(conn, project.name) == 0


def test_a_definition_whose_lines_cannot_be_read_back_fails_its_file_alone(
    database: Database, conn: Conn, project_name: str, corpus: Path, embedder: Any
) -> None:
    project = Project(project_name, (Root(corpus, "corpus"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    # The exact text of one file no longer gives back what its definitions were hashed from.
    conn.execute(
        pgsql.SQL(
            "UPDATE {s}.rag_text_block b SET content = b.content || ' '"
            "  FROM {s}.rag_file f WHERE f.id = b.file_id AND f.path LIKE %s"
        ).format(s=pgsql.Identifier(project.name)),
        ("%python/invoice.py",),
    )
    conn.commit()
    report = embed_pending(database, project, embedder, batch=16)
    assert report.outcome == "partial" and report.files_failed == 1
    [failure] = report.failures
    assert failure["path"].endswith("python/invoice.py")
    assert "could not be read back" in failure["reason"]
    assert report.pending == 0 and pending(conn, project.name) == 0
    assert report.definitions_embedded > 0  # every other file's definitions


def vector_indexes(conn: Conn, name: str, like: str = "%embedding_hnsw") -> set[str]:
    """The project's indexes named `like`: by default, its vectors' graphs."""
    found = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s",
        (name, like),
    ).fetchall()
    conn.rollback()
    return {row[0] for row in found}


@pytest.mark.parametrize("files", [210, 30], ids=["bulk load", "row by row"])
def test_a_first_index_written_rows_first_builds_its_graphs_once_the_vectors_are_in(
    database: Database, conn: Conn, project_name: str, tmp_path: Path, embedder: Any, files: int
) -> None:
    # A first index written rows first leaves the HNSW graphs for the end of its vectors (one
    # build, not an insertion per vector); meanwhile the vector side scans what is in. Later
    # sweeps of an index with vectors keep its graphs.
    tree = tmp_path / "many"
    for n in range(files):
        folder = tree / f"pkg{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n}.py").write_text(
            f"def handler_{n}(request):\n    return request.reply({n})\n", encoding="utf-8"
        )
    project = Project(project_name, (Root(tree, "many"),))
    report = sweep_project(database, project, embedder, ROWS_FIRST)
    assert report.files_changed == files and report.vectors_deferred > 0
    assert vector_indexes(conn, project.name) == set()
    first = embed_pending(database, project, embedder, batch=100, stop=None)
    assert first.outcome == "ok" and first.pending == 0
    both = {"rag_chunk_embedding_hnsw", "rag_symbol_embedding_hnsw"}
    assert vector_indexes(conn, project.name) == both
    hits = search_code(database, project, embedder, "handler_17", top_k=3, mode="vector")
    assert hits and hits[0].path == "pkg3/mod17.py"
    for n in range(25):  # enough changed files to be written rows first again
        (tree / f"pkg{n % 7}" / f"mod{n}.py").write_text(
            f"def handler_{n}(request):\n    return request.later({n})\n", encoding="utf-8"
        )
    again = sweep_project(database, project, embedder, ROWS_FIRST)
    assert again.files_changed == 25 and again.vectors_deferred > 0
    assert vector_indexes(conn, project.name) == both


def test_the_vector_side_answers_from_the_vectors_in_before_the_graphs_exist(
    database: Database, conn: Conn, project_name: str, tmp_path: Path, embedder: Any
) -> None:
    tree = tmp_path / "many"
    for n in range(210):
        (tree / f"m{n}").mkdir(parents=True)
        (tree / f"m{n}" / "job.py").write_text(
            f"def job_{n}():\n    return {n}\n", encoding="utf-8"
        )
    project = Project(project_name, (Root(tree, "many"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    stop = threading.Event()
    half = embed_pending(
        database,
        project,
        embedder,
        batch=40,
        progress=lambda p: stop.set() if p.done >= 120 else None,
        stop=stop,
    )
    assert half.outcome == "stopped" and half.pending > 0
    assert vector_indexes(conn, project.name) == set()  # not before every vector is in
    hits = search_code(database, project, embedder, "job_3", top_k=10, mode="vector")
    assert hits and all(hit.path.endswith("job.py") for hit in hits)
    # Meanwhile it reads the rows that have their vector through an index of them, not every
    # row of the table (a first index of a million chunks read them all for each search).
    assert embedded_indexes(conn, project.name) == EMBEDDED
    vector = embedder.embed_query("job_3")
    assert vector_plan(database, project, vector) >= EMBEDDED
    rest = embed_pending(database, project, embedder)
    assert rest.outcome == "ok" and rest.pending == 0
    assert vector_indexes(conn, project.name) == {
        "rag_chunk_embedding_hnsw",
        "rag_symbol_embedding_hnsw",
    }
    assert embedded_indexes(conn, project.name) == set()  # the graphs serve from now on


EMBEDDED = {"rag_chunk_embedded", "rag_symbol_embedded"}


def embedded_indexes(conn: Conn, name: str) -> set[str]:
    return vector_indexes(conn, name, "%_embedded")


def vector_plan(database: Database, project: Project, vector: list[float]) -> set[str]:
    """The indexes the vector side's statement reads, planned as a search plans it."""
    schema = Schema(project.name)
    with database.reading() as reader, reader.transaction():
        reader.execute(queries.WALK_VECTOR_GRAPHS)
        params = {"repo": None, "language": None, "path_re": None, "limit": 10}
        plan = reader.execute(
            pgsql.SQL("EXPLAIN (FORMAT JSON) ") + schema.sql(queries.VECTOR_CANDIDATES),
            {**params, "vector": np.asarray(vector, dtype=np.float32)},
            prepare=False,
        ).fetchone()[0]  # type: ignore[index]
    return set(re.findall(r'"Index Name": "([^"]+)"', json.dumps(plan)))


def test_a_text_already_stored_takes_its_vector_as_read_back(
    database: Database, conn: Conn, project_name: str, tmp_path: Path, embedder: Any
) -> None:
    # The same text in two files, one pending row a round: the second round finds the first's
    # vector stored (read back as pgvector's own type) and writes it without embedding.
    root = tmp_path / "twins"
    for folder in ("a", "b"):
        (root / folder).mkdir(parents=True)
        (root / folder / "same.py").write_text("def twin(x):\n    return x + 1\n", "utf-8")
    project = Project(project_name, (Root(root, "src"),))
    sweep_project(database, project, embedder, ROWS_FIRST)
    report = embed_pending(database, project, embedder, batch=1)
    assert report.outcome == "ok" and report.reused >= 1 and report.pending == 0
    vectors = conn.execute(
        pgsql.SQL("SELECT DISTINCT embedding::text FROM {}").format(
            pgsql.Identifier(project_name, "rag_chunk")
        )
    ).fetchall()
    conn.rollback()
    assert len(vectors) == 1
