"""The schema of a project, as an append-only list of migrations.

Each migration is a name and its statements (`{schema}` is the project's quoted schema name),
applied in order, once, in the transaction that records it in `rag_migration`
(`store.ensure_project`). Never edit or reorder an applied migration: append a new one.
"""

from __future__ import annotations

M001_INITIAL = [
    """
    CREATE TABLE {schema}.rag_meta (
        key text PRIMARY KEY,
        value jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE {schema}.rag_file (
        id bigserial PRIMARY KEY,
        repo text NOT NULL,
        path text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        sha256 text NOT NULL,
        language text,
        chunk_count integer NOT NULL DEFAULT 0,
        indexed_at timestamptz NOT NULL DEFAULT now(),
        error text,
        error_at timestamptz,
        UNIQUE (repo, path)
    )
    """,
    # `embedding` gets its dimension (vector(N)) and HNSW index once the model is known.
    """
    CREATE TABLE {schema}.rag_chunk (
        id bigserial PRIMARY KEY,
        file_id bigint NOT NULL REFERENCES {schema}.rag_file (id) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        symbol text,
        kind text NOT NULL,
        content text NOT NULL,
        content_sha256 text NOT NULL,
        embedding vector,
        tsv tsvector NOT NULL,
        UNIQUE (file_id, ordinal),
        CHECK (start_line >= 1 AND end_line >= start_line)
    )
    """,
    "CREATE INDEX rag_chunk_content_sha256 ON {schema}.rag_chunk (content_sha256)",
    "CREATE INDEX rag_chunk_tsv ON {schema}.rag_chunk USING gin (tsv)",
    """
    CREATE TABLE {schema}.rag_sweep (
        id bigserial PRIMARY KEY,
        started_at timestamptz NOT NULL,
        finished_at timestamptz,
        outcome text NOT NULL,
        report jsonb NOT NULL DEFAULT '{{}}'::jsonb
    )
    """,
]

# Every definition the chunker's parse sees, nested and merged ones too. `chunk_id` is the chunk
# holding the signature line (replaced with the file's chunks, so never dangling). Names are
# looked up exactly and by prefix through lower(name) (text_pattern_ops: LIKE 'abc%' uses it),
# and fuzzily through a pg_trgm index (the extension is created by `db.prepare_database`).
M002_SYMBOLS = [
    """
    CREATE TABLE {schema}.rag_symbol (
        id bigserial PRIMARY KEY,
        file_id bigint NOT NULL REFERENCES {schema}.rag_file (id) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        chunk_id bigint,
        name text NOT NULL,
        qualified_name text NOT NULL,
        kind text NOT NULL,
        start_line integer NOT NULL,
        end_line integer NOT NULL,
        signature_line integer NOT NULL,
        signature text NOT NULL,
        parent text,
        UNIQUE (file_id, ordinal)
    )
    """,
    "CREATE INDEX rag_symbol_name ON {schema}.rag_symbol (lower(name) text_pattern_ops)",
    """
    CREATE INDEX rag_symbol_qualified_name
        ON {schema}.rag_symbol (lower(qualified_name) text_pattern_ops)
    """,
    "CREATE INDEX rag_symbol_name_trgm ON {schema}.rag_symbol USING gin (lower(name) gin_trgm_ops)",
    "CREATE INDEX rag_symbol_chunk ON {schema}.rag_symbol (chunk_id)",
]

# Each indexed file's text as the chunker read it (BOM dropped, newlines as LF, so line N is
# the chunks' line N), for exact-text search: a pg_trgm index finds the files that can match
# a literal or a regex, then their lines are matched one by one. Chunks cannot stand in for
# it: they leave out blank lines between definitions and overlap where a definition is split.
M003_FILE_TEXT = [
    """
    CREATE TABLE {schema}.rag_file_text (
        file_id bigint PRIMARY KEY REFERENCES {schema}.rag_file (id) ON DELETE CASCADE,
        content text NOT NULL
    )
    """,
    "CREATE INDEX rag_file_text_trgm ON {schema}.rag_file_text USING gin (content gin_trgm_ops)",
]

