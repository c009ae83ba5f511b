"""The write side: project schemas and the rows a sweep writes in them, from the statements in
`statements.py`.

One schema per project, created on demand, migrated idempotently, and marked so that nothing we
did not create is ever listed, altered or dropped. A file and its chunks are written together in
one transaction (a savepoint when the caller already has one open), so a failure leaves the
previous state of that file intact. Every function takes a psycopg connection and the
project's `Schema`, so every statement names a validated schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.types.json import Jsonb

from indexer.db import blocks, migrations, statements
from indexer.db.rows import (
    ChunkRow,
    FileChunk,
    FileDefinition,
    FileFailure,
    FileRecord,
    FileState,
    PendingChunk,
    PendingCounts,
    PendingDefinition,
    ProjectSummary,
    RepoCounts,
    SweepRecord,
    SymbolRow,
    WorkerBeat,
    WorkerRow,
)
from indexer.db.schema import Conn, Schema, typed_rows
from indexer.errors import ForeignSchema, ProjectNotFound

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


def project_exists(conn: Conn, schema: Schema) -> bool:
    return _schema_state(conn, schema.name) == "ours"


def _require_ours(conn: Conn, name: str) -> None:
    state = _schema_state(conn, name)
    if state is None:
        raise ProjectNotFound(f"project {name!r} has no index yet: run `./bld scan {name}`")
    if state == "foreign":
        raise ForeignSchema(
            f"schema {name!r} exists but was not created by code-rag; it is left alone: "
            "rename the project or the schema"
        )


def ensure_project(conn: Conn, schema: Schema, *, create: bool = True) -> list[str]:
    """Create the project's schema if needed and apply pending migrations; return those applied.
    Not `create`: only bring an existing schema up to date (ProjectNotFound when there is none,
    a project dropped meanwhile included).

    Safe to call concurrently from several processes: a transaction-level advisory lock
    serialises creation and migration.
    """
    with conn.transaction():
        conn.execute(statements.MIGRATION_LOCK, {"key": statements.MIGRATION_LOCK_KEY})
        state = _schema_state(conn, schema.name)
        if state == "foreign" or (state is None and not create):
            _require_ours(conn, schema.name)
        if state is None:
            conn.execute(schema.sql(statements.CREATE_SCHEMA))
            conn.execute(schema.sql(statements.MARK_SCHEMA))
        conn.execute(schema.sql(statements.CREATE_MIGRATION_TABLE))
        done = {row[0] for row in conn.execute(schema.sql(statements.APPLIED_MIGRATIONS))}
        applied = []
        for migration, steps in migrations.MIGRATIONS:
            if migration in done:
                continue
            for step in steps:
                conn.execute(schema.sql(step))
            conn.execute(schema.sql(statements.RECORD_MIGRATION), {"name": migration})
            applied.append(migration)
    return applied


def drop_project(conn: Conn, schema: Schema) -> None:
    """Drop a project's schema with everything in it; refuse anything without our marker."""
    with conn.transaction():
        conn.execute(statements.MIGRATION_LOCK, {"key": statements.MIGRATION_LOCK_KEY})
        _require_ours(conn, schema.name)
        conn.execute(schema.sql(statements.DROP_SCHEMA))


def summary(conn: Conn, schema: Schema) -> ProjectSummary:
    _require_ours(conn, schema.name)
    [found] = typed_rows(
        conn, ProjectSummary, schema.sql(statements.PROJECT_COUNTS), {"name": schema.name}
    )
    return found


def repo_counts(conn: Conn, schema: Schema) -> list[RepoCounts]:
    return typed_rows(conn, RepoCounts, schema.sql(statements.REPO_COUNTS))


def failures(conn: Conn, schema: Schema, limit: int = 50) -> list[FileFailure]:
    return typed_rows(conn, FileFailure, schema.sql(statements.FAILED_FILES), {"limit": limit})


# --- meta -----------------------------------------------------------------------------------


def get_meta(conn: Conn, schema: Schema, key: str) -> Any:
    row = conn.execute(schema.sql(statements.GET_META), {"key": key}).fetchone()
    return None if row is None else row[0]


