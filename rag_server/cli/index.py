"""The index's upkeep from the command line: `scan` (reconcile, then sweep now with progress),
`status` (from the database, or the running server) and `reindex` (ask the server to sweep)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from indexer.errors import RagError
from rag_server.cli.common import ConfigOption, open_database, settings_from, user_errors
from rag_server.cli.render import (
    SweepPrinter,
    VectorPrinter,
    describe_embedding_work,
    describe_report,
    describe_vectors,
    format_status,
)
from rag_server.config import Settings, make_settings_embedder, select_projects, sweep_options

if TYPE_CHECKING:
    from indexer.db import Database
    from indexer.embed import Embedder
    from indexer.project import Project
    from indexer.sweep import SweepReport

EXIT_FILES_FAILED = 3
EXIT_DROP_REFUSED = 4


def scan(
    target: Annotated[str, typer.Argument(help="A project name from rag-projects.json, or all.")],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Drop orphan schemas without asking.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="List what would be indexed and why files are skipped; change nothing.",
        ),
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Re-read and re-chunk every file (text embedded before, by this model, "
            "takes its vector from the embedding cache).",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Reconcile the database with the projects file, then sweep now with progress.

    Schemas of projects no longer in rag-projects.json are listed and dropped only after
    `Proceed? [y/N]` is answered yes (or with --yes). Several projects: every project's
    rows first, then their vectors, the project with the fewest pending first. Exit codes:
    0 done; 1 error (a project that failed is named, the others went on); 3 some files
    failed (listed; retried next sweep); 4 a drop was refused.

    Example: code-rag scan all --dry-run
    """
    from rag_server.reconcile import reconcile

    with user_errors():
        settings = settings_from(config)
        projects = select_projects(settings, target)
        if dry_run:
            _dry_run(settings, projects)
            return
        code = 0
        with open_database(settings) as db:
            with db.connection("reconciling the projects") as conn:
                if not reconcile(conn, settings, yes):
                    code = EXIT_DROP_REFUSED
            failed = _sweep(db, settings, projects, full)
        if failed and not code:
            code = EXIT_FILES_FAILED
        raise typer.Exit(code)


def _sweep(db: Database, settings: Settings, projects: list[Project], full: bool) -> bool:
    """Sweep the projects now, with progress and a report each, then embed the vectors they
    left pending; whether some file failed. Several projects: every project's rows go in
    first (each answers by keyword, name and exact text as soon as its own are in), then their
    vectors follow as one stream, the project with the fewest pending first
    (`indexer.sweep.pending_order`). A project whose sweep or vectors fail is reported and
    the others go on; what failed is raised at the end."""
    import dataclasses

    from indexer.sweep import sweep_project

    embedder = make_settings_embedder(settings)
    options = sweep_options(settings)
    if len(projects) > 1:  # no project's vectors before every project's rows
        options = dataclasses.replace(options, defer_vectors=True)
    failed = False
    errors: list[RagError] = []
    swept: list[tuple[Project, SweepReport]] = []
    try:
        for project in projects:
            try:
                report = sweep_project(
                    db, project, embedder, options, full=full, wait=True, progress=SweepPrinter()
                )
            except RagError as exc:
                if len(projects) == 1:
                    raise
                typer.echo(f"{project.name}: failed — {exc.message}")
                errors.append(RagError(f"{project.name}: {exc.message}"))
                continue
            typer.echo(describe_report(report))
            _echo_failures(report.failures)
            failed = failed or bool(report.files_failed)
            swept.append((project, report))
        if embedder is not None:  # model-free: rows only, nothing to embed
            failed = _embed_stream(db, embedder, swept, errors) or failed
    finally:
        if embedder is not None:
            embedder.close()
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise RagError(
            f"{len(errors)} of {len(projects)} projects failed: "
            + "; ".join(e.message for e in errors)
        )
    return failed


