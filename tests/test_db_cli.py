"""`./bld db status` through a real subprocess: the embedded server starts under the data folder,
keeps its data across restarts, stops when the process exits; a DSN reaches another server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rag_server.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_embedded_server_keeps_data_across_restarts_and_stops(work_dir: Path) -> None:
    tmp_path = work_dir
    (tmp_path / "application.ini").write_text("[paths]\ndata = state\n", encoding="utf-8")
    create = (
        "from pathlib import Path; from indexer.db import Database, Schema, store\n"
        "with Database('', Path('state').resolve()).open() as db, db.connection() as c:\n"
        "    store.ensure_project(c, Schema('kept'))\n"
    )
    subprocess.run([sys.executable, "-c", create], cwd=tmp_path, check=True, timeout=120)
    pgdata = tmp_path / "state" / "pgdata"
    # The process that started the server was its last user: it stopped the server on exit.
    assert not (pgdata / "postmaster.pid").exists()

    result = run_cli("db", "status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("PostgreSQL 18.")
    assert f"(embedded, {pgdata})" in lines[0]
    assert lines[1].startswith("pgvector   0.8")
    assert lines[2] == "project schemas: 1"
    assert lines[3].split() == [
        "kept",
        "0",
        "files",
        "0",
        "chunks",
        "(not",
        "in",
        "the",
        "projects",
        "file)",
    ]
    assert not (pgdata / "postmaster.pid").exists()


def test_status_through_a_dsn(tmp_path: Path, dsn: str) -> None:
    import os

    env = dict(os.environ, CODE_RAG_DSN=dsn)
    result = run_cli("db", "status", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "(external, " in result.stdout
    assert not (tmp_path / ".data" / "pgdata").exists()


def test_unreachable_server_is_one_clear_line(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, CODE_RAG_DSN="postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    result = run_cli("db", "status", cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: connecting to 127.0.0.1:1/none: PostgreSQL is not reachable")
    assert line.endswith("check that the server runs and [database] dsn is right")


@pytest.mark.parametrize("command", [["--help"], ["db", "--help"], ["db", "status", "--help"]])
def test_help_lists_commands(command: list[str], tmp_path: Path) -> None:
    result = run_cli(*command, cwd=tmp_path)
    assert result.returncode == 0
    assert "Usage: code-rag" in result.stdout
