"""What the tests read straight from a project's tables, to check what the product wrote."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

FILE_CHUNKS = """
SELECT c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.content, c.content_sha256
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE f.repo = %(repo)s AND f.path = %(path)s
 ORDER BY c.ordinal
"""


def file_chunks(
    conn: psycopg.Connection[Any], project: str, repo: str, path: str
) -> list[tuple[Any, ...]]:
    """(ordinal, start_line, end_line, symbol, kind, content, content_sha256) of one file."""
    query = sql.SQL(FILE_CHUNKS).format(schema=sql.Identifier(project))
    return conn.execute(query, {"repo": repo, "path": path}).fetchall()


FILE_SYMBOLS = """
SELECT s.name, s.qualified_name, s.kind, s.start_line, s.end_line, s.signature_line,
       s.signature, s.parent, c.ordinal AS chunk
  FROM {schema}.rag_symbol s
  JOIN {schema}.rag_file f ON f.id = s.file_id
  LEFT JOIN {schema}.rag_chunk c ON c.id = s.chunk_id
 WHERE f.repo = %(repo)s AND f.path = %(path)s
 ORDER BY s.ordinal
"""


def file_symbols(
    conn: psycopg.Connection[Any], project: str, repo: str, path: str
) -> list[tuple[Any, ...]]:
    """(name, qualified_name, kind, start, end, signature_line, signature, parent, chunk
    ordinal) of one file's symbols, in order."""
    query = sql.SQL(FILE_SYMBOLS).format(schema=sql.Identifier(project))
    return conn.execute(query, {"repo": repo, "path": path}).fetchall()


def execute(conn: psycopg.Connection[Any], project: str, text: str) -> None:
    """Run one statement on a project's schema (tests that stage an older index)."""
    conn.execute(sql.SQL(text).format(schema=sql.Identifier(project)))
