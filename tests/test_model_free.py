"""Model-free (`[embedding] provider = none`): code-rag with no model at all.

A project is swept and served with no embedder: rows only, nothing recorded as a model, nothing
pending, no model contacted (the Ollama stand-in is configured as the host and must see no
request); every tool answers, the official MCP client validates each result against its
schema, and the status says vectors are off. Switching the same index to a model later embeds
its chunks in the background as a first index does, without reading the files again; switching
from a model to none keeps the vectors, unused, and the model recorded stays theirs.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytest.register_assert_rewrite("server_fixtures")

from cli_fixtures import bld, env, own_dsn, workspace  # noqa: E402
from ollama_standin import OllamaStandin, StandinModel  # noqa: E402
from server_fixtures import (  # noqa: E402
    SHOP_FILES,
    TOKEN,
    GatedEmbedder,
    Served,
    call,
    drop_projects,
    make_project,
    running,
    server_settings,
    standin_embedder,
    unique_name,
    wait_for,
)

from indexer.db import Schema, store  # noqa: E402
from indexer.embed import make_embedder  # noqa: E402
from indexer.errors import InvalidArgument  # noqa: E402
from indexer.project import Project  # noqa: E402
from indexer.search import search_code  # noqa: E402
from indexer.status import project_status  # noqa: E402
from indexer.sweep import apply_changes, sweep_project  # noqa: E402
from indexer.sweep.run import DEFER_VECTORS_FILES  # noqa: E402
from indexer.sweep.vectors import embed_pending  # noqa: E402
from rag_server.app import create_app  # noqa: E402
from rag_server.config import EmbeddingSettings, Settings  # noqa: E402

if TYPE_CHECKING:
    from indexer.db import Database

pytest_plugins = ["server_fixtures"]
__all__ = ["own_dsn", "workspace"]

# Enough files that a sweep with a model would write rows first and embed afterwards.
FILES = dict(SHOP_FILES) | {
    f"handlers/h{i}.py": f"def handler_{i}(request):\n    return request.reply({i})\n"
    for i in range(DEFER_VECTORS_FILES)
}
TOOLS = {
    "search_code",
    "get_chunk",
    "list_repos",
    "index_status",
    "find_symbol",
    "get_outline",
    "grep",
    "find_references",
}


def model_free(settings: Settings, standin: OllamaStandin) -> Settings:
    """`settings` with provider = none; the host still names the stand-in, which must then
    see no request at all."""
    return dataclasses.replace(settings, embedding=EmbeddingSettings("none", host=standin.url))


@pytest.fixture
def project(work_dir: Path, database: Database) -> Iterator[Project]:
    made = make_project(unique_name("free"), work_dir / "free", FILES, label="free")
    yield made
    drop_projects(database, [made.name])


def vectors_of(database: Database, project: Project) -> dict[int, bool]:
    """Each chunk's id and whether it has its vector."""
    with database.connection() as conn:
        rows = conn.execute(
            Schema(project.name).sql("SELECT id, embedding IS NOT NULL FROM {schema}.rag_chunk")
        ).fetchall()
    return {int(cid): bool(has) for cid, has in rows}


def meta(database: Database, project: Project, key: str) -> Any:
    with database.connection() as conn:
        return store.get_meta(conn, Schema(project.name), key)


async def every_tool(url: str) -> dict[str, Any]:
    """Every tool called through the official MCP client, which validates each structured
    result against the tool's outputSchema."""
    http = httpx2.AsyncClient(headers={"X-RAG-Token": TOKEN}, timeout=30)
    seen: dict[str, Any] = {}
    async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
        seen["tools"] = {tool.name for tool in (await client.list_tools()).tools}
        calls = {
            "search_code": {"query": "invoice number"},
            "list_repos": {},
            "index_status": {},
            "find_symbol": {"name": "Invoice.total"},
            "get_outline": {"repo": "free", "path": "billing/invoice.py"},
            "grep": {"pattern": "round(sum"},
            "find_references": {"name": "sleep"},
        }
        for name, arguments in calls.items():
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            seen[name] = result.structured_content
        hit = seen["search_code"]["hits"][0]
        chunk = await client.call_tool("get_chunk", {"chunk_id": hit["chunk_id"]})
        assert not chunk.is_error
        seen["get_chunk"] = chunk.structured_content
    return seen


