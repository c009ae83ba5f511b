"""Decoding and fallbacks: the inputs a real tree throws at the chunker.

CRLF, tabs, BOM, invalid UTF-8, empty files, binary data, minified code, languages without a
grammar, broken code, a 5 MB generated file, the embedding header, and use from several threads.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from chunkers import Chunk, ChunkerConfig, chunk_file, embedding_text
from chunkers.text import Source, decode

# The sizes some cases were drawn for (the defaults before chunks grew to 2,000 characters).
EARLIER = ChunkerConfig(max_chars=2000, target_chars=1200)

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"
PYTHON = (FIXTURES / "python" / "invoice.py").read_bytes()
SMALL_WINDOWS = ChunkerConfig(max_chars=1000, target_chars=500)
SMALL = ChunkerConfig(max_chars=600, target_chars=350, min_chars=120, char_overlap=60)


def spans(chunks: tuple[Chunk, ...]) -> list[tuple[str | None, int, int]]:
    return [(c.symbol, c.start_line, c.end_line) for c in chunks]


def test_crlf_line_numbers_match_lf() -> None:
    # An editor shows the same line numbers for CRLF and LF files; chunks must too.
    lf = chunk_file("a.py", PYTHON, SMALL)
    crlf = chunk_file("a.py", PYTHON.replace(b"\n", b"\r\n"), SMALL)
    assert spans(crlf.chunks) == spans(lf.chunks)
    assert all("\r" not in c.content for c in crlf.chunks)


def test_lone_cr_counts_as_a_line_break() -> None:
    assert decode(b"a\rb\r\nc\n").split("\n") == ["a", "b", "c", ""]


def test_utf8_bom_is_stripped() -> None:
    result = chunk_file("a.py", b"\xef\xbb\xbf" + PYTHON, SMALL)
    assert spans(result.chunks) == spans(chunk_file("a.py", PYTHON, SMALL).chunks)
    assert not result.chunks[0].content.startswith("\ufeff")


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    data = PYTHON.replace(b"One billed product.", b"One billed \xff\xfe product \xc3.")
    result = chunk_file("a.py", data, SMALL)
    assert result.refused is None and result.fallback is None
    line_item = next(c for c in result.chunks if c.symbol == "LineItem")
    assert "\ufffd" in line_item.content


def test_tabs_are_kept() -> None:
    data = b"def f():\n\tif True:\n\t\treturn 1\n\n\ndef g():\n\treturn 2\n"
    result = chunk_file("t.py", data)
    assert "\t\treturn 1" in result.chunks[0].content


@pytest.mark.parametrize("data", [b"", b"\n\n  \n", b"\xef\xbb\xbf", b"\t\r\n"])
def test_empty_and_blank_files_have_no_chunks(data: bytes) -> None:
    result = chunk_file("empty.py", data)
    assert result.chunks == () and result.refused is None and result.language == "python"


def test_binary_is_refused_with_a_reason() -> None:
    result = chunk_file("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
    assert result.chunks == ()
    assert result.refused is not None and "binary" in result.refused


def test_unknown_text_falls_back_to_windows() -> None:
    data = "".join(f"entry {i}: value\n" for i in range(150)).encode()
    result = chunk_file("data.unknownext", data)
    assert result.language is None and result.fallback == "no grammar"
    assert [(c.start_line, c.end_line) for c in result.chunks] == [(1, 60), (51, 110), (101, 150)]
    assert {c.kind for c in result.chunks} == {"window"} and result.chunks[0].language == "text"
    assert all(c.symbol is None for c in result.chunks)


def test_window_size_and_overlap_are_configurable() -> None:
    data = "".join(f"key_{i} = {i}\n" for i in range(30)).encode()
    config = ChunkerConfig(window_lines=10, window_overlap=3)
    result = chunk_file("x.conf", data, config)
    assert [(c.start_line, c.end_line) for c in result.chunks] == [
        (1, 10),
        (8, 17),
        (15, 24),
        (22, 30),
    ]


def test_windows_are_capped_by_characters_too() -> None:
    data = ("x" * 99 + "\n").encode() * 60
    result = chunk_file("notes.txt", data, ChunkerConfig(max_chars=1000, target_chars=500))
    assert all(len(c.content) <= 1000 for c in result.chunks)
    assert result.chunks[0].end_line == 10


# A long blank stretch inside a windowed function once re-windowed the lines before it into
# nested slivers (1-40, 31-40, 36-40, 39-40, 40-40): each window must end past the one before.
@pytest.mark.parametrize("path", ["long.py", "long.txt"])
def test_a_blank_stretch_leaves_no_nested_slivers(path: str) -> None:
    body = "".join(f"    total_{i} = compute_value(total_{i - 1}, x={i})\n" for i in range(1, 40))
    tail = "".join(f"    result_{i} = finish_step(result_{i - 1})\n" for i in range(1, 6))
    data = ("def long_function(x):\n" + body + "\n" * 70 + tail + "    return result_5\n").encode()
    chunks = chunk_file(path, data, EARLIER).chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 40), (111, 116)]
    for before, after in itertools.pairwise(chunks):
        assert after.start_line > before.start_line and after.end_line > before.end_line


# A line too big to join the window before it: the window stops short of it, and the next
# starts at that line instead of re-windowing the lines already covered.
def test_a_big_line_after_a_window_leaves_no_nested_slivers() -> None:
    lines = [f"entry_{i} = value_{i}" for i in range(20)] + ["x" * 900] + ["end = 1"]
    chunks = chunk_file("notes.txt", ("\n".join(lines) + "\n").encode(), SMALL_WINDOWS).chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 20), (21, 22)]


def test_language_without_grammar_uses_windows() -> None:
    data = b"local M = {}\nfunction M.greet(name)\n  return 'hi ' .. name\nend\nreturn M\n"
    result = chunk_file("init.lua", data)
    assert result.language == "lua" and result.fallback == "no grammar"
    assert [(c.kind, c.start_line, c.end_line, c.language) for c in result.chunks] == [
        ("window", 1, 5, "lua")
    ]


def test_minified_code_is_split_by_characters() -> None:
    body = ";".join(f"var a{i}=function(x){{return x*{i}}}" for i in range(2000))
    data = ("/*! bundle */\n" + body + "\n").encode()
    config = ChunkerConfig()
    result = chunk_file("dist/app.min.js", data, config)
    assert result.fallback == "minified"
    assert len(result.chunks) > 10
    assert all(len(c.content) <= config.max_chars for c in result.chunks)
    assert all(c.start_line <= c.end_line <= 2 for c in result.chunks)
    # Overlapping slices of the real text, from the first character to the last.
    assert all(c.content in body for c in result.chunks[1:])
    assert sum(len(c.content) for c in result.chunks) >= len(body)
    assert result.chunks[0].content.startswith("/*! bundle */\nvar a0=")
    assert body.endswith(result.chunks[-1].content)


def test_one_long_line_in_normal_code_is_cut_but_symbols_survive() -> None:
    blob = "x" * 2500
    functions = "".join(
        f"\n\ndef lookup_{i}(key):\n    '''Find key in table {i}.'''\n"
        f"    return TABLE.find(key, {i}) + len(TABLE) * {i}\n"
        for i in range(40)
    )
    data = f'TABLE = "{blob}"\n{functions}'.encode()
    result = chunk_file("table.py", data, EARLIER)
    assert result.fallback is None
    # The long line becomes character windows; the functions after it still parse and merge.
    assert [(c.kind, c.start_line, c.end_line) for c in result.chunks[:2]] == [
        ("block", 1, 1),
        ("block", 1, 1),
    ]
    assert result.chunks[-1].content.endswith("len(TABLE) * 39")
    assert all(len(c.content) <= ChunkerConfig().max_chars for c in result.chunks)


def test_broken_code_keeps_the_symbols_it_can() -> None:
    # One function with a syntax error must not cost the rest of the file its symbols.
    data = PYTHON.replace(
        b"def tax(self, rate: Decimal = VAT_RATE) -> Decimal:", b"def tax(self, rate:"
    )
    result = chunk_file("a.py", data, SMALL)
    assert result.fallback is None
    symbols = {c.symbol for c in result.chunks}
    assert {"LineItem", "Repository", "send_all"} <= symbols


def test_mostly_garbage_falls_back_to_windows() -> None:
    data = b"def ok():\n    return 1\n" + b")))] ]]} {{ @@ :: ;; <<>> !! ?? \n" * 200
    result = chunk_file("junk.py", data)
    assert result.fallback == "parse errors"
    assert {c.kind for c in result.chunks} == {"window"}


def test_five_megabyte_generated_file() -> None:
    # Generated code: windowed without a parse (too large), every line still covered, quickly.
    line = "    register(handler_{0}, priority={0}, tags=('generated', 'auto'))  # row {0}\n"
    data = ("def setup():\n" + "".join(line.format(i) for i in range(62_000))).encode()
    assert len(data) > 5_000_000
    result = chunk_file("generated.py", data)
    assert result.fallback == "too large"
    src = Source(decode(data))
    assert result.chunks[0].start_line == 1 and result.chunks[-1].end_line == src.line_count - 1
    assert all(
        b.start_line <= a.end_line + 1
        for a, b in zip(result.chunks, result.chunks[1:], strict=False)
    )


def test_embedding_text_has_a_header_and_keeps_content_clean() -> None:
    chunk = next(c for c in chunk_file("a.py", PYTHON, SMALL).chunks if c.symbol == "Invoice.tax")
    text = embedding_text(chunk, "billing/invoice.py")
    assert text.startswith(
        "File: billing/invoice.py\nLanguage: python\nSymbol: Invoice.tax (method)\n\n"
    )
    assert text.endswith(chunk.content)
    assert "File:" not in chunk.content


def test_embedding_text_without_symbol() -> None:
    chunk = Chunk(1, 2, None, "window", "text", "a\nb")
    assert (
        embedding_text(chunk, "notes\\todo.txt") == "File: notes/todo.txt\nLanguage: text\n\na\nb"
    )


def test_language_override() -> None:
    result = chunk_file("script", b"def main():\n    pass\n", language="python")
    assert result.language == "python" and result.chunks[0].symbol == "main"


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="min_chars"):
        ChunkerConfig(max_chars=100, target_chars=200)
    with pytest.raises(ValueError, match="window_overlap"):
        ChunkerConfig(window_lines=10, window_overlap=10)


def test_chunking_from_threads_matches_serial() -> None:
    # The sweep chunks from worker threads; parsers are per thread, results must not interleave.
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    serial = [chunk_file(str(p), p.read_bytes(), SMALL) for p in files] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda p: chunk_file(str(p), p.read_bytes(), SMALL), files * 4))
    assert threaded == serial


def test_absurdly_deep_nesting_falls_back_instead_of_crashing() -> None:
    depth = 1500
    data = "".join(f"mod m{i} {{\n" for i in range(depth)) + "fn f() {}\n" + "}\n" * depth
    result = chunk_file("deep.rs", data.encode())
    assert result.fallback == "too deeply nested"
    assert result.chunks and {c.kind for c in result.chunks} == {"window"}
    assert result.chunks[-1].end_line == data.count("\n")