# Exact text in blocks of whole lines (`store.text_rows`: up to ~2,000 characters or 64 lines,
# never a split line) instead of whole files: a trigram index then proposes blocks, and a
# re-check reads a block, not a file. `start_line` is the block's first line in the file.
# `spelled` is `content` with blanks and ASCII punctuation spelled as letters
# (`store.spelled`): pg_trgm builds trigrams from words only, so over `content` a literal such
# as `s.get(` narrows nothing beyond "s" and "get"; over `spelled` it is one word whose
# trigrams span its punctuation. Literals search `spelled`; regexes search `content`.
# The file texts are dropped with their table; forgetting the chunker version makes the next
# sweep read every file again and write its blocks (its chunks' vectors come from the
# content-hash cache: nothing is embedded again).
# Fuzzy names: the distinct lower-cased symbol names (`rag_name`, a fraction of the symbols,
# each row a few bytes) carry the trigram index instead of `rag_symbol`, kept in step by
# statement triggers whoever writes the symbols (row by row or COPY): a name is added with its
# first symbol and removed with its last.
M004_TEXT_BLOCKS = [
    """
    CREATE TABLE {schema}.rag_text_block (
        file_id bigint NOT NULL REFERENCES {schema}.rag_file (id) ON DELETE CASCADE,
        start_line integer NOT NULL CHECK (start_line >= 1),
        content text NOT NULL,
        spelled text NOT NULL,
        PRIMARY KEY (file_id, start_line)
    )
    """,
    "CREATE INDEX rag_text_block_trgm ON {schema}.rag_text_block USING gin (content gin_trgm_ops)",
    """
    CREATE INDEX rag_text_block_spelled_trgm
        ON {schema}.rag_text_block USING gin (spelled gin_trgm_ops)
    """,
    "DROP TABLE {schema}.rag_file_text",
    "DELETE FROM {schema}.rag_meta WHERE key = 'chunker_version'",
    "DROP INDEX {schema}.rag_symbol_name_trgm",
    "CREATE TABLE {schema}.rag_name (name text PRIMARY KEY)",
    "INSERT INTO {schema}.rag_name (name) SELECT DISTINCT lower(name) FROM {schema}.rag_symbol",
    "CREATE INDEX rag_name_trgm ON {schema}.rag_name USING gin (name gin_trgm_ops)",
    """
    CREATE FUNCTION {schema}.rag_name_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {schema}.rag_name (name)
        SELECT DISTINCT lower(a.name) FROM added a
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER rag_symbol_name_add AFTER INSERT ON {schema}.rag_symbol
        REFERENCING NEW TABLE AS added
        FOR EACH STATEMENT EXECUTE FUNCTION {schema}.rag_name_add()
    """,
    """
    CREATE FUNCTION {schema}.rag_name_drop() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM {schema}.rag_name r
         WHERE r.name IN (SELECT lower(d.name) FROM dropped d)
           AND NOT EXISTS (SELECT 1 FROM {schema}.rag_symbol s WHERE lower(s.name) = r.name);
        RETURN NULL;
    END
    $$
    """,
    """
    CREATE TRIGGER rag_symbol_name_drop AFTER DELETE ON {schema}.rag_symbol
        REFERENCING OLD TABLE AS dropped
        FOR EACH STATEMENT EXECUTE FUNCTION {schema}.rag_name_drop()
    """,
]

# The spelled text of blocks becomes ASCII (`store.SPELLING`: blank or punctuation -> `q` and
# a letter or digit), which pg_trgm indexes a quarter faster and smaller than the Cyrillic
# letters before it; and literals and regexes both find their blocks through it (a regex by
# the strings it needs, `needles.py`), so the trigram index on the plain text goes.
_M005_FROM = " \t!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_M005_TO = "abcdefghijkmnoprstvwxyz0123456789q"
M005_SPELLING = tuple(zip(_M005_FROM, ("q" + c for c in _M005_TO), strict=True))


def _m005_spelled(column: str) -> str:
    """`column` spelled in SQL, one replace per character (by code point, so no quote or
    brace of the text needs escaping here)."""
    for char, code in M005_SPELLING:
        column = f"replace({column}, chr({ord(char)}), '{code}')"
    return column


M005_ASCII_SPELLING = [
    "DROP INDEX IF EXISTS {schema}.rag_text_block_trgm",
    "DROP INDEX IF EXISTS {schema}.rag_text_block_spelled_trgm",
    "UPDATE {schema}.rag_text_block SET spelled = " + _m005_spelled("content"),
    """
    CREATE INDEX rag_text_block_spelled_trgm
        ON {schema}.rag_text_block USING gin (spelled gin_trgm_ops)
    """,
]

