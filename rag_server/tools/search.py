"""`search_code` and `get_chunk`: find code by meaning, then read one hit in full.

`search_code` embeds the query (the only tool that does) and bounds its result by shortening
snippets first, then dropping the weakest hits; `get_chunk` reads one chunk by the id a hit
carries, with context lines from the file when asked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from indexer import truncate
from indexer.project import Project
from indexer.search import (
    DEFAULT_TOP_K,
    MAX_CONTEXT_LINES,
    MAX_TOP_K,
    SNIPPET_CHARS,
    get_chunk,
    search_code,
)
from rag_server.mcp import fits_in_result
from rag_server.service import Service
from rag_server.tools.schemas import (
    CHUNK_ID,
    FILTERS,
    NULLABLE_STRING,
    PROJECT_NAME,
    filter_arguments,
    how_many,
    input_schema,
)
from rag_server.tools.spec import ToolSpec

# What locates a hit and a chunk alike: every result names them.
_LOCATED = ["chunk_id", "repo", "path", "absolute_path", "start_line", "end_line", "symbol"]

HIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": CHUNK_ID,
        "project": PROJECT_NAME,
        "repo": {"type": "string", "description": "the root (repository) label"},
        "path": {"type": "string", "description": "path relative to the root"},
        "absolute_path": {"type": "string"},
        "start_line": {
            "type": "integer",
            "description": "first line of the hit; a definition too long for one chunk is one "
            "hit from its signature to its end, and chunk_id is its chunk holding the signature",
        },
        "end_line": {"type": "integer"},
        "symbol": NULLABLE_STRING,
        "symbols": {
            "type": "array",
            "items": {"type": "string"},
            "description": "every definition whose signature is in the hit (qualified names)",
        },
        "score": {"type": "number"},
        "snippet": {"type": "string"},
        "also": {
            "type": "array",
            "description": "the file's further matches, best first (empty with by_file "
            "false); read one by its chunk_id or its lines",
            "items": {
                "type": "object",
                "properties": {
                    "chunk_id": CHUNK_ID,
                    "start_line": {"type": "integer"},
                    "end_line": {"type": "integer"},
                    "symbol": NULLABLE_STRING,
                },
                "required": ["chunk_id", "start_line", "end_line", "symbol"],
            },
        },
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
        *_LOCATED,
        "score",
        "snippet",
    ],
}

SEARCH_INPUT = input_schema(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What you are looking for, in words or identifiers: "
            "'where invoices get their number', 'retry with backoff', 'parse_config'.",
        },
        "top_k": how_many(MAX_TOP_K, DEFAULT_TOP_K, "How many hits to return."),
        "by_file": {
            "type": "boolean",
            "default": True,
            "description": "One hit per file (the default), at its best match, with the "
            "file's further matches as `also` line ranges: top_k hits name top_k files. "
            "false: one hit per chunk, several of one file possible.",
        },
        **FILTERS,
    },
    required=["query"],
)

SEARCH_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "hits": {"type": "array", "items": HIT_SCHEMA},
        "truncated": {"type": "boolean"},
        "note": {"type": "string"},
        "vectors_ready": {
            "type": "number",
            "description": "present while a first index is being embedded: the share of the "
            "index's chunks and definitions that have their vectors (keyword and exact-name "
            "matches already cover every file)",
        },
    },
    "required": ["query", "hits", "truncated"],
}

GET_CHUNK_INPUT = input_schema(
    {
        "chunk_id": CHUNK_ID,
        "context_lines": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_CONTEXT_LINES,
            "default": 0,
            "description": "Lines of the file to add before and after the chunk.",
        },
    },
    required=["chunk_id"],
)

GET_CHUNK_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "chunk_id": CHUNK_ID,
        "project": PROJECT_NAME,
        "repo": {"type": "string"},
        "path": {"type": "string"},
        "absolute_path": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "symbol": NULLABLE_STRING,
        "kind": {"type": "string"},
        "language": NULLABLE_STRING,
        "text": {"type": "string", "description": "the chunk, with any context lines"},
        "text_start_line": {"type": "integer"},
        "text_end_line": {"type": "integer"},
        "note": NULLABLE_STRING,
        "truncated": {"type": "boolean"},
    },
    "required": [
        *_LOCATED,
        "text",
        "text_start_line",
        "text_end_line",
        "truncated",
    ],
}


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
    return search_over(service, [project], args)


def search_over(
    service: Service, projects: Sequence[Project], args: Mapping[str, Any]
) -> dict[str, Any]:
    """search_code over one project or a group's projects, ranked as one index."""
    query = str(args["query"])
    hits = search_code(
        service.db,
        projects,
        service.embedder,
        query,
        top_k=int(args.get("top_k") or DEFAULT_TOP_K),
        **filter_arguments(args),
        ef_search=service.settings.search.ef_search,
        query_vectors=service.query_vectors,
        term_stats=service.term_stats,
        by_file=bool(args.get("by_file", True)),
    )
    result = bound_hits(query.strip(), [_finite(hit.to_dict()) for hit in hits])
    notes = [result["note"]] if "note" in result else []
    if not hits:
        notes.append(
            "No hits. Try other words or identifiers, drop filters, or check index_status "
            "(a first sweep may still be running)."
        )
    pending = service.pending_vectors_of([p.name for p in projects])
    if pending.total:
        result["vectors_ready"] = pending.ready_share
        notes.append(
            f"{pending.total:,} chunks and definitions ({1 - pending.ready_share:.0%} of the "
            "index) are still waiting for their vectors while a first index is embedded: "
            "keyword and exact-name matches cover every file, ranking by meaning only the "
            "part embedded so far. index_status shows the progress."
        )
    if notes:
        result["note"] = " ".join(notes)
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


SEARCH_CODE = ToolSpec(
    "search_code",
    "Search code by meaning",
    "Find code in this project by what it does, not only by exact words: describe it "
    "('where invoices are numbered', 'HTTP retry with backoff') or name identifiers. "
    "Returns one hit per file, at its best-matching chunk (function, class, section), with "
    "repo, path, absolute_path, start_line-end_line, symbol, score, a short snippet and the "
    "file's other matching ranges as `also`. Tests, docs and examples rank below code "
    "unless the query asks for them. Read the "
    "file range you need afterwards (or call get_chunk). Narrow with repo, language or "
    "path_glob. Faster than grepping a large tree when you do not know the names yet. "
    "When you know a name: find_symbol says where it is defined.",
    SEARCH_INPUT,
    SEARCH_OUTPUT,
    search_handler,
)

GET_CHUNK = ToolSpec(
    "get_chunk",
    "Read one search hit",
    "Return the full text and location of one chunk from search_code, by its chunk_id, "
    "optionally with context_lines of the surrounding file.",
    GET_CHUNK_INPUT,
    GET_CHUNK_OUTPUT,
    get_chunk_handler,
)
