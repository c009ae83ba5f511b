"""The JSON-schema fragments more than one tool uses, each written once.

Clients read these in `tools/list`, so a description here is what an agent sees for that
argument or field in every tool that has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, TypedDict, get_args

from rag_server.mcp import MAX_RESULT_CHARS

NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
CHUNK_ID: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "description": "a chunk_id from search_code",
}
NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
PROJECT_NAME: dict[str, Any] = {
    "type": "string",
    "description": "the project it is in (an endpoint of a group serves several)",
}
# Every tool's argument that narrows an endpoint of a group to one of its projects.
PROJECT: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "Only this project (of a group's endpoint: list_repos names them; every "
    "hit and match says its project). On a project's own endpoint, its own name or nothing.",
}

# The filters every tool that searches the index takes.
REPO: dict[str, Any] = {"type": "string", "description": "Only this root (see list_repos)."}
LANGUAGE: dict[str, Any] = {
    "type": "string",
    "description": "Only this language, e.g. python, typescript, go, rust, java.",
}
PATH_GLOB: dict[str, Any] = {
    "type": "string",
    "description": "Only paths (relative to their root) matching this glob, "
    "e.g. 'src/billing/**' or '**/*_test.go'.",
}
FILTERS: dict[str, Any] = {"repo": REPO, "language": LANGUAGE, "path_glob": PATH_GLOB}


class Filters(TypedDict):
    repo: str | None
    language: str | None
    path_glob: str | None


def filter_arguments(args: Mapping[str, Any]) -> Filters:
    """The FILTERS a call gave, as the index's look-ups take them (empty means no filter)."""
    return Filters(
        repo=args.get("repo") or None,
        language=args.get("language") or None,
        path_glob=args.get("path_glob") or None,
    )


def how_many(maximum: int, default: int, description: str) -> dict[str, Any]:
    """A count argument: from 1 to `maximum`."""
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


def input_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool's input schema: these arguments and no others."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


# --- result budgets: how much code a result carries, and how large it may be ------------------

Detail = Literal["pointers", "snippets", "full"]
DETAILS: tuple[str, ...] = get_args(Detail)
# The smallest budget a caller may set: what locates a result and says how it was cut (ids,
# paths, lines, the flags and a note) takes a few hundred characters on its own.
MIN_RESULT_CHARS = 500


def detail(default: str, snippets: str, full: str) -> dict[str, Any]:
    """The `detail` argument of a tool that returns code: what `snippets` and `full` show
    there (`pointers` is the same everywhere)."""
    return {
        "type": "string",
        "enum": list(DETAILS),
        "default": default,
        "description": "How much code to return. pointers: where things are and nothing "
        "else (repo, path, lines, symbol, chunk_id; no code text), so the most entries fit "
        f"in a result. snippets: {snippets} full: {full} Default: {default}.",
    }


MAX_CHARS: dict[str, Any] = {
    "type": "integer",
    "minimum": MIN_RESULT_CHARS,
    "maximum": MAX_RESULT_CHARS,
    "default": MAX_RESULT_CHARS,
    "description": "The most characters the result may take (its JSON). When more was found, "
    "long texts are shortened first, then the last entries left out; the result then says "
    "truncated: true, how many entries were left out (omitted) and how to get the rest (note).",
}

# The fields that say how a list result was cut to its budget.
CUT_FIELDS: dict[str, Any] = {
    "truncated": {
        "type": "boolean",
        "description": "true when the result was cut to fit max_chars (or the server's bound)",
    },
    "omitted": {
        "type": "integer",
        "minimum": 0,
        "description": "with truncated: how many entries were left out at the end",
    },
    "shortened": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "with truncated: the positions (from 0) of the entries whose text was "
        "shortened (it ends with …)",
    },
    "note": {"type": "string", "description": "what was cut and how to get the rest"},
}


class Budget(NamedTuple):
    detail: str
    max_chars: int


def the_rest(budget: Budget, read: str, narrow: str | None = "repo, language or path_glob") -> str:
    """The note's way to the rest of a cut result: `read` (where the whole text is), the
    filters to `narrow` with, and the budget arguments that would fit more."""
    ways = [read]
    if narrow:
        ways.append(f"narrow with {narrow}")
    if budget.max_chars < MAX_RESULT_CHARS:
        ways.append(f"raise max_chars (up to {MAX_RESULT_CHARS})")
    if budget.detail != "pointers":
        ways.append("use detail=pointers to fit more entries")
    return "For the rest: " + "; ".join(ways) + "."


def budget_arguments(args: Mapping[str, Any], default_detail: str = "snippets") -> Budget:
    """The detail and max_chars a call gave (checked against the schema), or their defaults."""
    return Budget(
        detail=args.get("detail") or default_detail,
        max_chars=int(args.get("max_chars") or MAX_RESULT_CHARS),
    )
