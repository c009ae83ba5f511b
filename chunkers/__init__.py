"""Text in, chunks out: language detection, tree-sitter symbol chunks, line windows.

No I/O beyond the bytes handed in, no database. Public API:
`chunk_file`, `detect_language`, `is_binary`, `embedding_text`, `lone_definitions`,
`vector_parts` (with `VectorParts`), `Chunk`,
`ChunkResult`, `ChunkerConfig`, `Symbol`, `CHUNKER_VERSION`; what the index asks of a language
(`has_symbols`, `KNOWN_LANGUAGES`, `UNKNOWN_LANGUAGE`) and of a definition's text
(`DEFINITION_CHARS`).
"""

from .detect import KNOWN_LANGUAGES, detect_language, is_binary
from .embedding import (
    DEFINITION_CHARS,
    VectorParts,
    embedding_text,
    lone_definitions,
    vector_parts,
)
from .grammars import has_symbols
from .model import CHUNKER_VERSION, Chunk, ChunkerConfig, ChunkResult, Symbol
from .pipeline import UNKNOWN_LANGUAGE, chunk_file

__all__ = [
    "CHUNKER_VERSION",
    "DEFINITION_CHARS",
    "KNOWN_LANGUAGES",
    "UNKNOWN_LANGUAGE",
    "Chunk",
    "ChunkResult",
    "ChunkerConfig",
    "Symbol",
    "VectorParts",
    "chunk_file",
    "detect_language",
    "embedding_text",
    "has_symbols",
    "is_binary",
    "lone_definitions",
    "vector_parts",
]