def test_a_model_free_project_is_swept_and_served_with_every_tool(
    work_dir: Path, project: Project, ollama_standin: OllamaStandin, database: Database
) -> None:
    group = f"{project.name}_all"
    settings = model_free(
        server_settings(
            work_dir,
            {project.name: project},
            ollama_standin,
            database.dsn,
            groups={group: (project.name,)},
        ),
        ollama_standin,
    )
    # No embedder is given: the app makes what the settings ask for, which is none. The
    # scheduler sweeps the never-swept project at startup.
    app = create_app(settings, database=database, watch=False)
    with running(app, settings) as served:
        name = project.name
        status = wait_for(
            lambda: (s := call(served, name, "index_status", {}))["last_sweep_at"] and s,
            what="the startup sweep",
        )
        service = served.service
        assert service.embedder is None and service.model_free
        assert status["embedding"] == {"provider": "none"} and status["vectors"] == "off"
        assert status["vectors_pending"] == 0 and status["vectors_ready"] is None
        assert status["files"] == len(FILES) and status["vectors_running"] is False
        assert status["last_run"]["report"]["vectors_deferred"] == 0

        seen = anyio.run(every_tool, served.url(name))
        assert seen["tools"] == TOOLS
        found = seen["search_code"]
        assert found["hits"][0]["path"] == "billing/invoice.py"
        assert found["vectors"] == "off" and "vectors are off" in found["note"]
        assert "vectors_ready" not in found
        assert seen["list_repos"]["vectors"] == "off"
        assert seen["list_repos"]["vectors_pending"] == 0
        assert seen["index_status"]["vectors"] == "off"
        assert [s["path"] for s in seen["find_symbol"]["symbols"]] == ["billing/invoice.py"]
        assert [m["path"] for m in seen["grep"]["matches"]] == ["billing/invoice.py"]
        assert {r["path"] for r in seen["find_references"]["references"]} == {"net/retry.py"}
        assert seen["get_outline"]["symbols"]
        assert seen["get_chunk"]["path"] == "billing/invoice.py"
        # A name is found by its definition, as the hybrid's keyword side finds it.
        named = call(served, name, "search_code", {"query": "handler_7"})
        assert named["hits"][0]["path"] == "handlers/h7.py"

        # A group's endpoint (a group of this one project here) says the same.
        together = call(served, group, "index_status", {})
        assert together["vectors"] == "off" and together["project"] == name
        assert call(served, group, "search_code", {"query": "invoice number"})["vectors"] == "off"

        # The admin endpoint's status (what `./bld status --server` prints) says the same.
        admin = served.http.post(
            "/rag-admin",
            json={"jsonrpc": "2.0", "id": 1, "method": "status", "params": {"project": name}},
        ).json()["result"]
        assert admin["vectors"] == "off" and admin["embedding"] == {"provider": "none"}

        # Nothing was embedded or asked of a model, and no background thread was started.
        assert service.vectors.state(name)["last_vectors_run"] is None
        assert service.vectors._thread is None
    assert ollama_standin.embed_requests == 0 and ollama_standin.show_requests == 0
    assert ollama_standin.tags_requests == 0 and ollama_standin.version_requests == 0
    assert vectors_of(database, project) and not any(vectors_of(database, project).values())
    assert meta(database, project, "embedding") is None
    with database.connection() as conn:
        assert store.embedding_dimension(conn, Schema(project.name)) is None


def test_vector_mode_without_a_model_says_vectors_are_off(
    project: Project, database: Database
) -> None:
    sweep_project(database, project, None)
    with pytest.raises(InvalidArgument, match="vectors are off") as caught:
        search_code(database, project, None, "invoice number", mode="vector")
    assert "provider = local" in str(caught.value)
    # The default mode answers from keywords and names, exactly as keyword mode ranks.
    hybrid = search_code(database, project, None, "invoice number")
    keyword = search_code(database, project, None, "invoice number", mode="keyword")
    assert hybrid and [ranked(h) for h in hybrid] == [ranked(h) for h in keyword]


def test_file_events_apply_with_no_model(project: Project, database: Database) -> None:
    # What the watcher applies between sweeps: the edited file's rows, and no vector.
    sweep_project(database, project, None)
    target = project.roots[0].path / "handlers" / "h1.py"
    target.write_text("def handler_one(request):\n    return request.reply(1)\n")
    report = apply_changes(database, project, None, {"free": ["handlers/h1.py"]})
    assert report is not None and report.files_changed == 1 and report.vectors_deferred == 0
    hits = search_code(database, project, None, "handler_one")
    assert hits[0].path == "handlers/h1.py" and hits[0].symbol == "handler_one"
    assert not any(vectors_of(database, project).values())


