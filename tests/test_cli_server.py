"""`./bld status --server` and `./bld reindex` against a real `./bld serve` process, as an
operator runs them (the same admin calls the curl examples in docs/mcp.md make)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli_fixtures import bld, env, own_dsn, workspace
from ollama_standin import ollama_standin

__all__ = ["ollama_standin", "own_dsn", "workspace"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(workspace: Path) -> Iterator[Path]:
    port = free_port()
    ini = workspace / "application.ini"
    ini.write_text(ini.read_text().replace("[server]\n", f"[server]\nport = {port}\n"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_server.cli", "serve"],
        cwd=workspace, env=env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.2)
        yield workspace
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_status_server_and_reindex_through_the_admin_endpoint(served: Path) -> None:
    # The server sweeps the never-scanned project at start-up; wait until it is indexed.
    deadline = time.time() + 60
    while time.time() < deadline:
        result = bld(served, "status", "shop", "--server", "--json")
        assert result.returncode == 0, result.stderr
        [status] = json.loads(result.stdout)["projects"]
        if status["files"] == 2 and not status["sweep_running"]:
            break
        time.sleep(0.5)
    assert status["project"] == "shop" and status["files"] == 2
    assert status["next_sweep_at"]

    text = bld(served, "status", "--server")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "shop"
    assert any(line.startswith("  next sweep: ") for line in lines)

    reindex = bld(served, "reindex", "shop")
    assert reindex.returncode == 0, reindex.stderr
    answer = json.loads(reindex.stdout)
    assert answer["run_id"] and answer["full"] is False
    bad = bld(served, "reindex", "nosuch")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: the server refused reindex: unknown project 'nosuch'")
