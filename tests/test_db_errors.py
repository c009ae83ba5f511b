"""The database failing under a read: errors are mapped once, where connections are handed out.

A stalled query embedding holds no pooled connection; a full pool says so; and every CLI
command whose database goes away after it connected (or refuses it more connections) prints
one `error:` line naming the cause, exits non-zero, and shows no traceback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_fixtures import bld, own_dsn, workspace
from ollama_standin import OllamaStandin, ollama_standin
from pg_proxy import PgProxy

from indexer.db import Database
from indexer.embed import make_embedder
from indexer.errors import DatabaseError
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import sweep_project

__all__ = ["ollama_standin", "own_dsn", "workspace"]


@pytest.fixture
def indexed(
    database: Database, project_name: str, tmp_path: Path, ollama_standin: OllamaStandin
) -> tuple[Project, Any]:
    root = tmp_path / "src"
    root.mkdir()
    (root / "invoice.py").write_text("def invoice_total(lines):\n    return sum(lines)\n")
    (root / "slug.py").write_text("def slugify(text):\n    return text.lower()\n")
    project = Project(project_name, (Root(root, "app"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    sweep_project(database, project, embedder)
    return project, embedder


@pytest.fixture
def small_pool(database: Database, tmp_path: Path) -> Iterator[Database]:
    """A second pool of two connections on the session's server, with a short wait."""
    db = Database(database.dsn, tmp_path, max_size=2, pool_timeout_s=2).open()
    yield db
    db.close()


def in_use(db: Database) -> int:
    assert db.pool is not None
    stats = db.pool.get_stats()
    return int(stats["pool_size"]) - int(stats["pool_available"])


def test_a_stalled_query_embedding_holds_no_connection(
    small_pool: Database, indexed: tuple[Project, Any], ollama_standin: OllamaStandin
) -> None:
    # The query is embedded before the search takes its connection: while Ollama stalls, the
    # pool's two connections serve two other searches at the same moment. (The keyword side,
    # run meanwhile on a connection of its own, returns it as soon as its lists are read.)
    project, embedder = indexed
    ollama_standin.reset_counters()
    ollama_standin.delay_seconds = 3.0
    stalled: list[Any] = []
    waiting = threading.Thread(
        target=lambda: stalled.append(search_code(small_pool, project, embedder, "invoice total"))
    )
    waiting.start()
    deadline = time.monotonic() + 5
    while ollama_standin.embed_requests == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ollama_standin.embed_requests == 1  # the stalled search is waiting on Ollama now
    deadline = time.monotonic() + 5
    while in_use(small_pool) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert in_use(small_pool) == 0

    start = threading.Barrier(2)
    results: list[Any] = []

    def keyword_search() -> None:
        start.wait()
        with small_pool.connection("holding") as conn:  # both connections at once
            conn.execute("SELECT pg_sleep(0.2)")
        results.append(search_code(small_pool, project, None, "slugify", mode="keyword"))

    others = [threading.Thread(target=keyword_search) for _ in range(2)]
    for t in others:
        t.start()
    for t in others:
        t.join(10)
    assert len(results) == 2 and all(r and r[0].path == "slug.py" for r in results)
    assert waiting.is_alive()  # the stalled one is still waiting, holding nothing
    waiting.join(15)
    assert stalled and stalled[0][0].path == "invoice.py"
    assert in_use(small_pool) == 0


def test_a_full_pool_says_so(small_pool: Database, indexed: tuple[Project, Any]) -> None:
    project, _ = indexed
    with small_pool.connection("first") as a, small_pool.connection("second") as b:
        assert a is not b
        with pytest.raises(DatabaseError) as caught:
            search_code(small_pool, project, None, "slugify", mode="keyword")
    assert caught.value.message.startswith(
        f"searching {project.name}: all 2 connections to PostgreSQL are busy and none came "
        "free within 2 s"
    )
    assert search_code(small_pool, project, None, "slugify", mode="keyword")  # free again


def test_a_failed_statement_leaves_as_our_error(database: Database) -> None:
    with pytest.raises(DatabaseError, match=r"^probing: relation .* does not exist"):  # noqa: SIM117
        with database.connection("probing") as conn:
            conn.execute("SELECT * FROM no_such_table")


# --- the CLI -------------------------------------------------------------------------------------

COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("search", "shop", "invoice total"),
    ("scan", "shop"),
    ("db", "status"),
]


@pytest.fixture
def proxied(workspace: Path, own_dsn: str) -> Iterator[tuple[Path, PgProxy]]:
    """The workspace, indexed, with its database reached through a cuttable proxy."""
    done = bld(workspace, "scan", "shop")
    assert done.returncode == 0, done.stderr
    proxy = PgProxy(own_dsn)
    ini = workspace / "application.ini"
    ini.write_text(ini.read_text().replace(own_dsn, proxy.dsn))
    yield workspace, proxy
    proxy.close()


def one_error_line(result: Any) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return str(lines[0])


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_cli_database_gone_after_connecting(
    proxied: tuple[Path, PgProxy], command: tuple[str, ...]
) -> None:
    # Every statement naming the project is cut off mid-flight, as a crashed server would:
    # the command has connected and checked the server by then.
    workspace, proxy = proxied
    proxy.cut_on = b"shop"
    line = one_error_line(bld(workspace, *command))
    assert proxy.cuts >= 1
    assert "PostgreSQL is not reachable" in line and "server closed the connection" in line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_cli_no_connection_free(
    proxied: tuple[Path, PgProxy], own_dsn: str, command: tuple[str, ...]
) -> None:
    # Every connection the server grants this role is taken: the command says so.
    workspace, proxy = proxied
    role = f"limited_{abs(hash(command)) % 10_000}"
    with psycopg.connect(own_dsn, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
    ini = workspace / "application.ini"
    ini.write_text(ini.read_text().replace(proxy.dsn, f"{proxy.dsn} user={role}"))
    try:
        with psycopg.connect(f"{own_dsn} user={role}"):
            line = one_error_line(bld(workspace, *command))
    finally:
        with psycopg.connect(own_dsn, autocommit=True) as admin:
            admin.execute(f"DROP ROLE IF EXISTS {role}")
    assert "PostgreSQL refuses more connections" in line and "too many connections" in line
