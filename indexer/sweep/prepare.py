"""Preparing changed files for a sweep: read, hash, chunk, and the rows they will be stored as.

Runs in the sweep's preparation thread, ahead of embedding, or (many files, more than one free
core) in worker processes that thread hands the files to, results kept in order. A file that
cannot be read or chunked becomes a `Prepared` carrying its error (it fails alone, also when its
parser crashes or hangs a worker); a file whose content did not change carries only the id of
its row (its size and time are refreshed); binary content is a skip, not a failure. Chunk rows
carry their keyword terms and their embedding-cache key; so do the definitions no chunk speaks
for (`chunkers.lone_definitions`), which get a vector of their own.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkers import Chunk, ChunkerConfig, Symbol, chunk_file, lone_definitions
from indexer import lexical
from indexer.db import store
from indexer.embed import CHUNK_VECTORS_WHOLE
from indexer.sweep.parts import content_hash, file_keys
from indexer.sweep.report import SweepReport
from indexer.sweep.walk import Candidate
from indexer.sweep.workers import ProcessMap, WorkersUnavailable

log = logging.getLogger("code_rag.sweep")

BINARY_CONTENT = "binary content"


@dataclass
class Prepared:
    """One changed file, read, hashed and chunked, with the vectors found in the cache."""

    candidate: Candidate
    sha256: str
    language: str | None
    chunks: tuple[Chunk, ...] = ()
    hashes: tuple[str, ...] = ()
    # The definitions no chunk speaks for, as the embedder reads them, and their cache keys
    # (also in their symbol rows).
    definitions: tuple[Chunk, ...] = ()
    definition_hashes: tuple[str, ...] = ()
    # With `chunk_vectors = parts`: the parts of each key made of other texts than its own
    # (`parts.file_keys`).
    parts: dict[str, tuple[Chunk, ...]] = field(default_factory=dict)
    rows: tuple[store.ChunkRow, ...] = ()
    symbols: tuple[store.SymbolRow, ...] = ()
    text: str | None = None  # the decoded text, for exact-text search
    error: str | None = None
    touch_id: int | None = None  # same content as stored: only size/mtime change
    skip: str | None = None  # not indexable after all (binary content)
    row_id: int | None = None  # its stored row, to delete when skipped
    new: bool = False  # the index holds no row for it yet

    def to_embed(self) -> list[tuple[Chunk, str, bool]]:
        """Everything of the file that gets a vector, with its cache key and whether it is a
        definition embedded alone: chunks, then those definitions."""
        return [
            *((c, h, False) for c, h in zip(self.chunks, self.hashes, strict=True)),
            *((d, h, True) for d, h in zip(self.definitions, self.definition_hashes, strict=True)),
        ]

    def vector_keys(self) -> tuple[str, ...]:
        """The keys of the file's vectors, then those of the parts they are made of."""
        keys = self.hashes + self.definition_hashes
        if not self.parts:
            return keys
        made = {content_hash(p) for parts in self.parts.values() for p in parts}
        return keys + tuple(sorted(made.difference(keys)))


@dataclass
class Batch:
    files: list[Prepared]
    cached: dict[str, Any]


def clean(text: str) -> str:
    return text.replace("\x00", "\ufffd")  # PostgreSQL text cannot hold NUL


