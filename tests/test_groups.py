"""Groups of projects: `/rag-mcp/<group>` serves every tool over the group's projects, through
the real app over HTTP and the official MCP client.

Three projects form the group; a fourth, outside it, holds the same names and text, so any
leak would show. Two of the group's projects have a root of the same name ("main"), so a
tool that told files apart by root and path alone would mix them up.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from ollama_standin import OllamaStandin
from server_fixtures import (
    GARDEN_FILES,
    SHOP_FILES,
    TOKEN,
    Served,
    call,
    drop_projects,
    index,
    make_project,
    serve,
    unique_name,
)

from indexer.db import Database
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.search.keyword import TermStats, merged_stats

LEDGER_FILES = {
    "ledger/entries.py": '''"""Ledger entries."""


def post_entry(account: str, amount: float) -> dict:
    """Post one entry to the ledger of `account`, rounded to cents."""
    return {"account": account, "amount": round(amount, 2)}
''',
}
# Outside the group: the same definitions and text as the shop and the ledger.
OUTSIDE_FILES = {
    "copy/invoice.py": SHOP_FILES["billing/invoice.py"],
    "copy/entries.py": LEDGER_FILES["ledger/entries.py"],
}


class Group:
    def __init__(self, served: Served, names: dict[str, str]) -> None:
        self.served = served
        self.names = names  # role -> project name
        self.group = names["group"]

    @property
    def members(self) -> set[str]:
        return {self.names["shop"], self.names["garden"], self.names["ledger"]}

    def call(self, tool: str, endpoint: str | None = None, **arguments: Any) -> dict[str, Any]:
        return call(self.served, endpoint or self.group, tool, arguments)

    def error(self, tool: str, **arguments: Any) -> str:
        response = self.served.rpc(
            self.group,
            "tools/call",
            {"name": tool, "arguments": arguments},
            headers={"MCP-Protocol-Version": "2025-11-25"},
        )
        result = response.json()["result"]
        assert result["isError"] is True, result
        return str(result["content"][0]["text"])


@pytest.fixture(scope="module")
def group(database: Database) -> Iterator[Group]:
    base = Path(tempfile.mkdtemp(prefix="code-rag-group-"))
    with OllamaStandin() as standin:
        projects = [
            make_project(unique_name("gshop"), base / "shop", SHOP_FILES, label="main"),
            make_project(unique_name("ggarden"), base / "garden", GARDEN_FILES, label="garden"),
            make_project(unique_name("gledger"), base / "ledger", LEDGER_FILES, label="main"),
            make_project(unique_name("gout"), base / "outside", OUTSIDE_FILES, label="main"),
        ]
        for project in projects:
            index(database, project, standin)
        shop, garden, ledger, outside = (p.name for p in projects)
        name = unique_name("platform")
        groups = {name: (shop, garden, ledger), unique_name("solo"): (shop,)}
        by_name = {p.name: p for p in projects}
        for served in serve(base, by_name, standin, database, groups=groups):
            solo = next(g for g in groups if g != name)
            yield Group(
                served,
                {
                    "group": name,
                    "solo": solo,
                    "shop": shop,
                    "garden": garden,
                    "ledger": ledger,
                    "outside": outside,
                },
            )
    shutil.rmtree(base, ignore_errors=True)


def test_search_spans_the_group_and_names_each_hit_s_project(group: Group) -> None:
    hits = group.call("search_code", query="invoice number", top_k=10)["hits"]
    assert hits[0]["project"] == group.names["shop"]
    assert hits[0]["path"] == "billing/invoice.py"
    assert {h["project"] for h in hits} <= group.members
    water = group.call("search_code", query="how often a plant is watered", top_k=3)["hits"]
    assert water[0]["project"] == group.names["garden"]
    assert water[0]["path"] == "plants/water.go"
    ledger = group.call("search_code", query="post_entry", top_k=5)["hits"]
    assert (ledger[0]["project"], ledger[0]["symbol"]) == (group.names["ledger"], "post_entry")
    # Nothing of the project outside the group, whatever the query.
    for query in ("invoice number", "post an entry to the ledger", "Invoice", "round"):
        for hit in group.call("search_code", query=query, top_k=50, by_file=False)["hits"]:
            assert hit["project"] in group.members, hit


def test_two_roots_of_one_name_in_two_projects_stay_apart(group: Group) -> None:
    # shop and ledger both call their root "main": both files come back, each with its own
    # project, absolute path and chunk.
    hits = group.call("search_code", query="round amount to cents", top_k=10)["hits"]
    mains = {(h["project"], h["path"]) for h in hits if h["repo"] == "main"}
    assert (group.names["shop"], "billing/invoice.py") in mains
    assert (group.names["ledger"], "ledger/entries.py") in mains
    for hit in hits:
        assert Path(hit["absolute_path"]).is_file()
        chunk = group.call("get_chunk", chunk_id=hit["chunk_id"], project=hit["project"])
        assert (chunk["project"], chunk["path"]) == (hit["project"], hit["path"])
        assert chunk["start_line"] <= hit["start_line"] <= chunk["end_line"]


def test_the_project_filter_narrows_every_tool(group: Group) -> None:
    garden = group.names["garden"]
    hits = group.call("search_code", query="invoice number", project=garden)["hits"]
    assert hits and {h["project"] for h in hits} == {garden}
    symbols = group.call("find_symbol", name="Invoice", project=garden)["symbols"]
    assert {s["project"] for s in symbols} <= {garden}
    assert group.call("grep", pattern="def ", project=garden)["matches"] == []
    refs = group.call("find_references", name="WaterSchedule", project=garden)
    assert {r["project"] for r in refs["references"]} <= {garden}
    repos = group.call("list_repos", project=garden)
    assert [r["repo"] for r in repos["repos"]] == ["garden"]
    message = group.error("search_code", query="x", project=group.names["outside"])
    assert "is not served here" in message and group.names["shop"] in message


def test_navigation_over_the_group_names_each_entry_s_project(group: Group) -> None:
    found = group.call("find_symbol", name="Invoice")
    assert found["match"] == "exact"
    assert [(s["project"], s["path"]) for s in found["symbols"]] == [
        (group.names["shop"], "billing/invoice.py")
    ]
    grep = group.call("grep", pattern="round(")
    assert grep["complete"] is True
    assert {(m["project"], m["path"]) for m in grep["matches"]} == {
        (group.names["shop"], "billing/invoice.py"),
        (group.names["ledger"], "ledger/entries.py"),
    }
    capped = group.call("grep", pattern="round(", max_results=1)
    assert len(capped["matches"]) == 1 and capped["complete"] is False
    refs = group.call("find_references", name="post_entry")
    assert all(r["project"] in group.members for r in refs["references"])
    # An exact name found in one project leaves out the fuzzy near misses of the others.
    exact = group.call("find_symbol", name="WaterSchedule")
    assert exact["match"] == "exact"
    assert {s["project"] for s in exact["symbols"]} == {group.names["garden"]}
    fuzzy = group.call("find_symbol", name="WatrSchedule")
    assert fuzzy["match"] == "fuzzy" and fuzzy["symbols"][0]["name"] == "WaterSchedule"


def test_outline_and_chunk_ask_for_the_project_when_the_group_cannot_tell(group: Group) -> None:
    # "garden" is one project's root: no project needed.
    outline = group.call("get_outline", repo="garden", path="plants/water.go")
    assert outline["project"] == group.names["garden"]
    assert [s["name"] for s in outline["symbols"]] == ["WaterSchedule"]
    # "main" is a root of two projects: say which.
    message = group.error("get_outline", repo="main", path="ledger/entries.py")
    assert "pass project" in message and group.names["ledger"] in message
    outline = group.call(
        "get_outline", repo="main", path="ledger/entries.py", project=group.names["ledger"]
    )
    assert [s["name"] for s in outline["symbols"]] == ["post_entry"]
    # Chunk ids are each project's own.
    assert "pass project" in group.error("get_chunk", chunk_id=1)
    assert "not a root" in group.error("search_code", query="x", repo="nope")


def test_list_repos_and_index_status_cover_every_project(group: Group) -> None:
    repos = group.call("list_repos")
    assert repos["project"] == group.group
    assert set(repos["projects"]) == group.members
    assert {(r["project"], r["repo"]) for r in repos["repos"]} == {
        (group.names["shop"], "main"),
        (group.names["garden"], "garden"),
        (group.names["ledger"], "main"),
    }
    assert repos["indexed"] is True
    status = group.call("index_status")
    assert status["project"] == group.group and status["indexed"] is True
    assert {s["project"] for s in status["projects"]} == group.members
    assert status["sweep_running"] is False


def test_a_group_of_one_answers_as_its_project(group: Group) -> None:
    # Byte for byte but for each hit's age: the two calls can fall in different seconds.
    def aged_out(result: dict[str, Any]) -> dict[str, Any]:
        hits = [{k: v for k, v in hit.items() if k != "index_age_s"} for hit in result["hits"]]
        return {**result, "hits": hits}

    for query in ("invoice number", "retry with backoff", "Invoice.total"):
        own = group.call("search_code", endpoint=group.names["shop"], query=query)
        solo = group.call("search_code", endpoint=group.names["solo"], query=query)
        assert all("index_age_s" in hit for hit in solo["hits"])
        assert aged_out(solo) == aged_out(own)


def test_a_group_ranks_as_one_project_holding_the_same_files(
    group: Group, database: Database
) -> None:
    # The same three trees as one project of three roots, searched directly: the group's
    # hits are the same files in the same order (vectors, keyword weights and lifts alike).
    served = group.served
    projects = [served.settings.projects[group.names[r]] for r in ("shop", "garden", "ledger")]
    roots = (
        Root(projects[0].roots[0].path, "shop"),
        Root(projects[1].roots[0].path, "garden"),
        Root(projects[2].roots[0].path, "ledger"),
    )
    whole = Project(unique_name("gwhole"), roots)
    with OllamaStandin() as standin:
        index(database, whole, standin)
        try:
            embedder = served.service.embedder
            for query in ("invoice number", "sleep between attempts", "plant", "post_entry"):
                one = search_code(database, whole, embedder, query, top_k=5)
                over = search_code(database, projects, embedder, query, top_k=5)
                label = {p.name: r.name for p, r in zip(projects, roots, strict=True)}
                assert [(label[h.project], h.path, h.start_line) for h in over] == [
                    (h.repo, h.path, h.start_line) for h in one
                ], query
        finally:
            drop_projects(database, [whole.name])


def test_an_unknown_endpoint_is_404(group: Group) -> None:
    response = group.served.rpc("nosuchgroup", "tools/list")
    assert response.status_code == 404
    assert "no project or group named" in response.json()["error"]["message"]


def test_the_sdk_client_calls_every_tool_over_a_group(group: Group) -> None:
    async def run() -> dict[str, Any]:
        http = httpx2.AsyncClient(headers={"X-RAG-Token": TOKEN}, timeout=30)
        seen: dict[str, Any] = {}
        url = group.served.url(group.group)
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            seen["instructions"] = client.server_info
            seen["search"] = await client.call_tool("search_code", {"query": "invoice number"})
            hit = seen["search"].structured_content["hits"][0]
            seen["chunk"] = await client.call_tool(
                "get_chunk", {"chunk_id": hit["chunk_id"], "project": hit["project"]}
            )
            seen["symbol"] = await client.call_tool("find_symbol", {"name": "post_entry"})
            seen["grep"] = await client.call_tool("grep", {"pattern": "round("})
            seen["refs"] = await client.call_tool("find_references", {"name": "Invoice"})
            seen["outline"] = await client.call_tool(
                "get_outline", {"repo": "garden", "path": "plants/water.go"}
            )
            seen["repos"] = await client.call_tool("list_repos", {})
            seen["status"] = await client.call_tool("index_status", {})
        return seen

    seen = anyio.run(run)
    for name in ("search", "chunk", "symbol", "grep", "refs", "outline", "repos", "status"):
        result = seen[name]
        assert not result.is_error, (name, result.content)
        assert json.loads(result.content[0].text) == result.structured_content
    assert seen["chunk"].structured_content["project"] == group.names["shop"]
    [symbol] = seen["symbol"].structured_content["symbols"]
    assert symbol["project"] == group.names["ledger"]
    assert seen["outline"].structured_content["project"] == group.names["garden"]


def test_a_group_s_term_statistics_are_those_of_its_projects_together() -> None:
    # 100 rows where "retry" is in 10% and 300 rows where it is in 1%: 13 of 400 rows.
    small = TermStats(100.0, {"retry": 0.10, "cache": 0.5}, 0.005)
    large = TermStats(300.0, {"retry": 0.01}, 0.002)
    merged = merged_stats([small, large])
    assert merged.rows == 400.0
    assert merged.shares["retry"] == pytest.approx(13 / 400)
    # A term the large project does not list counts at its floor there.
    assert merged.shares["cache"] == pytest.approx((50 + 0.6) / 400)
    assert merged.floor == pytest.approx((0.5 + 0.6) / 400)
    # One project's statistics are its own; a project with none yet weighs by its rows only.
    assert merged_stats([small]) is small
    empty = TermStats(0.0, {}, 0.0)
    assert merged_stats([small, empty]).shares["retry"] == pytest.approx(0.10)


@pytest.mark.parametrize("max_chars", [500, 800, 1500, 4000])
def test_a_group_s_answers_keep_to_the_budget(group: Group, max_chars: int) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_code", {"query": "invoice number round", "detail": "full"}),
        ("find_symbol", {"name": "t", "match": "prefix", "detail": "full"}),
        ("grep", {"pattern": "e", "detail": "full"}),
        ("find_references", {"name": "amount"}),
        ("get_outline", {"repo": "garden", "path": "plants/water.go"}),
        ("get_chunk", {"chunk_id": 1, "project": group.names["shop"]}),
        ("find_symbol", {"name": "Invoice", "project": group.names["shop"]}),
    ]
    for tool, arguments in calls:
        found = group.call(tool, max_chars=max_chars, **arguments)
        text = json.dumps(found, ensure_ascii=False)
        assert len(text) <= max_chars, (tool, len(text))
        if found.get("omitted"):
            assert found["truncated"] is True and "For the rest" in found["note"]
    lines = group.call("grep", pattern="e", max_chars=500)
    assert lines["complete"] is False and lines["omitted"] > 0
    assert {m["project"] for m in lines["matches"]} <= group.members
    pointers = group.call("find_symbol", name="post_entry", detail="pointers")["symbols"]
    assert pointers and all("signature" not in s for s in pointers)


def test_the_admin_status_names_the_groups(group: Group) -> None:
    served = group.served
    reply = served.http.post("/rag-admin", json={"jsonrpc": "2.0", "id": 1, "method": "status"})
    groups = reply.json()["result"]["groups"]
    assert set(groups[group.group]) == group.members
    assert groups[group.names["solo"]] == [group.names["shop"]]
