"""A project's status as read from the database: what `./bld status`, the admin `status` call
and the `index_status` tool all show. Works whether or not a server runs; what only a running
server knows (next scheduled sweep) is added by the server. Model-free (`provider = none`), the
status says so: `embedding` is `{"provider": "none"}`, `vectors` is "off", nothing is pending,
and the model of any vectors kept from before is `kept_embedding`. The processes filling the
project's vectors (`code-rag worker` on any machine, a server's phase, a scan) are listed while
they are seen (`workers`: a heartbeat in the last WORKER_LIVE_S seconds), with the rates of
those embedding added up (`workers_per_second`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from chunkers import CHUNKER_VERSION
from indexer import clock
from indexer.clock import iso
from indexer.db import Conn, PendingCounts, Schema, WorkerRow, store
from indexer.embed import PROVIDER_NONE
from indexer.project import ROOT_EMPTY, Project, Root, root_problem

MAX_FAILURES = 20
MAX_WARNINGS = 20

# A long phase (a sweep's rows, the vectors after them) records how far it is in the project's
# `rag_meta` under these keys, at most every PROGRESS_EVERY seconds, for whoever asks the
# status meanwhile (another process: `./bld status`, the `index_status` tool).
ROWS_PROGRESS = "rows_progress"
VECTORS_PROGRESS = "vectors_progress"
PROGRESS_EVERY = 2.0
# A process filling vectors beats after its batches (at most every PROGRESS_EVERY seconds)
# and, as an idle worker, at each poll: one not seen for this long is left out of the status
# (killed, its machine gone, or stuck on a batch this slow).
WORKER_LIVE_S = 60.0


def progress_record(done: int, total: int, seconds: float, **extra: Any) -> dict[str, Any]:
    """How far a phase is: `done` of `total` (files, or vectors) after `seconds`, its rate so
    far and the seconds left at that rate (None until something is done)."""
    rate = done / seconds if seconds > 0 else 0.0
    left = max(total - done, 0)
    return {
        "done": done,
        "total": total,
        "seconds": round(seconds, 1),
        "per_second": round(rate, 2),
        "eta_seconds": round(left / rate) if done and rate > 0 else None,
        "updated_at": clock.now_iso(),
        **extra,
    }


@dataclass(frozen=True, slots=True)
class RepoStatus:
    repo: str
    path: str
    files: int
    chunks: int
    available: bool = True  # False: missing, unreadable, or empty while its files are indexed
    problem: str | None = None  # why it is unavailable; its rows are kept meanwhile


@dataclass(frozen=True, slots=True)
class SweepSummary:
    started_at: str
    finished_at: str | None
    seconds: float | None
    outcome: str
    error: str | None
    files_changed: int
    files_deleted: int
    files_failed: int
    chunks_written: int
    roots_unavailable: tuple[dict[str, str], ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """A process filling the project's vectors, as the status lists it."""

    host: str
    pid: int
    role: str  # "worker" (`code-rag worker`) or "indexer" (a server's phase, `./bld scan`)
    model: str
    state: str  # "embedding" or "idle"
    started_at: str | None
    last_seen: str | None
    written: int  # vectors written in this project since it started
    embedded: int  # texts its model embedded for them
    per_second: float  # vectors written per second in its current run (0 when idle)


@dataclass(frozen=True, slots=True)
class ProjectStatus:
    project: str
    indexed: bool  # False: no schema yet (never swept)
    files: int = 0
    chunks: int = 0
    failed_files: int = 0
    repos: tuple[RepoStatus, ...] = ()
    last_sweep_at: str | None = None  # when the last sweep that finished, finished
    last_sweep: SweepSummary | None = None
    sweep_running: bool = False
    failures: tuple[dict[str, Any], ...] = ()
    embedding: dict[str, Any] | None = None
    chunker_version: int | None = None
    stale_chunker: bool = False
    # Written without their vectors, which follow in the background (`sweep.vectors`):
    # keyword, symbol and exact-text search see them, the vector side not yet.
    vectors_pending: int = 0
    # The share of the index's vectors that are in; None when vectors are off (model-free).
    vectors_ready: float | None = 1.0
    # "on": search ranks by meaning too; "off": model-free, keyword and names only.
    vectors: str = "on"
    # Model-free: the model whose vectors the index keeps from before (unused until that
    # model is configured again), or None.
    kept_embedding: dict[str, Any] | None = None
    # While a sweep runs: its rows' progress (`progress_record`: files done of total, rate,
    # seconds left), as it last recorded it.
    rows_progress: dict[str, Any] | None = None
    # The bytes the index takes on disk (its tables, their indexes and TOAST data).
    disk_bytes: int = 0
    # The processes filling the vectors, seen in the last WORKER_LIVE_S seconds, and the
    # vectors per second of those embedding now, added up (None: none is).
    workers: tuple[WorkerStatus, ...] = ()
    workers_per_second: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(data.pop("extra"))
        return data


