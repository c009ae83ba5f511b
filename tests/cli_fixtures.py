"""Fixtures for CLI tests: a workspace (config, a small project, the Ollama stand-in) on a
database of its own, and helpers that run `./bld` as a subprocess with or without a terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from ollama_standin import OllamaStandin
from psycopg.conninfo import make_conninfo

from indexer.db import Database, prepare_database

ROOT = Path(__file__).resolve().parent.parent
_count = iter(range(1, 10_000))


@pytest.fixture
def own_dsn(database: Database) -> Iterator[str]:
    """A database of its own on the session's server, dropped afterwards."""
    name = f"cli_{os.getpid()}_{next(_count)}"
    with psycopg.connect(database.dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    dsn = make_conninfo(database.dsn, dbname=name)
    prepare_database(dsn)
    yield dsn
    with psycopg.connect(database.dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def workspace(tmp_path: Path, own_dsn: str, ollama_standin: OllamaStandin) -> Path:
    src = tmp_path / "shop"
    (src / "billing").mkdir(parents=True)
    (src / "billing" / "invoice.py").write_text(
        "class Invoice:\n    def total(self):\n        return sum(self.lines)\n", encoding="utf-8"
    )
    (src / "util.py").write_text("def slugify(text):\n    return text.lower()\n", encoding="utf-8")
    (tmp_path / "application.ini").write_text(
        "[server]\ntoken = test-token-0123456789\n"
        f"[database]\ndsn = {own_dsn}\n"
        f"[embedding]\nprovider = ollama\nhost = {ollama_standin.url}\n",
        encoding="utf-8",
    )
    (tmp_path / "rag-projects.json").write_text(
        json.dumps({"projects": {"shop": {"roots": ["shop"]}}}), encoding="utf-8"
    )
    return tmp_path


def env() -> dict[str, str]:
    e = dict(os.environ)
    for var in ("CODE_RAG_CONFIG", "CODE_RAG_TOKEN", "CODE_RAG_DSN"):
        e.pop(var, None)
    return e


def bld(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with no terminal (stdin is not a TTY), as cron or CI would."""
    return subprocess.run(
        [sys.executable, "-m", "rag_server.cli", *args],
        cwd=cwd, env=env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def bld_tty(cwd: Path, answer: str, *args: str) -> tuple[int, str]:
    """Run the CLI on a real pseudo-terminal, answer its prompt, return (exit code, screen)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_server.cli", *args],
        cwd=cwd, env=env(), stdin=slave, stdout=slave, stderr=slave, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    screen = b""
    answered = False
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        screen += data
        if not answered and b"Proceed? [y/N]" in screen:
            os.write(master, answer.encode() + b"\n")
            answered = True
    os.close(master)
    return proc.wait(timeout=60), screen.decode(errors="replace").replace("\r\n", "\n")
