"""The running service: settings, the open database, the embedder, and the sweeps in flight.

One `Service` serves every project of the configuration. Sweeps are blocking work and never run
on the event loop: the scheduler's threads and a small pool of our own run them. At most one
sweep per project runs in this process (`sweep` refuses a second with `SweepRunning`); the
advisory lock inside `sweep_project` extends that guarantee to other processes such as
`./bld scan`. What a sweep did is remembered per project (`last_run`) for `status`. A sweep of
many files writes rows first; their vectors follow in the background (`vectors.VectorWorker`,
queued after every sweep and, at startup, for the projects with vectors pending). A sweep at
startup writes rows only, whatever its size: no project embeds beside another on the same cores,
and the vectors wait for every first sweep's rows. With no embedder (`provider = none`,
model-free) nothing is embedded or pending: sweeps write rows only.

The service owns the configuration it serves (`settings`, one immutable value replaced whole):
`apply` swaps in a new one — the projects file read anew — and tells the scheduler and the
watchers what changed; a request reads `settings` once and sees one configuration throughout. A
server with `[indexer] enabled = false` is a read replica: it answers, and refuses to sweep.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from indexer.clock import iso, now
from indexer.db import Database, PendingCounts, Schema, lookup, store
from indexer.embed import Embedder, EmbeddingModel, needs_reembed
from indexer.errors import ProjectNotFound, RagError, ReadReplica, SweepRunning, SweepStopped
from indexer.project import Project
from indexer.search import QueryVectorCache, TermStatsCache
from indexer.status import ProjectStatus, project_status
from indexer.sweep import sweep_project
from rag_server.config import Settings, select_projects, sweep_options
from rag_server.vectors import VectorWorker

log = logging.getLogger("code_rag.service")

BACKGROUND_SWEEPS = 2
# The share of PostgreSQL's shared buffers that warming the search up after a start may fill.
WARM_SHARE = 0.5
WARM_TIMEOUT_MS = 120_000  # per project
# How long a project's count of pending vectors is reused by searches: 2 s, or 20 times what
# counting took (at a million pending chunks a count takes seconds). Past that a search still
# answers with the count it has while a thread of its own counts again: no search waits on it.
PENDING_TTL_S = 2.0
PENDING_TTL_TIMES = 20
# The status of a project whose file events are not followed (watching off in the settings).
WATCH_OFF: dict[str, Any] = {
    "watching": False,
    "watch_error": None,
    "pending_changes": 0,
    "last_change_at": None,
    "changes_applied": 0,
    "batches_applied": 0,
}  # admin-started sweeps running at once (each holds one connection)
# The outcomes of a sweep that went through every file (partial: some failed, each recorded).
FINISHED = ("ok", "partial")
# What the status takes from the database when another process embeds a project's vectors.
VECTORS_ELSEWHERE = ("vectors_running", "vectors_per_second", "vectors_eta_seconds")

Trigger = str  # "startup" | "schedule" | "admin" | "cli" | "watch" | "config"


@dataclass(frozen=True)
class ActiveRun:
    """A sweep queued or running in this process."""

    run_id: str
    project: str
    trigger: Trigger
    full: bool
    queued_at: datetime
    started_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "trigger": self.trigger,
            "full": self.full,
            "state": "running" if self.started_at else "queued",
            "queued_at": iso(self.queued_at),
            "started_at": iso(self.started_at),
        }


@dataclass(frozen=True)
class RunOutcome:
    """How a sweep of this process ended: "ok", "failed", "skipped" (another held the lock) or
    "stopped" (the server stopping stopped it between batches)."""

    run_id: str
    project: str
    trigger: Trigger
    full: bool
    started_at: datetime
    finished_at: datetime
    outcome: str
    message: str | None = None
    report: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(started_at=iso(self.started_at), finished_at=iso(self.finished_at))
        del data["project"]
        return data


@dataclass(frozen=True)
class Endpoint:
    """What one MCP endpoint serves: a project (`single`), or a group's projects."""

    name: str
    projects: tuple[Project, ...]
    single: bool

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.projects)


