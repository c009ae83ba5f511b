"""Ranking: the keyword ranker's plan, and how the two rankers' lists become one order.

The keyword side weighs each query term by its rarity (BM25's idf, from PostgreSQL's own
statistics of the keyword column, read at most once a minute) and by where it occurs
(symbol > path > body); only the rarest terms decide which rows match, within a row budget,
so the keyword side stays bounded. The vector and keyword lists are fused by their scores (a
convex combination of each list's normalised scores; weighted reciprocal rank fusion is the
alternative); chunks named exactly by the query come first; the windows of a split
definition collapse into one hit for the definition, from its signature, and overlapping hits
of one file into the best. `Ranking` holds the knobs, tuned on held-out queries of the
evals in `bench/eval/` (figures in docs/performance.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from indexer import lexical
from indexer.db import lookup, rows, store

RRF_K = 60


@dataclass(frozen=True)
class Ranking:
    """How the two rankers are run and fused; the defaults are the eval-tuned ones.

    `*_depth` is how many candidates each ranker hands to fusion (at least 3 x top_k);
    `field_weights` are ts_rank's {D, C, B, A} (A: symbol, B: path, C: body); `match_rows` is the
    estimated number of rows the keyword match may cover (rarest terms first; at least one term
    always matches) and `max_ranked` a hard cap on rows ranked, for statistics that are stale.
    """

    # "score": each list's scores normalised (cosine by min-max over the list, the keyword
    # score by the list's best) and summed, the vector side's at `vector_share`, the keyword
    # side's at the rest. "rank": weighted reciprocal rank fusion, by `*_weight` and `rrf_k`.
    fusion: str = "score"
    vector_share: float = 0.55
    # Cosine is normalised between the vector list's first and its candidate at this rank (the
    # list's last at the default depth): a deeper list, for a larger top_k, ranks its extra
    # candidates below 0 instead of moving every score, so asking for more hits never
    # reorders the first ones.
    vector_floor_rank: int = 30
    vector_weight: float = 1.0
    keyword_weight: float = 0.35
    vector_depth: int = 30
    keyword_depth: int = 200
    rrf_k: int = RRF_K
    # Each ranker's first candidate is lifted to at least this rank of the fused order (0: not
    # lifted): a chunk only one ranker finds can then still surface.
    keyword_slot: int = 0
    vector_slot: int = 0
    # How many fused candidates, in multiples of top_k, are read back and collapsed into hits.
    shortlist: int = 3
    stopwords: bool = True
    idf: bool = True
    prefix: bool = False
    # Runs of 2..compounds adjacent query words also match joined, as a compound identifier
    # (0: off).
    compounds: int = 0
    field_weights: tuple[float, float, float, float] = (0.05, 0.2, 0.5, 1.0)
    normalization: int = 0
    match_rows: int = 5000
    max_ranked: int = 20_000


DEFAULT_RANKING = Ranking()


@dataclass(frozen=True)
class KeywordPlan:
    """What the keyword side will run: every query term with its idf, and the terms that
    decide which rows match (the rarest, within the row budget)."""

    terms: tuple[str, ...]
    idfs: tuple[float, ...]
    match_terms: tuple[str, ...]
    estimated_rows: float


@dataclass(frozen=True)
class Candidates:
    """Each ranker's list of chunk ids, best first, the chunks named exactly by the query, and
    the code chunks holding an identifier of the query verbatim."""

    vector: list[int] = field(default_factory=list)
    keyword: list[int] = field(default_factory=list)
    exact: list[int] = field(default_factory=list)
    verbatim: list[int] = field(default_factory=list)
    # Each ranker's scores, by position in its list: cosine similarity, keyword score.
    vector_scores: list[float] = field(default_factory=list)
    keyword_scores: list[float] = field(default_factory=list)


def scored(pairs: Sequence[tuple[int, float]]) -> tuple[list[int], list[float]]:
    """A ranker's (id, score) list as its ids and its scores."""
    return [cid for cid, _ in pairs], [score for _, score in pairs]


def fuse(candidates: Candidates, ranking: Ranking = DEFAULT_RANKING) -> dict[int, float]:
    """The two lists (each cut at its depth) fused by `ranking.fusion`, each ranker's first
    candidate lifted to its slot when one is set; code chunks holding an identifier of the
    query verbatim come above the rest (in their fused order), and chunks named exactly by the
    query above everything, in their order."""
    if ranking.fusion == "score":
        scores = _score_fusion(candidates, ranking)
    elif ranking.fusion == "rank":
        scores = _rank_fusion(candidates, ranking)
    else:
        raise ValueError(f"fusion must be score or rank, got {ranking.fusion!r}")
    # The higher slot last, so that lifting the other does not push it down again.
    for slot, ids in sorted(
        ((ranking.keyword_slot, candidates.keyword), (ranking.vector_slot, candidates.vector)),
        key=lambda pair: pair[0],
    ):
        if slot and ids:
            _lift(scores, ids[0], slot)
    lift_named(scores, candidates, ranking)
    return scores


