"""The store: project schemas and the rows in them, executed from the statements in `statements.py`.

One schema per project, created on demand, migrated idempotently, and marked so that nothing we
did not create is ever listed, altered or dropped. A file and its chunks are written together in
one transaction (a savepoint when the caller already has one open), so a failure leaves the
previous state of that file intact. Every function takes a psycopg connection and validates the
project name before composing any SQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from indexer.db import migrations, statements
from indexer.db.rows import (
    ChunkRow,
    FileFailure,
    FileRecord,
    FileState,
    ProjectSummary,
    RepoCounts,
    SweepRecord,
    SymbolRow,
)
from indexer.errors import ForeignSchema, ProjectNotFound
from indexer.project import validate_project_name

Conn = psycopg.Connection[Any]

# The size of a block of exact text (see `text_rows`): small enough that a trigram index
# re-check reads a few hundred bytes to a couple of KB, large enough to keep the row count down.
TEXT_BLOCK_CHARS = 2000
TEXT_BLOCK_LINES = 64
# Blanks and ASCII punctuation, each spelled as `q` and a letter or digit of its own in a
# block's `spelled` column and in the literals searched there (see `spelled`). ASCII, so
# pg_trgm reads it on its fast path, in every locale; `q` is the rarest letter in code, and
# the letters after it leave out `u` (query, quote) and `l` (sql). Rows already stored were
# spelled by the migration that set this spelling: changing it takes a new one.
SPELLING = migrations.M005_SPELLING


def typed_rows(conn: Conn, cls: type[Any], query: Any, params: Any = None, **kw: Any) -> list[Any]:
    """Every row of `query` as a `cls` (a dataclass whose fields are the selected columns)."""
    with conn.cursor(row_factory=class_row(cls)) as cur:
        return cur.execute(query, params, **kw).fetchall()


def like_escape(text: str) -> str:
    """`text` as a literal inside a LIKE pattern (backslash is LIKE's default escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def statement(text: str, project: str, **identifiers: Any) -> pgsql.Composed:
    """Compose one statement for `project`; the name is validated, then quoted as an identifier."""
    name = validate_project_name(project)
    extra = {k: pgsql.Literal(v) for k, v in identifiers.items()}
    return pgsql.SQL(text).format(schema=pgsql.Identifier(name), **extra)


# --- schemas --------------------------------------------------------------------------------


def list_projects(conn: Conn) -> list[str]:
    """Names of the schemas we created (carrying our marker), and of nothing else."""
    rows = conn.execute(
        statements.LIST_PROJECT_SCHEMAS, {"marker": statements.SCHEMA_MARKER}
    ).fetchall()
    return [row[0] for row in rows]


def _schema_state(conn: Conn, name: str) -> str | None:
    """'ours', 'foreign', or None when no schema has that name."""
    row = conn.execute(statements.SCHEMA_STATE, {"name": name}).fetchone()
    if row is None:
        return None
    return "ours" if row[0] == statements.SCHEMA_MARKER else "foreign"


def project_exists(conn: Conn, project: str) -> bool:
    return _schema_state(conn, validate_project_name(project)) == "ours"


def _require_ours(conn: Conn, name: str) -> None:
    state = _schema_state(conn, name)
    if state is None:
        raise ProjectNotFound(f"project {name!r} has no index yet: run `./bld scan {name}`")
    if state == "foreign":
        raise ForeignSchema(
            f"schema {name!r} exists but was not created by code-rag; it is left alone: "
            "rename the project or the schema"
        )


def ensure_project(conn: Conn, project: str) -> list[str]:
    """Create the project's schema if needed and apply pending migrations; return those applied.

    Safe to call concurrently from several processes: a transaction-level advisory lock
    serialises creation and migration.
    """
    name = validate_project_name(project)
    with conn.transaction():
        conn.execute(statements.MIGRATION_LOCK, {"key": statements.MIGRATION_LOCK_KEY})
        state = _schema_state(conn, name)
        if state == "foreign":
            _require_ours(conn, name)
        if state is None:
            conn.execute(statement(statements.CREATE_SCHEMA, name))
            conn.execute(statement(statements.MARK_SCHEMA, name))
        conn.execute(statement(statements.CREATE_MIGRATION_TABLE, name))
        done = {row[0] for row in conn.execute(statement(statements.APPLIED_MIGRATIONS, name))}
        applied = []
        for migration, steps in migrations.MIGRATIONS:
            if migration in done:
                continue
            for step in steps:
                conn.execute(statement(step, name))
            conn.execute(statement(statements.RECORD_MIGRATION, name), {"name": migration})
            applied.append(migration)
    return applied


def drop_project(conn: Conn, project: str) -> None:
    """Drop a project's schema with everything in it; refuse anything without our marker."""
    name = validate_project_name(project)
    with conn.transaction():
        conn.execute(statements.MIGRATION_LOCK, {"key": statements.MIGRATION_LOCK_KEY})
        _require_ours(conn, name)
        conn.execute(statement(statements.DROP_SCHEMA, name))


def summary(conn: Conn, project: str) -> ProjectSummary:
    name = validate_project_name(project)
    _require_ours(conn, name)
    [found] = typed_rows(
        conn, ProjectSummary, statement(statements.PROJECT_COUNTS, name), {"name": name}
    )
    return found


def repo_counts(conn: Conn, project: str) -> list[RepoCounts]:
    return typed_rows(conn, RepoCounts, statement(statements.REPO_COUNTS, project))


def failures(conn: Conn, project: str, limit: int = 50) -> list[FileFailure]:
    return typed_rows(
        conn, FileFailure, statement(statements.FAILED_FILES, project), {"limit": limit}
    )


# --- meta -----------------------------------------------------------------------------------


def get_meta(conn: Conn, project: str, key: str) -> Any:
    row = conn.execute(statement(statements.GET_META, project), {"key": key}).fetchone()
    return None if row is None else row[0]


def all_meta(conn: Conn, project: str) -> dict[str, Any]:
    return dict(conn.execute(statement(statements.ALL_META, project)).fetchall())


def set_meta(conn: Conn, project: str, key: str, value: Any) -> None:
    json.dumps(value)  # fail here, with the caller's stack, on values JSON cannot hold
    conn.execute(statement(statements.SET_META, project), {"key": key, "value": Jsonb(value)})


# --- the embedding column -------------------------------------------------------------------


def embedding_dimension(conn: Conn, project: str, table: str = "rag_chunk") -> int | None:
    """The dimension `table`'s embedding column is typed with (None: untyped, no model yet)."""
    name = validate_project_name(project)
    qualified = pgsql.Identifier(name, table).as_string(conn)
    row = conn.execute(statements.EMBEDDING_DIMENSION, {"table": qualified}).fetchone()
    return None if row is None else row[0]


def set_embedding_dimension(conn: Conn, project: str, dim: int) -> bool:
    """Type the embedding columns (chunks' and definitions') as vector(dim) with their HNSW
    indexes.

    A different dimension than before deletes every file row (and, by cascade, every chunk and
    symbol) first, so vectors of two models never mix; returns True when it did so. A column
    still untyped beside a typed one (a project from before definitions had vectors: they have
    none yet) is typed alone.
    """
    if not isinstance(dim, int) or not 1 <= dim <= 16000:
        raise ValueError(f"an embedding dimension must be 1..16000, got {dim!r}")
    current = {
        table: embedding_dimension(conn, project, table) for table in statements.VECTOR_TABLES
    }
    if all(d == dim for d in current.values()):
        build_bulk_indexes(conn, project)  # a sweep killed during a bulk load left none
        return False
    with conn.transaction():
        if current["rag_chunk"] != dim:
            conn.execute(statement(statements.DROP_HNSW, project))
            conn.execute(statement(statements.DELETE_ALL_FILES, project))
        conn.execute(statement(statements.DROP_SYMBOL_HNSW, project))
        for table, d in current.items():
            if d != dim:
                conn.execute(
                    pgsql.SQL(statements.SET_EMBEDDING_TYPE).format(
                        schema=pgsql.Identifier(validate_project_name(project)),
                        table=pgsql.Identifier(table),
                        dim=pgsql.Literal(dim),
                    )
                )
        for step in (statements.CREATE_HNSW, statements.CREATE_SYMBOL_HNSW):
            conn.execute(statement(step, project))
    return current["rag_chunk"] not in (None, dim)


def drop_bulk_indexes(conn: Conn, project: str, secondary: bool = True) -> None:
    """Drop the HNSW and trigram indexes before a bulk load (building them afterwards is
    several times faster than inserting into them row by row), and with `secondary` the
    keyword and symbol indexes too; searches meanwhile scan."""
    steps = [
        statements.DROP_HNSW,
        statements.DROP_SYMBOL_HNSW,
        *statements.DROP_TRGM,
        *(statements.DROP_SECONDARY if secondary else []),
    ]
    with conn.transaction():
        for step in steps:
            conn.execute(statement(step, project))


def build_bulk_indexes(
    conn: Conn, project: str, memory: str = "1GB", workers: int | None = None
) -> None:
    """(Re)build the HNSW, trigram, keyword and symbol indexes where missing, with `memory`
    as maintenance_work_mem and at most `workers` parallel workers per build (None: the
    server's setting). A parallel build that finds no room in shared memory (a small
    /dev/shm) is done again without workers."""
    try:
        _build_indexes(conn, project, memory, workers)
    except psycopg.errors.DiskFull:
        if workers == 0:
            raise
        _build_indexes(conn, project, memory, 0)


def _build_indexes(conn: Conn, project: str, memory: str, workers: int | None) -> None:
    with conn.transaction():
        conn.execute(statements.SET_BUILD_MEMORY, {"mem": memory})
        if workers is not None:
            conn.execute(statements.SET_BUILD_WORKERS, {"workers": str(workers)})
        for step in [
            statements.CREATE_HNSW,
            statements.CREATE_SYMBOL_HNSW,
            *statements.CREATE_TRGM,
            *statements.CREATE_SECONDARY,
        ]:
            conn.execute(statement(step, project))


def analyze_chunks(conn: Conn, project: str) -> None:
    with conn.transaction():
        conn.execute(statement(statements.ANALYZE_CHUNKS, project))


def chunk_count(conn: Conn, project: str) -> int:
    row = conn.execute(statement(statements.COUNT_CHUNKS, project)).fetchone()
    return int(row[0]) if row else 0


def clear_project(conn: Conn, project: str) -> None:
    """Delete every file and chunk row of a project (a full re-embed follows)."""
    with conn.transaction():
        conn.execute(statement(statements.DELETE_ALL_FILES, project))


# --- files and chunks -----------------------------------------------------------------------


def file_states(conn: Conn, project: str) -> dict[tuple[str, str], FileState]:
    states: list[FileState] = typed_rows(
        conn, FileState, statement(statements.FILE_STATES, project)
    )
    return {(s.repo, s.path): s for s in states}


def file_states_at(
    conn: Conn, project: str, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], FileState]:
    """The rows of these (repo, path) pairs, and of every file under a pair that is a folder."""
    pairs = sorted(set(keys))
    if not pairs:
        return {}
    params = {"repos": [r for r, _ in pairs], "paths": [p for _, p in pairs]}
    states: list[FileState] = typed_rows(
        conn, FileState, statement(statements.FILE_STATES_AT, project), params
    )
    return {(s.repo, s.path): s for s in states}


