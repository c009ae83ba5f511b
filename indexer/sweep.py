"""A sweep: bring one project's index in line with its roots, and report what it did.

walk → compare (size, mtime) with `rag_file`, hash only candidates → chunk changed files → reuse
stored vectors by content hash, embed the rest in batches spanning files → write each file with
its chunks in a savepoint, committing every N files → delete rows of files that are gone.

Invariants: one sweep per project at a time (a PostgreSQL advisory lock, whoever starts it); a
file is always either fully old or fully new (a killed process loses at most its open batch,
which the next sweep redoes); a failing file is recorded with its reason and retried next
sweep, never taking its neighbours down; vectors of two models never mix. Preparation (read,
hash, chunk, cache look-up) runs in a thread ahead of embedding, so the embedder stays busy.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import psycopg

from chunkers import CHUNKER_VERSION, ChunkerConfig, embedding_text
from indexer import clock, store
from indexer.db import Database, database_error
from indexer.embed import Embedder, EmbeddingModel, needs_reembed, reembed_warning
from indexer.errors import RagError, SweepRunning
from indexer.prepare import Batch, Prepared, Preparer
from indexer.project import Project
from indexer.report import ProgressCallback, SweepProgress, SweepReport
from indexer.walk import ROOT_EMPTY, Candidate, Walker, WalkOptions

log = logging.getLogger("code_rag.sweep")

DEFAULT_FILES_PER_COMMIT = 50
# Into an empty project, at least this many files are a bulk load: the HNSW and trigram indexes
# are built once at the end instead of updated per row.
BULK_LOAD_FILES = 200
# After writing this many chunks the planner's term statistics are refreshed (keyword ranking).
ANALYZE_AFTER_CHUNKS = 1000


@dataclass(frozen=True)
class SweepOptions:
    files_per_commit: int = DEFAULT_FILES_PER_COMMIT
    walk: WalkOptions = field(default_factory=WalkOptions)
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)


_DONE = object()


class _Sweep:
    def __init__(
        self,
        db: Database,
        conn: store.Conn,
        project: Project,
        embedder: Embedder,
        options: SweepOptions,
        report: SweepReport,
        progress: ProgressCallback | None,
    ) -> None:
        self.db = db
        self.conn = conn
        self.project = project
        self.name = project.name
        self.embedder = embedder
        self.options = options
        self.report = report
        self.progress = progress
        self.started = time.perf_counter()
        self.redo = False  # every file is re-chunked (full sweep, new model or chunker)

    # -- model bookkeeping -------------------------------------------------------------------

    def prepare_index(self, full: bool) -> bool:
        """Make the index ready for this embedder; return True when every file must be redone."""
        identity: EmbeddingModel = self.embedder.identity
        conn = self.conn
        recorded_raw = store.get_meta(conn, self.name, "embedding")
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
                store.clear_project(conn, self.name)
            store.set_embedding_dimension(conn, self.name, identity.dimension)
            store.set_meta(conn, self.name, "embedding", identity.to_dict())
            if store.get_meta(conn, self.name, "chunker_version") != CHUNKER_VERSION:
                redo = True
                store.set_meta(conn, self.name, "chunker_version", CHUNKER_VERSION)
        conn.commit()
        return redo

    # -- the phases --------------------------------------------------------------------------

    def run(self, full: bool) -> None:
        report = self.report
        redo = self.redo = self.prepare_index(full)

        t = time.perf_counter()
        walked = Walker(self.project, self.options.walk).walk()
        report.add_time("walk", time.perf_counter() - t)
        report.files_seen = len(walked.files)
        report.skipped = walked.skipped_by_reason()

        t = time.perf_counter()
        repos = [root.name for root in self.project.roots]
        removed_roots = store.delete_repos_except(self.conn, self.name, repos)
        states = store.file_states(self.conn, self.name)
        self.conn.commit()
        unavailable = self._unavailable_roots(walked.root_problems, states)
        for repo, path in walked.renamed:
            report.warnings.append(
                f"{repo}/{path}: the file name is not valid UTF-8; indexed under this name, "
                "its undecodable bytes written as \\xNN"
            )
        seen = {(c.repo, c.path) for c in walked.files}
        gone = [s.id for key, s in states.items() if key not in seen and s.repo not in unavailable]
        todo: list[tuple[Candidate, store.FileState | None]] = []
        for cand in walked.files:
            state = states.get((cand.repo, cand.path))
            if (
                not redo
                and state is not None
                and state.error is None
                and state.size == cand.size
                and state.mtime_ns == cand.mtime_ns
            ):
                report.files_unchanged += 1
            else:
                todo.append((cand, state))
        bulk = len(todo) >= BULK_LOAD_FILES and store.chunk_count(self.conn, self.name) == 0
        if bulk:
            store.drop_bulk_indexes(self.conn, self.name)
            self.conn.commit()
        report.add_time("compare", time.perf_counter() - t)
        self._progress("walk", 0, len(todo))

        self.index(todo)
        if bulk:
            t = time.perf_counter()
            store.build_bulk_indexes(self.conn, self.name)
            self.conn.commit()
            report.add_time("build_index", time.perf_counter() - t)
        if bulk or report.chunks_written >= ANALYZE_AFTER_CHUNKS:
            t = time.perf_counter()
            store.analyze_chunks(self.conn, self.name)
            self.conn.commit()
            report.add_time("analyze", time.perf_counter() - t)

        t = time.perf_counter()
        report.files_deleted += removed_roots + store.delete_files(self.conn, self.name, gone)
        self.conn.commit()
        report.add_time("delete", time.perf_counter() - t)

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
                t = time.perf_counter()
                item = batches.get()
                self.report.add_time("wait_prepare", time.perf_counter() - t)
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                self._embed_and_write(item)
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
            preparer = Preparer(self.options.chunker, self.report, self.redo)
            with self.db.connection(f"reading the index of {self.name}") as conn:
                for start in range(0, len(todo), size):
                    if stop.is_set():
                        return
                    files = [preparer.prepare(c, s) for c, s in todo[start : start + size]]
                    t = time.perf_counter()
                    hashes = sorted({h for f in files for h in f.hashes})
                    cached = store.cached_embeddings(conn, self.name, hashes)
                    conn.rollback()
                    self.report.add_time("cache_lookup", time.perf_counter() - t)
                    out.put(Batch(files, cached))
            out.put(_DONE)
        except BaseException as exc:  # handed to the main thread, which raises it
            out.put(exc)

    def _embed_and_write(self, batch: Batch) -> None:
        report = self.report
        vectors: dict[str, Any] = dict(batch.cached)
        wanted: dict[str, tuple[str, str]] = {}  # hash -> (text, label), first occurrence
        for f in batch.files:
            for chunk, h in zip(f.chunks, f.hashes, strict=True):
                if h in vectors:
                    report.cache_hits += 1
                elif h not in wanted:
                    label = (
                        f"{f.candidate.repo}/{f.candidate.path}:{chunk.start_line}-{chunk.end_line}"
                    )
                    if chunk.symbol:
                        label += f" {chunk.symbol}"
                    wanted[h] = (embedding_text(chunk, f.candidate.path), label)
        refused: dict[str, str] = {}
        if wanted:
            t = time.perf_counter()
            try:
                self._embed(list(wanted), wanted, vectors, refused)
            except RagError:
                raise  # the embedder as a whole failed (unreachable, wrong model): stop
            except Exception:  # something in this batch broke it: find the file, spare the rest
                log.exception("embedding a batch of %s failed; retrying file by file", self.name)
                self._embed_file_by_file(batch, wanted, vectors, refused)
            report.add_time("embed", time.perf_counter() - t)
        t = time.perf_counter()
        self._write(batch, vectors, refused)
        report.add_time("store", time.perf_counter() - t)

    def _embed(
        self,
        keys: list[str],
        wanted: dict[str, tuple[str, str]],
        vectors: dict[str, Any],
        refused: dict[str, str],
    ) -> None:
        """Embed the texts of `keys`; their vectors into `vectors`, refusals into `refused`."""
        report = self.report
        result = self.embedder.embed_documents(
            [wanted[k][0] for k in keys], [wanted[k][1] for k in keys]
        )
        report.embed_requests += result.requests
        report.embed_retries += result.retries
        report.embed_truncated += len(result.truncated)
        report.chunks_embedded += sum(v is not None for v in result.vectors)
        for key, vector in zip(keys, result.vectors, strict=True):
            if vector is not None:
                vectors[key] = np.asarray(vector, dtype=np.float32)
        for r in result.refused:
            refused[keys[r.index]] = f"the embedder refused {r.label}: {r.reason}"

    def _embed_file_by_file(
        self,
        batch: Batch,
        wanted: dict[str, tuple[str, str]],
        vectors: dict[str, Any],
        refused: dict[str, str],
    ) -> None:
        """After an unexpected embedder failure: each file's chunks alone, so one input the
        embedder cannot take fails its own file only."""
        for f in batch.files:
            keys = [h for h in dict.fromkeys(f.hashes) if h in wanted and h not in vectors]
            if not keys:
                continue
            try:
                self._embed(keys, wanted, vectors, refused)
            except RagError:
                raise
            except Exception as exc:
                reason = f"the embedder failed on this file ({type(exc).__name__}: {exc})"
                refused.update(dict.fromkeys(keys, reason[:500]))

    def _write(self, batch: Batch, vectors: dict[str, Any], refused: dict[str, str]) -> None:
        conn, report = self.conn, self.report
        for f in batch.files:
            cand = f.candidate
            if f.touch_id is not None:
                store.touch_file(conn, self.name, f.touch_id, cand.size, cand.mtime_ns)
                report.files_unchanged += 1
                continue
            if f.skip is not None:
                report.skipped[f.skip] = report.skipped.get(f.skip, 0) + 1
                report.files_seen -= 1
                if f.row_id is not None:
                    report.files_deleted += store.delete_files(conn, self.name, [f.row_id])
                continue
            reason = f.error or next((refused[h] for h in f.hashes if h in refused), None)
            if reason is None:
                try:
                    self._upsert(f, vectors)
                    report.files_changed += 1
                    report.chunks_written += len(f.chunks)
                    continue
                except psycopg.OperationalError:
                    raise
                except psycopg.Error as exc:
                    reason = f"could not be stored: {str(exc).strip().splitlines()[0]}"
            store.record_file_error(conn, self.name, cand.repo, cand.path, reason, f.language)
            report.fail_file(cand.repo, cand.path, reason)
            log.warning("%s/%s: %s", cand.repo, cand.path, reason)
        conn.commit()

    def _upsert(self, f: Prepared, vectors: dict[str, Any]) -> None:
        cand = f.candidate
        rows = [replace(row, embedding=vectors[row.content_sha256]) for row in f.rows]
        record = store.FileRecord(
            cand.repo, cand.path, cand.size, cand.mtime_ns, f.sha256, f.language
        )
        store.upsert_file(self.conn, self.name, record, rows, f.symbols, f.text)

    def _progress(self, phase: str, done: int, total: int) -> None:
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


def sweep_project(
    db: Database,
    project: Project,
    embedder: Embedder,
    options: SweepOptions = SweepOptions(),
    *,
    full: bool = False,
    wait: bool = False,
    progress: ProgressCallback | None = None,
) -> SweepReport:
    """Sweep `project` now and return its report (also stored in `rag_sweep`).

    Raises `SweepRunning` when another sweep of the project holds its lock (unless `wait`),
    and the `RagError` that stopped it when the whole sweep fails (embedder or database
    unreachable); per-file failures do not raise, they are in the report.
    """
    report = SweepReport(project=project.name, started_at=clock.now_iso(), full=full)
    what = f"sweeping {project.name}"
    with _sweep_lock(db, project.name, wait), db.connection(what) as conn:
        store.ensure_project(conn, project.name)
        sweep_id = store.start_sweep(conn, project.name)
        conn.commit()
        started = time.perf_counter()
        try:
            _Sweep(db, conn, project, embedder, options, report, progress).run(full)
        except BaseException as exc:
            _rollback(conn)
            report.outcome = "failed"
            if isinstance(exc, psycopg.Error):
                report.error = database_error(exc, what).message
            else:
                report.error = exc.message if isinstance(exc, RagError) else "interrupted"
            _finish(conn, project.name, sweep_id, report, started)
            raise
        report.outcome = "partial" if report.files_failed or report.roots_unavailable else "ok"
        _finish(conn, project.name, sweep_id, report, started)
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


def _rollback(conn: store.Conn) -> None:
    """Roll back after a failure; a connection the database has dropped has nothing to undo,
    and the error that dropped it (not the rollback's) is the one to report."""
    with contextlib.suppress(psycopg.OperationalError):
        conn.rollback()


def _finish(
    conn: store.Conn, name: str, sweep_id: int, report: SweepReport, started: float
) -> None:
    report.finished_at = clock.now_iso()
    report.add_time("total", time.perf_counter() - started)
    try:
        store.finish_sweep(conn, name, sweep_id, report.outcome, report.to_dict())
        conn.commit()
    except psycopg.Error as exc:  # the database may be what failed: the report still returns
        log.warning("could not record the sweep report of %s: %s", name, exc)


@contextlib.contextmanager
def _sweep_lock(db: Database, name: str, wait: bool) -> Iterator[None]:
    """Hold the project's sweep lock on a dedicated autocommit connection for the sweep."""
    with db.session(f"locking {name} for a sweep") as conn:
        if not store.try_sweep_lock(conn, name, wait=wait):
            raise SweepRunning(
                f"a sweep of {name} is already running; it will pick up every change, "
                "or wait for it and run this again"
            )
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):  # closing the connection releases it too
                store.release_sweep_lock(conn, name)
