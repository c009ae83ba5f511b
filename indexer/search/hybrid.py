"""The read path: hybrid search over one project, and reading a chunk back.

Two rankers run over the same filters (repo, language, path glob): HNSW cosine over the chunk
vectors and PostgreSQL full text over identifier-aware terms (see `ranking.py` for how the
keyword side stays bounded and how the lists are fused, `candidates.py` for each list). A
query that names a symbol exactly puts that definition first. Results are pointers — path,
lines, symbol, score, a short snippet — never whole files.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from chunkers.detect import KNOWN_LANGUAGES
from indexer import clock, truncate
from indexer.db import Database, lookup, rows, store
from indexer.embed import Embedder, EmbeddingModel, ensure_same_model
from indexer.errors import InvalidArgument
from indexer.project import Project, root_problem
from indexer.search.candidates import (
    DEFAULT_EF_SEARCH,
    SYMBOL_QUERY_RE,
    other_candidates,
    vector_param,
    vector_query,
)
from indexer.search.fusion import (
    DEFAULT_RANKING,
    Candidates,
    Ranking,
    at_least,
    collapse,
    fuse,
    scored,
    shaping_rows,
)
from indexer.search.query_cache import QueryVectorCache

DEFAULT_TOP_K = 10
MAX_TOP_K = 50
SNIPPET_LINES = 12
SNIPPET_CHARS = 600
MAX_QUERY_CHARS = 2000
MAX_CONTEXT_LINES = 200
# A chunk view's text (with its context lines): about 6k tokens, well inside what an agent's
# client accepts from one tool call.
MAX_CHUNK_VIEW_CHARS = 24_000


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
    truncated: bool = False  # `text` was cut at MAX_CHUNK_VIEW_CHARS

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


def check_language(language: str | None) -> str | None:
    """A language filter as stored (lower case); an id no file can have is refused."""
    if language is None:
        return None
    name = language.strip().lower()
    if name not in KNOWN_LANGUAGES:
        near = sorted(k for k in KNOWN_LANGUAGES if k.startswith(name[:2]))[:8]
        hint = f" (close: {', '.join(near)})" if near else ""
        raise InvalidArgument(
            f"unknown language {language!r}{hint}: use an id such as python, typescript, "
            "javascript, go, rust, java, c, cpp, ruby, php"
        )
    return name


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
    """The first SNIPPET_LINES lines of a chunk within SNIPPET_CHARS, marked "…" when cut."""
    lines = content.splitlines()
    text = "\n".join(lines[:SNIPPET_LINES])
    if len(text) > SNIPPET_CHARS:
        return truncate.cut(text, SNIPPET_CHARS)
    return text + "\n…" if len(lines) > SNIPPET_LINES else text


def _absolute(project: Project, repo: str, path: str) -> str:
    root = project.root(repo)
    return str(root.path / path) if root else path


def _where(project: Project, row: rows.StoredChunk) -> dict[str, Any]:
    """What a hit and a chunk view share: which chunk, where, and what it is."""
    return {
        "chunk_id": row.chunk_id,
        "repo": row.repo,
        "path": row.path,
        "absolute_path": _absolute(project, row.repo, row.path),
        "start_line": row.start_line,
        "end_line": row.end_line,
        "symbol": row.symbol,
        "kind": row.kind,
        "language": row.language,
    }


def search_code(
    db: Database,
    project: Project,
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
) -> list[SearchHit]:
    """Ranked hits for `query` in `project`; `mode` is hybrid, vector or keyword.

    The lists that need no query vector (keyword, exact symbol, verbatim identifier) are
    gathered on a connection of their own in a second thread while this one embeds the query
    (from `query_vectors` when it was embedded lately), then checks the index's model and runs
    the vector side on another connection; no pooled connection waits on the model. Both sides
    read committed data: a chunk a concurrent sweep removed in between is skipped.
    """
    query = _check_arguments(query, top_k, path_glob)
    if mode not in ("hybrid", "vector", "keyword"):
        raise InvalidArgument(f"mode must be hybrid, vector or keyword, got {mode!r}")
    if repo is not None and project.root(repo) is None:
        names = ", ".join(r.name for r in project.roots)
        raise InvalidArgument(f"repo {repo!r} is not a root of this project: use one of {names}")
    if mode != "keyword" and embedder is None:
        raise InvalidArgument("vector search needs an embedder")
    filters = {
        "repo": repo,
        "language": check_language(language),
        "path_re": glob_to_regex(path_glob) if path_glob else None,
    }
    depth = at_least(ranking, top_k * 3)
    what = f"searching {project.name}"

    def other_lists(holding: Callable[[], None]) -> Candidates:
        if mode == "vector" and not SYMBOL_QUERY_RE.match(query):
            return Candidates()
        with db.reading(what) as conn, conn.transaction():
            holding()
            return other_candidates(conn, project.name, query, filters, depth, mode != "vector")

    if mode == "keyword":
        with db.reading(what) as conn, conn.transaction():
            candidates = other_candidates(conn, project.name, query, filters, depth)
            scores, hits = _fused_rows(conn, project.name, candidates, depth, top_k)
    else:
        assert embedder is not None
        with _Concurrent(other_lists) as others:
            model = embedder.identity
            text = vector_query(query)
            vector = (
                query_vectors.vector(embedder, text)
                if query_vectors is not None
                else embedder.embed_query(text)
            )
            # Take a connection only once the other side holds its own: a search never holds
            # one while waiting for another, so a full pool cannot deadlock searches.
            others.wait_holding()
            with db.reading(what) as conn, conn.transaction():
                recorded = store.get_meta(conn, project.name, "embedding")
                if recorded is not None:
                    ensure_same_model(EmbeddingModel.from_dict(recorded), model, project.name)
                nearest = lookup.vector_candidates(
                    conn,
                    project.name,
                    vector_param(vector),
                    filters,
                    depth.vector_depth,
                    ef_search,
                )
                found = others.result()
                ids, similarities = scored(nearest)
                candidates = replace(found, vector=ids, vector_scores=similarities)
                scores, hits = _fused_rows(conn, project.name, candidates, depth, top_k)
    now = clock.now()
    problems = {repo: _root_problem(project, repo) for repo in {row.repo for row, _ in hits}}
    return [
        SearchHit(
            **_where(project, row),
            score=round(scores[ranked_by], 6),
            snippet=snippet_of(row.content),
            stale=problems[row.repo] is not None,
            index_age_s=_age(row.indexed_at, now),
            symbols=list(row.symbols),
        )
        for row, ranked_by in hits
    ]


def _fused_rows(
    conn: store.Conn, project: str, candidates: Candidates, ranking: Ranking, top_k: int
) -> tuple[dict[int, float], list[tuple[rows.StoredChunk, int]]]:
    """Fuse the lists, read the rows of the best `shortlist x top_k` (and the pieces of the
    definitions they split), and collapse them to `top_k` hits, each with the id it ranks by."""
    scores = fuse(candidates, ranking)
    ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))[: top_k * ranking.shortlist]
    details, pieces = shaping_rows(conn, project, ordered)
    return scores, collapse(ordered, details, top_k, pieces)


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


def _root_problem(project: Project, repo: str) -> str | None:
    root = project.root(repo)
    return root_problem(root.path) if root is not None else None


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None


def get_chunk(db: Database, project: Project, chunk_id: int, context_lines: int = 0) -> ChunkView:
    """The stored text of one chunk, optionally with lines around it read from the file.

    Only files under one of the project's roots are ever read: the path comes from the index,
    is resolved, and must stay inside its root. The file is read after the connection is
    given back.
    """
    if not isinstance(chunk_id, int) or isinstance(chunk_id, bool) or chunk_id < 1:
        raise InvalidArgument(
            f"chunk_id must be a positive integer from search_code, got {chunk_id!r}"
        )
    if not isinstance(context_lines, int) or not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidArgument(f"context_lines must be an integer from 0 to {MAX_CONTEXT_LINES}")
    with db.reading(f"reading a chunk of {project.name}") as conn:
        row = lookup.chunks_by_id(conn, project.name, [chunk_id]).get(chunk_id)
    if row is None:
        raise InvalidArgument(
            f"no chunk {chunk_id} in this project: it may have been re-indexed; "
            "run search_code again for fresh ids"
        )
    root = project.root(row.repo)
    text, first, last, note = row.content, row.start_line, row.end_line, None
    if context_lines and root is not None:
        target = (root.path / row.path).resolve()
        lines = _read_lines(target) if target.is_relative_to(root.path.resolve()) else None
        if lines is None:
            note = "the file could not be read now; showing the indexed text only"
        else:
            current = lines[row.start_line - 1 : row.end_line]
            if current != row.content.splitlines():
                note = "the file changed since it was indexed; lines shown are as they are now"
            first = max(1, row.start_line - context_lines)
            last = min(len(lines), row.end_line + context_lines)
            text = "\n".join(lines[first - 1 : last])
    return ChunkView(
        **_where(project, row),
        text=truncate.cut(text, MAX_CHUNK_VIEW_CHARS),
        text_start_line=first,
        text_end_line=last,
        note=note,
        truncated=len(text) > MAX_CHUNK_VIEW_CHARS,
    )