class Preparer:
    """Prepares files for one sweep; `redo` means every file is re-chunked (a full sweep, a new
    model or chunker) even where its content did not change; `chunk_vectors` is the model's
    (`parts.file_keys`)."""

    def __init__(
        self,
        chunker: ChunkerConfig,
        report: SweepReport,
        redo: bool,
        chunk_vectors: str = CHUNK_VECTORS_WHOLE,
    ) -> None:
        self.chunker = chunker
        self.report = report
        self.redo = redo
        self.chunk_vectors = chunk_vectors

    def prepare_all(
        self, todo: Sequence[tuple[Candidate, store.FileState | None]], workers: int
    ) -> Generator[Prepared, None, None]:
        """Each file of `todo` prepared, in order: here, or in `workers` processes."""
        pool = None
        if workers >= 1:
            try:
                context = (self.chunker, self.redo, self.chunk_vectors)
                pool = ProcessMap(workers, prepare_in_worker, context)
            except WorkersUnavailable as exc:
                log.warning("%s; preparing files in this process instead", exc)
        if pool is None:
            for cand, state in todo:
                yield self.prepare(cand, state)
            return
        done = 0
        with pool:
            try:
                for prepared, seconds in pool.imap(todo, failed_in_worker):
                    for phase, value in seconds.items():
                        self.report.add_time(phase, value)
                    if prepared.error is not None and prepared.error.startswith("chunking failed"):
                        log.warning(
                            "%s/%s: %s",
                            prepared.candidate.repo,
                            prepared.candidate.path,
                            prepared.error,
                        )
                    yield prepared
                    done += 1
            except WorkersUnavailable as exc:  # a replacement worker could not start
                log.warning("%s; preparing the remaining files in this process", exc)
                for cand, state in todo[done:]:
                    yield self.prepare(cand, state)

    def prepare(self, cand: Candidate, state: store.FileState | None) -> Prepared:
        prepared = self._prepare(cand, state)
        prepared.new = state is None
        return prepared

    def _prepare(self, cand: Candidate, state: store.FileState | None) -> Prepared:
        t = time.perf_counter()
        try:
            data = cand.absolute.read_bytes()
        except OSError as exc:
            self.report.add_time("read", time.perf_counter() - t)
            return Prepared(cand, "", None, error=f"cannot read the file: {exc.strerror or exc}")
        sha = hashlib.sha256(data).hexdigest()
        self.report.add_time("read", time.perf_counter() - t)
        if not self.redo and state is not None and state.error is None and state.sha256 == sha:
            return Prepared(cand, sha, None, touch_id=state.id)
        t = time.perf_counter()
        try:
            result = chunk_file(cand.path, data, self.chunker)
        except Exception as exc:  # a chunker bug must cost one file, not the sweep
            log.exception("chunking %s/%s failed", cand.repo, cand.path)
            return Prepared(cand, sha, None, error=f"chunking failed: {exc}")
        finally:
            self.report.add_time("chunk", time.perf_counter() - t)
        if result.refused:  # binary content: a skip, not a failure
            return Prepared(
                cand, sha, result.language, skip=BINARY_CONTENT, row_id=state.id if state else None
            )
        lone = lone_definitions(result)
        definitions = tuple(chunk for _, chunk in lone)
        made = file_keys(self.chunk_vectors, result.chunks, definitions, result.text)
        rows = self.rows(cand.path, result.chunks, made.chunks)
        keys = {i: key for (i, _), key in zip(lone, made.definitions, strict=True)}
        return Prepared(
            cand,
            sha,
            result.language,
            chunks=result.chunks,
            hashes=made.chunks,
            rows=rows,
            symbols=symbol_rows(result.symbols, keys),
            text=clean(result.text),
            definitions=definitions,
            definition_hashes=made.definitions,
            parts=made.parts,
        )

    def rows(
        self, path: str, chunks: tuple[Chunk, ...], keys: Sequence[str] | None = None
    ) -> tuple[store.ChunkRow, ...]:
        """Chunk rows without their vectors, keyword terms included (done here, in the
        preparation thread, to keep the writing thread short); `keys`: their embedding-cache
        keys (default: each chunk's `content_hash`)."""
        path_terms = lexical.path_terms_text(path)
        return tuple(
            store.ChunkRow(
                ordinal=i,
                start_line=c.start_line,
                end_line=c.end_line,
                symbol=clean(c.symbol) if c.symbol else None,
                kind=c.kind,
                content=clean(c.content),
                content_sha256=keys[i] if keys is not None else content_hash(c),
                embedding=None,
                symbol_terms=lexical.terms_text(c.symbol or ""),
                path_terms=path_terms,
                body_terms=lexical.terms_text(c.content),
            )
            for i, c in enumerate(chunks)
        )


def prepare_in_worker(
    context: tuple[ChunkerConfig, bool, str], item: tuple[Candidate, store.FileState | None]
) -> tuple[Prepared, dict[str, float]]:
    """One file prepared in a worker process, with the seconds it spent per phase."""
    chunker, redo, chunk_vectors = context
    report = SweepReport(project="")
    prepared = Preparer(chunker, report, redo, chunk_vectors).prepare(*item)
    return prepared, report.seconds


def failed_in_worker(
    item: tuple[Candidate, store.FileState | None], reason: str
) -> tuple[Prepared, dict[str, float]]:
    """A file whose worker crashed, hung or raised: it fails alone, with the reason."""
    cand, state = item
    prepared = Prepared(cand, "", None, error=f"chunking failed: {reason}", new=state is None)
    return prepared, {}


def symbol_rows(
    symbols: tuple[Symbol, ...], keys: dict[int, str] | None = None
) -> tuple[store.SymbolRow, ...]:
    """The rows of `symbols`; `keys` gives the embedding-cache key of each one (by index) that
    gets a vector of its own."""
    keys = keys or {}
    return tuple(
        store.SymbolRow(
            ordinal=i,
            chunk=s.chunk,
            name=clean(s.name),
            qualified_name=clean(s.qualified_name),
            kind=s.kind,
            start_line=s.start_line,
            end_line=s.end_line,
            signature_line=s.signature_line,
            signature=clean(s.signature),
            parent=clean(s.parent) if s.parent is not None else None,
            content_sha256=keys.get(i),
        )
        for i, s in enumerate(symbols)
    )
