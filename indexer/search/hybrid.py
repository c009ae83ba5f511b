"""Hybrid search over one project: `search_code`.

Two rankers run over the same filters (repo, language, path glob): HNSW cosine over the chunk
vectors and PostgreSQL full text over identifier-aware terms (`keyword.py` keeps that side
bounded; `candidates.py` gathers each list; `fusion.py` makes them one order, in which files
that are not code — tests, docs, examples — count for less unless the query asks for them:
`roles.py`). A query that names a symbol exactly puts that definition first. A file is one
hit, at its best chunk, its other matches folded into it as `also` ranges (or, `by_file=False`,
a hit per chunk). Results are pointers — path, lines, symbol, score, a short snippet — never
whole files. With no embedder (model-free) the hybrid is its keyword side: keyword, exact-name
and verbatim-identifier lists fused and lifted as ever, with no vector list, which is what a
first index serves before its vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from indexer import clock, truncate
from indexer.db import ChunkFile, Conn, Database, Schema, store
from indexer.embed import Embedder, EmbeddingModel, ensure_same_model
from indexer.errors import InvalidArgument
from indexer.project import Project
from indexer.search.candidates import DEFAULT_EF_SEARCH, SYMBOL_QUERY_RE, vector_query
from indexer.search.chunks import located
from indexer.search.evidence import add_report_evidence
from indexer.search.filters import Filters
from indexer.search.fusion import (
    DEFAULT_RANKING,
    SHORTLIST,
    Candidates,
    Hit,
    Ranking,
    by_file,
    chunk_hits,
    collapse,
    files_of,
    fuse,
    ordered,
    part_of,
    scored,
    shortlist,
)
from indexer.search.keyword import TermStatsCache
from indexer.search.parts import (
    Part,
    chunk_files,
    nearest_over,
    other_candidates,
    shaping_rows_over,
)
from indexer.search.query_cache import QueryVectorCache
from indexer.search.reading import Reading, read_query
from indexer.search.roles import Located, PathRoles

DEFAULT_TOP_K = 10
MAX_TOP_K = 50
SNIPPET_LINES = 12
SNIPPET_CHARS = 600
MAX_QUERY_CHARS = 2000
MODES = ("hybrid", "vector", "keyword")


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
    stale: bool = False  # its root is unavailable now (missing, unreadable): indexed text
    index_age_s: int | None = None  # seconds since its file was indexed
    symbols: list[str] = field(default_factory=list)  # the definitions whose signature it holds
    also: list[AlsoRange] = field(default_factory=list)  # by file: the file's further matches
    project: str = ""  # the project the hit is in (a group's search spans several)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class AlsoRange:
    """A further match in a hit's file: its lines, its symbol, the chunk to read it by."""

    chunk_id: int
    start_line: int
    end_line: int
    symbol: str | None


