"""A sweep: bring one project's index in line with its roots, and report what it did.

walk → compare (size, mtime) with `rag_file`, hash only candidates → chunk changed files → reuse
stored vectors by content hash, embed the rest in batches spanning files → write each file with
its chunks in a savepoint, committing every N files → delete rows of files that are gone.

Invariants: one sweep per project at a time (a PostgreSQL advisory lock, whoever starts it); a
file is always either fully old or fully new (a killed process loses at most its open batch,
which the next sweep redoes); a failing file is recorded with its reason and retried next
sweep, never taking its neighbours down; vectors of two models never mix. Preparation (read,
hash, chunk, cache look-up) runs in a thread ahead of embedding, so the embedder stays busy;
with many files and more than one free core, that thread hands the parsing to worker processes.
With no embedder (model-free, `provider = none`) a sweep writes rows only, records no model and
embeds nothing: vectors a model stored earlier are kept, untouched.

Two write paths, chosen by the amount of work: a few changed files go in one by one, each in a
savepoint; a bulk load (many new files, at least as many as the index holds) drops the
secondary indexes, writes the new files with COPY a batch at a time, and builds the indexes
once at the end. A bulk sweep killed mid-way leaves whole batches; the next sweep goes on with the
bulk load (the files committed are not read again) and builds the indexes at its end.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import psycopg

from chunkers import CHUNKER_VERSION
from indexer import clock
from indexer.db import Conn, Database, Schema, database_error, embedding_cache, store
from indexer.embed import (
    CHUNK_VECTORS_WHOLE,
    Embedder,
    EmbeddingModel,
    needs_reembed,
    reembed_warning,
)
from indexer.errors import RagError, SweepRunning, SweepStopped
from indexer.project import ROOT_EMPTY, Project
from indexer.status import PROGRESS_EVERY, ROWS_PROGRESS, progress_record
from indexer.sweep import workers
from indexer.sweep.options import SweepOptions
from indexer.sweep.prepare import Batch, Prepared, Preparer
from indexer.sweep.report import ProgressCallback, SweepProgress, SweepReport
from indexer.sweep.walk import Candidate, Walker, storable
from indexer.sweep.write import Writer

log = logging.getLogger("code_rag.sweep")

DEFAULT_OPTIONS = SweepOptions()

# At least this many new files, and at least as many as the index holds, are a bulk load: the
# files go in with COPY and the secondary indexes are built once at the end.
BULK_LOAD_FILES = 200
# A sweep with at least this many files to read writes their rows first and leaves their
# vectors to `vectors.embed_pending`: keyword, symbol and exact-text search answer at once.
# Fewer (a scheduled sweep finding a few edits, file events) are embedded as they are written.
DEFER_VECTORS_FILES = 20
# After writing this many chunks the planner's term statistics are refreshed (keyword ranking).
ANALYZE_AFTER_CHUNKS = 1000


_DONE = object()


class _Sweep:
    def __init__(
        self,
        db: Database,
        conn: Conn,
        project: Project,
        embedder: Embedder | None,
        options: SweepOptions,
        report: SweepReport,
        progress: ProgressCallback | None,
        stop: threading.Event | None = None,
    ) -> None:
        self.db = db
        self.stop = stop
        self.conn = conn
        self.project = project
        self.schema = Schema(project.name)
        self.name = project.name
        self.embedder = embedder
        self.options = options
        self.report = report
        self.progress = progress
        self.started = time.perf_counter()
        self.progress_saved = self.started
        self.rows_started: float | None = None  # set once a whole sweep knows its files
        self.redo = False  # every file is re-chunked (full sweep, new model or chunker)
        # The key of this model's vectors in the cache every project shares (None: no cache).
        self.shared = embedder.identity.cache_key if db.shared_cache and embedder else None
        self.writer = Writer(conn, self.schema, embedder, report, shared=self.shared)
        report.model_free = embedder is None

    # -- model bookkeeping -------------------------------------------------------------------

    def prepare_index(self, full: bool) -> bool:
        """Make the index ready for this embedder; return True when every file must be redone."""
        if self.embedder is None:
            return self._prepare_model_free(full)
        identity: EmbeddingModel = self.embedder.identity
        conn = self.conn
        recorded_raw = store.get_meta(conn, self.schema, "embedding")
        recorded = EmbeddingModel.from_dict(recorded_raw) if recorded_raw else None
        redo = full
        with conn.transaction():
            if needs_reembed(recorded, identity):
                assert recorded is not None
                warning = reembed_warning(recorded, identity, self.name)
                log.warning(warning)
                self.report.warnings.append(warning)
                redo = True
            if redo:
                store.clear_project(conn, self.schema)
            store.set_embedding_dimension(conn, self.schema, identity.dimension)
            store.set_meta(conn, self.schema, "embedding", identity.to_dict())
            if (
                recorded is not None
                and self.shared is not None
                and needs_reembed(recorded, identity)
            ):
                self._forget_model(recorded)
            redo = self._chunker_redo() or redo
        conn.commit()
        return redo

    def _chunker_redo(self) -> bool:
        """Whether the stored files were chunked by another chunker version (every file is
        then chunked again). The version is recorded once every file has been chunked again
        (`_chunked_with_this_version`): a sweep stopped half-way leaves the old one, and the
        next one redoes the rest. A project holding no file yet takes this version at once,
        so a first index cut short goes on from where it stopped instead of starting over."""
        if store.get_meta(self.conn, self.schema, "chunker_version") == CHUNKER_VERSION:
            return False
        if store.has_files(self.conn, self.schema):
            return True
        store.set_meta(self.conn, self.schema, "chunker_version", CHUNKER_VERSION)
        return False

    def _prepare_model_free(self, full: bool) -> bool:
        """`prepare_index` with no model: nothing is recorded or typed, and the vectors a
        model stored earlier stay as they are (unused; that model takes them up again, another
        one re-embeds)."""
        conn = self.conn
        with conn.transaction():
            if full:  # every row goes, the kept vectors too: no model is theirs any more
                store.clear_project(conn, self.schema)
                store.set_meta(conn, self.schema, "embedding", None)
            redo = self._chunker_redo() or full
        conn.commit()
        return redo

    def _forget_model(self, old: EmbeddingModel) -> None:
        """Drop the shared cache's vectors of `old` once no project's index uses it."""
        in_use = embedding_cache.models_in_use(self.conn)
        used = {EmbeddingModel.from_dict(m).cache_key for m in in_use}
        if old.cache_key not in used:
            dropped = embedding_cache.drop_shared_model(self.conn, old.cache_key)
            log.info("dropped %d cached vectors of %s: no project uses it", dropped, old.describe())

    def _chunked_with_this_version(self) -> None:
        with self.conn.transaction():
            store.set_meta(self.conn, self.schema, "chunker_version", CHUNKER_VERSION)

    # -- the phases --------------------------------------------------------------------------

    def run(self, full: bool) -> None:
        report = self.report
        self.redo = self.prepare_index(full)

        t = time.perf_counter()
        walked = Walker(self.project, self.options.walk).walk()
        report.add_time("walk", time.perf_counter() - t)
        report.files_seen = len(walked.files)
        report.skipped = walked.skipped_by_reason()

        t = time.perf_counter()
        repos = [root.name for root in self.project.roots]
        removed_roots = store.delete_repos_except(self.conn, self.schema, repos)
        states = store.file_states(self.conn, self.schema)
        self.conn.commit()
        unavailable = self._unavailable_roots(walked.root_problems, states)
        for repo, path in walked.renamed:
            report.warnings.append(
                f"{repo}/{path}: the file name is not valid UTF-8; indexed under this name, "
                "its undecodable bytes written as \\xNN"
            )
        seen = {(c.repo, c.path) for c in walked.files}
        gone = [s.id for key, s in states.items() if key not in seen and s.repo not in unavailable]
        todo = self._compare(walked.files, states)
        # A bulk load killed before its index builds goes on as one, rows first: the files it
        # committed are not read again, and the indexes are built once, at the end.
        cut_short = store.bulk_load_cut_short(self.conn, self.schema)
        bulk = cut_short or self._bulk(todo, states)
        if bulk:
            store.drop_bulk_indexes(self.conn, self.schema)
            self.conn.commit()
        self.writer.bulk_load = bulk and self.options.bulk_load
        defer = self.options.defer_vectors
        self.writer.defer = len(todo) >= DEFER_VECTORS_FILES if defer is None else defer
        if self.embedder is None:  # model-free: rows only, whatever their number
            self.writer.defer = True
        if self.writer.defer and not bulk and not store.has_vectors(self.conn, self.schema):
            # A first index written rows first: its graphs are built once its vectors are in
            # (as after a bulk load, whose graphs are dropped above).
            store.drop_vector_indexes(self.conn, self.schema)
            self.conn.commit()
        report.add_time("compare", time.perf_counter() - t)
        self._progress("walk", 0, len(todo))

        self.index(todo)
        if bulk:
            t = time.perf_counter()
            chunks = store.chunk_count(self.conn, self.schema)
            # Rows first: the vectors' graphs are built once their vectors are in (by the
            # phase that embeds them, `vectors.embed_pending`), at a bulk build's cost
            # instead of one insertion per vector; searches meanwhile scan the vectors in.
            # (Also where this sweep embedded its files but went on with a bulk load that
            # wrote rows first.)
            pending = store.pending_counts(self.conn, self.schema).total
            store.build_bulk_indexes(
                self.conn,
                self.schema,
                store.index_build_memory(chunks, self._dimension()),
                max(0, workers.free_cores() - 1),
                vectors=not self.writer.defer and not pending,
            )
            self.conn.commit()
            report.add_time("build_index", time.perf_counter() - t)
        if bulk or report.chunks_written >= ANALYZE_AFTER_CHUNKS:
            t = time.perf_counter()
            store.analyze_chunks(self.conn, self.schema)
            self.conn.commit()
            report.add_time("analyze", time.perf_counter() - t)

        t = time.perf_counter()
        report.files_deleted += removed_roots + store.delete_files(self.conn, self.schema, gone)
        self.conn.commit()
        report.add_time("delete", time.perf_counter() - t)
        if self.shared is not None and report.chunks_embedded + report.definitions_embedded:
            embedding_cache.trim_shared_cache(self.conn)
            self.conn.commit()
        if self.redo and not unavailable:  # an unavailable root's files were not chunked again
            self._chunked_with_this_version()

    def _dimension(self) -> int:
        return self.embedder.identity.dimension if self.embedder is not None else 0

    def _bulk(
        self,
        todo: list[tuple[Candidate, store.FileState | None]],
        states: Mapping[tuple[str, str], store.FileState],
    ) -> bool:
        """Whether this is a bulk load: many new files, at least as many as the index holds
        (an empty or emptied project, or a first sweep that was cut short)."""
        new = sum(state is None for _, state in todo)
        if not self.options.bulk_load:  # the row-by-row path: into an empty project only
            return len(todo) >= BULK_LOAD_FILES and store.chunk_count(self.conn, self.schema) == 0
        return new >= BULK_LOAD_FILES and new >= sum(1 for s in states.values() if s.sha256)

    def ready_for_changes(self) -> bool:
        """Whether changes can go in file by file: the project was swept with this model and
        chunker (otherwise only a whole sweep brings it in line)."""
        recorded = store.get_meta(self.conn, self.schema, "embedding")
        chunker = store.get_meta(self.conn, self.schema, "chunker_version")
        self.conn.commit()
        if self.embedder is None:  # model-free: whatever model the kept vectors are of
            return chunker == CHUNKER_VERSION
        return (
            recorded is not None
            and chunker == CHUNKER_VERSION
            and not needs_reembed(EmbeddingModel.from_dict(recorded), self.embedder.identity)
        )

    def run_changes(self, changed: Mapping[str, Iterable[str]]) -> None:
        """Bring just the `changed` paths (repo -> paths relative to its root) in line with
        the disk: new and modified files indexed, files and folders gone deleted."""
        report = self.report
        t = time.perf_counter()
        walker = Walker(self.project, self.options.walk)
        found: list[Candidate] = []
        keys: list[tuple[str, str]] = []
        for root in self.project.roots:
            rels = sorted(set(changed.get(root.name, ())))
            keys.extend((root.name, storable(rel)) for rel in rels)
            for item in walker.walk_paths(root, rels):
                if isinstance(item, Candidate):
                    found.append(item)
                else:
                    report.skipped[item.reason] = report.skipped.get(item.reason, 0) + 1
        report.add_time("walk", time.perf_counter() - t)
        report.files_seen = len(found)
        states = store.file_states_at(self.conn, self.schema, keys)
        self.conn.commit()
        seen = {(c.repo, c.path) for c in found}
        gone = [s.id for key, s in states.items() if key not in seen]
        self.index(self._compare(found, states))
        report.files_deleted += store.delete_files(self.conn, self.schema, gone)
        self.conn.commit()

    def _compare(
        self, found: list[Candidate], states: Mapping[tuple[str, str], store.FileState]
    ) -> list[tuple[Candidate, store.FileState | None]]:
        """The files to read again: new, failed before, or changed in size or time."""
        todo: list[tuple[Candidate, store.FileState | None]] = []
        for cand in found:
            state = states.get((cand.repo, cand.path))
            if (
                not self.redo
                and state is not None
                and state.error is None
                and state.size == cand.size
                and state.mtime_ns == cand.mtime_ns
            ):
                self.report.files_unchanged += 1
            else:
                todo.append((cand, state))
        return todo

    def _unavailable_roots(
        self, problems: dict[str, str], states: dict[tuple[str, str], store.FileState]
    ) -> set[str]:
        """The roots whose rows this sweep must keep: missing, unreadable, or empty where the
        index holds files for them. Each is reported and logged."""
        held = Counter(s.repo for s in states.values() if s.sha256)
        unavailable = set()
        for root in self.project.roots:
            problem = problems.get(root.name)
            if problem is None or (problem == ROOT_EMPTY and not held[root.name]):
                continue
            unavailable.add(root.name)
            self.report.roots_unavailable.append(
                {"repo": root.name, "path": str(root.path), "reason": problem}
            )
            message = (
                f"root {root.name} ({root.path}) is unavailable: {problem}; its "
                f"{held[root.name]:,} indexed files are kept until it is back"
            )
            self.report.warnings.append(message)
            log.warning("%s: %s", self.name, message)
        return unavailable

    def index(self, todo: list[tuple[Candidate, store.FileState | None]]) -> None:
        """Prepare in a thread, embed and write here; batches of `files_per_commit` files."""
        if not todo:
            return
        batches: queue.Queue[Any] = queue.Queue(maxsize=2)
        stop = threading.Event()
        producer = threading.Thread(
            target=self._produce, args=(todo, batches, stop), name="sweep-prepare", daemon=True
        )
        producer.start()
        done = 0
        try:
            while True:
                if self.stop is not None and self.stop.is_set():
                    raise SweepStopped(
                        f"the sweep of {self.name} stopped after {done:,} of {len(todo):,} "
                        "files, as asked; the next sweep goes on from there"
                    )
                t = time.perf_counter()
                item = batches.get()
                self.report.add_time("wait_prepare", time.perf_counter() - t)
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                self.writer.embed_and_write(item)
                done += len(item.files)
                self._progress("index", done, len(todo))
        finally:
            stop.set()
            while producer.is_alive():  # unblock a producer waiting on a full queue
                try:
                    batches.get_nowait()
                except queue.Empty:
                    producer.join(0.05)

    def _produce(
        self,
        todo: list[tuple[Candidate, store.FileState | None]],
        out: queue.Queue[Any],
        stop: threading.Event,
    ) -> None:
        try:
            size = self.options.files_per_commit
            mode = self.embedder.identity.chunk_vectors if self.embedder else CHUNK_VECTORS_WHOLE
            preparer = Preparer(self.options.chunker, self.report, self.redo, mode)
            count = workers.worker_count(
                len(todo), self.options.prepare_workers, sum(c.size for c, _ in todo)
            )
            prepared = preparer.prepare_all(todo, count)
            with (
                self.db.connection(f"reading the index of {self.name}") as conn,
                contextlib.closing(prepared),
            ):
                files: list[Prepared] = []
                for f in prepared:
                    if stop.is_set():
                        return
                    files.append(f)
                    if len(files) == size:
                        out.put(self._batch(conn, files))
                        files = []
                if files:
                    out.put(self._batch(conn, files))
            out.put(_DONE)
        except BaseException as exc:  # handed to the main thread, which raises it
            out.put(exc)

    def _batch(self, conn: Conn, files: list[Prepared]) -> Batch:
        """The files with the vectors already stored for their texts: in this project, or
        (made by this model) in the cache every project shares."""
        t = time.perf_counter()
        hashes = sorted({h for f in files for h in f.vector_keys()})
        cached = store.cached_embeddings(conn, self.schema, hashes)
        missing = [h for h in hashes if h not in cached]
        if self.shared is not None and missing:
            cached.update(embedding_cache.shared_vectors(conn, self.shared, missing))
        conn.commit()
        self.report.add_time("cache_lookup", time.perf_counter() - t)
        return Batch(files, cached)

    def _progress(self, phase: str, done: int, total: int) -> None:
        self._record_progress(phase, done, total)
        if self.progress is not None:
            self.progress(
                SweepProgress(
                    self.name,
                    phase,
                    done,
                    total,
                    self.report.chunks_written,
                    time.perf_counter() - self.started,
                )
            )

    def _record_progress(self, phase: str, done: int, total: int) -> None:
        """How far the rows are, in `rag_meta` (`ROWS_PROGRESS`) for the status of another
        process: when a whole sweep knows the files to read, then at most every
        `PROGRESS_EVERY` seconds, between batches (each batch is committed by then). The few
        files of a file event write nothing."""
        now = time.perf_counter()
        if phase == "walk":
            self.rows_started = now
        elif self.rows_started is None or (
            now - self.progress_saved < PROGRESS_EVERY and done < total
        ):
            return
        self.progress_saved = now
        record = progress_record(
            done, total, now - self.rows_started, chunks=self.report.chunks_written
        )
        store.set_meta(self.conn, self.schema, ROWS_PROGRESS, record)
        self.conn.commit()


def sweep_project(
    db: Database,
    project: Project,
    embedder: Embedder | None,
    options: SweepOptions = DEFAULT_OPTIONS,
    *,
    full: bool = False,
    wait: bool = False,
    progress: ProgressCallback | None = None,
    stop: threading.Event | None = None,
) -> SweepReport:
    """Sweep `project` now and return its report (also stored in `rag_sweep`). With no
    `embedder` (model-free) the rows are written and nothing is embedded. Once `stop` is set
    (a server stopping) it stops before its next batch and raises `SweepStopped`: the batches
    committed stay, and the next sweep goes on from there.

    Raises `SweepRunning` when another sweep of the project holds its lock (unless `wait`),
    and the `RagError` that stopped it when the whole sweep fails (embedder or database
    unreachable); per-file failures do not raise, they are in the report.
    """
    report = SweepReport(project=project.name, started_at=clock.now_iso(), full=full)
    what = f"sweeping {project.name}"
    schema = Schema(project.name)
    with _sweep_lock(db, schema, wait), db.connection(what) as conn:
        store.ensure_project(conn, schema)
        sweep_id = store.start_sweep(conn, schema)
        conn.commit()
        started = time.perf_counter()
        try:
            _Sweep(db, conn, project, embedder, options, report, progress, stop).run(full)
        except BaseException as exc:
            _rollback(conn)
            report.outcome = "stopped" if isinstance(exc, SweepStopped) else "failed"
            if isinstance(exc, psycopg.Error):
                report.error = database_error(exc, what).message
            else:
                report.error = exc.message if isinstance(exc, RagError) else "interrupted"
            _finish(conn, schema, sweep_id, report, started)
            raise
        report.outcome = "partial" if report.files_failed or report.roots_unavailable else "ok"
        _finish(conn, schema, sweep_id, report, started)
        if progress is not None:
            progress(
                SweepProgress(
                    project.name,
                    "done",
                    report.files_changed + report.files_failed,
                    report.files_changed + report.files_failed,
                    report.chunks_written,
                    time.perf_counter() - started,
                )
            )
    return report


def apply_changes(
    db: Database,
    project: Project,
    embedder: Embedder | None,
    changed: Mapping[str, Iterable[str]],
    options: SweepOptions = DEFAULT_OPTIONS,
) -> SweepReport | None:
    """Index just the `changed` paths (repo -> paths relative to its root, as file events
    name them) through the sweep's own per-file path: the same lock (waited for), savepoints
    and embedding cache. Returns its report (not stored: a save is not a sweep), or None when
    the project needs a whole sweep first (never swept, or another model or chunker)."""
    report = SweepReport(project=project.name, started_at=clock.now_iso())
    started = time.perf_counter()
    with (
        _sweep_lock(db, Schema(project.name), wait=True),
        db.connection(f"indexing {project.name}") as conn,
    ):
        run = _Sweep(db, conn, project, embedder, options, report, None)
        try:
            if not store.project_exists(conn, run.schema) or not run.ready_for_changes():
                return None
            run.run_changes(changed)
        except BaseException:
            _rollback(conn)
            raise
    report.outcome = "partial" if report.files_failed else "ok"
    report.finished_at = clock.now_iso()
    report.add_time("total", time.perf_counter() - started)
    return report


def _rollback(conn: Conn) -> None:
    """Roll back after a failure; a connection the database has dropped has nothing to undo,
    and the error that dropped it (not the rollback's) is the one to report."""
    with contextlib.suppress(psycopg.OperationalError):
        conn.rollback()


def _finish(conn: Conn, schema: Schema, sweep_id: int, report: SweepReport, started: float) -> None:
    report.finished_at = clock.now_iso()
    report.add_time("total", time.perf_counter() - started)
    try:
        store.finish_sweep(conn, schema, sweep_id, report.outcome, report.to_dict())
        conn.commit()
    except psycopg.Error as exc:  # the database may be what failed: the report still returns
        log.warning("could not record the sweep report of %s: %s", schema.name, exc)


@contextlib.contextmanager
def _sweep_lock(db: Database, schema: Schema, wait: bool) -> Iterator[None]:
    """Hold the project's sweep lock on a dedicated autocommit connection for the sweep."""
    with db.session(f"locking {schema.name} for a sweep") as conn:
        if not store.try_sweep_lock(conn, schema, wait=wait):
            raise SweepRunning(
                f"a sweep of {schema.name} is already running; it will pick up every change, "
                "or wait for it and run this again"
            )
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # closing the connection releases it too
                store.release_sweep_lock(conn, schema)
