"""What the embedder reads for a chunk: a short header naming where the code lives, then the code.

The header (repo-relative path, language, symbol and kind) gives the model the context a reader
gets from a file tab; it is built on demand and never stored in `Chunk.content`.
"""

from __future__ import annotations

from .model import Chunk, ChunkResult

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
