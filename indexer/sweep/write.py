"""Embedding a batch of prepared files and writing them, each file in its own savepoint.

Vectors found in the embedding cache (by content hash) are reused; the rest, of chunks and of
the definitions no chunk speaks for, are embedded in one request batch spanning files. A file
whose inputs the embedder refused, or whose rows the database refused, fails alone: recorded
with its reason (its previous rows kept), retried next sweep. An unexpected embedder failure on
a batch is retried file by file, so one input the embedder cannot take costs its own file only.
In a bulk load the batch's new files go in with one COPY per table (`bulk.load_files`); if the
database refuses it, they go file by file. With `defer`, nothing is embedded: rows whose
vectors are not stored yet go in without them, and `vectors.embed_pending` adds them. With no
embedder (model-free) rows go in as with `defer`, and nothing is counted as left to embed.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import replace
from typing import Any, NamedTuple

import psycopg

from chunkers import Chunk, embedding_text
from indexer.db import Conn, Schema, bulk, embedding_cache, statement_limit, store
from indexer.embed import Embedder, count_tokens, tokens_embedded
from indexer.errors import RagError
from indexer.sweep.parts import compose, content_hash
from indexer.sweep.prepare import Batch, Prepared
from indexer.sweep.report import SweepReport

log = logging.getLogger("code_rag.sweep")

# The source's tokens are counted on this many characters of a sweep's files, then on one
# file in SOURCE_SAMPLE_EVERY (by path), and scaled to the rest (`Writer._count_source`).
SOURCE_SAMPLE_CHARS = 4_000_000
SOURCE_SAMPLE_EVERY = 16


class Wanted(NamedTuple):
    """An input to embed: its text, its label in messages, and whether it is a definition's
    (embedded alone) rather than a chunk's."""

    text: str
    label: str
    definition: bool


def _label(f: Prepared, chunk: Chunk) -> str:
    """An input's label in messages: where its lines are, and its name."""
    label = f"{f.candidate.repo}/{f.candidate.path}:{chunk.start_line}-{chunk.end_line}"
    return f"{label} {chunk.symbol}" if chunk.symbol else label


