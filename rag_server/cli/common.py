"""What the `code-rag` commands share: the `--config` option, the filter and budget options,
opening the database, and the one translation of our errors into a line on stderr and exit
code 1."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from indexer.db import Database
from indexer.errors import RagError
from indexer.project import Project
from rag_server.config import CONFIG_ENV, Settings, load_settings, select_projects
from rag_server.mcp import MAX_RESULT_CHARS
from rag_server.tools import MIN_RESULT_CHARS, Budget, Detail

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        envvar=CONFIG_ENV,
        help="application.ini to use (default: ./application.ini; all defaults if missing).",
        show_default=False,
    ),
]

# The filters of the commands that read the index, as the tools' repo, language and path_glob.
RepoOption = Annotated[str | None, typer.Option(help="Only this root (its name).")]
LanguageOption = Annotated[str | None, typer.Option(help="Only this language, e.g. python.")]
PathOption = Annotated[
    str | None, typer.Option("--path", help="Only paths matching this glob, e.g. 'src/**/*.py'.")
]

# The budget of a command that prints a tool's object: the tool's detail and max_chars.
DetailOption = Annotated[
    Detail | None,
    typer.Option(
        help="How much code the JSON object carries: pointers (none), snippets (the default) "
        "or full (whole texts). Implies --json.",
        show_default=False,
    ),
]
MaxCharsOption = Annotated[
    int | None,
    typer.Option(
        "--max-chars",
        min=MIN_RESULT_CHARS,
        max=MAX_RESULT_CHARS,
        help="Cut the JSON object to at most this many characters as the tool sends it "
        f"(compact; default {MAX_RESULT_CHARS}), saying what was left out. Implies --json.",
        show_default=False,
    ),
]


def json_budget(as_json: bool, detail: str | None, max_chars: int | None) -> Budget | None:
    """The budget of the tool's object to print, or None to print lines for a person."""
    if not (as_json or detail or max_chars):
        return None
    return Budget(detail or "snippets", max_chars or MAX_RESULT_CHARS)


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


@contextlib.contextmanager
def project_database(config: Path | None, project: str) -> Iterator[tuple[Project, Database]]:
    """The configured `project` and its open database, for commands that read one project."""
    settings = settings_from(config)
    [target] = select_projects(settings, project)
    with open_database(settings) as db:
        yield target, db
