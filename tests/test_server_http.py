"""Raw HTTP against the real app under uvicorn: every refusal and error path of the endpoint.

Each test states the behaviour it guards. The token, Host and Origin checks come before any
routing of the request; JSON-RPC errors carry the codes of JSON-RPC and MCP; nothing waits
on a timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from server_fixtures import Served

pytest_plugins = ["server_fixtures"]
TOKEN = "test-token-0123456789abcdef"  # server_fixtures.TOKEN

MODERN = "2026-07-28"
CAPS = "io.modelcontextprotocol/clientCapabilities"
PV = "io.modelcontextprotocol/protocolVersion"


def modern_params(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"_meta": {PV: MODERN, CAPS: {}}, **(extra or {})}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    error: dict[str, Any] = body["error"]
    assert "Traceback" not in error["message"]
    return error


# --- auth, Host, Origin ---------------------------------------------------------------------------


def test_missing_token_is_403_without_www_authenticate(shop: Served) -> None:
    # A 401 would send Claude Code into OAuth discovery: the refusal is 403 with a JSON-RPC body.
    response = httpx.post(
        shop.url(shop.project), json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
    )
    assert response.status_code == 403
    assert "www-authenticate" not in response.headers
    error = error_of(response)
    assert "X-RAG-Token" in error["message"]


def test_wrong_token_is_403(shop: Served) -> None:
    response = httpx.post(
        shop.url(shop.project),
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"X-RAG-Token": TOKEN[:-1] + "x"},
    )
    assert response.status_code == 403
    assert "www-authenticate" not in response.headers


def test_bearer_token_is_accepted(shop: Served) -> None:
    response = httpx.post(
        shop.url(shop.project),
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_foreign_origin_is_403_before_the_token(shop: Served) -> None:
    # DNS rebinding: a page of another origin is refused even with a valid token.
    response = shop.http.post(
        f"/rag-mcp/{shop.project}",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert "Origin" in error_of(response)["message"]
    localhost = shop.http.post(
        f"/rag-mcp/{shop.project}",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Origin": "http://localhost:3000"},
    )
    assert localhost.status_code == 200


def test_non_loopback_host_is_refused(shop: Served) -> None:
    response = shop.http.post(
        f"/rag-mcp/{shop.project}",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Host": "attacker.example:17080"},
    )
    assert response.status_code == 403
    assert "Host" in error_of(response)["message"]


def test_well_known_and_register_are_plain_404(shop: Served) -> None:
    # Claude Code probes these for OAuth; a 404 tells it there is no OAuth here.
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/register",
    ):
        assert httpx.get(shop.server.base + path).status_code == 404
        assert httpx.post(shop.server.base + path, json={}).status_code == 404


def test_admin_needs_the_token_too(shop: Served) -> None:
    response = httpx.post(
        shop.server.base + "/rag-admin", json={"jsonrpc": "2.0", "id": 1, "method": "status"}
    )
    assert response.status_code == 403


# --- routing --------------------------------------------------------------------------------------


def test_unknown_project_is_404_naming_no_other_project(shop: Served) -> None:
    response = shop.rpc("nosuchproject", "ping")
    assert response.status_code == 404
    message = error_of(response)["message"]
    assert "nosuchproject" in message
    assert shop.project not in message


def test_get_and_delete_are_405_with_allow_post_after_auth(shop: Served) -> None:
    for method in ("GET", "DELETE"):
        response = shop.http.request(method, f"/rag-mcp/{shop.project}")
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"
        anonymous = httpx.request(method, shop.url(shop.project))
        assert anonymous.status_code == 403


def test_oversized_body_is_refused(shop: Served) -> None:
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 2_000_000}}
    response = shop.http.post(f"/rag-mcp/{shop.project}", json=big)
    assert response.status_code == 413
    assert error_of(response)["code"] == -32600


# --- JSON-RPC envelope ----------------------------------------------------------------------------


def test_parse_error(shop: Served) -> None:
    response = shop.http.post(
        f"/rag-mcp/{shop.project}",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == -32700
    assert response.json()["id"] is None


def test_batch_is_invalid_request(shop: Served) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]
    response = shop.http.post(f"/rag-mcp/{shop.project}", json=batch)
    assert response.status_code == 400
    assert error_of(response)["code"] == -32600


@pytest.mark.parametrize(
    "body",
    [
        {"id": 1, "method": "ping"},  # no jsonrpc
        {"jsonrpc": "2.0", "id": 1},  # no method
        {"jsonrpc": "2.0", "id": None, "method": "ping"},  # null id
        {"jsonrpc": "2.0", "id": True, "method": "ping"},  # boolean id
        "ping",
    ],
)
def test_malformed_messages_are_invalid_request(shop: Served, body: Any) -> None:
    response = shop.http.post(f"/rag-mcp/{shop.project}", json=body)
    assert response.status_code == 400
    assert error_of(response)["code"] == -32600


def test_notifications_and_client_responses_get_202_and_no_body(shop: Served) -> None:
    for body in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
        {"jsonrpc": "2.0", "id": 7, "result": {}},
        {"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}},
    ):
        response = shop.http.post(f"/rag-mcp/{shop.project}", json=body)
        assert response.status_code == 202
        assert response.content == b""


def test_ping_answers_empty_object_and_meta_is_ignored(shop: Served) -> None:
    response = shop.rpc(shop.project, "ping", {"_meta": {"progressToken": 5}}, request_id="abc")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"jsonrpc": "2.0", "id": "abc", "result": {}}


def test_unknown_method(shop: Served) -> None:
    response = shop.rpc(shop.project, "resources/list")
    assert error_of(response)["code"] == -32601


def test_params_must_be_an_object(shop: Served) -> None:
    response = shop.rpc(shop.project, "tools/list", [1, 2])  # type: ignore[arg-type]
    assert error_of(response)["code"] == -32602


def test_unknown_tool_and_missing_name_are_invalid_params(shop: Served) -> None:
    unknown = shop.rpc(shop.project, "tools/call", {"name": "rm_rf", "arguments": {}})
    error = error_of(unknown)
    assert error["code"] == -32602
    assert "search_code" in error["message"]
    nameless = shop.rpc(shop.project, "tools/call", {"arguments": {}})
    assert error_of(nameless)["code"] == -32602
    bad_arguments = shop.rpc(shop.project, "tools/call", {"name": "list_repos", "arguments": [1]})
    assert error_of(bad_arguments)["code"] == -32602


def test_unusable_arguments_are_tool_errors_not_protocol_errors(shop: Served) -> None:
    # The agent sees isError results and can correct itself; protocol errors it may never see.
    cases = [
        {"name": "search_code", "arguments": {}},
        {"name": "search_code", "arguments": {"query": "invoice", "top_k": 0}},
        {"name": "search_code", "arguments": {"query": "invoice", "top_k": "ten"}},
        {"name": "search_code", "arguments": {"query": "invoice", "repo": "nope"}},
        {"name": "search_code", "arguments": {"query": "invoice", "colour": "red"}},
        {"name": "get_chunk", "arguments": {"chunk_id": 987654321}},
    ]
    for params in cases:
        response = shop.rpc(shop.project, "tools/call", params)
        assert response.status_code == 200, params
        result = response.json()["result"]
        assert result["isError"] is True, params
        text = result["content"][0]["text"]
        assert text and "Traceback" not in text


def test_backend_failure_is_a_tool_error(shop: Served) -> None:
    # The embedder failing is the backend failing: isError with a message, not -32603.
    assert shop.standin is not None
    shop.standin.fail_all = (500, "llama runner process has terminated: exit status 2")
    try:
        response = shop.rpc(
            shop.project, "tools/call", {"name": "search_code", "arguments": {"query": "invoice"}}
        )
    finally:
        shop.standin.reset_switches()
    result = response.json()["result"]
    assert result["isError"] is True
    assert "Traceback" not in result["content"][0]["text"]


# --- versions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_echoes_a_supported_version(shop: Served, version: str) -> None:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    result = shop.rpc(shop.project, "initialize", params).json()["result"]
    assert result["protocolVersion"] == version
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["serverInfo"]["name"] == "code-rag"
    assert "mcp-session-id" not in shop.rpc(shop.project, "initialize", params).headers


def test_initialize_with_another_version_gets_the_latest_handshake_version(shop: Served) -> None:
    for asked in ("2024-11-05", "2099-01-01", "2026-07-28"):
        params = {
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        result = shop.rpc(shop.project, "initialize", params).json()["result"]
        assert result["protocolVersion"] == "2025-11-25"


def test_unsupported_version_header_is_400_at_once(shop: Served) -> None:
    response = shop.rpc(shop.project, "tools/list", headers={"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == -32022
    assert "2026-07-28" in error["data"]["supported"]
    assert error["data"]["requested"] == "1999-01-01"


def test_structured_output_only_from_2025_06_18(shop: Served) -> None:
    old = shop.rpc(shop.project, "tools/list", headers={"MCP-Protocol-Version": "2025-03-26"})
    new = shop.rpc(shop.project, "tools/list", headers={"MCP-Protocol-Version": "2025-06-18"})
    assert all("outputSchema" not in tool for tool in old.json()["result"]["tools"])
    assert all(tool["outputSchema"]["type"] == "object" for tool in new.json()["result"]["tools"])
    assert all(tool["inputSchema"]["type"] == "object" for tool in new.json()["result"]["tools"])


def test_discover_advertises_the_stateless_revision(shop: Served) -> None:
    response = shop.rpc(
        shop.project, "server/discover", modern_params(), headers=modern_headers("server/discover")
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private"
    assert result["ttlMs"] >= 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "code-rag"


def test_modern_request_without_envelope_is_invalid_params(shop: Served) -> None:
    response = shop.rpc(shop.project, "tools/list", {}, headers=modern_headers("tools/list"))
    assert response.status_code == 400
    assert error_of(response)["code"] == -32602


def test_modern_headers_must_match_the_body(shop: Served) -> None:
    wrong_method = shop.rpc(
        shop.project, "tools/list", modern_params(), headers=modern_headers("ping")
    )
    assert wrong_method.status_code == 400
    assert error_of(wrong_method)["code"] == -32020
    wrong_name = shop.rpc(
        shop.project,
        "tools/call",
        modern_params({"name": "list_repos", "arguments": {}}),
        headers=modern_headers("tools/call", name="search_code"),
    )
    assert error_of(wrong_name)["code"] == -32020
    params = modern_params()
    params["_meta"][PV] = "2025-11-25"
    wrong_version = shop.rpc(
        shop.project, "tools/list", params, headers=modern_headers("tools/list")
    )
    assert error_of(wrong_version)["code"] == -32020


def test_modern_unknown_method_is_404_and_initialize_does_not_exist(shop: Served) -> None:
    response = shop.rpc(
        shop.project, "resources/list", modern_params(), headers=modern_headers("resources/list")
    )
    assert response.status_code == 404
    assert error_of(response)["code"] == -32601
    init = shop.rpc(
        shop.project,
        "initialize",
        modern_params({"protocolVersion": MODERN}),
        headers=modern_headers("initialize"),
    )
    assert error_of(init)["code"] == -32601


def test_modern_tool_call_result_carries_result_type(shop: Served) -> None:
    response = shop.rpc(
        shop.project,
        "tools/call",
        modern_params({"name": "list_repos", "arguments": {}}),
        headers=modern_headers("tools/call", name="list_repos"),
    )
    result = response.json()["result"]
    assert result["resultType"] == "complete"
    assert result["isError"] is False
    assert result["structuredContent"]["repos"][0]["repo"] == "shop"


def test_modern_unknown_tool_is_400(shop: Served) -> None:
    response = shop.rpc(
        shop.project,
        "tools/call",
        modern_params({"name": "nope", "arguments": {}}),
        headers=modern_headers("tools/call", name="nope"),
    )
    assert response.status_code == 400
    assert error_of(response)["code"] == -32602
