"""`code-rag worker`: a process that fills the pending vectors of one project, several or all,
beside the indexer, on this machine or another one pointed at the same PostgreSQL.

It claims its batches as every process filling vectors does (`indexer.sweep.embed_pending`:
`FOR UPDATE SKIP LOCKED` in a transaction held while the batch is embedded and written), so
any number of workers, the server's own phase and `./bld scan` fill one project together, a
worker killed mid-batch loses that batch's transaction only, and no vector is written twice.
It needs no projects file and no source tree: the texts are read from the database. Each
round lists its projects (`all`: every project schema in the database, so a project indexed
later is taken up), checks the model each one records against its own embedder, fills the
pending vectors of those it may, fewest pending first, and, with nothing pending, polls every
`poll_s` seconds, its row in each project's list saying it is idle. It stops at `stop` (after
the batch in flight) or, with `once`, when nothing is left pending.

A worker fills only what its model may fill: a project indexed with another model refuses it
(`ModelMismatch`, saying which model to configure; alone, the worker stops; among several, the
project is skipped, said once, and looked at again each round, in case it is re-embedded with
this model), and a project with no model recorded (written model-free) is skipped until a
sweep or a server with a model takes it up, which records the model: a worker never chooses a
project's model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from indexer.db import Database, Schema, store
from indexer.embed import Embedder, EmbeddingModel, needs_reembed
from indexer.errors import ModelMismatch, ProjectNotFound, RagError
from indexer.project import Project
from indexer.sweep import (
    VECTOR_BATCH,
    Participant,
    VectorProgressCallback,
    VectorReport,
    embed_pending,
    pending_order,
)

log = logging.getLogger("code_rag.worker")

ALL = "all"
# How often a worker with nothing to do looks again.
POLL_S = 5.0


@dataclass
class WorkerSummary:
    """What a worker did in all: vectors written (embedded or reused), texts its model
    embedded, the runs it made and the projects it filled."""

    written: int = 0
    embedded: int = 0
    runs: int = 0
    projects: set[str] = field(default_factory=set)


def refusal(project: str, recorded: EmbeddingModel, identity: EmbeddingModel) -> str:
    """What a person reads when a project's model is not this worker's: which model the
    project has, which one this worker has, and the two ways out."""
    theirs, ours = recorded.describe(), identity.describe()
    if theirs == ours:  # the same model, with another document prefix
        theirs += f", document prefix {recorded.document_prefix!r}"
        ours += f", document prefix {identity.document_prefix!r}"
    setting = f"provider = {recorded.provider}, model = {recorded.model}"
    if recorded.document_tokens != identity.document_tokens:
        setting += f", document_tokens = {recorded.document_tokens}"
    if recorded.chunk_vectors != identity.chunk_vectors:
        setting += f", chunk_vectors = {recorded.chunk_vectors}"
    return (
        f"worker: project {project} is indexed with {theirs}; this worker's embedder is "
        f"{ours}: configure [embedding] {setting} in this machine's application.ini, or "
        f"re-embed the project with this model (`code-rag scan {project} --full` where it is "
        "indexed)"
    )


class Worker:
    """One worker process's loop (see the module docstring); `say` gets the lines a person
    reads (what it fills, what it refuses and why), `on_run` each project's run, `progress`
    each batch's."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        targets: Sequence[str],
        *,
        batch: int | None = None,
        poll_s: float = POLL_S,
        once: bool = False,
        stop: threading.Event | None = None,
        say: Callable[[str], None] = log.info,
        on_run: Callable[[VectorReport], None] | None = None,
        progress: VectorProgressCallback | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.every = list(targets) == [ALL]
        self.names = [] if self.every else list(dict.fromkeys(targets))
        self.batch = batch or VECTOR_BATCH
        self.poll_s = poll_s
        self.once = once
        self.stop = stop or threading.Event()
        self.say = say
        self.on_run = on_run
        self.progress = progress
        self.participant = Participant.worker()
        self.summary = WorkerSummary()
        self._noted: dict[str, str] = {}  # project -> what was last said of it
        self._migrated: set[str] = set()  # projects whose schema this worker brought up to date
        self._listed: set[str] = set()  # projects where this worker has its row

    def run(self) -> WorkerSummary:
        """Fill vectors until stopped (or, `once`, until nothing is left pending); raises
        `ModelMismatch` when every project it serves refuses its model, `ProjectNotFound` for a
        named project with no index, and with `once` the error of a failed run."""
        identity = self.embedder.identity  # an embedder that is not there fails here, at once
        try:
            while not self.stop.is_set():
                fillable = self._fillable(identity)
                written, left = self._round(fillable)
                if self.once and not left:
                    break
                if not written:
                    self.stop.wait(self.poll_s)
        finally:
            self._leave()
        return self.summary

    def _projects(self) -> list[str]:
        with self.db.connection("listing the projects") as conn:
            found = store.list_projects(conn)
        if self.every:
            return found
        missing = [name for name in self.names if name not in found]
        if missing:
            raise ProjectNotFound(
                f"worker: project {missing[0]} has no index in this database: index it first "
                f"(`code-rag scan {missing[0]}` on the machine whose projects file has it), or "
                "point [database] dsn at the database that holds it"
            )
        return self.names

    def _fillable(self, identity: EmbeddingModel) -> list[str]:
        """The projects this worker may fill now, each brought up to this release's schema;
        says once what it refuses or skips, and why."""
        names = self._projects()
        fillable: list[str] = []
        refused: list[str] = []
        with self.db.connection("reading the projects' models") as conn:
            for name in names:
                schema = Schema(name)
                if name not in self._migrated:
                    try:
                        store.ensure_project(conn, schema, create=False)
                    except ProjectNotFound:
                        if self.every:  # dropped since it was listed
                            continue
                        raise
                    self._migrated.add(name)
                raw = store.get_meta(conn, schema, "embedding")
                conn.rollback()
                if raw is None:
                    self._note(
                        name,
                        f"worker: skipping {name}: its index records no model yet (written "
                        "model-free); a worker fills only a project whose model is recorded",
                    )
                    continue
                recorded = EmbeddingModel.from_dict(raw)
                if needs_reembed(recorded, identity):
                    refused.append(refusal(name, recorded, identity))
                    self._note(name, refused[-1])
                    continue
                self._note(name, f"worker: filling {name}")
                fillable.append(name)
        if refused and len(refused) == len(names):
            raise ModelMismatch(refused[0] if len(refused) == 1 else "\n".join(refused))
        if not names:
            self._note("", "worker: no project in this database yet; waiting for one")
        return fillable

    def _round(self, fillable: list[str]) -> tuple[int, int]:
        """Fill the pending vectors of `fillable`, fewest pending first; returns the vectors
        written and what is still pending (others' batches in flight included)."""
        written = 0
        for work in pending_order(self.db, fillable):
            if self.stop.is_set():
                break
            if work.pending == 0:
                continue
            report = embed_pending(
                self.db,
                Project(work.project, ()),
                self.embedder,
                batch=self.batch,
                progress=self.progress,
                stop=self.stop,
                participant=self.participant,
                adopt=False,
                wait=False,
            )
            self._listed.add(work.project)
            self.summary.runs += 1
            self.summary.written += report.written
            self.summary.embedded += report.chunks_embedded + report.definitions_embedded
            if report.written:
                self.summary.projects.add(work.project)
            written += report.written
            if self.on_run is not None:
                self.on_run(report)
            if report.outcome == "failed":
                if self.once:
                    raise RagError(f"worker: {work.project}: {report.error}")
                # Said once, not at every poll while it lasts (an embedder away).
                self._note(f"{work.project} run", f"worker: {work.project}: {report.error}")
            else:
                self._noted.pop(f"{work.project} run", None)
        self._beat_idle(fillable)
        left = sum(w.pending or 0 for w in pending_order(self.db, fillable))
        return written, left

    def _beat_idle(self, names: list[str]) -> None:
        """Say in each project's list that this worker is alive and waiting for work."""
        beat = self.participant.idle(self.embedder.identity.describe())
        try:
            with self.db.connection("recording this worker as idle") as conn:
                for name in names:
                    if store.has_worker_table(conn, Schema(name)):
                        store.worker_beat(conn, Schema(name), beat)
                        self._listed.add(name)
                    conn.commit()
        except RagError as exc:  # the next round tries again; the status only misses a beat
            log.warning("worker: recording a heartbeat failed: %s", exc.message)

    def _leave(self) -> None:
        """Take this worker's row out of each project's list, on the way out."""
        if not self._listed:
            return
        try:
            with self.db.connection("leaving the projects' lists of workers") as conn:
                for name in sorted(self._listed):
                    if store.has_worker_table(conn, Schema(name)):
                        store.worker_leave(conn, Schema(name), self.participant.id)
                    conn.commit()
        except RagError as exc:
            log.warning("worker: leaving the lists of workers failed: %s", exc.message)

    def _note(self, project: str, line: str) -> None:
        """Say `line` of `project` unless it was the last thing said of it."""
        if self._noted.get(project) != line:
            self._noted[project] = line
            self.say(line)
