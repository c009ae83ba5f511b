"""The second phase of a sweep: the vectors of the rows it wrote without them.

A sweep of many files writes each file's rows (chunks, keyword vectors, symbols, exact text)
at the speed of parsing, leaving their vectors pending (`run.py`), so keyword, symbol and
exact-text search answer within seconds of its start; this phase then embeds what is pending,
a batch at a time, oldest first. What is pending is read from the database (the partial
indexes of migration m008), never from memory: a restart, a killed process or an embedder
outage only delays it. A vector goes in only where its row still holds the text it was made
from, so a file changed meanwhile never gets a vector of its older text: its new rows wait
for their own. A stored vector of the same text (another file, an earlier sweep) is reused
without embedding, and a text pending in several places is embedded once (unless two
processes claim its rows at the same moment: each embeds it for its own rows).

A chunk's embedding text is made from its row, a definition's from its lines in the file's
exact-text blocks, exactly as the sweep would have made them (`chunkers.embedding_text`; a
definition's content hash is checked). An input the embedder refuses fails its file the way a
sweep does (recorded with its reason, its rows kept, read again by the next sweep); the
embedder failing as a whole (unreachable, another model) ends the phase with the rest still
pending.

Any number of processes fill one project's vectors at once (the server's phase, `./bld scan`,
`code-rag worker` on this machine or others), with PostgreSQL as the only coordinator: each
batch is claimed (`SELECT ... FOR UPDATE SKIP LOCKED`) in a transaction that stays open while
it is embedded and its vectors written, then commits. Two processes never hold the same row,
so no vector is written twice; one killed mid-batch loses its transaction and its rows are
pending again for whoever claims next, so no text is lost. A process that finds nothing left
to claim while others still hold rows waits for them (`wait`), taking over what a dead one
leaves. Sweeps and file events go on meanwhile; a sweep rewriting a file whose rows are
claimed waits for the batch in flight. What happens once per project whoever takes part is
done under a lock of its own (`store.lock_graphs`): a first index written rows first has no
HNSW graphs yet (searches scan the vectors in so far), and the process that finds nothing
left pending builds them, once, as a bulk load does, instead of inserting every vector into a
graph; an index written with no model (`provider = none`: rows only, no model recorded) is
taken up by the first model that embeds it (the model is recorded, the columns typed, and
every row is pending), except by a worker, which fills only an index whose model is recorded.
Each process records itself in the project's `rag_worker` while it takes part (`Participant`:
host, pid, model, its counts and rate, a heartbeat), for the status to list and add up.

Several projects waiting at once (`./bld scan all`, a server's start) are one stream, in
`pending_order`: the project with the fewest vectors pending first. The total is the same in
any order, and so is the moment the last vector goes in; smallest first makes the most
projects complete soonest (a project of a few files is whole in seconds instead of waiting
behind one of hours), which round-robin would not.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from chunkers import DEFINITION_CHARS, UNKNOWN_LANGUAGE, Chunk, embedding_text
from indexer import clock
from indexer.db import Conn, Database, Schema, WorkerBeat, embedding_cache, store
from indexer.db.rows import FileChunk, FileDefinition, PendingChunk, PendingDefinition
from indexer.embed import (
    CHUNK_VECTORS_WHOLE,
    Embedder,
    EmbeddingModel,
    needs_reembed,
    tokens_embedded,
)
from indexer.errors import RagError
from indexer.project import Project
from indexer.status import PROGRESS_EVERY, VECTORS_PROGRESS, progress_record
from indexer.sweep.parts import compose, content_hash, file_keys
from indexer.sweep.workers import free_cores

log = logging.getLogger("code_rag.vectors")

# Pending inputs claimed, embedded and written per round (one transaction each).
VECTOR_BATCH = 128
# How often the rounds count what is pending (for their progress): at a million pending
# chunks a count takes a second or two, as long as a round's embedding.
PENDING_RECOUNT_S = 30.0
# With nothing left to claim while other processes hold rows: how often to look again, and
# how long to wait for them while what is pending stays the same (a process stuck on its
# batch; one that died is gone within a moment, its rows claimable again).
CLAIM_RETRY_S = 0.5
WAIT_PATIENCE_S = 120.0

# Who takes part: `code-rag worker`, or a process that indexes (the server's phase, a scan).
ROLE_WORKER = "worker"
ROLE_INDEXER = "indexer"
# A worker's row says "idle" between runs (it polls), "embedding" during one.
EMBEDDING = "embedding"
IDLE = "idle"


@dataclass(frozen=True, slots=True)
class Participant:
    """A process filling vectors, as each project's `rag_worker` lists it while it does."""

    id: str
    role: str
    host: str
    pid: int
    started_at: datetime

    @classmethod
    def this_process(cls, role: str = ROLE_INDEXER) -> Participant:
        """This process in `role`: the same one for every project and run, a new one after a
        fork (another pid)."""
        key = (os.getpid(), role)
        found = _participants.get(key)
        if found is None:
            host = socket.gethostname()
            pid = os.getpid()
            found = cls(f"{host}:{pid}:{secrets.token_hex(3)}", role, host, pid, clock.now())
            _participants[key] = found
        return found

    @classmethod
    def worker(cls) -> Participant:
        """This process as a `code-rag worker`: listed between its runs too, as idle."""
        return cls.this_process(ROLE_WORKER)

    def idle(self, model: str) -> WorkerBeat:
        """This process's heartbeat while it waits for work (`model`: its embedder's)."""
        return WorkerBeat(self.id, self.role, self.host, self.pid, model, self.started_at, IDLE)


