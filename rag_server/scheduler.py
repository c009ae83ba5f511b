"""The sweep schedule: every project every `sweep_interval_minutes`, never overlapping itself.

APScheduler's background scheduler runs the jobs in its own threads, so sweeps never block the
event loop. One interval job per project (`max_instances=1`, missed runs coalesced); a project
never swept before (no schema, or no finished sweep) has its first run at start-up, the others
one interval after it. A scheduled run that finds the project sweeping already (an admin
reindex, or `./bld scan` holding the advisory lock) is skipped, not queued.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from indexer.errors import RagError, SweepRunning
from rag_server.service import Service, now

log = logging.getLogger("code_rag.scheduler")

JOB_PREFIX = "sweep:"
MAX_PARALLEL_SWEEPS = 2


def _run_scheduled(service: Service, name: str, trigger: str) -> None:
    try:
        service.sweep(name, trigger=trigger)
    except SweepRunning as exc:
        log.info("scheduled sweep of %s skipped: %s", name, exc.message)
    except RagError as exc:
        log.warning("scheduled sweep of %s not run: %s", name, exc.message)


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

    def _first_run(self, name: str) -> tuple[datetime, str]:
        try:
            if self.service.never_swept(name):
                return now(), "startup"
        except RagError as exc:
            log.warning("cannot tell whether %s was swept (%s); sweeping now", name, exc.message)
            return now(), "startup"
        return now() + self.interval, "schedule"

    def start(self) -> None:
        for name in self.service.projects:
            first, trigger = self._first_run(name)
            if trigger == "startup":
                # The first run is a one-off so that it reports "startup"; the interval job
                # takes over one interval later.
                self.scheduler.add_job(
                    _run_scheduled,
                    "date",
                    run_date=first,
                    args=(self.service, name, "startup"),
                    id=f"startup:{name}",
                )
            self.scheduler.add_job(
                _run_scheduled,
                "interval",
                seconds=self.interval.total_seconds(),
                next_run_time=first + (self.interval if trigger == "startup" else timedelta()),
                args=(self.service, name, "schedule"),
                id=JOB_PREFIX + name,
            )
        self.service.next_sweep_at = self.next_run
        self.scheduler.start()

    def next_run(self, name: str) -> datetime | None:
        times = [
            job.next_run_time
            for job in self.scheduler.get_jobs()
            if job.id in (JOB_PREFIX + name, f"startup:{name}") and job.next_run_time
        ]
        return min(times) if times else None

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
