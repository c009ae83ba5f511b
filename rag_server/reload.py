"""The projects file, followed while serving: an edit of rag-projects.json applies, no restart.

A thread reads the file every `POLL_S` (a few kilobytes) and compares its digest with the one it
last acted on. New content is acted on once it has stayed the same for one poll, so an editor
that truncates then writes, or writes a copy and renames it over the file, is never caught
half-way. Reading the file itself rather than following events on its folder works whatever the
editor does, and costs nothing when that folder is also a root whose files change all day.
Content that parses goes to `Service.apply`; content that does not (`ConfigError`: invalid JSON,
a root that is not there, an unknown key, the file gone) goes to `Service.config_failed`: the
previous configuration stays served and the admin status shows the problem until a valid file
replaces it. Only the projects file is followed; application.ini is read at start.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from pathlib import Path

from indexer.errors import ConfigError
from rag_server.config import reread_projects
from rag_server.service import Service

log = logging.getLogger("code_rag.reload")

POLL_S = 1.0


def _digest(path: Path) -> str | None:
    """What the file holds now, as a digest; None when there is no file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:  # unreadable now: acting on it says why (`read_projects`)
        return f"unreadable: {exc.strerror}"


class ProjectsFile:
    """Follows `service.settings.projects_path` in a thread of its own until `stop()`."""

    def __init__(self, service: Service, poll_s: float = POLL_S) -> None:
        self.service = service
        self.path = service.settings.projects_path
        self.poll_s = poll_s
        self.polls = 0  # polls done: a test can wait for some to pass
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="code-rag-projects", daemon=True)

    def start(self) -> ProjectsFile:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        acted = _digest(self.path)
        if acted is not None:
            # The settings were read a moment ago (for `code-rag up`, before its sweeps): an edit
            # made since then applies now; the same content changes nothing.
            self._act()
        pending = acted
        while not self._stop.wait(self.poll_s):
            self.polls += 1
            current = _digest(self.path)
            if current == acted or current != pending:
                pending = current  # unchanged, or still changing: look again at the next poll
                continue
            acted = current
            self._act()

    def _act(self) -> None:
        try:
            self.service.apply(reread_projects(self.service.settings))
        except ConfigError as exc:
            self.service.config_failed(exc.message)
        except Exception:  # a bug: keep following the file, keep the traceback in the log
            log.exception("applying %s failed", self.path)
