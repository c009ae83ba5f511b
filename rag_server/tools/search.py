"""`search_code` and `get_chunk`: find code by meaning, then read one hit in full.

`search_code` embeds the query (the only tool that does) and bounds its result to its budget by
shortening texts first, then dropping the weakest hits; `get_chunk` reads one chunk by the id a
hit carries, with context lines from the file when asked. Both show as much code as `detail`
asks: none, snippets, or the whole text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from indexer.db import Database
from indexer.project import Project
from indexer.search import (
    DEFAULT_TOP_K,
    MAX_CONTEXT_LINES,
    MAX_TOP_K,
    SNIPPET_CHARS,
    SearchHit,
    get_chunk,
    indexed_text,
    search_code,
    snippet_of,
)
from rag_server.tools.schemas import (
    CHUNK_ID,
    CUT_FIELDS,
    FILTERS,
    MAX_CHARS,
    NULLABLE_STRING,
    PROJECT_NAME,
    Budget,
    budget_arguments,
    detail,
    filter_arguments,
    how_many,
    input_schema,
    the_rest,
)
from rag_server.tools.spec import ToolSpec, bound_result

if TYPE_CHECKING:
    from rag_server.service import Service

# Before hits are dropped, snippets are shortened to no fewer characters than this, and whole
# texts to no fewer than a snippet's length.
SHORTEST_SNIPPET = 150
SHORTEST_TEXT = SNIPPET_CHARS

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
        "snippet": {
            "type": "string",
            "description": "the hit's first lines (detail=snippets, the default)",
        },
        "text": {
            "type": "string",
            "description": "the hit's whole range as indexed, start_line to end_line (detail=full)",
        },
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
    "required": [*_LOCATED, "score"],
}

SEARCH_INPUT = input_schema(
    {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "What you are looking for, in words or identifiers: "
            "'where invoices get their number', 'retry with backoff', 'parse_config'. "
            "A bug report, a failing test's output or a traceback can be passed as it is "
            "(up to 2000 characters): the files its frames name and its words are read.",
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
        "detail": detail(
            "snippets",
            f"each hit with its first lines (up to 12 lines, {SNIPPET_CHARS} characters).",
            "each hit with its whole text (start_line to end_line, as indexed) instead of a "
            "snippet: fewer hits fit.",
        ),
        "max_chars": MAX_CHARS,
    },
    required=["query"],
)

SEARCH_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "hits": {"type": "array", "items": HIT_SCHEMA},
        **CUT_FIELDS,
        "vectors_ready": {
            "type": "number",
            "description": "present while a first index is being embedded: the share of the "
            "index's chunks and definitions that have their vectors (keyword and exact-name "
            "matches already cover every file)",
        },
        "vectors": {
            "type": "string",
            "enum": ["off"],
            "description": "present when the server runs model-free ([embedding] provider = "
            "none): hits are ranked by keywords, exact names and verbatim identifiers only",
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
        "detail": detail(
            "full",
            f"the chunk's first lines (up to 12 lines, {SNIPPET_CHARS} characters) as `snippet`.",
            "the chunk's whole text as `text`, with any context lines (cut at 24,000 characters).",
        ),
        "max_chars": MAX_CHARS,
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
        "text": {
            "type": "string",
            "description": "the chunk, with any context lines (detail=full, the default)",
        },
        "snippet": {"type": "string", "description": "the chunk's first lines (detail=snippets)"},
        "text_start_line": {"type": "integer"},
        "text_end_line": {"type": "integer"},
        "note": {**NULLABLE_STRING, "description": "what was cut and how to read the rest"},
        "truncated": {
            "type": "boolean",
            "description": "true when the text was cut (at 24,000 characters or to fit "
            "max_chars): the note says which lines to read",
        },
    },
    "required": [*_LOCATED, "text_start_line", "text_end_line", "truncated"],
}


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
    fields: dict[str, Any] = {}
    notes = []
    pending = service.pending_vectors_of([p.name for p in projects])
    if service.model_free:
        fields["vectors"] = "off"
        notes.append(
            "vectors are off (model-free: [embedding] provider = none): hits are ranked by "
            "keywords, exact names and verbatim identifiers, not by meaning. Search with the "
            "code's own words and names; find_symbol, grep and find_references work as ever."
        )
    elif pending.total:
        fields["vectors_ready"] = pending.ready_share
        notes.append(
            f"{pending.total:,} chunks and definitions ({1 - pending.ready_share:.0%} of the "
            "index) are still waiting for their vectors while a first index is embedded: "
            "keyword and exact-name matches cover every file, ranking by meaning only the "
            "part embedded so far. index_status shows the progress."
        )
    return search_result(
        service.db, projects, query, hits, budget_arguments(args), fields=fields, notes=notes
    )


def search_result(
    db: Database,
    projects: Sequence[Project],
    query: str,
    hits: Sequence[SearchHit],
    budget: Budget,
    *,
    fields: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """What search_code answers for `hits` (the CLI prints it too): as much of their code as
    `budget.detail` asks, within `budget.max_chars`, with further `fields` and `notes`."""
    shown = [_finite(hit.to_dict()) for hit in hits]
    if budget.detail == "pointers":
        shown = [{k: v for k, v in hit.items() if k != "snippet"} for hit in shown]
    elif budget.detail == "full":
        texts = _whole_texts(db, projects, shown)
        shown = [
            {**{k: v for k, v in hit.items() if k != "snippet"}, "text": text or hit["snippet"]}
            for hit, text in zip(shown, texts, strict=True)
        ]
    result: dict[str, Any] = {"query": query.strip(), "hits": shown, **(fields or {})}
    if not hits:
        notes = [
            "No hits. Try other words or identifiers, drop filters, or check index_status "
            "(a first sweep may still be running).",
            *notes,
        ]
    if notes:
        result["note"] = " ".join(notes)
    return bound_result(
        result,
        budget.max_chars,
        entries="hits",
        text={"snippets": "snippet", "full": "text"}.get(budget.detail),
        floor=SHORTEST_TEXT if budget.detail == "full" else SHORTEST_SNIPPET,
        rest=the_rest(budget, "call get_chunk with a hit's chunk_id, or read its lines"),
    )


def _whole_texts(
    db: Database, projects: Sequence[Project], hits: Sequence[Mapping[str, Any]]
) -> list[str | None]:
    """The indexed text of each hit's whole range, read from its own project."""
    texts: list[str | None] = [None] * len(hits)
    for project in projects:
        mine = [i for i, h in enumerate(hits) if h.get("project", project.name) == project.name]
        ranges = [
            (hits[i]["repo"], hits[i]["path"], hits[i]["start_line"], hits[i]["end_line"])
            for i in mine
        ]
        for i, text in zip(mine, indexed_text(db, project, ranges) if mine else [], strict=True):
            texts[i] = text
    return texts


