"""MCP over streamable HTTP: protocol versions, the per-request ladder, and method dispatch.

Stateless on every revision: one JSON-RPC message per POST, no session ids, nothing remembered
between requests. Two eras share the endpoint, chosen per request by `MCP-Protocol-Version`:

* 2026-07-28 (modern): no handshake; every request carries `params._meta` with the protocol
  version and client capabilities, mirrored in the `MCP-Protocol-Version` / `Mcp-Method` /
  `Mcp-Name` headers; results carry `resultType`; `server/discover` advertises the server.
* 2025-11-25, 2025-06-18, 2025-03-26 (handshake): `initialize` negotiates the version (the
  requested one when supported, else the newest we speak); later requests name it in the header
  (no header means 2025-03-26, as the spec says). `params._meta` is accepted and ignored.

Any other header value is refused at once with 400 and -32022, naming the versions we speak, so
a client never waits on a timeout. Errors of the modern era carry the spec's HTTP status
(400, or 404 for an unknown method); handshake-era method errors travel with 200, as there.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol

from rag_server import jsonrpc
from rag_server.jsonrpc import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ClientResponse,
    Notification,
    Request,
    RpcError,
)

log = logging.getLogger("code_rag.mcp")

MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-03-26", "2025-06-18", "2025-11-25")
SUPPORTED_VERSIONS: tuple[str, ...] = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
# What a request without the header speaks (2025-06-18 transports: "assume 2025-03-26").
DEFAULT_VERSION = "2025-03-26"
# Features by revision: structured tool output and tool titles arrived in 2025-06-18.
STRUCTURED_OUTPUT_SINCE = "2025-06-18"
# The whole JSON of one tool result (~8k tokens of code): Claude Code truncates tool output above
# ~25k tokens; results stay well under that.
MAX_RESULT_CHARS = 32_000

VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

SERVER_NAME = "code-rag"
# How long a modern client may cache discover and tools/list (they change only on restart).
CACHE_TTL_MS = 60_000

# HTTP status per JSON-RPC error code on the modern wire (the 2026-07-28 transport's table).
MODERN_ERROR_STATUS: Mapping[int, int] = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def server_version() -> str:
    try:
        return metadata.version("code-rag")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def server_info() -> dict[str, str]:
    return {"name": SERVER_NAME, "title": "code-rag code search", "version": server_version()}


def version_at_least(version: str, minimum: str) -> bool:
    """Whether `version` is a revision we know at least as new as `minimum`."""
    if version not in SUPPORTED_VERSIONS:
        return False
    return SUPPORTED_VERSIONS.index(version) >= SUPPORTED_VERSIONS.index(minimum)


class ToolBox(Protocol):
    """What the protocol needs from the tools of one project (see `tools.ProjectTools`)."""

    @property
    def instructions(self) -> str: ...

    def definitions(self, version: str) -> list[dict[str, Any]]: ...

    def has(self, name: str) -> bool: ...

    def names(self) -> list[str]: ...

    async def call(self, name: str, arguments: Mapping[str, Any], version: str) -> dict[str, Any]:
        """A CallToolResult (content, isError, structuredContent), never raising for a tool's
        own failure; raising only for bugs."""
        ...


@dataclass(frozen=True)
class Reply:
    """What to send: an HTTP status and a JSON body (None: an empty body)."""

    status: int
    body: dict[str, Any] | None


def unsupported_version(requested: str, request_id: jsonrpc.RequestId | None = None) -> RpcError:
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {requested!r}: this server speaks "
        + ", ".join(SUPPORTED_VERSIONS),
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
        request_id,
    )


def _error_reply(error: RpcError, modern: bool) -> Reply:
    if error.code in (PARSE_ERROR, INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION):
        status = 400  # transport-level refusals: the same on every revision
    elif modern:
        status = MODERN_ERROR_STATUS.get(error.code, 200)
    else:
        status = 200
    return Reply(status, error.to_dict())


async def handle_post(body: bytes, headers: Mapping[str, str], tools: ToolBox) -> Reply:
    """Answer one POSTed message. `headers` has lowercase names."""
    header_version = headers.get(VERSION_HEADER)
    modern = header_version in MODERN_VERSIONS
    try:
        message = jsonrpc.parse_message(body)
    except RpcError as error:
        return _error_reply(error, modern)
    request_id = message.id if isinstance(message, Request) else None
    if header_version is not None and header_version not in SUPPORTED_VERSIONS:
        return _error_reply(unsupported_version(header_version, request_id), modern)
    if isinstance(message, Notification | ClientResponse):
        return Reply(202, None)  # acknowledged; nothing here acts on client notifications
    version = header_version or DEFAULT_VERSION
    try:
        if modern:
            _check_envelope(message, headers, version)
        result = await _dispatch(message, tools, version, modern)
    except RpcError as error:
        return _error_reply(error.with_id(message.id), modern)
    except Exception:
        log.exception("MCP %s failed", message.method)
        internal = RpcError(
            INTERNAL_ERROR,
            f"Internal error while answering {message.method}; the server log has the details",
            id=message.id,
        )
        return _error_reply(internal, modern)
    if modern:
        result = {
            **result,
            "resultType": "complete",
            "_meta": {**result.get("_meta", {}), SERVER_INFO_META: server_info()},
        }
    return Reply(200, jsonrpc.result_body(message.id, result))


def _check_envelope(request: Request, headers: Mapping[str, str], version: str) -> None:
    """The 2026-07-28 ladder: envelope present, headers agree with the body, version served."""
    meta = request.params.get("_meta")
    if not isinstance(meta, Mapping):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META!r} and "
            f"{CLIENT_CAPABILITIES_META!r} (required at protocol version {version})",
        )
    missing = [k for k in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if k not in meta]
    if missing:
        raise RpcError(
            INVALID_PARAMS, "params._meta is missing the required key(s): " + ", ".join(missing)
        )
    if meta[PROTOCOL_VERSION_META] != version:
        raise RpcError(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header does not match params._meta's protocol version",
        )
    if headers.get(METHOD_HEADER) != request.method:
        raise RpcError(HEADER_MISMATCH, "the Mcp-Method header does not match the request's method")
    name = request.params.get("name")
    if request.method == "tools/call" and isinstance(name, str):
        sent = headers.get(NAME_HEADER)
        if sent is None or _decode_header_value(sent) != name:
            raise RpcError(
                HEADER_MISMATCH, "the Mcp-Name header is missing or does not match params.name"
            )


def _decode_header_value(value: str) -> str | None:
    """Undo the spec's `=?base64?...?=` wrapping of header values that are not plain ASCII."""
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    return value


