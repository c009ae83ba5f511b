"""The read path: hybrid search over one project, and reading a chunk back.

Two rankers run over the same filters (repo, language, path glob): HNSW cosine over the chunk
vectors (iterative scans keep recall under filters) and PostgreSQL full text over
identifier-aware terms. Their lists are fused by reciprocal rank fusion; a query that names a
symbol exactly puts that definition first; overlapping chunks of one file collapse into the best.
Results are pointers — path, lines, symbol, score, a short snippet — never whole files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
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
CANDIDATES = 50  # per ranker, before fusion
SNIPPET_LINES = 12
SNIPPET_CHARS = 600
MAX_QUERY_CHARS = 2000
MAX_CONTEXT_LINES = 200
MAX_CHUNK_VIEW_CHARS = 40_000
SYMBOL_QUERY_RE = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*$")


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


def _rrf(rankings: Sequence[Sequence[int]], weights: Sequence[float]) -> dict[int, float]:
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (RRF_K + rank)
    return scores


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
    depth = max(CANDIDATES, top_k * 3)
    rankings: list[list[int]] = []
    weights: list[float] = []
    with conn.transaction():
        if mode in ("hybrid", "vector"):
            if embedder is None:
                raise InvalidArgument("vector search needs an embedder")
            recorded = store.get_meta(conn, project.name, "embedding")
            if recorded is not None:
                ensure_same_model(
                    EmbeddingModel.from_dict(recorded), embedder.identity, project.name
                )
            vector = embedder.embed_query(query)
            conn.execute(sql.SET_EF_SEARCH, {"ef": str(max(ef_search, depth))})
            if any(filters.values()) and conn.execute(sql.PGVECTOR_HAS_ITERATIVE_SCAN).fetchone():
                conn.execute(sql.SET_ITERATIVE_SCAN)
            rows = conn.execute(
                store.statement(sql.VECTOR_CANDIDATES, project.name),
                {**filters, "vector": _vector_param(vector), "limit": depth},
            ).fetchall()
            rankings.append([r[0] for r in rows])
            weights.append(1.0)
        if mode in ("hybrid", "keyword"):
            words = lexical.query_terms(query)
            if words:
                rows = conn.execute(
                    store.statement(sql.KEYWORD_CANDIDATES, project.name),
                    {**filters, "tsquery": lexical.tsquery_any(words), "limit": depth},
                ).fetchall()
                rankings.append([r[0] for r in rows])
                weights.append(1.0)
        exact: list[int] = []
        if SYMBOL_QUERY_RE.match(query):
            symbol = re.sub(r"#|::", ".", query) if "::" not in query else query
            exact = [
                r[0]
                for r in conn.execute(
                    store.statement(sql.SYMBOL_MATCHES, project.name), {**filters, "symbol": symbol}
                )
            ]
        scores = _rrf(rankings, weights)
        if exact:
            top = max(scores.values(), default=0.0)
            for offset, chunk_id in enumerate(exact):
                scores[chunk_id] = top + 1.0 / (RRF_K + 1 + offset)
        ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))[: top_k * 3]
        details = _chunks_by_id(conn, project.name, ordered)
    hits: list[dict[str, Any]] = []
    for chunk_id in ordered:
        row = details.get(chunk_id)
        if row is None or any(_overlaps(row, kept) for kept in hits):
            continue
        hits.append(row)
        if len(hits) == top_k:
            break
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
