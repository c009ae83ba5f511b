"""The read path: hybrid search over one project, and reading a chunk back.

Two rankers run over the same filters (repo, language, path glob): HNSW cosine over the chunk
vectors (iterative scans keep recall under filters) and PostgreSQL full text over
identifier-aware terms, each term weighted by its rarity (from the planner's statistics) and by
where it occurs (symbol > path > body). The keyword side stays bounded: only the rarest terms
decide which rows match, and at most `max_ranked` rows get ranked. The lists are fused by
weighted reciprocal rank fusion; a query that names a symbol exactly puts that definition first;
overlapping chunks of one file collapse into the best. Results are pointers — path, lines,
symbol, score, a short snippet — never whole files. `Ranking` holds the knobs, tuned on the
docstring -> function eval in `bench/eval/` (figures in docs/performance.md).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from psycopg.rows import dict_row

from indexer import lexical, sql, store
from indexer.embed import Embedder, EmbeddingModel, ensure_same_model
from indexer.errors import InvalidArgument
from indexer.project import Project

RRF_K = 60
DEFAULT_TOP_K = 10
MAX_TOP_K = 50
SNIPPET_LINES = 12
SNIPPET_CHARS = 600
MAX_QUERY_CHARS = 2000
MAX_CONTEXT_LINES = 200
MAX_CHUNK_VIEW_CHARS = 40_000
# A line defining `name` in the usual languages (a PostgreSQL regex; names are \\w only).
DEFINITION_RE_TEMPLATE = (
    r"(^|\n)[ \t]*(export[ \t]+)?(pub[ \t]+)?(async[ \t]+)?"
    r"(def|class|function|func|fn|interface|struct|enum|trait|type|module|object)[ \t]+{name}\M"
)
SYMBOL_QUERY_RE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*$")


@dataclass(frozen=True)
class Ranking:
    """How the two rankers are run and fused; the defaults are the eval-tuned ones.

    `*_depth` is how many candidates each ranker hands to fusion (at least 3 x top_k);
    `field_weights` are ts_rank's {D, C, B, A} (A: symbol, B: path, C: body); `match_rows` is the
    estimated number of rows the keyword match may cover (rarest terms first; at least one term
    always matches) and `max_ranked` a hard cap on rows ranked, for statistics that are stale.
    """

    vector_weight: float = 1.0
    keyword_weight: float = 0.35
    vector_depth: int = 30
    keyword_depth: int = 200
    rrf_k: int = RRF_K
    stopwords: bool = True
    idf: bool = True
    prefix: bool = False
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
    """Each ranker's list of chunk ids, best first, and the chunks named exactly by the query."""

    vector: list[int] = field(default_factory=list)
    keyword: list[int] = field(default_factory=list)
    exact: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk_id: int
    repo: str
    path: str
    absolute_path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str | None
    score: float
    snippet: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ChunkView:
    chunk_id: int
    repo: str
    path: str
    absolute_path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str | None
    text: str
    text_start_line: int  # first line of `text` (earlier than start_line with context)
    text_end_line: int
    note: str | None = None  # e.g. the file changed on disk since it was indexed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def glob_to_regex(glob: str) -> str:
    """A POSIX regex for a path glob: `**` spans folders, `*` and `?` stay within one.

    A glob without a slash matches the file name at any depth (`*.py`), as in .gitignore.
    """
    out = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch) if not ch.isalnum() else ch)
        i += 1
    body = "".join(out)
    return ("^(.*/)?" if "/" not in glob.rstrip("/") else "^") + body + "$"


