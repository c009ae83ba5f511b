"""The official MCP SDK client (2.x) against the real server over streamable HTTP.

`mode="auto"` is what current clients do (server/discover at 2026-07-28, the stateless
revision); `mode="legacy"` is the initialize handshake (2025-11-25). In both, every tool is
listed and called with the token header, and structured results (cut to a budget, or at
another detail, too) are validated by the SDK against each tool's outputSchema.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from rag_server.jsonrpc import FORBIDDEN

if TYPE_CHECKING:
    from server_fixtures import Served

pytest_plugins = ["server_fixtures"]
TOKEN = "test-token-0123456789abcdef"  # server_fixtures.TOKEN

TOOL_NAMES = {
    "search_code",
    "get_chunk",
    "list_repos",
    "index_status",
    "find_symbol",
    "get_outline",
    "grep",
    "find_references",
}


def connect(url: str, mode: str, token: str = TOKEN) -> Client:
    http = httpx2.AsyncClient(headers={"X-RAG-Token": token}, timeout=30)
    return Client(streamable_http_client(url, http_client=http), mode=mode)


async def exercise(url: str, mode: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with connect(url, mode) as client:
        seen["version"] = client.protocol_version
        seen["server"] = client.server_info
        listed = await client.list_tools()
        seen["tools"] = {tool.name: tool for tool in listed.tools}
        search = await client.call_tool("search_code", {"query": "invoice number", "top_k": 5})
        seen["search"] = search
        seen["by_file"] = await client.call_tool(
            "search_code", {"query": "invoice number total", "top_k": 5, "by_file": True}
        )
        hit = search.structured_content["hits"][0]
        seen["chunk"] = await client.call_tool(
            "get_chunk", {"chunk_id": hit["chunk_id"], "context_lines": 2}
        )
        seen["repos"] = await client.call_tool("list_repos", {})
        seen["status"] = await client.call_tool("index_status", {})
        seen["bad"] = await client.call_tool("search_code", {"query": "x", "top_k": 999})
        seen["symbol"] = await client.call_tool("find_symbol", {"name": "Invoice.total"})
        seen["grep"] = await client.call_tool("grep", {"pattern": "round(sum"})
        seen["refs"] = await client.call_tool("find_references", {"name": "retry_with_backoff"})
        seen["outline"] = await client.call_tool(
            "get_outline", {"repo": "shop", "path": "billing/invoice.py"}
        )
        # Results at every detail and cut to a budget match the outputSchema all the same.
        seen["pointers"] = await client.call_tool(
            "search_code", {"query": "invoice number", "detail": "pointers", "max_chars": 900}
        )
        seen["full"] = await client.call_tool(
            "find_symbol", {"name": "Invoice.total", "detail": "full"}
        )
    return seen


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_sdk_client_lists_and_calls_every_tool(shop: Served, mode: str, version: str) -> None:
    seen = anyio.run(exercise, shop.url(shop.project), mode)
    assert seen["version"] == version
    assert seen["server"] is not None and seen["server"].name == "code-rag"
    assert set(seen["tools"]) == TOOL_NAMES
    for tool in seen["tools"].values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and len(tool.description) > 40

    search = seen["search"]
    assert not search.is_error
    hits = search.structured_content["hits"]
    assert hits and hits[0]["path"] == "billing/invoice.py"
    assert hits[0]["symbol"] and "Invoice" in hits[0]["symbol"]
    assert hits[0]["absolute_path"].endswith("billing/invoice.py")
    # The text content is the same object, for clients that read only text.
    assert json.loads(search.content[0].text) == search.structured_content
    files = seen["by_file"].structured_content["hits"]
    assert len({h["path"] for h in files}) == len(files)
    assert all(isinstance(h["also"], list) for h in files)

    chunk = seen["chunk"].structured_content
    assert chunk["path"] == "billing/invoice.py"
    assert "generate_number" in chunk["text"]

    repos = seen["repos"].structured_content
    assert repos["indexed"] is True
    assert [r["repo"] for r in repos["repos"]] == ["shop"]
    assert repos["repos"][0]["files"] == 3 and repos["repos"][0]["chunks"] > 0

    status = seen["status"].structured_content
    assert status["indexed"] is True
    assert status["sweep_running"] is False
    assert status["embedding"]["model"] == "nomic-embed-text:v1.5"

    bad = seen["bad"]
    assert bad.is_error
    assert "top_k" in bad.content[0].text

    [symbol] = seen["symbol"].structured_content["symbols"]
    assert (symbol["qualified_name"], symbol["path"]) == ("Invoice.total", "billing/invoice.py")
    grep = seen["grep"].structured_content
    assert [(m["path"], m["line"]) for m in grep["matches"]] == [("billing/invoice.py", 10)]
    assert grep["complete"] is True
    assert seen["refs"].structured_content == {
        "references": [],
        "complete": True,
        "truncated": False,
    }
    [invoice] = seen["outline"].structured_content["symbols"]
    assert [c["name"] for c in invoice["children"]] == ["generate_number", "total"]

    pointers = seen["pointers"].structured_content
    assert len(seen["pointers"].content[0].text) <= 900
    assert pointers["truncated"] is True and pointers["omitted"] >= 1
    assert pointers["hits"] and not any("snippet" in h for h in pointers["hits"])
    [total] = seen["full"].structured_content["symbols"]
    assert total["text"].strip().startswith("def total(")


def test_sdk_client_with_a_wrong_token_fails_fast(shop: Served) -> None:
    # 403 + JSON-RPC body: the client raises at once instead of trying OAuth or hanging.
    async def attempt() -> None:
        with anyio.fail_after(20):
            async with connect(shop.url(shop.project), "auto", token="wrong-token-xxxxxxxx"):
                pass

    with pytest.raises(BaseException) as caught:
        anyio.run(attempt)
    # The SDK surfaces the JSON-RPC error of our 403 body: the refusal itself, not a time-out
    # or a transport failure.
    refusals = [e for e in leaves(caught.value) if isinstance(e, MCPError)]
    assert refusals, f"no MCPError in {caught.value!r}"
    assert refusals[0].error.code == FORBIDDEN
    assert "Missing or wrong token" in refusals[0].error.message


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]