def all_meta(conn: Conn, schema: Schema) -> dict[str, Any]:
    return dict(conn.execute(schema.sql(statements.ALL_META)).fetchall())


def set_meta(conn: Conn, schema: Schema, key: str, value: Any) -> None:
    json.dumps(value)  # fail here, with the caller's stack, on values JSON cannot hold
    conn.execute(schema.sql(statements.SET_META), {"key": key, "value": Jsonb(value)})


# --- the embedding column -------------------------------------------------------------------


def embedding_dimension(conn: Conn, schema: Schema, table: str = "rag_chunk") -> int | None:
    """The dimension `table`'s embedding column is typed with (None: untyped, no model yet)."""
    qualified = schema.table(table).as_string(conn)
    row = conn.execute(statements.EMBEDDING_DIMENSION, {"table": qualified}).fetchone()
    return None if row is None else row[0]


def set_embedding_dimension(conn: Conn, schema: Schema, dim: int) -> bool:
    """Type the embedding columns (chunks' and definitions') as vector(dim) with their HNSW
    indexes.

    A different dimension than before deletes every file row (and, by cascade, every chunk and
    symbol) first, so vectors of two models never mix; returns True when it did so. A column
    still untyped beside a typed one (a project from before definitions had vectors: they have
    none yet) is typed alone. Rows none of which holds a vector (an index written with no
    model) have nothing to mix: they stay, retyped, and the graphs wait until their vectors are
    in (`build_vector_indexes`), as for a first index written rows first.
    """
    if not isinstance(dim, int) or not 1 <= dim <= 16000:
        raise ValueError(f"an embedding dimension must be 1..16000, got {dim!r}")
    current = {
        table: embedding_dimension(conn, schema, table) for table in statements.VECTOR_TABLES
    }
    if all(d == dim for d in current.values()):
        return False
    model_free_rows = chunk_count(conn, schema) > 0 and not has_vectors(conn, schema)
    with conn.transaction():
        if current["rag_chunk"] != dim:
            conn.execute(schema.sql(statements.DROP_HNSW))
            if not model_free_rows:
                conn.execute(schema.sql(statements.DELETE_ALL_FILES))
        conn.execute(schema.sql(statements.DROP_SYMBOL_HNSW))
        for table, d in current.items():
            if d != dim:
                conn.execute(
                    pgsql.SQL(statements.SET_EMBEDDING_TYPE).format(
                        schema=pgsql.Identifier(schema.name),
                        table=pgsql.Identifier(table),
                        dim=pgsql.Literal(dim),
                    )
                )
        if not model_free_rows:
            for step in (statements.CREATE_HNSW, statements.CREATE_SYMBOL_HNSW):
                conn.execute(schema.sql(step))
    return current["rag_chunk"] not in (None, dim) and not model_free_rows


def drop_bulk_indexes(conn: Conn, schema: Schema, secondary: bool = False) -> None:
    """Drop the HNSW and trigram indexes before a bulk load: built afterwards they cost a
    fraction of taking the rows one batch at a time (a trigram index took 100,000 text blocks
    2.5 x slower kept than dropped and built again). The keyword and symbol indexes stay: kept,
    they cost the load about what building them afterwards would (GIN's pending list takes
    the rows in batches), and searches during the load read them instead of scanning every
    chunk. `secondary` drops those too (a copy made with one statement per table)."""
    steps = [
        statements.DROP_HNSW,
        statements.DROP_SYMBOL_HNSW,
        *statements.DROP_TRGM,
        *(statements.DROP_SECONDARY if secondary else []),
    ]
    with conn.transaction():
        for step in steps:
            conn.execute(schema.sql(step))


# maintenance_work_mem for the index builds after a bulk load: room for the HNSW graph (its
# vectors plus this many bytes of links and bookkeeping per row; pgvector 0.8 measured 2,252
# bytes a row at 384 dimensions, i.e. 716 besides the vector), within these bounds. A graph
# that does not fit is built on disk, several times slower.
BUILD_BYTES_PER_ROW = 1024
BUILD_MEMORY_MIN_MB = 256
BUILD_MEMORY_MAX_MB = 4096


