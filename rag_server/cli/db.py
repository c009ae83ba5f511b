"""`code-rag db`: the database the commands and the server use, embedded or configured."""

from __future__ import annotations

import typer

from indexer.db import Schema, store
from rag_server.cli.common import ConfigOption, open_database, settings_from, user_errors

db_app = typer.Typer(help="The database: embedded or configured PostgreSQL.", no_args_is_help=True)


@db_app.command("status")
def db_status(config: ConfigOption = None) -> None:
    """Start (or reach) the database and show its versions and the project schemas in it.

    Example: code-rag db status
    """
    with user_errors():
        settings = settings_from(config)
        with open_database(settings) as db, db.connection("reading the project schemas") as conn:
            assert db.info is not None
            kind = "embedded" if db.info.embedded else "external"
            typer.echo(f"PostgreSQL {db.info.postgres_version} ({kind}, {db.info.location})")
            typer.echo(f"pgvector   {db.info.pgvector_version}")
            names = store.list_projects(conn)
            configured = set(settings.projects)
            typer.echo(f"project schemas: {len(names)}")
            for name in names:
                s = store.summary(conn, Schema(name))
                note = "" if name in configured else "  (not in the projects file)"
                typer.echo(f"  {name:<24} {s.files:>8,} files {s.chunks:>10,} chunks{note}")
            for name in sorted(configured - set(names)):
                typer.echo(f"  {name:<24} not indexed yet: run code-rag scan {name}")
