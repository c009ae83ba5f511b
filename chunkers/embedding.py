"""What the embedder reads for a chunk: a short header naming where the code lives, then the code.

The header (repo-relative path, language, symbol and kind) gives the model the context a reader
gets from a file tab; it is built on demand and never stored in `Chunk.content`.
"""

from __future__ import annotations

from .model import Chunk, ChunkResult

# Character ranges of a text, (start, end) each: the parts of it a vector is pooled from.
Ranges = tuple[tuple[int, int], ...]

# A definition's own text is embedded up to here (its header and signature come first): the
# local model reads about 1,000 characters of it, a larger Ollama model more.
DEFINITION_CHARS = 2000


def embedding_text(chunk: Chunk, path: str) -> str:
    """`chunk` as embedding input: `path`, language and symbol lines, a blank line, the code."""
    header = [f"File: {path.replace(chr(92), '/')}", f"Language: {chunk.language}"]
    if chunk.symbol:
        header.append(f"Symbol: {chunk.symbol} ({chunk.kind})")
    return "\n".join(header) + "\n\n" + chunk.content


def lone_definitions(
    result: ChunkResult, max_chars: int = DEFINITION_CHARS
) -> tuple[tuple[int, Chunk], ...]:
    """The definitions of `result` that no chunk speaks for, each as a chunk of its own lines
    (cut at `max_chars`) to embed, with its index in `result.symbols`.

    A definition has a chunk of its own when a chunk named after it lies within its lines (it
    is whole, or split into pieces). The others (merged with small neighbours into one chunk,
    or nested in a bigger definition's chunk) would be found only through a vector of the
    whole chunk, which speaks mostly for its main definition; a vector of their own finds them
    by what they do, and raises the chunk holding them (`indexer.db.queries.VECTOR_CANDIDATES`).
    """
    spans: dict[str, list[tuple[int, int]]] = {}
    for c in result.chunks:
        if c.symbol:
            spans.setdefault(c.symbol, []).append((c.start_line, c.end_line))
    lines = result.text.split("\n")
    language = result.language or "text"
    out = []
    for i, s in enumerate(result.symbols):
        own = spans.get(s.qualified_name, ())
        if any(s.start_line <= start and end <= s.end_line for start, end in own):
            continue
        content = "\n".join(lines[s.start_line - 1 : s.end_line])[:max_chars]
        out.append(
            (i, Chunk(s.start_line, s.end_line, s.qualified_name, s.kind, language, content))
        )
    return tuple(out)


def definition_ranges(chunk: Chunk, start_line: int, end_line: int, path: str) -> Ranges:
    """Where a definition of lines `start_line..end_line` lies in `embedding_text(chunk, path)`,
    as the character ranges its vector is pooled from when the chunk's own pass embeds it: the
    header (the file, language and symbol the reader sees first) and the definition's lines
    that the chunk holds. Empty when the chunk holds none of them."""
    first, last = max(start_line, chunk.start_line), min(end_line, chunk.end_line)
    if first > last:
        return ()
    text = embedding_text(chunk, path)
    body = len(text) - len(chunk.content)
    lines = chunk.content.split("\n")
    offset = first - chunk.start_line
    start = body + sum(len(line) + 1 for line in lines[:offset])
    end = start + len("\n".join(lines[offset : last - chunk.start_line + 1]))
    if end <= start:
        return ()
    return ((0, body), (start, end))


def pooled_ranges(chunk: Chunk, start_line: int, end_line: int, path: str) -> Ranges:
    """What a definition's vector is pooled from in its chunk's pass: `definition_ranges`, or
    where the chunk holds none of its lines (never the case for the chunk holding its
    signature line), the chunk's whole text."""
    return definition_ranges(chunk, start_line, end_line, path) or (
        (0, len(embedding_text(chunk, path))),
    )
