"""The server's second phase: each project's pending vectors embedded in the background.

A sweep of many files writes rows first and leaves their vectors pending
(`indexer.sweep.vectors`); the server then embeds them in one thread of its own, one project
at a time (the model has the machine's cores to itself that way), while every tool answers.
A project is queued after each of its sweeps and, at startup, when it has vectors pending (a
restart picks up where the last process stopped: what is pending is read from the database).
Of the projects queued, the one with the fewest vectors pending goes next
(`indexer.sweep.pending_order`). While projects are held (the sweeps of a start, which write
rows only), nothing is embedded: every project's rows go in first, then the vectors as one
stream.
What the thread does is in each project's status: running, vectors per second, an estimate of
the time left, and how its last run ended. With no embedder (model-free) there is nothing to
embed: the worker takes no project and starts no thread. The thread claims its batches as
every process filling vectors does, so `code-rag worker` processes on this machine or others
fill the same projects beside it (`indexer.sweep.embed_pending`), and it is listed among them
in the status while it runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from indexer.clock import iso, now
from indexer.db import Database
from indexer.embed import Embedder
from indexer.errors import RagError
from indexer.project import Project
from indexer.sweep import VectorProgress, VectorReport, embed_pending, pending_order

log = logging.getLogger("code_rag.vectors")


class VectorWorker:
    """One background thread that embeds the pending vectors of the projects queued to it."""

    def __init__(
        self, db: Database, embedder: Embedder | None, project: Callable[[str], Project]
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.project = project
        self._lock = threading.Condition()
        self._queue: list[str] = []
        self._held: set[str] = set()  # nothing is embedded while one of these is held
        self._running: str | None = None
        self._progress: dict[str, VectorProgress] = {}
        self._last: dict[str, tuple[VectorReport, str | None]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def queue(self, *names: str) -> None:
        """Embed the pending vectors of `names` soon (at once when nothing else is being
        embedded; a project queued twice runs once, a project running is run again after).
        Projects queued together are ordered together."""
        with self._lock:
            if self._stop.is_set() or self.embedder is None:
                return
            for name in names:
                if name not in self._queue:
                    self._queue.append(name)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="code-rag-vectors", daemon=True
                )
                self._thread.start()
            self._lock.notify()

    def hold(self, name: str) -> None:
        """Embed nothing until `name` is released (its rows are being written: the rows of
        every project held go in before any vector)."""
        with self._lock:
            self._held.add(name)

    def release(self, name: str) -> None:
        """`name`'s rows are in (or will not come): once none is held, the queue goes on."""
        with self._lock:
            self._held.discard(name)
            self._lock.notify_all()

    def forget(self, name: str) -> None:
        """`name` is no longer served: drop it from the queue and forget its last run (a run
        in flight finishes: what it writes stays in the project's schema, as the rows do)."""
        with self._lock:
            if name in self._queue:
                self._queue.remove(name)
            self._last.pop(name, None)
            self._held.discard(name)
            self._lock.notify_all()

    def _next(self) -> str | None:
        """The queued project to embed next (fewest pending first), once none is held; None
        when the queue is empty or the worker stops."""
        with self._lock:
            while self._held and not self._stop.is_set():
                self._lock.wait()
            queued = list(self._queue)
        if len(queued) > 1:
            queued = [w.project for w in pending_order(self.db, queued)]
        with self._lock:
            for name in queued:
                if name in self._queue and not self._stop.is_set():
                    self._queue.remove(name)
                    self._running = name
                    return name
            return None

    def _run(self) -> None:
        while not self._stop.is_set():
            name = self._next()
            if name is None:
                with self._lock:
                    if self._queue and not self._stop.is_set():
                        continue  # queued while the order was read
                    self._thread = None
                    return
            assert self.embedder is not None  # nothing is queued without one
            try:
                report = embed_pending(
                    self.db,
                    self.project(name),
                    self.embedder,
                    progress=self._record,
                    stop=self._stop,
                )
            except RagError as exc:  # the project is no longer served, the database is away
                log.warning("the pending vectors of %s were not embedded: %s", name, exc.message)
                report = VectorReport(name, outcome="failed", error=exc.message)
            except Exception:  # a bug: keep the server up, keep the traceback in the log
                log.exception("embedding the pending vectors of %s failed", name)
                report = VectorReport(name, outcome="failed", error="unexpected; see the log")
            if report.written or report.outcome != "ok":
                log.info(
                    "vectors of %s: %s, %d written in %.1f s, %d pending",
                    name, report.outcome, report.written, report.seconds, report.pending,
                )  # fmt: skip
            with self._lock:
                self._running = None
                self._progress.pop(name, None)
                self._last[name] = (report, iso(now()))

    def _record(self, progress: VectorProgress) -> None:
        with self._lock:
            self._progress[progress.project] = progress

    def state(self, name: str) -> dict[str, Any]:
        """What the thread does for `name`: whether it embeds its vectors now (or has them
        queued), at what rate, the time left at that rate, and how its last run ended."""
        with self._lock:
            progress = self._progress.get(name)
            last = self._last.get(name)
            running = self._running == name
            queued = name in self._queue
        eta = progress.eta_seconds if progress is not None else None
        return {
            "vectors_running": running,
            "vectors_queued": queued,
            "vectors_per_second": round(progress.per_second, 2) if progress else None,
            "vectors_eta_seconds": None if eta is None else round(eta),
            "last_vectors_run": None
            if last is None
            else {**last[0].to_dict(), "finished_at": last[1]},
        }

    def close(self) -> None:
        """Stop after the batch in flight (its vectors are written; the rest stays pending)."""
        self._stop.set()
        with self._lock:
            self._queue.clear()
            self._lock.notify_all()
            thread = self._thread
        if thread is not None:
            # However slow the batch in flight, wait for it: a process that ends while the
            # model runs in this thread is aborted by ONNX Runtime instead of exiting.
            thread.join()
