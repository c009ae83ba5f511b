"""The database wing: the embedded server and the pool, how a project's statements are
composed, the write statements (`statements`) and their executors (`store` for a project's
rows, `embedding_cache` for the vectors every project shares, `tokens` for access tokens), the
read statements (`queries`) and theirs (`lookup`), the bulk load, the rows that cross layers,
and the append-only migrations. Nothing here knows how a sweep or a search decides anything.
"""

from indexer.db import (
    blocks,
    bulk,
    embedding_cache,
    lookup,
    migrations,
    queries,
    rows,
    statements,
    store,
    tokens,
)
from indexer.db.blocks import spelled
from indexer.db.database import (
    Database,
    database_error,
    prepare_database,
    start_embedded,
    statement_limit,
)
from indexer.db.queries import BlockMatch
from indexer.db.rows import (
    AccessToken,
    ChunkFile,
    ChunkRow,
    DefinitionPiece,
    FileRecord,
    LineMatch,
    OutlineRow,
    PendingCounts,
    ProjectSummary,
    Ranked,
    StoredChunk,
    SymbolHit,
    SymbolRow,
    WorkerBeat,
    WorkerRow,
)
from indexer.db.schema import Conn, Schema, like_escape

__all__ = [
    "AccessToken",
    "BlockMatch",
    "ChunkFile",
    "ChunkRow",
    "Conn",
    "Database",
    "DefinitionPiece",
    "FileRecord",
    "LineMatch",
    "OutlineRow",
    "PendingCounts",
    "ProjectSummary",
    "Ranked",
    "Schema",
    "StoredChunk",
    "SymbolHit",
    "SymbolRow",
    "WorkerBeat",
    "WorkerRow",
    "blocks",
    "bulk",
    "database_error",
    "embedding_cache",
    "like_escape",
    "lookup",
    "migrations",
    "prepare_database",
    "queries",
    "rows",
    "spelled",
    "start_embedded",
    "statement_limit",
    "statements",
    "store",
    "tokens",
]
