"""The keyword side of a search: identifier-aware query terms (`lexical`), each weighted by
its rarity (BM25's idf, from PostgreSQL's own statistics of the keyword column) and by where
it occurs (symbol > path > body). Only the rarest terms decide which rows match, within a
row budget, and every term counts in the score: the side stays bounded however common the
query's words are.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from indexer import lexical
from indexer.db import Conn, Ranked, Schema, lookup
from indexer.search.fusion import Ranking

# Term statistics move only when the table is analysed: a cache reads them at most this often.
TERM_STATS_SECONDS = 60.0


@dataclass(frozen=True)
class TermStats:
    """Row count and the share of rows holding each common term, from `pg_stats`."""

    rows: float
    shares: dict[str, float]
    floor: float  # the share assumed for a term not among the common ones
    inflections: bool = False  # a term's share is its inflections' (`Ranking.inflections`)

    @property
    def known(self) -> bool:
        return self.rows > 0 and bool(self.shares)


@dataclass(frozen=True)
class KeywordPlan:
    """What the keyword side will run: every query term with its idf, and the terms that
    decide which rows match (the rarest, within the row budget)."""

    terms: tuple[str, ...]
    idfs: tuple[float, ...]
    match_terms: tuple[str, ...]
    estimated_rows: float


class TermStatsCache:
    """Each project's term statistics, read at most once every TERM_STATS_SECONDS; the server
    holds one for its lifetime."""

    def __init__(self, seconds: float = TERM_STATS_SECONDS) -> None:
        self.seconds = seconds
        self._stats: dict[str, tuple[float, TermStats]] = {}
        self._lock = threading.Lock()

    def get(self, conn: Conn, schema: Schema) -> TermStats:
        now = time.monotonic()
        with self._lock:
            cached = self._stats.get(schema.name)
        if cached is not None and now - cached[0] < self.seconds:
            return cached[1]
        stats = read_term_stats(conn, schema)
        with self._lock:
            self._stats[schema.name] = (now, stats)
        return stats


def read_term_stats(conn: Conn, schema: Schema) -> TermStats:
    """The project's term statistics as the planner has them now."""
    row = lookup.term_stats(conn, schema)
    if row.terms is None or row.freqs is None:
        return TermStats(float(row.rows), {}, 0.0)
    rows, terms, freqs = float(row.rows), list(row.terms), [float(f) for f in row.freqs]
    shares = dict(zip(terms, freqs[: len(terms)], strict=True))
    # pg_stats appends the min and max share (and the share of empty rows) after the list:
    # every term left out of the list is rarer than the minimum.
    floor = min(freqs[len(terms) :][:1] or [min(shares.values(), default=0.0)])
    return TermStats(rows, shares, floor / 2)


def merged_stats(parts: Sequence[TermStats]) -> TermStats:
    """The statistics of several projects' keyword columns as if they were one: rows added,
    each term's share weighted by its project's rows (a project that does not list a term
    counts it at its floor). A term is as rare over a group as over the same code indexed as
    one project, so one query weighs its terms alike in every project it searches."""
    known = [s for s in parts if s.known]
    if len(known) == 1 and len(parts) == 1:
        return known[0]
    rows = sum(s.rows for s in parts)
    if not known or rows <= 0:
        return TermStats(rows, {}, 0.0)
    terms = {t for s in known for t in s.shares}
    shares = {
        t: sum(s.shares.get(t, s.floor) * s.rows for s in parts) / rows for t in sorted(terms)
    }
    floor = sum(s.floor * s.rows for s in parts) / rows
    return TermStats(rows, shares, floor)


def _share(stats: TermStats, word: str) -> float:
    forms = lexical.inflections(word) if stats.inflections else (word,)
    return min(sum(stats.shares.get(w, stats.floor if w == word else 0.0) for w in forms), 1.0)


def keyword_plan(words: Sequence[str], stats: TermStats, ranking: Ranking) -> KeywordPlan:
    """idf of each term (BM25's, from its share of rows) and the rarest terms whose estimated
    matches fit in `ranking.match_rows`; without statistics every term matches, idf 1."""
    if not stats.known:
        return KeywordPlan(tuple(words), tuple(1.0 for _ in words), tuple(words), -1.0)
    n = stats.rows
    shares = [_share(stats, w) for w in words]
    idfs = tuple(math.log(1.0 + (n - s * n + 0.5) / (s * n + 0.5)) for s in shares)
    chosen: list[str] = []
    estimated = 0.0
    for share, word in sorted(zip(shares, words, strict=True)):
        if chosen and estimated + share * n > ranking.match_rows:
            break
        chosen.append(word)
        estimated += share * n
    return KeywordPlan(tuple(words), idfs, tuple(chosen), estimated)


def keyword_candidates(
    conn: Conn,
    schema: Schema,
    query: str,
    filters: Mapping[str, Any],
    ranking: Ranking,
    term_stats: TermStatsCache | None = None,
    stats: TermStats | None = None,
    files: int = 0,
) -> list[Ranked]:
    """The keyword ranker's list for `query` with its scores, best first (see `Ranking`); the
    term statistics `stats` (a group's), or the project's from `term_stats`, or read now.

    When the rarest terms alone match rows of fewer than `files` files (a search's top_k), the
    match widens to every term of the query: an answer holds as many hits as it asks for
    whenever that many files hold the query's words. Only then does a common word's rows get
    ranked (at most `ranking.max_ranked` of them)."""
    words = lexical.query_terms(query)
    if not words:
        return []
    if stats is None:
        stats = term_stats.get(conn, schema) if term_stats else read_term_stats(conn, schema)
    if ranking.inflections:
        stats = replace(stats, inflections=True)
    plan = keyword_plan(words, stats, ranking)
    forms = [lexical.inflections(w)[1:] if ranking.inflections else () for w in plan.terms]
    chosen = set(plan.match_terms)

    def matching(terms: set[str]) -> str:
        """The match over `terms`: each with its other forms."""
        return lexical.tsquery_any(
            [x for w, f in zip(plan.terms, forms, strict=True) if w in terms for x in (w, *f)]
        )

    # Each word scores as itself, and its other forms as one more term at inflection_weight
    # of its idf; ts_rank divides an OR query's rank by its number of words, so that term's
    # idf is multiplied back: a chunk holding one form scores as if the query named it.
    others = [(idf, f) for idf, f in zip(plan.idfs, forms, strict=True) if f]
    params: dict[str, Any] = {
        **filters,
        "weights": list(ranking.weights),
        "limit": ranking.keyword_depth,
        "term_queries": [lexical.tsquery_term(w) for w in plan.terms]
        + [lexical.tsquery_any(f) for _, f in others],
        "idfs": list(plan.idfs) + [idf * ranking.inflection_weight * len(f) for idf, f in others],
        "tsquery": matching(chosen),
        "max_ranked": ranking.max_ranked,
    }
    found = lookup.keyword_candidates(conn, schema, params, len(params["term_queries"]))
    narrow = len(plan.match_terms) < len(plan.terms)
    if ranking.widen and narrow and len({r.file_id for r in found}) < files:
        params["tsquery"] = matching(set(plan.terms))
        found = lookup.keyword_candidates(conn, schema, params, len(params["term_queries"]))
    return found