def _check_arguments(query: str, top_k: int, path_glob: str | None) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query is empty: describe the code you are looking for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"query is {len(query)} characters long: keep it under {MAX_QUERY_CHARS}"
        )
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidArgument(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    if path_glob is not None and (not path_glob.strip() or len(path_glob) > 500):
        raise InvalidArgument("path_glob must be a non-empty glob such as 'src/**/*.py'")
    return query.strip()


def snippet_of(content: str) -> str:
    lines = content.splitlines()[:SNIPPET_LINES]
    text = "\n".join(lines)
    if len(text) > SNIPPET_CHARS:
        text = text[:SNIPPET_CHARS].rstrip() + " …"
    elif len(content.splitlines()) > SNIPPET_LINES:
        text += "\n…"
    return text


def _absolute(project: Project, repo: str, path: str) -> str:
    root = project.root(repo)
    return str(root.path / path) if root else path


def fuse(candidates: Candidates, ranking: Ranking = DEFAULT_RANKING) -> dict[int, float]:
    """Weighted reciprocal rank fusion of the two lists (each cut at its depth); chunks named
    exactly by the query score above everything else, in their order."""
    scores: dict[int, float] = {}
    for ids, weight, depth in (
        (candidates.vector, ranking.vector_weight, ranking.vector_depth),
        (candidates.keyword, ranking.keyword_weight, ranking.keyword_depth),
    ):
        for rank, chunk_id in enumerate(ids[:depth], start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (ranking.rrf_k + rank)
    if candidates.exact:
        top = max(scores.values(), default=0.0)
        for offset, chunk_id in enumerate(candidates.exact):
            scores[chunk_id] = top + 1.0 / (ranking.rrf_k + 1 + offset)
    return scores


def collapse(
    ordered: Sequence[int], details: Mapping[int, dict[str, Any]], top_k: int
) -> list[dict[str, Any]]:
    """The first `top_k` rows of `ordered`, skipping any that overlaps a better one in its file."""
    hits: list[dict[str, Any]] = []
    for chunk_id in ordered:
        row = details.get(chunk_id)
        if row is None or any(_overlaps(row, kept) for kept in hits):
            continue
        hits.append(row)
        if len(hits) == top_k:
            break
    return hits


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
    row = conn.execute(sql.KEYWORD_TERM_STATS, {"schema": project}).fetchone()
    if row is None or row[1] is None or row[2] is None:
        return TermStats(float(row[0]) if row else -1.0, {}, 0.0)
    rows, terms, freqs = float(row[0]), list(row[1]), [float(f) for f in row[2]]
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


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["repo"] == b["repo"]
        and a["path"] == b["path"]
        and a["start_line"] <= b["end_line"]
        and b["start_line"] <= a["end_line"]
    )


def search_code(
    conn: store.Conn,
    project: Project,
    embedder: Embedder | None,
    query: str,
    *,
    top_k: int = DEFAULT_TOP_K,
    repo: str | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    ef_search: int = 400,
    mode: str = "hybrid",
    ranking: Ranking = DEFAULT_RANKING,
) -> list[SearchHit]:
    """Ranked hits for `query` in `project`; `mode` is hybrid, vector or keyword."""
    query = _check_arguments(query, top_k, path_glob)
    if mode not in ("hybrid", "vector", "keyword"):
        raise InvalidArgument(f"mode must be hybrid, vector or keyword, got {mode!r}")
    if repo is not None and project.root(repo) is None:
        names = ", ".join(r.name for r in project.roots)
        raise InvalidArgument(f"repo {repo!r} is not a root of this project: use one of {names}")
    filters = {
        "repo": repo,
        "language": language.lower() if language else None,
        "path_re": glob_to_regex(path_glob) if path_glob else None,
    }
    with conn.transaction():
        candidates = gather_candidates(
            conn, project, embedder, query, filters, mode, ef_search, ranking, top_k * 3
        )
        scores = fuse(candidates, _at_least(ranking, top_k * 3))
        ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))[: top_k * 3]
        details = _chunks_by_id(conn, project.name, ordered)
    hits = collapse(ordered, details, top_k)
    return [
        SearchHit(
            chunk_id=row["chunk_id"],
            repo=row["repo"],
            path=row["path"],
            absolute_path=_absolute(project, row["repo"], row["path"]),
            start_line=row["start_line"],
            end_line=row["end_line"],
            symbol=row["symbol"],
            kind=row["kind"],
            language=row["language"],
            score=round(scores[row["chunk_id"]], 6),
            snippet=snippet_of(row["content"]),
        )
        for row in hits
    ]


