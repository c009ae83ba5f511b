"""The second phase of a sweep: the vectors of the rows it wrote without them.

A sweep of many files writes each file's rows (chunks, keyword vectors, symbols, exact text)
at the speed of parsing, leaving their vectors pending (`run.py`), so keyword, symbol and
exact-text search answer within seconds of its start; this phase then embeds what is pending,
a batch at a time, oldest first. What is pending is read from the database (the partial
indexes of migration m008), never from memory: a restart, a killed process or an embedder
outage only delays it. A vector goes in only where its row still holds the text it was made
from, so a file changed meanwhile never gets a vector of its older text: its new rows wait
for their own. A stored vector of the same text (another file, an earlier sweep) is reused
without embedding, and a text pending in several places is embedded once.

A chunk's embedding text is made from its row, a definition's from its lines in the file's
exact-text blocks, exactly as the sweep would have made them (`chunkers.embedding_text`; a
definition's content hash is checked). An input the embedder refuses fails its file the way a
sweep does (recorded with its reason, its rows kept, read again by the next sweep); the
embedder failing as a whole (unreachable, another model) ends the phase with the rest still
pending. One process embeds a project's pending vectors at a time (a lock of its own, not the
sweep's: sweeps and file events go on meanwhile). A first index written rows first has no
HNSW graphs yet (searches scan the vectors in so far): the run that leaves nothing pending
builds them, once, as a bulk load does, instead of inserting every vector into a graph. An
index written with no model (`provider = none`: rows only, no model recorded) is taken up the
same way by the first model that embeds it: the model is recorded, the columns typed, and
every row is pending.

Several projects waiting at once (`./bld scan all`, a server's start) are one stream, in
`pending_order`: the project with the fewest vectors pending first. The total is the same in
any order, and so is the moment the last vector goes in; smallest first makes the most
projects complete soonest (a project of a few files is whole in seconds instead of waiting
behind one of hours), which round-robin would not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from chunkers import DEFINITION_CHARS, UNKNOWN_LANGUAGE, Chunk, embedding_text
from indexer.db import Conn, Database, Schema, embedding_cache, store
from indexer.db.rows import PendingChunk, PendingDefinition
from indexer.embed import Embedder, EmbeddingModel, needs_reembed, tokens_embedded
from indexer.errors import RagError
from indexer.project import Project
from indexer.status import PROGRESS_EVERY, VECTORS_PROGRESS, progress_record
from indexer.sweep.prepare import content_hash
from indexer.sweep.workers import free_cores

log = logging.getLogger("code_rag.vectors")

# Pending inputs read, embedded and written per round (one commit each).
BATCH = 128
# How often the rounds count what is pending (for their progress): at a million pending
# chunks a count takes a second or two, as long as a round's embedding.
PENDING_RECOUNT_S = 30.0


@dataclass(frozen=True, slots=True)
class VectorProgress:
    """Handed to the progress callback after each round."""

    project: str
    done: int  # vectors written (or reused) by this run
    pending: int  # still waiting after this round
    elapsed: float

    @property
    def per_second(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds left at this run's rate so far (None before the first vector)."""
        return self.pending / self.per_second if self.done else None


VectorProgressCallback = Callable[[VectorProgress], None]


@dataclass
class VectorReport:
    """What one run of the phase did."""

    project: str
    # ok: nothing left | partial: files refused | stopped: asked to | busy: another process
    # embeds them | failed: the embedder or the database failed, the rest still pending
    outcome: str = "ok"
    error: str | None = None
    chunks_embedded: int = 0
    definitions_embedded: int = 0
    reused: int = 0  # vectors of the same text already stored
    tokens_embedded: int = 0  # of the texts embedded (`indexer.embed.count_tokens`)
    files_failed: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    pending: int = 0  # left when the run ended
    seconds: float = 0.0

    @property
    def written(self) -> int:
        return self.chunks_embedded + self.definitions_embedded + self.reused

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class _Input:
    """One pending row: which table, its id and hash, and how to embed it."""

    definition: bool
    id: int
    hash: str
    text: str
    label: str
    file: tuple[str, str, str | None]  # repo, path, language: what a refusal is recorded on


