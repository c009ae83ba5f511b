"""File events, for real: a served project follows saves, deletes, renames and checkouts.

Every test writes real files under a watched root (inotify through watchfiles, no mocked
watcher) and waits — bounded — for the index to follow, then checks it against what a search
and a full sweep say.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama_standin import OllamaStandin, ollama_standin
from psycopg import sql as pgsql
from server_fixtures import Served, make_project, serve, standin_embedder, unique_name

from indexer.db import Database
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import SweepOptions, sweep_project
from rag_server.cli.serve import _server_logging

__all__ = ["ollama_standin"]

START = {
    "app/main.py": "def start_checkout_flow(cart):\n    return cart\n",
    ".gitignore": "*.log\n",
}


def until(predicate: Callable[[], Any], timeout: float = 20, what: str = "it") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="code-rag-watch-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def status_of(served: Served, project: Project) -> dict[str, Any]:
    return dict(served.service.status(project.name))


def watched(
    base: Path, database: Database, standin: OllamaStandin, project: Project
) -> Iterator[Served]:
    # A whole first index, vectors included (the server here runs no background work).
    sweep_project(database, project, standin_embedder(standin), SweepOptions(defer_vectors=False))
    for served in serve(base, {project.name: project}, standin, database, watch=True):
        served.standin = standin
        yield served


@pytest.fixture
def live(
    base: Path, database: Database, ollama_standin: OllamaStandin
) -> Iterator[tuple[Served, Project]]:
    project = make_project(unique_name("watch"), base / "src", START, label="src")
    for served in watched(base, database, ollama_standin, project):
        until(lambda s=served: status_of(s, project)["watching"], what="the watch to start")
        yield served, project


def paths_for(served: Served, project: Project, word: str) -> list[str]:
    hits = search_code(served.service.db, project, None, word, mode="keyword", top_k=10)
    return [h.path for h in hits]


def test_saves_deletes_and_renames_are_followed(live: tuple[Served, Project], base: Path) -> None:
    served, project = live
    root = base / "src"
    (root / "app" / "tax.py").write_text("def alphaword(code):\n    return 0.2\n")
    until(lambda: paths_for(served, project, "alphaword") == ["app/tax.py"], what="the add")
    [hit] = search_code(served.service.db, project, None, "alphaword", mode="keyword")
    assert hit.index_age_s is not None and hit.index_age_s < 10

    (root / "app" / "tax.py").write_text("def betaword(code):\n    return 0.1\n")
    until(lambda: paths_for(served, project, "betaword") == ["app/tax.py"], what="the edit")
    assert paths_for(served, project, "alphaword") == []

    assert served.standin is not None
    served.standin.reset_counters()
    (root / "app" / "tax.py").rename(root / "app" / "duty.py")
    until(lambda: paths_for(served, project, "betaword") == ["app/duty.py"], what="the rename")
    assert served.standin.embedded_inputs == 0  # a rename re-embeds nothing

    (root / "app" / "duty.py").unlink()
    until(lambda: paths_for(served, project, "betaword") == [], what="the delete")
    status = served.service.status(project.name)
    assert status["watching"] and status["pending_changes"] == 0 and status["last_change_at"]


def test_ignored_files_stay_out(live: tuple[Served, Project], base: Path) -> None:
    served, project = live
    root = base / "src"
    (root / "debug.log").write_text("ignoredzeta\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("function vendoredeta() {}\n")
    (root / ".env").write_text("secrettheta=1\n")
    (root / "app" / "later.py").write_text("def sentinelomega():\n    pass\n")
    until(lambda: paths_for(served, project, "sentinelomega"), what="the sentinel")
    for word in ("ignoredzeta", "vendoredeta", "secrettheta"):
        assert paths_for(served, project, word) == [], word


@pytest.fixture
def server_logging() -> Iterator[None]:
    """The server's own logging levels for the test; every logger's level restored after."""
    loggers = logging.root.manager.loggerDict
    levels = {name: lg.level for name, lg in loggers.items() if isinstance(lg, logging.Logger)}
    root_level = logging.root.level
    _server_logging()
    yield
    for name, lg in list(loggers.items()):
        if isinstance(lg, logging.Logger):
            lg.setLevel(levels.get(name, logging.NOTSET))
    logging.root.setLevel(root_level)


def test_the_data_folder_inside_a_root_is_never_reacted_to(
    base: Path,
    database: Database,
    ollama_standin: OllamaStandin,
    server_logging: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The demo project is the checkout that holds the server's data folder: the database's own
    # writes there raise no event (nothing applied, nothing logged), while a real save in the
    # same root is followed, and watchfiles' line per batch stays out of the server's log.
    files = {**START, ".gitignore": ".data/\n"}  # as the checkout ignores it
    project = make_project(unique_name("watch"), base, files, label="src")
    for served in watched(base, database, ollama_standin, project):
        assert served.settings.data_dir == base / ".data"  # inside the watched root
        until(lambda s=served: status_of(s, project)["watching"], what="the watch to start")
        before = status_of(served, project)
        caplog.set_level(logging.INFO)
        pgdata = base / ".data" / "pgdata" / "base" / "16384"
        pgdata.mkdir(parents=True)
        for i in range(20):  # a database at work: pages written, a log appended, the token
            (pgdata / f"{i}").write_bytes(bytes(8192))
        (base / ".data" / "pgdata" / "postmaster.log").write_text("checkpoint complete\n")
        (base / ".data" / "token").write_text("not-a-real-token\n")
        (base / "later.py").write_text("def sentinelsigma():\n    pass\n")

        def saved(s: Served = served, applied: int = before["changes_applied"]) -> bool:
            status = status_of(s, project)
            return (
                paths_for(s, project, "sentinelsigma") == ["later.py"]
                and status["changes_applied"] > applied
                and status["pending_changes"] == 0
            )

        until(saved, what="the save")
        after = status_of(served, project)
        assert after["changes_applied"] == before["changes_applied"] + 1  # the save alone
        assert after["files"] == before["files"] + 1
        assert after["last_run"] == before["last_run"]  # never swept anew
        assert [r.getMessage() for r in caplog.records if r.name.startswith("watchfiles")] == []


def test_a_burst_of_a_thousand_files_is_batched(live: tuple[Served, Project], base: Path) -> None:
    served, project = live
    before = status_of(served, project)["files"]
    burst = base / "src" / "burst"
    burst.mkdir()
    for i in range(1000):
        (burst / f"m{i:04d}.py").write_text(f"def handler_{i:04d}():\n    return {i}\n")
    until(
        lambda: status_of(served, project)["files"] == before + 1000,
        timeout=120,
        what="a thousand new files",
    )
    status = status_of(served, project)
    assert status["batches_applied"] <= 10, status  # one batch per debounce window, not per file
    shutil.rmtree(burst)
    until(lambda: status_of(served, project)["files"] == before, timeout=60, what="rm -rf")


def test_a_watch_that_cannot_start_says_so_and_the_schedule_goes_on(
    base: Path, database: Database, ollama_standin: OllamaStandin
) -> None:
    project = make_project(unique_name("watch"), base / "src", START, label="src")
    sweep_project(database, project, standin_embedder(ollama_standin))
    shutil.rmtree(base / "src")  # gone before the server starts watching it
    for served in serve(
        base, {project.name: project}, ollama_standin, database, schedule=True, watch=True
    ):
        status = until(
            lambda s=served: (got := status_of(s, project))["watch_error"] and got,
            what="the watch error",
        )
        assert status["watching"] is False
        assert "scheduled sweeps keep the index fresh" in status["watch_error"]
        assert status["next_sweep_at"] is not None  # the cron sweep carries on


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


def chunk_set(database: Database, name: str) -> set[tuple[str, int, str]]:
    query = pgsql.SQL(
        "SELECT f.path, c.ordinal, c.content_sha256 FROM {s}.rag_chunk c "
        "JOIN {s}.rag_file f ON f.id = c.file_id"
    ).format(s=pgsql.Identifier(name))
    with database.connection() as conn:
        return {tuple(row) for row in conn.execute(query).fetchall()}  # type: ignore[misc]


def chunks_holding(database: Database, name: str, text: str) -> int:
    query = pgsql.SQL("SELECT count(*) FROM {s}.rag_chunk WHERE strpos(content, %s) > 0").format(
        s=pgsql.Identifier(name)
    )
    with database.connection() as conn:
        return int(conn.execute(query, (text,)).fetchone()[0])  # type: ignore[index]


def test_a_checkout_converges_to_a_full_sweep_embedding_only_new_content(
    base: Path, database: Database, ollama_standin: OllamaStandin, project_name: str
) -> None:
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(500):
        (repo / f"mod{i:03d}.py").write_text(f"def branch_main_{i:03d}():\n    return {i}\n")
    (repo / "keep.py").write_text("def shared_everywhere():\n    return 0\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "other")
    for i in range(500):
        (repo / f"mod{i:03d}.py").write_text(f"def branch_other_{i:03d}():\n    return {i}\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")

    project = Project(unique_name("checkout"), (Root(repo.resolve(), "repo"),))
    for served in watched(base, database, ollama_standin, project):
        until(lambda s=served: status_of(s, project)["watching"], what="the watch to start")
        ollama_standin.reset_counters()
        git(repo, "checkout", "-q", "other")

        def converged(s: Served = served) -> bool:
            status = status_of(s, project)
            return (
                chunks_holding(database, project.name, "branch_other_") == 500
                and chunks_holding(database, project.name, "branch_main_") == 0
                and status["pending_changes"] == 0
                and not status["sweep_running"]
                and status["vectors_pending"] == 0
                and not status["vectors_running"]
                and not status["vectors_queued"]
            )

        until(converged, timeout=120, what="the checkout to be indexed")
        # Only the 500 chunks whose content is new were embedded (keep.py: from the cache),
        # whichever way they went in (file events as they come, a sweep's rows first).
        assert ollama_standin.embedded_inputs == 500
        # The rows are exactly those a full sweep of the same tree produces.
        reference = Project(project_name, project.roots)
        sweep_project(database, reference, standin_embedder(ollama_standin))
        assert chunk_set(database, project.name) == chunk_set(database, project_name)