def ranked(hit: Any) -> tuple[str, int, int, float]:
    return (hit.path, hit.start_line, hit.end_line, hit.score)


def test_switching_a_model_free_index_to_a_model_embeds_it_in_the_background(
    work_dir: Path, project: Project, ollama_standin: OllamaStandin, database: Database
) -> None:
    swept = sweep_project(database, project, None)
    assert swept.files_changed == len(FILES) and swept.chunks_embedded == 0
    before = vectors_of(database, project)
    with database.connection() as conn:
        indexed_at = conn.execute(
            Schema(project.name).sql("SELECT path, indexed_at FROM {schema}.rag_file")
        ).fetchall()
    # The same index served with a model: the startup queue finds every chunk pending and
    # embeds them in the background (the gate holds the first batch while the test looks).
    settings = server_settings(work_dir, {project.name: project}, ollama_standin, database.dsn)
    gated = GatedEmbedder(standin_embedder(ollama_standin))
    app = create_app(settings, database=database, embedder=gated, watch=False)
    with running(app, settings) as served:
        name = project.name
        wait_for(gated.waiting.is_set, what="the background vectors to start")
        status = call(served, name, "index_status", {})
        assert status["vectors"] == "on" and status["vectors_running"] is True
        assert status["vectors_pending"] >= len(before) and status["vectors_ready"] == 0.0
        assert status["embedding"]["model"] == "nomic-embed-text:v1.5"
        meanwhile = call(served, name, "search_code", {"query": "generate_number"})
        assert "Invoice.generate_number" in meanwhile["hits"][0]["symbols"]
        assert meanwhile["vectors_ready"] == 0.0 and "vectors" not in meanwhile

        gated.gate.set()
        done = wait_for(partial(all_embedded, served, name), what="every vector to be in")
        assert done["last_vectors_run"]["outcome"] == "ok"
        assert done["vectors_ready"] == 1.0
        # Searches read the pending count at most every two seconds: wait for the new one.
        found = wait_for(
            partial(complete_search, served, name, "sleep longer between attempts"),
            what="search to see every vector",
        )
        assert found["hits"][0]["path"] == "net/retry.py" and "note" not in found
    # The same chunks, not read again: only their vectors were added.
    after = vectors_of(database, project)
    assert after.keys() == before.keys() and all(after.values())
    with database.connection() as conn:
        schema = Schema(project.name)
        assert (
            conn.execute(schema.sql("SELECT path, indexed_at FROM {schema}.rag_file")).fetchall()
            == indexed_at
        )
        assert store.embedding_dimension(conn, schema) == 768
        assert not store.vector_indexes_missing(conn, schema)
    assert meta(database, project, "embedding")["model"] == "nomic-embed-text:v1.5"
    vector = search_code(
        database, project, standin_embedder(ollama_standin), "exponential backoff", mode="vector"
    )
    assert vector and vector[0].path == "net/retry.py"


def complete_search(served: Served, name: str, query: str) -> dict[str, Any] | None:
    found = call(served, name, "search_code", {"query": query})
    return None if "vectors_ready" in found else found


def all_embedded(served: Served, name: str) -> dict[str, Any] | None:
    status = call(served, name, "index_status", {})
    done = status["vectors_pending"] == 0 and status["last_vectors_run"] is not None
    return status if done else None


def test_switching_a_model_off_keeps_its_vectors_and_back_embeds_only_the_new_text(
    project: Project, ollama_standin: OllamaStandin, database: Database
) -> None:
    model = standin_embedder(ollama_standin)
    sweep_project(database, project, model)
    embed_pending(database, project, model)
    recorded = meta(database, project, "embedding")
    assert all(vectors_of(database, project).values())

    # Model-free from now on: an edited file's new text gets no vector, the rest keep theirs,
    # and the model recorded is still the one whose vectors the index holds.
    target = project.roots[0].path / "handlers" / "h3.py"
    target.write_text("def handler_3(request):\n    return request.refuse(3)\n", encoding="utf-8")
    ollama_standin.reset_counters()
    report = sweep_project(database, project, None)
    assert report.files_changed == 1 and ollama_standin.embedding_calls == 0
    held = vectors_of(database, project)
    assert list(held.values()).count(False) == 1
    assert meta(database, project, "embedding") == recorded
    with database.connection() as conn:
        status = project_status(conn, project, model_free=True)
    assert status.vectors == "off" and status.vectors_pending == 0
    assert status.kept_embedding == recorded and status.embedding == {"provider": "none"}

    # The same model again: only the new text is embedded.
    again = embed_pending(database, project, model)
    assert again.outcome == "ok" and again.chunks_embedded == 1
    assert all(vectors_of(database, project).values())

    # A full sweep with no model drops every row, the kept vectors with them: no model is
    # recorded any more, and the next model takes the index up as a model-free one.
    sweep_project(database, project, None, full=True)
    assert not any(vectors_of(database, project).values())
    assert meta(database, project, "embedding") is None
    # Another model (another dimension) then embeds the same rows, none read again.
    before = vectors_of(database, project)
    with OllamaStandin([StandinModel("all-minilm", 384)]) as other:
        small = make_embedder("ollama", "all-minilm", other.url)
        taken = embed_pending(database, project, small)
    assert taken.outcome == "ok" and taken.written > len(before)  # the chunks, the definitions
    assert vectors_of(database, project).keys() == before.keys()
    assert all(vectors_of(database, project).values())
    assert meta(database, project, "embedding")["model"] == "all-minilm"
    with database.connection() as conn:
        assert store.embedding_dimension(conn, Schema(project.name)) == 384


