"""The JSON-schema fragments more than one tool uses, each written once.

Clients read these in `tools/list`, so a description here is what an agent sees for that
argument or field in every tool that has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

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