class Writer:
    """Embeds and writes the batches of one sweep on its connection."""

    def __init__(
        self,
        conn: Conn,
        schema: Schema,
        embedder: Embedder | None,
        report: SweepReport,
        bulk_load: bool = False,
        defer: bool = False,
        shared: str | None = None,
    ) -> None:
        self.conn = conn
        self.schema = schema
        self.embedder = embedder
        self.report = report
        self.bulk_load = bulk_load  # new files go in with COPY
        self.defer = defer  # rows first, their vectors later (`vectors.embed_pending`)
        self.shared = shared  # the model's key in the cache every project shares, if any

    def embed_and_write(self, batch: Batch) -> None:
        report = self.report
        vectors: dict[str, Any] = dict(batch.cached)
        wanted: dict[str, Wanted] = {}  # by hash, the first occurrence
        made_of: dict[str, tuple[Chunk, ...]] = {}  # vectors made of parts, by hash
        for f in batch.files:
            for chunk, h, definition in f.to_embed():
                if h in vectors:
                    report.cache_hits += 1
                    continue
                parts = f.parts.get(h, (chunk,))
                if len(parts) > 1:
                    made_of.setdefault(h, parts)
                for part in parts:
                    key = content_hash(part) if len(parts) > 1 else h
                    if key not in vectors and key not in wanted:
                        text = embedding_text(part, f.candidate.path)
                        wanted[key] = Wanted(text, _label(f, part), definition)
        refused: dict[str, str] = {}
        if wanted and self.embedder is None:
            pass  # model-free: no vector is wanted, now or later
        elif wanted and self.defer:
            report.vectors_deferred += len(wanted)
        elif wanted:
            t = time.perf_counter()
            try:
                self._embed(list(wanted), wanted, vectors, refused)
            except RagError:
                raise  # the embedder as a whole failed (unreachable, wrong model): stop
            except Exception:  # something in this batch broke it: find the file, spare the rest
                log.exception(
                    "embedding a batch of %s failed; retrying file by file", self.schema.name
                )
                self._embed_file_by_file(batch, wanted, vectors, refused)
            report.add_time("embed", time.perf_counter() - t)
        for h, parts in made_of.items():  # a part refused fails its file (`vector_keys`)
            vector = compose(parts, vectors)
            if vector is not None:
                vectors[h] = vector
        t = time.perf_counter()
        if self.shared is not None:  # committed with the batch
            made = {h: vectors[h] for h in sorted({*wanted, *made_of}) if h in vectors}
            embedding_cache.share_vectors(self.conn, self.shared, made)
        written = self._write(batch, vectors, refused)
        report.add_time("store", time.perf_counter() - t)
        t = time.perf_counter()
        self._count_source([f.text or "" for f in written], [f.candidate.path for f in written])
        report.add_time("count_tokens", time.perf_counter() - t)

    def _count_source(self, texts: list[str], paths: list[str]) -> None:
        """The source's tokens (`report.source_tokens`, against which the embedding work is
        told): counted on the first `SOURCE_SAMPLE_CHARS` characters a sweep writes, then on
        the files one in `SOURCE_SAMPLE_EVERY` of whose paths hash to 0, and scaled to all
        the characters written. Counting every token of a 2 GB tree with the model's
        tokenizer took longer than reading, chunking and writing it."""
        report = self.report
        sample = [
            text
            for text, path in zip(texts, paths, strict=True)
            if report.source_sampled_chars < SOURCE_SAMPLE_CHARS
            or zlib.crc32(path.encode("utf-8", "surrogateescape")) % SOURCE_SAMPLE_EVERY == 0
        ]
        report.source_chars += sum(map(len, texts))
        report.source_sampled_chars += sum(map(len, sample))
        report.source_sampled_tokens += count_tokens(self.embedder, sample) if sample else 0
        if report.source_sampled_chars:
            ratio = report.source_sampled_tokens / report.source_sampled_chars
            report.source_tokens = round(report.source_chars * ratio)

    def _embed(
        self,
        keys: list[str],
        wanted: dict[str, Wanted],
        vectors: dict[str, Any],
        refused: dict[str, str],
    ) -> None:
        """Embed the texts of `keys`; their vectors into `vectors`, refusals into `refused`."""
        import numpy as np  # only when something is embedded: a no-op sweep never loads it

        report = self.report
        assert self.embedder is not None  # model-free batches embed nothing
        result = self.embedder.embed_documents(
            [wanted[k].text for k in keys], [wanted[k].label for k in keys]
        )
        report.embed_requests += result.requests
        report.tokens_embedded += tokens_embedded(
            result, self.embedder, [wanted[k].text for k in keys]
        )
        report.embed_retries += result.retries
        report.embed_truncated += len(result.truncated)
        for key, vector in zip(keys, result.vectors, strict=True):
            if vector is not None:
                vectors[key] = np.asarray(vector, dtype=np.float32)
                if wanted[key].definition:
                    report.definitions_embedded += 1
                else:
                    report.chunks_embedded += 1
        for r in result.refused:
            refused[keys[r.index]] = f"the embedder refused {r.label}: {r.reason}"

    def _embed_file_by_file(
        self,
        batch: Batch,
        wanted: dict[str, Wanted],
        vectors: dict[str, Any],
        refused: dict[str, str],
    ) -> None:
        """After an unexpected embedder failure: each file's chunks alone, so one input the
        embedder cannot take fails its own file only."""
        for f in batch.files:
            keys = [h for h in dict.fromkeys(f.vector_keys()) if h in wanted and h not in vectors]
            if not keys:
                continue
            try:
                self._embed(keys, wanted, vectors, refused)
            except RagError:
                raise
            except Exception as exc:
                reason = f"the embedder failed on this file ({type(exc).__name__}: {exc})"
                refused.update(dict.fromkeys(keys, reason[:500]))

    def _write(
        self, batch: Batch, vectors: dict[str, Any], refused: dict[str, str]
    ) -> list[Prepared]:
        """Write the batch's files; return those whose rows were written."""
        conn, report = self.conn, self.report
        loaded: set[int] = set()  # indexes in batch.files of the files written by COPY
        if self.bulk_load:
            loaded = self._load(batch, vectors, refused)
        written = [batch.files[i] for i in sorted(loaded)]
        for i, f in enumerate(batch.files):
            if i in loaded:
                continue
            cand = f.candidate
            if f.touch_id is not None:
                store.touch_file(conn, self.schema, f.touch_id, cand.size, cand.mtime_ns)
                report.files_unchanged += 1
                continue
            if f.skip is not None:
                report.skipped[f.skip] = report.skipped.get(f.skip, 0) + 1
                report.files_seen -= 1
                if f.row_id is not None:
                    report.files_deleted += store.delete_files(conn, self.schema, [f.row_id])
                continue
            reason = f.error or next((refused[h] for h in f.vector_keys() if h in refused), None)
            if reason is None:
                try:
                    self._upsert(f, vectors)
                    report.files_changed += 1
                    report.chunks_written += len(f.chunks)
                    written.append(f)
                    continue
                except psycopg.Error as exc:
                    if isinstance(exc, psycopg.OperationalError) and not statement_limit(exc):
                        raise  # the connection or the server failed: the sweep stops
                    reason = f"could not be stored: {str(exc).strip().splitlines()[0]}"
            store.record_file_error(conn, self.schema, cand.repo, cand.path, reason, f.language)
            report.fail_file(cand.repo, cand.path, reason)
            log.warning("%s/%s: %s", cand.repo, cand.path, reason)
        conn.commit()
        return written

    def _load(self, batch: Batch, vectors: dict[str, Any], refused: dict[str, str]) -> set[int]:
        """COPY the batch's new, whole files; return their indexes in the batch (none when
        the database refused the load: the per-file path then writes and judges each)."""
        chosen = {
            i: f
            for i, f in enumerate(batch.files)
            if f.new
            and f.touch_id is None
            and f.skip is None
            and f.error is None
            and not any(h in refused for h in f.vector_keys())
        }
        if not chosen:
            return set()
        files = [
            bulk.NewFile(self._record(f), self._rows(f, vectors), self._symbols(f, vectors), f.text)
            for f in chosen.values()
        ]
        t = time.perf_counter()
        try:
            bulk.load_files(self.conn, self.schema, files)
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) and not statement_limit(exc):
                raise
            log.warning(
                "%s: the bulk load of a batch failed (%s); writing its files one by one",
                self.schema.name,
                str(exc).strip().splitlines()[0],
            )
            return set()
        self.report.add_time("copy", time.perf_counter() - t)
        self.report.files_changed += len(files)
        self.report.chunks_written += sum(len(f.chunks) for f in files)
        return set(chosen)

    @staticmethod
    def _record(f: Prepared) -> store.FileRecord:
        cand = f.candidate
        return store.FileRecord(
            cand.repo, cand.path, cand.size, cand.mtime_ns, f.sha256, f.language
        )

    @staticmethod
    def _rows(f: Prepared, vectors: dict[str, Any]) -> list[store.ChunkRow]:
        return [replace(row, embedding=vectors.get(row.content_sha256)) for row in f.rows]

    @staticmethod
    def _symbols(f: Prepared, vectors: dict[str, Any]) -> list[store.SymbolRow]:
        return [
            replace(s, embedding=vectors.get(s.content_sha256)) if s.content_sha256 else s
            for s in f.symbols
        ]

    def _upsert(self, f: Prepared, vectors: dict[str, Any]) -> None:
        store.upsert_file(
            self.conn,
            self.schema,
            self._record(f),
            self._rows(f, vectors),
            self._symbols(f, vectors),
            f.text,
        )