def search_code(
    db: Database,
    project: Project | Sequence[Project],
    embedder: Embedder | None,
    query: str,
    *,
    top_k: int = DEFAULT_TOP_K,
    repo: str | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    ef_search: int = DEFAULT_EF_SEARCH,
    mode: str = "hybrid",
    ranking: Ranking = DEFAULT_RANKING,
    query_vectors: QueryVectorCache | None = None,
    term_stats: TermStatsCache | None = None,
    by_file: bool = True,
) -> list[SearchHit]:
    """Ranked hits for `query` in `project` (or over several projects, a group, as one index:
    `parts.py`); `mode` is hybrid, vector or keyword; with no `embedder` (model-free) hybrid
    ranks as keyword and vector is refused. `by_file` (the default): one hit per
    file, at its best chunk, with the file's further chunks that a search by chunk would have
    shown as `also` ranges; without it, a hit per chunk. Every hit names its project.

    The lists that need no query vector (keyword, exact symbol, verbatim identifier) are
    gathered on a connection of their own in a second thread while this one embeds the query
    (from `query_vectors` when it was embedded lately), then checks the index's model and runs
    the vector side on another connection; no pooled connection waits on the model. Both sides
    read committed data: a chunk a concurrent sweep removed in between is skipped.
    """
    query = _checked_query(query, top_k, mode, embedder)
    if embedder is None:
        mode = "keyword"
    if mode == "keyword":
        ranking = ranking.alone()
    projects = [project] if isinstance(project, Project) else list(project)
    reading = read_query(query, ranking)
    if reading.long and ranking.long_vector_share:
        ranking = replace(ranking, vector_share=ranking.long_vector_share)
    lists = _Lists(
        db,
        _parts(projects, repo, language, path_glob),
        ranking.deep_enough(top_k * 3),
        term_stats,
        f"searching {', '.join(p.name for p in projects)}",
        reading,
        # A path_glob chose the files: none of them counts for less for what it is.
        path_glob is None,
        by_file,
        top_k,
    )
    if mode == "keyword":
        with db.reading(lists.what) as conn, conn.transaction():
            candidates = lists.others_on(conn, keyword=True)
            scores, hits = lists.fused_hits(conn, candidates, top_k)
    else:
        assert embedder is not None
        scores, hits = _with_vectors(lists, embedder, mode, top_k, ef_search, query_vectors)
    return _search_hits(lists.parts, scores, hits)


@dataclass(frozen=True)
class _Part(Part):
    """A project searched: its part of the lists, and how it reads its paths."""

    project: Project
    roles: PathRoles


def _parts(
    projects: Sequence[Project], repo: str | None, language: str | None, path_glob: str | None
) -> list[_Part]:
    """The projects to search with their filters checked; with a `repo` filter, those of
    them that have such a root (at least one must)."""
    if not projects:
        raise InvalidArgument("no project to search")
    chosen = list(projects)
    if repo is not None and len(projects) > 1:
        chosen = [p for p in projects if p.root(repo) is not None]
        if not chosen:
            names = sorted({f"{r.name}" for p in projects for r in p.roots})
            raise InvalidArgument(
                f"repo {repo!r} is not a root of these projects: use one of {', '.join(names)}"
            )
    return [
        _Part(
            index,
            Schema(p.name),
            Filters.checked(p, repo, language, path_glob).params(),
            p,
            PathRoles.of(p),
        )
        for index, p in enumerate(chosen)
    ]


def _with_vectors(
    lists: _Lists,
    embedder: Embedder,
    mode: str,
    top_k: int,
    ef_search: int,
    query_vectors: QueryVectorCache | None,
) -> tuple[dict[int, float], list[Hit]]:
    """A search with the vector side: the other lists gathered at once in a thread of their
    own while this one embeds the query, then the vector side, then fusion."""
    with _Concurrent(partial(lists.others, mode)) as others:
        text = vector_query(lists.reading.embedded)
        if query_vectors is not None:
            vector = query_vectors.vector(embedder, text)
        else:
            vector = embedder.embed_query(text)
        # Take a connection only once the other side holds its own: a search never holds
        # one while waiting for another, so a full pool cannot deadlock searches.
        others.wait_holding()
        with lists.db.reading(lists.what) as conn, conn.transaction():
            lists.check_model(conn, embedder.identity)
            found = nearest_over(
                conn,
                lists.parts,
                vector,
                lists.ranking,
                ef_search,
                lists.db.iterative_scan,
            )
            ids, similarities = scored(found)
            others_found = others.result()
            files = others_found.files | files_of(found)
            candidates = replace(others_found, vector=ids, vector_scores=similarities, files=files)
            return lists.fused_hits(conn, candidates, top_k)


