"""`code-rag search`: the CLI face of the `search_code` tool, hits ranked as the tool ranks them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from rag_server.cli.common import (
    ConfigOption,
    DetailOption,
    LanguageOption,
    MaxCharsOption,
    PathOption,
    RepoOption,
    json_budget,
    open_database,
    settings_from,
    user_errors,
)
from rag_server.config import endpoint_projects, make_settings_embedder

if TYPE_CHECKING:
    from indexer.search import SearchHit


def search(
    project: Annotated[str, typer.Argument(help="The project (or group) to search.")],
    query: Annotated[str, typer.Argument(help="What the code does, or a name in it.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=50, help="How many hits.")] = 10,
    repo: RepoOption = None,
    language: LanguageOption = None,
    path: PathOption = None,
    by_file: Annotated[
        bool,
        typer.Option(
            "--by-file/--by-chunk",
            help="One hit per file, its further matches as 'also' lines (the default), or "
            "one hit per chunk.",
        ),
    ] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the hits as JSON (as search_code returns them).")
    ] = False,
    detail: DetailOption = None,
    max_chars: MaxCharsOption = None,
    config: ConfigOption = None,
) -> None:
    """Search a project, or a group of projects as one, and print ranked hits as
    `repo/path:start-end  symbol  score` (over a group, `project:repo/path...`).

    Example: code-rag search code_rag "where are files hashed" --top-k 5 --detail full
    """
    from indexer.search import search_code

    budget = json_budget(as_json, detail, max_chars)
    with user_errors():
        settings = settings_from(config)
        targets = endpoint_projects(settings, project)
        embedder = make_settings_embedder(settings)
        try:
            with open_database(settings) as db:
                hits = search_code(
                    db,
                    targets,
                    embedder,
                    query,
                    top_k=top_k,
                    repo=repo,
                    language=language,
                    path_glob=path,
                    ef_search=settings.search.ef_search,
                    by_file=by_file,
                )
                if budget is not None:
                    from rag_server.tools import search_result

                    payload = search_result(db, targets, query, hits, budget)
        finally:
            if embedder is not None:
                embedder.close()
    if budget is not None:
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _print_hits(hits, named=len(targets) > 1)


def _print_hits(hits: list[SearchHit], *, named: bool = False) -> None:
    """Each hit's place, symbol and score; `named`: each place starts with its project."""
    if not hits:
        typer.echo("no hits")
    places = [
        (f"{h.project}:" if named else "") + f"{h.repo}/{h.path}:{h.start_line}-{h.end_line}"
        for h in hits
    ]
    width = max((len(place) for place in places), default=0)
    for h, where in zip(hits, places, strict=True):
        stale = "  (stale: its root is unavailable)" if h.stale else ""
        typer.echo(f"{where:<{width}}  {h.symbol or '-'}  {h.score:.4f}{stale}")
        for also in h.also:
            typer.echo(f"  also {also.start_line}-{also.end_line}  {also.symbol or '-'}")
