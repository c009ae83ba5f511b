"""A long-running command as a person runs it: a subprocess whose output is read line by line
while it runs (`wait_for` a line), stopped with Ctrl-C (SIGINT) as from a terminal."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx


def wait_until_served(url: str, token: str, timeout: float = 60) -> None:
    """Until `url` answers a JSON-RPC ping: a server prints how to connect just before it
    listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            response = httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"X-RAG-Token": token},
            )
            if response.status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"nothing served at {url}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Running:
    """`command` started in `folder` with `env`, its output (stdout and stderr) collected."""

    def __init__(self, command: Sequence[str], folder: Path, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(command),
            cwd=folder,
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := pattern.search(line):
                    return match
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError("it never printed it; output:\n" + "\n".join(self.lines))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.reader.join(timeout=10)
        return self.proc.returncode