async def _dispatch(request: Request, tools: ToolBox, version: str, modern: bool) -> dict[str, Any]:
    method = request.method
    params = request.params
    if method == "initialize" and not modern:
        return _initialize(params, tools)
    if method == "server/discover":
        return {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": _capabilities(),
            "instructions": tools.instructions,
            "ttlMs": CACHE_TTL_MS,
            "cacheScope": "private",
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        result: dict[str, Any] = {"tools": tools.definitions(version)}
        if modern:
            result.update(ttlMs=CACHE_TTL_MS, cacheScope="private")
        return result
    if method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, "tools/call needs params.name, the tool to call")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise RpcError(INVALID_PARAMS, "params.arguments must be an object")
        if not tools.has(name):
            raise RpcError(
                INVALID_PARAMS,
                f"Unknown tool {name!r}: the tools are " + ", ".join(tools.names()),
            )
        return await tools.call(name, arguments, version)
    if method == "initialize":
        raise RpcError(
            METHOD_NOT_FOUND,
            f"initialize does not exist at protocol version {version}: call server/discover, "
            f"or send no MCP-Protocol-Version header to use the {LATEST_HANDSHAKE_VERSION} "
            "handshake",
        )
    raise RpcError(
        METHOD_NOT_FOUND,
        f"Method not found: {method!r} (this server offers tools only: tools/list, tools/call)",
    )


def _capabilities() -> dict[str, Any]:
    return {"tools": {"listChanged": False}}


def _initialize(params: Mapping[str, Any], tools: ToolBox) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str) or not requested:
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)")
    chosen = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
    return {
        "protocolVersion": chosen,
        "capabilities": _capabilities(),
        "serverInfo": server_info(),
        "instructions": tools.instructions,
    }
