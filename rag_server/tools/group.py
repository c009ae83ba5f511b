"""The tools over one endpoint: a project, or a group's projects answered as one.

Every tool takes `project`, which narrows a group's endpoint to one of its projects. Every hit
names its project; on a group's endpoint, so does every symbol, match, reference, root, chunk
and outline (a project's own endpoint leaves them out: the project is the endpoint's).
Over several projects:

    search_code                         one search over them all, ranked as one index would
                                        rank it (`indexer.search.parts`)
    find_symbol                         each project's definitions, taken in turn; exact names
                                        win over a fuzzy fallback, as within one project
    grep, find_references               each project's lines, in the group's order, up to
                                        max_results in all (`complete` says when cut)
    get_outline                         the project that has the root; `project` when several do
    get_chunk                           `project` needed: chunk ids are each project's own
    list_repos, index_status            every project's, each named
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from indexer.errors import InvalidArgument
from indexer.project import Project
from indexer.search import DEFAULT_MAX_RESULTS, DEFAULT_SYMBOL_LIMIT, SNIPPET_CHARS
from rag_server.mcp import MAX_RESULT_CHARS
from rag_server.tools.schemas import budget_arguments, the_rest
from rag_server.tools.search import search_over
from rag_server.tools.spec import ToolSpec, bound_result

if TYPE_CHECKING:
    from rag_server.service import Endpoint, Service

# The list each tool's result holds, whose entries name their project.
ITEMS = {
    "find_symbol": "symbols",
    "grep": "matches",
    "find_references": "references",
    "list_repos": "repos",
}
# The tools whose results take a budget (`max_chars`), besides search_code.
BUDGETED = frozenset({"find_symbol", "grep", "find_references", "get_outline", "get_chunk"})
# What `"project": "<name>", ` adds to a result's JSON beside the name itself.
PROJECT_FIELD_CHARS = 16


def answer(
    tool: ToolSpec, service: Service, endpoint: Endpoint, args: Mapping[str, Any]
) -> dict[str, Any]:
    """`tool`'s result for `args` over the endpoint's projects (or the one `project` names)."""
    projects = chosen(endpoint, args.get("project"), args.get("repo"))
    rest = {key: value for key, value in args.items() if key != "project"}
    if tool.name == "search_code":
        return search_over(service, projects, rest)
    if endpoint.single:
        return tool.handler(service, projects[0], rest)
    if len(projects) == 1 and tool.name not in ITEMS:
        # One object (a chunk, an outline, a status): room is kept for its project's name.
        [project] = projects
        if tool.name in BUDGETED:
            room = _max_chars(rest) - len(project.name) - PROJECT_FIELD_CHARS
            rest = {**rest, "max_chars": room}
        return {"project": project.name, **tool.handler(service, project, rest)}
    merge = MERGES.get(tool.name)
    if merge is None:  # a tool of one project at a time: get_chunk
        names = ", ".join(p.name for p in projects)
        raise InvalidArgument(
            f"{tool.name} reads one project: pass project (one of {names}); every hit names "
            "its project"
        )
    return merge(Call(tool, service, projects, rest, endpoint))


def _max_chars(args: Mapping[str, Any]) -> int:
    return int(args.get("max_chars") or MAX_RESULT_CHARS)


def chosen(endpoint: Endpoint, project: object, repo: object) -> list[Project]:
    """The endpoint's projects a call reads: the one `project` names, or all of them; with a
    `repo` filter over several, those that have such a root (at least one must)."""
    if project is not None:
        for p in endpoint.projects:
            if p.name == project:
                return [p]
        names = ", ".join(endpoint.names)
        raise InvalidArgument(f"project {project!r} is not served here: use one of {names}")
    projects = list(endpoint.projects)
    if isinstance(repo, str) and repo and len(projects) > 1:
        having = [p for p in projects if p.root(repo) is not None]
        if not having:
            roots = ", ".join(sorted({r.name for p in projects for r in p.roots}))
            raise InvalidArgument(
                f"repo {repo!r} is not a root of these projects: use one of {roots}"
            )
        return having
    return projects


@dataclass(frozen=True)
class Call:
    """One call of a tool over several projects of an endpoint."""

    tool: ToolSpec
    service: Service
    projects: Sequence[Project]
    args: Mapping[str, Any]
    endpoint: Endpoint


Merge = Callable[[Call], dict[str, Any]]


def _each(call: Call) -> list[dict[str, Any]]:
    """Each project's answer, its entries naming their project. A tool with a budget answers
    each project within the server's bound; the merged answer is cut to the caller's."""
    key = ITEMS[call.tool.name]
    args = call.args
    if call.tool.name in BUDGETED:
        args = {**args, "max_chars": MAX_RESULT_CHARS}
    results = []
    for project in call.projects:
        result = call.tool.handler(call.service, project, args)
        result[key] = [{"project": project.name, **item} for item in result[key]]
        results.append(result)
    return results


def _bounded(
    merged: dict[str, Any], key: str, args: Mapping[str, Any], cut: bool
) -> dict[str, Any]:
    """The merged answer within the caller's budget; `cut` when a project's own answer was
    already cut (its further entries are left out too)."""
    budget = budget_arguments(args)
    rest = the_rest(budget, "narrow to one project with project, or read the files")
    lines = "complete" in merged
    if lines and cut:
        merged["complete"] = False
    text = "text" if key == "symbols" and budget.detail == "full" else None
    bounded = bound_result(
        merged, budget.max_chars, entries=key, text=text, floor=SNIPPET_CHARS, rest=rest
    )
    if lines and bounded.get("omitted") and bounded["complete"]:
        merged["complete"] = False  # lines left out: not complete
        bounded = bound_result(merged, budget.max_chars, entries=key, rest=rest)
    if cut and not bounded["truncated"]:
        bounded["truncated"] = True
        note = "Some projects had more than fits: narrow to one with project."
        bounded["note"] = " ".join(filter(None, [note, bounded.get("note")]))
    return bounded


def merge_symbols(call: Call) -> dict[str, Any]:
    """Each project's definitions taken in turn, up to `limit`. An exact look-up that matched
    in some project leaves out the fuzzy fallbacks of the others."""
    results = _each(call)
    wanted = call.args.get("match") or "exact"
    if wanted == "exact" and any(r["match"] == "exact" and r["symbols"] for r in results):
        results = [r for r in results if r["match"] == "exact"]
        match = "exact"
    else:
        match = results[0]["match"] if results else wanted
        if any(r["match"] == "fuzzy" for r in results):
            match = "fuzzy"
    limit = int(call.args.get("limit") or DEFAULT_SYMBOL_LIMIT)
    taken = [s for turn in zip_longest(*(r["symbols"] for r in results)) for s in turn if s]
    merged = {"symbols": taken[:limit], "match": match}
    return _bounded(merged, "symbols", call.args, any(r["truncated"] for r in results))


def merge_lines(call: Call) -> dict[str, Any]:
    """Each project's lines in the group's order, up to `max_results` in all."""
    key = ITEMS[call.tool.name]
    results = _each(call)
    limit = int(call.args.get("max_results") or DEFAULT_MAX_RESULTS)
    lines = [line for r in results for line in r[key]]
    complete = all(r["complete"] for r in results) and len(lines) <= limit
    merged = {key: lines[:limit], "complete": complete}
    return _bounded(merged, key, call.args, any(r.get("truncated") for r in results))


def merge_outline(call: Call) -> dict[str, Any]:
    """The outline from the project that has the root (`chosen` kept only those)."""
    names = ", ".join(p.name for p in call.projects)
    raise InvalidArgument(
        f"several projects of this group have a root named {call.args.get('repo')!r}: pass "
        f"project (one of {names})"
    )


def merge_repos(call: Call) -> dict[str, Any]:
    """Every project's roots, each named, under the group's name."""
    results = _each(call)
    swept = [r["last_sweep_at"] for r in results]
    return {
        "project": call.endpoint.name,
        "projects": [r["project"] for r in results],
        "indexed": all(r["indexed"] for r in results),
        # The oldest: the group is as fresh as its least fresh project.
        "last_sweep_at": None if None in swept else min(swept),
        "vectors_pending": sum(r.get("vectors_pending") or 0 for r in results),
        "vectors": "off" if call.service.model_free else "on",
        "repos": [repo for r in results for repo in r["repos"]],
    }


def merge_status(call: Call) -> dict[str, Any]:
    """Every project's status, and what they say together."""
    results = [call.tool.handler(call.service, p, call.args) for p in call.projects]
    planned = [r["next_sweep_at"] for r in results if r.get("next_sweep_at")]
    return {
        "project": call.endpoint.name,
        "indexed": all(r["indexed"] for r in results),
        "sweep_running": any(r["sweep_running"] for r in results),
        "next_sweep_at": min(planned) if planned else None,
        "vectors_pending": sum(r.get("vectors_pending") or 0 for r in results),
        "vectors": "off" if call.service.model_free else "on",
        "projects": results,
    }


MERGES: dict[str, Merge] = {
    "find_symbol": merge_symbols,
    "grep": merge_lines,
    "find_references": merge_lines,
    "get_outline": merge_outline,
    "list_repos": merge_repos,
    "index_status": merge_status,
}
