"""JSON-RPC 2.0 envelopes for the MCP and admin endpoints: parse one message, build replies.

One POST carries one message. `parse_message` turns the body into a `Request`, a `Notification`
or a `ClientResponse`, or raises `RpcError` (-32700 for bytes that are not JSON, -32600 for
anything that is not one well-formed message, batches included). `rpc_error_from` is the one
place a `RagError` becomes a JSON-RPC error; a traceback never reaches a reply body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from indexer.errors import InvalidArgument, InvalidProjectName, ProjectNotFound, RagError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP 2026-07-28 (spec-allocated server-error codes).
HEADER_MISMATCH = -32020
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Implementation-defined (the -32000..-32019 band): named after the HTTP status they travel with.
FORBIDDEN = -32003
NOT_FOUND = -32004

RequestId = str | int


@dataclass(frozen=True)
class RpcError(Exception):
    """A JSON-RPC error to send back; `id` is None when the request's id is unknown."""

    code: int
    message: str
    data: Any = None
    id: RequestId | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def with_id(self, request_id: RequestId | None) -> RpcError:
        return RpcError(self.code, self.message, self.data, request_id)

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notification:
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientResponse:
    """A response (or error) the client posted back: acknowledged, never answered."""

    id: RequestId | None


Message = Request | Notification | ClientResponse


def _valid_id(value: object) -> bool:
    # MCP: a request id is a string or an integer, never null; JSON true is not an integer.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_message(body: bytes) -> Message:
    """The one JSON-RPC message in `body`, or `RpcError` saying why there is none."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):  # oversized ints raise ValueError, deep nesting Recursion
        raise RpcError(
            PARSE_ERROR, "Parse error: the body is not valid JSON (send one JSON-RPC object)"
        ) from None
    if isinstance(decoded, list):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid Request: batches are not supported; send one JSON-RPC message per POST",
        )
    if not isinstance(decoded, dict):
        raise RpcError(INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object")
    raw_id = decoded.get("id")
    known_id = raw_id if _valid_id(raw_id) else None
    if decoded.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', id=known_id)
    method = decoded.get("method")
    if method is None and "id" in decoded and ("result" in decoded or "error" in decoded):
        return ClientResponse(known_id)
    if not isinstance(method, str) or not method:
        raise RpcError(
            INVALID_REQUEST, 'Invalid Request: "method" must be a non-empty string', id=known_id
        )
    if "id" in decoded and not _valid_id(raw_id):
        raise RpcError(
            INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer', id=None
        )
    params = decoded.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, 'Invalid params: "params" must be an object', id=known_id)
    if "id" not in decoded:
        return Notification(method, params)
    assert known_id is not None
    return Request(known_id, method, params)


def result_body(request_id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def rpc_error_from(exc: RagError, request_id: RequestId | None = None) -> RpcError:
    """Our error as a JSON-RPC error: argument problems are -32602, the rest -32603, and the
    stable `code` of the error travels in `data` so scripts can branch on it."""
    if isinstance(exc, InvalidArgument | InvalidProjectName | ProjectNotFound):
        code = INVALID_PARAMS
    else:
        code = INTERNAL_ERROR
    return RpcError(code, exc.message, {"error": exc.code}, request_id)


def encode(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