def _sweep_summary(record: store.SweepRecord) -> SweepSummary:
    report = record.report or {}
    seconds = None
    if record.finished_at is not None:
        seconds = round((record.finished_at - record.started_at).total_seconds(), 2)
    return SweepSummary(
        started_at=iso(record.started_at) or "",
        finished_at=iso(record.finished_at),
        seconds=seconds,
        outcome=record.outcome,
        error=report.get("error"),
        files_changed=int(report.get("files_changed", 0)),
        files_deleted=int(report.get("files_deleted", 0)),
        files_failed=int(report.get("files_failed", 0)),
        chunks_written=int(report.get("chunks_written", 0)),
        roots_unavailable=tuple(report.get("roots_unavailable") or ()),
        warnings=tuple((report.get("warnings") or ())[:MAX_WARNINGS]),
    )


def repo_status(root: Root, files: int, chunks: int) -> RepoStatus:
    """A root's counts, and whether it can be walked now (see `indexer.sweep.walk.root_problem`)."""
    problem = root_problem(root.path)
    if problem == ROOT_EMPTY and not files:
        problem = None  # nothing indexed from it: an empty folder is just empty
    return RepoStatus(root.name, str(root.path), files, chunks, problem is None, problem)


MODEL_FREE: dict[str, Any] = {"provider": PROVIDER_NONE}


def project_status(conn: Conn, project: Project, *, model_free: bool = False) -> ProjectStatus:
    """Everything the database knows about one configured project; `model_free`: as served
    with no model (vectors off)."""
    schema = Schema(project.name)
    running = store.sweep_running(conn, schema)
    off: dict[str, Any] = (
        {"embedding": MODEL_FREE, "vectors": "off", "vectors_ready": None} if model_free else {}
    )
    if not store.project_exists(conn, schema):
        repos = tuple(repo_status(r, 0, 0) for r in project.roots)
        return ProjectStatus(project.name, indexed=False, repos=repos, sweep_running=running, **off)
    summary = store.summary(conn, schema)
    counts = {c.repo: c for c in store.repo_counts(conn, schema)}
    repos = tuple(
        repo_status(
            r,
            counts[r.name].files if r.name in counts else 0,
            counts[r.name].chunks if r.name in counts else 0,
        )
        for r in project.roots
    )
    records = store.last_sweeps(conn, schema, limit=1)
    failures = tuple(
        {"repo": f.repo, "path": f.path, "error": f.error, "since": iso(f.error_at)}
        for f in store.failures(conn, schema, limit=MAX_FAILURES)
    )
    meta = store.all_meta(conn, schema)
    chunker_version = meta.get("chunker_version")
    workers = tuple(_worker_status(w) for w in store.live_workers(conn, schema, WORKER_LIVE_S))
    combined = round(sum(w.per_second for w in workers if w.state == "embedding"), 2) or None
    if model_free:
        pending = PendingCounts()  # nothing waits: no vector is wanted
        if meta.get("embedding") and store.has_vectors(conn, schema):
            off["kept_embedding"] = meta["embedding"]
    else:
        pending = store.pending_counts(conn, schema, of_all=True)
        off = {"embedding": meta.get("embedding"), "vectors_ready": pending.ready_share}
        if pending.total and store.vectors_running(conn, schema):
            record = meta.get(VECTORS_PROGRESS)
            off["extra"] = _vectors_running(record, pending.total, combined)
    return ProjectStatus(
        project=project.name,
        indexed=True,
        files=summary.files,
        chunks=summary.chunks,
        failed_files=summary.failed_files,
        repos=repos,
        last_sweep_at=iso(summary.last_sweep_at),
        last_sweep=_sweep_summary(records[0]) if records else None,
        sweep_running=running,
        failures=failures,
        chunker_version=chunker_version,
        stale_chunker=chunker_version is not None and chunker_version != CHUNKER_VERSION,
        vectors_pending=pending.total,
        rows_progress=meta.get(ROWS_PROGRESS) if running else None,
        disk_bytes=store.disk_bytes(conn, schema),
        workers=workers,
        workers_per_second=combined,
        **off,
    )


def _worker_status(row: WorkerRow) -> WorkerStatus:
    return WorkerStatus(
        host=row.host,
        pid=row.pid,
        role=row.role,
        model=row.model,
        state=row.state,
        started_at=iso(row.started_at),
        last_seen=iso(row.last_seen),
        written=row.written,
        embedded=row.embedded,
        per_second=round(float(row.per_second), 2),
    )


def _vectors_running(
    record: dict[str, Any] | None, pending: int, combined: float | None = None
) -> dict[str, Any]:
    """What the status says of vectors other processes are embedding now: their rate (the
    live processes' added up; else as the last of them recorded it, `VECTORS_PROGRESS`), and
    the time left for what is pending at that rate."""
    rate = combined or (record or {}).get("per_second") or 0.0
    return {
        "vectors_running": True,
        "vectors_per_second": rate or None,
        "vectors_eta_seconds": round(pending / rate) if rate else None,
    }