def index_build_memory(rows: int, dimension: int) -> str:
    """maintenance_work_mem for building the indexes of `rows` rows of `dimension` floats."""
    mb = rows * (4 * dimension + BUILD_BYTES_PER_ROW) // 2**20
    return f"{min(max(mb, BUILD_MEMORY_MIN_MB), BUILD_MEMORY_MAX_MB)}MB"


def build_bulk_indexes(
    conn: Conn,
    schema: Schema,
    memory: str = "1GB",
    workers: int | None = None,
    *,
    vectors: bool = True,
) -> None:
    """(Re)build the HNSW (unless not `vectors`), trigram, keyword and symbol indexes where
    missing, with `memory` as maintenance_work_mem and at most `workers` parallel workers per
    build (None: the server's setting). A parallel build that finds no room in shared memory
    (a small /dev/shm) is done again without workers."""
    graphs = [statements.CREATE_HNSW, statements.CREATE_SYMBOL_HNSW, *statements.DROP_EMBEDDED]
    steps = [
        *(graphs if vectors else []),
        *statements.CREATE_TRGM,
        *statements.CREATE_SECONDARY,
    ]
    _build(conn, schema, steps, memory, workers)


def has_vectors(conn: Conn, schema: Schema) -> bool:
    """Whether any chunk or definition of the project has its vector."""
    return conn.execute(schema.sql(statements.HAS_VECTORS)).fetchone() is not None


def has_files(conn: Conn, schema: Schema) -> bool:
    """Whether the project holds any file row (written, or failed)."""
    return conn.execute(schema.sql(statements.HAS_FILES)).fetchone() is not None


def bulk_load_cut_short(conn: Conn, schema: Schema) -> bool:
    """Whether a bulk load was killed before it built its indexes (they are still missing)."""
    row = conn.execute(statements.BULK_LOAD_CUT_SHORT, {"schema": schema.name}).fetchone()
    return row is not None


def drop_vector_indexes(conn: Conn, schema: Schema) -> None:
    """Drop the HNSW indexes (`build_vector_indexes` makes them again)."""
    with conn.transaction():
        for step in (statements.DROP_HNSW, statements.DROP_SYMBOL_HNSW):
            conn.execute(schema.sql(step))


def vector_indexes_missing(conn: Conn, schema: Schema) -> bool:
    """Whether either HNSW index (the chunks', the definitions') is missing."""
    found = conn.execute(statements.VECTOR_INDEXES, {"schema": schema.name}).fetchone()
    return found is None or found[0] < 2


def build_vector_indexes(
    conn: Conn, schema: Schema, memory: str = "1GB", workers: int | None = None
) -> None:
    """Build the HNSW indexes of the chunks' and the definitions' vectors where missing (a
    first index built rows first gets them once its vectors are in), and drop the indexes of
    the rows with a vector that served the vector side meanwhile (`ensure_embedded_indexes`)."""
    steps = [statements.CREATE_HNSW, statements.CREATE_SYMBOL_HNSW, *statements.DROP_EMBEDDED]
    _build(conn, schema, steps, memory, workers)


def ensure_embedded_indexes(conn: Conn, schema: Schema) -> None:
    """Index the rows that have their vector, for the vector side to read while the graphs
    are missing (a first index's vectors coming in); `build_vector_indexes` drops them. Once
    for all the processes filling the vectors (`lock_graphs`): none of them makes them while
    another builds the graphs, which would leave them behind."""
    with conn.transaction():
        lock_graphs(conn, schema)
        if not vector_indexes_missing(conn, schema):
            return
        for step in statements.CREATE_EMBEDDED:
            conn.execute(schema.sql(step))


def embedded_indexes_missing(conn: Conn, schema: Schema) -> bool:
    """Whether either index of the rows with a vector (`ensure_embedded_indexes`) is missing."""
    found = conn.execute(statements.EMBEDDED_INDEXES, {"schema": schema.name}).fetchone()
    return found is None or found[0] < 2


