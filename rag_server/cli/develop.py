"""The developer's commands: `test` runs the suite, `check` runs every gate a change must pass."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parents[2]

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


def test(ctx: typer.Context) -> None:
    """Run the whole test suite (extra arguments go to pytest).

    Example: ./bld test -k config -x
    """
    note = browser_note()
    if note is not None:
        typer.echo(note, err=True)
    raise typer.Exit(subprocess.call([sys.executable, "-m", "pytest", *ctx.args], cwd=ROOT))


def check() -> None:
    """Run ruff, mypy and the tests; stop at the first that fails.

    Example: ./bld check
    """
    for step in (
        [sys.executable, "-m", "ruff", "check", "."],
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        [sys.executable, "-m", "mypy"],
        [sys.executable, "-m", "pytest"],
    ):
        code = subprocess.call(step, cwd=ROOT)
        if code:
            raise typer.Exit(code)
