"""Result budgets: every tool that returns code takes `detail` (pointers, snippets, full) and
`max_chars`, and a result's JSON never exceeds its budget.

The bounding function is checked directly (hypothesis over entries and budgets); the tools are
driven through the real app over JSON-RPC and the official MCP client, over a small ledger
project whose files are read back from disk to say what "the whole text" is. A cut result is
compared with the same call at the full budget: entries kept are the first ones, unchanged but
for their shortened texts; `omitted` counts the rest; a result that fits is exactly the
uncut one.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from cli_fixtures import bld, own_dsn, workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from ollama_standin import OllamaStandin, ollama_standin
from server_fixtures import TOKEN, Served, index, make_project, serve, unique_name

from indexer import truncate
from indexer.db import Database
from indexer.errors import InvalidArgument
from rag_server.mcp import MAX_RESULT_CHARS
from rag_server.tools.schemas import MIN_RESULT_CHARS
from rag_server.tools.spec import bound_result

__all__ = ["ollama_standin", "own_dsn", "workspace"]

REPO = "ledger"
ACCOUNTS = 10


def _account(n: int) -> str:
    return f'''"""Account {n} of the ledger: postings, balance and statements."""

from ledger.posting import post_entry


class Account{n}:
    """A ledger account that keeps its postings in order."""

    def balance(self, entries: list[float]) -> float:
        """The ledger balance of account {n}: the sum of its postings."""
        total = 0.0
        for amount in entries:
            total += amount
        return round(total, 2)

    def deposit(self, amount: float) -> None:
        """Post a deposit to the ledger."""
        post_entry(self, amount, "deposit into account {n}")

    def withdraw(self, amount: float) -> None:
        """Post a withdrawal to the ledger."""
        post_entry(self, -amount, "withdrawal from account {n}")
'''


# A definition longer than a chunk: search shows it as one hit from its signature to its end.
_LONG_BODY = "".join(
    f"    checked_{i} = ledger_total * {i} + adjustment  # reconcile ledger step {i}\n"
    for i in range(70)
)
LEDGER_FILES: dict[str, str] = {
    "ledger/posting.py": '''"""Posting entries to the ledger."""


def post_entry(account, amount: float, memo: str) -> None:
    """Write one ledger entry for `account`."""
    account.entries.append((amount, memo))


def reconcile_ledger(ledger_total: float, adjustment: float) -> float:
    """Reconcile the ledger total with every adjustment, step by step."""
'''
    + _LONG_BODY
    + "    return ledger_total\n",
    "ledger/wide.py": "LEDGER_CODES = ["
    + ", ".join(f'"code{i:03d}"' for i in range(60))
    + ', "ledger_marker"]  # every code\n',
    **{f"ledger/account_{n}.py": _account(n) for n in range(ACCOUNTS)},
}

# Each tool that returns code, called so that its full-budget answer is never cut: the key of
# its entries (None: one object), and the field that carries code at each detail level.
CALLS: dict[str, tuple[dict[str, Any], str | None]] = {
    "search_code": ({"query": "ledger balance of an account", "top_k": 8}, "hits"),
    "find_symbol": ({"name": "balance", "limit": 50}, "symbols"),
    "get_outline": ({"repo": REPO, "path": "ledger/account_3.py"}, "symbols"),
    "grep": ({"pattern": "ledger", "max_results": 1000}, "matches"),
    "find_references": ({"name": "post_entry", "max_results": 1000}, "references"),
    "get_chunk": ({}, None),  # its chunk_id comes from a search
}
CODE_FIELDS = {"snippet", "text", "signature"}
DETAILS = ("pointers", "snippets", "full")


@pytest.fixture(scope="module")
def ledger(database: Database) -> Iterator[Served]:
    base = Path(tempfile.mkdtemp(prefix="code-rag-budgets-"))
    with OllamaStandin() as standin:
        project = make_project(unique_name("budget"), base / "ledger", LEDGER_FILES, label=REPO)
        index(database, project, standin)
        yield from serve(base, {project.name: project}, standin, database)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def schemas(ledger: Served) -> dict[str, dict[str, Any]]:
    """Each tool's definition as tools/list shows it."""
    listed = ledger.rpc(
        ledger.project, "tools/list", headers={"MCP-Protocol-Version": "2025-11-25"}
    ).json()
    return {tool["name"]: tool for tool in listed["result"]["tools"]}


