"""Read replicas: `[indexer] enabled = false` makes a server that only answers.

An indexing server and a replica run against one PostgreSQL, each the real app under uvicorn
opening its own database pool. The replica answers while the indexer sweeps, refuses to sweep
(naming the server that indexes), and leaves every schema, table and migration row as it found
them, even on a database where the projects it serves, or the shared cache, do not exist yet.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

import server_fixtures  # noqa: E402
from server_fixtures import (  # noqa: E402
    GARDEN_FILES,
    SHOP_FILES,
    TOKEN,
    GatedEmbedder,
    Served,
    call,
    drop_projects,
    index,
    make_project,
    make_tree,
    server_settings,
    standin_embedder,
    unique_name,
    wait_for,
)
from test_up import Up, free_port, wait_until_served  # noqa: E402

from indexer.db import Database, store  # noqa: E402
from indexer.errors import PgvectorMissing  # noqa: E402
from indexer.project import Project  # noqa: E402
from rag_server.app import create_app  # noqa: E402
from rag_server.config import IndexerSettings, Settings  # noqa: E402

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin

    from indexer.embed import Embedder

pytest_plugins = ["server_fixtures"]

DEADLINE_S = 60

# Everything a replica could change: schemas, their tables, indexes, sequences and functions,
# the extensions, and each project's applied migrations.
RELATIONS = """
SELECT n.nspname, c.relname, c.relkind::text FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
 ORDER BY 1, 2
"""
# Sessions' temporary namespaces come and go with whoever uses temporary tables (a bulk load).
SCHEMAS = """
SELECT nspname, obj_description(oid, 'pg_namespace') FROM pg_namespace
 WHERE nspname NOT LIKE 'pg\\_temp%' AND nspname NOT LIKE 'pg\\_toast\\_temp%'
 ORDER BY 1
