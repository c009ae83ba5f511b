"""A file's text as the index keeps it for exact search: blocks of whole lines, each beside its
spelled form, in which blanks and ASCII punctuation are letters so that pg_trgm's trigrams span
them. The sweep writes blocks with `text_rows`; the read side spells what it looks for with
`spelled`, the same way.
"""

from __future__ import annotations

from typing import Any

from indexer.db import migrations

# The size of a block of exact text (see `text_rows`): small enough that a trigram index
# re-check reads a few hundred bytes to a couple of KB, large enough to keep the row count down.
TEXT_BLOCK_CHARS = 2000
TEXT_BLOCK_LINES = 64
# Blanks and ASCII punctuation, each spelled as `q` and a letter or digit of its own in a
# block's `spelled` column and in the literals searched there (see `spelled`). ASCII, so
# pg_trgm reads it on its fast path, in every locale; `q` is the rarest letter in code, and
# the letters after it leave out `u` (query, quote) and `l` (sql). Rows already stored were
# spelled by the migration that set this spelling: changing it takes a new one.
SPELLING = migrations.M005_SPELLING


def spelled(text: str) -> str:
    """`text` with blanks and ASCII punctuation spelled as letters (`SPELLING`). pg_trgm
    takes trigrams from runs of letters and digits only; spelled, `x.get(` is one run whose
    trigrams span the dot and the parenthesis. Each character is always spelled the same
    way, so text holding a literal still holds it spelled: a search of spelled text can only
    propose too much. Newlines stay: lines stay lines."""
    for char, code in SPELLING:  # a pass per character: several times faster than translate
        if char in text:
            text = text.replace(char, code)
    return text


def text_rows(file_id: int, text: str) -> list[tuple[Any, ...]]:
    """The rows of `statements.FILE_TEXT_TABLE` for one file's text, in
    `statements.FILE_TEXT_COLUMNS` order: (file_id, start_line, content, spelled content),
    blocks of whole lines (LF-separated, no trailing newline) of up to `TEXT_BLOCK_CHARS`
    characters and
    `TEXT_BLOCK_LINES` lines; a longer line is a block of its own, never split. Line N of the
    file is line N of the chunks."""
    lines = text.split("\n")
    spelled_lines = spelled(text).split("\n")  # line for line: newlines are not spelled
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    rows: list[tuple[Any, ...]] = []
    first = size = 0
    for i, line in enumerate(lines):
        if i > first and (size + len(line) >= TEXT_BLOCK_CHARS or i - first >= TEXT_BLOCK_LINES):
            block = "\n".join(lines[first:i])
            rows.append((file_id, first + 1, block, "\n".join(spelled_lines[first:i])))
            first, size = i, 0
        size += len(line) + 1
    if first < len(lines):
        block = "\n".join(lines[first:])
        rows.append((file_id, first + 1, block, "\n".join(spelled_lines[first : len(lines)])))
    return rows