def _at_least(ranking: Ranking, depth: int) -> Ranking:
    if ranking.vector_depth >= depth and ranking.keyword_depth >= depth:
        return ranking
    return replace(
        ranking,
        vector_depth=max(ranking.vector_depth, depth),
        keyword_depth=max(ranking.keyword_depth, depth),
    )


def gather_candidates(
    conn: store.Conn,
    project: Project,
    embedder: Embedder | None,
    query: str,
    filters: Mapping[str, Any],
    mode: str,
    ef_search: int,
    ranking: Ranking = DEFAULT_RANKING,
    min_depth: int = 0,
) -> Candidates:
    """Both rankers' lists (as `mode` asks) and the exact symbol matches, under `filters`.

    Runs inside the caller's transaction: the `hnsw.*` settings are transaction-local.
    """
    ranking = _at_least(ranking, min_depth)
    vector: list[int] = []
    keyword: list[int] = []
    if mode in ("hybrid", "vector"):
        if embedder is None:
            raise InvalidArgument("vector search needs an embedder")
        recorded = store.get_meta(conn, project.name, "embedding")
        if recorded is not None:
            ensure_same_model(EmbeddingModel.from_dict(recorded), embedder.identity, project.name)
        query_vector = embedder.embed_query(query)
        depth = ranking.vector_depth
        conn.execute(sql.SET_EF_SEARCH, {"ef": str(max(ef_search, depth))})
        if any(filters.values()) and conn.execute(sql.PGVECTOR_HAS_ITERATIVE_SCAN).fetchone():
            conn.execute(sql.SET_ITERATIVE_SCAN)
        rows = conn.execute(
            store.statement(sql.VECTOR_CANDIDATES, project.name),
            {**filters, "vector": _vector_param(query_vector), "limit": depth},
        ).fetchall()
        vector = [r[0] for r in rows]
    if mode in ("hybrid", "keyword"):
        keyword = _keyword_candidates(conn, project.name, query, filters, ranking)
    exact = (
        _exact_symbol(conn, project.name, query, filters) if SYMBOL_QUERY_RE.match(query) else []
    )
    return Candidates(vector, keyword, exact)


def _exact_symbol(
    conn: store.Conn, project: str, query: str, filters: Mapping[str, Any]
) -> list[int]:
    """Chunks named `query` (`Invoice.total`, `total`); failing that, the chunks where it is
    defined although merged into another chunk (`def total` inside the `Invoice` chunk)."""
    symbol = re.sub(r"#|::", ".", query) if "::" not in query else query
    found = [
        r[0]
        for r in conn.execute(
            store.statement(sql.SYMBOL_MATCHES, project), {**filters, "symbol": symbol}
        )
    ]
    if found:
        return found
    owner, _, name = re.sub(r"#|::", ".", query).rpartition(".")
    term = "".join(lexical.split_identifier(name))
    if not term or len(term) > lexical.MAX_TERM_CHARS:
        return []
    return [
        r[0]
        for r in conn.execute(
            store.statement(sql.SYMBOL_DEFINED_IN, project),
            {
                **filters,
                "term": lexical.tsquery_term(term),
                "definition_re": DEFINITION_RE_TEMPLATE.format(name=re.escape(name)),
                "owner": owner or None,
            },
        )
    ]


