"""What the embedder reads for a chunk: a short header naming where the code lives, then the code.

The header (repo-relative path, language, symbol and kind) gives the model the context a reader
gets from a file tab; it is built on demand and never stored in `Chunk.content`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


# A part of a chunk with fewer letters and digits than this (a closing brace, a blank stretch)
# is not worth a pass of the model: its lines count for nothing in the chunk's vector.
MIN_PART_CHARS = 8


@dataclass(frozen=True, slots=True)
class VectorParts:
    """What the model reads of a file when each of its lines is read once (`[embedding]
    chunk_vectors = parts`): for each chunk, and each definition no chunk speaks for (in the
    order of `lone_definitions`), the parts whose vectors, averaged by their lengths, make its
    own, in line order. A part is a `Chunk` carrying its owner's name and kind and the lines of
    the owner that no smaller part holds."""

    chunks: tuple[tuple[Chunk, ...], ...]
    definitions: tuple[tuple[Chunk, ...], ...]


def vector_parts(
    chunks: Sequence[Chunk],
    definitions: Sequence[Chunk],
    lines: Sequence[str],
    rest_alone: bool = False,
    signatures: bool = False,
) -> VectorParts:
    """Each chunk's and each lone definition's parts (`VectorParts`), from the file's `lines`.

    A lone definition wholly inside a chunk is a part of it: its own lines (those of no
    smaller such definition inside it) are read once, under its own name, and its vector is
    the mean of its part and those of the definitions inside it; a definition with none
    inside keeps exactly the text `lone_definitions` gives it (when that text is not cut), so
    its vector is the same either way. A chunk's vector is the mean of its definitions' parts
    and of the rest of its lines, less those the chunk before it holds too (windows overlap).
    A chunk holding no such definition and overlapping nothing is its own single part; so is a
    chunk whose content is not its lines (a character window of a long line), and a definition
    that no chunk holds whole. With `rest_alone` a chunk holding such definitions is the rest
    of its lines alone (they have vectors of their own), or the mean when nothing is left;
    with `signatures` as well, that rest also holds each such definition's signature line."""
    chunk_parts: list[tuple[Chunk, ...]] = []
    own_parts: dict[int, tuple[Chunk, ...]] = {}
    before = 0  # the last line the chunks so far hold
    for c in chunks:
        if c.content != "\n".join(lines[c.start_line - 1 : c.end_line]):
            chunk_parts.append((c,))
            before = max(before, c.end_line)
            continue
        inside = [
            i
            for i, d in enumerate(definitions)
            if c.start_line <= d.start_line and d.end_line <= c.end_line
        ]
        owner: dict[int, int] = {}  # line -> the smallest definition inside holding it
        for i in sorted(inside, key=lambda i: _span(definitions[i]), reverse=True):
            d = definitions[i]
            for line in range(d.start_line, d.end_line + 1):
                owner[line] = i
        leaves = {
            i: _part(definitions[i], lines, [n for n, o in owner.items() if o == i]) for i in inside
        }
        for i in inside:
            if i not in own_parts:
                d = definitions[i]
                held = [k for k in inside if d.start_line <= definitions[k].start_line
                        and definitions[k].end_line <= d.end_line]  # fmt: skip
                found = [p for k in held if (p := leaves[k]) is not None]
                own_parts[i] = _in_order(found) or (d,)
        first = max(c.start_line, before + 1)
        numbers = [n for n in range(first, c.end_line + 1) if n not in owner]
        if signatures:
            numbers += [n for i in inside if (n := _signature(definitions[i], lines)) >= first]
        rest = _part(c, lines, numbers)
        found = [p for p in (rest, *leaves.values()) if p is not None]
        if rest_alone and rest is not None:
            found = [rest]
        chunk_parts.append(_in_order(found) or (c,))
        before = max(before, c.end_line)
    return VectorParts(
        tuple(chunk_parts), tuple(own_parts.get(i, (d,)) for i, d in enumerate(definitions))
    )


def _signature(d: Chunk, lines: Sequence[str]) -> int:
    """The line of `d` that names it (after its decorators), or its first."""
    name = (d.symbol or "").rsplit(".", 1)[-1]
    for n in range(d.start_line, d.end_line + 1):
        if name and name in lines[n - 1]:
            return n
    return d.start_line


def _span(d: Chunk) -> tuple[int, int]:
    return (d.end_line - d.start_line, -d.start_line)


def _in_order(parts: list[Chunk]) -> tuple[Chunk, ...]:
    return tuple(sorted(parts, key=lambda p: (p.start_line, p.end_line)))


def _part(owner: Chunk, lines: Sequence[str], numbers: list[int]) -> Chunk | None:
    """The lines `numbers` of `owner` as a part under its name, blank lines at its edges left
    out; None when they hold too little to embed."""
    numbers = sorted(numbers)
    while numbers and not lines[numbers[-1] - 1].strip():
        numbers.pop()
    while numbers and not lines[numbers[0] - 1].strip():
        numbers.pop(0)
    if not numbers:
        return None
    content = "\n".join(lines[n - 1] for n in numbers)
    if sum(ch.isalnum() for ch in content) < MIN_PART_CHARS:
        return None
    return Chunk(numbers[0], numbers[-1], owner.symbol, owner.kind, owner.language, content)
