"""The developer's commands: `test` runs the suite, `check` runs every gate a change must pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parents[2]

# `test` hands every argument it does not know to pytest.
PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def test(ctx: typer.Context) -> None:
    """Run the whole test suite (extra arguments go to pytest).

    Example: ./bld test -k config -x
    """
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