def _checked_query(query: str, top_k: int, mode: str, embedder: Embedder | None) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument("query is empty: describe the code you are looking for")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(
            f"query is {len(query)} characters long: keep it under {MAX_QUERY_CHARS}"
        )
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
        raise InvalidArgument(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    if mode not in MODES:
        raise InvalidArgument(f"mode must be hybrid, vector or keyword, got {mode!r}")
    if mode == "vector" and embedder is None:
        raise InvalidArgument(
            "vectors are off: this index is searched without a model ([embedding] provider = "
            "none), so there is no vector search; use mode hybrid or keyword, or set provider "
            "= local (or ollama) in application.ini and restart the server, which then embeds "
            "the indexed chunks in the background"
        )
    return query.strip()


@dataclass(frozen=True)
class _Lists:
    """One search's lists, gathered over its projects under one set of filters and ranking."""

    db: Database
    parts: list[_Part]
    ranking: Ranking
    term_stats: TermStatsCache | None
    what: str
    reading: Reading
    demote: bool  # False: every file counts as code
    by_file: bool
    top_k: int

    def others(self, mode: str, holding: Callable[[], None]) -> Candidates:
        """Every list but the vector one, on a connection of its own (`holding()` is called
        once it is held); the keyword side only when `mode` asks for it."""
        if mode == "vector" and not SYMBOL_QUERY_RE.match(self.reading.text):
            return Candidates()
        with self.db.reading(self.what) as conn, conn.transaction():
            holding()
            return self.others_on(conn, keyword=mode != "vector")

    def others_on(self, conn: Conn, *, keyword: bool) -> Candidates:
        """Every list but the vector one, on `conn`; the keyword side only with `keyword`."""
        return other_candidates(
            conn,
            self.parts,
            self.reading.text,
            self.ranking,
            keyword,
            self.term_stats,
            self.reading.mentions,
            self.reading.verbatim,
            self.top_k,
        )

    def check_model(self, conn: Conn, model: EmbeddingModel) -> None:
        """Refuse a query vector of another model than each index's."""
        for part in self.parts:
            recorded = store.get_meta(conn, part.schema, "embedding")
            if recorded is not None:
                ensure_same_model(EmbeddingModel.from_dict(recorded), model, part.schema.name)

    def fused_hits(
        self, conn: Conn, candidates: Candidates, top_k: int
    ) -> tuple[dict[int, float], list[Hit]]:
        """Fuse the lists, with the files that are not code counting for less, and read back
        and collapse the best into `top_k` hits, each with the id it ranks by."""
        if self.by_file:
            return self._hits_by_file(conn, candidates, top_k)
        # Only the shortlist's files are read, so only they are demoted: fuse, read the
        # shortlist's rows (and the pieces of the definitions they split), fuse again.
        scores = fuse(candidates, self.ranking)
        best = shortlist(scores, top_k)
        details, pieces = shaping_rows_over(conn, self.parts, best)
        demoted = self._demoted(ChunkFile(gid, 0, row.path) for gid, row in details.items())
        if demoted:
            scores = fuse(candidates, self.ranking, demoted)
            best = ordered(best, scores)
        return scores, chunk_hits(best, details, top_k, pieces)

    def _hits_by_file(
        self, conn: Conn, candidates: Candidates, top_k: int
    ) -> tuple[dict[int, float], list[Hit]]:
        """One hit per file: every candidate's file is known first (the rankers read it with
        the chunk; the few others are looked up), so that the files that are not code are
        demoted and the candidates grouped by file. The hits a search by chunk would give
        (over the same order) fold into their files' hits, so none is lost."""
        ids = {
            *candidates.vector,
            *candidates.keyword,
            *candidates.exact,
            *candidates.verbatim,
            *candidates.mentioned,
        }
        files = {cid: candidates.files[cid] for cid in ids if cid in candidates.files}
        files |= chunk_files(conn, self.parts, sorted(ids - files.keys()))
        file_of = {cid: f.file_id for cid, f in files.items()}
        demoted = self._demoted(files.values())
        scores = fuse(candidates, self.ranking, demoted)
        ranked = [cid for cid in ordered(scores, scores) if cid in file_of]
        window = ranked[: top_k * SHORTLIST]
        if self.ranking.file_fusion:
            # Files ranked by their own fused scores; the ranges a search by chunk would show
            # (`shown`, folded into their files as `also`) stay those of the chunks' scores.
            scores = fuse(candidates, self.ranking, demoted, file_of, top_k)
            ranked = [cid for cid in ordered(scores, scores) if cid in file_of]
        if self.reading.long:
            paths = {cid: f.path for cid, f in files.items()}
            title = self.reading.asking
            add_report_evidence(scores, file_of, paths, title, self.ranking, demoted)
            ranked = [cid for cid in ordered(scores, scores) if cid in file_of]
        heads = [group[0] for group in by_file(ranked, file_of, top_k)]
        details, pieces = shaping_rows_over(conn, self.parts, list(dict.fromkeys(window + heads)))
        shown = {hit.ranked_by for hit in chunk_hits(window, details, top_k, pieces)}
        groups = by_file(ranked, file_of, top_k, shown)
        return scores, collapse(groups, details, top_k, pieces)

    def _demoted(self, rows: Iterable[Located]) -> set[int]:
        """Of the chunks `rows` (global ids), those of files that are not code, each by its
        own project's reading of its paths."""
        if not self.demote:
            return set()
        asking, data = self.reading.asking, self.reading.demote_data
        if len(self.parts) == 1:
            return self.parts[0].roles.demoted_chunks(rows, asking, data)
        of_part: dict[int, list[Located]] = {}
        for row in rows:
            of_part.setdefault(part_of(row.chunk_id), []).append(row)
        return {
            cid
            for index, found in of_part.items()
            for cid in self.parts[index].roles.demoted_chunks(found, asking, data)
        }


def _search_hits(
    parts: Sequence[_Part], scores: dict[int, float], hits: list[Hit]
) -> list[SearchHit]:
    now = clock.now()
    projects = [parts[part_of(hit.ranked_by)].project for hit in hits]
    problems = {
        (p.name, h.row.repo): p.unavailable(h.row.repo) for p, h in zip(projects, hits, strict=True)
    }
    return [
        SearchHit(
            **located(project, hit.row),
            score=round(scores[hit.ranked_by], 6),
            snippet=snippet_of(hit.row.content),
            stale=problems[(project.name, hit.row.repo)] is not None,
            index_age_s=_age(hit.row.indexed_at, now),
            symbols=list(hit.row.symbols),
            also=[AlsoRange(r.chunk_id, r.start_line, r.end_line, r.symbol) for r in hit.also],
            project=project.name,
        )
        for project, hit in zip(projects, hits, strict=True)
    ]


def snippet_of(content: str) -> str:
    """The first SNIPPET_LINES lines of a chunk within SNIPPET_CHARS, marked "…" when cut."""
    lines = content.splitlines()
    text = "\n".join(lines[:SNIPPET_LINES])
    if len(text) > SNIPPET_CHARS:
        return truncate.cut(text, SNIPPET_CHARS)
    return text + "\n…" if len(lines) > SNIPPET_LINES else text


class _Concurrent:
    """Runs `work` in a thread of its own from `with` on. `work` calls the function it is
    given once it holds its connection; `wait_holding()` waits for that (or for the end);
    `result()` waits for the end and returns the value or raises the error. Leaving the block
    always waits, so no connection outlives the search."""

    def __init__(self, work: Callable[[Callable[[], None]], Candidates]) -> None:
        self._work = work
        self._value: Candidates | None = None
        self._error: BaseException | None = None
        self._holding = threading.Event()
        self._thread = threading.Thread(target=self._run, name="code-rag-search", daemon=True)

    def _run(self) -> None:
        try:
            self._value = self._work(self._holding.set)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc
        finally:
            self._holding.set()

    def __enter__(self) -> _Concurrent:
        self._thread.start()
        return self

    def wait_holding(self) -> None:
        self._holding.wait()

    def result(self) -> Candidates:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def __exit__(self, *exc: object) -> None:
        self._thread.join()


def _age(indexed_at: datetime | None, now: datetime) -> int | None:
    return None if indexed_at is None else max(0, int((now - indexed_at).total_seconds()))
