"""File events: every root of every project watched, a saved file indexed in about a second.

One thread per project runs `watchfiles.watch` over its roots (Rust `notify` underneath),
debounced, so a burst of saves, a `git checkout` or an `rm -rf` arrive as one batch. Events are
thinned here by folder name (`node_modules`, `.git`, … as the walk skips them) and the server's
own data folder is dropped whole (a root may hold it, as the demo's checkout does: the database's
writes there are no change of the project, and never make a batch), then judged fully
when applied — gitignore, globs, secrets, size, binary — by `indexer.sweep.run.apply_changes`, the
sweep's own per-file path: same lock, savepoints and embedding cache. A change of git `HEAD`
(branch switch, pull) is followed by a whole sweep of the project. When watching cannot work
(a root that vanished, the inotify watch limit, a filesystem without events) the reason is
logged once and shown by the status; the scheduled sweeps carry on regardless. The watchers
follow the projects file (`Service.apply`): a project added is watched, a changed one is watched
anew over its new roots (the scheduler sweeps it once at once), a removed one is no longer.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from indexer.clock import iso, now
from indexer.errors import RagError
from indexer.project import Project
from indexer.sweep import DEFAULT_SKIP_DIRS, apply_changes
from rag_server.config import sweep_options

if TYPE_CHECKING:
    from rag_server.service import ConfigChange, Service

log = logging.getLogger("code_rag.watch")

# Folder names whose events are dropped at once (the walk skips them; globs are left to it).
SKIPPED_NAMES = frozenset(name for name in DEFAULT_SKIP_DIRS if "*" not in name)
STEP_MS = 50  # quiet time that ends a batch before the debounce does
# How often the watch loop looks up: its first look-up means the roots are watched, and a
# stop is noticed within this time.
TICK_MS = 500


@dataclass
class WatchState:
    """What the status shows of one project's watcher."""

    watching: bool = False
    error: str | None = None
    pending_changes: int = 0
    last_change_at: datetime | None = None
    changes_applied: int = 0
    batches_applied: int = 0
    last_batch: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "watching": self.watching,
            "watch_error": self.error,
            "pending_changes": self.pending_changes,
            "last_change_at": iso(self.last_change_at),
            "changes_applied": self.changes_applied,
            "batches_applied": self.batches_applied,
        }