_participants: dict[tuple[int, str], Participant] = {}


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
    # ok: nothing left to claim (what others hold is in `pending`) | partial: files refused
    # | stopped: asked to | failed: the embedder or the database failed, or the index is of
    # another model (or none, for a worker); the rest still pending
    outcome: str = "ok"
    error: str | None = None
    # Texts through the model (each part of a chunk read by parts counts once, as its
    # owner's kind), rows given a vector already stored, and rows given their vector.
    chunks_embedded: int = 0
    definitions_embedded: int = 0
    reused: int = 0  # vectors of the same text already stored
    rows_written: int = 0
    tokens_embedded: int = 0  # of the texts embedded (`indexer.embed.count_tokens`)
    files_failed: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    pending: int = 0  # left when the run ended
    seconds: float = 0.0

    @property
    def written(self) -> int:
        """Rows given their vector (what pending counts go down by)."""
        return self.rows_written

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class _Input:
    """One pending row: which table, its id and hash, and how to embed it: its text, or the
    parts its vector is the mean of (`chunk_vectors = parts`), and the key the vector is
    filed under (the row's hash, unless the row was keyed for whole texts)."""

    definition: bool
    id: int
    hash: str
    text: str
    label: str
    file: tuple[str, str, str | None]  # repo, path, language: what a refusal is recorded on
    parts: tuple[Chunk, ...] = ()
    key: str = ""

    @property
    def filed(self) -> str:
        return self.key or self.hash


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
    batch: int = VECTOR_BATCH,
    progress: VectorProgressCallback | None = None,
    stop: threading.Event | None = None,
    participant: Participant | None = None,
    adopt: bool = True,
    wait: bool = True,
) -> VectorReport:
    """Embed the project's pending chunks and definitions, a claimed batch at a time, until
    none is left to claim (or `stop` is set) and return what was done. `participant`: who
    this process is in the project's list (default: this process, an indexer). `adopt`: take
    up an index no model has embedded yet (a worker does not). `wait`: when nothing is left
    to claim but other processes hold rows, wait for them (and take over what a dead one
    leaves) rather than return. Never raises for a failure of the embedder or the database:
    the report says it, and what was not written stays pending."""
    report = VectorReport(project.name)
    schema = Schema(project.name)
    who = participant or Participant.this_process()
    started = time.perf_counter()
    try:
        with db.session(f"joining the vectors of {project.name}") as lock:
            store.take_vectors_share(lock, schema)
            try:
                with db.connection(f"embedding the pending vectors of {project.name}") as conn:
                    shared = embedder.identity.cache_key if db.shared_cache else None
                    phase = _Phase(conn, schema, embedder, report, batch, shared, who)
                    phase.adopt, phase.wait = adopt, wait
                    phase.run(progress, stop, started, lock)
            finally:
                store.release_vectors_share(lock, schema)
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
        participant: Participant,
    ) -> None:
        self.shared = shared  # the model's key in the cache every project shares, if any
        self.conn = conn
        self.schema = schema
        self.embedder = embedder
        self.report = report
        self.batch = max(1, batch)
        self.participant = participant
        self.adopt = True  # take up an index no model has embedded yet
        self.wait = True  # wait for the rows other processes hold
        self.registered = False  # whether this process has its row in `rag_worker`
        self.beaten = (0, 0)  # written, embedded as of the last heartbeat
        self.deferred = False  # a failure could not be recorded this round (a sweep holds it)
        self.held = (-1, 0.0)  # what was pending, and since when, while others held it
        # Each line read once: a claim takes whole files' parts (`parts.file_keys`).
        self.mode = embedder.identity.chunk_vectors
        self.parts = self.mode != CHUNK_VECTORS_WHOLE

    def run(
        self,
        progress: VectorProgressCallback | None,
        stop: threading.Event | None,
        started: float,
        lock: Conn,
    ) -> None:
        if not self._same_model():
            return
        conn, schema = self.conn, self.schema
        if store.vector_indexes_missing(conn, schema) and store.embedded_indexes_missing(
            conn, schema
        ):
            # Searches meanwhile read the rows with a vector through an index of them.
            store.ensure_embedded_indexes(conn, schema)
        self.registered = store.has_worker_table(conn, schema)
        if self.registered:
            store.forget_stale_workers(conn, schema)
        conn.commit()
        self._beat(EMBEDDING, 0.0)
        try:
            self._rounds(progress, stop, started)
        finally:
            self._sign_off()
        report = self.report
        report.pending = store.pending_counts(conn, schema).total
        if self.shared is not None and report.chunks_embedded + report.definitions_embedded:
            embedding_cache.trim_shared_cache(conn)
        conn.commit()
        if not report.pending:
            self._build_graphs(lock)
        if report.outcome == "ok" and report.files_failed:
            report.outcome = "partial"

    def _rounds(
        self,
        progress: VectorProgressCallback | None,
        stop: threading.Event | None,
        started: float,
    ) -> None:
        report = self.report
        saved = counted_at = 0.0
        counted = written_then = 0
        while True:
            if stop is not None and stop.is_set():
                report.outcome = "stopped"
                break
            inputs = self._claim()
            if inputs is None:
                if report.outcome == "failed":  # the index changed model meanwhile
                    break
                left = store.pending_counts(self.conn, self.schema).total
                self.conn.rollback()
                if not self._wait_for_others(left, stop):
                    break
                counted, counted_at, written_then = left, time.perf_counter(), report.written
            else:
                self._embed_and_write(inputs)
                if self.deferred:  # a sweep holds a file of this batch: let it go on first
                    self.deferred = False
                    _pause(stop, CLAIM_RETRY_S)
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
                self._beat(EMBEDDING, now - started)
            self.conn.commit()
            if progress is not None:
                progress(VectorProgress(self.schema.name, report.written, left, now - started))

    def _wait_for_others(self, left: int, stop: threading.Event | None) -> bool:
        """With nothing left to claim and `left` pending (held by other processes): whether
        to look again after a pause, rather than end the run. Not when nothing is pending,
        nor for a run that does not wait, nor when what is pending stayed the same for
        WAIT_PATIENCE_S."""
        if not left or not self.wait:
            return False
        now = time.perf_counter()
        if left != self.held[0]:
            self.held = (left, now)
        elif now - self.held[1] >= WAIT_PATIENCE_S:
            log.info(
                "%s: %d vectors held by other processes for %.0f s; leaving them to them",
                self.schema.name, left, WAIT_PATIENCE_S,
            )  # fmt: skip
            return False
        _pause(stop, CLAIM_RETRY_S)  # a stop meanwhile ends the next round
        return True

    def _build_graphs(self, lock: Conn) -> None:
        """The HNSW indexes, where a first index written rows first left them for now: built
        by one process, the one that finds nothing pending and gets the lock (`lock`, its own
        session) first; the others leave them to it."""
        conn, schema = self.conn, self.schema
        missing = store.vector_indexes_missing(conn, schema)
        conn.rollback()
        if not missing or not store.try_graphs_lock(lock, schema):
            return
        try:
            # Another process may have built them, or a sweep written rows, since we looked.
            missing = store.vector_indexes_missing(conn, schema)
            pending = store.pending_counts(conn, schema).total
            conn.rollback()
            if not missing or pending:
                return
            started = time.perf_counter()
            rows = store.chunk_count(conn, schema)
            memory = store.index_build_memory(rows, self.embedder.identity.dimension)
            store.build_vector_indexes(conn, schema, memory, max(0, free_cores() - 1))
            conn.commit()
            log.info(
                "%s: built the vectors' indexes over %d chunks in %.1f s",
                schema.name,
                rows,
                time.perf_counter() - started,
            )
        finally:
            store.release_graphs_lock(lock, schema)

    def _same_model(self) -> bool:
        """Whether the index's vectors are this embedder's (a sweep with another model
        re-embeds everything; until then nothing of this one may go in). An index no model
        has embedded yet (written model-free) becomes this model's, once, whoever gets there
        first; not a worker's, which fills only an index whose model is recorded."""
        conn, schema = self.conn, self.schema
        recorded = store.get_meta(conn, schema, "embedding")
        conn.rollback()
        identity = self.embedder.identity
        if recorded is None and not self.adopt:
            self.report.outcome = "failed"
            self.report.error = (
                f"the index of {schema.name} records no model yet (written model-free): a "
                "worker fills only an index whose model is recorded; a sweep or the server "
                "with a model takes it up"
            )
            return False
        if recorded is None:
            with conn.transaction():
                store.lock_graphs(conn, schema)
                recorded = store.get_meta(conn, schema, "embedding")
                if recorded is None:
                    store.set_embedding_dimension(conn, schema, identity.dimension)
                    store.set_meta(conn, schema, "embedding", identity.to_dict())
            conn.commit()
            if recorded is None:
                return True
        if not needs_reembed(EmbeddingModel.from_dict(recorded), identity):
            return True
        self.report.outcome = "failed"
        self.report.error = (
            f"the index of {schema.name} holds vectors of another model; "
            "a sweep with this one re-embeds it"
        )
        return False

    def _still_same_model(self) -> bool:
        """`_same_model` inside a claim: the model recorded as the rows were claimed (a sweep
        that changes it clears the rows first, in the transaction that records it, so a row
        claimed after that change is seen with it)."""
        recorded = store.get_meta(self.conn, self.schema, "embedding")
        identity = self.embedder.identity
        if recorded is not None and not needs_reembed(EmbeddingModel.from_dict(recorded), identity):
            return True
        self.report.outcome = "failed"
        self.report.error = (
            f"the index of {self.schema.name} was given another model meanwhile; "
            "nothing of this one goes in"
        )
        return False

    def _claim(self) -> list[_Input] | None:
        """Claim the next batch of pending rows (chunks first) and make their embedding
        texts, the claim's transaction left open; None when nothing could be claimed (or the
        model changed: the report says so), with nothing held. A definition whose lines
        cannot be read back as the sweep read them fails its file (its rows are not pending
        any more)."""
        conn, schema = self.conn, self.schema
        try:
            chunks = store.claim_chunks(conn, schema, self.batch)
            definitions: list[PendingDefinition] = []
            if self.parts:  # the definitions inside them share their parts
                files = sorted({c.file_id for c in chunks})
                definitions = store.claim_definitions_of_files(conn, schema, files)
            if len(chunks) + len(definitions) < self.batch:
                room = self.batch - len(chunks) - len(definitions)
                taken = {d.id for d in definitions}
                more = store.claim_definitions(conn, schema, room, lone=self.parts)
                definitions += [d for d in more if d.id not in taken]
            if not (chunks or definitions) or not self._still_same_model():
                conn.rollback()
                return None
            unreadable: dict[tuple[str, str, str | None], str] = {}
            if self.parts:
                inputs = self._parts_inputs(chunks, definitions, unreadable)
            else:
                lines = store.file_lines(conn, schema, sorted({d.file_id for d in definitions}))
                inputs = [_chunk_input(c) for c in chunks]
                for d in definitions:
                    made = _definition_input(d, lines.get(d.file_id, []))
                    if made is None:
                        unreadable[(d.repo, d.path, d.language)] = _unreadable(d.qualified_name)
                    else:
                        inputs.append(made)
            for file, reason in unreadable.items():
                self._fail(file, reason)
        except BaseException:
            conn.rollback()
            raise
        return [i for i in inputs if i.file not in unreadable]

    def _parts_inputs(
        self,
        chunks: list[PendingChunk],
        definitions: list[PendingDefinition],
        unreadable: dict[tuple[str, str, str | None], str],
    ) -> list[_Input]:
        """The claimed rows' inputs with each line read once: the parts of every chunk and
        definition of their files, made from the files' stored chunks, definitions and lines
        as the sweep made them from the file (`parts.file_keys`). A row keyed neither so nor
        for its whole text, or a definition whose lines cannot be read back, fails its file
        (read again by the next sweep)."""
        conn, schema = self.conn, self.schema
        files = sorted({c.file_id for c in chunks} | {d.file_id for d in definitions})
        lines = store.file_lines(conn, schema, files)
        stored_chunks, stored_definitions = store.file_items(conn, schema, files)
        languages: dict[int, str | None] = {c.file_id: c.language for c in chunks}
        languages.update((d.file_id, d.language) for d in definitions)
        made: dict[tuple[bool, int], tuple[str, tuple[Chunk, ...], str]] = {}
        broken: set[int] = set()
        for file_id in files:
            found = _file_parts(
                self.mode,
                lines.get(file_id, []),
                languages[file_id] or UNKNOWN_LANGUAGE,
                stored_chunks.get(file_id, []),
                stored_definitions.get(file_id, []),
            )
            if found is None:
                broken.add(file_id)
            else:
                made.update(found)
        claimed: list[tuple[bool, PendingChunk | PendingDefinition]] = [
            *((False, c) for c in chunks),
            *((True, d) for d in definitions),
        ]
        inputs: list[_Input] = []
        for definition, row in claimed:
            file = (row.repo, row.path, row.language)
            found_row = made.get((definition, row.id))
            if (
                row.file_id in broken
                or found_row is None
                or row.content_sha256
                not in (
                    found_row[0],
                    found_row[2],
                )
            ):
                name = row.qualified_name if isinstance(row, PendingDefinition) else None
                unreadable[file] = _unreadable(name or f"{row.path}:{row.start_line}")
                continue
            key, parts, _ = found_row
            label = _part_label(row.repo, row.path, parts[0])
            text = embedding_text(parts[0], row.path) if len(parts) == 1 else ""
            whole = parts if len(parts) > 1 else ()
            inputs.append(
                _Input(definition, row.id, row.content_sha256, text, label, file, whole, key)
            )
        return inputs

    def _embed_and_write(self, inputs: list[_Input]) -> None:
        """Embed the claimed `inputs` and write their vectors, then commit the claim (on any
        failure it is rolled back: the rows are pending again). The vectors it made go to the
        cache every project shares after that, in a transaction of their own: inside the
        claim, another process putting the same text would wait for the whole batch."""
        try:
            made = self._write(inputs)
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()
        if self.shared is not None and made:
            embedding_cache.share_vectors(self.conn, self.shared, made)
            self.conn.commit()

    def _write(self, inputs: list[_Input]) -> dict[str, Any]:
        """The claim's work: vectors found stored or embedded, written to the rows claimed;
        returns those the model made, by hash."""
        conn, schema, report = self.conn, self.schema, self.report
        part_keys = {content_hash(p) for i in inputs for p in i.parts}
        hashes = sorted({i.filed for i in inputs} | part_keys)
        vectors: dict[str, Any] = store.cached_embeddings(conn, schema, hashes)
        missing = [h for h in hashes if h not in vectors]
        if self.shared is not None and missing:
            vectors.update(embedding_cache.shared_vectors(conn, self.shared, missing))
        stored = set(vectors)
        wanted: dict[str, _Input] = {}
        made_of: dict[str, tuple[Chunk, ...]] = {}  # vectors made of parts, by key
        for i in inputs:
            if i.filed in vectors:
                continue
            if not i.parts:
                wanted.setdefault(i.filed, i)
                continue
            made_of.setdefault(i.filed, i.parts)
            for p in i.parts:
                key = content_hash(p)
                if key not in vectors and key not in wanted:
                    repo, path, _ = i.file
                    text = embedding_text(p, path)
                    label = _part_label(repo, path, p)
                    wanted[key] = _Input(i.definition, i.id, key, text, label, i.file)
        refused: dict[tuple[str, str, str | None], str] = {}
        if wanted:
            self._embed(list(wanted.values()), vectors, refused)
        for key, parts in made_of.items():
            vector = compose(parts, vectors)
            if vector is not None:
                vectors[key] = vector
        rows: dict[bool, list[tuple[int, str, Any, str]]] = {False: [], True: []}
        seen: set[str] = set()
        for i in inputs:
            if i.file in refused or i.filed not in vectors:
                continue
            rows[i.definition].append((i.id, i.hash, vectors[i.filed], i.filed))
            if i.filed in stored or i.filed in seen:  # stored already, or pending twice
                report.reused += 1
            seen.add(i.filed)
        for file, reason in refused.items():
            self._fail(file, reason)
        store.set_vectors(conn, schema, rows[False], rows[True])
        report.rows_written += len(rows[False]) + len(rows[True])
        # By hash: two processes putting the same texts take their keys in one order.
        return {h: vectors[h] for h in sorted({*wanted, *made_of}) if h in vectors}

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
                vectors[i.filed] = np.asarray(vector, dtype=np.float32)
                if i.definition:
                    self.report.definitions_embedded += 1
                else:
                    self.report.chunks_embedded += 1
        for r in result.refused:
            refused[wanted[r.index].file] = f"the embedder refused {r.label}: {r.reason}"

    def _fail(self, file: tuple[str, str, str | None], reason: str) -> None:
        """Record the claimed file's failure in the claim; where a sweep holds the file's row
        (it rewrites or deletes the file, and waits for this claim), its rows stay pending
        and the next claim decides again."""
        repo, path, language = file
        if not store.try_record_file_error(self.conn, self.schema, repo, path, reason, language):
            self.deferred = True
            log.info("%s/%s: being written by a sweep; its failure is left to the next claim",
                     repo, path)  # fmt: skip
            return
        self.report.files_failed += 1
        if len(self.report.failures) < 200:
            self.report.failures.append({"repo": repo, "path": path, "reason": reason})
        log.warning("%s/%s: %s", repo, path, reason)

    def _beat(self, state: str, elapsed: float) -> None:
        """This process's heartbeat in the project's `rag_worker`: its state, what it wrote
        and embedded since the last one, its run's rate."""
        if not self.registered:
            return
        report, who = self.report, self.participant
        embedded = report.chunks_embedded + report.definitions_embedded
        rate = report.written / elapsed if state == EMBEDDING and elapsed > 0 else 0.0
        beat = WorkerBeat(
            who.id, who.role, who.host, who.pid, self.embedder.identity.describe(),
            who.started_at, state, report.written - self.beaten[0], embedded - self.beaten[1],
            round(rate, 2),
        )  # fmt: skip
        store.worker_beat(self.conn, self.schema, beat)
        self.conn.commit()
        self.beaten = (report.written, embedded)

    def _sign_off(self) -> None:
        """At the end of a run: a worker's row says it is idle (it polls on), another
        process's goes. Best effort: a database gone away is the run's error, not this."""
        if not self.registered:
            return
        try:
            self.conn.rollback()
            if self.participant.role == ROLE_WORKER:
                self._beat(IDLE, 0.0)
            else:
                store.worker_leave(self.conn, self.schema, self.participant.id)
                self.conn.commit()
        except psycopg.Error as exc:
            log.debug("%s: leaving the list of workers failed: %s", self.schema.name, exc)


