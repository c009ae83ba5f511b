"""Parsers and symbol queries, one of each per language and thread.

tree-sitter `Parser` objects are not safe to share between threads, and the sweep chunks from
worker threads, so each thread keeps its own parsers (and compiled queries) in a `threading.local`.
Grammars come from tree-sitter-language-pack 0.13.x, which bundles them: nothing is downloaded.
The symbol queries are data files, `queries/<language>.scm`; a language has symbol-aware chunking
exactly when it has a query file.
"""

from __future__ import annotations

import threading
from functools import cache
from importlib import resources
from typing import Any, cast

from tree_sitter import Language, Parser, Query
from tree_sitter_language_pack import get_language

_local = threading.local()
# Grammars whose node names are another's, so they share its query file.
SHARED_QUERIES = {"tsx": "typescript"}


@cache
def _query_source(language: str) -> str | None:
    name = SHARED_QUERIES.get(language, language)
    path = resources.files(__package__).joinpath("queries", f"{name}.scm")
    return path.read_text(encoding="utf-8") if path.is_file() else None


@cache
def _language(language: str) -> Language:
    # Language objects are immutable and safe to share; only parsers are per thread.
    return get_language(cast(Any, language))


def has_symbols(language: str | None) -> bool:
    """True when `language` has a grammar and a symbol query, i.e. symbol-aware chunking."""
    return language is not None and _query_source(language) is not None


def parser_for(language: str) -> Parser:
    """This thread's parser for `language`."""
    parsers: dict[str, Parser] = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(language)
    if parser is None:
        parser = parsers[language] = Parser(_language(language))
    return parser


def query_for(language: str) -> Query:
    """This thread's compiled symbol query for `language` (which must have one)."""
    queries: dict[str, Query] = _local.__dict__.setdefault("queries", {})
    query = queries.get(language)
    if query is None:
        source = _query_source(language)
        if source is None:
            raise LookupError(f"no symbol query for {language}")
        query = queries[language] = Query(_language(language), source)
    return query
