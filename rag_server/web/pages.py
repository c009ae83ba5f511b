"""The routes of the pages, all under /web (and / sending there):

    GET  /web/sign-in                  the form; POST signs in (a token) and sets the session
    POST /web/sign-out                 ends the session
    GET  /web/                         the projects and groups this session sees
    GET  /web/p/{endpoint}             an endpoint's status (refreshes itself while work runs)
    GET  /web/p/{endpoint}/search      the search box: search_code, find_symbol, grep, refs
    GET  /web/p/{endpoint}/chunk/{id}  one chunk (get_chunk)
    GET  /web/p/{endpoint}/outline     one file's outline (get_outline)
    GET  /web/static/{name}            the style sheets and the icon, from the package

Without a session every page but the sign-in form sends there. An endpoint the session does
not open gets one and the same 403 page whether or not it exists (as the MCP endpoint refuses
a token); only the server token learns that a name is unknown (404). Every answer carries the
security headers of `secure`: a Content-Security-Policy that allows no script at all, and
pages are never cached nor framed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import anyio
from litestar import Request, Response, Router, get, post
from litestar.datastructures import Cookie
from litestar.response import Redirect, Template

from indexer.errors import ProjectNotFound, RagError
from rag_server.service import Endpoint, Service
from rag_server.web import views
from rag_server.web.highlight import stylesheet
from rag_server.web.session import (
    COOKIE_PATH,
    CSRF_COOKIE,
    CSRF_FIELD,
    CSRF_SECONDS,
    SERVER,
    SESSION_COOKIE,
    SESSION_SECONDS,
    Session,
    SignInLimiter,
    Viewer,
    new_csrf,
    same,
    session_key,
    sign_in,
    viewer_of,
)

SIGN_IN_URL = f"{views.WEB_PATH}/sign-in"
HOME_URL = f"{views.WEB_PATH}/"
REFRESH_SECONDS = 5
# No script from anywhere; styles and images from this server only; forms post here only.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: with it Chromium sends `Origin: null` on the pages' own forms, which
    # the guard rightly refuses; same-origin sends nothing to other sites.
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
}
# The one answer to a sign-in that did not work: a wrong, revoked or unknown token, a token
# whose project is gone, or too many tries from this address.
SIGN_IN_REFUSED = (
    "That token was not accepted. Paste the server's token (code-rag serve prints it) or one "
    "made by code-rag token add; after many tries, wait a minute."
)
PAGE_REFUSED = (
    "This session does not open that page: sign in with a token that opens it "
    "(code-rag token add makes one for a project or a group)."
)


async def secure(response: Response[Any]) -> Response[Any]:
    response.headers.update(SECURITY_HEADERS)
    response.headers.setdefault("Cache-Control", "no-store")
    return response


class WebState:
    """What the pages keep while the app runs: the session key and the sign-in limiter."""

    def __init__(self, server_token: str) -> None:
        self.key = session_key(server_token)
        self.limiter = SignInLimiter()


def _service(request: Request[Any, Any, Any]) -> Service:
    service: Service = request.app.state.service
    return service


def _web(request: Request[Any, Any, Any]) -> WebState:
    state: WebState | None = getattr(request.app.state, "web", None)
    if state is None:  # made once, at the first page (no await in between)
        state = WebState(_service(request).settings.server.token)
        request.app.state.web = state
    return state


def _cookie(name: str, value: str, max_age: int) -> Cookie:
    return Cookie(
        key=name,
        value=value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=False,  # plain HTTP on loopback; a Secure cookie would never come back
    )


def _page(
    name: str, context: Mapping[str, Any], status: int = 200, cookies: list[Cookie] | None = None
) -> Template:
    return Template(
        template_name=name, context=dict(context), status_code=status, cookies=cookies or []
    )


def _to_sign_in() -> Redirect:
    return Redirect(path=SIGN_IN_URL, status_code=303)


async def _viewer(request: Request[Any, Any, Any]) -> Viewer | None:
    session = Session.open(request.cookies.get(SESSION_COOKIE), _web(request).key)
    if session is None or session.who == SERVER:  # the server token needs no look-up
        return None if session is None else Viewer(session)
    return await anyio.to_thread.run_sync(viewer_of, session, _service(request).db)


def _frame(request: Request[Any, Any, Any], viewer: Viewer, **context: Any) -> dict[str, Any]:
    """What every signed-in page shows around its content."""
    service = _service(request)
    settings = service.settings
    return {
        "viewer": viewer.describe(settings),
        "csrf": viewer.session.csrf,
        "nav": [(name, views.page_url(name)) for name in viewer.endpoints(settings)],
        "replica": not service.indexing,
        "refresh": None,
        **context,
    }


def _refused(request: Request[Any, Any, Any], viewer: Viewer) -> Template:
    return _page("refused.html", _frame(request, viewer, message=PAGE_REFUSED), 403)


def _unavailable(request: Request[Any, Any, Any], viewer: Viewer, exc: RagError) -> Template:
    return _page("refused.html", _frame(request, viewer, message=exc.message), 503)


async def _open(request: Request[Any, Any, Any]) -> tuple[Viewer, Endpoint] | Response[Any]:
    """The viewer and the endpoint of an endpoint's page, or the answer that refuses it."""
    name = str(request.path_params["endpoint"])
    viewer = await _viewer(request)
    if viewer is None:
        return _to_sign_in()
    service = _service(request)
    if viewer.opens(service.settings, name):
        try:
            return viewer, service.endpoint(name)
        except ProjectNotFound:
            pass  # removed from the configuration meanwhile
    if not viewer.is_server:
        return _refused(request, viewer)
    message = f"No project or group named {name!r} is served here."
    return _page("refused.html", _frame(request, viewer, message=message), 404)