def _build(
    conn: Conn, schema: Schema, steps: Sequence[str], memory: str, workers: int | None
) -> None:
    try:
        _build_indexes(conn, schema, steps, memory, workers)
    except psycopg.errors.DiskFull:
        if workers == 0:
            raise
        _build_indexes(conn, schema, steps, memory, 0)


def _build_indexes(
    conn: Conn, schema: Schema, steps: Sequence[str], memory: str, workers: int | None
) -> None:
    with conn.transaction():
        conn.execute(statements.SET_BUILD_MEMORY, {"mem": memory})
        if workers is not None:
            conn.execute(statements.SET_BUILD_WORKERS, {"workers": str(workers)})
        for step in steps:
            conn.execute(schema.sql(step))


def analyze_chunks(conn: Conn, schema: Schema) -> None:
    with conn.transaction():
        conn.execute(schema.sql(statements.ANALYZE_CHUNKS))


def chunk_count(conn: Conn, schema: Schema) -> int:
    row = conn.execute(schema.sql(statements.COUNT_CHUNKS)).fetchone()
    return int(row[0]) if row else 0


def clear_project(conn: Conn, schema: Schema) -> None:
    """Delete every file and chunk row of a project (a full re-embed follows)."""
    with conn.transaction():
        conn.execute(schema.sql(statements.DELETE_ALL_FILES))


# --- files and chunks -----------------------------------------------------------------------


def file_states(conn: Conn, schema: Schema) -> dict[tuple[str, str], FileState]:
    states: list[FileState] = typed_rows(conn, FileState, schema.sql(statements.FILE_STATES))
    return {(s.repo, s.path): s for s in states}


def file_states_at(
    conn: Conn, schema: Schema, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], FileState]:
    """The rows of these (repo, path) pairs, and of every file under a pair that is a folder."""
    pairs = sorted(set(keys))
    if not pairs:
        return {}
    params = {"repos": [r for r, _ in pairs], "paths": [p for _, p in pairs]}
    states: list[FileState] = typed_rows(
        conn, FileState, schema.sql(statements.FILE_STATES_AT), params
    )
    return {(s.repo, s.path): s for s in states}


def upsert_file(
    conn: Conn,
    schema: Schema,
    record: FileRecord,
    chunks: Sequence[ChunkRow],
    symbols: Sequence[SymbolRow] = (),
    text: str | None = None,
) -> int:
    """Write one file with exactly these chunks, symbols and text (None: none kept), all or
    nothing; return its id."""
    with conn.transaction():
        row = conn.execute(
            schema.sql(statements.UPSERT_FILE),
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
                    schema.sql(statements.UPSERT_CHUNK),
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
            schema.sql(statements.DELETE_CHUNKS_FROM),
            {"file_id": file_id, "n": len(chunks)},
        )
        _replace_symbols(conn, schema, file_id, symbols)
        conn.execute(schema.sql(statements.DELETE_FILE_TEXT), {"file_id": file_id})
        rows = blocks.text_rows(file_id, text) if text else []
        if rows:
            with (
                conn.cursor() as cur,
                cur.copy(schema.sql(statements.COPY_FILE_TEXT)) as copy,
            ):
                for row in rows:
                    copy.write_row(row)
    return file_id


def _replace_symbols(
    conn: Conn, schema: Schema, file_id: int, symbols: Sequence[SymbolRow]
) -> None:
    conn.execute(schema.sql(statements.DELETE_SYMBOLS), {"file_id": file_id})
    if not symbols:
        return
    conn.execute(
        schema.sql(statements.INSERT_SYMBOLS),
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
    conn: Conn, schema: Schema, repo: str, path: str, error: str, language: str | None = None
) -> None:
    """Note why a file failed; its previous rows (if any) stay as they were."""
    with conn.transaction():
        conn.execute(
            schema.sql(statements.RECORD_FILE_ERROR),
            {"repo": repo, "path": path, "error": error[:2000], "language": language},
        )


