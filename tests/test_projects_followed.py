"""rag-projects.json followed by a running server: edits apply without a restart.

The real app under uvicorn, with its scheduler, its file watchers and its projects-file
follower; every change is made by writing the file as an editor does (in place, or a copy
renamed over it) and checked over the MCP endpoint and the admin endpoint.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

from server_fixtures import (  # noqa: E402
    GARDEN_FILES,
    SHOP_FILES,
    Served,
    call,
    drop_projects,
    index,
    make_project,
    serve,
    unique_name,
    wait_for,
)

from indexer.db import Schema, store  # noqa: E402
from indexer.project import Project  # noqa: E402

if TYPE_CHECKING:
    from ollama_standin import OllamaStandin

    from indexer.db import Database

pytest_plugins = ["server_fixtures"]

DEADLINE_S = 60  # generous: a poll of the file, a sweep, a watcher starting


def entry(project: Project, **globs: list[str]) -> dict[str, Any]:
    roots = [{"path": str(root.path), "name": root.name} for root in project.roots]
    return {"roots": roots, **globs}


def write_file(path: Path, document: Mapping[str, Any] | str, *, by_rename: bool = False) -> None:
    """Write the projects file in place, or as editors that save a copy and rename it do."""
    text = document if isinstance(document, str) else json.dumps(document, indent=2)
    if by_rename:
        copy = path.with_name(path.name + ".swp")
        copy.write_text(text, encoding="utf-8")
        os.replace(copy, path)
    else:
        path.write_text(text, encoding="utf-8")


def admin_status(served: Served) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "status"}
    response = served.http.post("/rag-admin", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def tool_call(served: Served, project: str, tool: str, arguments: dict[str, Any]) -> Any:
    """The HTTP response of one tool call, whatever it is."""
    return served.rpc(
        project,
        "tools/call",
        {"name": tool, "arguments": arguments},
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )


def symbols_named(served: Served, project: str, name: str) -> list[str]:
    """Where find_symbol finds `name` in `project`; [] while the project has no index yet."""
    response = tool_call(served, project, "find_symbol", {"name": name})
    if response.status_code != 200 or response.json()["result"]["isError"]:
        return []
    found = response.json()["result"]["structuredContent"]["symbols"]
    return [f"{s['repo']}/{s['path']}" for s in found if s["name"] == name]


def ended_run(served: Served, project: str, trigger: str) -> dict[str, Any]:
    """The last sweep this server ran of `project`, once one started by `trigger` has ended. A
    sweep commits its rows before it ends (its vectors, its record follow), so what a search
    sees can come first."""

    def ended() -> dict[str, Any] | None:
        last = call(served, project, "index_status", {})["last_run"]
        return last if last and last["trigger"] == trigger else None

    return wait_for(ended, DEADLINE_S, f"a sweep of {project} by {trigger} to end")


@pytest.fixture
def followed(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> Iterator[tuple[Served, Project]]:
    """An indexed project served with the scheduler and the watchers, as the file names it."""
    shop = make_project(unique_name("fshop"), work_dir / "shop", SHOP_FILES, label="shop")
    index(database, shop, ollama_standin)
    write_file(work_dir / "rag-projects.json", {"projects": {shop.name: entry(shop)}})
    for served in serve(
        work_dir, {shop.name: shop}, ollama_standin, database, schedule=True, watch=True
    ):
        yield served, shop


def test_a_project_added_to_the_file_is_served_swept_and_watched(
    followed: tuple[Served, Project], work_dir: Path, database: Database
) -> None:
    # A project written into the file gets its endpoint, its first sweep and its watcher, and
    # a group written with it is served too; nothing restarts.
    served, shop = followed
    garden = make_project(unique_name("fgarden"), work_dir / "garden", GARDEN_FILES, "garden")
    group = unique_name("fboth")
    try:
        assert served.rpc(garden.name, "tools/list").status_code == 404
        write_file(
            served.settings.projects_path,
            {
                "projects": {shop.name: entry(shop), garden.name: entry(garden)},
                "groups": {group: [shop.name, garden.name]},
            },
            by_rename=True,
        )
        found = wait_for(
            lambda: symbols_named(served, garden.name, "WaterSchedule"),
            DEADLINE_S,
            "the added project's first sweep",
        )
        assert found == ["garden/plants/water.go"]
        assert ended_run(served, garden.name, "config")["outcome"] == "ok"
        status = call(served, garden.name, "index_status", {})
        assert status["next_sweep_at"]  # its interval job is planned
        assert served.service.endpoint(group).names == (shop.name, garden.name)
        assert symbols_named(served, shop.name, "retry_with_backoff") == ["shop/net/retry.py"]

        wait_for(
            lambda: served.service.status(garden.name)["watching"],
            DEADLINE_S,
            "the added project's watcher",
        )
        (work_dir / "garden" / "plants" / "soil.go").write_text(
            "package plants\n\n// SoilMoisture says how wet the soil is.\n"
            "func SoilMoisture() int {\n\treturn 40\n}\n"
        )
        wait_for(
            lambda: symbols_named(served, garden.name, "SoilMoisture"),
            DEADLINE_S,
            "the watcher to index a saved file",
        )
        assert served.service.status(garden.name)["changes_applied"] >= 1
        assert admin_status(served)["config_error"] is None
    finally:
        drop_projects(database, [garden.name])


def test_a_project_removed_from_the_file_stops_being_served_and_keeps_its_schema(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    # A removed project answers 404 at once; its watcher and its jobs stop; its schema stays
    # until `./bld scan` asks. The project that stays keeps answering.
    shop = make_project(unique_name("fshop"), work_dir / "shop", SHOP_FILES, label="shop")
    spare = make_project(unique_name("fspare"), work_dir / "spare", GARDEN_FILES, "garden")
    index(database, shop, ollama_standin)
    index(database, spare, ollama_standin)
    path = work_dir / "rag-projects.json"
    write_file(path, {"projects": {shop.name: entry(shop), spare.name: entry(spare)}})
    projects = {shop.name: shop, spare.name: spare}
    for served in serve(work_dir, projects, ollama_standin, database, schedule=True, watch=True):
        wait_for(lambda s=served: s.service.status(spare.name)["watching"], DEADLINE_S, "watch")
        assert symbols_named(served, spare.name, "WaterSchedule")
        assert served.service.next_sweep_at(spare.name) is not None

        write_file(path, {"projects": {shop.name: entry(shop)}})
        wait_for(
            lambda s=served: s.rpc(spare.name, "tools/list").status_code == 404,
            DEADLINE_S,
            "the removed project to answer 404",
        )
        reply = served.rpc(spare.name, "tools/list").json()
        assert "no project or group named" in reply["error"]["message"]
        # The endpoint goes first (one assignment); its watcher and job follow as the
        # scheduler and the watchers hear of the change.
        wait_for(
            lambda s=served: (
                s.service.watch_state(spare.name) is None
                and s.service.next_sweep_at(spare.name) is None
            ),
            DEADLINE_S,
            "the removed project's watcher and job to stop",
        )
        assert [p["project"] for p in admin_status(served)["projects"]] == [shop.name]
        assert symbols_named(served, shop.name, "Invoice") == ["shop/billing/invoice.py"]
        with database.connection() as conn:
            assert store.project_exists(conn, Schema(spare.name))


def test_a_changed_project_follows_its_new_globs_and_roots(
    followed: tuple[Served, Project], work_dir: Path
) -> None:
    # New globs apply at once (the project is swept when its entry changes); a new root is
    # indexed by that sweep, then watched.
    served, shop = followed
    path = served.settings.projects_path
    write_file(path, {"projects": {shop.name: entry(shop, exclude=["billing/**"])}})
    wait_for(
        lambda: not symbols_named(served, shop.name, "Invoice"),
        DEADLINE_S,
        "the sweep under the new globs",
    )
    assert ended_run(served, shop.name, "config")["outcome"] == "ok"
    assert symbols_named(served, shop.name, "retry_with_backoff") == ["shop/net/retry.py"]

    extra = work_dir / "extra"
    (extra / "books").mkdir(parents=True)
    (extra / "books" / "ledger.py").write_text("def ledger_balance(rows):\n    return sum(rows)\n")
    two_roots = entry(shop, exclude=["billing/**"])
    two_roots["roots"].append({"path": str(extra), "name": "extra"})
    write_file(path, {"projects": {shop.name: two_roots}}, by_rename=True)
    wait_for(
        lambda: symbols_named(served, shop.name, "ledger_balance"),
        DEADLINE_S,
        "the sweep of the new root",
    )
    wait_for(lambda: served.service.status(shop.name)["watching"], DEADLINE_S, "the new watcher")
    (extra / "books" / "audit.py").write_text("def audit_trail(entries):\n    return entries\n")
    found = wait_for(
        lambda: symbols_named(served, shop.name, "audit_trail"),
        DEADLINE_S,
        "the watcher of the new root",
    )
    assert found == ["extra/books/audit.py"]


def test_a_broken_file_changes_nothing_is_reported_once_and_a_fixed_one_applies(
    followed: tuple[Served, Project],
    work_dir: Path,
    database: Database,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Invalid JSON, then a root that does not exist: the server keeps serving what it served,
    # logs each problem once however many polls see it, and the admin status shows it until a
    # valid file replaces it; that one applies at once.
    caplog.set_level(logging.INFO, logger="code_rag")
    served, shop = followed
    path = served.settings.projects_path
    follower = served.app.state.projects_file
    garden = make_project(unique_name("fgarden"), work_dir / "garden", GARDEN_FILES, "garden")

    def problems() -> list[str]:
        return [r.getMessage() for r in caplog.records if "not applied" in r.getMessage()]

    try:
        write_file(path, '{"projects": {' + f'"{garden.name}": ' + "{")
        error = wait_for(
            lambda: admin_status(served)["config_error"], DEADLINE_S, "the problem reported"
        )
        assert "invalid JSON" in error["message"] and str(path) in error["message"]
        assert error["seen_at"]
        polled = follower.polls
        wait_for(lambda: follower.polls >= polled + 3, DEADLINE_S, "three more polls")
        assert len(problems()) == 1
        assert admin_status(served)["config_error"] == error
        assert list(served.service.projects) == [shop.name]
        assert symbols_named(served, shop.name, "Invoice") == ["shop/billing/invoice.py"]
        assert served.rpc(garden.name, "tools/list").status_code == 404

        missing = work_dir / "nowhere"
        broken = entry(garden)
        broken["roots"].append({"path": str(missing), "name": "nowhere"})
        write_file(path, {"projects": {shop.name: entry(shop), garden.name: broken}})
        wait_for(
            lambda: "nowhere" in (admin_status(served)["config_error"] or {}).get("message", ""),
            DEADLINE_S,
            "the second problem reported",
        )
        assert admin_status(served)["config_error"]["message"].endswith(
            "create it or remove this root"
        )
        assert len(problems()) == 2
        assert served.rpc(garden.name, "tools/list").status_code == 404

        write_file(path, {"projects": {shop.name: entry(shop), garden.name: entry(garden)}})
        wait_for(
            lambda: admin_status(served)["config_error"] is None,
            DEADLINE_S,
            "the fixed file to apply",
        )
        assert served.rpc(garden.name, "tools/list").status_code == 200
        wait_for(
            lambda: symbols_named(served, garden.name, "WaterSchedule"),
            DEADLINE_S,
            "the added project's first sweep",
        )
        assert len(problems()) == 2
    finally:
        drop_projects(database, [garden.name])
