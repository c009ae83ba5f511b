"""Worker processes that map a function over items, in order, one item failing alone.

Parsing with tree-sitter and assembling chunks hold the GIL; on a machine with more than one
free core a sweep prepares files in a few worker processes instead. Each worker runs one item at
a time and results come back in the order of the items. A worker that dies on an item (a
crashing parser) or takes longer than the timeout on it (a hanging one) is killed and replaced:
that item alone gets `failed(item, reason)` as its result, the others go on.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

# A file whose preparation takes longer than this is given up (its parser is taken to hang).
ITEM_TIMEOUT_S = 120.0
# At most this many workers, whatever the core count: the writer and the database need CPU too.
MAX_WORKERS = 4
# Below this many items, or this many bytes of them, a pool is not worth its start (about a
# second per worker): on two cores a first sweep of 600 files (8.2 MB) took as long either
# way, one of 369 (1.9 MB) a third less in this process, one of 1,218 (27 MB) a quarter less
# with the pool (docs/lab-log.md).
MIN_ITEMS = 100
MIN_BYTES = 8_000_000
# Results waiting to be handed out, per worker, before no more items are sent.
WINDOW_PER_WORKER = 8
# A worker that has not said it is ready after this long is taken as unable to start.
START_TIMEOUT_S = 60.0
# The first message of every worker, once its process runs our loop.
READY = "ready"
# How much lower than the sweep's own a worker's CPU priority is (added to its nice value):
# parsing yields the cores to what answers meanwhile (searches, the server, PostgreSQL).
WORKER_NICENESS = 10


class WorkersUnavailable(RuntimeError):
    """Worker processes could not be started here (for instance a script without an
    `if __name__ == "__main__":` guard, which every spawned process runs again): the work is
    done in this process instead."""


def free_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(items: int, requested: int | None = None, size: int | None = None) -> int:
    """How many worker processes to use for `items` items of `size` bytes in all: `requested`
    when given (0: none), else one per free core (at most MAX_WORKERS) when more than one core
    is free and there is enough work to pay for starting them."""
    if requested is not None:
        return max(0, requested)
    cores = free_cores()
    if cores < 2 or items < MIN_ITEMS or (size is not None and size < MIN_BYTES):
        return 0
    return min(cores, MAX_WORKERS)


def _serve(conn: Connection, fn: Callable[[Any, Any], Any], context: Any) -> None:
    """A worker's loop: (index, item) in, (index, ok, result or error text) out; None stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    with contextlib.suppress(OSError, AttributeError):  # not Unix: the priority it was given
        os.nice(WORKER_NICENESS)
    conn.send(READY)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        index, item = task
        try:
            reply = (index, True, fn(context, item))
        except Exception as exc:
            reply = (index, False, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except OSError:  # the parent is gone (killed): nothing to answer to
            return
        except Exception as exc:  # a result that cannot be sent back fails its item
            conn.send((index, False, f"the result could not be sent back: {exc}"))


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[[Any, Any], Any], context: Any) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve, args=(child, fn, context), name="code-rag-prepare", daemon=True
        )
        self.process.start()
        child.close()
        self.index: int | None = None  # the item it works on
        self.since = 0.0

    def wait_ready(self, timeout_s: float) -> None:
        """Wait for the worker's first message; raise WorkersUnavailable if it dies first or
        stays silent (its process could not even reach our loop)."""
        try:
            if self.conn.poll(timeout_s) and self.conn.recv() == READY:
                return
            problem = f"no word from it within {timeout_s:g} s"
        except (EOFError, OSError):
            self.process.join(5)
            problem = f"it exited with code {self.process.exitcode} before its first item"
        self.kill()
        raise WorkersUnavailable(f"a parsing worker process could not start: {problem}")

    def send(self, index: int, item: Any) -> None:
        self.index = index
        self.since = time.monotonic()
        self.conn.send((index, item))

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.process.join(2)
        self.kill()


class ProcessMap:
    """`workers` processes running `fn(context, item)`; `context` is sent to each once.

    `fn` and `context` must be picklable (a module-level function, plain values): workers are
    started fresh ("spawn"), never forked from a process that has threads and connections.
    """

    def __init__(
        self,
        workers: int,
        fn: Callable[[Any, Any], Any],
        context: Any,
        timeout_s: float = ITEM_TIMEOUT_S,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a process map needs at least one worker, got {workers}")
        self._ctx = multiprocessing.get_context("spawn")
        self._fn = fn
        self._context = context
        self._timeout_s = timeout_s
        self._workers = [_Worker(self._ctx, fn, context) for _ in range(workers)]
        try:
            for worker in self._workers:
                worker.wait_ready(START_TIMEOUT_S)
        except WorkersUnavailable:
            for worker in self._workers:
                worker.kill()
            raise

    def __enter__(self) -> ProcessMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._workers:
            if worker.index is None:
                worker.stop()
            else:  # busy with an item nobody waits for any more
                worker.kill()
        self._workers = []

    def imap(self, items: Iterable[Any], failed: Callable[[Any, str], Any]) -> Iterator[Any]:
        """`fn(context, item)` for each item, in order; `failed(item, reason)` for an item whose
        function raised, whose worker died on it, or that ran past the timeout."""
        todo = list(items)
        results: dict[int, Any] = {}
        sent = handed = 0
        window = WINDOW_PER_WORKER * len(self._workers)
        while handed < len(todo):
            for worker in self._workers:
                if worker.index is None and sent < len(todo) and sent - handed < window:
                    worker.send(sent, todo[sent])
                    sent += 1
            while handed in results:
                yield results.pop(handed)
                handed += 1
            if handed >= len(todo):
                break
            busy = [w for w in self._workers if w.index is not None]
            if not busy:
                continue
            oldest = min(w.since for w in busy)
            timeout = max(0.0, oldest + self._timeout_s - time.monotonic())
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout)
            for worker in busy:
                self._collect(worker, todo, results, failed)

    def _collect(
        self,
        worker: _Worker,
        todo: list[Any],
        results: dict[int, Any],
        failed: Callable[[Any, str], Any],
    ) -> None:
        """Take `worker`'s result if it has one; replace it if it died or hangs."""
        index = worker.index
        assert index is not None
        gone = False
        try:
            if worker.conn.poll():
                got, ok, value = worker.conn.recv()
                results[got] = value if ok else failed(todo[got], value)
                worker.index = None
                return
        except (EOFError, OSError):  # its end of the pipe closed: the process is gone
            gone = True
        if gone or not worker.process.is_alive():
            worker.process.join(5)
            code = worker.process.exitcode
            reason = f"the parser's process died on this file (exit code {code})"
        elif time.monotonic() - worker.since > self._timeout_s:
            reason = f"parsing took longer than {self._timeout_s:g} s and was stopped"
        else:
            return
        results[index] = failed(todo[index], reason)
        worker.kill()
        fresh = _Worker(self._ctx, self._fn, self._context)
        self._workers[self._workers.index(worker)] = fresh
        fresh.wait_ready(START_TIMEOUT_S)