def _pause(stop: threading.Event | None, seconds: float) -> bool:
    """Wait `seconds`, or less if `stop` is set meanwhile; whether it was."""
    if stop is None:
        time.sleep(seconds)
        return False
    return stop.wait(seconds)


def _file_parts(
    mode: str,
    lines: list[str],
    language: str,
    chunks: Sequence[FileChunk],
    definitions: Sequence[FileDefinition],
) -> dict[tuple[bool, int], tuple[str, tuple[Chunk, ...], str]] | None:
    """A file's items from its stored rows and lines, as the sweep made them: by (whether a
    definition, row id), the key of each with each line read once, its parts, and its key as
    a whole text. None when a definition's lines are not in the file's stored text."""
    if any(r.end_line > len(lines) for r in definitions):
        return None
    own_chunks = [
        Chunk(r.start_line, r.end_line, r.symbol, r.kind, language, r.content) for r in chunks
    ]
    own_definitions = [
        Chunk(r.start_line, r.end_line, r.qualified_name, r.kind, language,
              "\n".join(lines[r.start_line - 1 : r.end_line])[:DEFINITION_CHARS])
        for r in definitions
    ]  # fmt: skip
    keys = file_keys(mode, own_chunks, own_definitions, "\n".join(lines))
    made: dict[tuple[bool, int], tuple[str, tuple[Chunk, ...], str]] = {}
    for row_id, item, key in zip((r.id for r in chunks), own_chunks, keys.chunks, strict=True):
        made[(False, row_id)] = (key, keys.parts.get(key, (item,)), content_hash(item))
    for row_id, item, key in zip(
        (r.id for r in definitions), own_definitions, keys.definitions, strict=True
    ):
        made[(True, row_id)] = (key, keys.parts.get(key, (item,)), content_hash(item))
    return made


def _unreadable(name: str) -> str:
    return (
        f"the lines of {name} could not be read back from the index; the next sweep reads "
        "the file again"
    )


def _part_label(repo: str, path: str, part: Chunk) -> str:
    label = f"{repo}/{path}:{part.start_line}-{part.end_line}"
    return f"{label} {part.symbol}" if part.symbol else label


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