# A chunk's keyword vector stays in its row (storage MAIN: compressed before it would move out),
# so the keyword ranker reads it with the row instead of through the TOAST table: 43 % of rows
# had it out of line beside their content and vector, and fetching those cost more than the
# ranking itself. The USING expression (the same tsvector) makes PostgreSQL rewrite the table,
# so rows stored before take the new layout too; every index is rebuilt with it, the HNSW graph
# with the denser build options of `sql.CREATE_HNSW` (where the model is known and it exists).
# A new type drops the column's statistics, which the keyword ranker's term rarities come
# from: ANALYZE.
M006_SEARCH_LAYOUT = [
    "ALTER INDEX IF EXISTS {schema}.rag_chunk_embedding_hnsw SET (m = 16, ef_construction = 200)",
    """
    ALTER TABLE {schema}.rag_chunk
        ALTER COLUMN tsv TYPE tsvector USING setweight(tsv, 'A', ARRAY[]::text[]),
        ALTER COLUMN tsv SET STORAGE MAIN
    """,
    "ANALYZE {schema}.rag_chunk",
]

# A definition no chunk speaks for (`chunkers.lone_definitions`: a small one merged into a
# neighbour's chunk, one nested in a bigger definition's chunk) has a vector of its own, which
# raises the chunk holding its signature in the vector ranker (`queries.VECTOR_CANDIDATES`);
# `content_sha256` is its embedding-cache key, read beside the chunks' (`sql.CACHED_EMBEDDINGS`).
# The column gets its dimension and HNSW index where the model is known
# (`store.set_embedding_dimension`); chunker version 6 makes the next sweep re-chunk every file
# and embed these definitions (the chunks' vectors come from the cache).
M007_DEFINITION_VECTORS = [
    "ALTER TABLE {schema}.rag_symbol ADD COLUMN content_sha256 text, ADD COLUMN embedding vector",
    """
    CREATE INDEX rag_symbol_content_sha256 ON {schema}.rag_symbol (content_sha256)
     WHERE content_sha256 IS NOT NULL
    """,
]

# A sweep may write a file's rows before their vectors (`indexer.sweep.vectors`: keyword,
# symbol and exact-text search work at once; the vectors follow in the background). What is
# pending is read from these partial indexes: empty once every vector is in, so they cost
# nothing then, and the background phase finds its next batch and counts what is left by them.
M008_PENDING_VECTORS = [
    "CREATE INDEX rag_chunk_pending ON {schema}.rag_chunk (id) WHERE embedding IS NULL",
    """
    CREATE INDEX rag_symbol_pending ON {schema}.rag_symbol (id)
     WHERE embedding IS NULL AND content_sha256 IS NOT NULL
    """,
]

# The processes filling the project's vectors at once (`indexer.sweep.vectors.Participant`:
# `code-rag worker` on any machine, the server's background phase, `./bld scan`), one row each
# with a heartbeat, for the status to list and add up. Per project rather than one table in the
# shared schema: the status is read per project (by a token that may see one project only), a
# worker's counts and rate are a project's, the rows go with the project's schema, and a user
# that may not create the shared schema still runs workers.
M009_VECTOR_WORKERS = [
    """
    CREATE TABLE {schema}.rag_worker (
        id text PRIMARY KEY,
        role text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        model text NOT NULL,
        started_at timestamptz NOT NULL,
        last_seen timestamptz NOT NULL DEFAULT now(),
        state text NOT NULL,
        written bigint NOT NULL DEFAULT 0,
        embedded bigint NOT NULL DEFAULT 0,
        per_second real NOT NULL DEFAULT 0
    )
    """,
]

# (name, statements): applied in order, each once, each in the transaction that records it.
MIGRATIONS: list[tuple[str, list[str]]] = [
    ("m001_initial", M001_INITIAL),
    ("m002_symbols", M002_SYMBOLS),
    ("m003_file_text", M003_FILE_TEXT),
    ("m004_text_blocks", M004_TEXT_BLOCKS),
    ("m005_ascii_spelling", M005_ASCII_SPELLING),
    ("m006_search_layout", M006_SEARCH_LAYOUT),
    ("m007_definition_vectors", M007_DEFINITION_VECTORS),
    ("m008_pending_vectors", M008_PENDING_VECTORS),
    ("m009_vector_workers", M009_VECTOR_WORKERS),
]
