"""Vectors filled by any number of processes: `code-rag worker` processes and the server's own
phase (`embed_pending`) claim batches of one project's pending texts with PostgreSQL as the
only coordinator, so every pending text gets its vector written exactly once, a worker killed
mid-batch loses nothing (its batch is taken up by the others), a worker whose model is not
the index's is refused with what to configure, and the status lists the live workers with
their rates added up.

Each participant talks to its own Ollama stand-in (same model, same vectors), so a test knows
who asked for what and can hold or kill one of them at a chosen request. Vector writes are
counted by a trigger on the project's tables: a write rolled back (a killed worker's batch)
leaves no count.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_fixtures import env, own_dsn
from ollama_standin import OllamaStandin, StandinModel
from psycopg import sql as pgsql

from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.status import project_status
from indexer.sweep import SweepOptions, embed_pending, sweep_project

__all__ = ["own_dsn"]

ROOT = Path(__file__).resolve().parent.parent
NOMIC = "nomic-embed-text:v1.5"
ROWS_FIRST = SweepOptions(files_per_commit=20, defer_vectors=True)
# Three functions each: a chunk and three definitions a file. A claim of 8 chunks takes their
# files' definitions too, so a batch is 8 files: 40 files make 5 batches.
FILES = 40
BATCH = "8"
WAIT_S = 120.0


def write_tree(root: Path, files: int = FILES) -> None:
    """Files whose every text is its own (no vector of one is another's)."""
    for i in range(files):
        (root / f"pkg{i % 5}").mkdir(parents=True, exist_ok=True)
        (root / f"pkg{i % 5}" / f"mod{i:02d}.py").write_text(
            "".join(
                f"def handler_{i}_{n}(request):\n"
                f"    total = request.amount * {i * 10 + n}\n"
                f"    return request.reply(total, code={n})\n\n"
                for n in range(3)
            ),
            encoding="utf-8",
        )


@pytest.fixture
def db(own_dsn: str, work_dir: Path) -> Iterator[Database]:
    """The test's own database (so that `worker all` sees this test's projects only)."""
    database = Database(own_dsn, work_dir).open()
    try:
        yield database
    finally:
        database.close()


def standin(models: list[StandinModel] | None = None) -> OllamaStandin:
    return OllamaStandin(models).start()


@pytest.fixture
def standins() -> Iterator[Callable[..., OllamaStandin]]:
    """Stand-ins made on demand, each stopped afterwards."""
    made: list[OllamaStandin] = []

    def make(models: list[StandinModel] | None = None) -> OllamaStandin:
        made.append(standin(models))
        return made[-1]

    yield make
    for server in made:
        server.stop()


def index_rows_first(
    db: Database, base: Path, name: str, host: str, model: str = NOMIC, files: int = FILES
) -> int:
    """A project named `name` of `files` files written rows first by a sweep with `model`;
    its pending count."""
    tree = base / name
    write_tree(tree, files)
    project = Project(name, (Root(tree, name),))
    report = sweep_project(db, project, make_embedder("ollama", model, host), ROWS_FIRST)
    assert report.outcome == "ok" and report.vectors_deferred > 0
    return pending(db, name)


def pending(db: Database, name: str) -> int:
    with db.connection() as conn:
        return store.pending_counts(conn, Schema(name)).total


def pending_ids(db: Database, name: str) -> set[tuple[str, int]]:
    query = """
    SELECT 'rag_chunk', id FROM {s}.rag_chunk WHERE embedding IS NULL
    UNION ALL
    SELECT 'rag_symbol', id FROM {s}.rag_symbol
     WHERE embedding IS NULL AND content_sha256 IS NOT NULL
    """
    with db.connection() as conn:
        rows = conn.execute(pgsql.SQL(query).format(s=pgsql.Identifier(name))).fetchall()
    return {(table, int(i)) for table, i in rows}


def count_vector_writes(db: Database, name: str) -> None:
    """Log every vector written to the project's chunks and definitions (committed only)."""
    steps = [
        "CREATE TABLE IF NOT EXISTS public.vector_writes (tbl text NOT NULL, id bigint NOT NULL)",
        """
        CREATE OR REPLACE FUNCTION public.log_vector_write() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO public.vector_writes VALUES (TG_TABLE_NAME, NEW.id);
            RETURN NEW;
        END
        $$
        """,
    ]
    with db.connection() as conn:
        for step in steps:
            conn.execute(step)
        for table in ("rag_chunk", "rag_symbol"):
            conn.execute(
                pgsql.SQL(
                    "CREATE TRIGGER log_vector_write AFTER UPDATE OF embedding ON {t} "
                    "FOR EACH ROW WHEN (NEW.embedding IS NOT NULL) "
                    "EXECUTE FUNCTION public.log_vector_write()"
                ).format(t=pgsql.Identifier(name, table))
            )
        conn.commit()


def vector_writes(db: Database) -> list[tuple[str, int]]:
    with db.connection() as conn:
        rows = conn.execute("SELECT tbl, id FROM public.vector_writes").fetchall()
    return [(table, int(i)) for table, i in rows]


def write_config(base: Path, dsn: str, host: str, model: str = NOMIC, **projects: Path) -> Path:
    """An application.ini (and a projects file naming `projects`) for a worker or status."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "application.ini").write_text(
        f"[database]\ndsn = {dsn}\n"
        f"[embedding]\nprovider = ollama\nmodel = {model}\nhost = {host}\n",
        encoding="utf-8",
    )
    roots = {name: {"roots": [str(path)]} for name, path in projects.items()}
    (base / "rag-projects.json").write_text(json.dumps({"projects": roots}), encoding="utf-8")
    return base / "application.ini"


# A worker as `code-rag worker` runs it, its heartbeat after every batch rather than at most
# every 2 s (so that the status a test reads mid-run has its rate).
WORKER = textwrap.dedent(
    """
    import sys
    import indexer.sweep.vectors
    indexer.sweep.vectors.PROGRESS_EVERY = 0.0
    from rag_server.cli import main
    sys.argv = ["code-rag", *sys.argv[1:]]
    main()
    """
)


def start_worker(config: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, "worker", *args, "--batch", BATCH, "--poll", "0.1",
         "--config", str(config)],
        cwd=ROOT, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


def wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


def first_requests_meet(servers: list[OllamaStandin]) -> None:
    """Each stand-in holds its first request until every one of them has one: each
    participant then holds a claim at the same moment, whoever started first."""
    barrier = threading.Barrier(len(servers), timeout=WAIT_S)
    for server in servers:

        def meet(inputs: list[str], server: OllamaStandin = server) -> None:
            if server.embed_requests == 1:
                barrier.wait()

        server.on_embed = meet


def asked(server: OllamaStandin) -> set[str]:
    return {text for batch in server.batches for text in batch}


def test_two_workers_and_the_servers_phase_fill_a_project_together_each_text_once(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    first, second, server = standins(), standins(), standins()
    name = "shop"
    waiting = index_rows_first(db, work_dir / "src", name, server.url)
    assert waiting > 6 * int(BATCH)
    before = pending_ids(db, name)
    count_vector_writes(db, name)
    first_requests_meet([first, second, server])
    workers = [
        start_worker(write_config(work_dir / tag, own_dsn, s.url), name, "--once")
        for tag, s in (("first", first), ("second", second))
    ]
    # The server's phase, as the server runs it in its thread.
    report = embed_pending(
        db, Project(name, ()), make_embedder("ollama", NOMIC, server.url), batch=int(BATCH)
    )
    results = [finish(proc) for proc in workers]

    for code, out, err in results:
        assert code == 0, err
        assert "worker: done;" in out
    assert report.outcome == "ok" and report.pending == 0
    # Every text pending at the start has its vector, each written exactly once.
    writes = vector_writes(db)
    assert sorted(writes) == sorted(before)
    assert pending(db, name) == 0
    # All three took part (each held a claim while the others did) and no text was asked
    # of two of them.
    texts = [asked(s) for s in (first, second, server)]
    assert all(texts)
    assert not (texts[0] & texts[1]) and not (texts[0] & texts[2]) and not (texts[1] & texts[2])
    # Each text went through the model once (a chunk read by parts is written from them).
    assert sum(s.embedded_inputs for s in (first, second, server)) == len(set().union(*texts))
    # The graphs of a first index written rows first are built once, by whoever finished.
    with db.connection() as conn:
        assert not store.vector_indexes_missing(conn, Schema(name))


def test_a_worker_killed_mid_batch_loses_nothing_and_the_others_finish(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    doomed, survivor, server = standins(), standins(), standins()
    name = "shop"
    # 10 batches: when the doomed worker claims its second, the others hold at most two each
    # (their second waits for the kill), so at least five are left for it to claim.
    index_rows_first(db, work_dir / "src", name, server.url, files=2 * FILES)
    before = pending_ids(db, name)
    count_vector_writes(db, name)
    meet = threading.Barrier(3, timeout=WAIT_S)
    killed = threading.Event()
    victim: list[subprocess.Popen[str]] = []

    def kill_at_second_request(inputs: list[str]) -> None:
        if doomed.embed_requests == 1:
            meet.wait()
        elif doomed.embed_requests == 2:
            # Its first batch is written; this one is claimed and being embedded: kill -9.
            os.kill(victim[0].pid, signal.SIGKILL)
            killed.set()

    def held_until_the_kill(server_: OllamaStandin) -> Callable[[list[str]], None]:
        def hold(inputs: list[str]) -> None:
            if server_.embed_requests == 1:
                meet.wait()
            else:  # later batches wait until the victim is gone, so it has one to lose
                killed.wait(WAIT_S)

        return hold

    doomed.on_embed = kill_at_second_request
    survivor.on_embed = held_until_the_kill(survivor)
    server.on_embed = held_until_the_kill(server)
    victim.append(start_worker(write_config(work_dir / "doomed", own_dsn, doomed.url), name))
    other = start_worker(write_config(work_dir / "survivor", own_dsn, survivor.url), name, "--once")
    report = embed_pending(
        db, Project(name, ()), make_embedder("ollama", NOMIC, server.url), batch=int(BATCH)
    )
    code, _, err = finish(other)
    victim[0].wait(timeout=WAIT_S)

    assert victim[0].returncode == -signal.SIGKILL
    assert code == 0, err
    assert report.outcome == "ok" and report.pending == 0
    assert pending(db, name) == 0
    # Nothing lost, nothing written twice: the killed batch was rolled back with its
    # transaction and every one of its texts was embedded again by a survivor.
    writes = vector_writes(db)
    assert sorted(writes) == sorted(before)
    [written_first, in_flight] = doomed.batches  # it asked for two batches, wrote one
    assert set(in_flight) <= asked(survivor) | asked(server)
    assert not set(written_first) & (asked(survivor) | asked(server))
    # The survivor left the list of workers on its way out; the killed one could not, and
    # stays there until its heartbeat is old enough to leave it out of the status.
    with db.connection() as conn:
        listed = {w.pid: w for w in store.live_workers(conn, Schema(name), 3600)}
    assert other.pid not in listed
    assert listed[victim[0].pid].role == "worker"


def test_a_worker_with_another_model_is_refused_with_what_to_configure(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    minilm = StandinModel(name="all-minilm", dimension=384)
    server = standins([StandinModel(), minilm])
    nomic_project = "nomic_shop"
    waiting = index_rows_first(db, work_dir / "src", nomic_project, server.url)
    config = write_config(work_dir / "other", own_dsn, server.url, model="all-minilm")

    code, out, err = finish(start_worker(config, nomic_project, "--once"))

    assert code == 1
    assert (
        f"worker: project {nomic_project} is indexed with ollama {NOMIC} (768-d); this "
        "worker's embedder is ollama all-minilm (384-d): configure [embedding] provider = "
        f"ollama, model = {NOMIC}"
    ) in " ".join(err.split())
    assert "re-embed the project" in err
    assert pending(db, nomic_project) == waiting  # nothing of the other model went in
    with db.connection() as conn:
        assert store.live_workers(conn, Schema(nomic_project), 3600) == []

    # Serving several, a worker skips what it may not fill, says why, and fills the rest;
    # an index written model-free (no model recorded) is left to whoever records one.
    minilm_project = "minilm_shop"
    index_rows_first(db, work_dir / "src", minilm_project, server.url, model="all-minilm")
    free = work_dir / "src" / "free_shop"
    write_tree(free, 3)
    sweep_project(db, Project("free_shop", (Root(free, "free"),)), None, ROWS_FIRST)
    code, out, err = finish(start_worker(config, "all", "--once"))

    assert code == 0, err
    lines = " ".join(out.split())
    assert f"worker: project {nomic_project} is indexed with ollama {NOMIC}" in lines
    assert "worker: skipping free_shop: its index records no model yet" in lines
    assert f"worker: filling {minilm_project}" in lines
    assert pending(db, minilm_project) == 0
    assert pending(db, nomic_project) == waiting


def test_the_status_lists_the_live_workers_and_their_combined_rate(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    server = standins()
    name = "shop"
    index_rows_first(db, work_dir / "src", name, server.url)
    held, release = threading.Event(), threading.Event()

    def hold_the_third(inputs: list[str]) -> None:
        if server.embed_requests == 3:  # two batches written, the third being embedded
            held.set()
            release.wait(WAIT_S)

    server.on_embed = hold_the_third
    config = write_config(work_dir / "w", own_dsn, server.url, shop=work_dir / "src" / name)
    proc = start_worker(config, name)
    try:
        wait_for(held.is_set, "the worker's third batch")
        project = Project(name, (Root(work_dir / "src" / name, name),))
        with db.reading() as conn:
            status = project_status(conn, project).to_dict()
        [worker] = status["workers"]
        assert (worker["pid"], worker["role"], worker["state"]) == (proc.pid, "worker", "embedding")
        assert worker["model"] == f"ollama {NOMIC} (768-d)"
        # Its two batches' rows (a batch takes the definitions of its chunks' files too), and
        # the texts they were made of.
        assert worker["written"] >= 2 * int(BATCH)
        assert worker["embedded"] == sum(len(batch) for batch in server.batches[:2])
        assert worker["per_second"] > 0
        assert status["workers_per_second"] == worker["per_second"]
        assert status["vectors_running"] is True
        assert status["vectors_per_second"] == worker["per_second"]
        # The same, as a person reads it.
        shown = subprocess.run(
            [sys.executable, "-m", "rag_server.cli", "status", name, "--config", str(config)],
            cwd=ROOT, env=env(), capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        assert "workers: 1 live, 1 embedding, together" in shown.stdout
        assert f"pid {proc.pid} (worker, ollama {NOMIC} (768-d)): embedding" in shown.stdout

        release.set()

        def idle() -> bool:
            with db.reading() as conn:
                found = project_status(conn, project).to_dict()
            listed = found["workers"]
            return not found["vectors_pending"] and bool(listed) and listed[0]["state"] == "idle"

        wait_for(idle, "the worker to fill the rest and wait for more")
        proc.send_signal(signal.SIGTERM)  # stops after the batch in flight (none now)
        code, out, err = finish(proc)
        assert code == 0, err
        assert "worker: stopped;" in out
        with db.reading() as conn:
            assert project_status(conn, project).workers == ()
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()


def test_the_server_phase_is_listed_while_it_runs_and_leaves_when_done(
    db: Database, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    server = standins()
    name = "shop"
    index_rows_first(db, work_dir / "src", name, server.url)
    seen: list[dict[str, Any]] = []

    def look(progress: Any) -> None:
        with db.reading() as conn:
            seen.append(project_status(conn, Project(name, ())).to_dict())

    embedder = make_embedder("ollama", NOMIC, server.url)
    report = embed_pending(db, Project(name, ()), embedder, batch=int(BATCH), progress=look)
    assert report.outcome == "ok"
    roles = {w["role"] for s in seen for w in s["workers"]}
    assert roles == {"indexer"} and all(len(s["workers"]) == 1 for s in seen)
    assert [w["pid"] for w in seen[0]["workers"]] == [os.getpid()]
    with db.reading() as conn:
        assert project_status(conn, Project(name, ())).workers == ()


def test_a_claim_is_skipped_by_others_and_released_by_a_dead_connection(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    # The claim itself: rows one transaction holds are not another's to claim, and a
    # connection that goes away (a process killed) gives them back at once.
    server = standins()
    name = "shop"
    index_rows_first(db, work_dir / "src", name, server.url)
    schema = Schema(name)
    holder = psycopg.connect(own_dsn)
    try:
        mine = store.claim_chunks(holder, schema, 5)
        with db.connection() as conn:
            theirs = store.claim_chunks(conn, schema, 5)
            assert {c.id for c in mine}.isdisjoint(c.id for c in theirs)
            assert [c.id for c in theirs] == sorted(c.id for c in theirs)
            conn.rollback()
    finally:
        holder.close()  # as a killed process's connection: its transaction is gone
    with db.connection() as conn:
        again = store.claim_chunks(conn, schema, 5)
        assert [c.id for c in again] == [c.id for c in mine]
        conn.rollback()


def test_the_definitions_of_a_file_whose_chunk_is_claimed_are_left_to_its_claim(
    db: Database, own_dsn: str, work_dir: Path, standins: Callable[..., OllamaStandin]
) -> None:
    # With each line read once a chunk is made of its definitions' parts. A process with no
    # chunk left to claim takes only definitions of files with no chunk pending: one of a file
    # whose chunk another process holds is that claim's, or both would ask for the same part.
    server = standins()
    name = "shop"
    index_rows_first(db, work_dir / "src", name, server.url, files=3)
    schema = Schema(name)
    holder = psycopg.connect(own_dsn)
    try:
        chunks = store.claim_chunks(holder, schema, 1)
        held = {c.file_id for c in chunks}
        with db.connection() as conn:
            lone = store.claim_definitions(conn, schema, 100, lone=True)
            assert lone == []  # every file still has its chunk pending
            conn.rollback()
            every = store.claim_definitions(conn, schema, 100)
            assert held <= {d.file_id for d in every}  # without the rule, a held file's too
            conn.rollback()
        mine = store.claim_definitions_of_files(holder, schema, sorted(held))
        assert mine and {d.file_id for d in mine} == held
    finally:
        holder.close()
    # Once a file's chunks have their vectors, its definitions left pending are anyone's.
    report = embed_pending(
        db, Project(name, ()), make_embedder("ollama", NOMIC, server.url), batch=int(BATCH)
    )
    assert report.outcome == "ok" and pending(db, name) == 0
    with db.connection() as conn:
        conn.execute(
            pgsql.SQL("UPDATE {}.rag_symbol SET embedding = NULL").format(pgsql.Identifier(name))
        )
        found = store.claim_definitions(conn, schema, 100, lone=True)
        assert len(found) == 9  # three files of three definitions
        conn.rollback()
