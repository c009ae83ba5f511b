"""Who gets in, and what they may read: the token, the refusal, browsers, paths, secrets, binding.

Guards: the token is compared in constant time and never logged nor echoed; a refusal is the
same whether or not the project exists; a browser page from anywhere but localhost is refused
even with the token; hostile paths and symlinks never make the server read outside a project's
roots; one project's chunk ids find nothing in another; secret files are never indexed, so no
search can return them; the server binds to loopback by default and warns loudly otherwise.
(The basic 403/404/413 answers are in test_server_http.py.)
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

pytest.register_assert_rewrite("server_fixtures")

from ollama_standin import OllamaStandin  # noqa: E402
from server_fixtures import (  # noqa: E402
    GARDEN_FILES,
    SHOP_FILES,
    TOKEN,
    Served,
    index,
    make_project,
    serve,
    unique_name,
)

from indexer.db import Database  # noqa: E402
from rag_server import app as app_module  # noqa: E402
from rag_server import cli  # noqa: E402
from rag_server.config import ServerSettings  # noqa: E402

pytest_plugins = ["server_fixtures"]

V25 = {"MCP-Protocol-Version": "2025-11-25"}
SECRET_MARK = "SECRET_MARKER_d41d8cd98f00"


def call(served: Served, project: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = served.rpc(
        project, "tools/call", {"name": tool, "arguments": arguments}, headers=V25
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


# --- the token -----------------------------------------------------------------------------------


def test_the_token_is_compared_in_constant_time(
    shop: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(app_module.hmac, "compare_digest", spy)
    assert shop.rpc(shop.project, "ping").status_code == 200
    bad = shop.rpc(shop.project, "ping", headers={"X-RAG-Token": "x" + TOKEN[1:]})
    assert bad.status_code == 403
    assert seen == [(TOKEN.encode(), TOKEN.encode()), (b"x" + TOKEN[1:].encode(), TOKEN.encode())]


def test_the_token_is_never_logged_nor_echoed(
    shop: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-token-" + "7" * 20
    answers = [
        shop.rpc(shop.project, "ping"),
        shop.rpc(shop.project, "tools/call", {"name": "search_code", "arguments": {"query": "x"}}),
        shop.rpc(shop.project, "ping", headers={"X-RAG-Token": wrong}),
        shop.rpc(shop.project, "ping", headers={"X-RAG-Token": "", "Authorization": wrong}),
        shop.rpc(shop.project, "ping", headers={"Origin": "http://evil.example"}),
        shop.http.post("/rag-admin", content=b"{not json", headers={"X-RAG-Token": wrong}),
        shop.http.post("/rag-admin", json={"jsonrpc": "2.0", "id": 1, "method": "status"}),
    ]
    shop.standin.fail_all = (500, "llama runner process has terminated")  # type: ignore[union-attr]
    try:
        answers.append(
            shop.rpc(
                shop.project, "tools/call", {"name": "search_code", "arguments": {"query": "q"}}
            )
        )
    finally:
        shop.standin.reset_switches()  # type: ignore[union-attr]
    for response in answers:
        assert TOKEN not in response.text and wrong not in response.text
        assert all(TOKEN not in v and wrong not in v for v in response.headers.values())
    logged = "\n".join(r.getMessage() + str(r.args) + str(r.exc_info) for r in caplog.records)
    assert TOKEN not in logged and wrong not in logged


def test_a_refusal_does_not_reveal_whether_a_project_exists(shop: Served) -> None:
    # With a wrong (or no) token, an existing and a made-up project get the very same answer.
    for headers in ({"X-RAG-Token": "nope"}, {"X-RAG-Token": ""}):
        real = shop.rpc(shop.project, "tools/list", headers=headers)
        made_up = shop.rpc("no_such_project_x", "tools/list", headers=headers)
        assert real.status_code == made_up.status_code == 403
        assert real.content == made_up.content
        assert "www-authenticate" not in real.headers
        assert shop.project not in real.text


# --- browsers ------------------------------------------------------------------------------------


HOSTILE_ORIGINS = [
    "http://evil.example",
    "https://localhost.evil.example",
    "http://127.0.0.1.nip.io",
    "http://localhost@evil.example",
    "null",
    "file://",
    "chrome-extension://abcdefghijklmnop",
    "http://[::ffff:7f00:1]",
    "http://0.0.0.0",
    "ftp://localhost",
]


@pytest.mark.parametrize("origin", HOSTILE_ORIGINS)
def test_browser_origins_that_are_not_localhost_are_refused_even_with_the_token(
    shop: Served, origin: str
) -> None:
    for response in (
        shop.rpc(shop.project, "ping", headers={"Origin": origin}),
        shop.http.post(
            "/rag-admin",
            json={"jsonrpc": "2.0", "id": 1, "method": "status"},
            headers={"Origin": origin},
        ),
    ):
        assert response.status_code == 403, origin
        assert response.json()["error"]["code"] == -32003


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080", "http://localhost"],
)
def test_localhost_origins_are_allowed(shop: Served, origin: str) -> None:
    assert shop.rpc(shop.project, "ping", headers={"Origin": origin}).status_code == 200


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(host=st.from_regex(r"[a-z0-9.\-]{1,30}", fullmatch=True))
def test_generated_origins_pass_only_when_they_are_loopback(shop: Served, host: str) -> None:
    response = shop.rpc(shop.project, "ping", headers={"Origin": f"http://{host}"})
    expected = 200 if host in ("localhost", "127.0.0.1") else 403
    assert response.status_code == expected, host


# --- paths and projects --------------------------------------------------------------------------


@pytest.fixture
def hostile(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> Iterator[tuple[Served, str, str, Path]]:
    """Two projects served together; shop's tree holds a secret file and a symlink out of its
    root, and a file outside every root holds a marker no answer may ever contain."""
    outside = work_dir / "outside"
    outside.mkdir()
    (outside / "private.py").write_text(f"API_KEY = '{SECRET_MARK}'\n", encoding="utf-8")
    files = {
        **SHOP_FILES,
        ".env": f"TOKEN={SECRET_MARK}\n",
        "deploy/server.pem": f"-----BEGIN PRIVATE KEY-----\n{SECRET_MARK}\n",
        "config/credentials.json": f'{{"key": "{SECRET_MARK}"}}\n',
    }
    shop = make_project(unique_name("sec"), work_dir / "shop", files, label="shop")
    root = next(iter(shop.roots)).path
    (root / "linked_out.py").symlink_to(outside / "private.py")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    garden = make_project(unique_name("secg"), work_dir / "garden", GARDEN_FILES, label="garden")
    index(database, shop, ollama_standin)
    index(database, garden, ollama_standin)
    projects = {shop.name: shop, garden.name: garden}
    for served in serve(work_dir, projects, ollama_standin, database):
        yield served, shop.name, garden.name, root


def all_hits(served: Served, project: str, query: str, **filters: Any) -> list[dict[str, Any]]:
    result = call(served, project, "search_code", {"query": query, "top_k": 50, **filters})
    assert result["isError"] is False, result
    hits: list[dict[str, Any]] = result["structuredContent"]["hits"]
    return hits


def test_secrets_and_symlinks_out_of_a_root_are_never_indexed_nor_served(
    hostile: tuple[Served, str, str, Path],
) -> None:
    served, shop, _garden, _root = hostile
    for query in (SECRET_MARK, "API_KEY", "PRIVATE KEY", "credentials key", "TOKEN"):
        for hit in all_hits(served, shop, query):
            assert SECRET_MARK not in hit["snippet"]
            assert hit["path"] not in (".env", "deploy/server.pem", "config/credentials.json")
            assert not hit["path"].startswith(("linked_out", "linked_dir"))


@pytest.mark.parametrize(
    "filters",
    [
        {"path_glob": "../**"},
        {"path_glob": "../outside/*.py"},
        {"path_glob": "/etc/*"},
        {"path_glob": "**/../../**"},
        {"repo": "../outside"},
        {"repo": "/"},
        {"path_glob": "linked_dir/**"},
    ],
)
def test_hostile_filters_reach_nothing_outside_the_roots(
    hostile: tuple[Served, str, str, Path], filters: dict[str, str]
) -> None:
    served, shop, _garden, root = hostile
    result = call(served, shop, "search_code", {"query": "API_KEY private", **filters})
    assert SECRET_MARK not in str(result)
    if not result["isError"]:
        for hit in result["structuredContent"]["hits"]:
            assert Path(hit["absolute_path"]).resolve().is_relative_to(root.resolve())


def test_a_file_swapped_for_a_symlink_after_indexing_is_not_followed_out(
    hostile: tuple[Served, str, str, Path],
) -> None:
    # get_chunk with context lines reads the file again: the path comes from the index, but the
    # file on disk may have become a symlink out of the root since. It must not be followed.
    served, shop, _garden, root = hostile
    [hit] = [
        h
        for h in all_hits(served, shop, "Invoice generate_number")
        if h["path"].startswith("billing/")
    ][:1]
    target = root / hit["path"]
    target.unlink()
    target.symlink_to(root.parent / "outside" / "private.py")
    result = call(served, shop, "get_chunk", {"chunk_id": hit["chunk_id"], "context_lines": 50})
    assert SECRET_MARK not in str(result)


def test_another_projects_chunk_ids_find_nothing(hostile: tuple[Served, str, str, Path]) -> None:
    served, shop, garden, _root = hostile
    garden_ids = [h["chunk_id"] for h in all_hits(served, garden, "WaterSchedule cactus")]
    shop_ids = {h["chunk_id"] for h in all_hits(served, shop, "invoice retry readme")}
    assert garden_ids
    for chunk_id in garden_ids:
        if chunk_id in shop_ids:
            continue  # ids are per schema: the same number may exist in both, as its own row
        result = call(served, shop, "get_chunk", {"chunk_id": chunk_id, "context_lines": 5})
        assert result["isError"] is True
        assert "WaterSchedule" not in str(result) and "cactus" not in str(result)
    # And ids that exist nowhere, or are not ids at all, are tool errors too.
    for chunk_id in (2**31 - 1, 2**62, -1, 0):
        result = call(served, shop, "get_chunk", {"chunk_id": chunk_id})
        assert result["isError"] is True


# --- binding -------------------------------------------------------------------------------------


def test_the_server_binds_to_loopback_by_default() -> None:
    assert ServerSettings().host == "127.0.0.1"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20"])
def test_binding_elsewhere_warns_loudly(
    host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(app_module, "check_port_free", lambda settings: None)
    monkeypatch.setattr(app_module, "serve_forever", lambda settings, **kw: served.append(settings))
    (tmp_path / "application.ini").write_text("[server]\ntoken = t0k3n-abcdefghijkl\n")
    (tmp_path / "rag-projects.json").write_text('{"projects": {}}')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}
    result = CliRunner(env=env).invoke(
        cli.app, ["serve", "--host", host, "--config", str(tmp_path / "application.ini")]
    )
    assert result.exit_code == 0, result.output
    assert served and served[0].server.host == host
    assert "WARNING" in result.output and f"{host}" in result.output
    assert "not only this machine" in result.output


def test_loopback_binding_does_not_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "check_port_free", lambda settings: None)
    monkeypatch.setattr(app_module, "serve_forever", lambda settings, **kw: None)
    (tmp_path / "application.ini").write_text("[server]\ntoken = t0k3n-abcdefghijkl\n")
    (tmp_path / "rag-projects.json").write_text('{"projects": {}}')
    result = CliRunner().invoke(cli.app, ["serve", "--config", str(tmp_path / "application.ini")])
    assert result.exit_code == 0, result.output
    assert "WARNING" not in result.output
