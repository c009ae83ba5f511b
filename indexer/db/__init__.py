"""The database wing: the embedded server and the pool, how a project's statements are
composed, the write statements (`statements`) and their executor (`store`), the read
statements (`queries`) and theirs (`lookup`), the bulk load, the rows that cross layers, and
the append-only migrations. Nothing here knows how a sweep or a search decides anything.
"""

from indexer.db import bulk, lookup, rows, store
from indexer.db.database import Database, database_error, prepare_database, start_embedded
from indexer.db.queries import BlockMatch
from indexer.db.rows import (
    ChunkRow,
    FileRecord,
    LineMatch,
    OutlineRow,
    SymbolHit,
    SymbolRow,
)

__all__ = [
    "BlockMatch",
    "ChunkRow",
    "Database",
    "FileRecord",
    "LineMatch",
    "OutlineRow",
    "SymbolHit",
    "SymbolRow",
    "bulk",
    "database_error",
    "lookup",
    "prepare_database",
    "rows",
    "start_embedded",
    "store",
]
