"""Every SQL statement code-rag runs, as named constants.

Statements that touch a project use the placeholder `{schema}`, filled only with
`psycopg.sql.Identifier` by `store.statement()`; values always travel as `%(name)s` parameters.
`MIGRATIONS` is append-only: never edit or reorder an applied step, add a new one.
"""

from __future__ import annotations

from dataclasses import dataclass

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
PG_TRGM_INSTALLED = "SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'"
PG_TRGM_AVAILABLE = "SELECT default_version FROM pg_available_extensions WHERE name = 'pg_trgm'"
CREATE_PG_TRGM = "CREATE EXTENSION IF NOT EXISTS pg_trgm"
DATABASE_EXISTS = "SELECT 1 FROM pg_database WHERE datname = %(name)s"
# For the current transaction only (is_local = true): the pool's connections stay as they were.
SET_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %(ms)s, true)"


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
# 0.983 against 0.938, for about 20 s more of index build (docs/performance.md, Server).
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
REPO_COUNTS = """
SELECT f.repo, count(DISTINCT f.id) FILTER (WHERE f.sha256 <> '') AS files,
       count(c.id) AS chunks
  FROM {schema}.rag_file f
  LEFT JOIN {schema}.rag_chunk c ON c.file_id = f.id
 GROUP BY f.repo
 ORDER BY f.repo
"""
FAILED_FILES = """
SELECT repo, path, error, error_at
  FROM {schema}.rag_file
 WHERE error IS NOT NULL
 ORDER BY error_at DESC, repo, path
 LIMIT %(limit)s
"""

# --- search ---------------------------------------------------------------------------------

# Filters shared by both rankers; a NULL parameter disables its filter.
_SEARCH_FILTERS = """
   AND (%(repo)s::text IS NULL OR f.repo = %(repo)s)
   AND (%(language)s::text IS NULL OR f.language = %(language)s)
   AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
"""
# The same filters over chunks alone, for statements that need nothing else of the file: with
# no filter set the planner folds this to true and reads no file row (as a join it hashed all
# files for every search: 1.7 ms of 14 at 100k chunks). Statements using it are never prepared.
_CHUNK_FILTERS = (
    """
   AND ((%(repo)s::text IS NULL AND %(language)s::text IS NULL AND %(path_re)s::text IS NULL)
        OR EXISTS (SELECT 1 FROM {schema}.rag_file f
                    WHERE f.id = c.file_id"""
    + _SEARCH_FILTERS
    + "))\n"
)
SET_EF_SEARCH = "SELECT set_config('hnsw.ef_search', %(ef)s, true)"
# Filtered searches keep scanning the HNSW graph until enough rows pass the filters
# (pgvector >= 0.8); without it a filter would thin out a short candidate list.
SET_ITERATIVE_SCAN = "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)"
PGVECTOR_HAS_ITERATIVE_SCAN = "SELECT 1 FROM pg_settings WHERE name = 'hnsw.iterative_scan'"
# The chunks nearest to the query, and the definitions no chunk speaks for nearest to it, each
# standing for the chunk holding its signature: a chunk ranks by the nearest of its vectors.
# Each side walks its own HNSW index.
VECTOR_CANDIDATES = (
    """
SELECT v.id, min(v.distance) AS distance
  FROM ((SELECT c.id, c.embedding <=> %(vector)s AS distance
           FROM {schema}.rag_chunk c
           JOIN {schema}.rag_file f ON f.id = c.file_id
          WHERE c.embedding IS NOT NULL
"""
    + _SEARCH_FILTERS
    + """
          ORDER BY c.embedding <=> %(vector)s
          LIMIT %(limit)s)
        UNION ALL
        (SELECT s.chunk_id, s.embedding <=> %(vector)s AS distance
           FROM {schema}.rag_symbol s
           JOIN {schema}.rag_file f ON f.id = s.file_id
          WHERE s.embedding IS NOT NULL AND s.chunk_id IS NOT NULL
"""
    + _SEARCH_FILTERS
    + """
          ORDER BY s.embedding <=> %(vector)s
          LIMIT %(limit)s)) AS v
 GROUP BY v.id
 ORDER BY distance, v.id
 LIMIT %(limit)s
"""
)
# How often each term occurs, from the planner's statistics of `tsv` (ANALYZE keeps the most
# common ~1,000 lexemes with the share of rows holding each); `reltuples` is -1 before any ANALYZE.
KEYWORD_TERM_STATS = """
SELECT c.reltuples AS rows, s.most_common_elems::text::text[] AS terms,
       s.most_common_elem_freqs AS freqs
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stats s
         ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'tsv'
 WHERE n.nspname = %(schema)s AND c.relname = 'rag_chunk'
"""
# The plain ranker: one OR query ranked by cover density. `weights` are {D, C, B, A}: symbol
# names (A) and paths (B) count more than body text (C).
KEYWORD_CANDIDATES = (
    """
SELECT c.id, ts_rank_cd(%(weights)s::float4[], c.tsv, q.query) AS rank
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id,
       to_tsquery('simple', %(tsquery)s) AS q(query)
 WHERE c.tsv @@ q.query
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY rank DESC, c.id
 LIMIT %(limit)s
"""
)
# The weighted ranker: rows matching the selected (rarest) terms, at most `max_ranked` of them,
# scored by the sum over all query terms of idf x the term's field-weighted rank in the chunk.
# `{score}` is that sum, unrolled per term by `keyword_candidates_idf`. `setweight(tsv, 'A',
# ARRAY[])` (weight A for no lexeme: the same tsvector) hands the outer query one decompressed copy
# per row, instead of one per ts_rank call; it only copies, where `tsv || ''` merged the two
# (a third of the ranker's time at 100k chunks).
_KEYWORD_CANDIDATES_IDF = (
    """
SELECT m.id, ({score}) AS score
  FROM (SELECT c.id, setweight(c.tsv, 'A', ARRAY[]::text[]) AS v
          FROM {{schema}}.rag_chunk c
         WHERE c.tsv @@ to_tsquery('simple', %(tsquery)s)
"""
    + _CHUNK_FILTERS.replace("{schema}", "{{schema}}")
    + """
         LIMIT %(max_ranked)s) AS m
 ORDER BY score DESC, m.id
 LIMIT %(limit)s
"""
)
_TERM_SCORE = (
    "%(idfs)s[{i}] * ts_rank(%(weights)s::float4[], m.v, (%(term_queries)s::tsquery[])[{i}],"
    " %(norm)s)"
)


