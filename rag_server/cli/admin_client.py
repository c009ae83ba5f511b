"""Calling the running server's admin JSON-RPC endpoint, as the curl examples in docs/ do."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from indexer.errors import RagError
from rag_server.config import ADMIN_PATH, Settings, server_url

TIMEOUT_SECONDS = 30.0
_ids = itertools.count(1)


def admin_call(settings: Settings, method: str, params: dict[str, Any]) -> Any:
    """One JSON-RPC call; the result, or a RagError that says what to do."""
    url = server_url(settings, ADMIN_PATH)
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
    try:
        with httpx.Client(timeout=TIMEOUT_SECONDS, trust_env=False) as client:
            response = client.post(url, json=body, headers={"X-RAG-Token": settings.server.token})
    except httpx.ConnectError:
        raise RagError(
            f"no code-rag server answers at {url}: start it with "
            "`code-rag serve` (or `code-rag up`)"
        ) from None
    except httpx.HTTPError as exc:
        raise RagError(f"the server at {url} did not answer properly: {exc}") from None
    try:
        reply = response.json()
    except ValueError:
        raise RagError(
            f"the server at {url} answered HTTP {response.status_code} without JSON: "
            "is another program using that port?"
        ) from None
    if response.status_code == 403:
        raise RagError(
            f"the server at {url} refused the token: check [server] token / CODE_RAG_TOKEN "
            "against the server's configuration"
        )
    error = reply.get("error") if isinstance(reply, dict) else None
    if error:
        raise RagError(f"the server refused {method}: {error.get('message', error)}")
    if not isinstance(reply, dict) or "result" not in reply:
        raise RagError(f"the server at {url} sent an unexpected reply: {str(reply)[:200]}")
    return reply["result"]
