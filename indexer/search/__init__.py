"""The read path: hybrid search (`hybrid`), each query's candidate lists (`candidates`), the
keyword side (`keyword`), fusion and collapse as pure functions (`fusion`), the filters every
tool shares, checked once (`filters`), reading a chunk or a range of lines back (`chunks`),
navigation by name (`symbols`) and by exact text (`text`, with the strings a regex needs:
`needles`), and the caches a server keeps across searches (query vectors, term statistics).

The face loads each module when one of its names is first used: the configuration reads
`DEFAULT_EF_SEARCH` without loading the search, and `code-rag scan` never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.lazy import lazy_names

if TYPE_CHECKING:
    from indexer.search.candidates import DEFAULT_EF_SEARCH
    from indexer.search.chunks import MAX_CONTEXT_LINES, ChunkView, get_chunk, indexed_text
    from indexer.search.filters import Filters
    from indexer.search.fusion import DEFAULT_RANKING, Ranking
    from indexer.search.hybrid import (
        DEFAULT_TOP_K,
        MAX_TOP_K,
        SNIPPET_CHARS,
        SearchHit,
        search_code,
        snippet_of,
    )
    from indexer.search.keyword import TermStatsCache
    from indexer.search.query_cache import QueryVectorCache
    from indexer.search.symbols import (
        DEFAULT_SYMBOL_LIMIT,
        MATCH_MODES,
        MAX_SYMBOL_LIMIT,
        Outline,
        SymbolMatches,
        find_symbol,
        get_outline,
    )
    from indexer.search.text import (
        DEFAULT_MAX_RESULTS,
        MAX_RESULTS,
        LineMatches,
        find_references,
        grep,
    )

# Each name of the face and the module of this wing that defines it.
_HOMES = {
    "DEFAULT_EF_SEARCH": "candidates",
    "MAX_CONTEXT_LINES": "chunks",
    "ChunkView": "chunks",
    "get_chunk": "chunks",
    "indexed_text": "chunks",
    "Filters": "filters",
    "DEFAULT_RANKING": "fusion",
    "Ranking": "fusion",
    "DEFAULT_TOP_K": "hybrid",
    "MAX_TOP_K": "hybrid",
    "SNIPPET_CHARS": "hybrid",
    "SearchHit": "hybrid",
    "search_code": "hybrid",
    "snippet_of": "hybrid",
    "TermStatsCache": "keyword",
    "QueryVectorCache": "query_cache",
    "DEFAULT_SYMBOL_LIMIT": "symbols",
    "MATCH_MODES": "symbols",
    "MAX_SYMBOL_LIMIT": "symbols",
    "Outline": "symbols",
    "SymbolMatches": "symbols",
    "find_symbol": "symbols",
    "get_outline": "symbols",
    "DEFAULT_MAX_RESULTS": "text",
    "MAX_RESULTS": "text",
    "LineMatches": "text",
    "find_references": "text",
    "grep": "text",
}

__all__ = [
    "DEFAULT_EF_SEARCH",
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_RANKING",
    "DEFAULT_SYMBOL_LIMIT",
    "DEFAULT_TOP_K",
    "MATCH_MODES",
    "MAX_CONTEXT_LINES",
    "MAX_RESULTS",
    "MAX_SYMBOL_LIMIT",
    "MAX_TOP_K",
    "SNIPPET_CHARS",
    "ChunkView",
    "Filters",
    "LineMatches",
    "Outline",
    "QueryVectorCache",
    "Ranking",
    "SearchHit",
    "SymbolMatches",
    "TermStatsCache",
    "find_references",
    "find_symbol",
    "get_chunk",
    "get_outline",
    "grep",
    "indexed_text",
    "search_code",
    "snippet_of",
]


__getattr__ = lazy_names(__name__, _HOMES, globals())
