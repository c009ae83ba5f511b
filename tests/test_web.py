"""The web pages over real HTTP: signing in and out, what a session sees, what the pages show.

Guards: every page but the sign-in form needs a session; the session cookie is signed,
HttpOnly, SameSite=Strict and expiring, and holds no token; no page, header or log line ever
carries a token; every form that changes state needs its CSRF value; a refused sign-in is one
answer whatever the reason, throttling included; a project's token sees its project only, and
a guessed URL of another project is refused exactly as an unknown one; a revoke signs the
session out at its next page; every answer carries the security headers and a CSP without
script; the status shows the database's real counts, roots, sweeps, failures, model and size;
the search box answers exactly what the tools answer, highlighted, with working links;
hostile file names and contents are escaped and their hidden characters shown; a failing
database is said on the page (a made token's session then ends); a read replica serves the
pages. (The same flows in a real browser: test_web_browser.py.)
"""

from __future__ import annotations

import dataclasses
import html
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape
from ollama_standin import OllamaStandin
from pg_proxy import PgProxy
from server_fixtures import (
    SHOP_FILES,
    TOKEN,
    GatedEmbedder,
    call,
    drop_projects,
    index,
    make_project,
    running,
    server_settings,
    standin_embedder,
    unique_name,
    wait_for,
)
from web_fixtures import (
    FAILING_FILE,
    HOSTILE_FILES,
    RTL,
    Browsing,
    Site,
    csrf_of,
    site,
)

from indexer.db import Database, Schema, store
from rag_server import access
from rag_server.app import create_app
from rag_server.config import IndexerSettings
from rag_server.web.pages import CSP, SIGN_IN_REFUSED
from rag_server.web.session import MAX_FAILURES, SERVER, Session, session_key

__all__ = ["site"]

PAGES = ("/web/", "/web/p/{p}", "/web/p/{p}/search?q=invoice", "/web/p/{p}/chunk/1")


