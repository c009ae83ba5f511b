"""Tokens for one project or one group: what each opens, what it is refused, how it is kept.

Guards: a project's token opens its endpoint and the groups within it, nothing else; a group's
token opens the group, its projects and the groups within it; neither opens the admin endpoint;
every refusal (wrong token, another project, a group reaching further, an unknown project, the
admin endpoint, a table that cannot be read) is the very same 403; a revoke counts at the next
request with no restart, from another process; only a SHA-256 digest is ever stored; and
`./bld token` shows a token once, never again, and says what is wrong with a bad target or name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from cli_fixtures import bld, own_dsn, workspace
from ollama_standin import OllamaStandin, ollama_standin
from pg_proxy import PgProxy
from server_fixtures import (
    GARDEN_FILES,
    SHOP_FILES,
    TOKEN,
    make_project,
    server_settings,
    standin_embedder,
    unique_name,
)
from typer.testing import CliRunner

from bench.served import ServerThread
from indexer.db import Database
from rag_server import access, cli
from rag_server.app import create_app
from rag_server.config import Settings, load_settings
from rag_server.service import Service

__all__ = ["ollama_standin", "own_dsn", "workspace"]

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
STATUS = {"jsonrpc": "2.0", "id": 1, "method": "status"}


@dataclass
class Guarded:
    """A running server over three projects and two groups, and the tokens its tests made."""

    server: ServerThread
    settings: Settings
    service: Service
    database: Database
    alpha: str
    beta: str
    gamma: str
    solo: str  # a group of alpha alone
    pair: str  # a group of alpha and beta
    made: list[str]

    def post(self, endpoint: str | None, token: str | None) -> httpx.Response:
        """POST a ping to /rag-mcp/<endpoint>, or a status to /rag-admin when None."""
        headers = {} if token is None else {"X-RAG-Token": token}
        path = "/rag-admin" if endpoint is None else f"/rag-mcp/{endpoint}"
        with httpx.Client(base_url=self.server.base, timeout=30) as client:
            return client.post(path, json=STATUS if endpoint is None else PING, headers=headers)

    def make(self, target: str) -> str:
        kept, token = access.add_token(self.database, self.service.settings, target)
        self.made.append(kept.name)
        return token


@pytest.fixture(scope="module")
def guarded(database: Database) -> Iterator[Guarded]:
    base = Path(tempfile.mkdtemp(prefix="code-rag-tokens-"))
    names = [unique_name(prefix) for prefix in ("tka", "tkb", "tkc", "tks", "tkp")]
    alpha, beta, gamma, solo, pair = names
    projects = {
        alpha: make_project(alpha, base / "alpha", SHOP_FILES),
        beta: make_project(beta, base / "beta", GARDEN_FILES),
        gamma: make_project(gamma, base / "gamma", GARDEN_FILES),
    }
    with OllamaStandin() as standin:
        settings = dataclasses.replace(
            server_settings(base, projects, standin, database.dsn),
            groups={solo: (alpha,), pair: (alpha, beta)},
        )
        app = create_app(
            settings,
            database=database,
            embedder=standin_embedder(standin),
            schedule=False,
            watch=False,
        )
        server = ServerThread(app).start()
        made: list[str] = []
        try:
            yield Guarded(
                server, settings, app.state.service, database, alpha, beta, gamma, solo, pair, made
            )
        finally:
            server.stop()
            for name in made:
                access.revoke_token(database, name)
    shutil.rmtree(base, ignore_errors=True)


def answer(response: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    """Everything a client sees of an answer but its `date` header, which is the clock."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "date"]
    return response.status_code, response.content, headers


def assert_admitted(guarded: Guarded, endpoint: str, token: str) -> None:
    # Past the guard the token is served exactly as the server token is.
    given = guarded.post(endpoint, token)
    assert given.status_code != 403, (endpoint, given.text)
    assert answer(given) == answer(guarded.post(endpoint, TOKEN))


def assert_refused_alike(guarded: Guarded, attempts: list[tuple[str | None, str | None]]) -> None:
    # One answer for all: the one a request without any token gets.
    reference = answer(guarded.post(guarded.alpha, None))
    assert reference[0] == 403
    for endpoint, token in attempts:
        assert answer(guarded.post(endpoint, token)) == reference, endpoint


# --- what a token opens --------------------------------------------------------------------------


def test_a_project_token_opens_its_project_and_the_groups_within_it_only(
    guarded: Guarded,
) -> None:
    token = guarded.make(guarded.alpha)
    assert guarded.post(guarded.alpha, token).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert_admitted(guarded, guarded.solo, token)
    assert_refused_alike(
        guarded,
        [
            (guarded.beta, token),  # another project
            (guarded.pair, token),  # a group holding another project too
            ("no_such_project", token),  # an unknown project
            (None, token),  # the admin endpoint
        ],
    )