@dataclass(frozen=True, slots=True)
class PendingWork:
    """A project and how many of its vectors are pending (None: the database did not say)."""

    project: str
    pending: int | None


def pending_order(db: Database, names: Sequence[str]) -> list[PendingWork]:
    """The projects `names` in the order their pending vectors are embedded: fewest pending
    first, ties in the order given; a project whose count cannot be read goes last (its own
    run reports why). A project with no index yet counts as none pending."""
    counts: dict[str, int] = {}
    try:
        with db.reading("reading how many vectors each project waits for") as conn:
            for name in names:
                schema = Schema(name)
                exists = store.project_exists(conn, schema)
                counts[name] = store.pending_counts(conn, schema).total if exists else 0
    except RagError as exc:
        log.warning("cannot tell how many vectors are pending: %s", exc.message)
    work = [PendingWork(name, counts.get(name)) for name in names]
    return sorted(work, key=lambda w: (w.pending is None, w.pending or 0))


def embed_pending(
    db: Database,
    project: Project,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    progress: VectorProgressCallback | None = None,
    stop: threading.Event | None = None,
) -> VectorReport:
    """Embed the project's pending chunks and definitions until none is left (or `stop` is
    set) and return what was done. Never raises for a failure of the embedder or the
    database: the report says it, and what was not written stays pending."""
    report = VectorReport(project.name)
    schema = Schema(project.name)
    started = time.perf_counter()
    try:
        with db.session(f"locking the vectors of {project.name}") as lock:
            if not store.try_vectors_lock(lock, schema):
                report.outcome = "busy"
                return report
            try:
                with db.connection(f"embedding the pending vectors of {project.name}") as conn:
                    shared = embedder.identity.cache_key if db.shared_cache else None
                    phase = _Phase(conn, schema, embedder, report, batch, shared)
                    phase.run(progress, stop, started)
            finally:
                store.release_vectors_lock(lock, schema)
    except RagError as exc:
        report.outcome, report.error = "failed", exc.message
        log.warning("vectors of %s: %s", project.name, exc.message)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


