"""The admin JSON-RPC endpoint (`POST /rag-admin`): `reindex` and `status`, for scripts.

`reindex {project | "all", full?}` queues sweeps in the background and answers at once with a
run id; `status {project?}` answers what `code-rag status` shows, plus the server's own view
(sweep running, last and next run), whether this server indexes (`indexer`: false on a read
replica, whose `reindex` is refused with the `read_replica` error), and `config_error`: why the
projects file as it is now was not applied, and since when (null once a valid file applies).
Same token as the MCP endpoint, same JSON-RPC envelope; our errors become JSON-RPC errors
through `jsonrpc.rpc_error_from` only.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Mapping
from typing import Any

import anyio

from indexer.errors import ProjectNotFound, RagError
from rag_server import jsonrpc
from rag_server.config import ALL_PROJECTS
from rag_server.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ClientResponse,
    Notification,
    RpcError,
)
from rag_server.mcp import Reply
from rag_server.service import Service

log = logging.getLogger("code_rag.admin")

METHODS = ("reindex", "status")


def _params(params: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(allowed) - {"_meta"})
    if unknown:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown parameter {unknown[0]!r}: expected " + (", ".join(allowed) or "none"),
        )


def reindex(service: Service, params: Mapping[str, Any]) -> dict[str, Any]:
    _params(params, ("project", "full"))
    project = params.get("project")
    full = params.get("full", False)
    if not isinstance(project, str) or not project:
        raise RpcError(INVALID_PARAMS, 'reindex needs "project": a project name or "all"')
    if not isinstance(full, bool):
        raise RpcError(INVALID_PARAMS, '"full" must be true or false')
    if not service.indexing:
        raise service.read_replica()
    names = [p.name for p in service.select(project)]
    run_id, states = service.start_sweeps(names, full=full, trigger="admin")
    return {"run_id": run_id, "full": full, "projects": states}


def _server_view(service: Service) -> dict[str, Any]:
    problem = service.config_problem
    return {
        "groups": {name: list(members) for name, members in service.settings.groups.items()},
        "indexer": service.indexing,
        "config_error": None if problem is None else problem.to_dict(),
    }


def status(service: Service, params: Mapping[str, Any]) -> dict[str, Any]:
    _params(params, ("project",))
    project = params.get("project")
    if project is None or project == ALL_PROJECTS:
        every = []
        for name in sorted(service.projects):
            with contextlib.suppress(ProjectNotFound):  # removed from the projects file meanwhile
                every.append(service.status(name))
        return {"projects": every, **_server_view(service)}
    if not isinstance(project, str):
        raise RpcError(INVALID_PARAMS, '"project" must be a project name')
    service.select(project)  # unknown names get the list of configured ones
    return {**service.status(project), **_server_view(service)}


async def handle_post(body: bytes, service: Service) -> Reply:
    """Answer one admin JSON-RPC message; errors in the envelope are HTTP 400, the rest 200."""
    try:
        message = jsonrpc.parse_message(body)
    except RpcError as error:
        return Reply(400, error.to_dict())
    if isinstance(message, Notification | ClientResponse):
        return Reply(202, None)
    try:
        if message.method == "reindex":
            handler = reindex
        elif message.method == "status":
            handler = status
        else:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {message.method!r}; the admin methods are "
                + ", ".join(METHODS),
            )
        result = await anyio.to_thread.run_sync(functools.partial(handler, service, message.params))
    except RpcError as error:
        return Reply(200, error.with_id(message.id).to_dict())
    except RagError as exc:
        return Reply(200, jsonrpc.rpc_error_from(exc, message.id).to_dict())
    except Exception:
        log.exception("admin %s failed", message.method)
        internal = RpcError(
            INTERNAL_ERROR,
            f"Internal error in {message.method}; the server log has the details",
            id=message.id,
        )
        return Reply(200, internal.to_dict())
    return Reply(200, jsonrpc.result_body(message.id, result))
