"""The symbol table `chunk_file` hands out next to the chunks: every definition the grammar
sees, nested and merged ones included, each with its signature line and the chunk holding it.

The expected definitions are found independently, by a plain regex scan of each fixture for
the lines that open a definition in that language (no tree-sitter, no product code): the table
must name exactly those, on exactly those lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_scan import SCANS, scan

from chunkers import ChunkerConfig, chunk_file, embedding_text, lone_definitions

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"


@pytest.mark.parametrize("relative", sorted(SCANS))
def test_symbol_table_names_every_definition_line(relative: str) -> None:
    # Every definition a plain scan sees, nested ones and those merged into a neighbour's
    # chunk alike, is in the table under its written name, on its signature line.
    path = FIXTURES.parent / relative
    result = chunk_file(relative, path.read_bytes())
    table = {(s.name, s.signature_line) for s in result.symbols}
    assert table == scan(relative)


@pytest.mark.parametrize(
    "relative", sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.glob("*/*"))
)
def test_symbols_point_at_their_chunk_and_line(relative: str) -> None:
    # Each symbol's chunk holds its signature line, the signature is that line trimmed, its
    # lines hold the signature, and a parent is listed before its children and encloses them.
    path = FIXTURES / relative
    result = chunk_file(relative, path.read_bytes())
    lines = path.read_text().splitlines()
    assert result.symbols, relative
    seen: dict[str, tuple[int, int]] = {}
    for symbol in result.symbols:
        chunk = result.chunks[symbol.chunk]
        assert chunk.start_line <= symbol.signature_line <= chunk.end_line
        assert symbol.signature == lines[symbol.signature_line - 1].strip()
        assert symbol.start_line <= symbol.signature_line <= symbol.end_line
        assert symbol.name in symbol.qualified_name or symbol.kind == "impl"
        if symbol.parent is not None:
            start, end = seen[symbol.parent]
            assert start <= symbol.start_line and symbol.end_line <= end
        seen[symbol.qualified_name] = (symbol.start_line, symbol.end_line)


def test_a_split_definition_points_at_the_piece_with_its_signature() -> None:
    # A function too big for one chunk is cut into windows; its symbol names the first one,
    # the piece that starts with its signature.
    body = "\n".join(f"    total += {i}" for i in range(200))
    source = f"import os\n\n\ndef long_sum():\n    total = 0\n{body}\n    return total\n"
    result = chunk_file("long.py", source.encode(), ChunkerConfig(max_chars=800, target_chars=600))
    [symbol] = [s for s in result.symbols if s.name == "long_sum"]
    pieces = [c for c in result.chunks if c.symbol == "long_sum"]
    assert len(pieces) > 1
    assert result.chunks[symbol.chunk] == pieces[0]
    assert pieces[0].start_line <= symbol.signature_line == 4 <= pieces[0].end_line
    assert symbol.signature == "def long_sum():"


def test_definitions_merged_into_one_chunk_are_all_listed() -> None:
    # Small Go methods side by side and Ruby predicates share a chunk; each is still a symbol
    # of that chunk, with its own name.
    go = (
        b"package p\n\ntype T struct{}\n\n"
        b"func (t T) A() int { return 1 }\n\nfunc (t T) B() int { return 2 }\n"
    )
    result = chunk_file("t.go", go)
    assert len(result.chunks) == 1
    assert [(s.qualified_name, s.kind, s.chunk) for s in result.symbols] == [
        ("T", "struct", 0),
        ("T.A", "method", 0),
        ("T.B", "method", 0),
    ]
    ruby = b"class Cart\n  def empty?\n    true\n  end\n\n  def clear!\n    nil\n  end\nend\n"
    result = chunk_file("cart.rb", ruby)
    assert [(s.name, s.qualified_name, s.parent) for s in result.symbols] == [
        ("Cart", "Cart", None),
        ("empty?", "Cart#empty?", "Cart"),
        ("clear!", "Cart#clear!", "Cart"),
    ]


def test_files_without_a_grammar_have_no_symbols() -> None:
    result = chunk_file("notes.txt", b"def looks_like_python():\n    pass\n")
    assert result.symbols == ()


LONE = '''import os


class Palette:
    """Colours a theme offers."""

    def blend(self, a, b):
        return (a + b) / 2

    def lighten(self, colour):
        return min(1.0, colour * 1.2)


def helper():
    return os.sep


def long_sum():
    total = 0
{body}
    return total
'''


def test_lone_definitions_are_those_no_chunk_speaks_for() -> None:
    # A small definition merged into a neighbour's chunk and a method nested in its class's
    # chunk get a text of their own to embed (the chunker's header with their own name, their
    # own lines); a definition with a chunk named after it, whole or split, does not.
    body = "\n".join(f"    total += {i}" for i in range(120))
    source = LONE.format(body=body)
    result = chunk_file("paint.py", source.encode(), ChunkerConfig(max_chars=900, target_chars=700))
    lone = lone_definitions(result)
    named = {c.symbol for c in result.chunks}
    assert "long_sum" in named and len([c for c in result.chunks if c.symbol == "long_sum"]) > 1
    # The first chunk is named after Palette but holds the imports and helper too: no chunk
    # is Palette's own either.
    assert [chunk.symbol for _, chunk in lone] == [
        "Palette",
        "Palette.blend",
        "Palette.lighten",
        "helper",
    ]
    lines = source.split("\n")
    for index, chunk in lone:
        symbol = result.symbols[index]
        assert chunk.symbol == symbol.qualified_name and chunk.kind == symbol.kind
        assert (chunk.start_line, chunk.end_line) == (symbol.start_line, symbol.end_line)
        assert chunk.content == "\n".join(lines[symbol.start_line - 1 : symbol.end_line])
        assert chunk.language == "python"
        text = embedding_text(chunk, "paint.py")
        assert text.startswith(f"File: paint.py\nLanguage: python\nSymbol: {chunk.symbol} (")


def test_a_lone_definitions_text_is_cut_at_max_chars() -> None:
    # A method of ~1,000 characters nested in its class's chunk: its own text is cut.
    big = "    def big(self):\n" + "\n".join(f"        x{i} = {i}" for i in range(60))
    source = f"class Many:\n    def small(self):\n        return 1\n\n{big}\n"
    result = chunk_file("many.py", source.encode())
    assert [c.symbol for c in result.chunks] == ["Many"]
    lone = {chunk.symbol: chunk for _, chunk in lone_definitions(result, max_chars=500)}
    assert set(lone) == {"Many.small", "Many.big"}
    assert lone["Many.small"].content == "    def small(self):\n        return 1"
    assert lone["Many.big"].content == big[:500]
