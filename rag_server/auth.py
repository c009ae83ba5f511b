"""The server's side of access: which endpoint a request was routed to, and whether a token
other than the server's opens it (`access.py` decides, off the event loop).

The server token (`[server] token`) is the admin token: the guard in `app.py` compares it in
constant time, and it opens the admin endpoint and every MCP endpoint. Any other token is
looked up by its digest (`access.token_holder`) and opens the MCP endpoints its target covers.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from litestar.types import Scope

from indexer.errors import DatabaseError
from rag_server.access import covers, token_holder
from rag_server.config import MCP_PATH

log = logging.getLogger("code_rag.auth")


def endpoint_of(scope: Scope) -> str | None:
    """The endpoint name of a request routed to an MCP endpoint; None for any other route.
    Read from the router's own match, so the guard and the route always agree on it."""
    template = str(scope.get("path_template") or "")
    params = scope.get("path_params") or {}
    if not template.startswith(f"{MCP_PATH}/") or len(params) != 1:
        return None
    [name] = params.values()
    return name if isinstance(name, str) else None


async def opens(scope: Scope, token: str) -> bool:
    """Whether `token`, which is not the server token, opens the route `scope` was routed to.
    The look-up runs off the event loop; when the table cannot be read the token is refused
    (the server token, checked before, still works) and the log says why."""
    service: Any = getattr(scope["app"].state, "service", None)
    if service is None or not token:
        return False
    try:
        holder = await anyio.to_thread.run_sync(token_holder, service.db, token)
    except DatabaseError as exc:
        log.warning("a token other than the server's was refused, unchecked: %s", exc.message)
        return False
    endpoint = endpoint_of(scope)
    if holder is None or endpoint is None:
        return False
    return covers(service.settings, holder.target, endpoint)
