"""Bad input, generated: the MCP and admin endpoints under malformed and hostile messages.

Whatever arrives — bytes that are not JSON, JSON that is not a message, wrong types, huge
strings, odd unicode, deep nesting, batches, unknown methods, tool arguments of every shape —
the answer is a JSON body with a JSON-RPC error of the right code (or a valid result), never a
500, never a traceback, never a hang (every request has a client timeout). Examples are bounded
(`max_examples`) and unhurried (`deadline=None`): this is a noisy 2-core machine.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.register_assert_rewrite("server_fixtures")

from server_fixtures import Served  # noqa: E402

pytest_plugins = ["server_fixtures"]

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run: a failure reproduces
)
ERROR_CODES = {-32700, -32600, -32601, -32602, -32603, -32020, -32022}
V25 = {"MCP-Protocol-Version": "2025-11-25"}

# JSON values of every kind, with odd strings (any unicode, surrogates excluded by JSON itself).
odd_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40
) | st.sampled_from(["", "\x00", "\u202e", "\ufeff", "💥" * 50, "../../etc/passwd", "a" * 5000])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | odd_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=12,
)


def check_answer(response: Any, *, allow_result: bool = True) -> dict[str, Any] | None:
    """The invariants of every answer; returns the JSON body (None for an empty 202)."""
    assert response.status_code in (200, 202, 400, 404, 413), response.status_code
    assert "Traceback" not in response.text
    if response.status_code == 202:
        assert response.content == b""
        return None
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["jsonrpc"] == "2.0"
    if "error" in body:
        assert body["error"]["code"] in ERROR_CODES, body
        assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    else:
        assert allow_result and "result" in body, body
    return body


def post(served: Served, path: str, content: bytes, headers: dict[str, str] | None = None) -> Any:
    return served.http.post(
        path,
        content=content,
        headers={"Content-Type": "application/json", **(headers or {})},
        timeout=30,
    )


def mcp(served: Served) -> str:
    return f"/rag-mcp/{served.project}"


ENDPOINTS = ["mcp", "admin"]


def path_of(served: Served, endpoint: str) -> str:
    return mcp(served) if endpoint == "mcp" else "/rag-admin"


# --- bytes and envelopes --------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@FUZZ
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes(shop: Served, endpoint: str, raw: bytes) -> None:
    body = check_answer(post(shop, path_of(shop, endpoint), raw))
    if body is not None and "error" in body:
        try:
            json.loads(raw)
        except ValueError:
            assert body["error"]["code"] == -32700


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@FUZZ
@given(value=json_values)
def test_any_json_value(shop: Served, endpoint: str, value: Any) -> None:
    body = check_answer(post(shop, path_of(shop, endpoint), json.dumps(value).encode()))
    if isinstance(value, list):
        assert body is not None and body["error"]["code"] == -32600  # no batches
    elif not isinstance(value, dict):
        assert body is not None and body["error"]["code"] == -32600


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@FUZZ
@given(
    jsonrpc=st.sampled_from(["2.0", "1.0", None, 2, ""]),
    request_id=st.none() | st.booleans() | st.integers() | odd_text | st.floats(allow_nan=False),
    method=st.none()
    | st.integers()
    | odd_text
    | st.sampled_from(["tools/call", "tools/list", "status", "reindex", "ping", "rpc.discover"]),
    params=json_values,
    drop_id=st.booleans(),
)
def test_message_shaped_objects(
    shop: Served,
    endpoint: str,
    jsonrpc: Any,
    request_id: Any,
    method: Any,
    params: Any,
    drop_id: bool,
) -> None:
    message: dict[str, Any] = {"jsonrpc": jsonrpc, "method": method, "params": params}
    if not drop_id:
        message["id"] = request_id
    if method == "reindex":
        message["params"] = {"project": "no_such_project"}  # never start real sweeps here
    body = check_answer(post(shop, path_of(shop, endpoint), json.dumps(message).encode()))
    if jsonrpc != "2.0" or not isinstance(method, str) or not method:
        assert body is not None and body["error"]["code"] == -32600
    elif method.startswith("rpc.") and not drop_id and _valid_id(request_id):
        assert body is not None and body["error"]["code"] == -32601


def _valid_id(value: Any) -> bool:
    """An id MCP accepts: a string or an integer (null, booleans and fractions are refused)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_deep_nesting_and_batches(shop: Served, endpoint: str) -> None:
    path = path_of(shop, endpoint)
    for depth in (100, 10_000, 200_000):
        nested = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * depth
        nested += b"]" * depth + b"}}"
        body = check_answer(post(shop, path, nested))
        if len(nested) > 1_048_576:
            continue
        assert body is not None
        if depth > 1000:  # past the JSON parser's recursion limit: a parse error, not a crash
            assert body["error"]["code"] == -32700
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(50)]
    body = check_answer(post(shop, path, json.dumps(batch).encode()))
    assert body is not None and body["error"]["code"] == -32600


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_huge_bodies_are_refused_before_parsing(shop: Served, endpoint: str) -> None:
    path = path_of(shop, endpoint)
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * 1_100_000})
    response = post(shop, path, big.encode())
    assert response.status_code == 413
    check_answer(response)

    # Streamed without a Content-Length (chunked): capped all the same.
    def chunks() -> Any:
        yield b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"'
        for _ in range(40):
            yield b"y" * 65_536
        yield b'"}'

    response = shop.http.post(
        path, content=chunks(), headers={"Content-Type": "application/json"}, timeout=30
    )
    assert response.status_code == 413
    check_answer(response)