def delete_files(conn: Conn, schema: Schema, ids: Iterable[int]) -> int:
    id_list = list(ids)
    if not id_list:
        return 0
    with conn.transaction():
        cur = conn.execute(schema.sql(statements.DELETE_FILES), {"ids": id_list})
    return cur.rowcount


def delete_repos_except(conn: Conn, schema: Schema, repos: Sequence[str]) -> int:
    """Delete the rows of every root no longer configured; return the number of files removed."""
    with conn.transaction():
        cur = conn.execute(schema.sql(statements.DELETE_REPOS_EXCEPT), {"repos": list(repos)})
    return cur.rowcount


def cached_embeddings(conn: Conn, schema: Schema, hashes: Sequence[str]) -> dict[str, Any]:
    """Stored vectors by content hash, for chunks and definitions already embedded."""
    if not hashes:
        return {}
    rows = conn.execute(schema.sql(statements.CACHED_EMBEDDINGS), {"hashes": list(hashes)})
    return {row[0]: row[1] for row in rows}


# --- vectors that follow the rows -----------------------------------------------------------


def pending_counts(conn: Conn, schema: Schema, *, of_all: bool = False) -> PendingCounts:
    """How many chunks and definitions of the project wait for their vectors (read from
    partial indexes: next to nothing once none waits), a failed file's left out (they wait
    for the next sweep); with `of_all`, and when some wait, of how many in all (counting
    those costs a scan)."""
    row = conn.execute(schema.sql(statements.PENDING_COUNTS)).fetchone()
    chunks, definitions = (int(n) for n in row) if row else (0, 0)
    if not (of_all and chunks + definitions):
        return PendingCounts(chunks, definitions)
    every = conn.execute(schema.sql(statements.VECTOR_COUNTS)).fetchone()
    assert every is not None
    return PendingCounts(chunks, definitions, int(every[0]), int(every[1]))


def pending_chunks(conn: Conn, schema: Schema, limit: int) -> list[PendingChunk]:
    """The oldest chunks without their vectors (of files that did not fail), at most `limit`."""
    return typed_rows(conn, PendingChunk, schema.sql(statements.PENDING_CHUNKS), {"limit": limit})


def pending_definitions(conn: Conn, schema: Schema, limit: int) -> list[PendingDefinition]:
    """The oldest definitions without their own vectors (of files that did not fail)."""
    return typed_rows(
        conn, PendingDefinition, schema.sql(statements.PENDING_DEFINITIONS), {"limit": limit}
    )


def file_lines(conn: Conn, schema: Schema, file_ids: Sequence[int]) -> dict[int, list[str]]:
    """The lines of each of the files `file_ids` as the index keeps them (its exact-text
    blocks, in order): line N of a file is item N - 1."""
    lines: dict[int, list[str]] = {}
    rows = conn.execute(schema.sql(statements.TEXT_BLOCKS_OF), {"ids": list(file_ids)})
    for file_id, _, content in rows:
        lines.setdefault(file_id, []).extend(content.split("\n"))
    return lines


def set_vectors(
    conn: Conn,
    schema: Schema,
    chunks: Sequence[tuple[int, str, Any] | tuple[int, str, Any, str]],
    definitions: Sequence[tuple[int, str, Any] | tuple[int, str, Any, str]] = (),
) -> None:
    """Write (id, content hash, vector) of chunks and definitions that wait for theirs, with
    the key to file it under where it is not the hash (a fourth item); a row whose text
    changed meanwhile (another hash), or that was removed, is left alone."""
    with conn.transaction(), conn.cursor() as cur:
        for statement, rows in (
            (statements.SET_CHUNK_VECTOR, chunks),
            (statements.SET_DEFINITION_VECTOR, definitions),
        ):
            if rows:
                cur.executemany(
                    schema.sql(statement),
                    [
                        {
                            "id": r[0],
                            "hash": r[1],
                            "embedding": r[2],
                            "key": r[3] if len(r) > 3 else r[1],
                        }
                        for r in rows
                    ],
                )


def claim_chunks(conn: Conn, schema: Schema, limit: int) -> list[PendingChunk]:
    """`pending_chunks`, locked by this transaction until it ends; rows another transaction
    holds are skipped (another process embeds them)."""
    return typed_rows(conn, PendingChunk, schema.sql(statements.CLAIM_CHUNKS), {"limit": limit})