def test_a_group_token_opens_its_group_its_projects_and_the_groups_within_it(
    guarded: Guarded,
) -> None:
    token = guarded.make(guarded.pair)
    for endpoint in (guarded.pair, guarded.alpha, guarded.beta, guarded.solo):
        assert_admitted(guarded, endpoint, token)
    assert_refused_alike(guarded, [(guarded.gamma, token), ("no_such_group", token), (None, token)])


def test_every_refusal_of_a_token_is_the_same_answer(guarded: Guarded) -> None:
    alpha = guarded.make(guarded.alpha)
    solo = guarded.make(guarded.solo)
    wrong = "x" + alpha[1:]
    assert_refused_alike(
        guarded,
        [
            (guarded.alpha, ""),
            (guarded.alpha, wrong),
            ("no_such_project", wrong),
            ("no_such_project", alpha),
            (guarded.beta, alpha),
            (guarded.gamma, solo),
            (guarded.alpha, solo[:-1]),
            (None, alpha),
            (None, solo),
            (None, wrong),
        ],
    )
    refused = guarded.post(guarded.beta, alpha)
    assert "www-authenticate" not in refused.headers
    assert refused.json()["error"]["code"] == -32003
    assert guarded.beta not in refused.text and guarded.alpha not in refused.text


def test_the_server_token_still_opens_everything_and_names_an_unknown_project(
    guarded: Guarded,
) -> None:
    for endpoint in (guarded.alpha, guarded.beta, guarded.gamma):
        assert guarded.post(endpoint, TOKEN).status_code == 200
    assert guarded.post(None, TOKEN).status_code == 200
    unknown = guarded.post("no_such_project", TOKEN)
    assert unknown.status_code == 404  # operators need to tell a typo from a refusal
    assert unknown.json()["error"]["code"] == -32004


def test_a_token_opens_what_the_configuration_says_now(guarded: Guarded) -> None:
    # The target and the endpoint are resolved at each request: a group that loses a project
    # stops opening it, and a target no longer configured opens nothing.
    token = guarded.make(guarded.pair)
    before = guarded.service.settings
    try:
        guarded.service.settings = dataclasses.replace(
            before, groups={guarded.solo: (guarded.alpha,), guarded.pair: (guarded.alpha,)}
        )
        assert_admitted(guarded, guarded.alpha, token)
        assert_refused_alike(guarded, [(guarded.beta, token)])
        guarded.service.settings = dataclasses.replace(before, groups={})
        assert_refused_alike(guarded, [(guarded.alpha, token), (guarded.pair, token)])
    finally:
        guarded.service.settings = before
    assert_admitted(guarded, guarded.beta, token)


def test_tokens_are_kept_only_as_digests(guarded: Guarded, database: Database) -> None:
    token = guarded.make(guarded.gamma)
    with database.connection() as conn:
        rows = conn.execute('SELECT * FROM "code-rag".access_token').fetchall()
        digests = conn.execute(
            'SELECT digest FROM "code-rag".access_token WHERE target = %s', [guarded.gamma]
        ).fetchall()
    assert digests == [(hashlib.sha256(token.encode()).digest(),)]
    pieces = {token[i : i + 8] for i in range(len(token) - 7)}
    for row in rows:
        for value in row:
            texts = [str(value)]
            if isinstance(value, bytes):
                texts += [value.hex(), value.decode("latin-1")]
            for text in texts:
                assert not any(piece in text for piece in pieces), text


# --- when the table cannot be read ---------------------------------------------------------------