class _Phase:
    def __init__(
        self,
        conn: Conn,
        schema: Schema,
        embedder: Embedder,
        report: VectorReport,
        batch: int,
        shared: str | None,
    ) -> None:
        self.shared = shared  # the model's key in the cache every project shares, if any
        self.conn = conn
        self.schema = schema
        self.embedder = embedder
        self.report = report
        self.batch = max(1, batch)

    def run(
        self,
        progress: VectorProgressCallback | None,
        stop: threading.Event | None,
        started: float,
    ) -> None:
        if not self._same_model():
            return
        if store.vector_indexes_missing(self.conn, self.schema):
            # Searches meanwhile read the rows with a vector through an index of them.
            store.ensure_embedded_indexes(self.conn, self.schema)
        self.conn.commit()
        report = self.report
        saved = counted_at = 0.0
        counted = written_then = 0
        while True:
            if stop is not None and stop.is_set():
                report.outcome = "stopped"
                break
            inputs = self._next_inputs()
            if inputs is None:
                break
            if inputs:  # empty: every row read belonged to a file that failed just now
                self._embed_and_write(inputs)
            now = time.perf_counter()
            if progress is None and now - saved < PROGRESS_EVERY:
                continue
            if now - counted_at >= PENDING_RECOUNT_S:
                counted, counted_at = store.pending_counts(self.conn, self.schema).total, now
                written_then = report.written
            # Between counts, what is left is the count less what this run wrote since.
            left = max(counted - (report.written - written_then), 0)
            if now - saved >= PROGRESS_EVERY:  # for the status of another process
                saved = now
                done = report.written
                record = progress_record(done, done + left, now - started)
                store.set_meta(self.conn, self.schema, VECTORS_PROGRESS, record)
            self.conn.commit()
            if progress is not None:
                progress(VectorProgress(self.schema.name, report.written, left, now - started))
        report.pending = store.pending_counts(self.conn, self.schema).total
        if self.shared is not None and report.chunks_embedded + report.definitions_embedded:
            embedding_cache.trim_shared_cache(self.conn)
        self.conn.commit()
        if not report.pending:
            self._build_graphs()
        if report.outcome == "ok" and report.files_failed:
            report.outcome = "partial"

    def _build_graphs(self) -> None:
        """The HNSW indexes, where a first index written rows first left them for now."""
        missing = store.vector_indexes_missing(self.conn, self.schema)
        self.conn.rollback()
        if not missing:
            return
        started = time.perf_counter()
        rows = store.chunk_count(self.conn, self.schema)
        memory = store.index_build_memory(rows, self.embedder.identity.dimension)
        store.build_vector_indexes(self.conn, self.schema, memory, max(0, free_cores() - 1))
        self.conn.commit()
        log.info(
            "%s: built the vectors' indexes over %d chunks in %.1f s",
            self.schema.name,
            rows,
            time.perf_counter() - started,
        )

    def _same_model(self) -> bool:
        """Whether the index's vectors are this embedder's (a sweep with another model
        re-embeds everything; until then nothing of this one may go in). An index no model
        has embedded yet (written model-free) becomes this model's."""
        recorded = store.get_meta(self.conn, self.schema, "embedding")
        self.conn.rollback()
        identity = self.embedder.identity
        if recorded is None:
            with self.conn.transaction():
                store.set_embedding_dimension(self.conn, self.schema, identity.dimension)
                store.set_meta(self.conn, self.schema, "embedding", identity.to_dict())
            self.conn.commit()
            return True
        if not needs_reembed(EmbeddingModel.from_dict(recorded), identity):
            return True
        self.report.outcome = "failed"
        self.report.error = (
            f"the index of {self.schema.name} holds vectors of another model; "
            "a sweep with this one re-embeds it"
        )
        return False

    def _next_inputs(self) -> list[_Input] | None:
        """The next batch of pending rows (chunks first), with their embedding texts; None
        when none is pending. A definition whose lines cannot be read back as the sweep read
        them fails its file (its rows are not pending any more)."""
        conn, schema = self.conn, self.schema
        chunks = store.pending_chunks(conn, schema, self.batch)
        definitions: list[PendingDefinition] = []
        if len(chunks) < self.batch:
            definitions = store.pending_definitions(conn, schema, self.batch - len(chunks))
        lines = store.file_lines(conn, schema, sorted({d.file_id for d in definitions}))
        conn.rollback()
        if not chunks and not definitions:
            return None
        inputs = [_chunk_input(c) for c in chunks]
        unreadable: dict[tuple[str, str, str | None], str] = {}
        for d in definitions:
            made = _definition_input(d, lines.get(d.file_id, []))
            if made is None:
                unreadable[(d.repo, d.path, d.language)] = (
                    f"the lines of {d.qualified_name} could not be read back from the index; "
                    "the next sweep reads the file again"
                )
            else:
                inputs.append(made)
        for file, reason in unreadable.items():
            self._fail(file, reason)
        if unreadable:
            conn.commit()
        return [i for i in inputs if i.file not in unreadable]

    def _embed_and_write(self, inputs: list[_Input]) -> None:
        conn, schema, report = self.conn, self.schema, self.report
        hashes = sorted({i.hash for i in inputs})
        vectors: dict[str, Any] = store.cached_embeddings(conn, schema, hashes)
        missing = [h for h in hashes if h not in vectors]
        if self.shared is not None and missing:
            vectors.update(embedding_cache.shared_vectors(conn, self.shared, missing))
        conn.commit()
        wanted: dict[str, _Input] = {}
        for i in inputs:
            if i.hash not in vectors:
                wanted.setdefault(i.hash, i)
        refused: dict[tuple[str, str, str | None], str] = {}
        if wanted:
            self._embed(list(wanted.values()), vectors, refused)
        rows: dict[bool, list[tuple[int, str, Any]]] = {False: [], True: []}
        for i in inputs:
            if i.file in refused or i.hash not in vectors:
                continue
            rows[i.definition].append((i.id, i.hash, vectors[i.hash]))
            if wanted.get(i.hash) is not i:  # stored already, or the same text pending twice
                report.reused += 1
        for file, reason in refused.items():
            self._fail(file, reason)
        store.set_vectors(conn, schema, rows[False], rows[True])
        if self.shared is not None:
            made = {h: vectors[h] for h in sorted(wanted) if h in vectors}
            embedding_cache.share_vectors(conn, self.shared, made)
        conn.commit()

    def _embed(
        self,
        wanted: Sequence[_Input],
        vectors: dict[str, Any],
        refused: dict[tuple[str, str, str | None], str],
    ) -> None:
        """Embed `wanted` into `vectors`; a refused input's file into `refused`. An
        unexpected failure of the batch is retried file by file, so one input the embedder
        cannot take costs its own file only; the embedder failing as a whole raises."""
        try:
            self._embed_some(wanted, vectors, refused)
        except RagError:
            raise
        except Exception:
            log.exception("embedding pending vectors of %s failed; retrying file by file",
                          self.schema.name)  # fmt: skip
            by_file: dict[tuple[str, str, str | None], list[_Input]] = {}
            for i in wanted:
                by_file.setdefault(i.file, []).append(i)
            for file, some in by_file.items():
                try:
                    self._embed_some(some, vectors, refused)
                except RagError:
                    raise
                except Exception as exc:
                    refused[file] = (
                        f"the embedder failed on this file ({type(exc).__name__}: {exc})"
                    )

    def _embed_some(
        self,
        wanted: Sequence[_Input],
        vectors: dict[str, Any],
        refused: dict[tuple[str, str, str | None], str],
    ) -> None:
        import numpy as np  # only when something is embedded: a no-op sweep never loads it

        texts = [i.text for i in wanted]
        result = self.embedder.embed_documents(texts, [i.label for i in wanted])
        self.report.tokens_embedded += tokens_embedded(result, self.embedder, texts)
        for i, vector in zip(wanted, result.vectors, strict=True):
            if vector is not None:
                vectors[i.hash] = np.asarray(vector, dtype=np.float32)
                if i.definition:
                    self.report.definitions_embedded += 1
                else:
                    self.report.chunks_embedded += 1
        for r in result.refused:
            refused[wanted[r.index].file] = f"the embedder refused {r.label}: {r.reason}"

    def _fail(self, file: tuple[str, str, str | None], reason: str) -> None:
        repo, path, language = file
        store.record_file_error(self.conn, self.schema, repo, path, reason, language)
        self.report.files_failed += 1
        if len(self.report.failures) < 200:
            self.report.failures.append({"repo": repo, "path": path, "reason": reason})
        log.warning("%s/%s: %s", repo, path, reason)


