"""Each `./bld` command imports what it uses: one that serves nothing loads no web framework,
one that calls no running server loads no HTTP client, one that sweeps nothing loads no sweep,
one that searches nothing loads no search, one that embeds nothing loads no model runtime
(numpy, ONNX Runtime, the tokenizer), and only `--json` loads the MCP tools. Each command runs
in a fresh interpreter, as `./bld` runs it, on a small project with the default local model and
a database of its own, then reports which of those it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_fixtures import env, own_dsn

__all__ = ["own_dsn"]  # a fixture, imported for pytest

# Runs one CLI command in this process, then says which of the watched modules it imported.
RUN_AND_REPORT = textwrap.dedent(
    """
    import sys
    from rag_server.cli import app
    code = 0
    try:
        app(sys.argv[1:], prog_name="code-rag")
    except SystemExit as exc:
        code = exc.code or 0
    watched = {watched!r}
    print("LOADED:" + ",".join(m for m in watched if m in sys.modules))
    sys.exit(code)
    """
)
WEB = ("litestar", "uvicorn", "rag_server.app", "rag_server.auth")
HTTP = ("httpx",)
SWEEP = (
    "indexer.sweep.run",
    "indexer.sweep.write",
    "indexer.sweep.vectors",
    "indexer.sweep.prepare",
    "indexer.sweep.workers",
)
SERVER = ("rag_server.service", "apscheduler", "watchfiles")
SEARCH = ("indexer.search.hybrid", "indexer.search.keyword")
MODEL = ("numpy", "onnxruntime", "tokenizers")
TOOLS = ("rag_server.tools.toolbox", "rag_server.tools.search", "rag_server.tools.navigation")


def cli(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    script = RUN_AND_REPORT.format(watched=(*WEB, *HTTP, *SWEEP, *SERVER, *SEARCH, *MODEL, *TOOLS))
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd, env=env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("LOADED:")), "LOADED:")
    return done, {m for m in line.removeprefix("LOADED:").split(",") if m}


@pytest.fixture
def shop(tmp_path: Path, own_dsn: str) -> Path:
    src = tmp_path / "shop"
    src.mkdir()
    (src / "invoice.py").write_text(
        "class Invoice:\n    def total(self):\n        return sum(line.amount for line in "
        "self.lines)\n",
        encoding="utf-8",
    )
    (tmp_path / "application.ini").write_text(
        f"[server]\nport = 9\n[database]\ndsn = {own_dsn}\n[embedding]\nprovider = local\n",
        encoding="utf-8",
    )
    (tmp_path / "rag-projects.json").write_text(
        json.dumps({"projects": {"shop": {"roots": ["shop"]}}}), encoding="utf-8"
    )
    return tmp_path


@pytest.mark.slow
def test_each_command_loads_only_what_it_uses(shop: Path) -> None:
    scanned, loaded = cli(shop, "scan", "shop", "--yes")
    assert scanned.returncode == 0, scanned.stderr
    assert loaded.isdisjoint((*WEB, *HTTP, *SERVER, *SEARCH, *TOOLS)), loaded
    assert set(SWEEP[:3]) <= loaded  # the sweep it runs, and nothing served
    assert set(MODEL) <= loaded  # it embedded the new file
    again, loaded = cli(shop, "scan", "shop", "--yes")  # nothing changed: a no-op sweep
    assert ", 0 indexed, 1 unchanged," in again.stdout
    assert loaded.isdisjoint((*WEB, *HTTP, *SERVER, *SEARCH, *TOOLS, *MODEL)), loaded

    found, loaded = cli(shop, "search", "shop", "invoice total")
    assert found.returncode == 0, found.stderr
    assert "invoice.py" in found.stdout
    assert loaded.isdisjoint((*WEB, *HTTP, *SWEEP, *SERVER, *TOOLS)), loaded
    assert set(MODEL) <= loaded  # it embedded the query
    as_json, loaded = cli(shop, "search", "shop", "invoice total", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert "rag_server.tools.search" in loaded  # the tool's object, as the tool makes it

    added, loaded = cli(shop, "token", "add", "shop", "--json")
    assert added.returncode == 0, added.stderr
    assert loaded.isdisjoint((*WEB, *HTTP, *SWEEP, *SERVER, *SEARCH, *MODEL, *TOOLS)), loaded
    for args in (
        ["token", "list"],
        ["token", "revoke", "shop"],
        ["status", "shop"],
        ["scan", "shop", "--dry-run"],
        ["symbols", "shop", "Invoice"],
        ["outline", "shop", "shop", "invoice.py"],
        ["grep", "shop", "sum("],
        ["refs", "shop", "total"],
        ["db", "status"],
    ):
        done, loaded = cli(shop, *args)
        assert done.returncode == 0, (args, done.stderr)
        unused = (*WEB, *HTTP, *SWEEP, *SERVER, *SEARCH, *MODEL, *TOOLS)
        assert loaded.isdisjoint(unused), (args, loaded)

    # Asking the running server (none here) is what loads the HTTP client, and only that.
    asked, loaded = cli(shop, "status", "--server")
    assert asked.returncode == 1
    assert "httpx" in loaded and loaded.isdisjoint((*WEB, *SWEEP, *SERVER, *MODEL)), loaded