def _query(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in request.query_params.items()}


# --- signing in and out -------------------------------------------------------------------


@get("/", name="web:root", include_in_schema=False)
async def root() -> Redirect:
    return Redirect(path=HOME_URL, status_code=303)


@get(SIGN_IN_URL, name="web:sign-in")
async def sign_in_form(request: Request[Any, Any, Any]) -> Response[Any]:
    if await _viewer(request) is not None:
        return Redirect(path=HOME_URL, status_code=303)
    csrf = request.cookies.get(CSRF_COOKIE) or ""
    if len(csrf) != len(new_csrf()):
        csrf = new_csrf()
    return _page(
        "sign_in.html",
        {"csrf": csrf, "message": None},
        cookies=[_cookie(CSRF_COOKIE, csrf, CSRF_SECONDS)],
    )


async def _form(request: Request[Any, Any, Any]) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {key: values[0] for key, values in parse_qs(body, keep_blank_values=True).items()}


def _expired() -> Template:
    # A form without its CSRF value (another site's, or a page left open too long).
    csrf = new_csrf()
    return _page(
        "sign_in.html",
        {"csrf": csrf, "message": "The form had expired: sign in again."},
        400,
        [_cookie(CSRF_COOKIE, csrf, CSRF_SECONDS)],
    )


@post(SIGN_IN_URL, name="web:sign-in-post", status_code=303)
async def sign_in_post(request: Request[Any, Any, Any]) -> Response[Any]:
    form = await _form(request)
    csrf = request.cookies.get(CSRF_COOKIE)
    if not same(form.get(CSRF_FIELD), csrf):
        return _expired()
    assert csrf is not None
    web = _web(request)
    service = _service(request)
    client = request.client.host if request.client else ""
    who = None
    if not web.limiter.blocked(client):
        given = form.get("token", "").strip()
        who = await anyio.to_thread.run_sync(
            sign_in, given, service.settings.server.token, service.db, service.settings
        )
        if who is None:
            web.limiter.failed(client)
    if who is None:
        return _page("sign_in.html", {"csrf": csrf, "message": SIGN_IN_REFUSED}, 403)
    session = Session.start(who)
    return Redirect(
        path=HOME_URL,
        status_code=303,
        cookies=[
            _cookie(SESSION_COOKIE, session.seal(web.key), SESSION_SECONDS),
            _cookie(CSRF_COOKIE, "", 0),
        ],
    )


@post(f"{views.WEB_PATH}/sign-out", name="web:sign-out", status_code=303)
async def sign_out(request: Request[Any, Any, Any]) -> Response[Any]:
    form = await _form(request)
    session = Session.open(request.cookies.get(SESSION_COOKIE), _web(request).key)
    if session is not None and not same(form.get(CSRF_FIELD), session.csrf):
        return Response(
            "The form had expired: reload the page and sign out again.",
            status_code=400,
            media_type="text/plain",
        )
    return Redirect(path=SIGN_IN_URL, status_code=303, cookies=[_cookie(SESSION_COOKIE, "", 0)])


# --- the pages ----------------------------------------------------------------------------


@get(HOME_URL, name="web:home")
async def home(request: Request[Any, Any, Any]) -> Response[Any]:
    viewer = await _viewer(request)
    if viewer is None:
        return _to_sign_in()
    service = _service(request)
    names = viewer.endpoints(service.settings)
    try:
        rows = await anyio.to_thread.run_sync(views.overview, service, names)
    except RagError as exc:  # the database away: say so, as the tools do
        return _unavailable(request, viewer, exc)
    working = any(r["running"] or (r["pending"] and service.indexing) for r in rows)
    refresh = REFRESH_SECONDS if working else None
    return _page("home.html", _frame(request, viewer, rows=rows, refresh=refresh))