def upsert_file(
    conn: Conn,
    project: str,
    record: FileRecord,
    chunks: Sequence[ChunkRow],
    symbols: Sequence[SymbolRow] = (),
    text: str | None = None,
) -> int:
    """Write one file with exactly these chunks, symbols and text (None: none kept), all or
    nothing; return its id."""
    with conn.transaction():
        row = conn.execute(
            statement(statements.UPSERT_FILE, project),
            {
                "repo": record.repo,
                "path": record.path,
                "size": record.size,
                "mtime_ns": record.mtime_ns,
                "sha256": record.sha256,
                "language": record.language,
                "chunk_count": len(chunks),
            },
        ).fetchone()
        assert row is not None
        file_id: int = row[0]
        if chunks:
            with conn.cursor() as cur:
                cur.executemany(
                    statement(statements.UPSERT_CHUNK, project),
                    [
                        {
                            "file_id": file_id,
                            "ordinal": c.ordinal,
                            "start_line": c.start_line,
                            "end_line": c.end_line,
                            "symbol": c.symbol,
                            "kind": c.kind,
                            "content": c.content,
                            "content_sha256": c.content_sha256,
                            "embedding": c.embedding,
                            "symbol_terms": c.symbol_terms,
                            "path_terms": c.path_terms,
                            "body_terms": c.body_terms,
                        }
                        for c in chunks
                    ],
                )
        conn.execute(
            statement(statements.DELETE_CHUNKS_FROM, project),
            {"file_id": file_id, "n": len(chunks)},
        )
        _replace_symbols(conn, project, file_id, symbols)
        conn.execute(statement(statements.DELETE_FILE_TEXT, project), {"file_id": file_id})
        blocks = text_rows(file_id, text) if text else []
        if blocks:
            with (
                conn.cursor() as cur,
                cur.copy(statement(statements.COPY_FILE_TEXT, project)) as copy,
            ):
                for block in blocks:
                    copy.write_row(block)
    return file_id


