"""`find_symbol`, `get_outline`, `grep` and `find_references`: find a definition by name,
outline a file, find every line that says something, find the uses of an identifier.

They answer from the symbol table and the indexed text (no embedding involved), so they are
exact and fast. `detail` says how much code comes with each entry (none, the signature or
line window, the whole definition or line); results stay within their `max_chars` budget
(definition texts are shortened first, then entries dropped from the end, and `truncated`
says so; `complete` turns false with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from indexer.db import Database
from indexer.project import Project
from indexer.search import (
    DEFAULT_MAX_RESULTS,
    DEFAULT_SYMBOL_LIMIT,
    MATCH_MODES,
    MAX_RESULTS,
    MAX_SYMBOL_LIMIT,
    SNIPPET_CHARS,
    LineMatches,
    Outline,
    SymbolMatches,
    find_references,
    find_symbol,
    get_outline,
    grep,
    indexed_text,
)
from rag_server.tools.schemas import (
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

SYMBOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the name as written: cancel!, fmt"},
        "qualified_name": {
            "type": "string",
            "description": "with its owners: Billing::Subscription#cancel!, Point::fmt",
        },
        "kind": {"type": "string", "description": "function, method, class, struct, ..."},
        "language": NULLABLE_STRING,
        "project": PROJECT_NAME,
        "repo": {"type": "string"},
        "path": {"type": "string", "description": "path relative to the root"},
        "start_line": {"type": "integer", "description": "first line, doc comments included"},
        "end_line": {"type": "integer"},
        "signature": {
            "type": "string",
            "description": "the line naming it, trimmed (not with detail=pointers)",
        },
        "text": {
            "type": "string",
            "description": "the definition as indexed, start_line to end_line (detail=full)",
        },
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
        "chunk_id",
    ],
}

FIND_SYMBOL_INPUT = input_schema(
    {
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
        **FILTERS,
        "limit": how_many(
            MAX_SYMBOL_LIMIT, DEFAULT_SYMBOL_LIMIT, "How many definitions to return."
        ),
        "detail": detail(
            "snippets",
            "each definition with its signature line.",
            "each definition with its signature and its whole text (doc comments included) "
            "as `text`.",
        ),
        "max_chars": MAX_CHARS,
    },
    required=["name"],
)

FIND_SYMBOL_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "symbols": {"type": "array", "items": SYMBOL_SCHEMA},
        "match": {
            "type": "string",
            "enum": list(MATCH_MODES),
            "description": "how they matched: fuzzy when an exact look-up found nothing",
        },
        **CUT_FIELDS,
    },
    "required": ["symbols", "match", "truncated"],
}

GET_OUTLINE_INPUT = input_schema(
    {
        "repo": {"type": "string", "minLength": 1, "description": "The root (see list_repos)."},
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "The file's path relative to its root, as other tools print it.",
        },
        "detail": detail(
            "snippets",
            "each definition with its signature line.",
            "the same as snippets (an outline shows signatures at most: find_symbol with "
            "detail=full gives a definition's text).",
        ),
        "max_chars": MAX_CHARS,
    },
    required=["repo", "path"],
)

_OUTLINE_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "qualified_name": {"type": "string"},
        "kind": {"type": "string"},
        "start_line": {"type": "integer"},
        "end_line": {"type": "integer"},
        "signature": {"type": "string", "description": "not with detail=pointers"},
        "children": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["name", "kind", "start_line", "end_line", "children"],
}

GET_OUTLINE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": PROJECT_NAME,
        "repo": {"type": "string"},
        "path": {"type": "string"},
        "language": NULLABLE_STRING,
        "symbols": {"type": "array", "items": _OUTLINE_ENTRY},
        **{
            **CUT_FIELDS,
            "omitted": {
                **CUT_FIELDS["omitted"],
                "description": "with truncated: how many top-level entries (each with its "
                "children) were left out at the end",
            },
        },
    },
    "required": ["repo", "path", "language", "symbols", "truncated"],
}


_MAX_RESULTS = how_many(
    MAX_RESULTS,
    DEFAULT_MAX_RESULTS,
    "At most this many lines; complete: false says there were more.",
)
_LINE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project": PROJECT_NAME,
        "repo": {"type": "string"},
        "path": {"type": "string", "description": "path relative to the root"},
        "line": {"type": "integer", "description": "1-based line number"},
        "text": {
            "type": "string",
            "description": "the line: a window of it when long (detail=snippets), whole up to "
            "2000 characters (detail=full), absent with detail=pointers",
        },
    },
    "required": ["repo", "path", "line"],
}
_COMPLETE = {
    "type": "boolean",
    "description": "false when max_results or max_chars cut the list: there is more",
}
_LINES_DETAIL = detail(
    "snippets",
    "each line's text, as a window around the match when the line is long.",
    "each line's whole text (up to 2000 characters).",
)


def _lines_output(key: str) -> dict[str, Any]:
    """The result of a tool that lists lines under `key`."""
    return {
        "type": "object",
        "properties": {
            key: {"type": "array", "items": _LINE},
            "complete": _COMPLETE,
            **CUT_FIELDS,
        },
        "required": [key, "complete"],
    }


GREP_INPUT = input_schema(
    {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "The text to find on one line: a literal unless regex is true.",
        },
        "regex": {
            "type": "boolean",
            "default": False,
            "description": "Treat pattern as a PostgreSQL regex (POSIX ERE plus \\d \\w \\s, "
            "\\m \\M for word edges).",
        },
        "case_sensitive": {"type": "boolean", "default": True},
        **FILTERS,
        "max_results": _MAX_RESULTS,
        "detail": _LINES_DETAIL,
        "max_chars": MAX_CHARS,
    },
    required=["pattern"],
)

GREP_OUTPUT = _lines_output("matches")

FIND_REFERENCES_INPUT = input_schema(
    {
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "An identifier: parse_config, empty?, $el. With owners (Cart.add) "
            "the last part is looked for.",
        },
        **FILTERS,
        "max_results": _MAX_RESULTS,
        "detail": _LINES_DETAIL,
        "max_chars": MAX_CHARS,
    },
    required=["name"],
)

FIND_REFERENCES_OUTPUT = _lines_output("references")


def lines_result(found: LineMatches, key: str, budget: Budget) -> dict[str, Any]:
    """What grep and find_references answer (the CLI prints it too): the lines under `key`
    within the budget (a line is never cut: lines are dropped from the end); not `complete`
    when the budget or max_results cut them. Whole lines or windows were chosen by the
    search (`whole_lines`); pointers leave the text out."""
    result = found.to_dict(key)
    if budget.detail == "pointers":
        result[key] = [{k: v for k, v in line.items() if k != "text"} for line in result[key]]
    rest = the_rest(budget, "read the lines from their files")
    bounded = bound_result(result, budget.max_chars, entries=key, rest=rest)
    if bounded.get("omitted") and bounded["complete"]:
        # Lines left out: not complete, and "false" is a character longer than "true".
        result["complete"] = False
        bounded = bound_result(result, budget.max_chars, entries=key, rest=rest)
    return bounded


def symbols_result(
    db: Database, project: Project, found: SymbolMatches, budget: Budget
) -> dict[str, Any]:
    """What find_symbol answers for `found` (the CLI prints it too): each definition with its
    signature, without it (pointers) or with its text too (full), within the budget."""
    result = found.to_dict()
    if budget.detail == "pointers":
        result["symbols"] = _without_signatures(result["symbols"])
    elif budget.detail == "full":
        symbols = result["symbols"]
        ranges = [(s["repo"], s["path"], s["start_line"], s["end_line"]) for s in symbols]
        texts = indexed_text(db, project, ranges)
        result["symbols"] = [
            {**symbol, "text": text if text is not None else symbol["signature"]}
            for symbol, text in zip(symbols, texts, strict=True)
        ]
    return bound_result(
        result,
        budget.max_chars,
        entries="symbols",
        text="text" if budget.detail == "full" else None,
        floor=SNIPPET_CHARS,
        rest=the_rest(
            budget,
            "read a definition's lines from its file, or call get_chunk with its chunk_id",
            narrow="kind, repo, language or path_glob",
        ),
    )


def outline_result(outline: Outline, budget: Budget) -> dict[str, Any]:
    """What get_outline answers (the CLI prints it too): the tree with signatures, or without
    them (pointers), within the budget (top-level entries dropped from the end)."""
    result = outline.to_dict()
    if budget.detail == "pointers":
        result["symbols"] = _without_signatures(result["symbols"])
    rest = the_rest(budget, "read the file, or call find_symbol for a definition", None)
    return bound_result(result, budget.max_chars, entries="symbols", rest=rest)


def _without_signatures(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries (and their children, in an outline) without their signature lines."""
    stripped = []
    for entry in entries:
        entry = {k: v for k, v in entry.items() if k != "signature"}
        if "children" in entry:
            entry["children"] = _without_signatures(entry["children"])
        stripped.append(entry)
    return stripped


