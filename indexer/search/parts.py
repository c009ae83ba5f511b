"""A search over several projects at once (a group), as one search over one index would run.

Each project is a part: its schema, its filters, its place among the parts. A chunk's id is
made unique across the parts by its part's place in the high bits (`fusion.global_id`; the
first part's ids are its own, so a search of one project is exactly what it always was).
Every list is gathered part by part and merged by score before fusion, and the keyword side
weighs a term by its rarity over every part together (`keyword.merged_stats`): a query over
a group ranks its chunks as it would if the same code were indexed as one project.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkers import has_symbols
from indexer.db import ChunkFile, Conn, DefinitionPiece, Ranked, Schema, StoredChunk, lookup
from indexer.search.candidates import (
    MAX_VERBATIM_CHUNKS,
    SYMBOL_QUERY_RE,
    exact_symbol,
    mentioned_chunks,
    nearest,
    query_identifiers,
    shaping_rows,
)
from indexer.search.fusion import Candidates, Ranking, files_of, global_id, part_of, scored
from indexer.search.keyword import TermStatsCache, keyword_candidates, merged_stats, read_term_stats
from indexer.search.reading import Mention


@dataclass(frozen=True)
class Part:
    """One project of a search: its place among the parts, its schema, its filters."""

    index: int
    schema: Schema
    filters: Mapping[str, Any]


def _global(part: Part, ranked: Iterable[Ranked]) -> list[Ranked]:
    return [
        Ranked(global_id(part.index, r.chunk_id), r.score, global_id(part.index, r.file_id), r.path)
        for r in ranked
    ]


def _merged(lists: Sequence[list[Ranked]], depth: int) -> list[Ranked]:
    """Several parts' lists as one, best first, cut at `depth`. The sort is stable, so one
    part's list keeps its own order (ties included)."""
    if len(lists) == 1:
        return lists[0][:depth]
    merged = [r for found in lists for r in found]
    merged.sort(key=lambda r: -r.score)
    return merged[:depth]


def other_candidates(
    conn: Conn,
    parts: Sequence[Part],
    query: str,
    ranking: Ranking,
    keyword: bool = True,
    term_stats: TermStatsCache | None = None,
    mentions: Sequence[Mention] = (),
    verbatim: bool = True,
    top_k: int = 0,
) -> Candidates:
    """Every list but the vector one, over every part: the keyword list (unless `keyword` is
    False), the exact symbol matches, the verbatim identifiers (with the keyword side) and
    the chunks at the files the query names (`mentions`); without `verbatim`, no verbatim
    identifiers (a long query's). The keyword list reaches `top_k` files whenever the
    query's words are in that many (`keyword.keyword_candidates`)."""
    found: list[Ranked] = []
    if keyword:
        stats = merged_stats(
            [
                term_stats.get(conn, p.schema) if term_stats else read_term_stats(conn, p.schema)
                for p in parts
            ]
        )
        lists = [
            _global(
                p,
                keyword_candidates(conn, p.schema, query, p.filters, ranking, None, stats, top_k),
            )
            for p in parts
        ]
        found = _merged(lists, ranking.keyword_depth)
    exact: list[int] = []
    if SYMBOL_QUERY_RE.match(query):
        for p in parts:
            exact.extend(
                global_id(p.index, c) for c in exact_symbol(conn, p.schema, query, p.filters)
            )
    lifted = verbatim_code(conn, parts, query) if keyword and verbatim else []
    named: list[ChunkFile] = []
    if mentions:
        for p in parts:
            named.extend(
                ChunkFile(global_id(p.index, c.chunk_id), global_id(p.index, c.file_id), c.path)
                for c in mentioned_chunks(conn, p.schema, mentions, p.filters)
            )
    keyword_ids, keyword_scores = scored(found)
    files = files_of(found) | {c.chunk_id: c for c in named}
    return Candidates(
        [],
        keyword_ids,
        exact,
        lifted,
        keyword_scores=keyword_scores,
        files=files,
        mentioned=[c.chunk_id for c in named],
    )


def verbatim_code(conn: Conn, parts: Sequence[Part], query: str) -> list[int]:
    """Code chunks (files with a grammar, not prose) holding an identifier of the query as
    written, for identifiers found in at most MAX_VERBATIM_CHUNKS chunks of all the parts
    together."""
    chosen: list[int] = []
    for word in query_identifiers(query):
        rows: list[tuple[int, str | None]] = []
        for p in parts:
            found = lookup.verbatim_chunks(conn, p.schema, word, p.filters, MAX_VERBATIM_CHUNKS + 1)
            rows.extend((global_id(p.index, cid), language) for cid, language in found)
            if len(rows) > MAX_VERBATIM_CHUNKS:
                break
        if len(rows) > MAX_VERBATIM_CHUNKS:
            continue
        chosen.extend(cid for cid, language in rows if has_symbols(language) and cid not in chosen)
    return chosen


def nearest_over(
    conn: Conn,
    parts: Sequence[Part],
    vector: Sequence[float],
    ranking: Ranking,
    ef_search: int,
    iterative_scan: bool,
) -> list[Ranked]:
    """The vector side's list over every part: each part's nearest, merged by similarity."""
    return _merged(
        [
            _global(
                p, nearest(conn, p.schema, vector, p.filters, ranking, ef_search, iterative_scan)
            )
            for p in parts
        ],
        ranking.vector_depth,
    )


def _by_part(parts: Sequence[Part], ids: Iterable[int]) -> list[tuple[Part, list[int]]]:
    """`ids` (global) grouped by their part, as each part's own ids."""
    grouped: dict[int, list[int]] = {}
    mask = global_id(1, 0) - 1
    for gid in ids:
        grouped.setdefault(part_of(gid), []).append(gid & mask)
    return [(parts[index], local) for index, local in sorted(grouped.items())]


def chunk_files(conn: Conn, parts: Sequence[Part], ids: Sequence[int]) -> dict[int, ChunkFile]:
    """The file of each of the chunks `ids` (global ids, and global file ids)."""
    found: dict[int, ChunkFile] = {}
    for part, local in _by_part(parts, ids):
        for cid, f in lookup.chunk_files(conn, part.schema, local).items():
            gid = global_id(part.index, cid)
            found[gid] = ChunkFile(gid, global_id(part.index, f.file_id), f.path)
    return found


def shaping_rows_over(
    conn: Conn, parts: Sequence[Part], ordered: Sequence[int]
) -> tuple[dict[int, StoredChunk], dict[int, DefinitionPiece]]:
    """`candidates.shaping_rows` over every part: the rows by global id (each row keeps its
    own chunk id, the one its project's tools know it by), the pieces with global heads."""
    details: dict[int, StoredChunk] = {}
    pieces: dict[int, DefinitionPiece] = {}
    for part, local in _by_part(parts, ordered):
        rows, split = shaping_rows(conn, part.schema, local)
        details.update((global_id(part.index, cid), row) for cid, row in rows.items())
        for cid, piece in split.items():
            gid = global_id(part.index, cid)
            head = global_id(part.index, piece.head_id)
            pieces[gid] = DefinitionPiece(gid, head, piece.start_line, piece.end_line)
    return details, pieces
