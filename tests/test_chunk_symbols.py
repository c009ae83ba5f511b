"""Symbol-aware chunking, language by language, on fixtures of real-looking code.

Each fixture is chunked with a small configuration (so classes are big enough to be split) and
the exact (symbol, kind, start_line, end_line) sequence is asserted: a change here is a change in
what agents get back as pointers, and should come with a CHUNKER_VERSION bump.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkers import ChunkerConfig, chunk_file

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"
SMALL = ChunkerConfig(max_chars=600, target_chars=350, min_chars=120, char_overlap=60)

Row = tuple[str | None, str, int, int]

EXPECTED: dict[str, tuple[str, list[Row]]] = {
    "python/invoice.py": ("python", [
        (None, "block", 1, 12),
        ("LineItem", "class", 15, 21),
        ("Repository", "class", 24, 34),
        ("Invoice", "class_header", 37, 47),
        ("Invoice.subtotal", "method", 49, 52),
        ("Invoice.tax", "method", 54, 56),
        ("Invoice.from_order", "method", 58, 65),
        ("Invoice.generate", "method", 67, 77),
        ("send_all", "function", 80, 90),
        (None, "block", 93, 95),
    ]),
}  # fmt: skip


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_symbols_and_line_ranges(fixture: str) -> None:
    # Guards the pointers agents receive: qualified symbol, kind and exact line range.
    language, expected = EXPECTED[fixture]
    result = chunk_file(fixture, (FIXTURES / fixture).read_bytes(), SMALL)
    assert result.fallback is None
    assert result.language == language
    got = [(c.symbol, c.kind, c.start_line, c.end_line) for c in result.chunks]
    assert got == expected
    assert {c.language for c in result.chunks} == {language}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_chunk_content_is_the_source_lines(fixture: str) -> None:
    # Content must be exactly the lines it points at, so a reader of the range sees the same code.
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()
    for chunk in chunk_file(fixture, (FIXTURES / fixture).read_bytes(), SMALL).chunks:
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.content.strip()
