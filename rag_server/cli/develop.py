"""The developer's commands: `test` runs the suite, `check` runs every gate a change must pass."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import typer

from indexer.errors import RagError
from rag_server.cli.common import user_errors
from rag_server.config import source_checkout

# `test` hands every argument it does not know to pytest.
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}
# The browser the web pages' tests drive (tests/test_web_browser.py).
CHROMIUM = "/usr/bin/chromium"


def browser_note() -> str | None:
    """One line when the browser tests cannot run here: what to install, and what happens."""
    if Path(CHROMIUM).exists() or shutil.which("chromium"):
        return None
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return "bld: Chromium is missing, so the browser tests fail: apt-get install -y chromium"
    return "bld: the browser tests are skipped: install Chromium with apt-get install -y chromium"


def _checkout() -> Path:
    """The checkout whose tests run; an installed code-rag has none, and says where they are."""
    with user_errors():
        root = source_checkout()
        if root is None:
            raise RagError(
                "the tests and checks run from a checkout of code-rag's source: clone it and "
                "run ./bld test there"
            )
        return root


def test(ctx: typer.Context) -> None:
    """Run the whole test suite (extra arguments go to pytest).

    Example: ./bld test -k config -x
    """
    root = _checkout()
    note = browser_note()
    if note is not None:
        typer.echo(note, err=True)
    raise typer.Exit(subprocess.call([sys.executable, "-m", "pytest", *ctx.args], cwd=root))


def check() -> None:
    """Run ruff, mypy and the tests; stop at the first that fails.

    Example: ./bld check
    """
    root = _checkout()
    for step in (
        [sys.executable, "-m", "ruff", "check", "."],
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        [sys.executable, "-m", "mypy"],
        [sys.executable, "-m", "pytest"],
    ):
        code = subprocess.call(step, cwd=root)
        if code:
            raise typer.Exit(code)
