"""The Litestar app: routes, the guard in front of them, and the lifespan that opens everything.

    POST /rag-mcp/{project}   MCP (streamable HTTP, stateless), one endpoint per project and
                              one per group of projects
    POST /rag-admin           admin JSON-RPC: reindex, status
    GET/DELETE on either      405, Allow: POST (after the guard)
    /web/...  (and /)         the web pages (`rag_server.web`): sign in with a token, status,
                              search; they take the token at sign-in and a session after

The guard runs before every route, in this order: a `Host` that is not loopback (DNS
rebinding) and a present `Origin` that is not localhost are refused, then the token
(`X-RAG-Token`, or `Authorization: Bearer`): the server token, compared in constant time, opens
everything; any other must be a token made for a project or a group that covers the endpoint
(`auth.py`); the pages (`web.is_page`) skip this last check and hold their own sign-in.
Every refusal is 403 with a JSON-RPC error body and no `WWW-Authenticate`: a 401 would send
Claude Code into OAuth discovery, which fails with a confusing message. A refused
token gets one and the same answer whatever the reason, so it tells nothing about which projects
exist or what a token is for. Paths that are no route (`/.well-known/*`, `/register`) never
reach the guard and are plain 404s. The lifespan opens the database, the embedder and the
scheduler (each unless given), reads the search's indexes into PostgreSQL's buffers before the
first request (`Service.warm_up`), follows the projects file, and closes what it opened. A read
replica (`[indexer] enabled = false`) opens the database read-only and starts no scheduler,
watcher or background vectors: it only answers.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import anyio
import uvicorn
from litestar import Litestar, Request, Response, post, route
from litestar.enums import HttpMethod
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.types import ASGIApp, Receive, Scope, Send

from indexer.db import Database, statements
from indexer.embed import Embedder
from indexer.errors import ConfigError, ProjectNotFound
from rag_server import admin, auth, jsonrpc, mcp, web
from rag_server.config import (
    ADMIN_PATH,
    MCP_PATH,
    WILDCARD_HOSTS,
    Settings,
    make_settings_embedder,
)
from rag_server.jsonrpc import FORBIDDEN, INVALID_REQUEST, NOT_FOUND, RpcError
from rag_server.reload import ProjectsFile
from rag_server.scheduler import SweepScheduler
from rag_server.service import Service
from rag_server.tools import EndpointTools
from rag_server.watch import Watchers

log = logging.getLogger("code_rag.app")

# How long a start waits for the search's indexes to be read into memory (`Service.warm_up`).
WARM_WAIT_S = 20.0
MAX_BODY_BYTES = 1_048_576  # one JSON-RPC message; ours are a few hundred bytes
TOKEN_HEADER = "x-rag-token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


# --- the guard ------------------------------------------------------------------------------------


def _host_name(value: str) -> str:
    """The host of a Host header value, lowercased, without port or trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def allowed_hosts(settings: Settings) -> frozenset[str]:
    configured = settings.server.host.strip().lower().strip("[]")
    extra = {configured} if configured not in WILDCARD_HOSTS else set()
    return LOOPBACK_NAMES | extra


def refusal(headers: dict[str, str], hosts: frozenset[str]) -> str | None:
    """Why the request must be refused whatever its token, or None: its Host or its Origin."""
    host = headers.get("host")
    if host is not None and _host_name(host) not in hosts:
        return (
            f"Host {host!r} is not served: connect to http://127.0.0.1 (requests naming "
            "another host are refused to stop DNS rebinding)"
        )
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOOPBACK_NAMES:
            return f"Origin {origin!r} is not allowed: only localhost pages may call this server"
    return None


def presented_token(headers: dict[str, str]) -> str:
    """The token a request carries: `X-RAG-Token`, or else `Authorization: Bearer`."""
    given = headers.get(TOKEN_HEADER, "")
    if not given:
        bearer = headers.get("authorization", "")
        if bearer[:7].lower() == "bearer ":
            given = bearer[7:].strip()
    return given