def answer(response: Any) -> tuple[int, bytes, list[tuple[str, str]]]:
    """All a client sees of an answer but its `date` header, which is the clock."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "date"]
    return response.status_code, response.content, headers


@pytest.fixture
def browsing(site: Site) -> Iterator[Browsing]:
    with site.browsing() as client:
        yield client


@pytest.fixture
def signed_in(site: Site) -> Iterator[Browsing]:
    with site.browsing() as client:
        assert client.sign_in(TOKEN).status_code == 303
        yield client


# --- signing in and out ----------------------------------------------------------------------


def test_every_page_but_the_sign_in_form_needs_a_session(site: Site, browsing: Browsing) -> None:
    for page in PAGES:
        response = browsing.get(page.format(p=site.shop))
        assert response.status_code == 303, page
        assert response.headers["location"] == "/web/sign-in"
    root = browsing.get("/")
    assert (root.status_code, root.headers["location"]) == (303, "/web/")
    form = browsing.get("/web/sign-in")
    assert form.status_code == 200 and 'name="token"' in form.text
    assert 'type="password"' in form.text  # never shown on screen, never autocompleted
    assert "<script" not in form.text


def test_signing_in_sets_a_signed_strict_http_only_expiring_cookie_that_holds_no_token(
    site: Site, browsing: Browsing
) -> None:
    signed = browsing.sign_in(site.shop_token)
    assert signed.status_code == 303 and signed.headers["location"] == "/web/"
    [cookie] = [c for c in signed.headers.get_list("set-cookie") if "code_rag_session=" in c]
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
    assert {"httponly", "samesite", "max-age", "path"} <= attributes
    assert "samesite=strict" in cookie.lower() and "path=/web" in cookie.lower()
    max_age = int(re.search(r"max-age=(\d+)", cookie, re.I).group(1))  # type: ignore[union-attr]
    assert 0 < max_age <= 24 * 3600
    value = browsing.http.cookies["code_rag_session"]
    assert site.shop_token not in value and TOKEN not in value
    session = Session.open(value, session_key(TOKEN))
    assert session is not None and session.who == access.token_digest(site.shop_token).hex()
    assert Session.open(value, session_key("another server token")) is None


def test_no_page_header_or_log_line_ever_carries_a_token(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    for token in (TOKEN, site.shop_token, "wrong-" + site.shop_token):
        with site.browsing() as client:
            signed = client.sign_in(token)
            seen += [signed.text, str(signed.headers), str(signed.url)]
            for page in (*PAGES, f"/web/p/{site.shop}/outline?repo=shop&path=net/retry.py"):
                response = client.get(page.format(p=site.shop))
                seen += [response.text, str(response.headers), str(response.url)]
            seen.append(client.sign_out().text)
    seen += [record.getMessage() for record in caplog.records]
    for token in (TOKEN, site.shop_token):
        assert not any(token in text for text in seen)


def test_signing_in_needs_the_form_s_csrf_value(site: Site, browsing: Browsing) -> None:
    form = browsing.get("/web/sign-in")
    right = csrf_of(form.text)
    for data in (
        {"token": TOKEN},  # no value
        {"token": TOKEN, "csrf": "x" + right[1:]},  # another value
    ):
        refused = browsing.http.post("/web/sign-in", data=data)
        assert refused.status_code == 400 and "expired" in refused.text
        assert "code_rag_session" not in refused.headers.get("set-cookie", "")
    # A page elsewhere posting the form with a value of its own: no cookie comes with it.
    with site.browsing() as other:
        refused = other.http.post("/web/sign-in", data={"token": TOKEN, "csrf": right})
        assert refused.status_code == 400
    assert browsing.get("/web/").status_code == 303  # still signed out


def test_every_refused_sign_in_is_the_same_answer(
    site: Site, browsing: Browsing, database: Database
) -> None:
    kept, revoked = access.add_token(database, site.served.settings, site.garden)
    access.revoke_token(database, kept.name)
    form = browsing.get("/web/sign-in")
    csrf = csrf_of(form.text)
    answers = [
        answer(browsing.http.post("/web/sign-in", data={"csrf": csrf, "token": given}))
        for given in ("", "wrong", "x" + TOKEN[1:], revoked, site.shop_token[:-1], "\u202e" * 3)
    ]
    assert answers[0][0] == 403
    assert str(escape(SIGN_IN_REFUSED)).encode() in answers[0][1]
    assert all(a == answers[0] for a in answers)


def test_sign_in_attempts_are_limited_and_refused_alike(site: Site, database: Database) -> None:
    # An app of its own: the limit counts per server, and this test spends it.
    app = create_app(
        site.served.settings,
        database=database,
        embedder=standin_embedder(site.standin),
        schedule=False,
        watch=False,
    )
    with running(app, site.served.settings) as served, Browsing(served.server.base) as client:
        csrf = csrf_of(client.get("/web/sign-in").text)
        wrong = [
            answer(client.http.post("/web/sign-in", data={"csrf": csrf, "token": f"bad{i}"}))
            for i in range(MAX_FAILURES)
        ]
        # Over the limit, the right token gets the very answer a wrong one gets.
        right = client.http.post("/web/sign-in", data={"csrf": csrf, "token": TOKEN})
        assert answer(right) == wrong[0] and all(w == wrong[0] for w in wrong)
        assert client.get("/web/").status_code == 303


def test_signing_out_needs_the_session_s_csrf_value_and_ends_the_session(
    site: Site, signed_in: Browsing
) -> None:
    home = signed_in.get("/web/")
    assert home.status_code == 200
    refused = signed_in.http.post("/web/sign-out", data={"csrf": "forged"})
    assert refused.status_code == 400
    assert signed_in.get("/web/").status_code == 200  # still signed in
    out = signed_in.http.post("/web/sign-out", data={"csrf": csrf_of(home.text)})
    assert (out.status_code, out.headers["location"]) == (303, "/web/sign-in")
    assert "code_rag_session" not in signed_in.http.cookies
    assert signed_in.get("/web/").status_code == 303


def test_a_tampered_expired_or_foreign_session_is_no_session(site: Site) -> None:
    key = session_key(TOKEN)
    good = Session.start(SERVER).seal(key)
    payload, signature = good.split(".")
    expired = Session(SERVER, "c" * 32, int(time.time()) - 1).seal(key)
    forged = Session(SERVER, "c" * 32, int(time.time()) + 3600).seal(session_key("guess"))
    tampered = Session.start(SERVER).seal(key).split(".")[0] + "." + signature
    for value in (expired, forged, tampered, payload, "", "a.b.c"):
        with site.browsing() as client:
            client.http.cookies.set("code_rag_session", value, path="/web")
            assert client.get("/web/").status_code == 303, value
    with site.browsing() as client:
        client.http.cookies.set("code_rag_session", good, path="/web")
        assert client.get("/web/").status_code == 200


# --- what a session sees ------------------------------------------------------------------


def test_a_project_token_sees_its_project_only_and_a_guessed_url_is_refused_alike(
    site: Site,
) -> None:
    with site.browsing() as client:
        assert client.sign_in(site.shop_token).status_code == 303
        home = client.get("/web/").text
        assert site.shop in home
        assert site.garden not in home and site.both not in home and site.gone not in home
        assert client.get(f"/web/p/{site.shop}").status_code == 200
        refusals = [
            answer(client.get(page.format(p=name)))
            for name in (site.garden, site.both, "no_such_project")
            for page in PAGES[1:]
        ]
        assert refusals[0][0] == 403
        assert all(r == refusals[0] for r in refusals)
        body = refusals[0][1].decode()
        assert site.garden not in body and site.both not in body
    with site.browsing() as server:
        assert server.sign_in(TOKEN).status_code == 303
        assert server.get("/web/p/no_such_project").status_code == 404  # operators see typos
        home = server.get("/web/").text
        for name in (site.shop, site.garden, site.both, site.gone):
            assert name in home


def test_a_revoked_token_signs_its_session_out_at_the_next_page(
    site: Site, database: Database
) -> None:
    kept, token = access.add_token(database, site.served.settings, site.shop)
    with site.browsing() as client:
        assert client.sign_in(token).status_code == 303
        assert client.get(f"/web/p/{site.shop}").status_code == 200
        access.revoke_token(database, kept.name)
        assert client.get(f"/web/p/{site.shop}").status_code == 303


def test_every_answer_carries_the_security_headers(site: Site, signed_in: Browsing) -> None:
    responses = [
        signed_in.get(page.format(p=site.shop)) for page in (*PAGES, "/web/static/web.css")
    ]
    responses.append(signed_in.get(f"/web/p/{site.garden}x"))
    with site.browsing() as anonymous:
        responses += [anonymous.get("/web/sign-in"), anonymous.get("/web/")]
    for response in responses:
        headers = response.headers
        assert headers["content-security-policy"] == CSP, response.url
        assert "script" not in CSP and "unsafe" not in CSP and "default-src 'none'" in CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "same-origin"
    for response in responses[:4]:
        assert response.headers["cache-control"] == "no-store"


def test_host_and_origin_are_checked_for_the_pages_as_for_every_route(site: Site) -> None:
    with site.browsing() as client:
        form = client.get("/web/sign-in")
        post = {"csrf": csrf_of(form.text), "token": TOKEN}
        evil = client.http.post("/web/sign-in", data=post, headers={"Origin": "http://evil.test"})
        assert evil.status_code == 403 and "Origin" in evil.text
        rebound = client.http.get("/web/sign-in", headers={"Host": "evil.test"})
        assert rebound.status_code == 403
        assert client.get("/web/").status_code == 303


# --- the status ---------------------------------------------------------------------------


def _facts(page: str) -> dict[str, str]:
    found = re.findall(r'<dd data-fact="([a-z]+)">(.*?)</dd>', page, re.S)
    return {key: html.unescape(re.sub(r"<[^>]+>", "", value)).strip() for key, value in found}


def test_the_status_shows_the_index_as_the_database_holds_it(
    site: Site, signed_in: Browsing, database: Database
) -> None:
    page = signed_in.get(f"/web/p/{site.shop}")
    assert page.status_code == 200
    with database.reading() as conn:
        summary = store.summary(conn, Schema(site.shop))
        size = store.disk_bytes(conn, Schema(site.shop))
    facts = _facts(page.text)
    assert facts["files"] == f"{summary.files:,}" and summary.files > len(SHOP_FILES)
    assert facts["chunks"] == f"{summary.chunks:,}"
    assert facts["failed"] == "1"
    assert facts["vectors"].startswith("100.0 % ready, 0 pending")
    assert "nomic-embed-text" in facts["model"]
    assert facts["chunker"].startswith("version ")
    assert facts["disk"].endswith("KiB") or facts["disk"].endswith("MiB")
    assert size > 0
    assert '<td class="outcome-partial">partial</td>' in page.text  # one file failed
    assert FAILING_FILE in page.text and "refused" in page.text  # the failure and its reason
    assert 'http-equiv="refresh"' not in page.text  # nothing running: no refresh
    gone = signed_in.get(f"/web/p/{site.gone}").text
    assert "no: " in gone  # its root is unavailable, and the page says why


def test_the_status_refreshes_itself_while_a_sweep_runs(site: Site, database: Database) -> None:
    name = unique_name("wbusy")
    base = site.base_dir / name
    project = make_project(name, base, SHOP_FILES, label="busy")
    gated = GatedEmbedder(standin_embedder(site.standin))
    settings = server_settings(base, {name: project}, site.standin, database.dsn)
    app = create_app(settings, database=database, embedder=gated, schedule=False, watch=False)
    try:
        with running(app, settings) as served, Browsing(served.server.base) as client:
            assert client.sign_in(TOKEN).status_code == 303
            served.service.start_sweeps([name], trigger="admin")
            assert gated.waiting.wait(30)
            busy = client.get(f"/web/p/{name}").text
            assert 'http-equiv="refresh"' in busy and "sweeping" in busy
            gated.gate.set()
            wait_for(lambda: served.service.last_run(name) is not None, what="the sweep")
            wait_for(
                lambda: 'http-equiv="refresh"' not in client.get(f"/web/p/{name}").text,
                what="the page to stop refreshing",
            )
    finally:
        gated.gate.set()
        drop_projects(database, [name])


# --- the search box ----------------------------------------------------------------------


def _hits(page: str) -> list[tuple[str, str]]:
    """(path, lines) of each search hit as the page shows them."""
    found = re.findall(
        r'class="path" href="[^"]*">(.*?)</a>\s*<span class="lines">lines ([0-9–]+)</span>',
        page,
        re.S,
    )
    return [(html.unescape(path), lines) for path, lines in found]


def test_the_search_page_shows_what_search_code_answers_highlighted_with_links(
    site: Site, signed_in: Browsing
) -> None:
    query = "invoice number with a zero-padded sequence"
    page = signed_in.get(f"/web/p/{site.shop}/search", q=query)
    assert page.status_code == 200
    tool = call(site.served, site.shop, "search_code", {"query": query})
    expected = [
        (f"{h['project']}: {h['repo']}/{h['path']}", f"{h['start_line']}–{h['end_line']}")
        for h in tool["hits"]
    ]
    assert _hits(page.text) == expected and expected
    first = tool["hits"][0]
    assert f"score {first['score']:.3f}" in page.text
    assert '<span class="k">def</span>' in page.text  # highlighted by Pygments, on the server
    chunk_url = f"/web/p/{site.shop}/chunk/{first['chunk_id']}"
    assert f'href="{chunk_url}"' in page.text
    chunk = signed_in.get(chunk_url)
    assert chunk.status_code == 200 and "generate_number" in chunk.text
    outline = re.search(r'class="outline" href="([^"]+)"', chunk.text)
    assert outline is not None
    shown = signed_in.get(html.unescape(outline.group(1)))
    assert shown.status_code == 200 and "Invoice" in shown.text and "generate_number" in shown.text


# A function longer than a snippet's lines: its snippet is cut and ends with the cut mark.
LONG_FUNCTION = (
    "def reconcile_ledger(entries):\n"
    '    """Sum the ledger entries one account at a time."""\n'
    + "".join(
        f"    total_{n} = sum(e.amount for e in entries if e.account == {n})\n" for n in range(20)
    )
    + "    return total_0\n"
)


def test_a_cut_snippet_ends_with_its_mark_as_plain_text_never_an_error_box(
    site: Site, database: Database
) -> None:
    # The cut mark "…" is a character Python's lexer does not expect: the page shows it as
    # plain text, never wrapped as an error token (which the stylesheet draws as a red box).
    name = unique_name("wcut")
    base = site.base_dir / name
    project = make_project(name, base, {"ledger.py": LONG_FUNCTION}, label="ledger")
    index(database, project, site.standin)
    settings = server_settings(base, {name: project}, site.standin, database.dsn)
    app = create_app(
        settings,
        database=database,
        embedder=standin_embedder(site.standin),
        schedule=False,
        watch=False,
    )
    try:
        with running(app, settings) as served, Browsing(served.server.base) as client:
            assert client.sign_in(TOKEN).status_code == 303
            page = client.get(f"/web/p/{name}/search", q="reconcile the ledger").text
            [hit] = call(served, name, "search_code", {"query": "reconcile the ledger"})["hits"]
            assert hit["snippet"].endswith("…")  # the snippet is cut, and says so
            code = re.search(r'<pre class="hl">(.*?)</pre>', page, re.S)
            assert code is not None
            assert '<span class="k">def</span>' in code.group(1)  # still highlighted
            assert 'class="err"' not in page
            assert code.group(1).rstrip().endswith("…")  # the mark shown, as plain text
    finally:
        drop_projects(database, [name])


def test_symbol_grep_and_references_answer_from_the_same_box(
    site: Site, signed_in: Browsing
) -> None:
    url = f"/web/p/{site.shop}/search"
    symbol = signed_in.get(url, q="symbol: Invoice.generate_number").text
    by_mode = signed_in.get(url, q="Invoice.generate_number", mode="symbol").text
    assert "<code>find_symbol</code>: 1 result" in symbol and "billing/invoice.py" in symbol
    assert symbol == by_mode
    grep = signed_in.get(url, q="grep:retry_with_backoff").text
    matches = call(site.served, site.shop, "grep", {"pattern": "retry_with_backoff"})["matches"]
    assert f"<code>grep</code>: {len(matches)} result" in grep and matches
    refs = signed_in.get(url, q="refs: generate_number").text
    found = call(site.served, site.shop, "find_references", {"name": "generate_number"})
    assert f"<code>find_references</code>: {len(found['references'])} result" in refs


def test_filters_projects_and_detail_levels_reach_the_tool(site: Site, signed_in: Browsing) -> None:
    url = f"/web/p/{site.both}/search"
    go = signed_in.get(url, q="how often to water a plant", language="go").text
    assert "plants/water.go" in go and "billing/invoice.py" not in go
    shop_only = signed_in.get(url, q="water schedule invoice", project=site.shop).text
    assert "plants/water.go" not in shop_only
    globbed = signed_in.get(url, q="invoice", path_glob="net/**").text
    assert all(path.split(": ", 1)[-1].startswith("shop/net/") for path, _ in _hits(globbed))
    pointers = signed_in.get(url, q="invoice number", detail="pointers").text
    assert _hits(pointers) and '<pre class="hl">' not in pointers
    full = signed_in.get(url, q="retry with backoff", detail="full").text
    assert "gave up" in full  # the whole definition, not its first lines only
    bad = signed_in.get(url, q="x", project="no_such_project").text
    assert 'class="error"' in bad  # the tool's own message, shown


# --- hostile content -------------------------------------------------------------------------


def test_hostile_names_and_contents_are_escaped_and_hidden_characters_shown(
    site: Site, signed_in: Browsing
) -> None:
    url = f"/web/p/{site.shop}/search"
    pages = [
        signed_in.get(url, q="grep:__pwned").text,
        signed_in.get(url, q="script onerror javascript hostile", top_k="20").text,
        signed_in.get(url, q="symbol:rtl_named_file").text,
        signed_in.get(url, q="grep:access_level", detail="full").text,
    ]
    tool = call(site.served, site.shop, "search_code", {"query": "hostile", "top_k": 20})
    for hit in tool["hits"]:
        pages.append(signed_in.get(f"/web/p/{site.shop}/chunk/{hit['chunk_id']}").text)
        pages.append(
            signed_in.get(f"/web/p/{site.shop}/outline", repo="shop", path=hit["path"]).text
        )
    shown = html.unescape(re.sub(r"<[^>]+>", "", pages[0]))  # the text a reader sees
    for name in HOSTILE_FILES:  # each file is listed, its name as written, hidden marks shown
        assert name.replace(RTL, "⟨U+202E⟩") in shown, name
    for page in pages:
        lowered = page.lower()
        for tag in ("<script", "<img", "<iframe", "<svg", "<style", '<a href="javascript'):
            assert tag not in lowered, tag  # in the page only as escaped text
        assert re.search(r"<[a-z][^>]*\son[a-z]+\s*=", lowered) is None  # no event attribute
        for hidden in (RTL, "\u2066", "\x1b", "\x07", "\x08"):
            assert hidden not in page
    assert "⟨U+202E⟩" in shown and "⟨U+001B⟩" in shown and "⟨U+2066⟩" in shown
    assert "{{ 7*7 }}" in shown and "&lt;script&gt;alert(12)" in shown  # shown as written


# --- a failing database, a read replica -------------------------------------------------------


def test_a_failing_database_is_said_on_the_page_and_ends_a_made_token_s_session(
    database: Database, work_dir: Path
) -> None:
    proxy = PgProxy(database.dsn)
    db = Database(proxy.dsn, work_dir, max_size=2, pool_timeout_s=1).open()
    name = unique_name("wdown")
    projects = {name: make_project(name, work_dir / "src", SHOP_FILES)}
    with OllamaStandin() as standin:
        index(db, projects[name], standin)
        settings = server_settings(work_dir, projects, standin, proxy.dsn)
        kept, token = access.add_token(db, settings, name)
        app = create_app(
            settings, database=db, embedder=standin_embedder(standin), schedule=False, watch=False
        )
        try:
            with (
                running(app, settings) as served,
                Browsing(served.server.base) as server,
                Browsing(served.server.base) as holder,
            ):
                assert server.sign_in(TOKEN).status_code == 303
                assert holder.sign_in(token).status_code == 303
                assert holder.get(f"/web/p/{name}").status_code == 200
                proxy.cut_on = b"rag_file"  # the database dies at every read of the index
                down = server.get(f"/web/p/{name}")
                assert down.status_code == 503 and 'class="error"' in down.text
                assert "Traceback" not in down.text and proxy.cuts >= 1
                proxy.cut_on = b"access_token"  # a made token can no longer be checked
                assert holder.get(f"/web/p/{name}").status_code == 303
        finally:
            db.close()
            proxy.close()
            access.revoke_token(database, kept.name)
            drop_projects(database, [name])


def test_a_read_replica_serves_the_pages(site: Site, database: Database) -> None:
    settings = dataclasses.replace(site.served.settings, indexer=IndexerSettings(enabled=False))
    app = create_app(settings, embedder=standin_embedder(site.standin))
    with running(app, settings) as replica, Browsing(replica.server.base) as client:
        assert client.sign_in(site.shop_token).status_code == 303
        status = client.get(f"/web/p/{site.shop}").text
        assert "read replica" in status and _facts(status)["failed"] == "1"
        found = client.get(f"/web/p/{site.shop}/search", q="retry with backoff").text
        assert "net/retry.py" in found


def test_a_model_free_index_reads_vectors_off_not_zero_ready() -> None:
    # A model-free project has no vectors to be ready (`vectors_ready` null): the pages' share
    # reads "off", never "0.0 %", which would read as stuck work.
    from rag_server.web import _percent
    from rag_server.web.views import _ready

    assert _ready([None], chunks=120) is None
    assert _percent(_ready([None], chunks=120)) == "off"
    assert _ready([None, 0.5], chunks=120) == 0.5  # a group: the projects that have vectors
    assert _ready([0.25, 1.0], chunks=120) == 0.25
    assert _ready([0.0], chunks=0) == 1.0  # nothing to embed yet is nothing pending
    assert _percent(0.5) == "50.0 %"
