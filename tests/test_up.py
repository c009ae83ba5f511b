"""`./bld up` as a person runs it: a subprocess from a folder with no configuration.

The fast test configures the Ollama stand-in and one small project, then checks the whole
path: database, sweep with progress, serving, and the exact `claude mcp add` line, which an
MCP client then uses as printed. The slow test starts from nothing at all: `up` writes the
configuration (this checkout as the demo project) and indexes with the bundled local model.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

pytest.register_assert_rewrite("server_fixtures")

from running import Running, free_port, wait_until_served  # noqa: E402
from server_fixtures import SHOP_FILES, make_tree  # noqa: E402

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin

pytest_plugins = ["server_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_LINE = re.compile(
    r"claude mcp add --transport http (\S+) (\S+) --header \"X-RAG-Token: (\S+)\""
)


class Up(Running):
    """`python -m rag_server.cli up` in `folder`, its output collected line by line."""

    def __init__(self, folder: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}
        super().__init__([sys.executable, "-m", "rag_server.cli", "up", *args], folder, env)


@pytest.fixture
def running() -> Iterator[list[Up]]:
    started: list[Up] = []
    yield started
    for up in started:
        up.stop()


def search(url: str, token: str, query: str, **filters: Any) -> dict[str, Any]:
    response = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_code", "arguments": {"query": query, **filters}},
        },
        headers={"X-RAG-Token": token, "MCP-Protocol-Version": "2025-11-25"},
        timeout=60,
    )
    result: dict[str, Any] = response.json()["result"]
    assert result["isError"] is False, result
    return dict(result["structuredContent"])


def test_up_sweeps_serves_and_prints_the_claude_line(
    work_dir: Path, ollama_standin: OllamaStandin, running: list[Up]
) -> None:
    make_tree(work_dir / "shop", SHOP_FILES)
    port = free_port()
    (work_dir / "application.ini").write_text(
        f"[server]\nport = {port}\n\n[embedding]\nprovider = ollama\nhost = {ollama_standin.url}\n",
        encoding="utf-8",
    )
    (work_dir / "rag-projects.json").write_text(
        '{"projects": {"shop": {"roots": ["shop"]}}}', encoding="utf-8"
    )
    up = Up(work_dir)
    running.append(up)
    match = up.wait_for(CLAUDE_LINE, timeout=120)
    name, url, token = match.groups()
    assert (name, url) == ("shop", f"http://127.0.0.1:{port}/rag-mcp/shop")
    assert token == (work_dir / ".data" / "token").read_text().strip()
    output = "\n".join(up.lines)
    assert "database: PostgreSQL" in output and "embedding: ollama" in output
    assert "sweeping shop" in output
    # The printed line is a valid shell command with exactly these arguments.
    line = next(line for line in up.lines if "claude mcp add" in line)
    assert shlex.split(line)[-2:] == ["--header", f"X-RAG-Token: {token}"]

    wait_until_served(url, token)
    hits = search(url, token, "invoice number")["hits"]
    assert hits and hits[0]["path"] == "billing/invoice.py"
    # The web pages' address, printed, answers with the sign-in form.
    pages = f"http://127.0.0.1:{port}/web/"
    assert any(line.startswith(f"Web pages: {pages} ") for line in up.lines)
    assert 'name="token"' in httpx.get(pages, follow_redirects=True, timeout=30).text
    assert up.stop() == 0


def test_up_model_free_sweeps_and_serves_with_no_model(
    work_dir: Path, ollama_standin: OllamaStandin, running: list[Up]
) -> None:
    # provider = none: `up` says so, sweeps rows only and serves keyword and name search; the
    # stand-in named as the host must see no request at all.
    make_tree(work_dir / "shop", SHOP_FILES)
    port = free_port()
    (work_dir / "application.ini").write_text(
        f"[server]\nport = {port}\n\n[embedding]\nprovider = none\nhost = {ollama_standin.url}\n",
        encoding="utf-8",
    )
    (work_dir / "rag-projects.json").write_text(
        '{"projects": {"shop": {"roots": ["shop"]}}}', encoding="utf-8"
    )
    up = Up(work_dir)
    running.append(up)
    _, url, token = up.wait_for(CLAUDE_LINE, timeout=120).groups()
    output = "\n".join(up.lines)
    assert "embedding: none (model-free" in output and "sweeping shop" in output
    wait_until_served(url, token)
    found = search(url, token, "invoice number")
    assert found["hits"][0]["path"] == "billing/invoice.py" and found["vectors"] == "off"
    assert up.stop() == 0
    assert ollama_standin.embedding_calls == 0 and ollama_standin.show_requests == 0


@pytest.mark.slow
def test_up_on_a_fresh_folder_writes_the_demo_config_and_serves_it(
    work_dir: Path, running: list[Up]
) -> None:
    # Nothing configured: `up` writes both files, indexes this checkout with the bundled local
    # model (the one test that uses it), and serves it.
    port = free_port()
    up = Up(work_dir, "--port", str(port))
    running.append(up)
    match = up.wait_for(CLAUDE_LINE, timeout=600)
    name, url, token = match.groups()
    assert (work_dir / "application.ini").exists()
    assert (work_dir / "rag-projects.json").exists()
    assert url == f"http://127.0.0.1:{port}/rag-mcp/{name}"
    wait_until_served(url, token)
    # The demo indexes the product's docs too, which speak of the same check: ask for code.
    hits = search(url, token, "check the request token in constant time", language="python")["hits"]
    assert any(hit["path"] == "rag_server/app.py" for hit in hits), hits
    assert up.stop() == 0