# --- methods and tool arguments -------------------------------------------------------------------


@FUZZ
@given(method=odd_text.filter(lambda m: m.strip() != ""))
def test_unknown_methods_are_method_not_found(shop: Served, method: str) -> None:
    known = {"initialize", "server/discover", "ping", "tools/list", "tools/call"}
    message = {"jsonrpc": "2.0", "id": 7, "method": method}
    body = check_answer(post(shop, mcp(shop), json.dumps(message).encode(), V25))
    if method not in known:
        assert body is not None and body["error"]["code"] == -32601 and body["id"] == 7
    admin = check_answer(post(shop, "/rag-admin", json.dumps(message).encode()))
    if method not in {"status", "reindex"}:
        assert admin is not None and admin["error"]["code"] == -32601


tool_names = st.sampled_from(["search_code", "get_chunk", "list_repos", "index_status"]) | odd_text
tool_arguments = (
    st.dictionaries(
        st.sampled_from(
            ["query", "top_k", "repo", "language", "path_glob", "chunk_id", "context_lines"]
        )
        | odd_text,
        json_values,
        max_size=5,
    )
    | json_values
)


@FUZZ
@given(name=tool_names, arguments=tool_arguments)
def test_tool_calls_with_arguments_of_every_shape(shop: Served, name: Any, arguments: Any) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    body = check_answer(post(shop, mcp(shop), json.dumps(message).encode(), V25))
    assert body is not None
    known = name in {"search_code", "get_chunk", "list_repos", "index_status"}
    if not known or not (arguments is None or isinstance(arguments, dict)):
        assert body["error"]["code"] == -32602
        return
    # A known tool with a usable envelope: a result, an error result the agent can act on.
    result = body["result"]
    assert isinstance(result["isError"], bool)
    text = result["content"][0]["text"]
    assert text and "Traceback" not in text


@FUZZ
@given(
    query=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=3000),
    path_glob=st.none() | odd_text,
    top_k=st.integers(min_value=1, max_value=50),
)
def test_search_takes_any_unicode_query(
    shop: Served, query: str, path_glob: str | None, top_k: int
) -> None:
    arguments: dict[str, Any] = {"query": query, "top_k": top_k}
    if path_glob is not None:
        arguments["path_glob"] = path_glob
    message = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "search_code", "arguments": arguments},
    }
    body = check_answer(post(shop, mcp(shop), json.dumps(message).encode(), V25))
    assert body is not None
    result = body["result"]
    if query.strip() and "\x00" not in query and not result["isError"]:
        assert len(result["structuredContent"]["hits"]) <= top_k
    else:
        assert "Traceback" not in result["content"][0]["text"]


@FUZZ
@given(params=json_values)
def test_admin_params_of_every_shape(shop: Served, params: Any) -> None:
    for method in ("status", "reindex"):
        if method == "reindex" and isinstance(params, dict):
            params = {**params, "project": "no_such_project"}  # never start real sweeps here
        message = {"jsonrpc": "2.0", "id": 5, "method": method, "params": params}
        body = check_answer(post(shop, "/rag-admin", json.dumps(message).encode()))
        assert body is not None
        if "error" in body:
            assert body["error"]["code"] in (-32602, -32600), body