class ProjectWatcher:
    """Watches one project's roots in a thread of its own until `stop()`."""

    def __init__(
        self, service: Service, project: Project, debounce_ms: int, data_dir: Path
    ) -> None:
        self.service = service
        self.project = project
        self.debounce_ms = debounce_ms
        # The server's data folder (the embedded database, the token): never a change.
        self.data_dir = str(data_dir.resolve())
        self.state = WatchState()
        self.roots = sorted(
            ((root.path.resolve(), root.name) for root in project.roots),
            key=lambda pair: len(str(pair[0])),
            reverse=True,  # the deepest root owns a path inside a nested one
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{project.name}", daemon=True)

    def start(self) -> ProjectWatcher:
        self._thread.start()
        return self

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        self.request_stop()
        self._thread.join(timeout)

    # --- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *(path for path, _ in self.roots),
                watch_filter=self._keep,
                debounce=self.debounce_ms,
                step=STEP_MS,
                stop_event=self._stop,
                rust_timeout=TICK_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                if not self.state.watching:
                    self.state.watching, self.state.error = True, None
                    log.info("watching %s (%d roots)", self.project.name, len(self.roots))
                if changes:
                    self._apply(changes)
        except Exception as exc:  # the watch itself failed: say so once, the schedule goes on
            self._failed(f"{type(exc).__name__}: {exc}")
            return
        self.state.watching = False

    def _failed(self, reason: str) -> None:
        self.state.watching = False
        self.state.error = (
            f"file events are not followed ({reason}); the scheduled sweeps keep the index "
            "fresh: check the roots exist, or raise fs.inotify.max_user_watches"
        )
        log.warning("%s: %s", self.project.name, self.state.error)

    def _keep(self, _change: Any, path: str) -> bool:
        if path == self.data_dir or path.startswith(self.data_dir + os.sep):
            return False
        parts = PurePosixPath(path).parts
        if ".git" in parts:  # only what says that the checked-out tree moved
            inside = parts[parts.index(".git") + 1 :]
            return inside[:1] in (("HEAD",), ("packed-refs",)) or inside[:2] == ("refs", "heads")
        return not SKIPPED_NAMES.intersection(parts)

    # --- applying a batch ----------------------------------------------------------------------

    def _apply(self, changes: Iterable[tuple[Any, str]]) -> None:
        changed, head_moved = self._by_root(path for _, path in changes)
        count = sum(len(paths) for paths in changed.values())
        self.state.pending_changes += count
        try:
            if changed:
                report = apply_changes(
                    self.service.db,
                    self.project,
                    self.service.embedder,
                    changed,
                    sweep_options(self.service.settings),
                )
                if report is None:  # never swept, or another model: a whole sweep first
                    head_moved = True
                else:
                    self.state.changes_applied += count
                    self.state.batches_applied += 1
                    self.state.last_batch = report.to_dict()
                    self.state.last_change_at = now()
            if head_moved:
                self.service.sweep_quietly(self.project.name, trigger="watch")
                self.state.last_change_at = now()
        except RagError as exc:
            log.warning(
                "%s: changes not applied (%s); the next sweep retries", self.project.name, exc
            )
        except Exception:  # a bug: keep watching; the scheduled sweep repairs the index
            log.exception("%s: applying file changes failed", self.project.name)
        finally:
            self.state.pending_changes -= count

    def _by_root(self, paths: Iterable[str]) -> tuple[dict[str, set[str]], bool]:
        """Changed paths grouped by root (relative, with forward slashes); whether HEAD moved."""
        changed: dict[str, set[str]] = {}
        head_moved = False
        for raw in paths:
            path = Path(raw)
            for base, name in self.roots:
                if not path.is_relative_to(base):
                    continue
                rel = path.relative_to(base).as_posix()
                if rel.split("/", 1)[0] == ".git":
                    head_moved = True
                elif rel != ".":
                    changed.setdefault(name, set()).add(rel)
                break
        return changed, head_moved


def _stop_all(watchers: Iterable[ProjectWatcher]) -> None:
    watchers = list(watchers)
    for watcher in watchers:  # all at once, then wait for each
        watcher.request_stop()
    for watcher in watchers:
        watcher.stop()


class Watchers:
    """The watchers of every project of a service; started and stopped with the app, and
    changed with the projects file."""

    def __init__(self, service: Service, debounce_ms: int, data_dir: Path) -> None:
        self.service = service
        self.debounce_ms = debounce_ms
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self.by_project = {
            name: ProjectWatcher(service, project, debounce_ms, data_dir)
            for name, project in service.projects.items()
        }
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> Watchers:
        for watcher in self.by_project.values():
            watcher.start()
        self._unsubscribe = self.service.subscribe(self.apply)
        return self

    def apply(self, change: ConfigChange) -> None:
        """Follow a change of the projects file (called by `Service.apply`): the old watcher of
        a changed project stops before its new one starts, so no event is applied twice."""
        projects = self.service.projects
        with self._lock:
            old = [
                self.by_project.pop(name)
                for name in (*change.removed, *change.changed)
                if name in self.by_project
            ]
        _stop_all(old)
        for name in (*change.added, *change.changed):
            project = projects.get(name)
            if project is None:
                continue
            watcher = ProjectWatcher(self.service, project, self.debounce_ms, self.data_dir)
            watcher.start()
            with self._lock:
                self.by_project[name] = watcher

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        with self._lock:
            watchers = list(self.by_project.values())
        _stop_all(watchers)

    def status(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            watcher = self.by_project.get(name)
        return None if watcher is None else watcher.state.to_dict()