def free_workspace(workspace: Path, standin: OllamaStandin) -> Path:
    """The CLI workspace (project "shop") configured model-free, the host naming the
    stand-in, which must see no request."""
    ini = workspace / "application.ini"
    text = ini.read_text(encoding="utf-8").replace("provider = ollama", "provider = none")
    ini.write_text(text, encoding="utf-8")
    return workspace


def test_the_cli_scans_searches_and_reports_model_free(
    workspace: Path, ollama_standin: OllamaStandin
) -> None:
    folder = free_workspace(workspace, ollama_standin)
    scanned = bld(folder, "scan", "shop")
    assert scanned.returncode == 0, scanned.stderr
    [report] = scanned.stdout.splitlines()  # no second phase: nothing is left to embed
    assert report.startswith("shop: ok — 2 files seen, 2 indexed")
    assert "chunks written (model-free: no vectors) in " in report

    status = bld(folder, "status", "shop")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[1].endswith("model none (model-free: vectors off)")
    assert (
        "  vectors: off — model-free ([embedding] provider = none): search ranks by keywords "
        "and names; set provider = local or ollama to embed the index"
    ) in lines
    assert not any("pending" in line for line in lines)
    [project] = json.loads(bld(folder, "status", "shop", "--json").stdout)["projects"]
    assert project["embedding"] == {"provider": "none"} and project["vectors"] == "off"
    assert project["vectors_pending"] == 0 and project["vectors_ready"] is None

    found = bld(folder, "search", "shop", "slugify", "--top-k", "3")
    assert found.returncode == 0, found.stderr
    assert found.stdout.split()[:2] == ["shop/util.py:1-2", "slugify"]
    symbols = bld(folder, "symbols", "shop", "Invoice.total")
    assert symbols.returncode == 0 and "billing/invoice.py" in symbols.stdout
    assert ollama_standin.embed_requests == ollama_standin.show_requests == 0

    # A model later: the next scan reads no file again and embeds every chunk already there.
    ini = folder / "application.ini"
    ini.write_text(ini.read_text().replace("provider = none", "provider = ollama"))
    again = bld(folder, "scan", "shop")
    assert again.returncode == 0, again.stderr
    output = again.stdout.splitlines()
    assert "0 indexed, 2 unchanged" in output[0]
    [vectors] = [line for line in output if line.startswith("shop: vectors done — ")]
    assert ", 0 pending" in vectors
    lines = bld(folder, "status", "shop").stdout.splitlines()
    assert lines[1].endswith("model ollama nomic-embed-text:v1.5 (768-d)")
    assert not any("vectors" in line for line in lines)


# Runs the CLI's commands in one interpreter, then names the embedding runtimes it imported.
NO_MODEL_LOADED = """
import json, sys
from rag_server.cli import app
for args in (["scan", "shop"], ["search", "shop", "Invoice total"], ["status", "shop"],
             ["grep", "shop", "sum(self"]):
    try:
        app(args, standalone_mode=False)
    except SystemExit as exc:
        assert not exc.code, (args, exc.code)
names = ("onnxruntime", "tokenizers", "ollama", "indexer.embed.local", "indexer.embed.ollama")
print(json.dumps([name for name in names if name in sys.modules]))
"""


def test_no_model_runtime_is_even_imported_model_free(
    workspace: Path, ollama_standin: OllamaStandin
) -> None:
    folder = free_workspace(workspace, ollama_standin)
    done = subprocess.run(
        [sys.executable, "-c", NO_MODEL_LOADED],
        cwd=folder, env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
