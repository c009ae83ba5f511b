"""The navigation commands of `code-rag`: `symbols`, `outline`, `grep` and `refs`, the CLI faces
of the `find_symbol`, `get_outline`, `grep` and `find_references` tools (`--json` prints the
tool's object, at the `--detail` and within the `--max-chars` given)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from indexer.search import DEFAULT_MAX_RESULTS, DEFAULT_SYMBOL_LIMIT, MAX_RESULTS, MAX_SYMBOL_LIMIT
from rag_server.cli.common import (
    ConfigOption,
    DetailOption,
    LanguageOption,
    MaxCharsOption,
    PathOption,
    RepoOption,
    json_budget,
    project_database,
    user_errors,
)

if TYPE_CHECKING:
    from indexer.search import LineMatches
    from rag_server.tools import Budget

ProjectArg = Annotated[str, typer.Argument(help="The project to look in.")]
MaxOption = Annotated[
    int, typer.Option("--max", min=1, max=MAX_RESULTS, help="At most this many lines.")
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
    detail: DetailOption = None,
    max_chars: MaxCharsOption = None,
    config: ConfigOption = None,
) -> None:
    """Where a symbol is defined: `repo/path:start-end  kind  qualified name  signature`.

    Example: code-rag symbols code_rag sweep_project --detail full
    """
    from indexer.search import find_symbol

    budget = json_budget(as_json, detail, max_chars)
    with user_errors(), project_database(config, project) as (target, db):
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
        if budget is not None:
            from rag_server.tools import symbols_result

            _print_json(symbols_result(db, target, found, budget))
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
    detail: DetailOption = None,
    max_chars: MaxCharsOption = None,
    config: ConfigOption = None,
) -> None:
    """What a file defines, as an indented tree: `start-end  kind  name  signature`.

    Example: code-rag outline code_rag code-rag indexer/sweep/run.py
    """
    from indexer.search import get_outline

    with user_errors(), project_database(config, project) as (target, db):
        found = get_outline(db, target, repo, path)
    budget = json_budget(as_json, detail, max_chars)
    if budget is not None:
        from rag_server.tools import outline_result

        _print_json(outline_result(found, budget))
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


def _print_lines(found: LineMatches, key: str, budget: Budget | None) -> None:
    if budget is not None:
        from rag_server.tools import lines_result

        _print_json(lines_result(found, key, budget))
        return
    for m in found.matches:
        typer.echo(f"{m.repo}/{m.path}:{m.line}: {m.text}")
    if not found.matches:
        typer.echo("no matches")
    elif not found.complete:
        typer.echo(f"(stopped at {len(found.matches)}: there are more; raise --max or narrow)")


def grep(
    project: ProjectArg,
    pattern: Annotated[str, typer.Argument(help="The text to find (a literal unless --regex).")],
    regex: Annotated[bool, typer.Option("--regex", help="A PostgreSQL regex.")] = False,
    ignore_case: Annotated[bool, typer.Option("--ignore-case", "-i")] = False,
    repo: RepoOption = None,
    language: LanguageOption = None,
    path: PathOption = None,
    max_results: MaxOption = DEFAULT_MAX_RESULTS,
    as_json: JsonOption = False,
    detail: DetailOption = None,
    max_chars: MaxCharsOption = None,
    config: ConfigOption = None,
) -> None:
    """Every indexed line containing the text, as `repo/path:line: text`.

    Example: code-rag grep code_rag "compare_digest" --detail full
    """
    from indexer.search import grep as grep_text

    with user_errors(), project_database(config, project) as (target, db):
        found = grep_text(
            db,
            target,
            pattern,
            regex=regex,
            case_sensitive=not ignore_case,
            repo=repo,
            language=language,
            path_glob=path,
            max_results=max_results,
            whole_lines=detail == "full",
        )
    _print_lines(found, "matches", json_budget(as_json, detail, max_chars))


def refs(
    project: ProjectArg,
    name: Annotated[str, typer.Argument(help="The identifier, e.g. sweep_project.")],
    repo: RepoOption = None,
    language: LanguageOption = None,
    path: PathOption = None,
    max_results: MaxOption = DEFAULT_MAX_RESULTS,
    as_json: JsonOption = False,
    detail: DetailOption = None,
    max_chars: MaxCharsOption = None,
    config: ConfigOption = None,
) -> None:
    """Every line using the identifier (its definitions left out), as `repo/path:line: text`.

    Example: code-rag refs code_rag sweep_project
    """
    from indexer.search import find_references

    with user_errors(), project_database(config, project) as (target, db):
        found = find_references(
            db,
            target,
            name,
            repo=repo,
            language=language,
            path_glob=path,
            max_results=max_results,
            whole_lines=detail == "full",
        )
    _print_lines(found, "references", json_budget(as_json, detail, max_chars))
