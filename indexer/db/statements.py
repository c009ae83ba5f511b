"""The write side's SQL statements as named constants: the server's, project schemas, meta,
the embedding column, files and chunks as a sweep writes them (one by one, or a bulk load's
COPY), summaries and sweeps; `store.py` and `bulk.py` run them. The read path's are in
`queries.py`, the schema's migrations in `migrations.py`.

Statements that touch a project use the placeholder `{schema}`, filled only with
`psycopg.sql.Identifier` by `Schema.sql()`; values always travel as `%(name)s` parameters.
"""

from __future__ import annotations

from psycopg import sql as pgsql

# The marker on every schema we create; nothing without it is ever listed, altered or dropped.
SCHEMA_MARKER = "code-rag project schema"
# One advisory lock serialises schema creation and migration across processes.
MIGRATION_LOCK_KEY = "code-rag:migrate"

# --- server ---------------------------------------------------------------------------------

SERVER_VERSION = "SELECT current_setting('server_version')"
PGVECTOR_INSTALLED = "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
PGVECTOR_AVAILABLE = "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
CREATE_PGVECTOR = "CREATE EXTENSION IF NOT EXISTS vector"
# One embedding cache for every project: vectors by (model, content digest), never the text.
# Its schema's name holds a hyphen, which no project name may, so it is never a project's.
SHARED_SCHEMA = "code-rag"
SHARED_MARKER = "code-rag shared embedding cache"
CREATE_SHARED_CACHE = [
    'CREATE SCHEMA IF NOT EXISTS "code-rag"',
    'COMMENT ON SCHEMA "code-rag" IS \'' + SHARED_MARKER + "'",
    """
    CREATE TABLE IF NOT EXISTS "code-rag".embedding_cache (
        model text NOT NULL,
        digest bytea NOT NULL,
        embedding vector NOT NULL,
        used date NOT NULL DEFAULT current_date,
        PRIMARY KEY (model, digest)
    )
    """,
    'CREATE INDEX IF NOT EXISTS embedding_cache_used ON "code-rag".embedding_cache (used)',
]
SHARED_CACHE_READY = "SELECT to_regclass('\"code-rag\".embedding_cache') IS NOT NULL"
# Every step of CREATE_SHARED_CACHE done: the schema with its marker, and the table's last index.
SHARED_CACHE_COMPLETE = """
SELECT to_regclass('"code-rag".embedding_cache_used') IS NOT NULL
   AND obj_description(to_regnamespace('"code-rag"'), 'pg_namespace') = %(marker)s
"""
SHARED_LOOKUP = """
SELECT encode(digest, 'hex'), embedding FROM "code-rag".embedding_cache
 WHERE model = %(model)s AND digest = ANY(%(digests)s::bytea[])
"""
# Last use is kept by the day: a cache hit writes at most once a day per vector. A vector
# another transaction is marking (a batch of another process, claimed and still embedding)
# is skipped, not waited for: it is being marked used today all the same.
SHARED_TOUCH = """
UPDATE "code-rag".embedding_cache SET used = current_date
 WHERE (model, digest) IN (
       SELECT model, digest FROM "code-rag".embedding_cache
        WHERE model = %(model)s AND digest = ANY(%(digests)s::bytea[]) AND used < current_date
        ORDER BY digest
          FOR UPDATE SKIP LOCKED)
"""
SHARED_PUT = """
INSERT INTO "code-rag".embedding_cache (model, digest, embedding)
VALUES (%(model)s, %(digest)s, %(embedding)s)
ON CONFLICT (model, digest) DO NOTHING
"""
SHARED_COUNT = 'SELECT count(*) FROM "code-rag".embedding_cache'
# The least recently used first; ties by key, so a trim is the same wherever it runs.
SHARED_EVICT = """
DELETE FROM "code-rag".embedding_cache
 WHERE (model, digest) IN (SELECT model, digest FROM "code-rag".embedding_cache
                            ORDER BY used, model, digest LIMIT %(n)s)
"""
SHARED_DROP_MODEL = 'DELETE FROM "code-rag".embedding_cache WHERE model = %(model)s'
# Tokens made for a project or a group (`./bld token add`), beside the cache in the shared
# schema so that every server on this database sees one set. Only a token's SHA-256 digest is
# kept; the unique index on it is the one lookup a request makes.
CREATE_ACCESS_TOKENS = [
    'CREATE SCHEMA IF NOT EXISTS "code-rag"',
    """
    CREATE TABLE IF NOT EXISTS "code-rag".access_token (
        name text PRIMARY KEY,
        digest bytea NOT NULL UNIQUE CHECK (octet_length(digest) = 32),
        target text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz
    )
    """,
]
ACCESS_TOKENS_READY = "SELECT to_regclass('\"code-rag\".access_token') IS NOT NULL"
TOKEN_COLUMNS = "name, target, created_at, last_used_at"
# A name that is taken inserts nothing and returns no row: the caller tries another.
TOKEN_ADD = f"""
INSERT INTO "code-rag".access_token (name, digest, target)
VALUES (%(name)s, %(digest)s, %(target)s)
ON CONFLICT (name) DO NOTHING
RETURNING {TOKEN_COLUMNS}
"""
TOKEN_LIST = f'SELECT {TOKEN_COLUMNS} FROM "code-rag".access_token ORDER BY created_at, name'
TOKEN_FIND = f'SELECT {TOKEN_COLUMNS} FROM "code-rag".access_token WHERE digest = %(digest)s'
TOKEN_REVOKE = f"""
DELETE FROM "code-rag".access_token WHERE name = %(name)s RETURNING {TOKEN_COLUMNS}
"""
# Last use is kept to the minute: a token in steady use writes at most once a minute.
TOKEN_TOUCH = """
UPDATE "code-rag".access_token SET last_used_at = now()
 WHERE name = %(name)s
   AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
"""
PG_TRGM_INSTALLED = "SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'"
PG_TRGM_AVAILABLE = "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_trgm'"
CREATE_PG_TRGM = "CREATE EXTENSION IF NOT EXISTS pg_trgm"
# Optional: a server after a start reads the search's indexes into memory with it.
PG_PREWARM_INSTALLED = "SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'"
PG_PREWARM_AVAILABLE = "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'"
CREATE_PG_PREWARM = "CREATE EXTENSION IF NOT EXISTS pg_prewarm"
DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %(name)s"
# For the current transaction only (is_local = true): the pool's connections stay as they were.
# An interactive read: its statement timeout, and pages read at random costed as what they are
# for an index held in memory (the embedded server sizes its buffers for that; a server of
# one's own should too): at PostgreSQL's default of 4 the planner hashed every definition of a
# project (70 ms at 46,000) to find a few dozen chunks' by index (6 ms).
SET_READ_SETTINGS = """
SELECT set_config('statement_timeout', %(ms)s, true),
       set_config('random_page_cost', %(random_page_cost)s, true)
"""
READ_RANDOM_PAGE_COST = "1.1"
# A read replica's connections: a write that reached one fails instead of changing the index.
SET_READ_ONLY = "SET default_transaction_read_only = on"
# The servers that index this database name their connections so (`Database(application_name)`);
# a replica names them when asked to sweep. Other users' sessions show their application_name.
INDEXER_APPLICATION = "code-rag indexer"
INDEXING_SERVERS = """
SELECT DISTINCT application_name FROM pg_stat_activity
 WHERE datname = current_database() AND application_name LIKE %(prefix)s
 ORDER BY 1
"""


