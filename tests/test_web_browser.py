"""The web pages in a real browser: the operating system's Chromium, driven by Playwright.

Guards: a person signs in through the form, reads a status with the real counts of a real
sweep, searches and sees a highlighted hit, opens its chunk, sees hostile files (names and
contents) render inert — no dialog, no script run, no element or attribute a payload would
add, no request leaving 127.0.0.1 — sees another project's page refused, and signs out. The
pages work without JavaScript, so the browser runs with it on: a payload that got through
would run. With CODE_RAG_SCREENSHOTS=<folder> the test saves the screenshots docs/web.md shows.

Chromium comes from the system (`apt-get install -y chromium`); without it these tests fail in
CI (CI=true) and are skipped elsewhere with one line saying what to install.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from server_fixtures import TOKEN, call
from web_fixtures import FAILING_FILE, HOSTILE_FILES, RTL, Site, site

from indexer.db import Database, Schema, store
from rag_server.cli import develop

__all__ = ["site"]

CHROMIUM = os.environ.get("CODE_RAG_CHROMIUM", "/usr/bin/chromium")
INSTALL = (
    "the browser tests need Chromium and Playwright: apt-get install -y chromium "
    "(Playwright comes with ./bld test's dev extra)"
)
SCREENSHOTS = os.environ.get("CODE_RAG_SCREENSHOTS")
VIEWPORT = {"width": 960, "height": 600}
# What a payload would have added to a page, were it not escaped.
INJECTED = """() => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    const added = ['script', 'iframe', 'object', 'embed', 'svg', 'img', 'style'];
    if (added.includes(tag)) found.push(tag);
    for (const a of el.attributes) {
      if (a.name.startsWith('on')) found.push(tag + '[' + a.name + ']');
      if (/^\\s*javascript:/i.test(a.value)) found.push(tag + '[' + a.name + '=javascript:]');
    }
  }
  if (window.__pwned !== undefined) found.push('window.__pwned=' + window.__pwned);
  return found;
}"""


def _missing() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
        return INSTALL
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return INSTALL
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    path = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


class Tab:
    """A page of the browser that records dialogs, console errors and every request."""

    def __init__(self, browser: Any, base: str) -> None:
        self.base = base
        self.context = browser.new_context(viewport=VIEWPORT, java_script_enabled=True)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("request", lambda request: self.requests.append(request.url))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def go(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def text(self) -> str:
        return str(self.page.inner_text("body"))

    def shot(self, name: str) -> None:
        if SCREENSHOTS:
            folder = Path(SCREENSHOTS)
            folder.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(folder / f"{name}.png"))

    def assert_inert(self) -> None:
        assert self.dialogs == []
        assert self.page.evaluate(INJECTED) == []
        hosts = {urlsplit(url).hostname for url in self.requests}
        assert hosts <= {"127.0.0.1"}, hosts

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, site: Site) -> Iterator[Tab]:
    opened = Tab(browser, site.base)
    try:
        yield opened
    finally:
        opened.close()


def sign_in(tab: Tab, token: str) -> None:
    tab.go("/web/")
    assert tab.page.url.endswith("/web/sign-in")
    tab.page.fill("#token", token)
    tab.page.click("button[type=submit]")
    tab.page.wait_for_url("**/web/")


def test_a_person_signs_in_reads_the_status_searches_opens_a_chunk_and_signs_out(
    tab: Tab, site: Site, database: Database
) -> None:
    tab.go("/web/sign-in")
    tab.shot("sign-in")
    sign_in(tab, TOKEN)
    assert site.shop in tab.text() and site.both in tab.text()
    tab.shot("projects")

    # The status: the counts of the real sweep the fixture ran.
    tab.page.click(f"a[href='/web/p/{site.shop}']")
    tab.page.wait_for_url(f"**/web/p/{site.shop}")
    with database.reading() as conn:
        summary = store.summary(conn, Schema(site.shop))
    assert tab.page.inner_text("dd[data-fact=files]") == f"{summary.files:,}"
    assert tab.page.inner_text("dd[data-fact=chunks]") == f"{summary.chunks:,}"
    assert tab.page.inner_text("dd[data-fact=failed]") == "1"
    assert FAILING_FILE in tab.text()
    tab.shot("status")

    # A search, from the box, as a person types it.
    tab.page.fill("input[name=q]", "invoice number with a zero-padded sequence")
    tab.page.click("form.search button[type=submit]")
    tab.page.wait_for_url("**/search?**")
    expected = call(
        site.served,
        site.shop,
        "search_code",
        {"query": "invoice number with a zero-padded sequence"},
    )["hits"][0]
    first = tab.page.locator("li.result").first
    assert f"{expected['repo']}/{expected['path']}" in first.inner_text()
    assert first.locator("pre.hl span.k").count() > 0  # highlighted keywords
    assert tab.page.locator("pre.hl span.k").first.evaluate(
        "el => getComputedStyle(el).color"
    ) != tab.page.locator("pre.hl").first.evaluate("el => getComputedStyle(el).color")
    tab.shot("search")

    # Its chunk.
    first.locator("a.path").click()
    tab.page.wait_for_url(f"**/chunk/{expected['chunk_id']}**")
    assert "generate_number" in tab.text()
    assert f"lines {expected['start_line']}–{expected['end_line']}" in tab.text()
    tab.shot("chunk")

    # Another project's page, guessed: the refusal an unknown one gets.
    tab.page.click("form[action='/web/sign-out'] button")
    tab.page.wait_for_url("**/web/sign-in")
    sign_in(tab, site.shop_token)
    refused = tab.go(f"/web/p/{site.garden}")
    assert refused.status == 403
    other = tab.text()
    unknown = tab.go("/web/p/no_such_project")
    assert unknown.status == 403 and tab.text() == other
    assert site.garden not in tab.text()

    # Signing out ends the session: the pages send to the form again.
    tab.page.click("form[action='/web/sign-out'] button")
    tab.page.wait_for_url("**/web/sign-in")
    tab.go(f"/web/p/{site.shop}")
    assert tab.page.url.endswith("/web/sign-in")
    tab.assert_inert()


def test_hostile_files_render_inert(tab: Tab, site: Site) -> None:
    sign_in(tab, TOKEN)
    search = f"/web/p/{site.shop}/search"
    tab.go(f"{search}?q=grep%3A__pwned")
    shown = tab.text()
    assert len(HOSTILE_FILES) >= 10
    for name in HOSTILE_FILES:  # each one listed, its name as written, hidden marks shown
        assert name.replace(RTL, "⟨U+202E⟩") in shown, name
    assert "<script>window.__pwned=1</script>" in shown
    assert "⟨U+202E⟩" in shown and "⟨U+001B⟩" in shown
    tab.shot("hostile")
    tab.assert_inert()

    visited = 0
    for hit in call(site.served, site.shop, "search_code", {"query": "__pwned", "top_k": 20})[
        "hits"
    ]:
        for link in (f"/web/p/{site.shop}/chunk/{hit['chunk_id']}",):
            tab.go(link)
            tab.assert_inert()
            visited += 1
    for mode in ("search", "symbol", "refs"):
        tab.go(f"{search}?mode={mode}&q=__pwned&detail=full")
        tab.assert_inert()
    # Every outline and chunk link of the grep page, followed.
    tab.go(f"{search}?q=grep%3A__pwned")
    links = [
        str(tab.page.evaluate("el => el.getAttribute('href')", el))
        for el in tab.page.query_selector_all("a.path")
    ]
    assert links and all(re.match(r"^/web/p/", link) for link in links)
    for link in links:
        tab.go(link)
        tab.assert_inert()
        visited += 1
    assert visited >= len(HOSTILE_FILES)


def test_a_machine_without_chromium_is_told_in_one_line_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(develop, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CI", raising=False)
    here = develop.browser_note()
    monkeypatch.setenv("CI", "true")
    in_ci = develop.browser_note()
    for note in (here, in_ci):
        assert note is not None and "\n" not in note and "apt-get install -y chromium" in note
    assert here is not None and "skipped" in here
    assert in_ci is not None and "fail" in in_ci
    monkeypatch.setattr(develop, "CHROMIUM", __file__)  # a browser there: nothing to say
    assert develop.browser_note() is None
