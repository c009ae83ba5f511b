"""The read path: hybrid search (`hybrid`), each query's candidate lists (`candidates`), the
keyword side and fusion (`fusion`), navigation by name (`symbols`) and by exact text (`text`,
with the strings a regex needs: `needles`), and the server's cache of query vectors.
"""

from indexer.search.candidates import DEFAULT_EF_SEARCH
from indexer.search.hybrid import (
    DEFAULT_TOP_K,
    MAX_CONTEXT_LINES,
    MAX_TOP_K,
    SNIPPET_CHARS,
    ChunkView,
    SearchHit,
    get_chunk,
    search_code,
)
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

__all__ = [
    "DEFAULT_EF_SEARCH",
    "DEFAULT_MAX_RESULTS",
    "DEFAULT_SYMBOL_LIMIT",
    "DEFAULT_TOP_K",
    "MATCH_MODES",
    "MAX_CONTEXT_LINES",
    "MAX_RESULTS",
    "MAX_SYMBOL_LIMIT",
    "MAX_TOP_K",
    "SNIPPET_CHARS",
    "ChunkView",
    "LineMatches",
    "Outline",
    "QueryVectorCache",
    "SearchHit",
    "SymbolMatches",
    "find_references",
    "find_symbol",
    "get_chunk",
    "get_outline",
    "grep",
    "search_code",
]