def keyword_candidates_idf(terms: int) -> str:
    """The weighted ranker for `terms` query terms (1..64). One sum in the row, not a subquery
    over the term arrays per row: it ranks in about 60% of the time."""
    if not 1 <= terms <= 64:
        raise ValueError(f"the keyword ranker takes 1 to 64 terms, got {terms}")
    score = " + ".join(_TERM_SCORE.format(i=i) for i in range(1, terms + 1))
    return _KEYWORD_CANDIDATES_IDF.format(score=score)


SYMBOL_MATCHES = (
    """
SELECT c.id
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE (lower(c.symbol) = lower(%(symbol)s)
        OR lower(c.symbol) LIKE '%%.' || lower(%(symbol)s)
        OR lower(c.symbol) LIKE '%%::' || lower(%(symbol)s))
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY length(c.symbol), c.id
 LIMIT 5
"""
)
# A named symbol no chunk is named after: small definitions merged into a neighbour's chunk
# (or a class's) are found by their definition line, among the chunks holding the name.
SYMBOL_DEFINED_IN = (
    """
SELECT c.id
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.tsv @@ to_tsquery('simple', %(term)s)
   AND c.content ~ %(definition_re)s
   AND (%(owner)s::text IS NULL OR lower(c.symbol) = lower(%(owner)s)
        OR lower(c.symbol) LIKE '%%.' || lower(%(owner)s))
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY c.id
 LIMIT 5
"""
)
# Chunks holding `%(pattern)s` (a LIKE pattern) verbatim, with their file's language: files
# through the trigram index on their text blocks (`%(spelled_pattern)s`: the same, spelled),
# then their chunks. `limit` is one more than
# the caller uses, so it can tell a distinctive identifier from a common one.
VERBATIM_CHUNKS = (
    """
SELECT c.id, f.language
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.file_id IN (SELECT b.file_id FROM {schema}.rag_text_block b
                      WHERE b.spelled LIKE %(spelled_pattern)s)
   AND c.content LIKE %(pattern)s
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY c.id
 LIMIT %(limit)s
"""
)
# Rows as `rows.StoredChunk`.
CHUNKS_BY_ID = """
SELECT c.id AS chunk_id, f.repo, f.path, c.start_line, c.end_line, c.symbol, c.kind,
       f.language, c.content, f.indexed_at,
       ARRAY(SELECT s.qualified_name FROM {schema}.rag_symbol s
              WHERE s.chunk_id = c.id ORDER BY s.ordinal) AS symbols
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.id = ANY(%(ids)s)
"""

