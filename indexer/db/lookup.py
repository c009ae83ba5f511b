"""The store's read side for search and navigation: candidates for both rankers, chunks by
id, symbols, outlines and exact text. Every statement comes from `queries.py`; rows come
back as the frozen values of `rows.py`. Writes, schemas and sweep bookkeeping are in
`store.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from indexer.db import queries
from indexer.db.blocks import spelled
from indexer.db.rows import (
    ChunkFile,
    DefinitionPiece,
    IndexedFile,
    LineMatch,
    OutlineRow,
    RangeBlock,
    Ranked,
    StoredChunk,
    SymbolHit,
    TermStatsRow,
)
from indexer.db.schema import Conn, Schema, like_escape, typed_rows
from indexer.errors import InvalidArgument

# --- search --------------------------------------------------------------------------------


def term_stats(conn: Conn, schema: Schema) -> TermStatsRow:
    """The planner's statistics of the keyword column (rows -1 before any ANALYZE)."""
    found = typed_rows(conn, TermStatsRow, queries.KEYWORD_TERM_STATS, {"schema": schema.name})
    return found[0] if found else TermStatsRow(-1.0, None, None)


def vector_candidates(
    conn: Conn,
    schema: Schema,
    vector: Any,
    filters: Mapping[str, Any],
    limit: int,
    ef_search: int,
    *,
    iterative_scan: bool,
) -> list[Ranked]:
    """Chunks nearest to `vector` (cosine, HNSW), with their cosine similarity (of the
    nearest of each chunk's vectors) and their files, best first. Call inside a transaction:
    the `hnsw.*` settings made here last until it ends. With `iterative_scan` (the server's
    pgvector has it: `Database.iterative_scan`) a filtered search scans on until enough rows
    pass, so a filter does not thin the list out."""
    conn.execute(queries.SET_EF_SEARCH, {"ef": str(max(ef_search, limit))})
    if any(filters.values()) and iterative_scan:
        conn.execute(queries.SET_ITERATIVE_SCAN)
    # Never prepared: after a few runs on one connection PostgreSQL would switch a prepared
    # statement to its generic plan, which sorts the whole table by distance (≈ 0.7 s at 100k
    # chunks, against ≈ 5 ms through the HNSW index); planning it each time costs ≈ 0.2 ms.
    # Unfiltered, the graphs are walked (`queries.WALK_VECTOR_GRAPHS`); filtered, the
    # planner may take the files the filter leaves first, exactly.
    planner = None if any(filters.values()) else conn.execute(queries.WALK_VECTOR_GRAPHS).fetchone()
    rows = conn.execute(
        schema.sql(queries.VECTOR_CANDIDATES),
        {**filters, "vector": vector, "limit": limit},
        prepare=False,
    ).fetchall()
    if planner is not None:
        conn.execute(queries.RESTORE_PLANNER, {"seqscan": planner[0], "sort": planner[1]})
    return [Ranked(r[0], 1.0 - float(r[1]), r[2], r[3]) for r in rows]


def warm_relations(conn: Conn, schema: Schema) -> list[tuple[int, str, int]]:
    """(oid, name, bytes) of the relations a search of the project reads at random, in the
    order to warm them (`queries.WARM_RELATION_NAMES`); none where pg_prewarm is missing."""
    if conn.execute(queries.PREWARM_READY).fetchone() is None:
        return []
    rows = conn.execute(
        queries.WARM_RELATIONS, {"schema": schema.name, "names": queries.WARM_RELATION_NAMES}
    ).fetchall()
    return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]


def shared_buffers_bytes(conn: Conn) -> int:
    row = conn.execute(queries.SHARED_BUFFERS_BYTES).fetchone()
    return int(row[0]) if row else 0


def prewarm(conn: Conn, oid: int) -> int:
    """Read relation `oid` into PostgreSQL's buffers; return the blocks read."""
    row = conn.execute(queries.PREWARM, {"oid": oid}).fetchone()
    return int(row[0]) if row else 0


