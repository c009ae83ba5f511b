"""code-rag as people install it: an sdist and a wheel built from this checkout, the wheel
installed into a fresh virtual environment, and `code-rag` run from a folder that is not the
checkout, with a home of its own.

The fresh environment sees exactly the runtime's dependencies (the closure of the project's
requirements without extras, linked from the test environment: nothing is downloaded) and
none of the checkout, so a file the wheel lacks, a path that assumes a checkout or an import of
a test-only package fails here as it fails for a user. `pip install --no-index` resolves the
wheel's own requirements against them, so a requirement the runtime lacks fails too.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from running import Running, free_port, wait_until_served

ROOT = Path(__file__).resolve().parent.parent
CLAUDE_LINE = re.compile(
    r"claude mcp add --transport http (\S+) (\S+) --header \"X-RAG-Token: (\S+)\""
)

pytestmark = pytest.mark.slow


def runtime_distributions(project: str = "code-rag") -> list[metadata.Distribution]:
    """The installed distributions `project` needs at run time: its requirements without
    extras, and theirs (with the extras they ask for), transitively."""
    seen: dict[str, tuple[metadata.Distribution, frozenset[str]]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(project, frozenset())]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in seen and extras <= seen[key][1]:
            continue
        dist = metadata.distribution(name)
        seen[key] = (dist, extras | seen.get(key, (dist, frozenset()))[1])
        for spec in dist.requires or []:
            req = Requirement(spec)
            wanted = [{"extra": extra} for extra in sorted(extras)] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in wanted):
                todo.append((req.name, frozenset(req.extras)))
    del seen[canonicalize_name(project)]
    return [dist for dist, _ in seen.values()]


def link_runtime(into: Path) -> None:
    """A folder of links to the runtime distributions' files, as a site folder to add."""
    into.mkdir()
    for dist in runtime_distributions():
        base = Path(str(dist.locate_file("")))
        tops = {f.parts[0] for f in dist.files or () if f.parts and f.parts[0] != ".."}
        for top in tops:
            if (base / top).exists() and not (into / top).exists():
                (into / top).symlink_to(base / top)


def run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, check=False, **kwargs
    )  # type: ignore[call-overload]