def create_database(name: str) -> pgsql.Composed:
    return pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name))


# The embedded server's own settings (`db.embedded_settings`): what ALTER SYSTEM last wrote
# for one, whether it needs a restart to apply, and writing one.
PERSISTED_SETTING = """
SELECT setting FROM pg_file_settings WHERE name = %(name)s ORDER BY seqno DESC LIMIT 1
"""
SETTING_CONTEXT = "SELECT context FROM pg_settings WHERE name = %(name)s"
RELOAD_CONFIG = "SELECT pg_reload_conf()"


def alter_system(name: str, value: str) -> pgsql.Composed:
    return pgsql.SQL("ALTER SYSTEM SET {} = {}").format(
        pgsql.Identifier(name), pgsql.Literal(value)
    )


# --- project schemas -------------------------------------------------------------------------

LIST_PROJECT_SCHEMAS = """
SELECT n.nspname
  FROM pg_namespace n
 WHERE obj_description(n.oid, 'pg_namespace') = %(marker)s
 ORDER BY n.nspname
"""
SCHEMA_STATE = """
SELECT obj_description(n.oid, 'pg_namespace') AS marker
  FROM pg_namespace n
 WHERE n.nspname = %(name)s
"""
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(hashtext(%(key)s))"
CREATE_SCHEMA = "CREATE SCHEMA {schema}"
# COMMENT takes no parameters: the marker is a constant literal, never user input.
MARK_SCHEMA = "COMMENT ON SCHEMA {schema} IS " + "'" + SCHEMA_MARKER + "'"
DROP_SCHEMA = "DROP SCHEMA {schema} CASCADE"