# Rows as `rows.DefinitionPiece`: of the chunks `ids`, those that are a piece of one definition
# split into windows (its symbol and kind, inside its lines, and not the whole of it), with the
# definition's lines and the chunk holding its signature; the innermost such definition.
DEFINITION_PIECES = """
SELECT DISTINCT ON (c.id) c.id AS chunk_id, coalesce(s.chunk_id, c.id) AS head_id,
       s.start_line, s.end_line
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_symbol s
    ON s.file_id = c.file_id AND s.qualified_name = c.symbol AND s.kind = c.kind
   AND s.start_line <= c.start_line AND c.end_line <= s.end_line
 WHERE c.id = ANY(%(ids)s)
   AND (s.chunk_id IS DISTINCT FROM c.id OR c.end_line < s.end_line)
 ORDER BY c.id, s.end_line - s.start_line
"""

# --- symbols --------------------------------------------------------------------------------

# Rows as `rows.SymbolHit`; `{where}` and `{order}` are filled by `find_symbols` below.
_FIND_SYMBOLS = (
    """
SELECT s.name, s.qualified_name, s.kind, f.language, f.repo, f.path, s.start_line, s.end_line,
       s.signature, s.chunk_id
  FROM {{schema}}.rag_symbol s
  JOIN {{schema}}.rag_file f ON f.id = s.file_id
 WHERE {where}
   AND (%(kind)s::text IS NULL OR s.kind = %(kind)s)
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY {order}, f.repo, f.path, s.start_line
 LIMIT %(limit)s
"""
)
# Separators normalised, so `Subscription.cancel!` finds Ruby's `Billing::Subscription#cancel!`.
_DOTTED = "regexp_replace(s.qualified_name, '::|#', '.', 'g')"
_SYMBOL_WHERE = {
    # The written name, case and all; with owners (`Cart.add`), the qualified name or its tail.
    "exact": "lower(s.name) = lower(%(name)s) AND s.name = %(name)s",
    "exact_qualified": "lower(s.name) = lower(%(name)s) AND s.name = %(name)s"
    f" AND ({_DOTTED} = %(dotted)s OR {_DOTTED} LIKE %(dotted_tail)s)",
    "prefix": "lower(s.name) LIKE %(prefix)s",
    "prefix_qualified": "lower(s.qualified_name) LIKE %(prefix)s",
}
_SYMBOL_ORDER = {
    "exact": "length(s.qualified_name)",
    # The index's own order (text_pattern_ops sorts with ~<~), so a LIMIT stops the scan early.
    "prefix": "lower(s.name) USING ~<~",
}
# A long name has many trigrams, and the planner then prices the trigram index above reading
# every name, which costs ~10 µs a name; within the look-up's transaction only.
PREFER_INDEX_SCANS = "SELECT set_config('enable_seqscan', 'off', true)"
# Fuzzy: the distinct names whose pg_trgm similarity (share of trigrams in common) is above its
# threshold (0.3), found and ranked in the small `rag_name` table, most similar first, then
# their definitions: ties by length, then by place.
FIND_SYMBOLS_FUZZY = (
    """
SELECT s.name, s.qualified_name, s.kind, f.language, f.repo, f.path, s.start_line, s.end_line,
       s.signature, s.chunk_id
  FROM (SELECT r.name, similarity(r.name, lower(%(name)s)) AS sim
          FROM {schema}.rag_name r
         WHERE r.name %% lower(%(name)s)
         ORDER BY sim DESC, length(r.name)) AS n
  JOIN {schema}.rag_symbol s ON lower(s.name) = n.name
  JOIN {schema}.rag_file f ON f.id = s.file_id
 WHERE (%(kind)s::text IS NULL OR s.kind = %(kind)s)
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY n.sim DESC, length(n.name), f.repo, f.path, s.start_line
 LIMIT %(limit)s
"""
)


def find_symbols(where: str, order: str) -> str:
    """The look-up for one match mode (`where`: a key of the conditions above)."""
    return _FIND_SYMBOLS.format(where=_SYMBOL_WHERE[where], order=_SYMBOL_ORDER[order])


INDEXED_FILE = """
SELECT id, language FROM {schema}.rag_file WHERE repo = %(repo)s AND path = %(path)s
   AND sha256 <> ''
"""
# Rows as `rows.OutlineRow`, in the order the chunker listed them (parents first).
FILE_SYMBOLS = """
SELECT name, qualified_name, kind, start_line, end_line, signature, parent
  FROM {schema}.rag_symbol
 WHERE file_id = %(file_id)s
 ORDER BY ordinal
"""

