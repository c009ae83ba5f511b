"""The MCP tools of one project: schemas, descriptions written for an agent, and handlers.

Handlers are blocking (database, query embedding) and run in worker threads. Every result is
the same object twice: `structuredContent` matching the tool's `outputSchema`, and its JSON as
text content for clients that read only text. Results are size-bounded (Claude Code truncates
tool output above ~25k tokens; we stay near a tenth of that). A tool that cannot do its work
(unusable argument values, the database or embedder failing) answers with `isError: true` and
a message the agent can act on; only an unknown tool or malformed params are protocol errors.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from indexer import truncate
from indexer.errors import InvalidArgument, RagError
from indexer.project import Project
from indexer.search import (
    DEFAULT_TOP_K,
    MAX_CONTEXT_LINES,
    MAX_TOP_K,
    SNIPPET_CHARS,
    get_chunk,
    search_code,
)
from rag_server.mcp import (
    STRUCTURED_OUTPUT_SINCE,
    fits_in_result,
    version_at_least,
)
from rag_server.nav_tools import NAV_TOOLS
from rag_server.service import Service

Handler = Callable[[Service, Project, Mapping[str, Any]], dict[str, Any]]

# --- schemas ------------------------------------------------------------------------------------

_NULLABLE_STRING = {"type": ["string", "null"]}
_CHUNK_ID = {"type": "integer", "minimum": 1, "description": "a chunk_id from search_code"}

HIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": _CHUNK_ID,
        "repo": {"type": "string", "description": "the root (repository) label"},
        "path": {"type": "string", "description": "path relative to the root"},
        "absolute_path": {"type": "string"},
        "start_line": {
            "type": "integer",
            "description": "first line of the hit; a definition too long for one chunk is one "
            "hit from its signature to its end, and chunk_id is its chunk holding the signature",
        },
        "end_line": {"type": "integer"},
        "symbol": _NULLABLE_STRING,
        "symbols": {
            "type": "array",
            "items": {"type": "string"},
            "description": "every definition whose signature is in the hit (qualified names)",
        },
        "score": {"type": "number"},
        "snippet": {"type": "string"},
        "index_age_s": {
            "type": ["integer", "null"],
            "description": "seconds since the hit's file was indexed (file events keep it fresh)",
        },
        "stale": {
            "type": "boolean",
            "description": "true when the hit's root is unavailable now (index_status says "
            "why): the indexed text may be out of date",
        },
    },
    "required": [
        "chunk_id",
        "repo",
        "path",
        "absolute_path",
        "start_line",
        "end_line",
        "symbol",
        "score",
        "snippet",
    ],
}

SEARCH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What you are looking for, in words or identifiers: "
            "'where invoices get their number', 'retry with backoff', 'parse_config'.",
        },
        "top_k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOP_K,
            "default": DEFAULT_TOP_K,
            "description": "How many hits to return.",
        },
        "repo": {"type": "string", "description": "Only this root (see list_repos)."},
        "language": {
            "type": "string",
            "description": "Only this language, e.g. python, typescript, go, rust, java.",
        },
        "path_glob": {
            "type": "string",
            "description": "Only paths (relative to their root) matching this glob, "
            "e.g. 'src/billing/**' or '**/*_test.go'.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SEARCH_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "hits": {"type": "array", "items": HIT_SCHEMA},
        "truncated": {"type": "boolean"},
        "note": {"type": "string"},
    },
    "required": ["query", "hits", "truncated"],
}

GET_CHUNK_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": _CHUNK_ID,
        "context_lines": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT_LINES,
            "default": 0,
            "description": "Lines of the file to add before and after the chunk.",
        },
    },
    "required": ["chunk_id"],
    "additionalProperties": False,
}

GET_CHUNK_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": _CHUNK_ID,
        "repo": {"type": "string"},
        "path": {"type": "string"},
        "absolute_path": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "symbol": _NULLABLE_STRING,
        "kind": {"type": "string"},
        "language": _NULLABLE_STRING,
        "text": {"type": "string", "description": "the chunk, with any context lines"},
        "text_start_line": {"type": "integer"},
        "text_end_line": {"type": "integer"},
        "note": _NULLABLE_STRING,
        "truncated": {"type": "boolean"},
    },
    "required": [
        "chunk_id",
        "repo",
        "path",
        "absolute_path",
        "start_line",
        "end_line",
        "symbol",
        "text",
        "text_start_line",
        "text_end_line",
        "truncated",
    ],
}

NO_INPUT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

LIST_REPOS_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": {"type": "string"},
        "indexed": {"type": "boolean"},
        "last_sweep_at": _NULLABLE_STRING,
        "repos": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "repo": {"type": "string"},
                    "root": {"type": "string"},
                    "files": {"type": "integer"},
                    "chunks": {"type": "integer"},
                    "available": {"type": "boolean"},
                    "problem": _NULLABLE_STRING,
                },
                "required": ["repo", "root", "files", "chunks"],
            },
        },
    },
    "required": ["project", "indexed", "last_sweep_at", "repos"],
}

INDEX_STATUS_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": {"type": "string"},
        "indexed": {"type": "boolean"},
        "sweep_running": {"type": "boolean"},
        "next_sweep_at": _NULLABLE_STRING,
        "sweep_interval_minutes": {"type": "integer"},
        "current_run": {"type": ["object", "null"]},
        "last_run": {"type": ["object", "null"]},
    },
    "required": ["project", "indexed", "sweep_running", "next_sweep_at"],
}

# --- argument checking (the subset of JSON Schema our input schemas use) ------------------------

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def check_arguments(tool: str, schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Refuse arguments the input schema does not allow, naming the argument and the fix."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if args.get(name) is None:
            raise InvalidArgument(f"{tool} needs the argument {name!r}")
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            allowed = ", ".join(properties) or "none"
            raise InvalidArgument(f"{tool} has no argument {name!r}; its arguments are {allowed}")
        if value is None and name not in schema.get("required", []):
            continue
        types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        if not any(_JSON_TYPES[t](value) for t in types):
            raise InvalidArgument(
                f"{tool}: {name} must be {' or '.join(types)}, got {json.dumps(value)[:80]}"
            )
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
            raise InvalidArgument(f"{tool}: {name} = {value} is out of range: use a value {bounds}")
        if isinstance(value, str) and len(value.strip()) < spec.get("minLength", 0):
            raise InvalidArgument(f"{tool}: {name} is empty")


# --- handlers -----------------------------------------------------------------------------------


def bound_hits(query: str, hits: list[dict[str, Any]]) -> dict[str, Any]:
    """The search result within MAX_RESULT_CHARS: snippets shortened first, then hits dropped."""
    limit = SNIPPET_CHARS
    result: dict[str, Any] = {"query": query, "hits": hits, "truncated": False}
    while not fits_in_result(result) and limit > 200:
        limit //= 2
        result["hits"] = [{**h, "snippet": truncate.cut(str(h["snippet"]), limit)} for h in hits]
        result["truncated"] = True
    while not fits_in_result(result) and result["hits"]:
        result["hits"] = result["hits"][:-1]
        result["truncated"] = True
    if result["truncated"]:
        result["note"] = (
            "Output was shortened to stay small: read a hit's lines from its file, "
            "or call get_chunk with its chunk_id."
        )
    return result


def search_handler(service: Service, project: Project, args: Mapping[str, Any]) -> dict[str, Any]:
    query = str(args["query"])
    hits = search_code(
        service.db,
        project,
        service.embedder,
        query,
        top_k=int(args.get("top_k") or DEFAULT_TOP_K),
        repo=args.get("repo") or None,
        language=args.get("language") or None,
        path_glob=args.get("path_glob") or None,
        ef_search=service.settings.search.ef_search,
        query_vectors=service.query_vectors,
        term_stats=service.term_stats,
    )
    result = bound_hits(query.strip(), [_finite(hit.to_dict()) for hit in hits])
    if not hits:
        result["note"] = (
            "No hits. Try other words or identifiers, drop filters, or check index_status "
            "(a first sweep may still be running)."
        )
    return result


def _finite(hit: dict[str, Any]) -> dict[str, Any]:
    score = hit.get("score")
    if isinstance(score, float) and not math.isfinite(score):
        hit["score"] = 0.0
    return hit


def get_chunk_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    context = int(args.get("context_lines") or 0)
    return get_chunk(service.db, project, args["chunk_id"], context_lines=context).to_dict()


def list_repos_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    status = service.index_status(project.name)
    return {
        "project": project.name,
        "indexed": status.indexed,
        "last_sweep_at": status.last_sweep_at,
        "repos": [
            {
                "repo": r.repo,
                "root": r.path,
                "files": r.files,
                "chunks": r.chunks,
                "available": r.available,
                "problem": r.problem,
            }
            for r in status.repos
        ],
    }


def index_status_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    return service.status(project.name)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: Handler

    def definition(self, version: str) -> dict[str, Any]:
        definition: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "title": self.title,
                "readOnlyHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }
        if version_at_least(version, STRUCTURED_OUTPUT_SINCE):
            definition["title"] = self.title
            definition["outputSchema"] = self.output_schema
        return definition


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_code",
        "Search code by meaning",
        "Find code in this project by what it does, not only by exact words: describe it "
        "('where invoices are numbered', 'HTTP retry with backoff') or name identifiers. "
        "Returns the best-matching chunks (functions, classes, sections) with repo, path, "
        "absolute_path, start_line-end_line, symbol, score and a short snippet. Read the "
        "file range you need afterwards (or call get_chunk). Narrow with repo, language or "
        "path_glob. Faster than grepping a large tree when you do not know the names yet. "
        "When you know a name: find_symbol says where it is defined.",
        SEARCH_INPUT,
        SEARCH_OUTPUT,
        search_handler,
    ),
    *(ToolSpec(*spec) for spec in NAV_TOOLS),
    ToolSpec(
        "get_chunk",
        "Read one search hit",
        "Return the full text and location of one chunk from search_code, by its chunk_id, "
        "optionally with context_lines of the surrounding file.",
        GET_CHUNK_INPUT,
        GET_CHUNK_OUTPUT,
        get_chunk_handler,
    ),
    ToolSpec(
        "list_repos",
        "List indexed roots",
        "List the roots (repositories/folders) of this project with their folder, file and "
        "chunk counts, and when the index was last refreshed. Use a root's name as "
        "search_code's repo filter.",
        NO_INPUT,
        LIST_REPOS_OUTPUT,
        list_repos_handler,
    ),
    ToolSpec(
        "index_status",
        "Index status",
        "Report the index of this project: files and chunks, the last and next sweep, "
        "whether a sweep runs now, files that failed and why, and the embedding model. "
        "Check it when search_code finds nothing you expected.",
        NO_INPUT,
        INDEX_STATUS_OUTPUT,
        index_status_handler,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


def text_result(structured: Mapping[str, Any], version: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
        "isError": False,
    }
    if version_at_least(version, STRUCTURED_OUTPUT_SINCE):
        result["structuredContent"] = dict(structured)
    return result


def error_result(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class ProjectTools:
    """The tools bound to one project: every call reads that project's schema only."""

    def __init__(self, service: Service, project: Project) -> None:
        self.service = service
        self.project = project

    @property
    def instructions(self) -> str:
        return (
            f"Code search over the project {self.project.name!r} "
            f"({len(self.project.roots)} root(s)). Use search_code to find where something is "
            "implemented by describing it; find_symbol for where a named symbol is defined; "
            "get_outline for what a file defines; find_references for who uses a name; grep "
            "for every line with some exact text. Results point at file ranges to read."
        )

    def definitions(self, version: str) -> list[dict[str, Any]]:
        return [tool.definition(version) for tool in TOOLS]

    def has(self, name: str) -> bool:
        return name in TOOLS_BY_NAME

    def names(self) -> list[str]:
        return [tool.name for tool in TOOLS]

    async def call(self, name: str, arguments: Mapping[str, Any], version: str) -> dict[str, Any]:
        tool = TOOLS_BY_NAME[name]
        try:
            check_arguments(name, tool.input_schema, arguments)
            run = functools.partial(tool.handler, self.service, self.project, arguments)
            structured = await anyio.to_thread.run_sync(run)
        except RagError as exc:
            return error_result(exc.message)
        return text_result(structured, version)