def find_symbol_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    found = find_symbol(
        service.db,
        project,
        str(args["name"]),
        match=args.get("match") or "exact",
        kind=args.get("kind") or None,
        **filter_arguments(args),
        limit=int(args.get("limit") or DEFAULT_SYMBOL_LIMIT),
    )
    return symbols_result(service.db, project, found, budget_arguments(args))


def get_outline_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    outline = get_outline(service.db, project, str(args["repo"]), str(args["path"]))
    return outline_result(outline, budget_arguments(args))


def grep_handler(service: Service, project: Project, args: Mapping[str, Any]) -> dict[str, Any]:
    budget = budget_arguments(args)
    found = grep(
        service.db,
        project,
        str(args["pattern"]),
        regex=bool(args.get("regex", False)),
        case_sensitive=bool(args.get("case_sensitive", True)),
        **filter_arguments(args),
        max_results=int(args.get("max_results") or DEFAULT_MAX_RESULTS),
        whole_lines=budget.detail == "full",
    )
    return lines_result(found, "matches", budget)


def find_references_handler(
    service: Service, project: Project, args: Mapping[str, Any]
) -> dict[str, Any]:
    budget = budget_arguments(args)
    found = find_references(
        service.db,
        project,
        str(args["name"]),
        **filter_arguments(args),
        max_results=int(args.get("max_results") or DEFAULT_MAX_RESULTS),
        whole_lines=budget.detail == "full",
    )
    return lines_result(found, "references", budget)