@pytest.fixture(scope="module")
def long_chunk(ledger: Served) -> int:
    """The chunk_id of the long definition (`reconcile_ledger`), from find_symbol."""
    [found] = call(ledger, "find_symbol", {"name": "reconcile_ledger"})["symbols"]
    return int(found["chunk_id"])


def raw_call(served: Served, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The CallToolResult of one call over JSON-RPC (2025-11-25: with structuredContent)."""
    response = served.rpc(
        served.project,
        "tools/call",
        {"name": tool, "arguments": arguments},
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def call(served: Served, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = raw_call(served, tool, arguments)
    assert result["isError"] is False, result["content"][0]["text"]
    return dict(result["structuredContent"])


def arguments_of(tool: str, chunk_id: int, **budget: Any) -> dict[str, Any]:
    arguments = dict(CALLS[tool][0])
    if tool == "get_chunk":
        arguments["chunk_id"] = chunk_id
    return {**arguments, **budget}


def file_lines(served: Served, path: str, first: int, last: int) -> str:
    root = next(iter(served.settings.projects.values())).roots[0].path
    return "\n".join((root / path).read_text().split("\n")[first - 1 : last])


def code_fields(entry: dict[str, Any]) -> set[str]:
    """The fields of an entry (an outline's children included) that carry code."""
    found = CODE_FIELDS & entry.keys()
    for child in entry.get("children", []):
        found |= code_fields(child)
    return found


# --- the bounding function ------------------------------------------------------------------

REST = "For the rest: read it elsewhere."


def test_a_result_that_fits_is_returned_as_it_is() -> None:
    result = {"hits": [{"id": 1, "text": "def f(): pass"}], "query": "f"}
    bounded = bound_result(result, 500, entries="hits", text="text", rest=REST)
    assert bounded == {**result, "truncated": False}


def test_texts_are_shortened_before_entries_are_dropped() -> None:
    entries = [{"n": i, "text": "x = 1\n" * 200} for i in range(5)]  # 1,200 characters each
    whole = len(json.dumps({"hits": entries}))
    # Room for five texts of a few hundred characters: all five stay, every text shortened.
    bounded = bound_result({"hits": entries}, whole // 2, entries="hits", text="text", rest=REST)
    assert [e["n"] for e in bounded["hits"]] == [0, 1, 2, 3, 4]
    assert bounded["truncated"] is True and bounded["omitted"] == 0
    assert bounded["shortened"] == [0, 1, 2, 3, 4]
    assert all(e["text"].endswith("…") and len(e["text"]) >= 150 for e in bounded["hits"])
    # Too little room for five at the floor: the last entries go, the first keep longer texts.
    small = bound_result({"hits": entries}, 1000, entries="hits", text="text", floor=150, rest=REST)
    kept = small["hits"]
    assert 0 < len(kept) < 5 and small["omitted"] == 5 - len(kept)
    assert [e["n"] for e in kept] == list(range(len(kept)))
    assert all(len(e["text"]) > 150 for e in kept)
    assert small["note"].startswith("Cut to fit max_chars=1000: ") and small["note"].endswith(REST)
    assert len(json.dumps(small, ensure_ascii=False)) <= 1000


def test_a_single_object_has_its_text_shortened() -> None:
    view = {"path": "a.py", "text": "print('é')\n" * 500, "truncated": False, "note": None}
    bounded = bound_result(view, 800, text="text", rest=REST)
    assert bounded["truncated"] is True and bounded["text"].endswith("…")
    assert view["text"].startswith(bounded["text"][:-1])
    assert "the text was shortened" in bounded["note"] and bounded["note"].endswith(REST)
    assert len(json.dumps(bounded, ensure_ascii=False)) <= 800
    assert "omitted" not in bounded


def test_long_fields_are_shortened_as_a_last_resort() -> None:
    # A long query echoed back does not fit the smallest budget even with no hits left.
    result = {"query": "ledger " * 300, "hits": [{"n": 1, "snippet": "x"}]}
    bounded = bound_result(result, MIN_RESULT_CHARS, entries="hits", text="snippet", rest=REST)
    assert len(json.dumps(bounded, ensure_ascii=False)) <= MIN_RESULT_CHARS
    assert bounded["truncated"] is True and bounded["hits"] == [] and bounded["omitted"] == 1
    assert bounded["query"].endswith("…") and result["query"].startswith(bounded["query"][:-1])


def test_a_budget_too_small_for_any_result_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="raise it to"):
        bound_result({"hits": [], "query": "q"}, 5, entries="hits", rest=REST)


_texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=900)
_entries = st.lists(
    st.fixed_dictionaries({"path": st.text(max_size=40), "line": st.integers(), "text": _texts}),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(
    entries=_entries,
    max_chars=st.integers(min_value=MIN_RESULT_CHARS, max_value=MAX_RESULT_CHARS),
    text=st.sampled_from(["text", None]),
    floor=st.integers(min_value=0, max_value=600),
    note=st.sampled_from([None, "No hits."]),
)
def test_a_bounded_list_never_exceeds_its_budget_and_says_what_it_cut(
    entries: list[dict[str, Any]], max_chars: int, text: str | None, floor: int, note: str | None
) -> None:
    result: dict[str, Any] = {"query": "q", "hits": entries}
    if note:
        result["note"] = note
    bounded = bound_result(result, max_chars, entries="hits", text=text, floor=floor, rest=REST)
    assert len(json.dumps(bounded, ensure_ascii=False)) <= max_chars
    kept = bounded["hits"]
    if not bounded["truncated"]:
        assert bounded == {**result, "truncated": False}
        return
    assert bounded["omitted"] == len(entries) - len(kept)
    assert bounded["note"].startswith(f"Cut to fit max_chars={max_chars}")
    assert REST in bounded["note"] and (note is None or bounded["note"].endswith(note))
    shortened = [i for i, got in enumerate(kept) if got != entries[i]]
    assert bounded.get("shortened", []) == shortened
    for i in shortened:
        cut, whole = kept[i]["text"], entries[i]["text"]
        assert cut.endswith("…") and whole.startswith(cut[:-1])
        if len(kept) > 1:  # never below the floor (a cut may end at a line break near it)
            assert len(cut) - 1 >= int(floor * truncate.NEAR_SHARE)
        assert {**kept[i], "text": whole} == entries[i]


# --- the tools, over HTTP ----------------------------------------------------------------------


def test_every_code_tool_lists_detail_and_max_chars(schemas: dict[str, dict[str, Any]]) -> None:
    for tool in CALLS:
        properties = schemas[tool]["inputSchema"]["properties"]
        assert properties["detail"]["enum"] == ["pointers", "snippets", "full"], tool
        assert "pointers" in properties["detail"]["description"]
        assert "full:" in properties["detail"]["description"]
        assert (properties["max_chars"]["minimum"], properties["max_chars"]["maximum"]) == (
            MIN_RESULT_CHARS,
            MAX_RESULT_CHARS,
        )
        output = schemas[tool]["outputSchema"]["properties"]
        assert "truncated" in output and "note" in output
    for tool in ("list_repos", "index_status"):  # no code: no budget arguments
        assert "detail" not in schemas[tool]["inputSchema"]["properties"]


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_the_default_detail_is_what_the_tool_returned_before(
    ledger: Served, long_chunk: int, tool: str
) -> None:
    default = call(ledger, tool, arguments_of(tool, long_chunk))
    same = "full" if tool == "get_chunk" else "snippets"
    assert call(ledger, tool, arguments_of(tool, long_chunk, detail=same)) == default
    assert default["truncated"] is False
    assert "omitted" not in default and "shortened" not in default
    key = CALLS[tool][1]
    entries = default[key] if key else [default]
    assert entries and all(code_fields(e) for e in entries)


@pytest.mark.parametrize("tool", sorted(CALLS))
def test_pointers_carry_no_code(ledger: Served, long_chunk: int, tool: str) -> None:
    key = CALLS[tool][1]
    snippets = call(ledger, tool, arguments_of(tool, long_chunk, detail="snippets"))
    pointers = call(ledger, tool, arguments_of(tool, long_chunk, detail="pointers"))
    entries = pointers[key] if key else [pointers]
    assert entries and not any(code_fields(e) for e in entries)
    # The same entries, where they are: only the code is gone.
    before = snippets[key] if key else [snippets]
    where = ("repo", "path", "start_line", "end_line", "line", "symbol", "chunk_id")
    assert [{k: e.get(k) for k in where} for e in entries] == [
        {k: e.get(k) for k in where} for e in before
    ]


def test_full_search_hits_carry_their_whole_range(ledger: Served) -> None:
    hits = call(ledger, "search_code", {"query": "reconcile the ledger total", "detail": "full"})
    assert hits["hits"] and all("snippet" not in h for h in hits["hits"])
    for hit in hits["hits"]:
        assert hit["text"] == file_lines(ledger, hit["path"], hit["start_line"], hit["end_line"])
    # The long definition is one hit over several chunks: its text is all of it.
    [long] = [h for h in hits["hits"] if h["symbol"] == "reconcile_ledger"]
    assert long["text"].startswith("def reconcile_ledger(") and "step 69" in long["text"]
    assert long["text"].endswith("    return ledger_total")


def test_full_definitions_carry_their_text(ledger: Served) -> None:
    found = call(ledger, "find_symbol", {"name": "balance", "detail": "full"})["symbols"]
    assert len(found) == ACCOUNTS
    for symbol in found:
        text = file_lines(ledger, symbol["path"], symbol["start_line"], symbol["end_line"])
        assert symbol["text"] == text and symbol["signature"] in text
        assert "return round(total, 2)" in text


def test_full_lines_are_whole_and_snippets_a_window(ledger: Served) -> None:
    whole_line = LEDGER_FILES["ledger/wide.py"].rstrip("\n")
    [window] = call(ledger, "grep", {"pattern": "ledger_marker"})["matches"]
    [full] = call(ledger, "grep", {"pattern": "ledger_marker", "detail": "full"})["matches"]
    assert full["text"] == whole_line and len(whole_line) > 300
    assert window["text"] != whole_line and "ledger_marker" in window["text"]
    refs = call(ledger, "find_references", {"name": "post_entry", "detail": "full"})
    for ref in refs["references"]:
        assert ref["text"] == file_lines(ledger, ref["path"], ref["line"], ref["line"])


def test_get_chunk_full_is_its_text_and_snippets_its_first_lines(
    ledger: Served, long_chunk: int
) -> None:
    full = call(ledger, "get_chunk", {"chunk_id": long_chunk, "detail": "full"})
    snippet = call(ledger, "get_chunk", {"chunk_id": long_chunk, "detail": "snippets"})
    assert full["text"].startswith("def reconcile_ledger(") and "snippet" not in full
    assert "text" not in snippet and snippet["snippet"].startswith("def reconcile_ledger(")
    assert len(snippet["snippet"]) < len(full["text"])


def steady(result: dict[str, Any]) -> dict[str, Any]:
    """`result` without what changes from one call to the next (a hit's index age)."""
    if "hits" not in result:
        return result
    hits = [{k: v for k, v in hit.items() if k != "index_age_s"} for hit in result["hits"]]
    return {**result, "hits": hits}


def check_budget(
    served: Served,
    schemas: dict[str, dict[str, Any]],
    tool: str,
    chunk_id: int,
    detail: str,
    max_chars: int,
) -> dict[str, Any]:
    """One call at `max_chars`: within it, valid by the output schema, and consistent with the
    same call at the full budget (which the fixture keeps uncut)."""
    result = raw_call(
        served, tool, arguments_of(tool, chunk_id, detail=detail, max_chars=max_chars)
    )
    assert result["isError"] is False, result["content"][0]["text"]
    text = result["content"][0]["text"]
    got = result["structuredContent"]
    assert len(text) <= max_chars
    assert json.loads(text) == got
    jsonschema.validate(got, schemas[tool]["outputSchema"])
    whole = call(served, tool, arguments_of(tool, chunk_id, detail=detail))
    assert whole["truncated"] is False
    key = CALLS[tool][1]
    got, whole = steady(got), steady(whole)
    if not got["truncated"]:
        assert got == whole
        return got
    assert f"max_chars={max_chars}" in got["note"] and "For the rest" in got["note"]
    if key is None:  # get_chunk: the location stays, the text is shortened
        where = ("chunk_id", "repo", "path", "start_line", "end_line", "text_start_line")
        assert {k: got[k] for k in where} == {k: whole[k] for k in where}
        for field in CODE_FIELDS & got.keys():
            assert got[field].endswith("…") and whole[field].startswith(got[field][:-1])
        return got
    kept, everything = got[key], whole[key]
    assert got["omitted"] == len(everything) - len(kept)
    if "complete" in got:
        assert got["complete"] is (got["omitted"] == 0)
    assert got.get("shortened", []) == [i for i, e in enumerate(kept) if e != everything[i]]
    for i in got.get("shortened", []):
        field = "snippet" if "snippet" in kept[i] else "text"
        cut = kept[i][field]
        assert cut.endswith("…") and everything[i][field].startswith(cut[:-1])
        assert {**kept[i], field: everything[i][field]} == everything[i]
    return got


BUDGETS = [MIN_RESULT_CHARS, 501, 640, 800, 1000, 1500, 2500, 4000, 7000, 12000, MAX_RESULT_CHARS]


@pytest.mark.parametrize("detail", DETAILS)
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_results_stay_within_every_budget(
    ledger: Served,
    schemas: dict[str, dict[str, Any]],
    long_chunk: int,
    tool: str,
    detail: str,
) -> None:
    cut = [check_budget(ledger, schemas, tool, long_chunk, detail, n)["truncated"] for n in BUDGETS]
    # Cut below some budget, whole from there on (the largest budget holds every result here).
    assert cut == sorted(cut, reverse=True) and cut[-1] is False
    # The fixture's results all need cutting at the smallest budget, but for one chunk's place.
    assert cut[0] is True or (tool, detail) == ("get_chunk", "pointers")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    tool=st.sampled_from(sorted(CALLS)),
    detail=st.sampled_from(DETAILS),
    max_chars=st.integers(min_value=MIN_RESULT_CHARS, max_value=9000),
)
def test_results_stay_within_any_budget(
    ledger: Served,
    schemas: dict[str, dict[str, Any]],
    long_chunk: int,
    tool: str,
    detail: str,
    max_chars: int,
) -> None:
    check_budget(ledger, schemas, tool, long_chunk, detail, max_chars)


def test_a_cut_search_says_how_to_get_the_rest(ledger: Served) -> None:
    everything = call(ledger, "search_code", {**CALLS["search_code"][0], "detail": "full"})
    cut = call(
        ledger,
        "search_code",
        {**CALLS["search_code"][0], "detail": "full", "max_chars": 2000},
    )
    assert cut["truncated"] is True
    assert 0 < cut["omitted"] == len(everything["hits"]) - len(cut["hits"])
    note = cut["note"]
    assert note.startswith(f"Cut to fit max_chars=2000: {cut['omitted']} of ")
    for way in ("get_chunk", "raise max_chars", "path_glob", "detail=pointers"):
        assert way in note, way
    # Pointers fit more of the same hits in the same budget.
    pointers = call(
        ledger,
        "search_code",
        {**CALLS["search_code"][0], "detail": "pointers", "max_chars": 2000},
    )
    assert len(pointers["hits"]) > len(cut["hits"])
    assert "detail=pointers" not in pointers.get("note", "")


def test_a_cut_chunk_names_the_lines_to_read(ledger: Served, long_chunk: int) -> None:
    view = call(ledger, "get_chunk", {"chunk_id": long_chunk, "max_chars": 1000})
    assert view["truncated"] is True and view["text"].endswith("…")
    lines = f"read lines {view['text_start_line']}-{view['text_end_line']} of "
    assert lines + view["absolute_path"] in view["note"]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"detail": "everything"}, "detail must be pointers, snippets or full"),
        ({"detail": 3}, "detail must be string"),
        ({"max_chars": 100}, f"use a value from {MIN_RESULT_CHARS} to {MAX_RESULT_CHARS}"),
        ({"max_chars": 10**6}, f"use a value from {MIN_RESULT_CHARS} to {MAX_RESULT_CHARS}"),
        ({"max_chars": "big"}, "max_chars must be integer"),
    ],
)
def test_unusable_budgets_are_refused_with_what_is_allowed(
    ledger: Served, long_chunk: int, arguments: dict[str, Any], words: str
) -> None:
    for tool in CALLS:
        result = raw_call(ledger, tool, arguments_of(tool, long_chunk, **arguments))
        assert result["isError"] is True, tool
        assert words in result["content"][0]["text"], (tool, result["content"][0]["text"])