def claim_definitions(
    conn: Conn, schema: Schema, limit: int, lone: bool = False
) -> list[PendingDefinition]:
    """`pending_definitions`, claimed as `claim_chunks` claims chunks; `lone`: only those of
    files with no chunk pending (the others go with their chunks, `claim_definitions_of_files`)."""
    sql = statements.CLAIM_LONE_DEFINITIONS if lone else statements.CLAIM_DEFINITIONS
    return typed_rows(conn, PendingDefinition, schema.sql(sql), {"limit": limit})


def claim_definitions_of_files(
    conn: Conn, schema: Schema, file_ids: Sequence[int]
) -> list[PendingDefinition]:
    """The pending definitions of the files `file_ids`, claimed as `claim_chunks` claims
    chunks (those another transaction holds skipped)."""
    if not file_ids:
        return []
    sql = schema.sql(statements.CLAIM_DEFINITIONS_OF_FILES)
    return typed_rows(conn, PendingDefinition, sql, {"files": list(file_ids)})


def file_items(
    conn: Conn, schema: Schema, file_ids: Sequence[int]
) -> tuple[dict[int, list[FileChunk]], dict[int, list[FileDefinition]]]:
    """Every chunk, and every definition with a vector of its own, of the files `file_ids`,
    by file, each in its file's order."""
    chunks: dict[int, list[FileChunk]] = {}
    definitions: dict[int, list[FileDefinition]] = {}
    params = {"ids": list(file_ids)}
    for c in typed_rows(conn, FileChunk, schema.sql(statements.CHUNKS_OF_FILES), params):
        chunks.setdefault(c.file_id, []).append(c)
    sql = schema.sql(statements.DEFINITIONS_OF_FILES)
    for d in typed_rows(conn, FileDefinition, sql, params):
        definitions.setdefault(d.file_id, []).append(d)
    return chunks, definitions


def try_record_file_error(
    conn: Conn, schema: Schema, repo: str, path: str, error: str, language: str | None = None
) -> bool:
    """`record_file_error` inside a claim (a savepoint of its transaction), if the file's row
    can be locked at once; False when a sweep holds it (the claim's rows stay pending)."""
    try:
        with conn.transaction():
            conn.execute(
                schema.sql(statements.LOCK_FILE_NOWAIT), {"repo": repo, "path": path}
            ).fetchall()
            record_file_error(conn, schema, repo, path, error, language)
    except psycopg.errors.LockNotAvailable:
        return False
    return True


def take_vectors_share(conn: Conn, schema: Schema) -> bool:
    """Say on `conn` (autocommit, kept meanwhile) that this process fills the project's
    vectors, beside any others (`vectors_running`)."""
    row = conn.execute(statements.TRY_VECTORS_SHARE, {"name": schema.name}).fetchone()
    return bool(row and row[0])


def release_vectors_share(conn: Conn, schema: Schema) -> None:
    conn.execute(statements.VECTORS_SHARE_UNLOCK, {"name": schema.name})


def lock_graphs(conn: Conn, schema: Schema) -> None:
    """Wait for, and hold until the transaction ends, what is done once per project however
    many processes fill its vectors (`try_graphs_lock` holds the same across transactions)."""
    conn.execute(statements.GRAPHS_LOCK, {"name": schema.name})


def try_graphs_lock(conn: Conn, schema: Schema) -> bool:
    """`lock_graphs` on `conn` (autocommit) for as long as it is kept, if no other holds it."""
    row = conn.execute(statements.TRY_GRAPHS_LOCK, {"name": schema.name}).fetchone()
    return bool(row and row[0])


def release_graphs_lock(conn: Conn, schema: Schema) -> None:
    conn.execute(statements.GRAPHS_UNLOCK, {"name": schema.name})


# --- the processes filling a project's vectors ----------------------------------------------


