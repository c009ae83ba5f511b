"""The candidate lists of one query in one project, before they are fused: the vector side's
nearest chunks, the chunks a query names exactly (a symbol), the identifiers of a query looked
for verbatim; the text the vector side embeds for a query; and the rows fusion's shortlist is
shaped from. `parts.py` gathers them over the projects of a search, with the keyword side
(`keyword.py`). Each runs inside the caller's read transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from indexer import lexical
from indexer.db import (
    ChunkFile,
    Conn,
    DefinitionPiece,
    Ranked,
    Schema,
    StoredChunk,
    like_escape,
    lookup,
)
from indexer.search.fusion import Ranking
from indexer.search.reading import Mention, best_tail

# How many HNSW neighbours the vector side considers (pgvector's hnsw.ef_search).
DEFAULT_EF_SEARCH = 400
# A line defining `name` in the usual languages (a PostgreSQL regex; names are \\w only).
DEFINITION_RE_TEMPLATE = (
    r"(^|\n)[ \t]*(export[ \t]+)?(pub[ \t]+)?(async[ \t]+)?"
    r"(def|class|function|func|fn|interface|struct|enum|trait|type|module|object)[ \t]+{name}\M"
)
SYMBOL_QUERY_RE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*[?!]?$")
# Identifiers in a query: a code-shaped word (snake_case, camelCase, $x, digits, a.b) is looked
# for verbatim; plain words are left to the rankers.
IDENTIFIER_RE = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
CODE_SHAPED_RE = re.compile(r"_|\$|\d|[a-z][A-Z]|\.|::")
MAX_VERBATIM_TERMS = 3
# Shorter than a trigram, an identifier (`d0`, `x1`) cannot be looked up through the trigram
# index: it would read every block of text, for a name too short to say much.
MIN_VERBATIM_CHARS = 3
# An identifier in more chunks than this is not distinctive: it gets no boost.
MAX_VERBATIM_CHUNKS = 40
# A question's opening ("where is", "how does", "what can I") says nothing about the code a
# model should match: the vector side embeds the rest of the question (the keyword side
# drops such words anyway). Measured on the developer questions' tuning split before it was
# kept (docs/lab-log.md).
QUESTION_OPENING_RE = re.compile(
    r"^(?:where|how|what|which)\s+"
    r"(?:is|are|do|does|did|can|could|should|would|will|was|were)"
    r"(?:\s+(?:i|we|you|one))?\s+",
    re.IGNORECASE,
)
MIN_QUESTION_WORDS = 3
# The files read to resolve the names a query mentions (`mentioned_chunks`).
MAX_NAMED_FILES = 200


def vector_query(query: str) -> str:
    """`query` as the vector side embeds it: a question without its opening ("where is the
    retry delay computed" -> "the retry delay computed"), unless fewer than three words
    would remain; anything else as it is."""
    rest = QUESTION_OPENING_RE.sub("", query, count=1)
    return rest if len(rest.split()) >= MIN_QUESTION_WORDS else query


def query_identifiers(query: str) -> list[str]:
    """The code-shaped identifiers of a query of at least `MIN_VERBATIM_CHARS` characters,
    longest first (a single-word query counts whatever its shape when it has an underscore, a
    capital inside, a digit or `$`)."""
    found = {m.group(0) for m in IDENTIFIER_RE.finditer(query)}
    shaped = sorted(
        (w for w in found if CODE_SHAPED_RE.search(w) and len(w) >= MIN_VERBATIM_CHARS),
        key=lambda w: (-len(w), w),
    )
    return shaped[:MAX_VERBATIM_TERMS]


def exact_symbol(conn: Conn, schema: Schema, query: str, filters: Mapping[str, Any]) -> list[int]:
    """The chunks holding the signature of definitions named `query` (`Invoice.total`,
    `total`, `empty?`) from the symbol table, merged ones and the first piece of a split one
    included; failing that, chunks named `query`, or holding a line that defines it."""
    name = re.split(r"::|#|\.", query)[-1]
    qualified = name != query
    dotted = re.sub(r"::|#", ".", query)
    params = {
        **filters,
        "kind": None,
        "limit": 5,
        "name": name,
        "dotted": dotted,
        "dotted_tail": "%." + like_escape(dotted),
    }
    where = "exact_qualified" if qualified else "exact"
    defined = lookup.find_symbol(conn, schema, where, "exact", params)
    ids = list(dict.fromkeys(s.chunk_id for s in defined if s.chunk_id is not None))
    if ids:
        return ids
    symbol = re.sub(r"#|::", ".", query) if "::" not in query else query
    found = lookup.symbol_matches(conn, schema, symbol, filters)
    if found:
        return found
    owner, _, name = re.sub(r"#|::", ".", query).rpartition(".")
    term = "".join(lexical.split_identifier(name))
    if not term or len(term) > lexical.MAX_TERM_CHARS:
        return []
    return lookup.symbol_defined_in(
        conn,
        schema,
        lexical.tsquery_term(term),
        DEFINITION_RE_TEMPLATE.format(name=re.escape(name)),
        owner or None,
        filters,
    )


def mentioned_chunks(
    conn: Conn, schema: Schema, mentions: Sequence[Mention], filters: Mapping[str, Any]
) -> list[ChunkFile]:
    """The chunks at the files a query names (`reading.mentions`), in the order it names
    them: each mention's files by the longest tail of its path (`reading.best_tail`), and in
    each the chunk holding the line it points at, or the file's first chunk."""
    names = sorted({m.parts[-1] for m in mentions if m.parts})
    by_name: dict[str, dict[str, int]] = {}
    for file_id, path in lookup.files_named(conn, schema, names, filters, MAX_NAMED_FILES):
        by_name.setdefault(path.rsplit("/", 1)[-1], {})[path] = file_id
    places: dict[int, tuple[int | None, str]] = {}
    for mention in mentions:
        ids = by_name.get(mention.parts[-1], {}) if mention.parts else {}
        for path in best_tail(mention, list(ids)):
            places.setdefault(ids[path], (mention.line, path))
    found = lookup.chunks_at_lines(conn, schema, [(f, line) for f, (line, _) in places.items()])
    return [ChunkFile(chunk_id, file_id, places[file_id][1]) for chunk_id, file_id in found]


def vector_param(vector: Sequence[float]) -> Any:
    import numpy as np

    return np.asarray(vector, dtype=np.float32)


def nearest(
    conn: Conn,
    schema: Schema,
    vector: Sequence[float],
    filters: Mapping[str, Any],
    ranking: Ranking,
    ef_search: int,
    iterative_scan: bool,
) -> list[Ranked]:
    """The vector side's list: chunks, their cosine similarity and files, best first."""
    return lookup.vector_candidates(
        conn,
        schema,
        vector_param(vector),
        filters,
        ranking.vector_depth,
        ef_search,
        iterative_scan=iterative_scan,
    )


def shaping_rows(
    conn: Conn, schema: Schema, ordered: Sequence[int]
) -> tuple[dict[int, StoredChunk], dict[int, DefinitionPiece]]:
    """What `fusion.collapse` reads for `ordered`: the chunks, the windows of split definitions
    among them, and the chunks holding those definitions' signatures."""
    details = lookup.chunks_by_id(conn, schema, ordered)
    pieces = lookup.definition_pieces(conn, schema, ordered)
    heads = sorted({p.head_id for p in pieces.values()} - details.keys())
    details.update(lookup.chunks_by_id(conn, schema, heads))
    return details, pieces
