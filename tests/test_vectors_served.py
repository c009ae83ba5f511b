"""A served project answers while its vectors follow: every tool works on the rows a sweep
wrote first, search says how much of the index has its vectors, index_status shows the
background work, and a restarted server picks the pending vectors up from the database."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from psycopg import sql as pgsql

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

from server_fixtures import (  # noqa: E402
    SHOP_FILES,
    GatedEmbedder,
    Served,
    call,
    make_project,
    serve,
    server_settings,
    standin_embedder,
    unique_name,
    wait_for,
)

from indexer.db import PendingCounts  # noqa: E402
from indexer.sweep import SweepOptions, embed_pending, sweep_project  # noqa: E402
from indexer.sweep.run import DEFER_VECTORS_FILES  # noqa: E402

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin

    from indexer.db import Database

pytest_plugins = ["server_fixtures"]


def finished(served: Served, name: str) -> dict[str, Any] | None:
    """The status once no vector is pending and the background run has ended."""
    status = call(served, name, "index_status", {})
    done = status["vectors_pending"] == 0 and status["last_vectors_run"] is not None
    return status if done else None


def complete_search(served: Served, name: str) -> dict[str, Any] | None:
    """A search result once it no longer says vectors are pending."""
    found = call(served, name, "search_code", {"query": "number an invoice"})
    return None if "vectors_ready" in found else found


def test_a_served_project_answers_while_its_vectors_follow_in_the_background(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    files = dict(SHOP_FILES) | {
        f"handlers/h{i}.py": f"def handler_{i}(request):\n    return request.reply({i})\n"
        for i in range(DEFER_VECTORS_FILES)
    }
    project = make_project(unique_name("later"), work_dir / "later", files, label="later")
    swept = sweep_project(
        database, project, standin_embedder(ollama_standin), SweepOptions(defer_vectors=True)
    )
    assert swept.vectors_deferred > 0
    # The server starts with every vector pending (as after a restart mid-way): it queues
    # them at startup and embeds them in the background; the gate holds the first batch.
    gated = GatedEmbedder(standin_embedder(ollama_standin))
    for served in serve(
        work_dir, {project.name: project}, ollama_standin, database, schedule=True, embedder=gated
    ):
        name = project.name
        wait_for(gated.waiting.is_set, what="the background vectors to start")
        status = call(served, name, "index_status", {})
        assert status["vectors_pending"] > 0 and status["vectors_running"] is True
        assert status["vectors_ready"] == 0.0
        found = call(served, name, "search_code", {"query": "generate_number"})
        assert "Invoice.generate_number" in found["hits"][0]["symbols"]
        assert found["vectors_ready"] == 0.0 and "waiting for their vectors" in found["note"]
        symbols = call(served, name, "find_symbol", {"name": "handler_3"})
        assert [s["path"] for s in symbols["symbols"]] == ["handlers/h3.py"]
        lines = call(served, name, "grep", {"pattern": "request.reply(7)"})
        assert [m["path"] for m in lines["matches"]] == ["handlers/h7.py"]

        gated.gate.set()
        status = wait_for(partial(finished, served, name), what="every vector to be in")
        done = wait_for(partial(complete_search, served, name), what="search to see them all")
        assert "note" not in done
        assert status["vectors_running"] is False
        assert status["last_vectors_run"]["outcome"] == "ok"
        assert status["last_vectors_run"]["pending"] == 0


def test_a_search_answers_with_the_last_count_of_pending_vectors_while_it_is_taken_again(
    work_dir: Path,
    ollama_standin: OllamaStandin,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Searches say how many vectors are pending, and at a million pending chunks counting
    # them takes seconds: past its time a count is taken again in a thread of its own, and
    # searches answer meanwhile with the last one. Here the count is held behind a lock.
    from rag_server import service as service_module

    monkeypatch.setattr(service_module, "PENDING_TTL_S", 0.0)
    monkeypatch.setattr(service_module, "PENDING_TTL_TIMES", 0)
    project = make_project(unique_name("count"), work_dir / "count", SHOP_FILES, label="count")
    embedder = standin_embedder(ollama_standin)
    sweep_project(database, project, embedder, SweepOptions(defer_vectors=True))
    settings = server_settings(work_dir, {project.name: project}, ollama_standin, database.dsn)
    service = service_module.Service(settings, database, embedder)
    try:
        first = service.pending_vectors(project.name)  # the first call waits for its count
        assert first.total > 0
        assert embed_pending(database, project, embedder).outcome == "ok"
        with database.connection() as blocker:
            blocker.execute(
                pgsql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(
                    pgsql.Identifier(project.name, "rag_chunk")
                )
            )
            answered: list[PendingCounts] = []
            asking = threading.Thread(
                target=lambda: answered.append(service.pending_vectors(project.name))
            )
            asking.start()
            asking.join(timeout=30)
            assert answered == [first]  # at once, with the last count: none is pending now
            blocker.rollback()
        wait_for(
            lambda: service.pending_vectors(project.name).total == 0, what="the count taken again"
        )
    finally:
        service.close()