@dataclass(frozen=True)
class Installed:
    venv: Path
    home: Path
    built: tuple[str, ...]  # the sdist's and the wheel's names

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "code-rag"

    def env(self) -> dict[str, str]:
        """A user's environment: its own home, config and data folders, no code-rag setting."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CODE_RAG_", "XDG_"))}
        env.update(HOME=str(self.home), PYTHONDONTWRITEBYTECODE="1")
        return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    dist, wheels = base / "dist", base / "wheels"
    # The sdist first, then the wheel built from it: the wheel carries what the sdist carried.
    sdist = run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])",
            dist,
        ],
        cwd=ROOT,
    )
    assert sdist.returncode == 0, sdist.stderr
    [tarball] = dist.glob("code_rag-*.tar.gz")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    wheel = run([*build, "-w", wheels, tarball], cwd=base)
    assert wheel.returncode == 0, wheel.stderr
    [built] = wheels.glob("code_rag-*.whl")

    venv = base / "venv"
    made = run([sys.executable, "-m", "venv", venv])
    assert made.returncode == 0, made.stderr
    link_runtime(base / "runtime")
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    (Path(purelib) / "runtime.pth").write_text(f"{base / 'runtime'}\n", encoding="utf-8")
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    install = run([*pip, "install", "--no-index", built])
    assert install.returncode == 0, install.stdout + install.stderr
    check = run([*pip, "check"])
    assert check.returncode == 0, check.stdout
    home = base / "home"
    home.mkdir()
    return Installed(venv, home, (tarball.name, built.name))


class Up(Running):
    """`code-rag up` of the installed command in `folder`, its output collected."""

    def __init__(self, installed: Installed, folder: Path, *args: str) -> None:
        super().__init__([str(installed.command), "up", *args], folder, installed.env())


@pytest.fixture
def running() -> Iterator[list[Up]]:
    started: list[Up] = []
    yield started
    for up in started:
        up.stop()


async def search_code(url: str, token: str, query: str) -> list[dict[str, object]]:
    """`search_code` through the official MCP client, as Claude Code calls it."""
    http = httpx2.AsyncClient(headers={"X-RAG-Token": token}, timeout=60)
    async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
        result = await client.call_tool("search_code", {"query": query, "top_k": 5})
    assert not result.is_error, result
    assert result.structured_content is not None
    hits: list[dict[str, object]] = result.structured_content["hits"]
    return hits


def test_the_sdist_and_the_wheel_carry_what_runs(installed: Installed) -> None:
    # What the first run, the web pages and the local embedder read from the package.
    site = Path(
        sysconfig.get_path(
            "purelib", vars={"base": str(installed.venv), "platbase": str(installed.venv)}
        )
    )
    for part in (
        "rag_server/application.ini.example",
        "rag_server/web/templates/search.html",
        "rag_server/web/static/web.css",
        "indexer/embed/models/code-minilm-l6-v2/model.onnx",
        "indexer/embed/models/code-minilm-l6-v2/tokenizer.json",
        "chunkers/queries/python.scm",
    ):
        assert (site / part).is_file(), part
    # The installed package is the wheel's, not the checkout's.
    where = run(
        [installed.venv / "bin" / "python", "-c", "import rag_server; print(rag_server.__file__)"],
        cwd=installed.home,
    )
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout


def test_help_says_code_rag(installed: Installed, tmp_path: Path) -> None:
    # `--help` names the command a user types, on the whole and for each command.
    shown = run([installed.command, "--help"], cwd=tmp_path, env=installed.env())
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("Usage: code-rag ")
    assert "bld" not in shown.stdout
    up = run([installed.command, "up", "--help"], cwd=tmp_path, env=installed.env())
    assert up.returncode == 0 and "Usage: code-rag up" in up.stdout and "bld" not in up.stdout


def test_a_missing_or_broken_config_gives_one_line(installed: Installed, tmp_path: Path) -> None:
    env = installed.env()
    # Nothing configured: a command that reads the index says how to start, no traceback.
    fresh = run([installed.command, "status"], cwd=tmp_path, env=env)
    assert fresh.returncode == 0, fresh.stderr
    assert "code-rag up" in fresh.stdout and "Traceback" not in fresh.stdout + fresh.stderr
    missing = run([installed.command, "status", "--config", tmp_path / "nope.ini"], env=env)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: ") and "code-rag init" in missing.stderr
    assert "Traceback" not in missing.stderr
    # A broken file: every command that reads it fails with one line naming the key.
    broken = tmp_path / "application.ini"
    broken.write_text("[server]\nport = many\n", encoding="utf-8")
    for command in (["up"], ["serve"], ["status"], ["scan", "all"], ["search", "x", "y"]):
        done = run([installed.command, *command], cwd=tmp_path, env=env)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert done.stderr.strip().count("\n") == 0, done.stderr
        assert "[server] port = 'many'" in done.stderr and "Traceback" not in done.stderr
    # The checkout's developer commands say where they run.
    tests = run([installed.command, "test"], cwd=tmp_path, env=env)
    assert tests.returncode == 1 and "checkout" in tests.stderr and "Traceback" not in tests.stderr


def test_up_in_a_project_folder_indexes_it_and_answers_search_code(
    installed: Installed, tmp_path: Path, running: list[Up]
) -> None:
    # `code-rag up` in an ordinary folder with nothing configured: the folder becomes a
    # project named after it, the configuration and data go to the user's folders (none into
    # the project), and search_code over MCP finds a definition there.
    project = tmp_path / "Shop-API"
    (project / "billing").mkdir(parents=True)
    (project / "billing" / "invoice.py").write_text(
        "class Invoice:\n"
        '    """A customer invoice."""\n\n'
        "    def generate_number(self, year: int, sequence: int) -> str:\n"
        '        """The invoice number: the year, then the sequence padded to five digits."""\n'
        '        return f"INV-{year}-{sequence:05d}"\n',
        encoding="utf-8",
    )
    (project / "README.md").write_text("# Shop API\n\nOrders and invoices.\n", encoding="utf-8")
    port = free_port()
    up = Up(installed, project, "--port", str(port))
    running.append(up)
    name, url, token = up.wait_for(CLAUDE_LINE, timeout=300).groups()
    assert (name, url) == ("shop_api", f"http://127.0.0.1:{port}/rag-mcp/shop_api")
    config = installed.home / ".config" / "code-rag"
    assert (config / "application.ini").is_file() and (config / "rag-projects.json").is_file()
    data = installed.home / ".local" / "share" / "code-rag"
    assert (data / "token").read_text(encoding="utf-8").strip() == token
    assert sorted(p.name for p in project.iterdir()) == ["README.md", "billing"]

    wait_until_served(url, token)
    hits = anyio.run(search_code, url, token, "how is the invoice number made")
    assert hits and hits[0]["path"] == "billing/invoice.py", hits
    assert "generate_number" in str(hits[0]["symbol"]) or "Invoice" in str(hits[0]["symbol"])

    # A second folder while it serves: added to the same configuration, and the running
    # server, which follows the projects file, indexes and serves it.
    other = tmp_path / "tools"
    other.mkdir()
    (other / "retry.py").write_text(
        "def retry_with_backoff(call, attempts=5):\n"
        '    """Call again after a failure, waiting twice as long each time."""\n'
        "    return call()\n",
        encoding="utf-8",
    )
    second = run([installed.command, "up", "--port", str(port)], cwd=other, env=installed.env())
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already serves" in second.stdout and "/rag-mcp/tools " in second.stdout
    tools = f"http://127.0.0.1:{port}/rag-mcp/tools"
    wait_until_served(tools, token, timeout=120)  # once the server has read the projects file
    deadline = time.monotonic() + 120
    found: list[dict[str, object]] = []
    while not found and time.monotonic() < deadline:  # and answers once its sweep is in
        found = anyio.run(search_code, tools, token, "call again after a failure")
        time.sleep(0.5)
    assert found and found[0]["path"] == "retry.py", found
    assert up.stop() == 0
    shutil.rmtree(installed.home / ".local", ignore_errors=True)
