"""A file's vectors with each line read once (`[embedding] chunk_vectors = parts`).

By default (`whole`) the model reads each chunk's text, and then again the text of each
definition no chunk speaks for (`chunkers.lone_definitions`): a class's methods merged into its
chunk are read twice. With `parts` it reads each such definition's own lines once, under its
own name, and the rest of each chunk once (`chunkers.vector_parts`); a chunk's vector is the
mean of its parts' vectors, weighted by their lengths, and a definition's the mean of its own
part and those of the definitions inside it. A part is embedded and cached like any text (its
key is `content_hash` of it), so a part shared by a chunk and a definition, or unchanged since
the last sweep, is read once; an item's key is its single part's, or a hash of its parts.

The sweep (`prepare.py`, `write.py`) and the vectors that follow the rows (`vectors.py`) make
the same parts from the same lines, so both give the same vectors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkers import Chunk, vector_parts
from indexer.embed import CHUNK_VECTORS_OUTLINE, CHUNK_VECTORS_REST, CHUNK_VECTORS_WHOLE


def content_hash(chunk: Chunk) -> str:
    """The embedding-cache key: a chunk's symbol and text (its path is left out on purpose,
    so renaming or moving a file reuses its vectors)."""
    return hashlib.sha256(f"{chunk.symbol or ''}\n{chunk.content}".encode()).hexdigest()


def parts_hash(parts: Sequence[Chunk]) -> str:
    """The key of a vector made of `parts`: the single part's own key, else a hash of them all
    (which no single text's key can equal)."""
    if len(parts) == 1:
        return content_hash(parts[0])
    joined = "\x1e".join(f"{p.symbol or ''}\n{p.content}" for p in parts)
    return hashlib.sha256(f"parts\x1f{joined}".encode()).hexdigest()


def compose(parts: Sequence[Chunk], vectors: Mapping[str, Any]) -> Any | None:
    """The vector of `parts` from their vectors in `vectors` (by `content_hash`; as the model
    gives them, or as the database returns those stored): the single part's, else their mean
    weighted by the parts' lengths, normalised; None while a part's vector is missing."""
    import numpy as np
    from pgvector import Vector

    found = [vectors.get(content_hash(p)) for p in parts]
    if any(v is None for v in found):
        return None
    if len(found) == 1:
        return found[0]
    arrays = [v.to_numpy() if isinstance(v, Vector) else v for v in found]
    weights = np.asarray([len(p.content) for p in parts], dtype=np.float32)
    mean = (np.asarray(arrays, dtype=np.float32) * weights[:, None]).sum(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)


@dataclass(frozen=True, slots=True)
class FileKeys:
    """The keys of a file's chunks and lone definitions (in their orders), and the parts of
    each key made of parts other than the item itself."""

    chunks: tuple[str, ...]
    definitions: tuple[str, ...]
    parts: dict[str, tuple[Chunk, ...]]


def file_keys(
    mode: str, chunks: Sequence[Chunk], definitions: Sequence[Chunk], text: str | None
) -> FileKeys:
    """The keys of a file's vectors in `mode` (`whole`: each item's own text; `parts`, `rest`
    or `outline`: its parts, from the file's `text`)."""
    if mode == CHUNK_VECTORS_WHOLE or text is None:
        return FileKeys(tuple(map(content_hash, chunks)), tuple(map(content_hash, definitions)), {})
    rest_alone = mode in (CHUNK_VECTORS_REST, CHUNK_VECTORS_OUTLINE)
    signatures = mode == CHUNK_VECTORS_OUTLINE
    lines = text.split("\n")
    made = vector_parts(chunks, definitions, lines, rest_alone=rest_alone, signatures=signatures)
    parts: dict[str, tuple[Chunk, ...]] = {}
    keys: list[list[str]] = [[], []]
    for items, out, own in (
        (made.chunks, keys[0], chunks),
        (made.definitions, keys[1], definitions),
    ):
        for item, item_parts in zip(own, items, strict=True):
            key = parts_hash(item_parts)
            out.append(key)
            if item_parts != (item,):
                parts[key] = item_parts
    return FileKeys(tuple(keys[0]), tuple(keys[1]), parts)