def spelled(text: str) -> str:
    """`text` with blanks and ASCII punctuation spelled as letters (`SPELLING`). pg_trgm
    takes trigrams from runs of letters and digits only; spelled, `x.get(` is one run whose
    trigrams span the dot and the parenthesis. Each character is always spelled the same
    way, so text holding a literal still holds it spelled: a search of spelled text can only
    propose too much. Newlines stay: lines stay lines."""
    for char, code in SPELLING:  # a pass per character: several times faster than translate
        if char in text:
            text = text.replace(char, code)
    return text


def text_rows(file_id: int, text: str) -> list[tuple[Any, ...]]:
    """The rows of `statements.FILE_TEXT_TABLE` for one file's text, in
    `statements.FILE_TEXT_COLUMNS` order: (file_id, start_line, content, spelled content),
    blocks of whole lines (LF-separated, no trailing newline) of up to `TEXT_BLOCK_CHARS` characters and
    `TEXT_BLOCK_LINES` lines; a longer line is a block of its own, never split. Line N of the
    file is line N of the chunks."""
    lines = text.split("\n")
    spelled_lines = spelled(text).split("\n")  # line for line: newlines are not spelled
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    rows: list[tuple[Any, ...]] = []
    first = size = 0
    for i, line in enumerate(lines):
        if i > first and (size + len(line) >= TEXT_BLOCK_CHARS or i - first >= TEXT_BLOCK_LINES):
            block = "\n".join(lines[first:i])
            rows.append((file_id, first + 1, block, "\n".join(spelled_lines[first:i])))
            first, size = i, 0
        size += len(line) + 1
    if first < len(lines):
        block = "\n".join(lines[first:])
        rows.append((file_id, first + 1, block, "\n".join(spelled_lines[first : len(lines)])))
    return rows




