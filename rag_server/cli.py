"""The `./bld` command line: a thin Typer shell over the functions the server uses.

Each command parses its options, calls into the packages, prints one clear line on a known
error (`RagError`) and exits non-zero. Tracebacks are for bugs, never for user mistakes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

ROOT = Path(__file__).resolve().parent.parent

app = typer.Typer(
    name="bld",
    help="code-rag: local code search for coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def test(ctx: typer.Context) -> None:
    """Run the whole test suite (extra arguments go to pytest).

    Example: ./bld test -k config -x
    """
    raise typer.Exit(subprocess.call([sys.executable, "-m", "pytest", *ctx.args], cwd=ROOT))


@app.command()
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


if __name__ == "__main__":
    app()
