"""Everything the file-level eval takes from the product, in one place.

Only the product's public faces: the search (`search_code`), the sweep (`sweep_project`,
`SweepOptions`), the database (`Database`), projects (`Project`, `Root`) and the embedder
factory (`make_embedder`). When the product's layout moves, this module is the one to adjust.
`indexed_files` reads the index's file table (`rag_file`: repo, path, per the design's data
model) to tell which gold files the sweep left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from psycopg import sql as pgsql

from indexer.db import Database
from indexer.embed import CHUNK_VECTORS, CHUNK_VECTORS_WHOLE, DEFAULT_CHUNK_VECTORS, make_embedder
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import SweepOptions, sweep_project

__all__ = [
    "CHUNK_VECTORS",
    "CHUNK_VECTORS_WHOLE",
    "DEFAULT_CHUNK_VECTORS",
    "Database",
    "Project",
    "Root",
    "SweepOptions",
    "analyze",
    "indexed_files",
    "local_embedder",
    "open_database",
    "search_code",
    "sweep_project",
]


def local_embedder(
    model: str | None = None,
    document_tokens: int = 0,
    chunk_vectors: str = DEFAULT_CHUNK_VECTORS,
) -> Any:
    """The local ONNX model (the bundled one unless `model` names a folder); with
    `document_tokens`, each text embedded from its first that many tokens; `chunk_vectors`
    as [embedding] has it."""
    return make_embedder(
        "local", model, document_tokens=document_tokens, chunk_vectors=chunk_vectors
    )


def open_database(db_dir: Path) -> Database:
    """The embedded PostgreSQL whose data lives under `db_dir`, started and pooled."""
    return Database("", db_dir).open()


def analyze(db: Database, project: Project) -> int:
    """Refresh the planner's statistics (and the keyword ranker's term frequencies) after a
    load; the number of chunks in the index."""
    table = pgsql.Identifier(project.name, "rag_chunk")
    with db.connection("analyzing the eval index") as conn:
        conn.execute(pgsql.SQL("ANALYZE {}").format(table))
        conn.commit()
        row = conn.execute(pgsql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
        conn.rollback()
    return int(row[0]) if row else 0


def indexed_files(db: Database, project: Project) -> set[tuple[str, str]]:
    """(repo, path) of every file the index holds."""
    table = pgsql.Identifier(project.name, "rag_file")
    with db.connection("listing the eval index's files") as conn:
        rows = conn.execute(pgsql.SQL("SELECT repo, path FROM {}").format(table)).fetchall()
        conn.rollback()
    return {(str(repo), str(path)) for repo, path in rows}
