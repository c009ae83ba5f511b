"""Bytes to lines, the way an editor numbers them.

UTF-8 with a BOM stripped and invalid bytes replaced (never an exception); CRLF and lone CR both
end a line, so line N here is line N in an editor. `Source` keeps the normalised text (LF only),
its lines, and prefix sums so the size of any line range is O(1).
"""

from __future__ import annotations

import codecs
from bisect import bisect_right
from dataclasses import dataclass, field


def decode(data: bytes) -> str:
    """UTF-8 text with BOM removed, invalid bytes as U+FFFD and every newline as LF."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    text = data.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


@dataclass(frozen=True)
class Source:
    """Normalised text split into lines; line numbers are 1-based throughout."""

    text: str
    lines: list[str] = field(init=False)
    # starts[i] = offset in `text` where line i+1 begins; one extra entry past the end.
    starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        lines = self.text.split("\n")
        starts = [0] * (len(lines) + 1)
        offset = 0
        for i, line in enumerate(lines):
            starts[i] = offset
            offset += len(line) + 1
        starts[len(lines)] = offset
        object.__setattr__(self, "lines", lines)
        object.__setattr__(self, "starts", starts)

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def chars(self, start: int, end: int) -> int:
        """Characters in lines start..end (inclusive), counting the newlines between them."""
        return self.starts[end] - self.starts[start - 1] - 1

    def slice(self, start: int, end: int) -> str:
        """The text of lines start..end (inclusive), without a trailing newline."""
        return self.text[self.starts[start - 1] : self.starts[end] - 1]

    def line_at(self, offset: int) -> int:
        """The 1-based line holding character `offset` of `text`."""
        return bisect_right(self.starts, offset, 0, len(self.lines)) if offset >= 0 else 1

    def is_blank(self, line: int) -> bool:
        return not self.lines[line - 1].strip()

    def trim(self, start: int, end: int) -> tuple[int, int] | None:
        """The range without its leading and trailing blank lines; None when all blank."""
        while start <= end and self.is_blank(start):
            start += 1
        while end >= start and self.is_blank(end):
            end -= 1
        return (start, end) if start <= end else None