# --- the tools, through the official MCP client ---------------------------------------------


def test_the_sdk_client_accepts_every_detail_and_cut(ledger: Served, long_chunk: int) -> None:
    # The SDK validates each structured result against the tool's outputSchema: results
    # without code, with whole texts, and cut ones all match it.
    async def exercise() -> list[Any]:
        http = httpx2.AsyncClient(headers={"X-RAG-Token": TOKEN}, timeout=30)
        async with Client(
            streamable_http_client(ledger.url(ledger.project), http_client=http), mode="auto"
        ) as client:
            return [
                await client.call_tool(tool, arguments_of(tool, long_chunk, **budget))
                for tool in CALLS
                for budget in (
                    {"detail": "pointers"},
                    {"detail": "full"},
                    {"detail": "full", "max_chars": 700},
                    {"detail": "snippets", "max_chars": MIN_RESULT_CHARS},
                )
            ]

    results = anyio.run(exercise)
    assert len(results) == 4 * len(CALLS)
    for result in results:
        assert not result.is_error, result.content[0].text
        assert json.loads(result.content[0].text) == result.structured_content
    assert sum(bool(r.structured_content["truncated"]) for r in results) >= len(CALLS)


# --- the CLI: the same objects, printed ---------------------------------------------------------


def test_cli_prints_the_tools_objects_at_a_detail_and_within_a_budget(workspace: Path) -> None:
    assert bld(workspace, "scan", "shop").returncode == 0
    printed = bld(workspace, "symbols", "shop", "Invoice.total", "--detail", "full")
    [total] = json.loads(printed.stdout)["symbols"]  # --detail implies --json
    assert total["text"] == "    def total(self):\n        return sum(self.lines)"
    lines = json.loads(bld(workspace, "grep", "shop", "return", "--detail", "pointers").stdout)
    assert [(m["path"], m["line"]) for m in lines["matches"]] == [
        ("billing/invoice.py", 3),
        ("util.py", 2),
    ]
    assert not any("text" in m for m in lines["matches"])
    outline = bld(
        workspace, "outline", "shop", "shop", "billing/invoice.py", "--detail", "pointers"
    )
    [invoice] = json.loads(outline.stdout)["symbols"]
    assert not code_fields(invoice) and invoice["children"][0]["name"] == "total"
    refs = bld(workspace, "refs", "shop", "lines", "--json", "--detail", "full")
    assert json.loads(refs.stdout)["references"][0]["text"] == "        return sum(self.lines)"
    # The budget is the tool's: its compact JSON within --max-chars, the cut said.
    cut = bld(
        workspace, "search", "shop", "Invoice total", "--detail", "full", "--max-chars", "500"
    )
    assert cut.returncode == 0, cut.stderr
    payload = json.loads(cut.stdout)
    assert len(json.dumps(payload, ensure_ascii=False)) <= 500
    assert payload["truncated"] is True and payload["omitted"] >= 1
    assert "max_chars=500" in payload["note"]


def test_cli_refuses_an_unknown_detail_or_budget(workspace: Path) -> None:
    bad = bld(workspace, "grep", "shop", "x", "--detail", "everything")
    assert bad.returncode == 2
    assert "'pointers', 'snippets', 'full'" in bad.stderr
    small = bld(workspace, "symbols", "shop", "x", "--max-chars", "10")
    assert small.returncode == 2
    assert f"greater than or equal to {MIN_RESULT_CHARS}" in small.stderr
