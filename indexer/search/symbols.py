"""Navigation by name: where a symbol is defined (`find_symbol`) and what a file defines
(`get_outline`), read from the symbol table the sweep fills from the chunker's parse.

Exact look-up is by the name as written (case-sensitive; `Cart.add`, `Cart::add`, `Cart#add`
all match a qualified name or its tail); prefix look-up ignores case; fuzzy look-up ranks by
trigram similarity (pg_trgm). An exact look-up that finds nothing falls back to fuzzy and says so.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from indexer.db import Database, OutlineRow, Schema, SymbolHit, like_escape, lookup
from indexer.errors import InvalidArgument
from indexer.project import Project
from indexer.search.filters import Filters, check_repo

MATCH_MODES = ("exact", "prefix", "fuzzy")
DEFAULT_SYMBOL_LIMIT = 20
MAX_SYMBOL_LIMIT = 200
MAX_NAME_CHARS = 300
MIN_FUZZY_CHARS = 3  # a trigram needs three characters to say anything
_SEPARATORS = re.compile(r"::|#|\.")


@dataclass(frozen=True)
class SymbolMatches:
    symbols: list[SymbolHit]
    match: str  # the mode that produced them: "fuzzy" after an empty exact look-up

    def to_dict(self) -> dict[str, Any]:
        return {"symbols": [asdict(s) for s in self.symbols], "match": self.match}


@dataclass
class OutlineEntry:
    name: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    children: list[OutlineEntry] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "qualified_name": self.qualified_name,
            "kind": self.kind,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "signature": self.signature,
            "children": [c.to_dict() for c in self.children],
        }


@dataclass(frozen=True)
class Outline:
    repo: str
    path: str
    language: str | None
    symbols: list[OutlineEntry]

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "path": self.path,
            "language": self.language,
            "symbols": [s.to_dict() for s in self.symbols],
        }


def find_symbol(
    db: Database,
    project: Project,
    name: str,
    *,
    match: str = "exact",
    kind: str | None = None,
    repo: str | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    limit: int = DEFAULT_SYMBOL_LIMIT,
) -> SymbolMatches:
    """Definitions named `name`, best first (shortest qualified name, then by place)."""
    name = (name or "").strip()
    if not name:
        raise InvalidArgument("name is empty: give a symbol name such as parse_config or Cart.add")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidArgument(
            f"name is {len(name)} characters long: keep it under {MAX_NAME_CHARS}"
        )
    if match not in MATCH_MODES:
        raise InvalidArgument(f"match must be exact, prefix or fuzzy, got {match!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SYMBOL_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_SYMBOL_LIMIT}")
    params: dict[str, Any] = {
        **Filters.checked(project, repo, language, path_glob).params(),
        "kind": kind.strip().lower() if kind else None,
        "limit": limit,
    }
    # `Cart.add`: the last part is the name, the whole must be the qualified name or its tail.
    parts = [p for p in _SEPARATORS.split(name) if p]
    qualified = len(parts) > 1 and not name.startswith("operator")
    last = parts[-1] if qualified else name
    schema = Schema(project.name)
    with db.reading(f"looking up symbols in {project.name}") as conn:
        if match == "exact":
            dotted = _SEPARATORS.sub(".", name)
            found = lookup.find_symbol(
                conn,
                schema,
                "exact_qualified" if qualified else "exact",
                "exact",
                {
                    **params,
                    "name": last,
                    "dotted": dotted,
                    "dotted_tail": "%." + like_escape(dotted),
                },
            )
            if found:
                return SymbolMatches(found, "exact")
        elif match == "prefix":
            prefix = like_escape(name.lower()) + "%"
            where = "prefix_qualified" if qualified else "prefix"
            found = lookup.find_symbol(conn, schema, where, "prefix", {**params, "prefix": prefix})
            return SymbolMatches(found, "prefix")
        if len(last) < MIN_FUZZY_CHARS:
            return SymbolMatches([], "fuzzy")
        found = lookup.fuzzy_symbols(conn, schema, {**params, "name": last})
    return SymbolMatches(found, "fuzzy")


def get_outline(db: Database, project: Project, repo: str, path: str) -> Outline:
    """The definitions of one indexed file as a tree, in file order."""
    check_repo(project, repo)
    path = (path or "").strip().lstrip("/")
    if not path:
        raise InvalidArgument("path is empty: give a file path relative to its root")
    schema = Schema(project.name)
    with db.reading(f"reading an outline in {project.name}") as conn:
        indexed = lookup.indexed_file(conn, schema, repo, path)
        if indexed is None:
            raise InvalidArgument(
                f"{repo}/{path} is not indexed: give a path relative to the root, as "
                "search_code and find_symbol print it (a new file is indexed at the next sweep)"
            )
        rows = lookup.file_symbols(conn, schema, indexed.id)
    return Outline(repo, path, indexed.language, outline_tree(rows))


def outline_tree(rows: list[OutlineRow]) -> list[OutlineEntry]:
    """Nest rows listed parents-first: each under the latest open entry named its parent."""
    roots: list[OutlineEntry] = []
    stack: list[OutlineEntry] = []
    for row in rows:
        entry = OutlineEntry(
            row.name, row.qualified_name, row.kind, row.start_line, row.end_line, row.signature
        )
        while stack and (row.parent is None or stack[-1].qualified_name != row.parent):
            stack.pop()
        (stack[-1].children if stack else roots).append(entry)
        stack.append(entry)
    return roots
