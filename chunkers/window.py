"""Chunks without a grammar: line windows, and character windows for over-long lines.

`line_windows` is also how an over-size definition or stretch of glue is cut, keeping its symbol.
Windows never start or end on a blank line, hold at most `window_lines` lines and `max_chars`
characters, and overlap the previous one by up to `window_overlap` lines (at most half a window,
so a run always advances); each ends past the one before, so none nests inside another. A line
longer than `max_chars` is cut into character windows.
"""

from __future__ import annotations

from .model import Chunk, ChunkerConfig
from .text import Source


def line_windows(
    src: Source,
    start: int,
    end: int,
    config: ChunkerConfig,
    language: str,
    symbol: str | None = None,
    kind: str = "window",
) -> list[Chunk]:
    """Windows over lines start..end (inclusive) that cover every non-blank line in it."""
    chunks: list[Chunk] = []
    line = start
    while line <= end:
        while line <= end and src.is_blank(line):
            line += 1
        if line > end:
            break
        if len(src.lines[line - 1]) > config.max_chars:
            chunks.extend(char_windows(src, line, line, config, language, symbol, kind))
            line += 1
            continue
        last = line
        while (
            last < end
            and last + 1 - line < config.window_lines
            and len(src.lines[last]) <= config.max_chars
            and src.chars(line, last + 1) <= config.max_chars
        ):
            last += 1
        while src.is_blank(last):
            last -= 1
        if chunks and last <= chunks[-1].end_line:
            # Cut short by a blank stretch (or a big next line) before the previous window's
            # end: a window here would only nest inside that one. Go on past its end.
            line = chunks[-1].end_line + 1
            continue
        chunks.append(Chunk(line, last, symbol, kind, language, src.slice(line, last)))
        if last >= end or src.trim(last + 1, end) is None:
            break
        overlap = min(config.window_overlap, (last - line + 1) // 2)
        line = max(last + 1 - overlap, line + 1)
    return chunks


def char_windows(
    src: Source,
    start: int,
    end: int,
    config: ChunkerConfig,
    language: str,
    symbol: str | None = None,
    kind: str = "window",
) -> list[Chunk]:
    """Character windows of `max_chars` over lines start..end, overlapping by `char_overlap`.

    Each chunk's lines are those its slice touches; its content is the slice itself.
    """
    base = src.starts[start - 1]
    text = src.slice(start, end)
    step = config.max_chars - config.char_overlap
    chunks: list[Chunk] = []
    offset = 0
    while offset < len(text):
        piece = text[offset : offset + config.max_chars]
        lead = len(piece) - len(piece.lstrip())
        body = piece.strip()
        if body:
            first = src.line_at(base + offset + lead)
            last = src.line_at(base + offset + lead + len(body) - 1)
            chunks.append(Chunk(first, last, symbol, kind, language, body))
        if offset + config.max_chars >= len(text):
            break
        offset += step
    return chunks


def is_minified(src: Source, config: ChunkerConfig) -> bool:
    """True when lines longer than `max_line_chars` carry most of the text (bundles, dumps)."""
    if len(src.text) < config.max_line_chars:
        return False
    long_chars = sum(len(line) for line in src.lines if len(line) > config.max_line_chars)
    return long_chars * 2 > len(src.text)


def window_chunks(src: Source, config: ChunkerConfig, language: str, minified: bool) -> list[Chunk]:
    """The whole file as windows: character windows when minified, line windows otherwise."""
    if minified:
        return char_windows(src, 1, src.line_count, config, language)
    return line_windows(src, 1, src.line_count, config, language)