def keyword_candidates(
    conn: Conn, schema: Schema, params: Mapping[str, Any], terms: int
) -> list[Ranked]:
    """Chunks with their keyword score and their files, best first: the idf-weighted ranker
    over `terms` query terms. Never prepared: how many rows a tsquery matches decides the plan
    (index or scan), and a generic plan scans whole tables."""
    text = queries.keyword_candidates_idf(terms)
    planner = conn.execute(queries.READ_KEYWORD_INDEX).fetchone()
    rows = conn.execute(schema.sql(text), params, prepare=False).fetchall()
    if planner is not None:
        conn.execute(queries.RESTORE_SEQSCAN, {"seqscan": planner[0]})
    return [Ranked(r[0], float(r[1]), r[2], r[3]) for r in rows]


def symbol_matches(
    conn: Conn, schema: Schema, symbol: str, filters: Mapping[str, Any]
) -> list[int]:
    """Chunks named `symbol` (`Invoice.total` or its last part), shortest name first."""
    rows = conn.execute(
        schema.sql(queries.SYMBOL_MATCHES), {**filters, "symbol": symbol}
    ).fetchall()
    return [r[0] for r in rows]


def symbol_defined_in(
    conn: Conn,
    schema: Schema,
    term: str,
    definition_re: str,
    owner: str | None,
    filters: Mapping[str, Any],
) -> list[int]:
    """Chunks holding `term` whose text matches `definition_re` (optionally inside `owner`)."""
    params = {**filters, "term": term, "definition_re": definition_re, "owner": owner}
    rows = conn.execute(schema.sql(queries.SYMBOL_DEFINED_IN), params).fetchall()
    return [r[0] for r in rows]