CREATE_MIGRATION_TABLE = """
CREATE TABLE IF NOT EXISTS {schema}.rag_migration (
    name text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
APPLIED_MIGRATIONS = "SELECT name FROM {schema}.rag_migration"
RECORD_MIGRATION = "INSERT INTO {schema}.rag_migration (name) VALUES (%(name)s)"

# --- meta -----------------------------------------------------------------------------------

GET_META = "SELECT value FROM {schema}.rag_meta WHERE key = %(key)s"
ALL_META = "SELECT key, value FROM {schema}.rag_meta ORDER BY key"
SET_META = """
INSERT INTO {schema}.rag_meta (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
"""

# --- the embedding column -------------------------------------------------------------------

EMBEDDING_DIMENSION = """
SELECT CASE WHEN a.atttypmod > 0 THEN a.atttypmod END AS dim
  FROM pg_attribute a
 WHERE a.attrelid = %(table)s::regclass AND a.attname = 'embedding' AND NOT a.attisdropped
"""
DELETE_ALL_FILES = "DELETE FROM {schema}.rag_file"
# The tables holding vectors: every chunk, and the definitions no chunk speaks for.
VECTOR_TABLES = ("rag_chunk", "rag_symbol")
DROP_HNSW = "DROP INDEX IF EXISTS {schema}.rag_chunk_embedding_hnsw"
DROP_SYMBOL_HNSW = "DROP INDEX IF EXISTS {schema}.rag_symbol_embedding_hnsw"
SET_EMBEDDING_TYPE = "ALTER TABLE {schema}.{table} ALTER COLUMN embedding TYPE vector({dim})"
# Index builds get more memory than the default 64MB, or pgvector builds the graph on disk, slowly.
SET_BUILD_MEMORY = "SELECT set_config('maintenance_work_mem', %(mem)s, true)"
COUNT_CHUNKS = "SELECT count(*) FROM {schema}.rag_chunk"
# The keyword ranker weighs terms by the planner's statistics of `tsv`: refresh them after
# large writes rather than waiting for autovacuum.
ANALYZE_CHUNKS = "ANALYZE {schema}.rag_chunk"
# The trigram indexes are dropped and rebuilt around a bulk load like the HNSW index (the
# migrations create them under the same names).
DROP_TRGM = [
    "DROP INDEX IF EXISTS {schema}.rag_text_block_spelled_trgm",
    "DROP INDEX IF EXISTS {schema}.rag_name_trgm",
]
CREATE_TRGM = [
    "CREATE INDEX IF NOT EXISTS rag_text_block_spelled_trgm"
    " ON {schema}.rag_text_block USING gin (spelled gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS rag_name_trgm ON {schema}.rag_name USING gin (name gin_trgm_ops)",
]
# ef_construction 200 rather than pgvector's 64: at 105k chunks recall@10 at ef_search 400 is
# 0.983 against 0.938, for about 20 s more of index build (docs/lab-log.md, server run 5).
# Migration m006 rebuilt the indexes of earlier releases with these; changing them again
# needs a migration of its own.
HNSW_OPTIONS = "m = 16, ef_construction = 200"


def _create_hnsw(index: str, table: str) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS {index}\n"
        f"    ON {{schema}}.{table} USING hnsw (embedding vector_cosine_ops)\n"
        f"    WITH ({HNSW_OPTIONS})\n"
    )


CREATE_HNSW = _create_hnsw("rag_chunk_embedding_hnsw", "rag_chunk")
HAS_VECTORS = """
SELECT 1 WHERE EXISTS (SELECT 1 FROM {schema}.rag_chunk WHERE embedding IS NOT NULL)
            OR EXISTS (SELECT 1 FROM {schema}.rag_symbol WHERE embedding IS NOT NULL)
"""
# Until the graphs exist (a first index written rows first, its vectors coming in), the vector
# side reads the rows that have their vector through these, not every row of the table: at a
# million chunks with a few thousand vectors in, a search read every chunk.
CREATE_EMBEDDED = [
    "CREATE INDEX IF NOT EXISTS rag_chunk_embedded ON {schema}.rag_chunk (id)"
    " WHERE embedding IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS rag_symbol_embedded ON {schema}.rag_symbol (id)"
    " WHERE embedding IS NOT NULL",
]
DROP_EMBEDDED = [
    "DROP INDEX IF EXISTS {schema}.rag_chunk_embedded",
    "DROP INDEX IF EXISTS {schema}.rag_symbol_embedded",
]
HAS_FILES = "SELECT 1 WHERE EXISTS (SELECT 1 FROM {schema}.rag_file)"
# A bulk load drops the text block's trigram index first and builds it last: while it is
# missing, a bulk load was cut short (killed) and the next sweep goes on with it.
BULK_LOAD_CUT_SHORT = """
SELECT 1 WHERE NOT EXISTS (
    SELECT 1 FROM pg_indexes
     WHERE schemaname = %(schema)s AND indexname = 'rag_text_block_spelled_trgm')
"""
# How many of a project's two HNSW indexes exist.
VECTOR_INDEXES = """
SELECT count(*) FROM pg_indexes
 WHERE schemaname = %(schema)s
   AND indexname IN ('rag_chunk_embedding_hnsw', 'rag_symbol_embedding_hnsw')
"""
# How many of the two indexes of the rows with a vector (CREATE_EMBEDDED) exist: looked up
# before creating them, as CREATE INDEX IF NOT EXISTS locks the table even when it does nothing.
EMBEDDED_INDEXES = """
SELECT count(*) FROM pg_indexes
 WHERE schemaname = %(schema)s AND indexname IN ('rag_chunk_embedded', 'rag_symbol_embedded')
"""
CREATE_SYMBOL_HNSW = _create_hnsw("rag_symbol_embedding_hnsw", "rag_symbol")

# --- files and chunks -----------------------------------------------------------------------

FILE_STATES = """
SELECT id, repo, path, size, mtime_ns, sha256, chunk_count, error
  FROM {schema}.rag_file
"""
# The rows at these paths, or under them (a folder that was deleted or moved away).
FILE_STATES_AT = """
SELECT f.id, f.repo, f.path, f.size, f.mtime_ns, f.sha256, f.chunk_count, f.error
  FROM {schema}.rag_file f
  JOIN unnest(%(repos)s::text[], %(paths)s::text[]) AS k(repo, path)
    ON f.repo = k.repo AND (f.path = k.path OR starts_with(f.path, k.path || '/'))
"""
UPSERT_FILE = """
INSERT INTO {schema}.rag_file
       (repo, path, size, mtime_ns, sha256, language, chunk_count, indexed_at, error, error_at)
VALUES (%(repo)s, %(path)s, %(size)s, %(mtime_ns)s, %(sha256)s, %(language)s, %(chunk_count)s,
        now(), NULL, NULL)
ON CONFLICT (repo, path) DO UPDATE
   SET size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns, sha256 = EXCLUDED.sha256,
       language = EXCLUDED.language, chunk_count = EXCLUDED.chunk_count,
       indexed_at = now(), error = NULL, error_at = NULL
RETURNING id
"""
UPSERT_CHUNK = """
INSERT INTO {schema}.rag_chunk
       (file_id, ordinal, start_line, end_line, symbol, kind, content, content_sha256,
        embedding, tsv)
VALUES (%(file_id)s, %(ordinal)s, %(start_line)s, %(end_line)s, %(symbol)s, %(kind)s,
        %(content)s, %(content_sha256)s, %(embedding)s,
        setweight(to_tsvector('simple', %(symbol_terms)s), 'A')
        || setweight(to_tsvector('simple', %(path_terms)s), 'B')
        || setweight(to_tsvector('simple', %(body_terms)s), 'C'))
ON CONFLICT (file_id, ordinal) DO UPDATE
   SET start_line = EXCLUDED.start_line, end_line = EXCLUDED.end_line,
       symbol = EXCLUDED.symbol, kind = EXCLUDED.kind, content = EXCLUDED.content,
       content_sha256 = EXCLUDED.content_sha256, embedding = EXCLUDED.embedding,
       tsv = EXCLUDED.tsv
"""
# Each file's text for exact-text search, in blocks of whole lines: the rows come from
# `store.text_rows`, in this column order, for every writer (row by row or COPY).
FILE_TEXT_TABLE = "rag_text_block"
FILE_TEXT_COLUMNS = ("file_id", "start_line", "content", "spelled")
COPY_FILE_TEXT = (
    "COPY {schema}." + FILE_TEXT_TABLE + " (" + ", ".join(FILE_TEXT_COLUMNS) + ") FROM STDIN"
)
DELETE_FILE_TEXT = "DELETE FROM {schema}." + FILE_TEXT_TABLE + " WHERE file_id = %(file_id)s"
DELETE_SYMBOLS = "DELETE FROM {schema}.rag_symbol WHERE file_id = %(file_id)s"
# One statement per file: the symbols as parallel arrays, each joined to its chunk's id.
INSERT_SYMBOLS = """
INSERT INTO {schema}.rag_symbol
       (file_id, ordinal, chunk_id, name, qualified_name, kind, start_line, end_line,
        signature_line, signature, parent, content_sha256, embedding)
SELECT %(file_id)s, s.ordinal, c.id, s.name, s.qualified_name, s.kind, s.start_line,
       s.end_line, s.signature_line, s.signature, s.parent, s.content_sha256, s.embedding
  FROM unnest(%(ordinals)s::int[], %(chunks)s::int[], %(names)s::text[],
              %(qualified_names)s::text[], %(kinds)s::text[], %(start_lines)s::int[],
              %(end_lines)s::int[], %(signature_lines)s::int[], %(signatures)s::text[],
              %(parents)s::text[], %(content_sha256s)s::text[], %(embeddings)s::vector[])
       AS s(ordinal, chunk, name, qualified_name, kind, start_line, end_line, signature_line,
            signature, parent, content_sha256, embedding)
  LEFT JOIN {schema}.rag_chunk c ON c.file_id = %(file_id)s AND c.ordinal = s.chunk
"""
DELETE_CHUNKS_FROM = (
    "DELETE FROM {schema}.rag_chunk WHERE file_id = %(file_id)s AND ordinal >= %(n)s"
)
# A failed file keeps its previous chunks and size/mtime (so the next sweep retries it); a file
# never indexed gets a row that holds only the failure.
RECORD_FILE_ERROR = """
INSERT INTO {schema}.rag_file
       (repo, path, size, mtime_ns, sha256, language, chunk_count, error, error_at)
VALUES (%(repo)s, %(path)s, -1, -1, '', %(language)s, 0, %(error)s, now())
ON CONFLICT (repo, path) DO UPDATE SET error = EXCLUDED.error, error_at = now()
"""
DELETE_FILES = "DELETE FROM {schema}.rag_file WHERE id = ANY(%(ids)s)"
DELETE_REPOS_EXCEPT = "DELETE FROM {schema}.rag_file WHERE NOT (repo = ANY(%(repos)s))"
CACHED_EMBEDDINGS = """
SELECT DISTINCT ON (content_sha256) content_sha256, embedding
  FROM (SELECT content_sha256, embedding
          FROM {schema}.rag_chunk
         WHERE content_sha256 = ANY(%(hashes)s) AND embedding IS NOT NULL
        UNION ALL
        SELECT content_sha256, embedding
          FROM {schema}.rag_symbol
         WHERE content_sha256 = ANY(%(hashes)s) AND embedding IS NOT NULL) AS v
"""

# --- summaries ------------------------------------------------------------------------------

PROJECT_COUNTS = """
SELECT %(name)s::text AS name,
       (SELECT count(*) FROM {schema}.rag_file WHERE sha256 <> '') AS files,
       (SELECT count(*) FROM {schema}.rag_chunk) AS chunks,
       (SELECT count(*) FROM {schema}.rag_file WHERE error IS NOT NULL) AS failed_files,
       (SELECT max(finished_at) FROM {schema}.rag_sweep) AS last_sweep_at,
       (SELECT count(*) FROM {schema}.rag_migration) AS schema_version
"""
# A file's chunk_count is written with its chunks, in the same transaction (a failed file keeps
# both): summing it reads the files alone, where joining the chunks took 0.2 s at 81k chunks.
REPO_COUNTS = """
SELECT repo, count(*) FILTER (WHERE sha256 <> '') AS files,
       coalesce(sum(chunk_count), 0)::bigint AS chunks
  FROM {schema}.rag_file
 GROUP BY repo
 ORDER BY repo
"""
FAILED_FILES = """
SELECT repo, path, error, error_at
  FROM {schema}.rag_file
 WHERE error IS NOT NULL
 ORDER BY error_at DESC, repo, path
 LIMIT %(limit)s
"""

# --- sweeps ---------------------------------------------------------------------------------

# Session-level advisory locks, one per project, held on a dedicated connection for the whole
# sweep: a killed process drops its connection and with it the lock.
# The vectors that follow a sweep's rows (`indexer.sweep.vectors`) are filled by any number of
# processes at once, each claiming its batches (CLAIM_CHUNKS); each holds this lock *shared*
# while it takes part, so that whoever asks sees that someone fills them (VECTORS_LOCK_HELD).
# A try, never a wait: a process that cannot have it shared fills the vectors all the same.
TRY_VECTORS_SHARE = (
    "SELECT pg_try_advisory_lock_shared(hashtext('code-rag:vectors'), hashtext(%(name)s))"
)
VECTORS_SHARE_UNLOCK = (
    "SELECT pg_advisory_unlock_shared(hashtext('code-rag:vectors'), hashtext(%(name)s))"
)
# What happens once per project however many fill its vectors: taking up an index written
# model-free, the indexes of the rows with a vector, and the HNSW graphs built when nothing is
# left pending. Within a transaction (the first two) or on the session that builds the graphs.
GRAPHS_LOCK = "SELECT pg_advisory_xact_lock(hashtext('code-rag:graphs'), hashtext(%(name)s))"
TRY_GRAPHS_LOCK = "SELECT pg_try_advisory_lock(hashtext('code-rag:graphs'), hashtext(%(name)s))"
GRAPHS_UNLOCK = "SELECT pg_advisory_unlock(hashtext('code-rag:graphs'), hashtext(%(name)s))"
# The chunks and definitions written without their vectors, oldest first, of files that did
# not fail (a file whose inputs the embedder refused waits for the next sweep to read it again).
PENDING_CHUNKS = """
SELECT c.id, c.content_sha256, c.start_line, c.end_line, c.content, c.symbol, c.kind,
       f.repo, f.path, f.language, c.file_id
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.embedding IS NULL AND f.error IS NULL
 ORDER BY c.id
 LIMIT %(limit)s
"""
PENDING_DEFINITIONS = """
SELECT s.id, s.content_sha256, s.qualified_name, s.kind, s.start_line, s.end_line, s.file_id,
       f.repo, f.path, f.language
  FROM {schema}.rag_symbol s
  JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE s.embedding IS NULL AND s.content_sha256 IS NOT NULL AND f.error IS NULL
 ORDER BY s.id
 LIMIT %(limit)s
"""
# A claim: the same rows, locked until the claiming transaction ends, skipping those another
# transaction holds. The claim lasts while its batch is embedded and its vectors written, then
# commits; a process that dies mid-batch loses its transaction, and the rows are pending again
# for whoever claims next. Only the chunk or definition is locked, never its file: a sweep
# rewriting the file waits at its rows for the batch in flight, and nothing waits on a sweep.
CLAIM_CHUNKS = PENDING_CHUNKS + "   FOR UPDATE OF c SKIP LOCKED\n"
CLAIM_DEFINITIONS = PENDING_DEFINITIONS + "   FOR UPDATE OF s SKIP LOCKED\n"
# With each line read once, the pending definitions of files with no chunk pending: those of a
# file whose chunk is pending are claimed with it (CLAIM_DEFINITIONS_OF_FILES), so no two
# processes ask the model for the same part, one for the definition and one for its chunk.
CLAIM_LONE_DEFINITIONS = """
SELECT s.id, s.content_sha256, s.qualified_name, s.kind, s.start_line, s.end_line, s.file_id,
       f.repo, f.path, f.language
  FROM {schema}.rag_symbol s
  JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE s.embedding IS NULL AND s.content_sha256 IS NOT NULL AND f.error IS NULL
   AND NOT EXISTS (SELECT 1 FROM {schema}.rag_chunk c
                    WHERE c.file_id = s.file_id AND c.embedding IS NULL)
 ORDER BY s.id
 LIMIT %(limit)s
   FOR UPDATE OF s SKIP LOCKED
"""
# With each line read once (`chunk_vectors = parts`) a chunk and the definitions inside it share
# their parts: a claim of chunks takes the pending definitions of their files too, and reads
# every chunk and definition of those files, whose parts depend on one another.
CLAIM_DEFINITIONS_OF_FILES = """
SELECT s.id, s.content_sha256, s.qualified_name, s.kind, s.start_line, s.end_line, s.file_id,
       f.repo, f.path, f.language
  FROM {schema}.rag_symbol s
  JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE s.file_id = ANY(%(files)s)
   AND s.embedding IS NULL AND s.content_sha256 IS NOT NULL AND f.error IS NULL
 ORDER BY s.id
   FOR UPDATE OF s SKIP LOCKED
"""
CHUNKS_OF_FILES = """
SELECT file_id, id, start_line, end_line, content, symbol, kind, content_sha256
  FROM {schema}.rag_chunk WHERE file_id = ANY(%(ids)s)
 ORDER BY file_id, ordinal
"""
DEFINITIONS_OF_FILES = """
SELECT file_id, id, qualified_name, kind, start_line, end_line, content_sha256
  FROM {schema}.rag_symbol WHERE file_id = ANY(%(ids)s) AND content_sha256 IS NOT NULL
 ORDER BY file_id, ordinal
"""
# A claim's failed file is recorded only if its row can be locked at once: a sweep holding it
# (rewriting or deleting the file) may be waiting for the claim's rows, and waiting for it in
# turn would be a deadlock; the rows stay pending and the next claim decides again.
LOCK_FILE_NOWAIT = """
SELECT 1 FROM {schema}.rag_file WHERE repo = %(repo)s AND path = %(path)s
   FOR NO KEY UPDATE NOWAIT
"""
TEXT_BLOCKS_OF = """
SELECT file_id, start_line, content FROM {schema}.rag_text_block
 WHERE file_id = ANY(%(ids)s)
 ORDER BY file_id, start_line
"""
PENDING_COUNTS = """
SELECT (SELECT count(*) FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
         WHERE c.embedding IS NULL AND f.error IS NULL),
       (SELECT count(*) FROM {schema}.rag_symbol s JOIN {schema}.rag_file f ON f.id = s.file_id
         WHERE s.embedding IS NULL AND s.content_sha256 IS NOT NULL AND f.error IS NULL)
"""
VECTOR_COUNTS = """
SELECT (SELECT count(*) FROM {schema}.rag_chunk),
       (SELECT count(*) FROM {schema}.rag_symbol WHERE content_sha256 IS NOT NULL)
"""
# A vector goes in only where the row still holds the text it was made from, and has none yet.
# `key`: the key the vector is filed under, the row's own unless its texts were keyed for
# another way of cutting them (an index written model-free, taken up with chunk_vectors = parts).
SET_CHUNK_VECTOR = """
UPDATE {schema}.rag_chunk SET embedding = %(embedding)s, content_sha256 = %(key)s
 WHERE id = %(id)s AND content_sha256 = %(hash)s AND embedding IS NULL
"""
SET_DEFINITION_VECTOR = """
UPDATE {schema}.rag_symbol SET embedding = %(embedding)s, content_sha256 = %(key)s
 WHERE id = %(id)s AND content_sha256 = %(hash)s AND embedding IS NULL
"""
TRY_SWEEP_LOCK = "SELECT pg_try_advisory_lock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_LOCK = "SELECT pg_advisory_lock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_UNLOCK = "SELECT pg_advisory_unlock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_LOCK_HELD = """
SELECT 1 FROM pg_locks
 WHERE locktype = 'advisory' AND granted
   AND classid = hashtext('code-rag:sweep')::oid AND objid = hashtext(%(name)s)::oid
"""
VECTORS_LOCK_HELD = """
SELECT 1 FROM pg_locks
 WHERE locktype = 'advisory' AND granted
   AND classid = hashtext('code-rag:vectors')::oid AND objid = hashtext(%(name)s)::oid
 LIMIT 1
"""
# The processes filling a project's vectors (`indexer.sweep.vectors.Participant`), one row
# each in the project's `rag_worker` (migration m009), written after their batches and, idle,
# when a worker polls. Counts are added (`written`: vectors written, `embedded`: texts the
# model embedded, since the process began with the project); the rate is its current run's.
WORKER_TABLE = "rag_worker"
WORKER_BEAT = """
INSERT INTO {schema}.rag_worker AS w
       (id, role, host, pid, model, started_at, last_seen, state, written, embedded,
        per_second)
VALUES (%(id)s, %(role)s, %(host)s, %(pid)s, %(model)s, %(started_at)s, now(), %(state)s,
        %(written)s, %(embedded)s, %(per_second)s)
ON CONFLICT (id) DO UPDATE
   SET last_seen = now(), state = EXCLUDED.state, model = EXCLUDED.model,
       written = w.written + EXCLUDED.written, embedded = w.embedded + EXCLUDED.embedded,
       per_second = EXCLUDED.per_second
"""
WORKER_LEAVE = "DELETE FROM {schema}.rag_worker WHERE id = %(id)s"
# Rows of processes not seen for a day (killed, their machine gone) are dropped by the next
# process that takes part; until then the status leaves out those not seen recently.
WORKER_FORGET = """
DELETE FROM {schema}.rag_worker WHERE last_seen < now() - interval '1 day'
"""
LIVE_WORKERS = """
SELECT id, role, host, pid, model, started_at, last_seen, state, written, embedded,
       per_second
  FROM {schema}.rag_worker
 WHERE last_seen >= now() - make_interval(secs => %(live_s)s)
 ORDER BY started_at, id
"""
TABLE_EXISTS = "SELECT to_regclass(%(table)s) IS NOT NULL"
START_SWEEP = """
INSERT INTO {schema}.rag_sweep (started_at, outcome) VALUES (now(), 'running') RETURNING id
"""
FINISH_SWEEP = """
UPDATE {schema}.rag_sweep SET finished_at = now(), outcome = %(outcome)s, report = %(report)s
 WHERE id = %(id)s
"""
# A sweep whose process died leaves 'running' behind; the next one marks it.
ABANDON_SWEEPS = """
UPDATE {schema}.rag_sweep SET outcome = 'interrupted', finished_at = now()
 WHERE outcome = 'running'
"""
LAST_SWEEPS = """
SELECT id, started_at, finished_at, outcome, report
  FROM {schema}.rag_sweep
 ORDER BY id DESC
 LIMIT %(limit)s
"""
# The disk a project's index takes: its tables with their indexes and TOAST data.
SCHEMA_DISK_BYTES = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(name)s AND c.relkind IN ('r', 'm')
"""
TOUCH_FILE = """
UPDATE {schema}.rag_file SET size = %(size)s, mtime_ns = %(mtime_ns)s WHERE id = %(id)s
"""


# --- bulk load: COPY into an empty (or emptied) project -----------------------------------

# The other secondary indexes (the migrations create them under the same names). A bulk load
# keeps them and builds those missing at its end (a load cut short by an earlier release had
# dropped them); a copy made one statement per table drops them first.
# rag_chunk_content_sha256 always stays: the embedding cache reads it.
DROP_SECONDARY = [
    "DROP INDEX IF EXISTS {schema}.rag_chunk_tsv",
    "DROP INDEX IF EXISTS {schema}.rag_symbol_name",
    "DROP INDEX IF EXISTS {schema}.rag_symbol_qualified_name",
    "DROP INDEX IF EXISTS {schema}.rag_symbol_chunk",
]
CREATE_SECONDARY = [
    "CREATE INDEX IF NOT EXISTS rag_chunk_tsv ON {schema}.rag_chunk USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS rag_symbol_name"
    " ON {schema}.rag_symbol (lower(name) text_pattern_ops)",
    "CREATE INDEX IF NOT EXISTS rag_symbol_qualified_name"
    " ON {schema}.rag_symbol (lower(qualified_name) text_pattern_ops)",
    "CREATE INDEX IF NOT EXISTS rag_symbol_chunk ON {schema}.rag_symbol (chunk_id)",
]
# Index builds may use this many parallel workers (for the current transaction only).
SET_BUILD_WORKERS = "SELECT set_config('max_parallel_maintenance_workers', %(workers)s, true)"

# Ids for `n` new rows of `table` (a qualified table name), drawn from its id sequence.
NEXT_IDS = "SELECT nextval(pg_get_serial_sequence(%(table)s, 'id')) FROM generate_series(1, %(n)s)"
COPY_FILES = """
COPY {schema}.rag_file (id, repo, path, size, mtime_ns, sha256, language, chunk_count)
FROM STDIN (FORMAT BINARY)
"""
COPY_FILES_TYPES = ["int8", "text", "text", "int8", "int8", "text", "text", "int4"]
# Chunks go through a staging table that lives for one transaction: COPY cannot compute the
# keyword vector, the INSERT ... SELECT after it does (the same expression as UPSERT_CHUNK).
CREATE_CHUNK_STAGING = """
CREATE TEMP TABLE rag_chunk_load (
    id bigint, file_id bigint, ordinal integer, start_line integer, end_line integer,
    symbol text, kind text, content text, content_sha256 text, embedding vector,
    symbol_terms text, path_terms text, body_terms text
) ON COMMIT DROP
"""
COPY_CHUNK_STAGING = "COPY pg_temp.rag_chunk_load FROM STDIN (FORMAT BINARY)"
COPY_CHUNK_STAGING_TYPES = [
    "int8", "int8", "int4", "int4", "int4", "text", "text", "text", "text", "vector",
    "text", "text", "text",
]  # fmt: skip
INSERT_STAGED_CHUNKS = """
INSERT INTO {schema}.rag_chunk
       (id, file_id, ordinal, start_line, end_line, symbol, kind, content, content_sha256,
        embedding, tsv)
SELECT id, file_id, ordinal, start_line, end_line, symbol, kind, content, content_sha256,
       embedding,
       setweight(to_tsvector('simple', symbol_terms), 'A')
       || setweight(to_tsvector('simple', path_terms), 'B')
       || setweight(to_tsvector('simple', body_terms), 'C')
  FROM pg_temp.rag_chunk_load
"""
DROP_CHUNK_STAGING = "DROP TABLE IF EXISTS pg_temp.rag_chunk_load"
COPY_SYMBOLS = """
COPY {schema}.rag_symbol
     (file_id, ordinal, chunk_id, name, qualified_name, kind, start_line, end_line,
      signature_line, signature, parent, content_sha256, embedding)
FROM STDIN (FORMAT BINARY)
"""
COPY_SYMBOLS_TYPES = [
    "int8", "int4", "int8", "text", "text", "text", "int4", "int4", "int4", "text", "text",
    "text", "vector",
]  # fmt: skip