# --- exact text -----------------------------------------------------------------------------

# Rows as `rows.LineMatch`: matching lines of the text blocks that match, at most `limit`
# (the caller asks one more than it shows, to know whether the list is complete). Blocks hold
# whole lines, so each line is in exactly one block and is found once; its number is the
# block's first line plus its place in the block. No ORDER BY: the scan stops as soon as
# `limit` lines are found instead of reading every candidate block first (a common word
# matches most of them); the caller sorts what it got. `{block_match}` narrows blocks through
# the trigram index on `spelled` (the literal, or a regex's needles, spelled) and, for a
# regex, the regex over the block; `{line_match}` picks their lines.
_GREP = (
    """
SELECT m.repo, m.path, (m.start_line + x.n - 1)::int AS line,
       left(x.l, %(max_line_chars)s) AS text
  FROM (SELECT f.id, f.repo, f.path, b.start_line, b.content
          FROM {{schema}}.rag_text_block b
          JOIN {{schema}}.rag_file f ON f.id = b.file_id
         WHERE {block_match}
"""
    + _SEARCH_FILTERS
    + """
       ) AS m,
       LATERAL unnest(string_to_array(m.content, E'\\n')) WITH ORDINALITY AS x(l, n)
 WHERE {line_match}
   {exclude}
 LIMIT %(limit)s
"""
)
_TEXT_MATCH = {
    "like": "{col} LIKE %({param})s",
    "ilike": "{col} ILIKE %({param})s",
    "regex": "{col} ~ %({param})s",
    "iregex": "{col} ~* %({param})s",
}
# find_references: the lines where a symbol of that name is defined are not references to it.
_NOT_A_DEFINITION = """
   AND NOT EXISTS (SELECT 1 FROM {schema}.rag_symbol s
                    WHERE s.file_id = m.id AND s.signature_line = m.start_line + x.n - 1
                      AND s.name = %(name)s)
"""


@dataclass(frozen=True)
class BlockMatch:
    """Which text blocks `grep` reads: those whose `spelled` text matches, with `needle_op`
    (like, ilike), every needle of one alternative (`needles`: each alternative's count;
    parameters `%(needle_<alternative>_<n>)s`, LIKE patterns over the spelled text; none:
    every block), and the block regex (`block_regex`: regex, iregex; parameter
    `%(block_pattern)s`) when given."""

    needles: tuple[int, ...]
    needle_op: str
    block_regex: str | None = None


def grep(line_op: str, block: BlockMatch, *, exclude_definitions: bool = False) -> str:
    """Matching lines: the blocks `block` picks, their lines by `%(line_pattern)s` with
    `line_op` (a key of the text matches above), definition lines of `%(name)s` left out
    when asked."""
    alternatives = [
        " AND ".join(
            _TEXT_MATCH[block.needle_op].format(col="b.spelled", param=f"needle_{a}_{n}")
            for n in range(count)
        )
        for a, count in enumerate(block.needles)
    ]
    conditions = ["(" + " OR ".join(f"({a})" for a in alternatives) + ")"] if alternatives else []
    if block.block_regex is not None:
        conditions.append(
            _TEXT_MATCH[block.block_regex].format(col="b.content", param="block_pattern")
        )
    return _GREP.format(
        block_match="\n           AND ".join(conditions) or "TRUE",
        line_match=_TEXT_MATCH[line_op].format(col="x.l", param="line_pattern"),
        exclude=_NOT_A_DEFINITION if exclude_definitions else "",
    )


CHECK_REGEX = "SELECT '' ~ %(pattern)s"

# --- sweeps ---------------------------------------------------------------------------------

# Session-level advisory locks, one per project, held on a dedicated connection for the whole
# sweep: a killed process drops its connection and with it the lock.
TRY_SWEEP_LOCK = "SELECT pg_try_advisory_lock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_LOCK = "SELECT pg_advisory_lock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_UNLOCK = "SELECT pg_advisory_unlock(hashtext('code-rag:sweep'), hashtext(%(name)s))"
SWEEP_LOCK_HELD = """
SELECT 1 FROM pg_locks
 WHERE locktype = 'advisory' AND granted
   AND classid = hashtext('code-rag:sweep')::oid AND objid = hashtext(%(name)s)::oid
"""
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
TOUCH_FILE = """
UPDATE {schema}.rag_file SET size = %(size)s, mtime_ns = %(mtime_ns)s WHERE id = %(id)s
"""
