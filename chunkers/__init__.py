"""Text in, chunks out: language detection, tree-sitter symbol chunks, line windows.

No I/O beyond the bytes handed in, no database. Public API:
`chunk_file`, `detect_language`, `is_binary`, `embedding_text`, `lone_definitions`, `Chunk`,
`ChunkResult`, `ChunkerConfig`, `Symbol`, `CHUNKER_VERSION`.
"""

from .detect import detect_language, is_binary
from .embedding import embedding_text, lone_definitions
from .model import CHUNKER_VERSION, Chunk, ChunkerConfig, ChunkResult, Symbol
from .pipeline import chunk_file

__all__ = [
    "CHUNKER_VERSION",
    "Chunk",
    "ChunkResult",
    "ChunkerConfig",
    "Symbol",
    "chunk_file",
    "detect_language",
    "embedding_text",
    "is_binary",
    "lone_definitions",
]