def _rank_fusion(candidates: Candidates, ranking: Ranking) -> dict[int, float]:
    scores: dict[int, float] = {}
    for ids, weight, depth in (
        (candidates.vector, ranking.vector_weight, ranking.vector_depth),
        (candidates.keyword, ranking.keyword_weight, ranking.keyword_depth),
    ):
        for rank, chunk_id in enumerate(ids[:depth], start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (ranking.rrf_k + rank)
    return scores


def _score_fusion(candidates: Candidates, ranking: Ranking) -> dict[int, float]:
    """A convex combination of the two lists' normalised scores: a chunk the vector side puts
    far ahead of the rest stays ahead, where rank fusion would count it one rank ahead. Cosine
    is normalised by min-max over its list, up to `vector_floor_rank` (its spread differs from
    query to query), the keyword score by the list's best (its floor is 0); a chunk absent
    from a list gets 0 there."""
    scores: dict[int, float] = {}
    for ids, values, share, depth, floor in (
        (candidates.vector, candidates.vector_scores, ranking.vector_share,
         ranking.vector_depth, None),
        (candidates.keyword, candidates.keyword_scores, 1.0 - ranking.vector_share,
         ranking.keyword_depth, 0.0),
    ):  # fmt: skip
        ids, values = ids[:depth], values[:depth]
        if not ids:
            continue
        if len(values) != len(ids):
            raise ValueError("score fusion needs each ranker's scores beside its ids")
        top = max(values)
        low = min(values[: ranking.vector_floor_rank]) if floor is None else floor
        span = top - low
        for chunk_id, value in zip(ids, values, strict=True):
            normalised = (value - low) / span if span > 0 else 1.0
            scores[chunk_id] = scores.get(chunk_id, 0.0) + share * normalised
    return scores


def lift_named(scores: dict[int, float], candidates: Candidates, ranking: Ranking) -> None:
    """Put the chunks holding an identifier of the query verbatim above the fused rest (in
    their fused order), and those named exactly by the query above everything."""
    if candidates.verbatim:
        top = max(scores.values(), default=0.0)
        fused = sorted(candidates.verbatim, key=lambda cid: (-scores.get(cid, 0.0), cid))
        for offset, chunk_id in enumerate(fused):
            scores[chunk_id] = top + 0.5 / (ranking.rrf_k + 1 + offset)
    if candidates.exact:
        top = max(scores.values(), default=0.0)
        for offset, chunk_id in enumerate(candidates.exact):
            scores[chunk_id] = top + 1.0 / (ranking.rrf_k + 1 + offset)


def _lift(scores: dict[int, float], chunk_id: int, slot: int) -> None:
    """Raise `chunk_id`'s score, when lower, to just above the chunk now at rank `slot`."""
    ahead = sorted((v for c, v in scores.items() if c != chunk_id), reverse=True)
    if len(ahead) < slot or scores[chunk_id] > ahead[slot - 1]:
        return
    below = ahead[slot - 1]
    above = ahead[slot - 2] if slot > 1 else math.inf
    scores[chunk_id] = (
        (below + above) / 2 if below < above < math.inf else math.nextafter(below, math.inf)
    )


def collapse(
    ordered: Sequence[int],
    details: Mapping[int, rows.StoredChunk],
    top_k: int,
    pieces: Mapping[int, rows.DefinitionPiece] | None = None,
) -> list[tuple[rows.StoredChunk, int]]:
    """The first `top_k` hits of `ordered`, each with the id of the chunk whose score ranks it,
    skipping any that overlaps a better one in its file. A window of a split definition (in
    `pieces`) stands for the whole definition: the hit is the chunk holding its signature,
    spanning the definition's lines, ranked by its best window."""
    hits: list[tuple[rows.StoredChunk, int]] = []
    for chunk_id in ordered:
        row = details.get(chunk_id)
        if row is None:
            continue
        piece = (pieces or {}).get(chunk_id)
        if piece is not None:
            head = details.get(piece.head_id, row)
            # The head may hold glue before the definition (merged into it): cut that off.
            skip = max(0, piece.start_line - head.start_line)
            content = "\n".join(head.content.split("\n")[skip:])
            row = replace(
                head, start_line=piece.start_line, end_line=piece.end_line, content=content
            )
        if any(_overlaps(row, kept) for kept, _ in hits):
            continue
        hits.append((row, chunk_id))
        if len(hits) == top_k:
            break
    return hits


def shaping_rows(
    conn: store.Conn, project: str, ordered: Sequence[int]
) -> tuple[dict[int, rows.StoredChunk], dict[int, rows.DefinitionPiece]]:
    """What `collapse` reads for `ordered`: the chunks, the windows of split definitions among
    them, and the chunks holding those definitions' signatures."""
    details = lookup.chunks_by_id(conn, project, ordered)
    pieces = lookup.definition_pieces(conn, project, ordered)
    heads = sorted({p.head_id for p in pieces.values()} - details.keys())
    details.update(lookup.chunks_by_id(conn, project, heads))
    return details, pieces


@dataclass(frozen=True)
class TermStats:
    """Row count and the share of rows holding each common term, from `pg_stats`."""

    rows: float
    shares: dict[str, float]
    floor: float  # the share assumed for a term not among the common ones

    @property
    def known(self) -> bool:
        return self.rows > 0 and bool(self.shares)


# Term statistics move only when the table is analysed: read them at most once a minute.
TERM_STATS_SECONDS = 60.0
_term_stats_cache: dict[str, tuple[float, TermStats]] = {}


def term_stats(conn: store.Conn, project: str, *, fresh: bool = False) -> TermStats:
    """The project's term statistics, cached for TERM_STATS_SECONDS unless `fresh`."""
    now = time.monotonic()
    cached = _term_stats_cache.get(project)
    if cached is not None and not fresh and now - cached[0] < TERM_STATS_SECONDS:
        return cached[1]
    stats = _read_term_stats(conn, project)
    _term_stats_cache[project] = (now, stats)
    return stats


def _read_term_stats(conn: store.Conn, project: str) -> TermStats:
    row = lookup.term_stats(conn, project)
    if row.terms is None or row.freqs is None:
        return TermStats(float(row.rows), {}, 0.0)
    rows, terms, freqs = float(row.rows), list(row.terms), [float(f) for f in row.freqs]
    shares = dict(zip(terms, freqs[: len(terms)], strict=True))
    # pg_stats appends the min and max share (and the share of empty rows) after the list:
    # every term left out of the list is rarer than the minimum.
    floor = min(freqs[len(terms) :][:1] or [min(shares.values(), default=0.0)])
    return TermStats(rows, shares, floor / 2)


def _share(stats: TermStats, word: str, prefix: bool) -> float:
    share = stats.shares.get(word, stats.floor)
    base = lexical.stem(word) if prefix else word
    if base != word:
        share = max(share, sum(v for t, v in stats.shares.items() if t.startswith(base)))
    return min(share, 1.0)


def keyword_plan(words: Sequence[str], stats: TermStats, ranking: Ranking) -> KeywordPlan:
    """idf of each term (BM25's, from its share of rows) and the rarest terms whose estimated
    matches fit in `ranking.match_rows`; without statistics every term matches, idf 1."""
    if not stats.known:
        return KeywordPlan(tuple(words), tuple(1.0 for _ in words), tuple(words), -1.0)
    n = stats.rows
    shares = [_share(stats, w, ranking.prefix) for w in words]
    idfs = tuple(math.log(1.0 + (n - s * n + 0.5) / (s * n + 0.5)) for s in shares)
    chosen: list[str] = []
    estimated = 0.0
    for share, word in sorted(zip(shares, words, strict=True)):
        if chosen and estimated + share * n > ranking.match_rows:
            break
        chosen.append(word)
        estimated += share * n
    return KeywordPlan(tuple(words), idfs, tuple(chosen), estimated)


def _overlaps(a: rows.StoredChunk, b: rows.StoredChunk) -> bool:
    return (
        a.repo == b.repo
        and a.path == b.path
        and a.start_line <= b.end_line
        and b.start_line <= a.end_line
    )


def at_least(ranking: Ranking, depth: int) -> Ranking:
    if ranking.vector_depth >= depth and ranking.keyword_depth >= depth:
        return ranking
    return replace(
        ranking,
        vector_depth=max(ranking.vector_depth, depth),
        keyword_depth=max(ranking.keyword_depth, depth),
    )


def keyword_candidates(
    conn: store.Conn, project: str, query: str, filters: Mapping[str, Any], ranking: Ranking
) -> list[tuple[int, float]]:
    """The keyword ranker's list for `query` with its scores, best first (see `Ranking`)."""
    words = lexical.query_terms(query, stopwords=ranking.stopwords, compounds=ranking.compounds)
    if not words:
        return []
    params: dict[str, Any] = {
        **filters,
        "weights": list(ranking.field_weights),
        "limit": ranking.keyword_depth,
    }
    if not ranking.idf:
        params["tsquery"] = lexical.tsquery_any(words, prefix=ranking.prefix)
        return lookup.keyword_candidates(conn, project, params, None)
    plan = keyword_plan(words, term_stats(conn, project), ranking)
    params.update(
        norm=ranking.normalization,
        term_queries=[lexical.tsquery_term(w, prefix=ranking.prefix) for w in plan.terms],
        idfs=list(plan.idfs),
        tsquery=lexical.tsquery_any(plan.match_terms, prefix=ranking.prefix),
        max_ranked=ranking.max_ranked,
    )
    return lookup.keyword_candidates(conn, project, params, len(plan.terms))