def is_server_token(given: str, token: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


# The one answer to every refused token: no token, a wrong one, one for another project, an
# unknown project, a project's token at the admin endpoint, a token that cannot be checked.
TOKEN_REFUSED = (
    "Missing or wrong token: send the header X-RAG-Token: <token> (code-rag up and code-rag serve "
    "print the server's; code-rag token add makes one for a project or a group)"
)


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def guard(token: str, hosts: frozenset[str]) -> Callable[..., ASGIApp]:
    """Middleware factory: refuse (403, JSON-RPC body) what `refusal` finds wrong, and a token
    that is neither the server's (`token`) nor one that opens the endpoint (`auth.opens`)."""
    if not token:
        raise ValueError("the server needs a token")

    def middleware(app: ASGIApp) -> ASGIApp:
        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            headers: dict[str, str] = {}
            for raw_name, raw_value in scope["headers"]:
                headers.setdefault(raw_name.decode("latin-1").lower(), raw_value.decode("latin-1"))
            problem = refusal(headers, hosts)
            if problem is None and web.is_page(scope):
                await app(scope, receive, send)  # the pages check their own session
                return
            if problem is None:
                given = presented_token(headers)
                if is_server_token(given, token) or await auth.opens(scope, given):
                    await app(scope, receive, send)
                    return
                problem = TOKEN_REFUSED
            body = jsonrpc.encode(RpcError(FORBIDDEN, problem).to_dict())
            await _send_json(send, 403, body)

        return guarded

    return middleware


# --- routes ---------------------------------------------------------------------------------------


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


def _respond(reply: mcp.Reply) -> Response[bytes]:
    if reply.body is None:
        return Response(b"", status_code=reply.status, media_type="application/json")
    return Response(
        jsonrpc.encode(reply.body), status_code=reply.status, media_type="application/json"
    )


async def _read_body(request: Request) -> bytes | mcp.Reply:
    try:
        return await request.body()
    except RequestEntityTooLarge:
        error = RpcError(INVALID_REQUEST, f"the request body is larger than {MAX_BODY_BYTES} bytes")
        return mcp.Reply(413, error.to_dict())


@post(f"{MCP_PATH}/{{project:str}}", name="mcp")
async def mcp_endpoint(request: Request) -> Response[bytes]:
    service = _service(request)
    try:
        found = service.endpoint(request.path_params["project"])
    except ProjectNotFound as exc:
        return _respond(mcp.Reply(404, RpcError(NOT_FOUND, exc.message).to_dict()))
    body = await _read_body(request)
    if isinstance(body, mcp.Reply):
        return _respond(body)
    headers = {name.lower(): value for name, value in request.headers.items()}
    reply = await mcp.handle_post(body, headers, EndpointTools(service, found))
    return _respond(reply)


@post(ADMIN_PATH, name="admin")
async def admin_endpoint(request: Request) -> Response[bytes]:
    body = await _read_body(request)
    if isinstance(body, mcp.Reply):
        return _respond(body)
    return _respond(await admin.handle_post(body, _service(request)))


def _not_allowed() -> Response[bytes]:
    error = RpcError(INVALID_REQUEST, "Method not allowed: POST one JSON-RPC message")
    return Response(
        jsonrpc.encode(error.to_dict()),
        status_code=405,
        media_type="application/json",
        headers={"Allow": "POST"},
    )


@route(
    f"{MCP_PATH}/{{project:str}}", http_method=[HttpMethod.GET, HttpMethod.DELETE], status_code=405
)
async def mcp_other_methods() -> Response[bytes]:
    # No server-initiated stream and no sessions to end: both are 405 on a stateless server.
    return _not_allowed()


@route(ADMIN_PATH, http_method=[HttpMethod.GET, HttpMethod.DELETE], status_code=405)
async def admin_other_methods() -> Response[bytes]:
    return _not_allowed()


# --- the app --------------------------------------------------------------------------------------


def server_database(settings: Settings) -> Database:
    """The database a server opens (not opened yet). A read replica's creates nothing and its
    connections refuse writes; an indexing server names its connections after itself
    (`pg_stat_activity.application_name`), so that a replica can say which server indexes."""
    where = f"{socket.gethostname()}:{settings.server.port}"
    if not settings.indexer.enabled:
        return Database(
            settings.database.dsn,
            settings.data_dir,
            writable=False,
            application_name=f"code-rag replica {where}"[:63],
        )
    return Database(
        settings.database.dsn,
        settings.data_dir,
        application_name=f"{statements.INDEXER_APPLICATION} {where}"[:63],
    )


def create_app(
    settings: Settings,
    *,
    database: Database | None = None,
    embedder: Embedder | None = None,
    schedule: bool = True,
    watch: bool = True,
    follow: bool = True,
) -> Litestar:
    """The app for `settings`. A given database or embedder is used as is and left open; the
    rest is opened in the lifespan (off the event loop) and closed on the way out. File events
    are followed when `watch` and the settings' `[indexer] watch` both say so; the projects file
    when `follow`. A read replica (`[indexer] enabled = false`) never schedules nor watches."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        db = database
        if db is None:
            db = await anyio.to_thread.run_sync(server_database(settings).open)
        model = embedder
        if model is None:
            model = await anyio.to_thread.run_sync(make_settings_embedder, settings)
        service = Service(settings, db, model)
        indexing = settings.indexer.enabled
        scheduler = SweepScheduler(service) if schedule and indexing else None
        watchers = None
        if watch and settings.indexer.watch and indexing:
            watchers = Watchers(service, settings.indexer.watch_debounce_ms, settings.data_dir)
            service.watch_state = watchers.status
        projects_file = ProjectsFile(service) if follow else None
        app.state.service = service
        app.state.projects_file = projects_file
        # The search's indexes read into memory before the first request, within a bound (a
        # larger index goes on warming while requests are answered).
        warming = threading.Thread(target=service.warm_up, name="code-rag-warm-up", daemon=True)
        warming.start()
        await anyio.to_thread.run_sync(warming.join, WARM_WAIT_S)
        try:
            if watchers is not None:
                watchers.start()
            if scheduler is not None:
                await anyio.to_thread.run_sync(scheduler.start)
                await anyio.to_thread.run_sync(service.queue_pending_vectors)
            if projects_file is not None:
                projects_file.start()  # after the scheduler and watchers: they follow it
            if not indexing:
                log.info("read replica: answering from the database, never sweeping it")
            if model is None:
                log.info(
                    "model-free ([embedding] provider = none): nothing is embedded; search "
                    "ranks by keywords, exact names and verbatim identifiers"
                )
            yield
        finally:
            if projects_file is not None:
                await anyio.to_thread.run_sync(projects_file.stop)
            if watchers is not None:
                await anyio.to_thread.run_sync(watchers.stop)
            if scheduler is not None:
                scheduler.shutdown()
            await anyio.to_thread.run_sync(service.close)
            if embedder is None and model is not None:
                model.close()
            if database is None:
                db.close()

    return Litestar(
        route_handlers=[
            mcp_endpoint,
            admin_endpoint,
            mcp_other_methods,
            admin_other_methods,
            web.router(),
        ],
        middleware=[guard(settings.server.token, allowed_hosts(settings))],
        template_config=web.template_config(),
        lifespan=[lifespan],
        request_max_body_size=MAX_BODY_BYTES,
        openapi_config=None,
        logging_config=None,  # the process configures logging once (code-rag serve)
        debug=False,
    )


# --- running it -----------------------------------------------------------------------------------


def check_port_free(settings: Settings) -> None:
    """Fail early, with what to do, when the address is taken (another `code-rag serve`?)."""
    host, port = settings.server.host, settings.server.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(
                    f"{host}:{port} is already in use (another code-rag serve?): stop it, or set "
                    f"[server] port in {settings.config_path}"
                ) from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def exposure_warning(host: str) -> str | None:
    """What to shout when the server is told to listen beyond this machine; None on loopback."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES or name.startswith("127."):
        return None
    return (
        f"WARNING: listening on {host}, not only this machine: anyone who can reach this port "
        "and holds the token can read the indexed code, and the token travels in clear text. "
        "Keep [server] host = 127.0.0.1 unless you mean it (and then put TLS in front)."
    )


def exit_on_sigterm() -> None:
    """Make SIGTERM end the process as Ctrl-C does, through `SystemExit`, so exit handlers run
    (the embedded PostgreSQL is stopped by one, when no other process uses it). Uvicorn shuts
    down on the signal, then raises it again with the previous handler: by default that kills
    the process on the spot and leaves the database server running."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_exit)


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def serve_forever(
    settings: Settings, *, database: Database | None = None, embedder: Embedder | None = None
) -> None:
    """Run the app under uvicorn until interrupted (Ctrl-C stops it cleanly)."""
    exit_on_sigterm()
    app = create_app(settings, database=database, embedder=embedder)
    warning = exposure_warning(settings.server.host)
    if warning is not None:
        log.warning(warning)
    uvicorn.run(
        app,
        host=settings.server.host,
        port=settings.server.port,
        log_level="info",
        access_log=False,
        lifespan="on",
    )
