"""The navigation tools' schemas and handlers: find a definition by name, outline a file.

They answer from the symbol table (no embedding involved), so they are exact and fast; results
stay within the same size bound as every tool's (entries are dropped from the end, and
`truncated` says so).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from indexer.project import Project
from indexer.symbols import (
    DEFAULT_SYMBOL_LIMIT,
    MATCH_MODES,
    MAX_SYMBOL_LIMIT,
    find_symbol,
    get_outline,
)
from rag_server.service import Service

MAX_RESULT_CHARS = 32_000  # as tools.MAX_RESULT_CHARS: the whole JSON of one result

_NULLABLE_STRING = {"type": ["string", "null"]}
_REPO = {"type": "string", "description": "Only this root (see list_repos)."}
_LANGUAGE = {
    "type": "string",
    "description": "Only this language, e.g. python, typescript, go, rust, java.",
}
_PATH_GLOB = {
    "type": "string",
    "description": "Only paths (relative to their root) matching this glob, "
    "e.g. 'src/billing/**' or '**/*_test.go'.",
}

SYMBOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the name as written: cancel!, fmt"},
        "qualified_name": {
            "type": "string",
            "description": "with its owners: Billing::Subscription#cancel!, Point::fmt",
        },
        "kind": {"type": "string", "description": "function, method, class, struct, ..."},
        "language": _NULLABLE_STRING,
        "repo": {"type": "string"},
        "path": {"type": "string", "description": "path relative to the root"},
        "start_line": {"type": "integer", "description": "first line, doc comments included"},
        "end_line": {"type": "integer"},
        "signature": {"type": "string", "description": "the line naming it, trimmed"},
        "chunk_id": {
            "type": ["integer", "null"],
            "description": "the chunk holding the signature (for get_chunk)",
        },
    },
    "required": [
        "name",
        "qualified_name",
        "kind",
        "language",
        "repo",
        "path",
        "start_line",
        "end_line",
        "signature",
        "chunk_id",
    ],
}

FIND_SYMBOL_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "A symbol name: parse_config, Invoice, Cart.add, Billing::Plan, "
            "empty?. With owners, the qualified name or its tail must match.",
        },
        "match": {
            "type": "string",
            "enum": list(MATCH_MODES),
            "default": "exact",
            "description": "exact (case-sensitive; falls back to fuzzy when nothing matches), "
            "prefix (case-insensitive), fuzzy (similar names, typos).",
        },
        "kind": {"type": "string", "description": "Only this kind: function, method, class..."},
        "repo": _REPO,
        "language": _LANGUAGE,
        "path_glob": _PATH_GLOB,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SYMBOL_LIMIT,
            "default": DEFAULT_SYMBOL_LIMIT,
            "description": "How many definitions to return.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

FIND_SYMBOL_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "symbols": {"type": "array", "items": SYMBOL_SCHEMA},
        "match": {
            "type": "string",
            "enum": list(MATCH_MODES),
            "description": "how they matched: fuzzy when an exact look-up found nothing",
        },
        "truncated": {"type": "boolean"},
    },
    "required": ["symbols", "match", "truncated"],
}

GET_OUTLINE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repo": {"type": "string", "minLength": 1, "description": "The root (see list_repos)."},
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "The file's path relative to its root, as other tools print it.",
        },
    },
    "required": ["repo", "path"],
    "additionalProperties": False,
}

_OUTLINE_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "qualified_name": {"type": "string"},
        "kind": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "signature": {"type": "string"},
        "children": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["name", "kind", "start_line", "end_line", "signature", "children"],
}

GET_OUTLINE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repo": {"type": "string"},
        "path": {"type": "string"},
        "language": _NULLABLE_STRING,
        "symbols": {"type": "array", "items": _OUTLINE_ENTRY},
        "truncated": {"type": "boolean"},
    },
    "required": ["repo", "path", "language", "symbols", "truncated"],
}


def _fits(payload: Mapping[str, Any]) -> bool:
    return len(json.dumps(payload, ensure_ascii=False)) <= MAX_RESULT_CHARS


def bound_list(result: dict[str, Any], key: str) -> dict[str, Any]:
    """`result` within MAX_RESULT_CHARS: entries of `result[key]` dropped from the end."""
    result["truncated"] = False
    items = result[key]
    if _fits(result):
        return result
    low, high = 0, len(items)
    while low < high:  # the longest prefix that fits
        mid = (low + high + 1) // 2
        if _fits({**result, key: items[:mid]}):
            low = mid
        else:
            high = mid - 1
    result[key] = items[:low]
    result["truncated"] = True
    return result


def find_symbol_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    found = find_symbol(
        service.db,
        project,
        str(args["name"]),
        match=args.get("match") or "exact",
        kind=args.get("kind") or None,
        repo=args.get("repo") or None,
        language=args.get("language") or None,
        path_glob=args.get("path_glob") or None,
        limit=int(args.get("limit") or DEFAULT_SYMBOL_LIMIT),
    )
    return bound_list(found.to_dict(), "symbols")


def get_outline_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    outline = get_outline(service.db, project, str(args["repo"]), str(args["path"]))
    return bound_list(outline.to_dict(), "symbols")
