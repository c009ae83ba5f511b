"""Bulk load: new files written with COPY, a batch at a time, into a project being filled.

A sweep into an empty (or emptied) project writes the files that have no row yet this way:
ids drawn from the tables' sequences, then one COPY each of files, chunks (through a staging
table, whose INSERT ... SELECT computes the keyword vectors), symbols and file text. All of a
batch is one transaction (a savepoint when one is open), so a killed load leaves each file
either fully there or absent, and what the database refuses undoes the whole batch, which the
caller then writes file by file. The rows are exactly those `store.upsert_file` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexer.db import blocks, statements
from indexer.db.rows import ChunkRow, FileRecord, SymbolRow
from indexer.db.schema import Conn, Schema


@dataclass(frozen=True)
class NewFile:
    """One file to load: its row, its chunks and symbols (with their vectors) and text."""

    record: FileRecord
    chunks: Sequence[ChunkRow]
    symbols: Sequence[SymbolRow] = ()
    text: str | None = None


def next_ids(conn: Conn, schema: Schema, table: str, n: int) -> list[int]:
    """`n` fresh ids of `table`, in ascending order."""
    if n <= 0:
        return []
    qualified = schema.table(table).as_string(conn)
    rows = conn.execute(statements.NEXT_IDS, {"table": qualified, "n": n}).fetchall()
    return sorted(row[0] for row in rows)


def load_files(conn: Conn, schema: Schema, files: Sequence[NewFile]) -> list[int]:
    """Write `files` (none of which has a row yet) all or nothing; return their ids."""
    if not files:
        return []
    with conn.transaction(), conn.cursor() as cur:
        file_ids = next_ids(conn, schema, "rag_file", len(files))
        chunk_ids = next_ids(conn, schema, "rag_chunk", sum(len(f.chunks) for f in files))
        with cur.copy(schema.sql(statements.COPY_FILES)) as copy:
            copy.set_types(statements.COPY_FILES_TYPES)
            for file_id, f in zip(file_ids, files, strict=True):
                r = f.record
                copy.write_row(
                    (file_id, r.repo, r.path, r.size, r.mtime_ns, r.sha256, r.language,
                     len(f.chunks))
                )  # fmt: skip
        ids_by_file = _chunk_ids(files, chunk_ids)
        if chunk_ids:
            _load_chunks(cur, schema, files, file_ids, ids_by_file)
        if any(f.symbols for f in files):
            _load_symbols(cur, schema, files, file_ids, ids_by_file)
        if any(f.text is not None for f in files):
            _load_text(cur, schema, files, file_ids)
    return file_ids


def _chunk_ids(files: Sequence[NewFile], chunk_ids: list[int]) -> list[list[int]]:
    """The ids of each file's chunks, by ordinal, in the order the chunks are listed."""
    out, at = [], 0
    for f in files:
        out.append(chunk_ids[at : at + len(f.chunks)])
        at += len(f.chunks)
    return out


def _load_chunks(
    cur: Any,
    schema: Schema,
    files: Sequence[NewFile],
    file_ids: list[int],
    ids_by_file: list[list[int]],
) -> None:
    cur.execute(statements.DROP_CHUNK_STAGING)
    cur.execute(statements.CREATE_CHUNK_STAGING)
    with cur.copy(statements.COPY_CHUNK_STAGING) as copy:
        copy.set_types(statements.COPY_CHUNK_STAGING_TYPES)
        for file_id, f, ids in zip(file_ids, files, ids_by_file, strict=True):
            for chunk_id, c in zip(ids, f.chunks, strict=True):
                copy.write_row(
                    (chunk_id, file_id, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind,
                     c.content, c.content_sha256, c.embedding, c.symbol_terms, c.path_terms,
                     c.body_terms)
                )  # fmt: skip
    cur.execute(schema.sql(statements.INSERT_STAGED_CHUNKS))
    cur.execute(statements.DROP_CHUNK_STAGING)


def _load_symbols(
    cur: Any,
    schema: Schema,
    files: Sequence[NewFile],
    file_ids: list[int],
    ids_by_file: list[list[int]],
) -> None:
    with cur.copy(schema.sql(statements.COPY_SYMBOLS)) as copy:
        copy.set_types(statements.COPY_SYMBOLS_TYPES)
        for file_id, f, ids in zip(file_ids, files, ids_by_file, strict=True):
            for s in f.symbols:
                # As INSERT_SYMBOLS' join: no chunk of that ordinal, no chunk id.
                chunk_id = ids[s.chunk] if 0 <= s.chunk < len(ids) else None
                copy.write_row(
                    (file_id, s.ordinal, chunk_id, s.name, s.qualified_name, s.kind,
                     s.start_line, s.end_line, s.signature_line, s.signature, s.parent,
                     s.content_sha256, s.embedding)
                )  # fmt: skip


def _load_text(cur: Any, schema: Schema, files: Sequence[NewFile], file_ids: list[int]) -> None:
    with cur.copy(
        schema.sql(statements.COPY_FILE_TEXT)
    ) as copy:  # text format: whatever shape text_rows gives the rows
        for file_id, f in zip(file_ids, files, strict=True):
            if f.text is not None:
                for row in blocks.text_rows(file_id, f.text):
                    copy.write_row(row)
