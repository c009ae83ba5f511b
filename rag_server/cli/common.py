"""What the `./bld` commands share: the `--config` option and the filter options, opening the
database, and the one translation of our errors into a line on stderr and exit code 1."""

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
