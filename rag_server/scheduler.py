"""The sweep schedule: every project every `sweep_interval_minutes`, never overlapping itself.

APScheduler's background scheduler runs the jobs in its own threads, so sweeps never block the
event loop. One interval job per project (`max_instances=1`, missed runs coalesced); a project
never swept before, or whose last sweep did not end (killed, stopped, failed), has its first
run at start-up, the others one interval after it; the first runs of a start write rows only,
and the background vectors wait for all of them (`VectorWorker.hold`): every project's rows
first, then the vectors. A scheduled run that finds the project sweeping already (an admin
reindex, or `code-rag scan` holding the advisory lock) is skipped, not queued. The jobs follow
the projects file (`Service.apply`): a project added is planned as at start-up, a project
changed is swept at once (its roots or globs are new), a project removed loses its jobs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler

from indexer.errors import RagError, SweepRunning
from rag_server.service import ConfigChange, Service, now

log = logging.getLogger("code_rag.scheduler")

JOB_PREFIX = "sweep:"
# One-off runs beside the interval job: a first sweep, and the sweep of a changed project.
ONE_OFF_PREFIXES = ("startup:", "config:")
MAX_PARALLEL_SWEEPS = 2
# A changed project whose sweep is running (over its old roots) is swept again this much later.
CONFIG_RETRY_S = 5


def _run_scheduled(service: Service, name: str, trigger: str) -> None:
    try:
        service.sweep(name, trigger=trigger)
    except SweepRunning as exc:
        log.info("scheduled sweep of %s skipped: %s", name, exc.message)
    except RagError as exc:
        log.warning("scheduled sweep of %s not run: %s", name, exc.message)
    finally:
        if trigger == "startup":  # its rows are in (or will not come): the vectors may go on
            service.vectors.release(name)


class SweepScheduler:
    """Owns the APScheduler instance; `start()` plans the jobs, `shutdown()` stops them."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.interval = timedelta(minutes=service.settings.indexer.sweep_interval_minutes)
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(MAX_PARALLEL_SWEEPS)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone="UTC",
        )
        self._unsubscribe: Callable[[], None] | None = None

    def _first_run(self, name: str) -> tuple[datetime, str]:
        try:
            if self.service.unfinished(name):
                return now(), "startup"
        except RagError as exc:
            log.warning("cannot tell whether %s was swept (%s); sweeping now", name, exc.message)
            return now(), "startup"
        return now() + self.interval, "schedule"

    def _plan(self, name: str, first_trigger: str = "startup") -> None:
        """The interval job of a project, and its first run at once when its last sweep did
        not end, or there was none (reported as `first_trigger`: "startup", or "config" for a
        project just added)."""
        first, trigger = self._first_run(name)
        if trigger == "startup":
            # The first run is a one-off so that it reports how it came; the interval job
            # takes over one interval later.
            if first_trigger == "startup":  # no vectors before the rows of every first run
                self.service.vectors.hold(name)
            self._once(name, first_trigger, first)
        self.scheduler.add_job(
            _run_scheduled,
            "interval",
            seconds=self.interval.total_seconds(),
            next_run_time=first + (self.interval if trigger == "startup" else timedelta()),
            args=(self.service, name, "schedule"),
            id=JOB_PREFIX + name,
            replace_existing=True,
        )

    def _once(self, name: str, trigger: str, when: datetime) -> None:
        self.scheduler.add_job(
            _run_scheduled if trigger == "startup" else self._sweep_changed,
            "date",
            run_date=when,
            args=(self.service, name, trigger) if trigger == "startup" else (name,),
            id=f"{trigger}:{name}",
            replace_existing=True,
        )

    def _sweep_changed(self, name: str) -> None:
        """Sweep a project just added, or whose roots or globs changed; a sweep of it already
        running reads the old ones, so this one waits for it rather than being skipped."""
        try:
            self.service.sweep(name, trigger="config")
        except SweepRunning:
            log.info("%s changed while it is swept: sweeping it again shortly", name)
            self._once(name, "config", now() + timedelta(seconds=CONFIG_RETRY_S))
        except RagError as exc:  # removed meanwhile, or the database is away
            log.warning("sweep of the changed project %s not run: %s", name, exc.message)

    def start(self) -> None:
        for name in self.service.projects:
            self._plan(name)
        self.service.next_sweep_at = self.next_run
        self._unsubscribe = self.service.subscribe(self.apply)
        self.scheduler.start()

    def apply(self, change: ConfigChange) -> None:
        """Follow a change of the projects file (called by `Service.apply`)."""
        for name in change.removed:
            for job_id in (JOB_PREFIX + name, *(prefix + name for prefix in ONE_OFF_PREFIXES)):
                with contextlib.suppress(JobLookupError):
                    self.scheduler.remove_job(job_id)
        for name in change.added:
            self._plan(name, "config")
        for name in change.changed:
            self._once(name, "config", now())

    def next_run(self, name: str) -> datetime | None:
        ids = (JOB_PREFIX + name, *(prefix + name for prefix in ONE_OFF_PREFIXES))
        times = [
            job.next_run_time
            for job in self.scheduler.get_jobs()
            if job.id in ids and job.next_run_time
        ]
        return min(times) if times else None

    def shutdown(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
