"""A long phase says how far it is to whoever asks meanwhile: a sweep's rows (files read of
those to read, files per second, time left) and the vectors after them (rate, time left) are
in the status another process reads, `./bld status` shows them, and the index's disk size."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest
from ollama_standin import OllamaStandin, ollama_standin
from test_sweep_bulk import FIXTURES

import indexer.sweep.run
import indexer.sweep.vectors
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.status import ProjectStatus, project_status
from indexer.sweep import SweepOptions, SweepProgress, VectorProgress, embed_pending, sweep_project
from rag_server.cli.render import format_status

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
ROWS_FIRST = SweepOptions(files_per_commit=4, defer_vectors=True)


@pytest.fixture
def project(tmp_path: Path, project_name: str) -> Project:
    root = tmp_path / "corpus"
    shutil.copytree(FIXTURES, root)
    return Project(project_name, (Root(root, "corpus"),))


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    return make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)


@pytest.fixture
def every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress recorded after every batch, not at most every 2 s."""
    monkeypatch.setattr(indexer.sweep.run, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(indexer.sweep.vectors, "PROGRESS_EVERY", 0.0)


def status(conn: Conn, project: Project) -> ProjectStatus:
    found = project_status(conn, project)
    conn.rollback()
    return found


def test_a_running_sweep_shows_its_files_read_rate_and_time_left(
    database: Database, conn: Conn, project: Project, embedder: Any, every_batch: None
) -> None:
    seen: list[tuple[SweepProgress, ProjectStatus]] = []

    def observe(p: SweepProgress) -> None:
        # Called in the sweep's thread after each committed batch; the status is read the way
        # another process reads it, on a connection of its own.
        if p.phase == "index":
            seen.append((p, status(conn, project)))

    report = sweep_project(database, project, embedder, ROWS_FIRST, progress=observe)
    total = report.files_changed + report.files_failed
    assert len(seen) >= 3
    for p, s in seen:
        assert s.sweep_running
        assert s.rows_progress is not None
        assert (s.rows_progress["done"], s.rows_progress["total"]) == (p.files_done, total)
        assert s.rows_progress["per_second"] > 0
        if p.files_done < total:
            assert s.rows_progress["eta_seconds"] is not None
    p, s = seen[0]
    line = next(t for t in format_status(s.to_dict()) if "a sweep is running now" in t)
    assert f"{p.files_done:,} of {total:,} files read" in line
    assert "files/s" in line and "left" in line
    # Once it ended, no progress is shown: the last sweep's report says what it did.
    after = status(conn, project)
    assert not after.sweep_running and after.rows_progress is None


def test_vectors_being_embedded_elsewhere_show_their_rate_and_time_left(
    database: Database, conn: Conn, project: Project, embedder: Any, every_batch: None
) -> None:
    sweep_project(database, project, embedder, ROWS_FIRST)
    waiting = status(conn, project).vectors_pending
    assert waiting > 8
    seen: list[tuple[VectorProgress, ProjectStatus]] = []

    def observe(p: VectorProgress) -> None:
        if p.pending:
            seen.append((p, status(conn, project)))

    report = embed_pending(database, project, embedder, batch=4, progress=observe)
    assert report.outcome == "ok"
    assert seen
    for p, s in seen:
        data = s.to_dict()
        assert data["vectors_running"] is True
        assert s.vectors_pending == p.pending
        assert data["vectors_per_second"] > 0
        assert data["vectors_eta_seconds"] is not None
    lines = format_status(seen[0][1].to_dict())
    assert any("being embedded now" in t and "/s" in t and "left" in t for t in lines)
    # Done: nothing pending, nobody embedding.
    data = status(conn, project).to_dict()
    assert data["vectors_pending"] == 0 and "vectors_running" not in data


def test_the_status_says_what_the_index_takes_on_disk(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    sweep_project(database, project, embedder, ROWS_FIRST)
    found = status(conn, project)
    assert found.disk_bytes == store.disk_bytes(conn, Schema(project.name)) > 0
    conn.rollback()
    assert any(t.startswith("  on disk: ") for t in format_status(found.to_dict()))