"""
EXTENSIONS = "SELECT extname, extversion FROM pg_extension ORDER BY 1"
FUNCTIONS = """
SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2
"""


def snapshot(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        found: dict[str, Any] = {
            "schemas": conn.execute(SCHEMAS).fetchall(),
            "relations": conn.execute(RELATIONS).fetchall(),
            "extensions": conn.execute(EXTENSIONS).fetchall(),
            "functions": conn.execute(FUNCTIONS).fetchall(),
        }
        for name in store.list_projects(conn):
            query = pgsql.SQL("SELECT name FROM {}.rag_migration ORDER BY name").format(
                pgsql.Identifier(name)
            )
            found[f"migrations:{name}"] = conn.execute(query).fetchall()
    return found


def sweeps_recorded(dsn: str, project: str) -> int:
    query = pgsql.SQL("SELECT count(*) FROM {}.rag_sweep").format(pgsql.Identifier(project))
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def schema_exists(dsn: str, name: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
    return row is not None


def replica_settings(
    work_dir: Path, projects: dict[str, Project], standin: OllamaStandin, dsn: str
) -> Settings:
    settings = server_settings(work_dir, projects, standin, dsn)
    return dataclasses.replace(settings, indexer=IndexerSettings(enabled=False))


@contextlib.contextmanager
def running(settings: Settings, embedder: Embedder, **options: Any) -> Iterator[Served]:
    """The real app for `settings`, opening its own database pool (as `./bld serve` does)."""
    app = create_app(settings, embedder=embedder, **options)
    with server_fixtures.running(app, settings) as served:
        yield served


def admin(served: Served, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    response = served.http.post("/rag-admin", json=body)
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def test_a_replica_answers_while_the_indexer_sweeps_and_never_writes(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    shop = make_project(unique_name("rshop"), work_dir / "shop", SHOP_FILES, label="shop")
    # Configured on the replica only: nothing ever indexes it, and the replica must not
    # create its schema (not at start, not when it is searched).
    ghost = make_project(unique_name("rghost"), work_dir / "ghost", GARDEN_FILES, "garden")
    index(database, shop, ollama_standin)
    dsn = database.dsn
    indexing = server_settings(work_dir / "indexer", {shop.name: shop}, ollama_standin, dsn)
    replica = replica_settings(
        work_dir / "replica", {shop.name: shop, ghost.name: ghost}, ollama_standin, dsn
    )
    gated = GatedEmbedder(standin_embedder(ollama_standin))
    before = snapshot(dsn)
    sweeps_before = sweeps_recorded(dsn, shop.name)
    try:
        with (
            running(indexing, gated, schedule=False, watch=False) as indexer,
            # The replica is asked for everything (scheduler, watchers): enabled = false wins.
            running(replica, standin_embedder(ollama_standin)) as copy,
        ):
            view = admin(copy, "status")["result"]
            assert view["indexer"] is False and view["config_error"] is None
            by_name = {p["project"]: p for p in view["projects"]}
            assert by_name[shop.name]["indexed"] is True
            assert by_name[ghost.name]["indexed"] is False
            for status in by_name.values():
                assert status["indexer"] is False
                assert status["last_run"] is None and status["current_run"] is None
                assert status["next_sweep_at"] is None and status["watching"] is False
            assert admin(indexer, "status")["result"]["indexer"] is True

            refused = admin(copy, "reindex", {"project": "all"})["error"]
            assert refused["data"]["error"] == "read_replica"
            assert "read replica" in refused["message"]
            assert "code-rag indexer" in refused["message"]  # the indexer, as it names itself

            (work_dir / "shop" / "billing" / "tax.py").write_text(
                "def value_added_tax(amount):\n    return amount * 0.2\n", encoding="utf-8"
            )
            started = admin(indexer, "reindex", {"project": shop.name})
            assert started["result"]["projects"] == {shop.name: "started"}
            assert gated.waiting.wait(DEADLINE_S), "the indexer's sweep never reached the model"
            # The indexer is in the middle of its sweep: the replica answers from the index.
            hits = call(copy, shop.name, "search_code", {"query": "invoice number"})["hits"]
            assert "billing/invoice.py" in [hit["path"] for hit in hits]
            symbols = call(copy, shop.name, "find_symbol", {"name": "retry_with_backoff"})
            assert [s["path"] for s in symbols["symbols"]] == ["net/retry.py"]
            assert call(copy, shop.name, "index_status", {})["sweep_running"] is True
            # A project with no index yet: an answer that says so, and still no schema.
            response = copy.rpc(
                ghost.name,
                "tools/call",
                {"name": "search_code", "arguments": {"query": "water a cactus"}},
                headers={"MCP-Protocol-Version": "2025-11-25"},
            )
            assert response.status_code == 200
            assert not schema_exists(dsn, ghost.name)
            gated.gate.set()
            wait_for(
                lambda: admin(indexer, "status", {"project": shop.name})["result"]["last_run"],
                DEADLINE_S,
                "the indexer's sweep to end",
            )
            after = admin(copy, "status", {"project": shop.name})["result"]
            assert after["last_run"] is None and after["files"] == 4
            symbols = call(copy, shop.name, "find_symbol", {"name": "value_added_tax"})
            assert [s["path"] for s in symbols["symbols"]] == ["billing/tax.py"]
        # Both servers are stopped: the one sweep recorded is the indexer's, and the
        # replica's lifetime left the database's structure as it was.
        assert sweeps_recorded(dsn, shop.name) == sweeps_before + 1
        assert snapshot(dsn) == before
        assert not schema_exists(dsn, ghost.name)
    finally:
        gated.gate.set()
        drop_projects(database, [shop.name])


@pytest.fixture
def bare_database(database: Database) -> Iterator[str]:
    """A database of its own on the test server, with pgvector and pg_trgm enabled and
    nothing else: no project schema, no shared embedding cache."""
    name = unique_name("replica_db")
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))
    dsn = make_conninfo(database.dsn, dbname=name)
    try:
        yield dsn
    finally:
        with psycopg.connect(database.dsn, autocommit=True) as conn:
            conn.execute(pgsql.SQL("DROP DATABASE {} WITH (FORCE)").format(pgsql.Identifier(name)))


def test_a_replica_on_a_database_nobody_indexed_yet_creates_nothing(
    work_dir: Path, ollama_standin: OllamaStandin, bare_database: str
) -> None:
    # A replica started before any indexer: pgvector missing is said plainly and nothing is
    # enabled; with the extensions there, it serves its project as not indexed yet and
    # creates neither the project's schema nor the shared cache.
    with pytest.raises(PgvectorMissing, match="read replica changes nothing"):
        Database(bare_database, work_dir, writable=False).open()
    assert snapshot(bare_database)["extensions"] == [("plpgsql", "1.0")]

    with psycopg.connect(bare_database, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE EXTENSION pg_trgm")
    garden = make_project(unique_name("rgarden"), work_dir / "garden", GARDEN_FILES, "garden")
    settings = replica_settings(work_dir, {garden.name: garden}, ollama_standin, bare_database)
    before = snapshot(bare_database)
    with running(settings, standin_embedder(ollama_standin)) as copy:
        status = call(copy, garden.name, "index_status", {})
        assert status["indexed"] is False and status["indexer"] is False
        response = copy.rpc(
            garden.name,
            "tools/call",
            {"name": "find_symbol", "arguments": {"name": "WaterSchedule"}},
            headers={"MCP-Protocol-Version": "2025-11-25"},
        )
        assert response.status_code == 200
        refused = admin(copy, "reindex", {"project": garden.name})["error"]
        assert refused["data"]["error"] == "read_replica"
        assert "no indexing server is connected" in refused["message"]
    assert snapshot(bare_database) == before
    assert not schema_exists(bare_database, garden.name)
    assert not schema_exists(bare_database, "code-rag")


def test_up_on_a_replica_says_so_sweeps_nothing_and_serves(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    # `./bld up` with [indexer] enabled = false: it says it is a replica, skips the sweeps it
    # would run before serving, and serves; the project it names gets no schema.
    name = unique_name("rup")
    make_tree(work_dir / "src", {"a.py": "def answer():\n    return 42\n"})
    port = free_port()
    (work_dir / "application.ini").write_text(
        f"[server]\nport = {port}\ntoken = {TOKEN}\n[database]\ndsn = {database.dsn}\n"
        f"[embedding]\nprovider = ollama\nhost = {ollama_standin.url}\n"
        "[indexer]\nenabled = false\n",
        encoding="utf-8",
    )
    (work_dir / "rag-projects.json").write_text(
        json.dumps({"projects": {name: {"roots": ["src"]}}}), encoding="utf-8"
    )
    up = Up(work_dir)
    try:
        up.wait_for(re.compile(r"^read replica \(\[indexer\] enabled = false in "), 60)
        wait_until_served(f"http://127.0.0.1:{port}/rag-mcp/{name}", TOKEN)
    finally:
        up.stop()
    assert not [line for line in up.lines if line.startswith("sweeping")]
    assert any(f"claude mcp add --transport http {name}" in line for line in up.lines)
    assert any(f"Web pages: http://127.0.0.1:{port}/web/" in line for line in up.lines)
    assert not schema_exists(database.dsn, name)
