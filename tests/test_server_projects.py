"""Projects side by side, searches during sweeps, and the scheduler, against the real server.

Two projects served by one server never see each other's rows; a search answers while a sweep
of the same project is in the middle of its work; at start-up a project never swept is swept
at once, and the next sweep is planned one interval later.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

from server_fixtures import (  # noqa: E402
    GARDEN_FILES,
    SHOP_FILES,
    GatedEmbedder,
    Served,
    call,
    index,
    make_project,
    serve,
    standin_embedder,
    unique_name,
    wait_for,
)

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin

    from indexer.db import Database

pytest_plugins = ["server_fixtures"]


@pytest.fixture
def two(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> Iterator[tuple[Served, str, str]]:
    shop = make_project(unique_name("shop"), work_dir / "shop", SHOP_FILES, label="shop")
    garden = make_project(unique_name("garden"), work_dir / "garden", GARDEN_FILES, label="garden")
    index(database, shop, ollama_standin)
    index(database, garden, ollama_standin)
    projects = {shop.name: shop, garden.name: garden}
    for served in serve(work_dir, projects, ollama_standin, database):
        yield served, shop.name, garden.name


def test_two_projects_never_see_each_others_rows(two: tuple[Served, str, str]) -> None:
    served, shop, garden = two
    in_shop = call(served, shop, "search_code", {"query": "how often to water a cactus"})
    in_garden = call(served, garden, "search_code", {"query": "invoice number with year"})
    assert in_shop["hits"] and in_garden["hits"]
    assert all(hit["repo"] == "shop" for hit in in_shop["hits"])
    assert all(hit["repo"] == "garden" for hit in in_garden["hits"])
    assert all("/garden/" not in hit["absolute_path"] for hit in in_shop["hits"])

    shop_repos = call(served, shop, "list_repos", {})["repos"]
    garden_repos = call(served, garden, "list_repos", {})["repos"]
    assert [r["repo"] for r in shop_repos] == ["shop"]
    assert [r["repo"] for r in garden_repos] == ["garden"]

    # Chunk ids are per project: an id through the other endpoint reads that project only.
    garden_id = in_garden["hits"][0]["chunk_id"]
    response = served.rpc(
        shop,
        "tools/call",
        {"name": "get_chunk", "arguments": {"chunk_id": garden_id}},
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    result = response.json()["result"]
    if not result["isError"]:
        assert result["structuredContent"]["repo"] == "shop"

    status = call(served, garden, "index_status", {})
    assert status["project"] == garden and status["files"] == 1
    assert shop not in str(status)


def test_a_search_answers_while_a_sweep_of_the_same_project_runs(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    project = make_project(unique_name("busy"), work_dir / "busy", SHOP_FILES, label="shop")
    index(database, project, ollama_standin)
    embedder = GatedEmbedder(standin_embedder(ollama_standin))
    for served in serve(
        work_dir, {project.name: project}, ollama_standin, database, embedder=embedder
    ):
        try:
            (work_dir / "busy" / "billing" / "tax.py").write_text(
                "def vat(amount):\n    return amount * 0.2\n", encoding="utf-8"
            )
            run = served.http.post(
                "/rag-admin",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "reindex",
                    "params": {"project": project.name},
                },
            ).json()["result"]
            assert run["projects"][project.name] == "started"
            assert embedder.waiting.wait(30), "the sweep never reached the embedder"

            # The sweep is held at the gate with its work open: a search that waited for it
            # (its lock, its transaction) would never answer. It answers from the committed
            # index, and the sweep is still running, its new file not yet in the index.
            hits = call(served, project.name, "search_code", {"query": "invoice number"})["hits"]
            assert hits and hits[0]["path"] == "billing/invoice.py"
            assert not embedder.gate.is_set()
            status = call(served, project.name, "index_status", {})
            assert status["sweep_running"] is True
            assert status["files"] == 3
        finally:
            embedder.gate.set()
        wait_for(
            lambda served=served: call(served, project.name, "index_status", {})["files"] == 4,
            what="the sweep to finish",
        )


def test_startup_sweeps_a_project_never_swept_and_plans_the_next(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    project = make_project(unique_name("fresh"), work_dir / "fresh", SHOP_FILES, label="shop")
    # Planned at start-up, after this moment, and swept at or after it was planned: the next
    # sweep is one interval after the planning, so it lies between these two bounds.
    before_start = datetime.now(UTC).replace(microsecond=0)
    for served in serve(
        work_dir,
        {project.name: project},
        ollama_standin,
        database,
        schedule=True,
        interval_minutes=7,
    ):

        def swept(served: Served = served) -> dict[str, Any] | None:
            status = call(served, project.name, "index_status", {})
            return status if status["last_run"] else None

        status = wait_for(swept, what="the start-up sweep")
        assert status["last_run"]["trigger"] == "startup"
        assert status["last_run"]["outcome"] == "ok"
        assert status["indexed"] is True and status["files"] == 3
        assert status["sweep_interval_minutes"] == 7
        next_at = datetime.fromisoformat(status["next_sweep_at"])
        started = datetime.fromisoformat(status["last_run"]["started_at"])
        interval = timedelta(minutes=7)
        assert before_start + interval <= next_at <= started + interval
        hits = call(served, project.name, "search_code", {"query": "retry_with_backoff"})["hits"]
        assert "net/retry.py" in [hit["path"] for hit in hits]


@pytest.mark.parametrize("last", ["ok", "killed"])
def test_startup_goes_on_with_a_sweep_that_did_not_end_and_not_with_one_that_did(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database, last: str
) -> None:
    # A first index killed half-way (a crash, kill -9) left its sweep 'running'; a start
    # sweeps the project at once instead of waiting one interval with the rest unindexed.
    from indexer.db import Schema, store

    project = make_project(unique_name("cut"), work_dir / "cut", SHOP_FILES, label="shop")
    index(database, project, ollama_standin)
    if last == "killed":
        with database.connection() as conn:
            store.start_sweep(conn, Schema(project.name))  # what a killed process leaves
            conn.commit()
    for served in serve(work_dir, {project.name: project}, ollama_standin, database, schedule=True):
        if last == "killed":
            status = wait_for(
                lambda served=served: (
                    (s := call(served, project.name, "index_status", {})) and s["last_run"] and s
                ),
                what="the start-up sweep",
            )
            assert status["last_run"]["trigger"] == "startup"
            assert status["last_sweep"]["outcome"] == "ok"
        else:
            status = call(served, project.name, "index_status", {})
            assert status["last_run"] is None  # nothing to go on with: the schedule's turn
            assert status["last_sweep"]["outcome"] == "ok"


def test_startup_embeds_again_an_index_of_another_model(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    # What an upgrade that changes the model leaves: an index whose last sweep ended, recorded
    # as another model's. A start sweeps it at once (not one interval later, with searches
    # asking for a rescan meanwhile), says why, and shows the vectors' progress.
    from indexer.db import Schema, store

    project = make_project(unique_name("old"), work_dir / "old", SHOP_FILES, label="shop")
    index(database, project, ollama_standin)
    with database.connection() as conn:
        schema = Schema(project.name)
        recorded = store.get_meta(conn, schema, "embedding")
        store.set_meta(conn, schema, "embedding", {**recorded, "model": "nomic-embed-text:v1"})
        conn.commit()
    for served in serve(work_dir, {project.name: project}, ollama_standin, database, schedule=True):

        def embedded(served: Served = served) -> dict[str, Any] | None:
            status = call(served, project.name, "index_status", {})
            done = status["last_run"] and status["vectors_ready"] == 1.0
            return status if done else None

        status = wait_for(embedded, what="the start-up sweep and its vectors")
        assert status["last_run"]["trigger"] == "startup"
        assert status["last_run"]["outcome"] == "ok"
        assert any("re-embedding every chunk" in w for w in status["last_sweep"]["warnings"])
        assert status["embedding"]["model"] == "nomic-embed-text:v1.5"
        hits = call(served, project.name, "search_code", {"query": "retry_with_backoff"})["hits"]
        assert "net/retry.py" in [hit["path"] for hit in hits]
