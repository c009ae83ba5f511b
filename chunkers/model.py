"""The values the chunkers hand out: `Chunk`, `ChunkResult`, and the `ChunkerConfig` sizing them.

Pure frozen dataclasses, no behaviour beyond validation. Sizes are in characters because the
embedding model's context is what they protect; lines are only a secondary cap for windows.
Bump `CHUNKER_VERSION` whenever a rule change would produce different chunks for the same bytes:
the indexer records it and re-chunks every file when it moves.
"""

from __future__ import annotations

from dataclasses import dataclass

# 2: files carry their symbol table; 3: and their text (re-chunking fills both; unchanged
# chunks keep their vectors); 4: no window nests inside the one before it (a blank stretch in
# a long definition left slivers); 5: chunks of 2,000 characters (up to 3,333) instead of
# 1,200 (up to 2,000): more hits on developer questions (docs/lab-log.md); 6: a definition
# no chunk speaks for (merged into a neighbour's chunk, nested) gets a vector of its own
# (`lone_definitions`; unchanged chunks keep their vectors). Names over 512 characters left out
# (`symbols.MAX_NAME_CHARS`) came without a bump: the files it changes failed to be stored
# before (a name too long to index), and a failed file is read again by every sweep.
CHUNKER_VERSION = 6

# Small neighbours merge up to `target_chars`; a definition up to `max_chars` stays whole. The
# local model reads a chunk's first 256 tokens (the header, the signature and what follows);
# the keyword side and the agent read all of it.
DEFAULT_MAX_CHARS = 3333
DEFAULT_TARGET_CHARS = 2000
DEFAULT_MIN_CHARS = 200
DEFAULT_WINDOW_LINES = 60
DEFAULT_WINDOW_OVERLAP = 10
DEFAULT_MAX_LINE_CHARS = 1000
DEFAULT_CHAR_OVERLAP = 200
DEFAULT_MAX_PARSE_CHARS = 2_000_000
DEFAULT_MAX_ERROR_RATIO = 0.5


@dataclass(frozen=True, slots=True)
class Chunk:
    """One searchable piece of a file.

    `content` is the text of lines `start_line..end_line` (1-based, inclusive) with newlines
    normalised to LF; the only exception is a character window cut out of an over-long line
    (minified code), whose content is that slice of the line(s) it spans.
    """

    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str
    content: str


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition the grammar sees, nested and merged ones included.

    `name` is as written (`cancel!`, `fmt`), `qualified_name` carries its owners
    (`Billing::Subscription#cancel!`, `Point::fmt`), `parent` is the qualified name of the
    definition it sits in. Lines are 1-based inclusive; `start_line..end_line` include its doc
    comments and decorators, `signature_line` is the line holding its name and `signature` that
    line trimmed. `chunk` is the index (in `ChunkResult.chunks`) of the chunk holding the
    signature line: for a definition split into pieces, the piece that starts it.
    """

    name: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    signature_line: int
    signature: str
    parent: str | None
    chunk: int


@dataclass(frozen=True)
class ChunkerConfig:
    """Size rules, in characters unless named otherwise.

    `max_chars` is the hard cap for a chunk (bigger definitions are split), `target_chars` the size
    small neighbours are merged up to, `min_chars` the size below which a piece looks for a
    neighbour. Windows hold at most `window_lines` lines (and `max_chars`), overlapping by
    `window_overlap` lines; a file whose long lines (over `max_line_chars`) carry most of its text
    is cut into `max_chars` character windows overlapping by `char_overlap`.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    target_chars: int = DEFAULT_TARGET_CHARS
    min_chars: int = DEFAULT_MIN_CHARS
    window_lines: int = DEFAULT_WINDOW_LINES
    window_overlap: int = DEFAULT_WINDOW_OVERLAP
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    char_overlap: int = DEFAULT_CHAR_OVERLAP
    # Above this many characters a file is windowed without parsing (generated code, dumps).
    max_parse_chars: int = DEFAULT_MAX_PARSE_CHARS
    # A parse whose ERROR nodes cover more than this share of the text is not trusted.
    max_error_ratio: float = DEFAULT_MAX_ERROR_RATIO

    def __post_init__(self) -> None:
        if not 0 < self.min_chars <= self.target_chars <= self.max_chars:
            raise ValueError(
                "ChunkerConfig needs 0 < min_chars <= target_chars <= max_chars, got "
                f"{self.min_chars}, {self.target_chars}, {self.max_chars}"
            )
        if self.window_lines < 1 or not 0 <= self.window_overlap < self.window_lines:
            raise ValueError(
                "ChunkerConfig needs window_lines >= 1 and 0 <= window_overlap < window_lines, got "
                f"{self.window_lines}, {self.window_overlap}"
            )
        if not 0 <= self.char_overlap < self.max_chars // 2:
            raise ValueError(
                f"ChunkerConfig needs 0 <= char_overlap < max_chars / 2, got {self.char_overlap}"
            )
        if self.max_line_chars < 1 or self.max_parse_chars < 1:
            raise ValueError("ChunkerConfig needs max_line_chars and max_parse_chars >= 1")
        if not 0.0 <= self.max_error_ratio <= 1.0:
            raise ValueError(f"max_error_ratio must be within 0..1, got {self.max_error_ratio}")


@dataclass(frozen=True)
class ChunkResult:
    """What `chunk_file` found: the language, the chunks, the definitions in them (in file
    order, a parent before its children), and why it refused or fell back."""

    language: str | None
    chunks: tuple[Chunk, ...]
    refused: str | None = None
    fallback: str | None = None
    symbols: tuple[Symbol, ...] = ()
    # The decoded text (BOM dropped, newlines as LF): line N here is the chunks' line N.
    text: str = ""
