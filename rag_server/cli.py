"""The `./bld` command line: a thin Typer shell over the functions the server uses.

Each command parses its options, calls into the packages, prints one clear line on a known
error (`RagError`) and exits non-zero. Tracebacks are for bugs, never for user mistakes.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from indexer import store
from indexer.db import Database
from indexer.errors import RagError
from rag_server.config import CONFIG_ENV, Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent

app = typer.Typer(
    name="bld",
    help="code-rag: local code search for coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
db_app = typer.Typer(help="The database: embedded or configured PostgreSQL.", no_args_is_help=True)
app.add_typer(db_app, name="db")

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        envvar=CONFIG_ENV,
        help="application.ini to use (default: ./application.ini; all defaults if missing).",
        show_default=False,
    ),
]


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn our errors into one line on stderr and exit code 1."""
    try:
        yield
    except RagError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(1) from None


def settings_from(config: Path | None) -> Settings:
    return load_settings(config)


def open_database(settings: Settings) -> Database:
    return Database(settings.database.dsn, settings.data_dir).open()


@db_app.command("status")
def db_status(config: ConfigOption = None) -> None:
    """Start (or reach) the database and show its versions and the project schemas in it.

    Example: ./bld db status
    """
    with user_errors():
        settings = settings_from(config)
        with open_database(settings) as db, db.connection() as conn:
            assert db.info is not None
            kind = "embedded" if db.info.embedded else "external"
            typer.echo(f"PostgreSQL {db.info.postgres_version} ({kind}, {db.info.location})")
            typer.echo(f"pgvector   {db.info.pgvector_version}")
            names = store.list_projects(conn)
            configured = set(settings.projects)
            typer.echo(f"project schemas: {len(names)}")
            for name in names:
                s = store.summary(conn, name)
                note = "" if name in configured else "  (not in the projects file)"
                typer.echo(f"  {name:<24} {s.files:>8,} files {s.chunks:>10,} chunks{note}")
            for name in sorted(configured - set(names)):
                typer.echo(f"  {name:<24} not indexed yet: run ./bld scan {name}")


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


def main() -> None:
    app(prog_name="bld")


if __name__ == "__main__":
    main()
