"""What the embedder reads for a chunk: a short header naming where the code lives, then the code.

The header (repo-relative path, language, symbol and kind) gives the model the context a reader
gets from a file tab; it is built on demand and never stored in `Chunk.content`.
"""

from __future__ import annotations

from .model import Chunk


def embedding_text(chunk: Chunk, path: str) -> str:
    """`chunk` as embedding input: `path`, language and symbol lines, a blank line, the code."""
    header = [f"File: {path.replace(chr(92), '/')}", f"Language: {chunk.language}"]
    if chunk.symbol:
        header.append(f"Symbol: {chunk.symbol} ({chunk.kind})")
    return "\n".join(header) + "\n\n" + chunk.content
