"""One training pair: a person's words and the definition they describe, the definition as the
chunker embeds it (its header, then its code) with the words taken out of the code.

`pairs.py` mines pairs from the training corpus and `train.py` reads them back (`pairs.jsonl`,
one `Pair` a line).
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkers import Chunk, embedding_text
from chunkers.symbols import Definition

MAX_DOC_CHARS = 2400


@dataclass(frozen=True)
class Pair:
    kind: str
    language: str
    library: str
    path: str
    line: int
    query: str
    document: str


def document(
    lib: str, rel: str, language: str, d: Definition, lines: list[str], drop: set[int]
) -> str:
    """The definition as the chunker embeds it, minus the lines in `drop` (1-based)."""
    code = "\n".join(lines[i - 1] for i in range(d.start_line, d.end_line + 1) if i not in drop)
    chunk = Chunk(d.start_line, d.end_line, d.name, d.kind, language, code)
    return embedding_text(chunk, f"{lib}/{rel}")[:MAX_DOC_CHARS]
