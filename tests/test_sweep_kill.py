"""A sweep process killed mid-way leaves every file fully old or fully new (or, in a bulk load
killed during its COPY or its index build, fully there or absent), releases its lock, and the
next sweep converges."""

from __future__ import annotations

import dataclasses
import hashlib
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from index_rows import file_chunks, file_symbols
from ollama_standin import OllamaStandin, ollama_standin
from psycopg import sql as pgsql
from server_fixtures import server_settings, standin_embedder

from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, SweepProgress, embed_pending, sweep_project
from rag_server.service import Service

__all__ = ["ollama_standin"]

ROOT = Path(__file__).resolve().parent.parent
FILES = 40


def source(i: int, version: int) -> str:
    return "\n".join(
        f"def function_{i}_{n}_v{version}(x):\n    return x + {n * version}  # VERSION_{version}\n"
        for n in range(3)
    )


def write_tree(root: Path, version: int) -> dict[str, str]:
    shas = {}
    for i in range(FILES):
        path = root / f"mod{i:02d}.py"
        text = source(i, version)
        path.write_text(text, encoding="utf-8")
        shas[path.name] = hashlib.sha256(text.encode()).hexdigest()
    return shas


def file_versions(conn: psycopg.Connection[Any], project: str) -> dict[str, int]:
    """Per file, the one version all of its chunks and its hash agree on (asserted)."""
    conn.rollback()
    versions = {}
    for (repo, path), state in store.file_states(conn, Schema(project)).items():
        chunks = file_chunks(conn, project, repo, path)
        assert len(chunks) == state.chunk_count
        marks = {v for v in (1, 2) for c in chunks if f"VERSION_{v}" in c[5]}
        assert len(marks) == 1, f"{path} mixes versions {marks}"
        versions[path] = marks.pop()
    conn.rollback()
    return versions


