"""The `./bld` command line: a thin Typer shell over the functions the server uses.

Each command parses its options, calls into the packages, prints one clear line on a known
error (`RagError`) and exits non-zero. Tracebacks are for bugs, never for user mistakes.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from indexer.db import Schema, store
from indexer.project import Project
from indexer.search import search_code
from indexer.status import project_status
from indexer.sweep import sweep_project, walk_project
from rag_server import nav_cli, serve_cli
from rag_server.admin_client import admin_call
from rag_server.cli_common import ConfigOption, open_database, settings_from, user_errors
from rag_server.config import (
    Settings,
    default_config_path,
    make_settings_embedder,
    select_projects,
    sweep_options,
    write_initial_config,
)
from rag_server.reconcile import reconcile
from rag_server.render import SweepPrinter, describe_report, format_status

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
model_app = typer.Typer(
    help="Local embedding models: export a sentence-transformers model to ONNX.",
    no_args_is_help=True,
)
app.add_typer(model_app, name="model")


@db_app.command("status")
def db_status(config: ConfigOption = None) -> None:
    """Start (or reach) the database and show its versions and the project schemas in it.

    Example: ./bld db status
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
                typer.echo(f"  {name:<24} not indexed yet: run ./bld scan {name}")


@model_app.command("export")
def model_export(
    source: Annotated[
        str,
        typer.Argument(
            help="A sentence-transformers model directory, or all-MiniLM-L6-v2 for the "
            "bundled weights."
        ),
    ],
    destination: Annotated[Path, typer.Argument(help="The folder to write (new or empty).")],
    int8: Annotated[
        bool, typer.Option("--int8", help="Quantise to int8: about 2x faster, 1/4 the size.")
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            help="The model name indexes record (default: the source folder's name, "
            "plus -int8 with --int8)."
        ),
    ] = None,
    fuse: Annotated[
        bool, typer.Option("--fuse/--no-fuse", help="Fuse attention (BERT-like models).")
    ] = True,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty folder.")] = False,
) -> None:
    """Export a sentence-transformers model to the ONNX layout the local embedder runs
    (model.onnx, tokenizer.json, manifest.json), then check it against the source model.

    Needs torch (the `export` extra; ./bld installs it for this command). Use the result
    with `model = DESTINATION` under [embedding] in application.ini.

    Example: ./bld model export all-MiniLM-L6-v2 /tmp/minilm-int8 --int8
    """
    with user_errors():
        from indexer.embed import export_model  # torch: only here, only now

        result = export_model(source, destination, int8=int8, name=name, fuse=fuse, force=force)
        m = result.manifest
        typer.echo(
            f"wrote {result.destination}: {m.name}, {m.dimension}-d, window {m.max_tokens} "
            f"tokens, {m.pooling} pooling, model.onnx {result.model_bytes / 1e6:.1f} MB, "
            f"{result.fused_attention} attention blocks fused"
        )
        typer.echo(
            f"check: cosine to the source model on sample texts: mean {result.cosine_mean:.4f}, "
            f"min {result.cosine_min:.4f}"
        )
        typer.echo(f"use it: set model = {result.destination} under [embedding] in application.ini")


# --- operator commands ---------------------------------------------------------------------

EXIT_FILES_FAILED = 3
EXIT_DROP_REFUSED = 4


@app.command()
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
        bool, typer.Option("--full", help="Re-read, re-chunk and re-embed every file.")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Reconcile the database with the projects file, then sweep now with progress.

    Schemas of projects no longer in rag-projects.json are listed and dropped only after
    `Proceed? [y/N]` is answered yes (or with --yes). Exit codes: 0 done; 1 error;
    3 some files failed (listed; retried next sweep); 4 a drop was refused.

    Example: ./bld scan all --dry-run
    """
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
            embedder = make_settings_embedder(settings)
            try:
                for project in projects:
                    report = sweep_project(
                        db,
                        project,
                        embedder,
                        sweep_options(settings),
                        full=full,
                        wait=True,
                        progress=SweepPrinter(),
                    )
                    typer.echo(describe_report(report))
                    for failure in report.failures[:20]:
                        typer.echo(
                            f"  failed: {failure['repo']}/{failure['path']}: {failure['reason']}"
                        )
                    if report.files_failed and not code:
                        code = EXIT_FILES_FAILED
            finally:
                embedder.close()
        raise typer.Exit(code)


def _dry_run(settings: Settings, projects: list[Project]) -> None:
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
        typer.echo(f"no projects in {settings.projects_path}: run ./bld init, or add one")
    for i, s in enumerate(statuses):
        if i:
            typer.echo("")
        typer.echo("\n".join(format_status(s)))


@app.command()
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

    Example: ./bld status code_rag --json
    """
    with user_errors():
        settings = settings_from(config)
        if server:
            result = admin_call(settings, "status", {"project": project} if project else {})
            one = isinstance(result, dict) and "projects" not in result
            statuses = [result] if one else result.get("projects", [])
        else:
            projects = select_projects(settings, project or "all")
            with open_database(settings) as db, db.reading("reading the status") as conn:
                statuses = [project_status(conn, p).to_dict() for p in projects]
        if as_json:
            typer.echo(json.dumps({"projects": statuses}, indent=2))
        else:
            _print_statuses(statuses, settings)


