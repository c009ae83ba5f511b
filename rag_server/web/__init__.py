"""The web pages, on the app's own port: sign in with a token, see what is indexed and how far,
search as the agent does. Server-rendered (Jinja2, autoescaped), no script, styles served
from the package, nothing fetched from anywhere.

    session.py    the signed session cookie, CSRF values, the sign-in rate limit
    pages.py      the routes and the security headers every answer carries
    views.py      what the pages show: status, and the tools' answers shaped for templates
    highlight.py  hidden characters made visible, code highlighted by Pygments
    templates/    the pages; static/ their style sheet

The guard in `app.py` checks `Host` and `Origin` for the pages as for every route; the token is
the pages' own business (`is_page`): they take it once, at sign-in, and a session cookie after.
"""

from __future__ import annotations

from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.template.config import TemplateConfig
from litestar.types import Scope

from rag_server.web.highlight import forget_highlights, reveal
from rag_server.web.pages import router
from rag_server.web.views import WEB_PATH

__all__ = ["WEB_PATH", "forget_highlights", "is_page", "router", "template_config", "web_url"]


def is_page(scope: Scope) -> bool:
    """Whether the router matched `scope` to a page (read from its own match, as the guard
    reads an MCP endpoint's name)."""
    template = str(scope.get("path_template") or "")
    return template == "/" or template == WEB_PATH or template.startswith(f"{WEB_PATH}/")


def web_url(base: str) -> str:
    """The pages' address on a server whose base URL is `base`."""
    return f"{base.rstrip('/')}{WEB_PATH}/"


def _size(value: object) -> str:
    amount = float(str(value or 0))
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:,.0f} {unit}" if unit == "bytes" else f"{amount:,.1f} {unit}"
        amount /= 1024
    return f"{amount:,.1f} TiB"


def _duration(value: object) -> str:
    if value is None:
        return "–"
    seconds = float(str(value))
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _percent(value: object) -> str:
    if value is None:
        return "off"  # a model-free index has no vectors to be ready
    return f"{float(str(value)) * 100:.1f} %"


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """The templates, from the package: autoescaped, strict about undefined names."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rag_server.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(reveal=reveal, size=_size, duration=_duration, percent=_percent)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(env))