def test_a_token_that_cannot_be_checked_is_refused_alike_and_the_server_token_works(
    database: Database, work_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    proxy = PgProxy(database.dsn)
    db = Database(proxy.dsn, work_dir, max_size=2, pool_timeout_s=1).open()
    name = unique_name("tkd")
    projects = {name: make_project(name, work_dir / "src", SHOP_FILES)}
    with OllamaStandin() as standin:
        settings = server_settings(work_dir, projects, standin, proxy.dsn)
        kept, token = access.add_token(db, settings, name)
        app = create_app(
            settings, database=db, embedder=standin_embedder(standin), schedule=False, watch=False
        )
        server = ServerThread(app).start()
        try:
            with httpx.Client(base_url=server.base, timeout=30) as client:
                url = f"/rag-mcp/{name}"
                assert client.post(url, json=PING, headers={"X-RAG-Token": token}).is_success
                nothing = answer(client.post(url, json=PING))
                proxy.cut_on = b"access_token"  # the database dies at every look-up
                caplog.set_level(logging.WARNING, logger="code_rag.auth")
                refused = client.post(url, json=PING, headers={"X-RAG-Token": token})
                assert answer(refused) == nothing and proxy.cuts >= 1
                assert any("refused, unchecked" in r.getMessage() for r in caplog.records)
                assert client.post(url, json=PING, headers={"X-RAG-Token": TOKEN}).is_success
        finally:
            server.stop()
            db.close()
            proxy.close()
            access.revoke_token(database, kept.name)


# --- ./bld token ---------------------------------------------------------------------------------


def run(workspace: Path, *args: str) -> Any:
    config = str(workspace / "application.ini")
    return CliRunner().invoke(cli.app, [*args, "--config", config])


CLAUDE_LINE = re.compile(
    r'claude mcp add --transport http (\S+) (\S+) --header "X-RAG-Token: ([^"]+)"'
)


def test_add_prints_the_token_once_and_list_never_shows_it(workspace: Path) -> None:
    added = run(workspace, "token", "add", "shop")
    assert added.exit_code == 0, added.output
    [(endpoint, url, token)] = CLAUDE_LINE.findall(added.output)
    assert endpoint == "shop" and url.endswith("/rag-mcp/shop")
    assert added.output.count(token) == 1
    assert "token shop for project shop opens /rag-mcp/shop" in added.output
    again = run(workspace, "token", "add", "shop")
    assert "token shop-2 for project shop" in again.output  # default names stay unique
    listed = run(workspace, "token", "list")
    as_json = run(workspace, "token", "list", "--json")
    assert listed.exit_code == as_json.exit_code == 0
    for output in (listed.output, as_json.output):
        assert token not in output and hashlib.sha256(token.encode()).hexdigest() not in output
    assert re.search(r"^shop\s+shop\s+\S+\s+never$", listed.output, re.MULTILINE)
    rows = json.loads(as_json.output)["tokens"]
    assert [(r["name"], r["target"], r["opens"]) for r in rows] == [
        ("shop", "shop", ["shop"]),
        ("shop-2", "shop", ["shop"]),
    ]
    assert set(rows[0]) == {"name", "target", "created_at", "last_used_at", "opens"}


def test_add_for_an_unknown_target_names_the_projects_and_groups(workspace: Path) -> None:
    projects = workspace / "rag-projects.json"
    document = json.loads(projects.read_text())
    projects.write_text(json.dumps({**document, "groups": {"platform": ["shop"]}}))
    result = run(workspace, "token", "add", "shpo")
    assert result.exit_code == 1
    assert (
        "error: unknown project or group 'shpo': " in result.output
        and "configures the projects shop and the groups platform" in result.output
    )
    assert json.loads(run(workspace, "token", "list", "--json").output) == {"tokens": []}


def test_add_with_a_taken_or_bad_name_and_revoke_of_an_unknown_name_fail_clearly(
    workspace: Path,
) -> None:
    assert run(workspace, "token", "add", "shop", "--name", "laptop").exit_code == 0
    taken = run(workspace, "token", "add", "shop", "--name", "laptop")
    assert taken.exit_code == 1
    assert "error: a token is named 'laptop' already" in taken.output
    bad = run(workspace, "token", "add", "shop", "--name", "no spaces")
    assert bad.exit_code == 1 and "error: token name 'no spaces' is not valid" in bad.output
    unknown = run(workspace, "token", "revoke", "desktop")
    assert unknown.exit_code == 1
    assert "error: no token is named 'desktop': code-rag token list shows" in unknown.output
    revoked = run(workspace, "token", "revoke", "laptop")
    assert revoked.exit_code == 0 and "revoked token laptop" in revoked.output


def test_a_revoke_from_another_process_counts_at_the_next_request(
    workspace: Path, own_dsn: str, ollama_standin: OllamaStandin
) -> None:
    added = bld(workspace, "token", "add", "shop")
    assert added.returncode == 0, added.stderr
    [(_, _, token)] = CLAUDE_LINE.findall(added.stdout)
    settings = load_settings(workspace / "application.ini")
    with Database(own_dsn, workspace / ".data") as db:
        app = create_app(
            settings,
            database=db,
            embedder=standin_embedder(ollama_standin),
            schedule=False,
            watch=False,
        )
        server = ServerThread(app).start()
        try:
            path = "/rag-mcp/shop"
            with httpx.Client(base_url=server.base, timeout=30) as client:
                headers = {"X-RAG-Token": token}
                assert client.post(path, json=PING, headers=headers).status_code == 200
                [listed] = json.loads(run(workspace, "token", "list", "--json").output)["tokens"]
                assert listed["last_used_at"] is not None  # its use is on record
                nothing = answer(client.post(path, json=PING))
                revoked = bld(workspace, "token", "revoke", "shop")
                assert revoked.returncode == 0, revoked.stderr
                assert answer(client.post(path, json=PING, headers=headers)) == nothing
        finally:
            server.stop()
        with psycopg.connect(own_dsn) as conn:
            assert conn.execute('SELECT count(*) FROM "code-rag".access_token').fetchone() == (0,)