def has_worker_table(conn: Conn, schema: Schema) -> bool:
    """Whether the project's schema has `rag_worker` (migration m009 applied)."""
    table = schema.table(statements.WORKER_TABLE).as_string(conn)
    row = conn.execute(statements.TABLE_EXISTS, {"table": table}).fetchone()
    return bool(row and row[0])


def worker_beat(conn: Conn, schema: Schema, beat: WorkerBeat) -> None:
    """Record that a process is alive now, in its state, adding what it did since its last
    beat to its row's counts; its first beat makes the row."""
    with conn.transaction():
        conn.execute(schema.sql(statements.WORKER_BEAT), asdict(beat))


def worker_leave(conn: Conn, schema: Schema, worker_id: str) -> None:
    """Drop the row of a process that stops filling the project's vectors."""
    with conn.transaction():
        conn.execute(schema.sql(statements.WORKER_LEAVE), {"id": worker_id})


def forget_stale_workers(conn: Conn, schema: Schema) -> int:
    """Drop the rows of processes not seen for a day; return how many went."""
    with conn.transaction():
        return conn.execute(schema.sql(statements.WORKER_FORGET)).rowcount


def live_workers(conn: Conn, schema: Schema, live_s: float) -> list[WorkerRow]:
    """The processes filling the project's vectors seen in the last `live_s` seconds (none
    where the schema predates `rag_worker`)."""
    if not has_worker_table(conn, schema):
        return []
    return typed_rows(
        conn, WorkerRow, schema.sql(statements.LIVE_WORKERS), {"live_s": float(live_s)}
    )


def touch_file(conn: Conn, schema: Schema, file_id: int, size: int, mtime_ns: int) -> None:
    """Record a new size/mtime for a file whose content hash did not change."""
    conn.execute(
        schema.sql(statements.TOUCH_FILE),
        {"id": file_id, "size": size, "mtime_ns": mtime_ns},
    )


# --- sweeps ---------------------------------------------------------------------------------


def try_sweep_lock(conn: Conn, schema: Schema, *, wait: bool = False) -> bool:
    """Take the project's sweep lock on `conn` (an autocommit connection kept for the sweep)."""
    if wait:
        conn.execute(statements.SWEEP_LOCK, {"name": schema.name})
        return True
    row = conn.execute(statements.TRY_SWEEP_LOCK, {"name": schema.name}).fetchone()
    return bool(row and row[0])


def release_sweep_lock(conn: Conn, schema: Schema) -> None:
    conn.execute(statements.SWEEP_UNLOCK, {"name": schema.name})


def sweep_running(conn: Conn, schema: Schema) -> bool:
    """Whether any process holds the project's sweep lock right now."""
    row = conn.execute(statements.SWEEP_LOCK_HELD, {"name": schema.name}).fetchone()
    return row is not None


def vectors_running(conn: Conn, schema: Schema) -> bool:
    """Whether any process is filling the project's pending vectors right now."""
    row = conn.execute(statements.VECTORS_LOCK_HELD, {"name": schema.name}).fetchone()
    return row is not None


def start_sweep(conn: Conn, schema: Schema) -> int:
    with conn.transaction():
        conn.execute(schema.sql(statements.ABANDON_SWEEPS))
        row = conn.execute(schema.sql(statements.START_SWEEP)).fetchone()
    assert row is not None
    return int(row[0])


def finish_sweep(
    conn: Conn, schema: Schema, sweep_id: int, outcome: str, report: dict[str, Any]
) -> None:
    with conn.transaction():
        conn.execute(
            schema.sql(statements.FINISH_SWEEP),
            {"id": sweep_id, "outcome": outcome, "report": Jsonb(report)},
        )


def last_sweeps(conn: Conn, schema: Schema, limit: int = 1) -> list[SweepRecord]:
    return typed_rows(conn, SweepRecord, schema.sql(statements.LAST_SWEEPS), {"limit": limit})


def disk_bytes(conn: Conn, schema: Schema) -> int:
    """The bytes the project's tables and their indexes take on disk."""
    row = conn.execute(statements.SCHEMA_DISK_BYTES, {"name": schema.name}).fetchone()
    return int(row[0]) if row else 0
