"""Fixtures for the web pages' tests: hostile files, a session over HTTP, a served site.

`HOSTILE_FILES` are files whose names and contents try to run script in a page (tags, event
attributes, `javascript:` URLs, breaking out of `<pre>` and `<style>`), to mislead a reader
(control characters, right-to-left overrides) or to be read as a template. `Site` serves a
project of the shop's files plus those, a second project, a group of both, and a token made
for the first; `Browsing` is an HTTP client that signs in through the form, as a browser does.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ollama_standin import OllamaStandin
from server_fixtures import (
    GARDEN_FILES,
    SHOP_FILES,
    Served,
    drop_projects,
    index,
    make_project,
    running,
    server_settings,
    standin_embedder,
    unique_name,
)

from indexer.db import Database
from rag_server import access
from rag_server.app import create_app

RTL = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
# Every payload that would run sets window.__pwned or opens a dialog; the browser tests look
# for both, and for any element or attribute a payload would have added.
HOSTILE_FILES: Mapping[str, str] = {
    "xss/<script>window.__pwned=1</script>.py": "def script_named_file():\n    return '__pwned'\n",
    'xss/"><img src=x onerror=window.__pwned=2>.js': (
        "function onerrorNamed() { return '__pwned' }\n"
    ),
    "xss/docstring.py": (
        "def hostile_docstring():\n"
        '    """</pre><script>window.__pwned=3;alert(3)</script>"""\n'
        "    return \"<script>alert('__pwned')</script>\"\n"
    ),
    "xss/page.html": (
        '<img src=x onerror="window.__pwned=4;alert(4)">\n'
        "<svg onload=alert(44)></svg>\n"
        '<a href="javascript:window.__pwned=41">click __pwned</a>\n'
    ),
    "xss/links.md": (
        "# Links\n\n[click __pwned](javascript:window.__pwned=5)\n"
        '<iframe src="javascript:alert(5)"></iframe>\n'
    ),
    "xss/control_chars.py": (
        'ESCAPES = "\x1b[31mred\x1b[0m\x07\x08 __pwned"\n\n\n'
        "def control_characters():\n    return ESCAPES\n"
    ),
    "xss/trojan_source.py": (
        'access_level = "user"\n'
        f'if access_level != "none{RTL} \u2066# admin\u2069 \u2066":  # __pwned\n'
        '    print("trojan")\n'
    ),
    f"xss/report{RTL}yp.py": "def rtl_named_file():\n    return '__pwned'\n",
    "javascript:window.__pwned=9/link_target.py": (
        "def javascript_folder():\n    return '__pwned'\n"
    ),
    "xss/template_injection.py": (
        'TEMPLATE = "{{ 7*7 }} {% raw %}{{ config }}{% endraw %} ${7*7} __pwned"\n\n\n'
        "def template_injection():\n    return TEMPLATE\n"
    ),
    "xss/style_breakout.css": (
        "</style><style>body { display: none }</style>\n"
        ".a { background: url(javascript:alert(11)) } /* __pwned */\n"
    ),
    "xss/entities.py": (
        'ENTITY = "&lt;script&gt;alert(12)&lt;/script&gt; &#60;b&#62; __pwned"\n\n\n'
        "def already_escaped():\n    return ENTITY\n"
    ),
}
POISON = "POISON_PILL_7f3a"  # the stand-in refuses to embed it: the file fails, with a reason
FAILING_FILE = "poison.py"
SHOP_WITH_HOSTILE = {
    **SHOP_FILES,
    **HOSTILE_FILES,
    FAILING_FILE: f"{POISON} = 1\n",
}
CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = CSRF_FIELD.search(page)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


class Browsing:
    """An HTTP client that keeps cookies and signs in through the form, as a browser does."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=60)

    def get(self, url: str, /, **params: str) -> httpx.Response:
        return self.http.get(url, params=params or None)

    def sign_in(self, token: str) -> httpx.Response:
        form = self.http.get("/web/sign-in")
        assert form.status_code == 200, form.text
        return self.http.post("/web/sign-in", data={"csrf": csrf_of(form.text), "token": token})

    def sign_out(self) -> httpx.Response:
        page = self.http.get("/web/")
        csrf = csrf_of(page.text) if page.status_code == 200 else ""
        return self.http.post("/web/sign-out", data={"csrf": csrf})

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Browsing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Site:
    """A served site: `shop` (the shop's and the hostile files, one failing), `garden`, the
    group `both` of them, `gone` (indexed, then its root removed), and a token for `shop`."""

    served: Served
    database: Database
    standin: OllamaStandin
    shop: str
    garden: str
    both: str
    gone: str
    shop_token: str
    shop_token_name: str
    base_dir: Path

    @property
    def base(self) -> str:
        return self.served.server.base

    def browsing(self) -> Browsing:
        return Browsing(self.base)


@pytest.fixture(scope="module")
def site(database: Database) -> Iterator[Site]:
    base = Path(tempfile.mkdtemp(prefix="code-rag-web-"))
    shop, garden, gone, both = (unique_name(p) for p in ("wshop", "wgarden", "wgone", "wboth"))
    with OllamaStandin() as standin:
        projects = {
            shop: make_project(shop, base / "shop", SHOP_WITH_HOSTILE, label="shop"),
            garden: make_project(garden, base / "garden", GARDEN_FILES, label="garden"),
            gone: make_project(gone, base / "gone", GARDEN_FILES, label="gone"),
        }
        standin.poison = {POISON}
        for project in projects.values():
            index(database, project, standin)
        standin.poison = set()
        shutil.rmtree(base / "gone")
        settings = dataclasses.replace(
            server_settings(base, projects, standin, database.dsn), groups={both: (shop, garden)}
        )
        app = create_app(
            settings,
            database=database,
            embedder=standin_embedder(standin),
            schedule=False,
            watch=False,
        )
        kept, token = access.add_token(database, settings, shop)
        try:
            with running(app, settings) as served:
                yield Site(
                    served, database, standin, shop, garden, both, gone, token, kept.name, base
                )
        finally:
            access.revoke_token(database, kept.name)
            drop_projects(database, list(projects))
    shutil.rmtree(base, ignore_errors=True)
