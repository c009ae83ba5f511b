"""`chunk_file`: bytes of one file in, chunks out; the order of decisions lives here.

Refuse binary content; decode; detect the language; then the first rule that applies:
empty -> no chunks; long lines carry most of the text -> character windows ("minified");
no symbol query for the language -> line windows ("no grammar"); too big to parse ("too large");
the parse is mostly ERROR nodes ("parse errors"); definitions nested too deep to walk ("too
deeply nested"); otherwise symbol chunks.
"""

from __future__ import annotations

from bisect import bisect_left

from .assemble import assemble
from .detect import detect_language, is_binary
from .grammars import has_symbols, parser_for
from .model import Chunk, ChunkerConfig, ChunkResult, Symbol
from .symbols import Definition, error_ratio, extract
from .text import Source, decode
from .window import is_minified, window_chunks

# Chunks of files whose language is unknown carry this id; ChunkResult.language stays None.
UNKNOWN_LANGUAGE = "text"
_HEAD_BYTES = 4096
SIGNATURE_CHARS = 300


def chunk_file(
    path: str,
    data: bytes,
    config: ChunkerConfig = ChunkerConfig(),  # noqa: B008 - frozen, so sharing it is safe
    language: str | None = None,
) -> ChunkResult:
    """Chunks for the file at `path` (used only to detect the language) holding `data`.

    `language` overrides detection. Never raises on content: binary data is refused with a
    reason, undecodable bytes are replaced, and anything the parser cannot handle is windowed.
    """
    detected = language or detect_language(path, data[:_HEAD_BYTES])
    if is_binary(data):
        return ChunkResult(detected, (), refused="binary content (NUL or control bytes)")
    src = Source(decode(data))
    if not src.text.strip():
        return ChunkResult(detected, (), text=src.text)
    lang = detected or UNKNOWN_LANGUAGE
    minified = is_minified(src, config)
    reason = _fallback_reason(src, config, detected, minified)
    if reason is None:
        source = src.text.encode("utf-8")
        tree = parser_for(lang).parse(source)
        if error_ratio(tree) > config.max_error_ratio:
            reason = "parse errors"
        else:
            try:
                defs = extract(tree, lang, source)
                chunks = assemble(defs, src, config, lang)
                symbols = symbol_table(defs, src, chunks)
            except RecursionError:
                # Definitions nested hundreds deep (generated code): windows, not a crash.
                reason = "too deeply nested"
            else:
                return ChunkResult(detected, tuple(chunks), symbols=symbols, text=src.text)
    windows = window_chunks(src, config, lang, minified)
    return ChunkResult(detected, tuple(windows), fallback=reason, text=src.text)


def _fallback_reason(
    src: Source, config: ChunkerConfig, language: str | None, minified: bool
) -> str | None:
    if minified:
        return "minified"
    if not has_symbols(language):
        return "no grammar"
    if len(src.text) > config.max_parse_chars:
        return "too large"
    return None


def symbol_table(defs: list[Definition], src: Source, chunks: list[Chunk]) -> tuple[Symbol, ...]:
    """Every definition of the tree `defs`, parents first, each pointing at the chunk that
    holds its signature line (the first such chunk: windows of a split definition overlap)."""
    # Chunks are in file order and their ends never go back, so the first chunk ending at or
    # after a line is the first that can hold it.
    ends = [c.end_line for c in chunks]
    found: list[Symbol] = []

    def chunk_of(line: int) -> int:
        index = bisect_left(ends, line)
        return min(index, len(chunks) - 1)

    def walk(definition: Definition, parent: str | None) -> None:
        line = definition.name_line or definition.start_line
        signature = src.lines[line - 1].strip() if line <= src.line_count else ""
        found.append(
            Symbol(
                name=definition.short_name or definition.name,
                qualified_name=definition.name,
                kind=definition.kind,
                start_line=definition.start_line,
                end_line=definition.end_line,
                signature_line=line,
                signature=signature[:SIGNATURE_CHARS],
                parent=parent,
                chunk=chunk_of(line),
            )
        )
        for child in definition.children:
            walk(child, definition.name)

    for definition in defs:
        walk(definition, None)
    return tuple(found)
