"""Fixtures for the server tests: real projects on disk, the real app under a real uvicorn.

`make_tree` writes a small source tree; `server_settings` builds `Settings` for projects whose
schemas are dropped afterwards; `ServerThread` runs the Litestar app on 127.0.0.1 with an
ephemeral port in a background thread (uvicorn, lifespan on). The embedder is the Ollama
stand-in, so results are deterministic and fast.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from ollama_standin import OllamaStandin, ollama_standin  # noqa: F401  (re-exported fixture)

from bench.served import ServerThread
from indexer.db import Database, Schema, store
from indexer.embed import Embedder, make_embedder
from indexer.project import Project, Root
from indexer.sweep import sweep_project
from rag_server.app import create_app
from rag_server.config import (
    DatabaseSettings,
    EmbeddingSettings,
    IndexerSettings,
    SearchSettings,
    ServerSettings,
    Settings,
)

TOKEN = "test-token-0123456789abcdef"
STANDIN_MODEL = "nomic-embed-text:v1.5"
_names = itertools.count(1)

SHOP_FILES: Mapping[str, str] = {
    "billing/invoice.py": '''"""Invoices."""


class Invoice:
    def generate_number(self, year: int, sequence: int) -> str:
        """The invoice number: year, dash, zero-padded sequence."""
        return f"{year}-{sequence:06d}"

    def total(self, lines: list[float]) -> float:
        return round(sum(lines), 2)
''',
    "net/retry.py": '''import time


def retry_with_backoff(call, attempts: int = 5, base: float = 0.1):
    """Call `call` until it succeeds, sleeping exponentially longer between attempts."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(base * 2**attempt)
    raise TimeoutError("gave up")
''',
    "README.md": "# Shop\n\nA shop with invoices and a retrying HTTP client.\n",
}

GARDEN_FILES: Mapping[str, str] = {
    "plants/water.go": """package plants

// WaterSchedule says how many days pass between waterings of a plant.
func WaterSchedule(species string) int {
	if species == "cactus" {
		return 21
	}
	return 3
}
""",
}


def unique_name(prefix: str = "srv") -> str:
    return f"{prefix}{os.getpid()}_{next(_names)}"


def make_tree(base: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return base


def make_project(name: str, base: Path, files: Mapping[str, str], label: str = "main") -> Project:
    root = make_tree(base, files)
    return Project(name=name, roots=(Root(path=root.resolve(), name=label),))


def server_settings(
    work_dir: Path,
    projects: Mapping[str, Project],
    standin: OllamaStandin,
    dsn: str,
    *,
    interval_minutes: int = 10,
    groups: Mapping[str, tuple[str, ...]] | None = None,
) -> Settings:
    return Settings(
        config_path=work_dir / "application.ini",
        data_dir=work_dir / ".data",
        projects_path=work_dir / "rag-projects.json",
        server=ServerSettings("127.0.0.1", 17080, TOKEN),
        database=DatabaseSettings(dsn),
        embedding=EmbeddingSettings("ollama", STANDIN_MODEL, standin.url),
        indexer=IndexerSettings(sweep_interval_minutes=interval_minutes),
        search=SearchSettings(),
        projects=dict(projects),
        groups=dict(groups or {}),
    )


def standin_embedder(standin: OllamaStandin) -> Embedder:
    return make_embedder("ollama", STANDIN_MODEL, standin.url)


def drop_projects(database: Database, names: list[str]) -> None:
    with database.connection() as conn:
        for name in names:
            if store.project_exists(conn, Schema(name)):
                store.drop_project(conn, Schema(name))
        conn.commit()


class Served:
    """A running server with its projects, settings and an HTTP client carrying the token."""

    def __init__(self, server: ServerThread, settings: Settings, app: Litestar) -> None:
        self.server = server
        self.settings = settings
        self.app = app
        self.standin: OllamaStandin | None = None
        self.http = httpx.Client(base_url=server.base, timeout=30, headers={"X-RAG-Token": TOKEN})

    @property
    def project(self) -> str:
        """The first (often the only) project served."""
        return next(iter(self.settings.projects))

    @property
    def service(self) -> Any:
        return self.app.state.service

    def url(self, project: str) -> str:
        return self.server.url(project)

    def rpc(
        self,
        project: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        request_id: int | str | None = 1,
    ) -> httpx.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if request_id is not None:
            body["id"] = request_id
        if params is not None:
            body["params"] = params
        return self.http.post(f"/rag-mcp/{project}", json=body, headers=headers or {})


def serve(
    work_dir: Path,
    projects: Mapping[str, Project],
    standin: OllamaStandin,
    database: Database,
    *,
    schedule: bool = False,
    embedder: Embedder | None = None,
    interval_minutes: int = 10,
    watch: bool = False,
    groups: Mapping[str, tuple[str, ...]] | None = None,
) -> Iterator[Served]:
    """Serve `projects` (and `groups` of them) until the generator is closed; drop their
    schemas afterwards."""
    settings = server_settings(
        work_dir, projects, standin, database.dsn, interval_minutes=interval_minutes, groups=groups
    )
    app = create_app(
        settings,
        database=database,
        embedder=embedder or standin_embedder(standin),
        schedule=schedule,
        watch=watch,
    )
    try:
        with running(app, settings) as served:
            yield served
    finally:
        drop_projects(database, list(projects))


@contextlib.contextmanager
def running(app: Litestar, settings: Settings) -> Iterator[Served]:
    """`app` (made for `settings`) under a real uvicorn until the block ends."""
    server = ServerThread(app).start()
    served = Served(server, settings, app)
    try:
        yield served
    finally:
        served.http.close()
        server.stop()


def index(database: Database, project: Project, standin: OllamaStandin) -> None:
    sweep_project(database, project, standin_embedder(standin))


@pytest.fixture(scope="module")
def shop(database: Database) -> Iterator[Served]:
    """One indexed project ("shop" files) served without the scheduler, shared by a module.
    `served.standin` is its embedder's stand-in: reset its switches after changing them."""
    base = Path(tempfile.mkdtemp(prefix="code-rag-shop-"))
    with OllamaStandin() as standin:
        project = make_project(unique_name("shop"), base / "shop", SHOP_FILES, label="shop")
        index(database, project, standin)
        for served in serve(base, {project.name: project}, standin, database):
            served.standin = standin
            yield served
    shutil.rmtree(base, ignore_errors=True)


class GatedEmbedder:
    """Wraps a real embedder; `embed_documents` waits for `gate` (queries never wait), so a
    test can hold a sweep in the middle of its work and act while it runs."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.waiting = threading.Event()

    @property
    def identity(self) -> Any:
        return self.inner.identity

    def embed_documents(self, texts: Any, labels: Any = None) -> Any:
        self.waiting.set()
        if not self.gate.wait(timeout=60):
            raise RuntimeError("the test never opened the gate")
        return self.inner.embed_documents(texts, labels)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    def close(self) -> None:
        self.inner.close()


def call(served: Served, project: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result over JSON-RPC; the call must succeed."""
    response = served.rpc(
        project,
        "tools/call",
        {"name": tool, "arguments": arguments},
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    assert result["isError"] is False, result["content"][0]["text"]
    return dict(result["structuredContent"])


def wait_for(predicate: Any, timeout: float = 30, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