def _replace_symbols(conn: Conn, project: str, file_id: int, symbols: Sequence[SymbolRow]) -> None:
    conn.execute(statement(statements.DELETE_SYMBOLS, project), {"file_id": file_id})
    if not symbols:
        return
    conn.execute(
        statement(statements.INSERT_SYMBOLS, project),
        {
            "file_id": file_id,
            "ordinals": [s.ordinal for s in symbols],
            "chunks": [s.chunk for s in symbols],
            "names": [s.name for s in symbols],
            "qualified_names": [s.qualified_name for s in symbols],
            "kinds": [s.kind for s in symbols],
            "start_lines": [s.start_line for s in symbols],
            "end_lines": [s.end_line for s in symbols],
            "signature_lines": [s.signature_line for s in symbols],
            "signatures": [s.signature for s in symbols],
            "parents": [s.parent for s in symbols],
            "content_sha256s": [s.content_sha256 for s in symbols],
            "embeddings": [s.embedding for s in symbols],
        },
    )


def record_file_error(
    conn: Conn, project: str, repo: str, path: str, error: str, language: str | None = None
) -> None:
    """Note why a file failed; its previous rows (if any) stay as they were."""
    with conn.transaction():
        conn.execute(
            statement(statements.RECORD_FILE_ERROR, project),
            {"repo": repo, "path": path, "error": error[:2000], "language": language},
        )


