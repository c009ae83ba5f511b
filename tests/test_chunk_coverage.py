"""The coverage property: every non-blank line of a file lands in at least one chunk.

Checked on every fixture under two configurations, and with hypothesis on fixtures with random
lines deleted (which also makes broken code: the property must hold however the parse goes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkers import Chunk, ChunkerConfig, chunk_file
from chunkers.detect import KNOWN_LANGUAGES, detect_language
from chunkers.grammars import has_symbols, parser_for
from chunkers.symbols import extract
from chunkers.text import Source, decode

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"
ALL_FIXTURES = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.is_file())
CONFIGS = {
    "default": ChunkerConfig(),
    "small": ChunkerConfig(max_chars=600, target_chars=350, min_chars=120, char_overlap=60),
    "tiny": ChunkerConfig(
        max_chars=160,
        target_chars=100,
        min_chars=40,
        window_lines=8,
        window_overlap=2,
        char_overlap=20,
    ),
}


def uncovered(data: bytes, chunks: tuple[Chunk, ...]) -> list[int]:
    src = Source(decode(data))
    covered = bytearray(src.line_count + 2)
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= src.line_count
        covered[chunk.start_line : chunk.end_line + 1] = b"\x01" * (
            chunk.end_line - chunk.start_line + 1
        )
    return [n for n in range(1, src.line_count + 1) if not src.is_blank(n) and not covered[n]]


def test_every_language_with_symbol_rules_has_fixtures() -> None:
    # The tests below run over these files: a language without one would go untested.
    found = {detect_language(f, (FIXTURES / f).read_bytes()[:512]) for f in ALL_FIXTURES}
    assert found >= {lang for lang in KNOWN_LANGUAGES if has_symbols(lang)}


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_every_non_blank_line_is_in_a_chunk(fixture: str, config: str) -> None:
    data = (FIXTURES / fixture).read_bytes()
    result = chunk_file(fixture, data, CONFIGS[config])
    assert uncovered(data, result.chunks) == []


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_chunks_respect_max_chars(fixture: str) -> None:
    # Chunks are sized for the embedder: only a trailing brace may push one slightly over.
    config = CONFIGS["small"]
    for chunk in chunk_file(fixture, (FIXTURES / fixture).read_bytes(), config).chunks:
        assert len(chunk.content) <= config.max_chars + config.min_chars


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fixture=st.sampled_from(ALL_FIXTURES),
    deletions=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    config=st.sampled_from(sorted(CONFIGS)),
)
def test_coverage_survives_random_line_deletions(
    fixture: str, deletions: list[int], config: str
) -> None:
    lines = (FIXTURES / fixture).read_bytes().split(b"\n")
    for index in deletions:
        if lines:
            del lines[index % len(lines)]
    data = b"\n".join(lines)
    result = chunk_file(fixture, data, CONFIGS[config])
    assert uncovered(data, result.chunks) == []


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_truncated_code_still_chunks(fixture: str) -> None:
    # Half a file (an editor mid-save, a bad merge) is broken code: the parse must tolerate it,
    # keep the symbols before the cut, and still cover every line.
    data = (FIXTURES / fixture).read_bytes()
    broken = data[: len(data) * 3 // 5] + b"\n)]} <<<<<<< HEAD\n"
    result = chunk_file(fixture, broken, CONFIGS["small"])
    assert uncovered(broken, result.chunks) == []
    if result.fallback is None and result.language is not None:
        source = decode(broken).encode()
        tree = parser_for(result.language).parse(source)
        assert extract(tree, result.language, source), "no definition survived the cut"
