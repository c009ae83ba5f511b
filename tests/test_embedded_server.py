"""The embedded server's own settings: sized to the machine at its first start (a restart
applies them), kept across starts without another restart, and dropped, with the server
started as PostgreSQL would, when the system refuses them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import _make_dir, stop_embedded

from indexer.db import database as db_module
from indexer.db.database import UNTUNED_MARK, Database, embedded_settings, memory_bytes


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = _make_dir()
    yield path
    stop_embedded(path)


def settings_in_bytes(database: Database) -> tuple[int, int, str]:
    with database.connection() as conn:
        row = conn.execute(
            "SELECT (SELECT setting::bigint * 8192 FROM pg_settings"
            "         WHERE name = 'shared_buffers'),"
            "       (SELECT setting::bigint * 8192 FROM pg_settings"
            "         WHERE name = 'effective_cache_size'),"
            "       pg_postmaster_start_time()::text"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), str(row[2])


def megabytes(value: str) -> int:
    assert value.endswith("MB")
    return int(value[:-2]) * 1024 * 1024


def test_sizes_follow_the_machine() -> None:
    gib = 1024**3
    assert embedded_settings(512 * 1024**2)["shared_buffers"] == "128MB"  # never below
    assert embedded_settings(8 * gib)["shared_buffers"] == "1024MB"  # an eighth
    assert embedded_settings(64 * gib)["shared_buffers"] == "2048MB"  # never above
    assert embedded_settings(8 * gib)["effective_cache_size"] == "4096MB"
    assert memory_bytes() > 0


def test_the_embedded_server_runs_with_its_settings(data_dir: Path) -> None:
    wanted = embedded_settings(memory_bytes())
    with Database("", data_dir) as first:
        shared, cache, started = settings_in_bytes(first)
        assert shared == megabytes(wanted["shared_buffers"])
        assert cache == megabytes(wanted["effective_cache_size"])
        # A second process-level start joins the running server: nothing to apply, no restart.
        with Database("", data_dir) as second:
            assert settings_in_bytes(second) == (shared, cache, started)
    assert not (data_dir / "pgdata" / UNTUNED_MARK).exists()


def test_settings_the_system_refuses_are_dropped(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four terabytes of shared buffers: a value PostgreSQL accepts, memory no machine here has.
    monkeypatch.setattr(
        db_module,
        "embedded_settings",
        lambda memory: {"shared_buffers": "4000GB", "effective_cache_size": "1024MB"},
    )
    with Database("", data_dir) as database:
        shared, _cache, _started = settings_in_bytes(database)
        assert shared == 128 * 1024 * 1024  # PostgreSQL's own default
    assert (data_dir / "pgdata" / UNTUNED_MARK).exists()
    stop_embedded(data_dir)
    with Database("", data_dir) as database:  # not tried again
        assert settings_in_bytes(database)[0] == 128 * 1024 * 1024
