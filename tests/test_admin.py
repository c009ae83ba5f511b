"""The admin JSON-RPC endpoint: reindex starts sweeps in the background, status reports them.

Driven over HTTP against the real app; sweeps are real (the embedder is the stand-in, held
at a gate where a test needs a sweep to be running).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

from server_fixtures import (  # noqa: E402
    SHOP_FILES,
    GatedEmbedder,
    index,
    make_project,
    serve,
    standin_embedder,
    unique_name,
    wait_for,
)

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin
    from server_fixtures import Served

    from indexer.db import Database

pytest_plugins = ["server_fixtures"]


@pytest.fixture
def gated(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> Iterator[tuple[Served, GatedEmbedder]]:
    """An indexed project served with an embedder whose document side waits at a gate."""
    project = make_project(unique_name("adm"), work_dir / "shop", SHOP_FILES, label="shop")
    index(database, project, ollama_standin)
    embedder = GatedEmbedder(standin_embedder(ollama_standin))
    for served in serve(
        work_dir, {project.name: project}, ollama_standin, database, embedder=embedder
    ):
        try:
            yield served, embedder
        finally:
            embedder.gate.set()  # never leave a sweep thread waiting


def admin(served: Served, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    response = served.http.post("/rag-admin", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_status_reports_what_bld_status_shows_plus_the_server_view(
    gated: tuple[Served, GatedEmbedder],
) -> None:
    served, _ = gated
    one = admin(served, "status", {"project": served.project})["result"]
    assert one["project"] == served.project
    assert one["indexed"] is True and one["files"] == 3 and one["chunks"] > 0
    assert one["repos"][0]["repo"] == "shop"
    assert one["last_sweep"]["outcome"] == "ok"
    assert one["embedding"]["model"] == "nomic-embed-text:v1.5"
    assert one["sweep_running"] is False and one["current_run"] is None
    every = admin(served, "status")["result"]
    assert [p["project"] for p in every["projects"]] == [served.project]


def test_reindex_returns_at_once_and_the_sweep_runs_in_the_background(
    gated: tuple[Served, GatedEmbedder], work_dir: Path
) -> None:
    served, embedder = gated
    (work_dir / "shop" / "billing" / "refund.py").write_text(
        "def refund(invoice):\n    return -invoice.total\n", encoding="utf-8"
    )
    # The gate is closed, so the sweep cannot finish: a reindex that waited for it would never
    # answer. It answers "started" with a run id, and that run is still the current one.
    result = admin(served, "reindex", {"project": served.project})["result"]
    run_id = result["run_id"]
    assert result["projects"] == {served.project: "started"}
    assert not embedder.gate.is_set()
    assert embedder.waiting.wait(30), "the sweep never reached the embedder"

    # While it runs: status says so, a second reindex does not start another sweep.
    running = admin(served, "status", {"project": served.project})["result"]
    assert running["sweep_running"] is True
    assert running["current_run"]["run_id"] == run_id
    assert running["files"] == 3, "the sweep's new file is not in the index before it finishes"
    again = admin(served, "reindex", {"project": "all"})["result"]
    assert again["projects"] == {served.project: "already_running"}

    embedder.gate.set()

    def finished() -> dict[str, Any] | None:
        status = admin(served, "status", {"project": served.project})["result"]
        return status if status["last_run"] and not status["current_run"] else None

    status = wait_for(finished, what="the background sweep")
    assert status["last_run"]["run_id"] == run_id
    assert status["last_run"]["outcome"] == "ok"
    assert status["last_run"]["trigger"] == "admin"
    assert status["files"] == 4


@pytest.mark.parametrize(
    ("method", "params", "code", "words"),
    [
        ("reindex", {}, -32602, '"all"'),
        ("reindex", {"project": "nope"}, -32602, "unknown project 'nope'"),
        ("reindex", {"project": "all", "full": "yes"}, -32602, "full"),
        ("reindex", {"project": "all", "colour": 1}, -32602, "colour"),
        ("status", {"project": "nope"}, -32602, "unknown project"),
        ("drop_everything", {}, -32601, "reindex, status"),
    ],
)
def test_admin_errors_say_what_to_do(
    gated: tuple[Served, GatedEmbedder], method: str, params: dict[str, Any], code: int, words: str
) -> None:
    served, _ = gated
    error = admin(served, method, params)["error"]
    assert error["code"] == code
    assert words in error["message"]


def test_admin_envelope_errors_and_other_methods(gated: tuple[Served, GatedEmbedder]) -> None:
    served, _ = gated
    parse = served.http.post(
        "/rag-admin", content=b"nope", headers={"content-type": "application/json"}
    )
    assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700
    batch = served.http.post("/rag-admin", json=[{"jsonrpc": "2.0", "id": 1, "method": "status"}])
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    for method in ("GET", "DELETE"):
        response = served.http.request(method, "/rag-admin")
        assert response.status_code == 405 and response.headers["allow"] == "POST"
