"""Reading a chunk back (`get_chunk`), line ranges of the indexed text (`indexed_text`), and
where a stored chunk is, as both a hit and a chunk view report it. Only files under one of the
project's roots are ever read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from indexer import truncate
from indexer.db import Database, Schema, StoredChunk, lookup
from indexer.errors import InvalidArgument
from indexer.project import Project

MAX_CONTEXT_LINES = 200
# A chunk view's text (with its context lines): about 6k tokens, well inside what an agent's
# client accepts from one tool call.
MAX_CHUNK_VIEW_CHARS = 24_000


@dataclass(frozen=True, slots=True)
class ChunkView:
    chunk_id: int
    repo: str
    path: str
    absolute_path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str | None
    text: str
    text_start_line: int  # first line of `text` (earlier than start_line with context)
    text_end_line: int
    note: str | None = None  # e.g. the file changed on disk since it was indexed
    truncated: bool = False  # `text` was cut at MAX_CHUNK_VIEW_CHARS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def located(project: Project, row: StoredChunk) -> dict[str, Any]:
    """What a hit and a chunk view share: which chunk, where, and what it is."""
    root = project.root(row.repo)
    return {
        "chunk_id": row.chunk_id,
        "repo": row.repo,
        "path": row.path,
        "absolute_path": str(root.path / row.path) if root else row.path,
        "start_line": row.start_line,
        "end_line": row.end_line,
        "symbol": row.symbol,
        "kind": row.kind,
        "language": row.language,
    }


def get_chunk(db: Database, project: Project, chunk_id: int, context_lines: int = 0) -> ChunkView:
    """The stored text of one chunk, optionally with lines around it read from the file.

    Only files under one of the project's roots are ever read: the path comes from the index,
    is resolved, and must stay inside its root. The file is read after the connection is
    given back.
    """
    if not isinstance(chunk_id, int) or isinstance(chunk_id, bool) or chunk_id < 1:
        raise InvalidArgument(
            f"chunk_id must be a positive integer from search_code, got {chunk_id!r}"
        )
    if not isinstance(context_lines, int) or not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise InvalidArgument(f"context_lines must be an integer from 0 to {MAX_CONTEXT_LINES}")
    with db.reading(f"reading a chunk of {project.name}") as conn:
        row = lookup.chunks_by_id(conn, Schema(project.name), [chunk_id]).get(chunk_id)
    if row is None:
        raise InvalidArgument(
            f"no chunk {chunk_id} in this project: it may have been re-indexed; "
            "run search_code again for fresh ids"
        )
    root = project.root(row.repo)
    text, first, last, note = row.content, row.start_line, row.end_line, None
    if context_lines and root is not None:
        target = (root.path / row.path).resolve()
        lines = _read_lines(target) if target.is_relative_to(root.path.resolve()) else None
        if lines is None:
            note = "the file could not be read now; showing the indexed text only"
        else:
            current = lines[row.start_line - 1 : row.end_line]
            if current != row.content.splitlines():
                note = "the file changed since it was indexed; lines shown are as they are now"
            first = max(1, row.start_line - context_lines)
            last = min(len(lines), row.end_line + context_lines)
            text = "\n".join(lines[first - 1 : last])
    return ChunkView(
        **located(project, row),
        text=truncate.cut(text, MAX_CHUNK_VIEW_CHARS),
        text_start_line=first,
        text_end_line=last,
        note=note,
        truncated=len(text) > MAX_CHUNK_VIEW_CHARS,
    )


def indexed_text(
    db: Database, project: Project, ranges: Sequence[tuple[str, str, int, int]]
) -> list[str | None]:
    """The lines `first` to `last` of each (repo, path, first, last) range as the index holds
    them (its exact-text blocks: line N of a file is line N of its chunks), joined by newlines;
    None for a file that is no longer indexed."""
    if not ranges:
        return []
    with db.reading(f"reading indexed text of {project.name}") as conn:
        blocks = lookup.range_blocks(conn, Schema(project.name), ranges)
    lines: dict[int, list[str]] = {}
    first_line: dict[int, int] = {}
    for block in blocks:
        first_line.setdefault(block.range_no, block.start_line)
        lines.setdefault(block.range_no, []).extend(block.content.split("\n"))
    texts: list[str | None] = []
    for n, (_, _, first, last) in enumerate(ranges, 1):
        if n not in lines:
            texts.append(None)
            continue
        skip = first - first_line[n]
        texts.append("\n".join(lines[n][skip : skip + last - first + 1]))
    return texts


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
