"""Reconciling the database with `rag-projects.json`: project schemas no configured project owns
are listed with what they hold and dropped only on an explicit yes.

With no terminal (cron, CI, a pipe) nothing is dropped unless `--yes` was given, so a typo in
the projects file can never drop anything unattended. Schemas without our marker are never
listed (`store.list_projects`), so they can never be offered.
"""

from __future__ import annotations

import sys

import typer

from indexer.db import Conn, ProjectSummary, Schema, store
from rag_server.config import Settings


def drop_plan(conn: Conn, settings: Settings) -> list[ProjectSummary]:
    return [
        store.summary(conn, Schema(name))
        for name in store.list_projects(conn)
        if name not in settings.projects
    ]


def reconcile(conn: Conn, settings: Settings, yes: bool) -> bool:
    """Drop the schemas of projects gone from the config, after confirmation; False if refused."""
    plan = drop_plan(conn, settings)
    conn.rollback()
    if not plan:
        return True
    typer.echo(
        f"{len(plan)} project schema(s) in the database are not in {settings.projects_path}:"
    )
    for s in plan:
        swept = s.last_sweep_at.strftime("%Y-%m-%d %H:%M UTC") if s.last_sweep_at else "never"
        typer.echo(
            f"  drop schema `{s.name}`: {s.files:,} files, {s.chunks:,} chunks, last swept {swept}"
        )
    if not yes:
        if not sys.stdin.isatty():
            typer.echo(
                "error: not dropping anything: there is no terminal to confirm on; "
                "re-run with --yes to drop the schemas listed above",
                err=True,
            )
            return False
        answer = input("Proceed? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            typer.echo("Nothing dropped.")
            return False
    for s in plan:
        store.drop_project(conn, Schema(s.name))
        conn.commit()
        typer.echo(f"dropped schema `{s.name}`")
    return True
