"""From definitions to chunks: split what is too big, merge what is too small, drop nothing.

A scope (the file, or a class being split) is cut into pieces: its definitions and the "glue"
between them (imports, constants, fields, closing braces). A definition that fits `max_chars`
stays whole; a bigger class-like becomes a `class_header` chunk (signature, docstring, leading
fields) plus its members, recursively; a bigger function becomes line windows that keep its
symbol. Small neighbours are then merged up to `target_chars`. Every non-blank line of the scope
lands in some piece, so every non-blank line of the file lands in some chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .model import Chunk, ChunkerConfig
from .symbols import Definition
from .text import Source
from .window import line_windows


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    chars: int
    definition: Definition | None = None
    header_of: Definition | None = None
    fixed: tuple[Chunk, ...] = ()
    # The class or namespace the piece sits in: names a merged block of its members.
    owner: Definition | None = None


class _Assembler:
    def __init__(self, src: Source, config: ChunkerConfig, language: str) -> None:
        self.src = src
        self.config = config
        self.language = language

    def scope(
        self, start: int, end: int, defs: list[Definition], owner: Definition | None
    ) -> list[_Piece]:
        """Pieces covering lines start..end, where `defs` are the definitions inside."""
        pieces: list[_Piece] = []
        cursor = start
        for definition in defs:
            first = max(definition.start_line, cursor)
            if first > definition.end_line:
                continue  # already covered: shares its only lines with the previous piece
            pieces.extend(self.glue(cursor, first - 1, owner))
            pieces.extend(self.definition(definition, first, owner))
            cursor = definition.end_line + 1
        pieces.extend(self.glue(cursor, end, owner))
        return pieces

    def glue(self, start: int, end: int, owner: Definition | None) -> list[_Piece]:
        span = self.src.trim(start, end) if start <= end else None
        if span is None:
            return []
        chars = self.src.chars(*span)
        if chars <= self.config.max_chars:
            return [_Piece(span[0], span[1], chars, owner=owner)]
        symbol = owner.name if owner else None
        return [
            self.fixed(line_windows(self.src, *span, self.config, self.language, symbol, "block"))
        ]

    def definition(
        self, definition: Definition, first: int, owner: Definition | None
    ) -> list[_Piece]:
        span = self.src.trim(first, definition.end_line)
        if span is None:
            return []
        first, end = span
        chars = self.src.chars(first, end)
        if definition.kind == "namespace" and definition.children:
            return self.scope(first, end, definition.children, definition)
        if chars <= self.config.max_chars:
            return [_Piece(first, end, chars, definition=definition, owner=owner)]
        if definition.is_container and definition.children:
            return [self.fixed(self.split(definition, first))]
        windows = line_windows(
            self.src, first, end, self.config, self.language, definition.name, definition.kind
        )
        return [self.fixed(windows)]

    def split(self, definition: Definition, first: int) -> list[Chunk]:
        """A too-big class-like: a header chunk, then its members merged within the class."""
        body = max(definition.children[0].start_line, first)
        pieces: list[_Piece] = []
        header = self.src.trim(first, body - 1) if first < body else None
        if header is not None:
            chars = self.src.chars(*header)
            if chars <= self.config.max_chars:
                pieces.append(_Piece(header[0], header[1], chars, header_of=definition))
            else:
                windows = line_windows(
                    self.src, *header, self.config, self.language, definition.name, "class_header"
                )
                pieces.append(self.fixed(windows))
        pieces.extend(self.scope(body, definition.end_line, definition.children, definition))
        return self.merge(pieces, definition)

    def fixed(self, chunks: list[Chunk]) -> _Piece:
        return _Piece(chunks[0].start_line, chunks[-1].end_line, 0, fixed=tuple(chunks))

    def grow(self, piece: _Piece, line: int) -> _Piece | None:
        """`piece` with its first chunk stretched up to `line` (or its last down to it), when
        that chunk is made of whole lines and stays within `max_chars`."""
        chunks = list(piece.fixed)
        index = 0 if line < chunks[0].start_line else -1
        chunk = chunks[index]
        start, end = min(chunk.start_line, line), max(chunk.end_line, line)
        if chunk.content != self.src.slice(chunk.start_line, chunk.end_line):
            return None  # a character window: its bounds are not whole lines
        if self.src.chars(start, end) > self.config.max_chars:
            return None
        chunks[index] = replace(
            chunk, start_line=start, end_line=end, content=self.src.slice(start, end)
        )
        return _Piece(chunks[0].start_line, chunks[-1].end_line, 0, fixed=tuple(chunks))

    def merge(self, pieces: list[_Piece], owner: Definition | None) -> list[Chunk]:
        """Greedy merge of small neighbours; definitions of `min_chars` or more stand alone."""
        config = self.config
        groups: list[list[_Piece] | _Piece] = []
        acc: list[_Piece] = []
        # Definitions big enough to stand alone name their group, whatever small neighbours join.
        leads: set[int] = set()

        def span(group: list[_Piece]) -> int:
            return self.src.chars(group[0].start, group[-1].end)

        def glue_only() -> bool:
            return all(p.definition is None and p.header_of is None for p in acc)

        def flush() -> None:
            if not acc:
                return
            last = groups[-1] if groups else None
            small = span(acc) < config.min_chars
            if isinstance(last, list) and small and span([*last, *acc]) <= config.max_chars:
                last.extend(acc)
            elif (
                isinstance(last, _Piece)
                and small
                and glue_only()
                and (grown := self.grow(last, acc[-1].end))
            ):
                groups[-1] = grown
            else:
                groups.append(list(acc))
            acc.clear()

        for piece in pieces:
            if piece.fixed:
                if acc and glue_only() and span(acc) < config.min_chars:
                    grown = self.grow(piece, acc[0].start)
                    if grown is not None:
                        piece = grown
                        acc.clear()
                flush()
                groups.append(piece)
                continue
            if piece.definition is not None and piece.chars >= config.min_chars:
                leads.add(id(piece))
                if acc and span(acc) < config.min_chars and span([*acc, piece]) <= config.max_chars:
                    acc.append(piece)
                    groups.append(list(acc))
                    acc.clear()
                    continue
                flush()
                groups.append([piece])
                continue
            if acc and span([*acc, piece]) > config.target_chars:
                flush()
            acc.append(piece)
        flush()

        chunks: list[Chunk] = []
        for group in groups:
            if isinstance(group, _Piece):
                chunks.extend(group.fixed)
            else:
                chunks.append(self.chunk(group, owner, leads))
        return chunks

    def chunk(self, group: list[_Piece], owner: Definition | None, leads: set[int]) -> Chunk:
        start, end = group[0].start, group[-1].end
        owners = {id(p.owner): p.owner for p in group}
        if len(owners) == 1:
            owner = next(iter(owners.values()))
        symbol: str | None = owner.name if owner else None
        kind = "block"
        header = next((p.header_of for p in group if p.header_of is not None), None)
        defs = [p for p in group if p.definition is not None]
        lead = next((p.definition for p in defs if id(p) in leads), None)
        if header is not None:
            symbol, kind = header.name, "class_header"
        elif lead is not None:
            symbol, kind = lead.name, lead.kind
        elif defs:
            # The group is named after a definition holding most of its text.
            main = max(defs, key=lambda p: p.chars)
            if main.definition is not None and main.chars * 2 > self.src.chars(start, end):
                symbol, kind = main.definition.name, main.definition.kind
        return Chunk(start, end, symbol, kind, self.language, self.src.slice(start, end))


def assemble(
    defs: list[Definition], src: Source, config: ChunkerConfig, language: str
) -> list[Chunk]:
    """Chunks for a whole file whose top-level definitions are `defs`."""
    assembler = _Assembler(src, config, language)
    return assembler.merge(assembler.scope(1, src.line_count, defs, None), None)