def _chunk_input(c: PendingChunk) -> _Input:
    language = c.language or UNKNOWN_LANGUAGE
    chunk = Chunk(c.start_line, c.end_line, c.symbol, c.kind, language, c.content)
    label = f"{c.repo}/{c.path}:{c.start_line}-{c.end_line}" + (f" {c.symbol}" if c.symbol else "")
    return _Input(
        False, c.id, c.content_sha256, embedding_text(chunk, c.path), label,
        (c.repo, c.path, c.language),
    )  # fmt: skip


def _definition_input(d: PendingDefinition, lines: list[str]) -> _Input | None:
    """A definition's input from its file's lines, as `chunkers.lone_definitions` made it;
    None when those lines do not give back the text the definition was hashed from."""
    if d.end_line > len(lines):
        return None
    content = "\n".join(lines[d.start_line - 1 : d.end_line])[:DEFINITION_CHARS]
    chunk = Chunk(
        d.start_line, d.end_line, d.qualified_name, d.kind, d.language or UNKNOWN_LANGUAGE, content
    )
    if content_hash(chunk) != d.content_sha256:
        return None
    label = f"{d.repo}/{d.path}:{d.start_line}-{d.end_line} {d.qualified_name}"
    return _Input(
        True, d.id, d.content_sha256, embedding_text(chunk, d.path), label,
        (d.repo, d.path, d.language),
    )  # fmt: skip
