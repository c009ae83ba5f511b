"""The statements of a bulk load: COPY into an empty (or emptied) project.

The same conventions as `sql.py` (`{schema}` filled only with `psycopg.sql.Identifier` by
`store.statement()`, values as parameters).
"""

from __future__ import annotations

# The other secondary indexes a bulk load drops and builds after it (the migrations create
# them under the same names); rag_chunk_content_sha256 stays: the embedding cache reads it.
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
# Text format: the file-text rows are whatever `store.text_rows` makes of them.
COPY_FILE_TEXT = "COPY {table} ({columns}) FROM STDIN"