def verbatim_chunks(
    conn: Conn, schema: Schema, text: str, filters: Mapping[str, Any], limit: int
) -> list[tuple[int, str | None]]:
    """(chunk id, language) of chunks holding `text` verbatim (case and all), at most `limit`;
    none while the text blocks' trigram index is missing (a bulk load under way)."""
    pattern = "%" + like_escape(text) + "%"
    spelled_pattern = "%" + spelled(text) + "%"
    params = {**filters, "pattern": pattern, "spelled_pattern": spelled_pattern, "limit": limit}
    rows = conn.execute(
        schema.sql(queries.VERBATIM_CHUNKS), {**params, "schema": schema.name}, prepare=False
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def files_named(
    conn: Conn, schema: Schema, names: Sequence[str], filters: Mapping[str, Any], limit: int
) -> list[tuple[int, str]]:
    """(file id, path) of indexed files whose name is one of `names` (a path equal to it or
    ending in `/name`), at most `limit`."""
    if not names:
        return []
    params = {
        **filters,
        "names": list(names),
        "suffixes": ["%/" + like_escape(n) for n in names],
        "limit": limit,
    }
    rows = conn.execute(schema.sql(queries.FILES_NAMED), params, prepare=False).fetchall()
    return [(r[0], r[1]) for r in rows]


def chunks_at_lines(
    conn: Conn, schema: Schema, places: Sequence[tuple[int, int | None]]
) -> list[tuple[int, int]]:
    """For each (file id, line or None) of `places`, in order: (chunk id, file id) of the
    file's chunk holding the line, or of its first chunk; a file with no chunk gives none."""
    if not places:
        return []
    params = {"files": [f for f, _ in places], "lines": [line for _, line in places]}
    rows = conn.execute(schema.sql(queries.CHUNK_AT_LINE), params).fetchall()
    return [(r[1], r[2]) for r in rows]


def chunks_by_id(conn: Conn, schema: Schema, ids: Sequence[int]) -> dict[int, StoredChunk]:
    if not ids:
        return {}
    found: list[StoredChunk] = typed_rows(
        conn, StoredChunk, schema.sql(queries.CHUNKS_BY_ID), {"ids": list(ids)}
    )
    return {c.chunk_id: c for c in found}


def chunk_files(conn: Conn, schema: Schema, ids: Sequence[int]) -> dict[int, ChunkFile]:
    """The file of each of the chunks `ids` (a chunk removed meanwhile is absent)."""
    if not ids:
        return {}
    found: list[ChunkFile] = typed_rows(
        conn, ChunkFile, schema.sql(queries.CHUNK_FILES), {"ids": list(ids)}
    )
    return {c.chunk_id: c for c in found}


def range_blocks(
    conn: Conn, schema: Schema, ranges: Sequence[tuple[str, str, int, int]]
) -> list[RangeBlock]:
    """The indexed-text blocks holding the lines of each (repo, path, first, last) range, by
    range (numbered from 1) and line; a range of a file no longer indexed has none."""
    if not ranges:
        return []
    repos, paths, firsts, lasts = (list(column) for column in zip(*ranges, strict=True))
    params = {"repos": repos, "paths": paths, "firsts": firsts, "lasts": lasts}
    return typed_rows(conn, RangeBlock, schema.sql(queries.RANGE_BLOCKS), params)


def definition_pieces(conn: Conn, schema: Schema, ids: Sequence[int]) -> dict[int, DefinitionPiece]:
    """Of the chunks `ids`, the windows of split definitions, by chunk id."""
    if not ids:
        return {}
    found: list[DefinitionPiece] = typed_rows(
        conn, DefinitionPiece, schema.sql(queries.DEFINITION_PIECES), {"ids": list(ids)}
    )
    return {p.chunk_id: p for p in found}


# --- symbols --------------------------------------------------------------------------------


def find_symbol(
    conn: Conn, schema: Schema, where: str, order: str, params: Mapping[str, Any]
) -> list[SymbolHit]:
    """Definitions matching `params` under the condition `where` (see `queries.find_symbol`).
    Never prepared: a prefix `LIKE` uses its index only when planned with the value."""
    return typed_rows(
        conn,
        SymbolHit,
        schema.sql(queries.find_symbol(where, order)),
        params,
        prepare=False,
    )


def fuzzy_symbols(conn: Conn, schema: Schema, params: Mapping[str, Any]) -> list[SymbolHit]:
    """Definitions whose name is like `params["name"]` (pg_trgm similarity), most similar first
    (see `queries.FIND_SYMBOLS_FUZZY`). Never prepared: how many names match decides the plan.
    Call inside a transaction: the planner setting made here lasts until it ends."""
    conn.execute(queries.PREFER_INDEX_SCANS)
    query = schema.sql(queries.FIND_SYMBOLS_FUZZY)
    return typed_rows(conn, SymbolHit, query, params, prepare=False)


def indexed_file(conn: Conn, schema: Schema, repo: str, path: str) -> IndexedFile | None:
    found = typed_rows(
        conn, IndexedFile, schema.sql(queries.INDEXED_FILE), {"repo": repo, "path": path}
    )
    return found[0] if found else None


def file_symbols(conn: Conn, schema: Schema, file_id: int) -> list[OutlineRow]:
    return typed_rows(conn, OutlineRow, schema.sql(queries.FILE_SYMBOLS), {"file_id": file_id})


# --- exact text -----------------------------------------------------------------------------


def check_regex(conn: Conn, pattern: str) -> None:
    """Refuse a pattern PostgreSQL cannot compile, with its reason. Call it before anything
    else in the transaction: a failed statement ends it."""
    try:
        conn.execute(queries.CHECK_REGEX, {"pattern": pattern})
    except psycopg.errors.InvalidRegularExpression as exc:
        reason = str(exc).strip().splitlines()[0]
        raise InvalidArgument(
            f"the regex {pattern!r} is not valid ({reason}): use PostgreSQL regex syntax "
            "(POSIX ERE plus \\d \\w \\s, \\m \\M for word edges), or regex: false for "
            "a literal"
        ) from None


def grep_lines(
    conn: Conn,
    schema: Schema,
    line_op: str,
    params: Mapping[str, Any],
    block: queries.BlockMatch,
    *,
    exclude_definitions: bool = False,
) -> list[LineMatch]:
    """Matching lines, at most `params["limit"]`, in no set order (see `queries.grep`). Never
    prepared: whether the trigram index helps depends on the pattern."""
    query = schema.sql(queries.grep(line_op, block, exclude_definitions=exclude_definitions))
    return typed_rows(conn, LineMatch, query, params, prepare=False)