def _finite(hit: dict[str, Any]) -> dict[str, Any]:
    score = hit.get("score")
    if isinstance(score, float) and not math.isfinite(score):
        hit["score"] = 0.0
    return hit


def get_chunk_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    context = int(args.get("context_lines") or 0)
    budget = budget_arguments(args, default_detail="full")
    view = get_chunk(service.db, project, args["chunk_id"], context_lines=context).to_dict()
    if budget.detail != "full":  # in place of the text: its snippet, or nothing
        fields: dict[str, Any] = {}
        for key, value in view.items():
            if key != "text":
                fields[key] = value
            elif budget.detail == "snippets":
                fields["snippet"] = snippet_of(value)
        view = {**fields, "truncated": False}
    rest = (
        f"For the rest: read lines {view['text_start_line']}-{view['text_end_line']} of "
        f"{view['absolute_path']}"
    )
    if view["truncated"]:  # cut to the size of a chunk view
        view["note"] = " ".join(
            filter(None, [f"The text was cut (it ends with …). {rest}.", view["note"]])
        )
    return bound_result(
        view,
        budget.max_chars,
        text={"snippets": "snippet", "full": "text"}.get(budget.detail),
        rest=f"{rest}, or raise max_chars.",
    )


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
    "When you know a name: find_symbol says where it is defined. detail=pointers returns "
    "locations only (more hits fit), detail=full each hit's whole text; max_chars bounds the "
    "result.",
    SEARCH_INPUT,
    SEARCH_OUTPUT,
    search_handler,
)

GET_CHUNK = ToolSpec(
    "get_chunk",
    "Read one search hit",
    "Return the full text and location of one chunk from search_code, by its chunk_id, "
    "optionally with context_lines of the surrounding file. detail=snippets shows only its "
    "first lines; max_chars bounds the result.",
    GET_CHUNK_INPUT,
    GET_CHUNK_OUTPUT,
    get_chunk_handler,
)
