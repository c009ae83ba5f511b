"""The navigation commands of `./bld`: `symbols` and `outline`, the CLI faces of the
`find_symbol` and `get_outline` tools (`--json` prints the tool's object)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from indexer.symbols import DEFAULT_SYMBOL_LIMIT, MAX_SYMBOL_LIMIT, find_symbol, get_outline
from rag_server.cli_common import ConfigOption, open_database, settings_from, user_errors
from rag_server.config import select_projects

ProjectArg = Annotated[str, typer.Argument(help="The project to look in.")]
RepoOption = Annotated[str | None, typer.Option(help="Only this root (its name).")]
LanguageOption = Annotated[str | None, typer.Option(help="Only this language, e.g. python.")]
PathOption = Annotated[
    str | None, typer.Option("--path", help="Only paths matching this glob, e.g. 'src/**/*.py'.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the tool's JSON object.")]


def _print_json(payload: dict[str, Any]) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))


def symbols(
    project: ProjectArg,
    name: Annotated[str, typer.Argument(help="The name: parse_config, Cart.add, empty?")],
    match: Annotated[
        str, typer.Option(help="exact (falls back to fuzzy when nothing matches), prefix, fuzzy.")
    ] = "exact",
    kind: Annotated[str | None, typer.Option(help="Only this kind, e.g. method.")] = None,
    repo: RepoOption = None,
    language: LanguageOption = None,
    path: PathOption = None,
    limit: Annotated[
        int, typer.Option(min=1, max=MAX_SYMBOL_LIMIT, help="How many definitions.")
    ] = DEFAULT_SYMBOL_LIMIT,
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Where a symbol is defined: `repo/path:start-end  kind  qualified name  signature`.

    Example: ./bld symbols code_rag sweep_project
    """
    with user_errors():
        settings = settings_from(config)
        [target] = select_projects(settings, project)
        with open_database(settings) as db:
            found = find_symbol(
                db,
                target,
                name,
                match=match,
                kind=kind,
                repo=repo,
                language=language,
                path_glob=path,
                limit=limit,
            )
    if as_json:
        _print_json({**found.to_dict(), "truncated": False})
        return
    if not found.symbols:
        typer.echo("no definitions")
        return
    if found.match != match:
        typer.echo(f"(no exact match: {found.match} matches)")
    for s in found.symbols:
        typer.echo(
            f"{s.repo}/{s.path}:{s.start_line}-{s.end_line}  {s.kind}  {s.qualified_name}"
            f"  {s.signature}"
        )


def outline(
    project: ProjectArg,
    repo: Annotated[str, typer.Argument(help="The root (its name).")],
    path: Annotated[str, typer.Argument(help="The file's path relative to the root.")],
    as_json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """What a file defines, as an indented tree: `start-end  kind  name  signature`.

    Example: ./bld outline code_rag code-rag indexer/sweep.py
    """
    with user_errors():
        settings = settings_from(config)
        [target] = select_projects(settings, project)
        with open_database(settings) as db:
            found = get_outline(db, target, repo, path)
    if as_json:
        _print_json({**found.to_dict(), "truncated": False})
        return
    if not found.symbols:
        typer.echo("no definitions")

    def show(entries: list[Any], depth: int) -> None:
        for e in entries:
            typer.echo(
                f"{'  ' * depth}{e.start_line}-{e.end_line}  {e.kind}  {e.name}  {e.signature}"
            )
            show(e.children, depth + 1)

    show(found.symbols, 0)
