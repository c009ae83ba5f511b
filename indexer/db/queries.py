"""The statements of the read path, which `lookup.py` runs: the two rankers' candidates and
what shapes them into hits, the symbol table's lookups, and exact text (`grep`).

The same conventions as `statements.py` (`{schema}` filled only with `psycopg.sql.Identifier`
by `Schema.sql()`, values as parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

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
# An unfiltered vector statement walks the HNSW graphs, whatever the planner reckons: it costs
# each vector as if read with its row, but vectors over 2 kB (768-d) live in TOAST, so it would
# pick a scan and sort of every vector (the definitions' table: ~90,000 buffers, a second, at
# 29,000 vectors) over the graph (a few thousand). Set for that statement alone: the settings
# as they were come back with it and are put back after (`RESTORE_PLANNER`). With no graph yet
# (a first index) the scan is all there is.
WALK_VECTOR_GRAPHS = """
SELECT current_setting('enable_seqscan'), current_setting('enable_sort'),
       set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true)
"""
# The keyword statement reads the rows its rarest terms match (a bounded share of the table)
# through the GIN index, whatever the planner reckons: past a few thousand estimated rows it
# would scan and test every chunk's keyword vector instead (≈ 0.1 s at 25k chunks, against a
# few ms). Put back after with `RESTORE_SEQSCAN`.
READ_KEYWORD_INDEX = """
SELECT current_setting('enable_seqscan'), set_config('enable_seqscan', 'off', true)
"""
RESTORE_SEQSCAN = "SELECT set_config('enable_seqscan', %(seqscan)s, true)"
RESTORE_PLANNER = (
    "SELECT set_config('enable_seqscan', %(seqscan)s, true), "
    "set_config('enable_sort', %(sort)s, true)"
)
# Filtered searches keep scanning the HNSW graph until enough rows pass the filters
# (pgvector >= 0.8); without it a filter would thin out a short candidate list.
SET_ITERATIVE_SCAN = "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)"
# The chunks nearest to the query, and the definitions no chunk speaks for nearest to it, each
# standing for the chunk holding its signature: a chunk ranks by the nearest of its vectors.
# Each side walks its own HNSW index.
VECTOR_CANDIDATES = (
    """