def delete_files(conn: Conn, project: str, ids: Iterable[int]) -> int:
    id_list = list(ids)
    if not id_list:
        return 0
    with conn.transaction():
        cur = conn.execute(statement(statements.DELETE_FILES, project), {"ids": id_list})
    return cur.rowcount


def delete_repos_except(conn: Conn, project: str, repos: Sequence[str]) -> int:
    """Delete the rows of every root no longer configured; return the number of files removed."""
    with conn.transaction():
        cur = conn.execute(
            statement(statements.DELETE_REPOS_EXCEPT, project), {"repos": list(repos)}
        )
    return cur.rowcount


def cached_embeddings(conn: Conn, project: str, hashes: Sequence[str]) -> dict[str, Any]:
    """Stored vectors by content hash, for chunks and definitions already embedded."""
    if not hashes:
        return {}
    rows = conn.execute(statement(statements.CACHED_EMBEDDINGS, project), {"hashes": list(hashes)})
    return {row[0]: row[1] for row in rows}


def touch_file(conn: Conn, project: str, file_id: int, size: int, mtime_ns: int) -> None:
    """Record a new size/mtime for a file whose content hash did not change."""
    conn.execute(
        statement(statements.TOUCH_FILE, project),
        {"id": file_id, "size": size, "mtime_ns": mtime_ns},
    )


# --- sweeps ---------------------------------------------------------------------------------


def try_sweep_lock(conn: Conn, project: str, *, wait: bool = False) -> bool:
    """Take the project's sweep lock on `conn` (an autocommit connection kept for the sweep)."""
    name = validate_project_name(project)
    if wait:
        conn.execute(statements.SWEEP_LOCK, {"name": name})
        return True
    row = conn.execute(statements.TRY_SWEEP_LOCK, {"name": name}).fetchone()
    return bool(row and row[0])


def release_sweep_lock(conn: Conn, project: str) -> None:
    conn.execute(statements.SWEEP_UNLOCK, {"name": validate_project_name(project)})


def sweep_running(conn: Conn, project: str) -> bool:
    """Whether any process holds the project's sweep lock right now."""
    row = conn.execute(
        statements.SWEEP_LOCK_HELD, {"name": validate_project_name(project)}
    ).fetchone()
    return row is not None


def start_sweep(conn: Conn, project: str) -> int:
    with conn.transaction():
        conn.execute(statement(statements.ABANDON_SWEEPS, project))
        row = conn.execute(statement(statements.START_SWEEP, project)).fetchone()
    assert row is not None
    return int(row[0])


def finish_sweep(
    conn: Conn, project: str, sweep_id: int, outcome: str, report: dict[str, Any]
) -> None:
    with conn.transaction():
        conn.execute(
            statement(statements.FINISH_SWEEP, project),
            {"id": sweep_id, "outcome": outcome, "report": Jsonb(report)},
        )


def last_sweeps(conn: Conn, project: str, limit: int = 1) -> list[SweepRecord]:
    return typed_rows(
        conn, SweepRecord, statement(statements.LAST_SWEEPS, project), {"limit": limit}
    )