def test_killed_sweep_leaves_files_whole_and_the_next_sweep_converges(
    database: Database,
    conn: psycopg.Connection[Any],
    project_name: str,
    tmp_path: Path,
    ollama_standin: OllamaStandin,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    old = write_tree(tree, 1)
    project = Project(project_name, (Root(tree, "tree"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    sweep_project(database, project, embedder, SweepOptions(files_per_commit=4))
    time.sleep(0.01)
    new = write_tree(tree, 2)
    assert old != new

    ollama_standin.delay_seconds = 0.4  # each batch of 4 files waits on the "model"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from indexer.db import Database
        from indexer.embed import make_embedder
        from indexer.project import Project, Root
        from indexer.sweep import SweepOptions, sweep_project
        db = Database({database.dsn!r}, Path(".")).open()
        project = Project({project_name!r}, (Root(Path({str(tree)!r}), "tree"),))
        embedder = make_embedder("ollama", "nomic-embed-text:v1.5", {ollama_standin.url!r})
        # Vectors inline, so that the "model" paces the sweep (a sweep of this many files
        # would otherwise write its rows first, all at once).
        options = SweepOptions(files_per_commit=4, defer_vectors=False)
        sweep_project(db, project, embedder, options)
        print("finished")
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            versions = file_versions(conn, project_name)
            if sum(v == 2 for v in versions.values()) >= 8:
                break
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    # Mid-way: some files new, some old, none mixed (file_versions asserts it per file).
    versions = file_versions(conn, project_name)
    assert len(versions) == FILES
    assert 0 < sum(v == 2 for v in versions.values()) < FILES
    # The dead process's lock went with its connection.
    deadline = time.time() + 10
    while store.sweep_running(conn, Schema(project_name)) and time.time() < deadline:
        time.sleep(0.1)
    assert not store.sweep_running(conn, Schema(project_name))
    conn.rollback()

    ollama_standin.delay_seconds = 0.0
    report = sweep_project(database, project, embedder, SweepOptions(files_per_commit=4))
    assert report.outcome == "ok"
    assert set(file_versions(conn, project_name).values()) == {2}
    states = store.file_states(conn, Schema(project_name))
    assert {path: s.sha256 for (_r, path), s in states.items()} == new
    [last, killed] = store.last_sweeps(conn, Schema(project_name), limit=2)
    assert (last.outcome, killed.outcome) == ("ok", "interrupted")
    conn.rollback()


# A backend of the sweep waiting on a lock the test holds, in the statement named.
WAITING = """
SELECT pid FROM pg_stat_activity
 WHERE wait_event_type = 'Lock' AND query ILIKE %(pattern)s AND pid <> pg_backend_pid()
"""


def wait_until(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("stage", "table", "mode", "statement"),
    [
        # Holding SHARE on rag_symbol stops the next batch at its COPY of symbols, after its
        # files and chunks went in (in the same, uncommitted, transaction).
        ("copy", "rag_symbol", "SHARE", "%COPY%rag_symbol%"),
        # ROW EXCLUSIVE on rag_chunk lets the rows in but stops the first index build.
        ("index build", "rag_chunk", "ROW EXCLUSIVE", "%CREATE INDEX%"),
    ],
)
def test_a_bulk_sweep_killed_during_copy_or_index_build_leaves_files_whole_and_converges(
    database: Database,
    conn: psycopg.Connection[Any],
    project_name: str,
    tmp_path: Path,
    ollama_standin: OllamaStandin,
    stage: str,
    table: str,
    mode: str,
    statement: str,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    shas = write_tree(tree, 1)
    project = Project(project_name, (Root(tree, "tree"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    ollama_standin.delay_seconds = 0.3  # each batch of 4 files waits on the "model"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        import indexer.sweep
        from indexer.db import Database
        from indexer.embed import make_embedder
        from indexer.project import Project, Root
        from indexer.sweep import SweepOptions, sweep_project
        indexer.sweep.run.BULK_LOAD_FILES = 1  # {FILES} files into an empty project: a bulk load
        db = Database({database.dsn!r}, Path(".")).open()
        project = Project({project_name!r}, (Root(Path({str(tree)!r}), "tree"),))
        embedder = make_embedder("ollama", "nomic-embed-text:v1.5", {ollama_standin.url!r})
        # Vectors inline, so that the "model" paces the sweep (a sweep of this many files
        # would otherwise write its rows first, all at once).
        options = SweepOptions(files_per_commit=4, defer_vectors=False)
        sweep_project(db, project, embedder, options)
        print("finished")
        """
    )

    def stored() -> int:
        exists = store.project_exists(conn, Schema(project_name))
        count = len(store.file_states(conn, Schema(project_name))) if exists else 0
        conn.rollback()
        return count

    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE)
    blocker = psycopg.connect(database.dsn)
    try:
        wait_until(lambda: stored() >= 4, "the first batch")
        blocker.execute(
            pgsql.SQL("LOCK TABLE {} IN " + mode + " MODE").format(
                pgsql.Identifier(project_name, table)
            )
        )

        def blocked() -> bool:
            row = conn.execute(WAITING, {"pattern": statement}).fetchone()
            conn.rollback()
            return row is not None

        wait_until(blocked, f"the sweep to reach its {stage}")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        blocker.rollback()
        blocker.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    # Every stored file is whole: its hash, all of its chunks and all of its symbols.
    versions = file_versions(conn, project_name)
    for path in versions:
        assert len(file_symbols(conn, project_name, "tree", path)) == 3, path
    conn.rollback()
    # Mid-load the keyword and symbol indexes are there (searches read them meanwhile).
    assert {"rag_chunk_tsv", "rag_symbol_name", "rag_symbol_chunk"} <= set(
        index_names(conn, project_name)
    )
    if stage == "copy":
        assert 4 <= len(versions) < FILES  # the blocked batch left nothing behind
    else:
        assert len(versions) == FILES  # all in, the indexes not built
        assert "rag_chunk_embedding_hnsw" not in index_names(conn, project_name)
    deadline = time.time() + 10
    while store.sweep_running(conn, Schema(project_name)) and time.time() < deadline:
        time.sleep(0.1)
    conn.rollback()

    ollama_standin.delay_seconds = 0.0
    report = sweep_project(database, project, embedder, SweepOptions(files_per_commit=4))
    assert report.outcome == "ok"
    # It went on from where the killed one stopped: the files it committed were not read again.
    assert report.files_changed == FILES - len(versions)
    assert report.files_unchanged == len(versions)
    assert set(file_versions(conn, project_name).values()) == {1}
    states = store.file_states(conn, Schema(project_name))
    assert {path: s.sha256 for (_r, path), s in states.items()} == shas
    # The files it wrote went in rows first: their vectors follow, then the graphs.
    assert embed_pending(database, project, embedder).outcome == "ok"
    assert {
        "rag_chunk_embedding_hnsw",
        "rag_chunk_tsv",
        "rag_name_trgm",
        "rag_symbol_name",
        "rag_text_block_spelled_trgm",
        "rag_symbol_qualified_name",
        "rag_symbol_chunk",
    } <= set(index_names(conn, project_name))
    [last, killed] = store.last_sweeps(conn, Schema(project_name), limit=2)
    assert (last.outcome, killed.outcome) == ("ok", "interrupted")
    conn.rollback()


def index_names(conn: psycopg.Connection[Any], project: str) -> list[str]:
    rows = conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (project,))
    names = [r[0] for r in rows.fetchall()]
    conn.rollback()
    return names


def test_a_stopping_server_stops_its_sweep_between_batches_and_the_next_goes_on(
    database: Database,
    conn: psycopg.Connection[Any],
    project_name: str,
    tmp_path: Path,
    work_dir: Path,
    ollama_standin: OllamaStandin,
) -> None:
    # A server stopped (SIGTERM, Ctrl-C) during a long first sweep exits at the next batch
    # instead of sweeping on to the end; what it committed stays, and the next one goes on.
    tree = tmp_path / "tree"
    tree.mkdir()
    shas = write_tree(tree, 1)
    project = Project(project_name, (Root(tree, "tree"),))
    settings = server_settings(work_dir, {project_name: project}, ollama_standin, database.dsn)
    settings = dataclasses.replace(
        settings, indexer=dataclasses.replace(settings.indexer, files_per_commit=4)
    )
    service = Service(settings, database, standin_embedder(ollama_standin))
    batches: list[int] = []

    def stop_after_two(p: SweepProgress) -> None:
        if p.phase == "index":
            batches.append(p.files_done)
            if len(batches) == 2:
                service.close()  # what the server's shutdown does

    outcome = service.sweep(project_name, trigger="startup", progress=stop_after_two)
    assert outcome.outcome == "stopped"
    assert outcome.message is not None and "the next sweep goes on" in outcome.message
    assert batches == [4, 8]
    assert len(file_versions(conn, project_name)) == 8
    [stopped] = store.last_sweeps(conn, Schema(project_name), limit=1)
    assert stopped.outcome == "stopped"
    conn.rollback()

    report = sweep_project(database, project, standin_embedder(ollama_standin))
    assert (report.files_unchanged, report.files_changed) == (8, FILES - 8)
    states = store.file_states(conn, Schema(project_name))
    assert {path: s.sha256 for (_r, path), s in states.items()} == shas
    conn.rollback()