SELECT v.id, min(v.distance) AS distance, min(v.file_id) AS file_id, min(v.path) AS path
  FROM ((SELECT c.id, c.embedding <=> %(vector)s AS distance, c.file_id, f.path
           FROM {schema}.rag_chunk c
           JOIN {schema}.rag_file f ON f.id = c.file_id
          WHERE c.embedding IS NOT NULL
"""
    + _SEARCH_FILTERS
    + """
          ORDER BY c.embedding <=> %(vector)s
          LIMIT %(limit)s)
        UNION ALL
        (SELECT s.chunk_id, s.embedding <=> %(vector)s AS distance, s.file_id, f.path
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
# The weighted ranker: rows matching the selected (rarest) terms, at most `max_ranked` of them,
# scored by the sum over all query terms of idf x the term's field-weighted rank in the chunk;
# the files' paths read for the `limit` best only.
# `{score}` is that sum, unrolled per term by `keyword_candidates_idf`. `setweight(tsv, 'A',
# ARRAY[])` (weight A for no lexeme: the same tsvector) hands the outer query one decompressed copy
# per row, instead of one per ts_rank call; it only copies, where `tsv || ''` merged the two
# (a third of the ranker's time at 100k chunks).
_KEYWORD_CANDIDATES_IDF = (
    """
SELECT r.id, r.score, r.file_id, f.path
  FROM (SELECT m.id, ({score}) AS score, m.file_id
          FROM (SELECT c.id, c.file_id, setweight(c.tsv, 'A', ARRAY[]::text[]) AS v
                  FROM {{schema}}.rag_chunk c
                 WHERE c.tsv @@ to_tsquery('simple', %(tsquery)s)
"""
    + _CHUNK_FILTERS.replace("{schema}", "{{schema}}")
    + """
                 LIMIT %(max_ranked)s) AS m
         ORDER BY score DESC, m.id
         LIMIT %(limit)s) AS r
  JOIN {{schema}}.rag_file f ON f.id = r.file_id
 ORDER BY r.score DESC, r.id
"""
)
_TERM_SCORE = (
    "%(idfs)s[{i}] * ts_rank(%(weights)s::float4[], m.v, (%(term_queries)s::tsquery[])[{i}])"
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
# Chunks holding `%(pattern)s` (a LIKE pattern) verbatim, with their file's language: the
# first `limit` files (by id) holding it in their text blocks, found through the trigram index
# (`%(spelled_pattern)s`: the same, spelled), then their chunks holding it, at most `limit`.
# `limit` is one more than the caller uses, so it can tell a distinctive identifier from a
# common one; a file holding it has a chunk holding it, so `limit` files are enough to tell,
# and a common identifier costs `limit` files' chunks, not every file's (at 120,000 files,
# `spin_lock_irqsave`: 3,718 files, 1.3 s, against 41 files, 0.16 s). Without the trigram
# index (a bulk load builds it at its end) nothing is read: finding the blocks would scan the
# whole text, seconds of both cores per search at that size; the test is one catalog lookup
# per statement.
VERBATIM_CHUNKS = (
    """
SELECT c.id, hit.language
  FROM (SELECT DISTINCT b.file_id, f.language
          FROM {schema}.rag_text_block b
          JOIN {schema}.rag_file f ON f.id = b.file_id
         WHERE b.spelled LIKE %(spelled_pattern)s
           AND EXISTS (SELECT 1 FROM pg_indexes
                        WHERE schemaname = %(schema)s
                          AND indexname = 'rag_text_block_spelled_trgm')
"""
    + _SEARCH_FILTERS
    + """
         ORDER BY b.file_id
         LIMIT %(limit)s) hit
  JOIN {schema}.rag_chunk c ON c.file_id = hit.file_id
 WHERE c.content LIKE %(pattern)s
 ORDER BY c.id
 LIMIT %(limit)s
"""
)
# Files by name, for the files a query names (`search.reading`): the indexed paths equal to
# one of `names` or ending in `/` and one of them (the `suffixes`, LIKE patterns).
FILES_NAMED = (
    """
SELECT f.id, f.path
  FROM {schema}.rag_file f
 WHERE (f.path = ANY(%(names)s) OR f.path LIKE ANY(%(suffixes)s))
"""
    + _SEARCH_FILTERS
    + """
 ORDER BY f.id
 LIMIT %(limit)s
"""
)
# Per (file, line) asked for, in order: the file's chunk holding the line (the innermost, when
# definitions nest), or its first chunk when no line is given or none holds it.
CHUNK_AT_LINE = """
SELECT DISTINCT ON (w.n) w.n, c.id, c.file_id
  FROM unnest(%(files)s::bigint[], %(lines)s::integer[]) WITH ORDINALITY AS w(file_id, line, n)
  JOIN {schema}.rag_chunk c ON c.file_id = w.file_id
 ORDER BY w.n,
          (w.line IS NOT NULL AND c.start_line <= w.line AND c.end_line >= w.line) DESC,
          CASE WHEN w.line IS NOT NULL AND c.start_line <= w.line AND c.end_line >= w.line
               THEN c.end_line - c.start_line ELSE 0 END,
          c.ordinal
"""
# Rows as `rows.StoredChunk`. A chunk's symbols are its file's, read by the file's key (the
# index of symbols by chunk may be missing, and then this read every symbol).
CHUNKS_BY_ID = """
SELECT c.id AS chunk_id, f.repo, f.path, c.start_line, c.end_line, c.symbol, c.kind,
       f.language, c.content, f.indexed_at,
       ARRAY(SELECT s.qualified_name FROM {schema}.rag_symbol s
              WHERE s.file_id = c.file_id AND s.chunk_id = c.id ORDER BY s.ordinal) AS symbols
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.id = ANY(%(ids)s)
"""

# Rows as `rows.RangeBlock`: for each line range (parallel arrays of repo, path, first and
# last line), the blocks of its file's indexed text holding its lines, in order: from the block
# holding its first line (the last one starting at or before it) to the last starting within it.
RANGE_BLOCKS = """
SELECT r.n::int AS range_no, b.start_line, b.content
  FROM unnest(%(repos)s::text[], %(paths)s::text[], %(firsts)s::int[], %(lasts)s::int[])
       WITH ORDINALITY AS r(repo, path, first_line, last_line, n)
  JOIN {schema}.rag_file f ON f.repo = r.repo AND f.path = r.path
  JOIN {schema}.rag_text_block b ON b.file_id = f.id
 WHERE b.start_line <= r.last_line
   AND b.start_line >= (SELECT coalesce(max(x.start_line), 1) FROM {schema}.rag_text_block x
                         WHERE x.file_id = f.id AND x.start_line <= r.first_line)
 ORDER BY r.n, b.start_line
"""

# Rows as `rows.ChunkFile`: the file of each of the chunks `ids`.
CHUNK_FILES = """
SELECT c.id AS chunk_id, c.file_id, f.path
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

# Rows as `rows.SymbolHit`; `{where}` and `{order}` are filled by `find_symbol` below.
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


def find_symbol(where: str, order: str) -> str:
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
# Warming the search up after a start: the relations a search reads at random, the vectors'
# graphs first, read into PostgreSQL's buffers by pg_prewarm (where the database has it), so
# that the first searches do not fetch them page by page.
PREWARM_READY = "SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'"
SHARED_BUFFERS_BYTES = "SELECT pg_size_bytes(current_setting('shared_buffers'))"
WARM_RELATIONS = """
SELECT c.oid, c.relname, pg_relation_size(c.oid) AS bytes
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s
   AND c.relname = ANY(%(names)s)
 ORDER BY array_position(%(names)s, c.relname::text)
"""
# The graphs, then the keyword side's index.
WARM_RELATION_NAMES = ["rag_chunk_embedding_hnsw", "rag_symbol_embedding_hnsw", "rag_chunk_tsv"]
PREWARM = "SELECT pg_prewarm(%(oid)s::oid::regclass)"