@get(f"{views.WEB_PATH}/p/{{endpoint:str}}", name="web:status")
async def status(request: Request[Any, Any, Any]) -> Response[Any]:
    opened = await _open(request)
    if isinstance(opened, Response):
        return opened
    viewer, found = opened
    service = _service(request)
    try:
        projects = await anyio.to_thread.run_sync(views.endpoint_views, service, found)
    except RagError as exc:
        return _unavailable(request, viewer, exc)
    refresh = REFRESH_SECONDS if any(p.busy for p in projects) else None
    context = _frame(
        request,
        viewer,
        endpoint=found,
        projects=projects,
        refresh=refresh,
        ask=views.Ask.of({}),
        search_url=views.page_url(found.name, "search"),
        modes=views.MODES,
        details=views.DETAILS,
    )
    return _page("status.html", context)


@get(f"{views.WEB_PATH}/p/{{endpoint:str}}/search", name="web:search")
async def search(request: Request[Any, Any, Any]) -> Response[Any]:
    opened = await _open(request)
    if isinstance(opened, Response):
        return opened
    viewer, found = opened
    ask = views.Ask.of(_query(request))
    answer: dict[str, Any] | None = None
    error = None
    if ask.text:
        try:
            answer = await anyio.to_thread.run_sync(
                views.search_view, _service(request), found, ask
            )
        except RagError as exc:
            error = exc.message
    context = _frame(
        request,
        viewer,
        endpoint=found,
        ask=ask,
        answer=answer,
        error=error,
        search_url=views.page_url(found.name, "search"),
        status_url=views.page_url(found.name),
        modes=views.MODES,
        details=views.DETAILS,
    )
    return _page("search.html", context)


@get(f"{views.WEB_PATH}/p/{{endpoint:str}}/chunk/{{chunk_id:int}}", name="web:chunk")
async def chunk(request: Request[Any, Any, Any]) -> Response[Any]:
    opened = await _open(request)
    if isinstance(opened, Response):
        return opened
    viewer, found = opened
    project = request.query_params.get("project") or None
    shown, error = None, None
    try:
        shown = await anyio.to_thread.run_sync(
            views.chunk_view, _service(request), found, request.path_params["chunk_id"], project
        )
    except RagError as exc:
        error = exc.message
    context = _frame(
        request,
        viewer,
        endpoint=found,
        shown=shown,
        error=error,
        search_url=views.page_url(found.name, "search"),
    )
    return _page("chunk.html", context, 200 if error is None else 404)


@get(f"{views.WEB_PATH}/p/{{endpoint:str}}/outline", name="web:outline")
async def outline(request: Request[Any, Any, Any]) -> Response[Any]:
    opened = await _open(request)
    if isinstance(opened, Response):
        return opened
    viewer, found = opened
    query = _query(request)
    shown, error = None, None
    try:
        shown = await anyio.to_thread.run_sync(
            views.outline_view,
            _service(request),
            found,
            query.get("repo", ""),
            query.get("path", ""),
            query.get("project") or None,
        )
    except RagError as exc:
        error = exc.message
    context = _frame(
        request,
        viewer,
        endpoint=found,
        shown=shown,
        error=error,
        search_url=views.page_url(found.name, "search"),
    )
    return _page("outline.html", context, 200 if error is None else 404)


# --- style sheets and the icon ------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _static() -> dict[str, tuple[str, str]]:
    """Each file served under /web/static: its text and its media type."""
    folder = resources.files("rag_server.web").joinpath("static")
    return {
        "web.css": (folder.joinpath("web.css").read_text("utf-8"), "text/css"),
        "icon.svg": (folder.joinpath("icon.svg").read_text("utf-8"), "image/svg+xml"),
        "code.css": (stylesheet(), "text/css"),
    }


@get(f"{views.WEB_PATH}/static/{{name:str}}", name="web:static")
async def static(request: Request[Any, Any, Any]) -> Response[str]:
    found = _static().get(str(request.path_params["name"]))
    if found is None:
        return Response("not found", status_code=404, media_type="text/plain")
    text, media_type = found
    return Response(text, media_type=media_type, headers={"Cache-Control": "max-age=3600"})


def router() -> Router:
    """Every page's route, each answer with the security headers."""
    return Router(
        path="/",
        route_handlers=[
            root,
            sign_in_form,
            sign_in_post,
            sign_out,
            home,
            status,
            search,
            chunk,
            outline,
            static,
        ],
        after_request=secure,
        include_in_schema=False,
    )