# The descriptions say which question each tool answers, and which tool to use instead.
FIND_SYMBOL = ToolSpec(
    "find_symbol",
    "Find where a symbol is defined",
    "Answer 'where is X defined?': the definitions named `name` (functions, methods, "
    "classes, structs, modules... from the parse of every indexed file, nested and small "
    "ones included) with repo, path, start_line-end_line, kind, qualified_name and the "
    "signature line. `Cart.add` / `Cart::add` / `Cart#add` narrow by owner. match=prefix "
    "lists names starting with it, match=fuzzy finds near misses; an exact name that "
    "matches nothing falls back to fuzzy (the result's `match` says so). detail=full adds "
    "each definition's text. Use search_code instead when you can only describe the code.",
    FIND_SYMBOL_INPUT,
    FIND_SYMBOL_OUTPUT,
    find_symbol_handler,
)

GET_OUTLINE = ToolSpec(
    "get_outline",
    "Outline a file",
    "Answer 'what is in this file?': the definitions of one indexed file as a tree "
    "(classes with their methods), each with kind, lines and signature, without reading "
    "the file. Give the repo and path as other tools print them.",
    GET_OUTLINE_INPUT,
    GET_OUTLINE_OUTPUT,
    get_outline_handler,
)

GREP = ToolSpec(
    "grep",
    "Find every line that says X",
    "Answer 'where does this exact text appear?': every matching line of the indexed "
    "files (not one per chunk) with repo, path and line number, sorted by path. A literal "
    "by default (case-sensitive unless case_sensitive=false); regex=true takes a "
    "PostgreSQL regex. `complete: false` means max_results or max_chars cut the list: "
    "narrow with repo, language or path_glob. Use it for strings, error messages, config "
    "keys; search_code for meaning.",
    GREP_INPUT,
    GREP_OUTPUT,
    grep_handler,
)

FIND_REFERENCES = ToolSpec(
    "find_references",
    "Find the uses of an identifier",
    "Answer 'who calls / uses X?': every line where the identifier occurs as a whole word, "
    "except the lines defining it, grouped by file (repo, path, line, text). A textual "
    "match, so it finds calls, imports and mentions in comments alike, in every language. "
    "`complete: false` means the cap or max_chars cut the list: there are more, narrow with "
    "repo, language or path_glob. Use find_symbol for the definition itself.",
    FIND_REFERENCES_INPUT,
    FIND_REFERENCES_OUTPUT,
    find_references_handler,
)