@dataclass(frozen=True)
class ConfigChange:
    """What applying a configuration changed: projects added, changed (roots or globs) and
    removed, and the groups added, changed or removed."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.groups)

    @classmethod
    def between(cls, old: Settings, new: Settings) -> ConfigChange:
        before, after = old.projects, new.projects
        groups = set(old.groups) | set(new.groups)
        return cls(
            added=tuple(sorted(set(after) - set(before))),
            changed=tuple(sorted(n for n in set(after) & set(before) if after[n] != before[n])),
            removed=tuple(sorted(set(before) - set(after))),
            groups=tuple(sorted(g for g in groups if old.groups.get(g) != new.groups.get(g))),
        )

    def describe(self) -> str:
        parts = [
            f"{what}: {', '.join(names)}"
            for what, names in (
                ("added", self.added),
                ("changed", self.changed),
                ("removed", self.removed),
                ("groups", self.groups),
            )
            if names
        ]
        return "; ".join(parts) or "nothing changed"


@dataclass(frozen=True)
class ConfigProblem:
    """A projects file that was not applied: why, and when that was first seen."""

    message: str
    seen_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "seen_at": iso(self.seen_at)}


ConfigListener = Callable[[ConfigChange], None]


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


class Service:
    """Everything a request or a job needs, opened once in the app's lifespan."""

    def __init__(self, settings: Settings, database: Database, embedder: Embedder | None) -> None:
        self.settings = settings
        self.db = database
        self.embedder = embedder
        # Vectors of recent queries: a repeated query skips the model.
        self.query_vectors = QueryVectorCache()
        # Each project's keyword statistics, read at most once a minute.
        self.term_stats = TermStatsCache()
        self._lock = threading.Lock()
        # Serialises `apply`, and what the listeners do with each change, in order.
        self._applying = threading.RLock()
        self._listeners: list[ConfigListener] = []
        self.config_problem: ConfigProblem | None = None
        self._active: dict[str, ActiveRun] = {}
        self._last: dict[str, RunOutcome] = {}
        self._stopping = threading.Event()  # set by close(): running sweeps stop
        self._pool = ThreadPoolExecutor(BACKGROUND_SWEEPS, thread_name_prefix="code-rag-sweep")
        # The vectors a sweep left pending, embedded in a thread of their own.
        self.vectors = VectorWorker(database, embedder, self.project)
        # project -> (until when its count of pending vectors is reused, the count)
        self._pending: dict[str, tuple[float, PendingCounts]] = {}
        self._counting: set[str] = set()  # projects whose pending vectors are being counted
        # Set by the scheduler when it runs: the next scheduled sweep of a project.
        self.next_sweep_at: Callable[[str], datetime | None] = lambda _name: None
        # Set by the file watchers when they run: what they say of a project.
        self.watch_state: Callable[[str], dict[str, Any] | None] = lambda _name: None

    # --- the configuration ----------------------------------------------------------------------

    @property
    def projects(self) -> dict[str, Project]:
        """The projects served now (read-only: `apply` replaces the configuration whole)."""
        return self.settings.projects

    @property
    def model_free(self) -> bool:
        """No model (`provider = none`): vectors are off, search ranks by keywords and names."""
        return self.embedder is None

    @property
    def indexing(self) -> bool:
        """False on a read replica: no sweeps, no watchers, no background vectors."""
        return self.settings.indexer.enabled

    def subscribe(self, listener: ConfigListener) -> Callable[[], None]:
        """Call `listener` with every change `apply` makes; returns what unsubscribes it."""
        with self._applying:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._applying:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def apply(self, settings: Settings) -> ConfigChange:
        """Serve `settings` from now on (its projects and groups: the rest is as read at
        start) and return what changed. A removed project answers 404 at once; a sweep of it
        already running finishes, its vectors are dropped from the queue. The scheduler and the
        watchers hear of the change before this returns; a listener that fails is logged and
        does not stop the others."""
        with self._applying:
            current = self.settings
            new = replace(current, projects=dict(settings.projects), groups=dict(settings.groups))
            change = ConfigChange.between(current, new)
            self.settings = new  # one assignment: a request sees the old or the new, whole
            self.config_problem = None
            if not change:
                return change
            log.info("projects file applied: %s", change.describe())
            for name in change.removed:
                self.vectors.forget(name)
                with self._lock:
                    self._pending.pop(name, None)
            for name in change.changed:
                with self._lock:
                    self._pending.pop(name, None)
            for listener in list(self._listeners):
                try:
                    listener(change)
                except Exception:  # a bug: the configuration is applied; say what did not follow
                    log.exception(
                        "applying the change of the projects file (%s)", change.describe()
                    )
            return change

    def config_failed(self, message: str) -> None:
        """The projects file did not parse: keep serving what is served, and show `message`
        (logged once, however often the same problem is seen) until a valid file applies."""
        with self._applying:
            if self.config_problem is not None and self.config_problem.message == message:
                return
            self.config_problem = ConfigProblem(message, now())
        log.error("projects file not applied, the previous projects are still served: %s", message)

    def read_replica(self) -> ReadReplica:
        """The error a sweep asked of a read replica gets: what this server is, and which
        servers index its database (as their connections name them)."""
        try:
            indexers = self.db.indexing_servers()
        except RagError:
            indexers = []
        where = (
            "the server indexing this database: " + ", ".join(indexers)
            if indexers
            else "no indexing server is connected to this database now"
        )
        return ReadReplica(
            "this server is a read replica ([indexer] enabled = false in "
            f"{self.settings.config_path}): it answers searches and never sweeps; ask the "
            f"indexing server (the one with [indexer] enabled = true on the same database) to "
            f"reindex, or run ./bld scan there ({where})"
        )

    # --- projects -----------------------------------------------------------------------------

    def project(self, name: str) -> Project:
        """The configured project `name`; the error names no other project (callers of the MCP
        endpoint may hold a token without being meant to learn what else is indexed)."""
        found = self.projects.get(name)
        if found is None:
            raise ProjectNotFound(
                f"no project named {name!r} is served here: check the last part of the URL "
                "against rag-projects.json"
            )
        return found

    def endpoint(self, name: str) -> Endpoint:
        """What `/rag-mcp/<name>` serves: one project, or a group of them. The error names
        nothing that is served (see `project`)."""
        settings = self.settings  # once: `apply` may replace it meanwhile
        members = settings.members(name)
        if members is None or not all(m in settings.projects for m in members):
            raise ProjectNotFound(
                f"no project or group named {name!r} is served here: check the last part of "
                "the URL against rag-projects.json"
            )
        found = tuple(settings.projects[m] for m in members)
        return Endpoint(name, found, name in settings.projects)

    def select(self, name: str) -> list[Project]:
        """One project, or every project for "all" (the admin endpoint's spelling)."""
        return select_projects(self.settings, name)

    # --- sweeps -------------------------------------------------------------------------------

    def active_run(self, name: str) -> ActiveRun | None:
        with self._lock:
            return self._active.get(name)

    def last_run(self, name: str) -> RunOutcome | None:
        with self._lock:
            return self._last.get(name)

    def _claim(self, name: str, run: ActiveRun) -> ActiveRun | None:
        """Register `run` unless another run of the project is registered; return that one."""
        with self._lock:
            current = self._active.get(name)
            if current is not None and current.run_id != run.run_id:
                return current
            self._active[name] = run
            return None

    def sweep(
        self,
        name: str,
        *,
        full: bool = False,
        trigger: Trigger = "schedule",
        run_id: str | None = None,
        progress: Callable[..., None] | None = None,
    ) -> RunOutcome:
        """Sweep one project now, in the calling thread (never the event loop's).

        Raises `SweepRunning` when this process already sweeps the project; a sweep another
        process holds (the advisory lock) ends as a "skipped" outcome instead. A read replica
        raises `ReadReplica`.
        """
        if not self.indexing:
            raise self.read_replica()
        project = self.project(name)
        run = ActiveRun(run_id or new_run_id(), name, trigger, full, now())
        other = self._claim(name, run)
        if other is not None:
            raise SweepRunning(
                f"a sweep of {name!r} is already running (run {other.run_id}, "
                f"started by {other.trigger}); wait for it to finish"
            )
        run = replace(run, started_at=now())
        with self._lock:
            self._active[name] = run
        assert run.started_at is not None
        outcome, message, report = "ok", None, None
        try:
            log.info("sweep of %s started (%s, run %s)", name, trigger, run.run_id)
            options = sweep_options(self.settings)
            if trigger == "startup":  # rows only: the vectors thread embeds, after every row
                options = replace(options, defer_vectors=True)
            result = sweep_project(
                self.db,
                project,
                self.embedder,
                options,
                full=full,
                progress=progress,
                stop=self._stopping,
            )
            report = result.to_dict()
            self.vectors.queue(name)
        except SweepRunning as exc:
            outcome, message = "skipped", exc.message
        except SweepStopped as exc:
            outcome, message = "stopped", exc.message
            log.info("%s", exc.message)
        except RagError as exc:
            outcome, message = "failed", exc.message
            log.warning("sweep of %s failed: %s", name, exc.message)
        except Exception as exc:  # a bug: keep the service up, keep the traceback in the log
            outcome, message = "failed", f"unexpected {type(exc).__name__}; see the server log"
            log.exception("sweep of %s failed", name)
        finished = RunOutcome(
            run.run_id, name, trigger, full, run.started_at, now(), outcome, message, report
        )
        with self._lock:
            self._last[name] = finished
            if self._active.get(name) is run:
                del self._active[name]
        log.info("sweep of %s ended: %s", name, outcome)
        return finished

    def sweep_quietly(self, name: str, *, trigger: Trigger) -> None:
        """Sweep now unless this process already sweeps the project (that sweep, or the next
        scheduled one, picks the changes up)."""
        try:
            self.sweep(name, trigger=trigger)
        except SweepRunning:
            log.info("sweep of %s (%s) not started: one is running", name, trigger)

    def start_sweeps(
        self, names: Iterable[str], *, full: bool = False, trigger: Trigger = "admin"
    ) -> tuple[str, dict[str, str]]:
        """Queue a sweep of each project in the background; return the run id and, per project,
        "started" or "already_running" (a project already queued or sweeping is left alone)."""
        if not self.indexing:
            raise self.read_replica()
        run_id = new_run_id()
        states: dict[str, str] = {}
        for name in names:
            run = ActiveRun(run_id, name, trigger, full, now())
            if self._claim(name, run) is not None:
                states[name] = "already_running"
                continue
            states[name] = "started"
            self._pool.submit(self._background, name, full, trigger, run_id)
        return run_id, states

    def _background(self, name: str, full: bool, trigger: Trigger, run_id: str) -> None:
        try:
            self.sweep(name, full=full, trigger=trigger, run_id=run_id)
        except RagError as exc:
            log.warning("background sweep of %s not run: %s", name, exc.message)
            with self._lock:
                current = self._active.get(name)
                if current is not None and current.run_id == run_id:
                    del self._active[name]

    # --- reading ------------------------------------------------------------------------------

    def pending_vectors(self, name: str) -> PendingCounts:
        """How many of the project's vectors are pending (with the totals when some are),
        counted at most once every PENDING_TTL_S per project: searches ask on every call.
        Only the first call waits for the count; once the count is older, a call answers with
        it and a thread of its own counts again (at a million pending chunks a count takes
        seconds). A database that fails to say counts as nothing pending (the search it
        serves already has its hits). Model-free, nothing is pending."""
        if self.model_free:
            return PendingCounts()
        with self._lock:
            cached = self._pending.get(name)
            again = cached is not None and time.monotonic() >= cached[0]
            again = again and name not in self._counting
            if again:
                self._counting.add(name)
        if cached is None:
            return self._count_pending(name)
        if again:
            threading.Thread(
                target=self._count_pending, args=(name,), name="code-rag-pending", daemon=True
            ).start()
        return cached[1]

    def _count_pending(self, name: str) -> PendingCounts:
        """Count the project's pending vectors and keep the count (see `pending_vectors`)."""
        at = time.monotonic()
        try:
            with self.db.reading(f"reading the index of {name}") as conn:
                schema = Schema(name)
                found = (
                    store.pending_counts(conn, schema, of_all=True)
                    if store.project_exists(conn, schema)
                    else PendingCounts()
                )
        except RagError as exc:
            log.warning("cannot tell how many vectors of %s are pending: %s", name, exc.message)
            return PendingCounts()
        else:
            took = time.monotonic() - at
            with self._lock:  # kept longer where counting took long: a million pending rows
                self._pending[name] = (at + max(PENDING_TTL_S, PENDING_TTL_TIMES * took), found)
            return found
        finally:
            with self._lock:  # whatever happened, a later call may count again
                self._counting.discard(name)

    def pending_vectors_of(self, names: Iterable[str]) -> PendingCounts:
        """`pending_vectors` of several projects, added up (a group's search)."""
        counts = [self.pending_vectors(name) for name in names]
        return PendingCounts(
            sum(c.chunks for c in counts),
            sum(c.definitions for c in counts),
            sum(c.all_chunks for c in counts),
            sum(c.all_definitions for c in counts),
        )

    def queue_pending_vectors(self) -> None:
        """Queue every project whose index has vectors pending (a previous process stopped
        before they were all in); model-free, none is."""
        if self.model_free:
            return
        waiting: list[str] = []
        for name in self.projects:
            try:
                with self.db.reading(f"reading the index of {name}") as conn:
                    schema = Schema(name)
                    if not store.project_exists(conn, schema):
                        continue
                    pending = store.pending_counts(conn, schema).total
            except RagError as exc:
                log.warning("cannot tell whether %s has vectors pending: %s", name, exc.message)
                continue
            if pending:
                log.info("%s: %d vectors pending; embedding them in the background", name, pending)
                waiting.append(name)
        if waiting:
            self.vectors.queue(*waiting)  # together: the fewest pending goes first

    def warm_up(self) -> int:
        """Read each project's search indexes (the vectors' graphs, then the keyword index)
        into PostgreSQL's buffers, within WARM_SHARE of them, and return the bytes read. After
        a start the buffers are empty: without this the first searches fetch the graphs page
        by page, each taking many times a later one's time. Needs pg_prewarm in the database;
        a failure is logged, never raised (searches work cold)."""
        started = time.perf_counter()
        warmed = 0
        try:
            for name in list(self.projects):
                with self.db.reading(f"warming up the search of {name}", WARM_TIMEOUT_MS) as conn:
                    budget = int(lookup.shared_buffers_bytes(conn) * WARM_SHARE)
                    for oid, _relation, size in lookup.warm_relations(conn, Schema(name)):
                        if warmed + size <= budget:
                            lookup.prewarm(conn, oid)
                            warmed += size
                    conn.rollback()
        except RagError as exc:
            log.warning("warming up the search stopped: %s", exc.message)
        if warmed:
            log.info(
                "search warmed up: %.0f MB of indexes read in %.1f s",
                warmed / 1e6,
                time.perf_counter() - started,
            )
        return warmed

    def unfinished(self, name: str) -> bool:
        """True when the project has no schema yet, its last sweep did not end (never swept,
        killed, stopped, failed), or its vectors are another model's than this server's (an
        upgrade that changed the bundled model, a changed [embedding]): a start sweeps it at
        once, so a first index cut short goes on from where it stopped, and an index of
        another model is embedded again with its progress shown, instead of waiting for the
        schedule while searches ask for a rescan."""
        with self.db.reading(f"reading the index of {name}") as conn:
            schema = Schema(name)
            if not store.project_exists(conn, schema):
                return True
            last = store.last_sweeps(conn, schema, limit=1)
            if not last or last[0].outcome not in FINISHED:
                return True
            recorded = store.get_meta(conn, schema, "embedding")
        return recorded is not None and self._other_model(recorded)

    def _other_model(self, recorded: dict[str, Any]) -> bool:
        """Whether an index recorded as made by `recorded` must be embedded again by this
        server's model (not when the model cannot be asked now: the sweep will say why)."""
        if self.embedder is None:
            return False  # model-free: the kept vectors wait, unused, for their model
        try:
            return needs_reembed(EmbeddingModel.from_dict(recorded), self.embedder.identity)
        except RagError as exc:
            log.warning("cannot tell which model this server's embedder is: %s", exc.message)
            return False

    def index_status(self, name: str) -> ProjectStatus:
        """What the database knows of one project (see `indexer.status`)."""
        project = self.project(name)
        with self.db.reading(f"reading the status of {name}") as conn:
            return project_status(conn, project, model_free=self.model_free)

    def status(self, name: str) -> dict[str, Any]:
        """What `./bld status` shows for one project, plus what only the server knows:
        whether a sweep runs now, how the last one of this process ended, the next one."""
        # This process's runs are read before the database: a run seen ended here has its
        # report and rows in what is read next, so the two never disagree (an ended run beside
        # the index as it was before that run).
        active = self.active_run(name)
        last = self.last_run(name)
        data = self.index_status(name).to_dict()
        running_here = active is not None and active.started_at is not None
        data.update(
            # The database sees sweeps of every process (their advisory locks), we see ours.
            sweep_running=bool(data.get("sweep_running")) or running_here,
            current_run=None if active is None else active.to_dict(),
            last_run=None if last is None else last.to_dict(),
            next_sweep_at=iso(self.next_sweep_at(name)),
            sweep_interval_minutes=self.settings.indexer.sweep_interval_minutes,
            indexer=self.indexing,
        )
        data.update(self.watch_state(name) or WATCH_OFF)
        vectors = self.vectors.state(name)
        if data.get("vectors_running") and not vectors["vectors_running"]:
            # Another process embeds them (`./bld scan`): the rate it records.
            vectors.update({k: data[k] for k in VECTORS_ELSEWHERE})
        data.update(vectors)
        return data

    def close(self) -> None:
        """Drop queued sweeps; a running one stops before its next batch (what it committed
        stays, and the next sweep goes on from there); the vectors in flight are written, the
        rest stays pending for the next start."""
        self._stopping.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.vectors.close()