def _keyword_candidates(
    conn: store.Conn, project: str, query: str, filters: Mapping[str, Any], ranking: Ranking
) -> list[int]:
    words = lexical.query_terms(query, stopwords=ranking.stopwords)
    if not words:
        return []
    weights = list(ranking.field_weights)
    if not ranking.idf:
        rows = conn.execute(
            store.statement(sql.KEYWORD_CANDIDATES, project),
            {
                **filters,
                "weights": weights,
                "tsquery": lexical.tsquery_any(words, prefix=ranking.prefix),
                "limit": ranking.keyword_depth,
            },
            prepare=False,
        ).fetchall()
        return [r[0] for r in rows]
    plan = keyword_plan(words, term_stats(conn, project), ranking)
    rows = conn.execute(
        store.statement(sql.keyword_candidates_idf(len(plan.terms)), project),
        {
            **filters,
            "weights": weights,
            "norm": ranking.normalization,
            "term_queries": [lexical.tsquery_term(w, prefix=ranking.prefix) for w in plan.terms],
            "idfs": list(plan.idfs),
            "tsquery": lexical.tsquery_any(plan.match_terms, prefix=ranking.prefix),
            "max_ranked": ranking.max_ranked,
            "limit": ranking.keyword_depth,
        },
        # Never a generic plan: how many rows a tsquery matches decides the plan (index or scan).
        prepare=False,
    ).fetchall()
    return [r[0] for r in rows]


def _vector_param(vector: Sequence[float]) -> Any:
    import numpy as np

    return np.asarray(vector, dtype=np.float32)


def _chunks_by_id(conn: store.Conn, project: str, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(store.statement(sql.CHUNKS_BY_ID, project), {"ids": list(ids)})
        return {row["chunk_id"]: row for row in cur.fetchall()}


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None


def get_chunk(
    conn: store.Conn, project: Project, chunk_id: int, context_lines: int = 0
) -> ChunkView:
    """The stored text of one chunk, optionally with lines around it read from the file.

    Only files under one of the project's roots are ever read: the path comes from the index,
    is resolved, and must stay inside its root.
    """
    if not isinstance(chunk_id, int) or isinstance(chunk_id, bool) or chunk_id < 1:
        raise InvalidArgument(
            f"chunk_id must be a positive integer from search_code, got {chunk_id!r}"
        )
    if not isinstance(context_lines, int) or not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidArgument(f"context_lines must be an integer from 0 to {MAX_CONTEXT_LINES}")
    row = _chunks_by_id(conn, project.name, [chunk_id]).get(chunk_id)
    if row is None:
        raise InvalidArgument(
            f"no chunk {chunk_id} in this project: it may have been re-indexed; "
            "run search_code again for fresh ids"
        )
    root = project.root(row["repo"])
    absolute = _absolute(project, row["repo"], row["path"])
    text, first, last, note = row["content"], row["start_line"], row["end_line"], None
    if context_lines and root is not None:
        target = (root.path / row["path"]).resolve()
        lines = _read_lines(target) if target.is_relative_to(root.path.resolve()) else None
        if lines is None:
            note = "the file could not be read now; showing the indexed text only"
        else:
            stored = row["content"].splitlines()
            current = lines[row["start_line"] - 1 : row["end_line"]]
            if current != stored:
                note = "the file changed since it was indexed; lines shown are as they are now"
            first = max(1, row["start_line"] - context_lines)
            last = min(len(lines), row["end_line"] + context_lines)
            text = "\n".join(lines[first - 1 : last])
    if len(text) > MAX_CHUNK_VIEW_CHARS:
        text = text[:MAX_CHUNK_VIEW_CHARS] + "\n… (cut: ask for fewer context_lines)"
    return ChunkView(
        chunk_id=row["chunk_id"],
        repo=row["repo"],
        path=row["path"],
        absolute_path=absolute,
        start_line=row["start_line"],
        end_line=row["end_line"],
        symbol=row["symbol"],
        kind=row["kind"],
        language=row["language"],
        text=text,
        text_start_line=first,
        text_end_line=last,
        note=note,
    )
