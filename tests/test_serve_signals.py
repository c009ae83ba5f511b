"""Stopping `./bld serve` stops the embedded PostgreSQL it started, on SIGTERM as on SIGINT,
unless another live process still uses it (as systemd, a container or a terminal stop it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from ollama_standin import OllamaStandin, ollama_standin
from test_up import free_port, wait_until_served

__all__ = ["ollama_standin"]

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def folder(ollama_standin: OllamaStandin) -> Iterator[Path]:
    """A configured folder with an embedded database of its own (readable by its server)."""
    path = Path(tempfile.mkdtemp(prefix="code-rag-signals-"))
    path.chmod(0o755)
    (path / "src").mkdir()
    (path / "src" / "a.py").write_text("def answer():\n    return 42\n", encoding="utf-8")
    (path / "application.ini").write_text(
        f"[server]\nport = {free_port()}\ntoken = {TOKEN}\n"
        f"[embedding]\nprovider = ollama\nhost = {ollama_standin.url}\n",
        encoding="utf-8",
    )
    (path / "rag-projects.json").write_text(
        json.dumps({"projects": {"demo": {"roots": ["src"]}}}), encoding="utf-8"
    )
    yield path
    for proc in postgres_on(path):
        proc.kill()
    subprocess.run(["rm", "-rf", str(path)], check=False)


def interruptible() -> None:
    """In a child before it runs: Ctrl-C as a terminal delivers it. A child inherits which
    signals its parent blocks or ignores, and in a whole-suite run a scan started from the test
    process ran to its end through a dozen Ctrl-Cs."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def postgres_on(folder: Path) -> list[psutil.Process]:
    """PostgreSQL server processes whose data folder is under `folder`."""
    pgdata = str(folder / ".data" / "pgdata")
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(part.endswith("/postgres") for part in cmdline[:1]) and pgdata in cmdline:
            found.append(proc)
    return found


def serve(folder: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_server.cli", "serve"],
        cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    port = (folder / "application.ini").read_text().split("port = ")[1].split()[0]
    wait_until_served(f"http://127.0.0.1:{port}/rag-mcp/demo", TOKEN)
    return proc


def wait_gone(folder: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not postgres_on(folder):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_server_leaves_no_database_running(folder: Path, sig: signal.Signals) -> None:
    proc = serve(folder)
    assert postgres_on(folder), "the embedded server should run while serving"
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert wait_gone(folder), f"PostgreSQL still runs on {folder} after {sig.name}"


def test_the_database_stays_while_another_process_uses_it(folder: Path) -> None:
    # A second process (as `./bld scan` would) joins the same embedded server and outlives the
    # server process: the database must keep running for it, then stop when it exits.
    other = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from indexer.db import start_embedded; "
         f"start_embedded(Path({str(folder / '.data')!r})); print('ready', flush=True); "
         "sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert other.stdout is not None and other.stdin is not None
    assert other.stdout.readline().strip() == "ready"
    proc = serve(folder)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    time.sleep(1)
    assert postgres_on(folder), "the server stopped the database another process still uses"
    other.stdin.write("\n")
    other.stdin.flush()
    other.wait(timeout=60)
    assert wait_gone(folder)


def test_an_interrupted_scan_stops_the_database_too(
    folder: Path, ollama_standin: OllamaStandin
) -> None:
    # Ctrl-C in the middle of a scan (its vectors being embedded): the process exits non-zero,
    # and the embedded server it started does not outlive it.
    for i in range(40):
        (folder / "src" / f"m{i:02d}.py").write_text(f"def f{i}():\n    return {i}\n")
    # Each embedding request takes 3 s: the Ctrl-C, sent once a request is in flight after
    # "to index", lands in the middle of the work however fast the rows went in.
    ollama_standin.delay_seconds = 3.0
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag_server.cli", "scan", "demo"],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=interruptible,
    )  # fmt: skip
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "to index" not in (proc.stdout.readline() or "to index"):
        pass
    asked = ollama_standin.embed_requests
    while time.monotonic() < deadline and ollama_standin.embed_requests == asked:
        time.sleep(0.05)
    assert ollama_standin.embed_requests > asked, "the scan should be embedding by now"
    assert postgres_on(folder), "the scan should be running on the embedded server"
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    assert code != 0, f"the scan ended as if not interrupted: {proc.stdout.read()}"
    assert wait_gone(folder), "PostgreSQL still runs after the scan was interrupted"