@app.command()
def reindex(
    target: Annotated[str, typer.Argument(help="A project name, or all.")],
    full: Annotated[bool, typer.Option("--full", help="Re-embed every file.")] = False,
    config: ConfigOption = None,
) -> None:
    """Ask the running server to sweep now (in the background); prints the run ids.

    The same call as `curl ... -d '{"method": "reindex", ...}'` in docs/mcp.md.

    Example: ./bld reindex all
    """
    with user_errors():
        settings = settings_from(config)
        result = admin_call(settings, "reindex", {"project": target, "full": full})
        typer.echo(json.dumps(result, indent=2))


@app.command()
def search(
    project: Annotated[str, typer.Argument(help="The project to search.")],
    query: Annotated[str, typer.Argument(help="What the code does, or a name in it.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50, help="How many hits.")] = 10,
    repo: Annotated[str | None, typer.Option(help="Only this root (its name).")] = None,
    language: Annotated[str | None, typer.Option(help="Only this language, e.g. python.")] = None,
    path: Annotated[
        str | None,
        typer.Option("--path", help="Only paths matching this glob, e.g. 'src/**/*.py'."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the hits as JSON (as search_code returns them).")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Search a project and print ranked hits as `path:start-end  symbol  score`.

    Example: ./bld search code_rag "where are files hashed" --top-k 5
    """
    with user_errors():
        settings = settings_from(config)
        [target] = select_projects(settings, project)
        embedder = make_settings_embedder(settings)
        try:
            with open_database(settings) as db:
                hits = search_code(
                    db,
                    target,
                    embedder,
                    query,
                    top_k=top_k,
                    repo=repo,
                    language=language,
                    path_glob=path,
                    ef_search=settings.search.ef_search,
                )
        finally:
            embedder.close()
        if as_json:
            typer.echo(json.dumps({"hits": [h.to_dict() for h in hits]}, indent=2))
            return
        if not hits:
            typer.echo("no hits")
        width = max(
            (len(f"{h.repo}/{h.path}:{h.start_line}-{h.end_line}") for h in hits), default=0
        )
        for h in hits:
            where = f"{h.repo}/{h.path}:{h.start_line}-{h.end_line}"
            stale = "  (stale: its root is unavailable)" if h.stale else ""
            typer.echo(f"{where:<{width}}  {h.symbol or '-'}  {h.score:.4f}{stale}")


app.command()(nav_cli.symbols)
app.command()(nav_cli.outline)
app.command()(nav_cli.grep)
app.command()(nav_cli.refs)


@app.command()
def init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    config: ConfigOption = None,
) -> None:
    """Write application.ini (with a fresh token) and rag-projects.json (this checkout as a demo
    project) from the examples; existing files are kept unless --force.

    Example: ./bld init && ./bld scan all
    """
    with user_errors():
        target = (config or default_config_path()).expanduser().resolve()
        for written in write_initial_config(target, force=force):
            typer.echo(f"wrote {written}")
        typer.echo("next: edit rag-projects.json to point at your code, then ./bld scan all")


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


# --- the server: serve and up (rag_server/serve_cli.py) ------------------------------------------

app.command()(serve_cli.serve)
app.command()(serve_cli.up)


def main() -> None:
    # The pool narrates connections it discards (a server that went away); the command's own
    # `error:` line says what happened and what to do.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    app(prog_name="bld")


if __name__ == "__main__":
    main()