def _embed_stream(
    db: Database,
    embedder: Embedder,
    swept: list[tuple[Project, SweepReport]],
    errors: list[RagError],
) -> bool:
    """The pending vectors of the `swept` projects, one project after another in
    `pending_order`, each with its progress and summary; a project whose run fails is added
    to `errors`. Whether some file failed."""
    from indexer.sweep import embed_pending, pending_order

    reports = {project.name: (project, report) for project, report in swept}
    order = pending_order(db, list(reports)) if len(reports) > 1 else []
    if sum(w.pending or 0 for w in order):
        counts = [f"{w.project} ({'?' if w.pending is None else f'{w.pending:,}'})" for w in order]
        typer.echo(f"vectors of {len(order)} projects, fewest pending first: {', '.join(counts)}")
    names = [w.project for w in order] or list(reports)
    failed = False
    for i, name in enumerate(names):
        project, report = reports[name]
        later = sum(w.pending or 0 for w in order[i + 1 :])
        place = f"{i + 1}/{len(names)}" if len(names) > 1 else ""
        printer = VectorPrinter(place=place, later=later)
        vectors = embed_pending(db, project, embedder, progress=printer)
        printer.done()
        if vectors.written or vectors.outcome != "ok":
            typer.echo(describe_vectors(vectors))
        work = report.embedding_work(
            vectors.chunks_embedded + vectors.definitions_embedded, vectors.tokens_embedded
        )
        if work.source_tokens and work.texts:
            exact = callable(getattr(embedder, "count_tokens", None))
            typer.echo(describe_embedding_work(project.name, work, exact=exact))
        _echo_failures(vectors.failures)
        failed = failed or bool(vectors.files_failed)
        if vectors.outcome == "failed":
            errors.append(RagError(f"{project.name}: {vectors.error}"))
    return failed


def _echo_failures(failures: list[dict[str, str]]) -> None:
    for failure in failures[:20]:
        typer.echo(f"  failed: {failure['repo']}/{failure['path']}: {failure['reason']}")


def _dry_run(settings: Settings, projects: list[Project]) -> None:
    from indexer.sweep import walk_project

    options = sweep_options(settings)
    for project in projects:
        result = walk_project(project, options.walk)
        typer.echo(f"{project.name}: {len(result.files):,} files would be indexed")
        for cand in result.files:
            typer.echo(f"  + {cand.repo}/{cand.path}")
        for skipped in result.skipped:
            typer.echo(f"  - {skipped.repo}/{skipped.path}  ({skipped.reason})")
        counts = ", ".join(f"{n:,} {reason}" for reason, n in result.skipped_by_reason().items())
        typer.echo(f"{project.name}: {len(result.files):,} to index; skipped: {counts or 'none'}")


def _print_statuses(statuses: list[dict[str, Any]], settings: Settings) -> None:
    if not statuses:
        typer.echo(
            f"no projects in {settings.projects_path}: run `code-rag up` in your "
            "project's folder, or add one there"
        )
    for i, s in enumerate(statuses):
        if i:
            typer.echo("")
        typer.echo("\n".join(format_status(s)))


def status(
    project: Annotated[str | None, typer.Argument(help="One project (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    server: Annotated[
        bool,
        typer.Option(
            "--server", help="Ask the running server (admin endpoint) instead of the database."
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Show each project's roots, files, chunks, last sweep, failures and embedding model.

    Reads the database, so it works whether the server runs or not.

    Example: code-rag status code_rag --json
    """
    with user_errors():
        settings = settings_from(config)
        view: dict[str, object] = {}  # what the server says of itself: indexer, config_error
        if server:
            from rag_server.cli.admin_client import admin_call

            result = admin_call(settings, "status", {"project": project} if project else {})
            one = isinstance(result, dict) and "projects" not in result
            statuses = [result] if one else result.get("projects", [])
            if isinstance(result, dict):
                view = {k: result[k] for k in ("indexer", "config_error") if k in result}
        else:
            from indexer.status import project_status

            projects = select_projects(settings, project or "all")
            with open_database(settings) as db, db.reading("reading the status") as conn:
                model_free = settings.embedding.model_free
                statuses = [
                    project_status(conn, p, model_free=model_free).to_dict() for p in projects
                ]
        if as_json:
            typer.echo(json.dumps({"projects": statuses, **view}, indent=2))
            return
        problem = view.get("config_error")
        if isinstance(problem, dict):
            typer.secho(
                f"warning: the projects file is not applied (since {problem.get('seen_at')}): "
                f"{problem.get('message')}",
                err=True,
                fg=typer.colors.YELLOW,
            )
        if view.get("indexer") is False:
            typer.echo("this server is a read replica: it answers, another server indexes")
        _print_statuses(statuses, settings)


def reindex(
    target: Annotated[str, typer.Argument(help="A project name, or all.")],
    full: Annotated[bool, typer.Option("--full", help="Re-embed every file.")] = False,
    config: ConfigOption = None,
) -> None:
    """Ask the running server to sweep now (in the background); prints the run ids.

    The same call as `curl ... -d '{"method": "reindex", ...}'` in docs/mcp.md.

    Example: code-rag reindex all
    """
    from rag_server.cli.admin_client import admin_call

    with user_errors():
        settings = settings_from(config)
        result = admin_call(settings, "reindex", {"project": target, "full": full})
        typer.echo(json.dumps(result, indent=2))
