"""find_symbol and get_outline through the real HTTP app, and `./bld symbols|outline` through
a subprocess, over fixtures in ten languages.

What each tool must return is computed independently (`fixture_scan`: plain regexes over the
files, no tree-sitter): every definition line the scan sees is found by its name and outlined
with its signature, nothing else is. Names with `?`, `!`, `$`, `::`, `<=>`, generics and
overloads are checked by hand.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_fixtures import bld, own_dsn, workspace
from fixture_scan import FIXTURES, SCANS, scan
from ollama_standin import OllamaStandin, ollama_standin
from server_fixtures import Served, index, make_project, serve, unique_name

from indexer.db import Database

__all__ = ["ollama_standin", "own_dsn", "workspace"]

REPO = "fx"


@pytest.fixture(scope="module")
def fx(database: Database) -> Iterator[Served]:
    """The scanned fixture files, at their paths under tests/fixtures, indexed and served."""
    base = Path(tempfile.mkdtemp(prefix="code-rag-nav-"))
    files = {rel: (FIXTURES / rel).read_text() for rel in [*SCANS, "chunkers/cpp/matrix.hpp"]}
    with OllamaStandin() as standin:
        project = make_project(unique_name("nav"), base / "fx", files, label=REPO)
        index(database, project, standin)
        yield from serve(base, {project.name: project}, standin, database)
    shutil.rmtree(base, ignore_errors=True)


def call(served: Served, tool: str, **arguments: Any) -> dict[str, Any]:
    response = served.rpc(
        served.project, "tools/call", {"name": tool, "arguments": arguments}
    ).json()
    result = response["result"]
    assert result["isError"] is False, result
    payload: dict[str, Any] = json.loads(result["content"][0]["text"])
    return payload


def tool_error(served: Served, tool: str, **arguments: Any) -> str:
    result = served.rpc(
        served.project, "tools/call", {"name": tool, "arguments": arguments}
    ).json()["result"]
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def expected(rel: str) -> set[tuple[str, str]]:
    """(name, signature line trimmed) of every definition the scan sees in `rel`."""
    lines = (FIXTURES / rel).read_text().splitlines()
    return {(name, lines[line - 1].strip()) for name, line in scan(rel)}


def flatten(entries: list[dict[str, Any]], parent: dict[str, Any] | None = None) -> Iterator[Any]:
    for entry in entries:
        if parent is not None:  # a child lies within its parent
            assert parent["start_line"] <= entry["start_line"] <= entry["end_line"]
            assert entry["end_line"] <= parent["end_line"]
        yield entry
        yield from flatten(entry["children"], entry)


@pytest.mark.parametrize("rel", sorted(SCANS))
def test_outline_lists_exactly_the_scanned_definitions(fx: Served, rel: str) -> None:
    outline = call(fx, "get_outline", repo=REPO, path=rel)
    assert (outline["repo"], outline["path"], outline["truncated"]) == (REPO, rel, False)
    assert outline["language"]
    entries = list(flatten(outline["symbols"]))
    assert {(e["name"], e["signature"]) for e in entries} == expected(rel)
    assert len(entries) == len(scan(rel))


@pytest.mark.parametrize("rel", sorted(SCANS))
def test_find_symbol_finds_each_scanned_definition_by_name(fx: Served, rel: str) -> None:
    lines = (FIXTURES / rel).read_text().splitlines()
    for name, line in sorted(scan(rel)):
        found = call(fx, "find_symbol", name=name, path_glob=rel, limit=50)
        assert found["match"] == "exact"
        assert all(s["name"] == name and s["path"] == rel for s in found["symbols"])
        # Exactly the definitions of that name in the file (overloads included).
        want = sorted(n for n, _ in scan(rel) if n == name)
        assert len(found["symbols"]) == len(want), (name, found)
        assert lines[line - 1].strip() in {s["signature"] for s in found["symbols"]}


def test_odd_names_owners_and_overloads(fx: Served) -> None:
    def names(**kw: Any) -> list[tuple[str, str]]:
        found = call(fx, "find_symbol", **kw)
        return sorted((s["qualified_name"], s["kind"]) for s in found["symbols"])

    assert names(name="cancel!") == [("Billing::Subscription#cancel!", "method")]
    # An owner narrows; any of . :: # separates.
    assert names(name="Subscription.cancel!") == names(name="Billing::Subscription#cancel!")
    # A wrong owner matches nothing exactly: the answer is the fuzzy matches, and says so.
    assert call(fx, "find_symbol", name="Other.cancel!")["match"] == "fuzzy"
    assert names(name="<=>") == [("Billing::Subscription#<=>", "method")]
    assert names(name="$") == [("$", "function")]
    assert names(name="cached$") == [("cached$", "function")]
    # Overloads: both constructors, both call operators.
    assert names(name="Matrix", kind="method") == [("linalg::Matrix::Matrix", "method")] * 2
    assert (
        names(name="linalg::Matrix::operator()") == [("linalg::Matrix::operator()", "method")] * 2
    )
    # Generics are not part of the name.
    assert names(name="Figure") == [("Figure", "enum")]
    assert names(name="Cache", language="go") == [("Cache", "struct")]


def test_prefix_and_fuzzy_matches(fx: Served) -> None:
    c_file = "chunkers/c/ring_buffer.c"
    want = sorted(n for n, _ in scan(c_file) if n.lower().startswith("rb_"))  # case ignored
    found = call(fx, "find_symbol", name="RB_", match="prefix", path_glob=c_file, limit=50)
    assert found["match"] == "prefix"
    assert sorted(s["name"] for s in found["symbols"]) == want
    # A typo: no exact match, so the fuzzy ones, best first, and the result says so.
    found = call(fx, "find_symbol", name="next_renwal")
    assert found["match"] == "fuzzy"
    assert found["symbols"][0]["qualified_name"] == "Billing::Subscription#next_renewal"
    found = call(fx, "find_symbol", name="renewal", match="fuzzy")
    assert "next_renewal" in [s["name"] for s in found["symbols"]]


def test_results_carry_their_chunk(fx: Served) -> None:
    [symbol] = call(fx, "find_symbol", name="log_event")["symbols"]
    chunk = fx.rpc(
        fx.project,
        "tools/call",
        {"name": "get_chunk", "arguments": {"chunk_id": symbol["chunk_id"]}},
    ).json()["result"]
    text = json.loads(chunk["content"][0]["text"])["text"]
    assert symbol["signature"] in text
    assert (symbol["repo"], symbol["path"], symbol["language"]) == (
        REPO,
        "chunkers/ruby/subscription.rb",
        "ruby",
    )


def test_unusable_arguments_say_what_to_do(fx: Served) -> None:
    assert "not a root" in tool_error(fx, "find_symbol", name="x", repo="nope")
    assert "exact, prefix or fuzzy" in tool_error(fx, "find_symbol", name="x", match="regex")
    assert "unknown language" in tool_error(fx, "find_symbol", name="x", language="klingon")
    message = tool_error(fx, "get_outline", repo=REPO, path="no/such/file.py")
    assert "is not indexed" in message and "relative to the root" in message


def test_tools_are_listed_with_schemas(fx: Served) -> None:
    response = fx.rpc(
        fx.project, "tools/list", headers={"MCP-Protocol-Version": "2025-06-18"}
    ).json()
    tools = {t["name"]: t for t in response["result"]["tools"]}
    for name in ("find_symbol", "get_outline"):
        assert tools[name]["inputSchema"]["type"] == "object"
        assert tools[name]["outputSchema"]["type"] == "object"
        assert tools[name]["description"]


def test_cli_symbols_and_outline(workspace: Path) -> None:
    assert bld(workspace, "scan", "shop").returncode == 0
    result = bld(workspace, "symbols", "shop", "Invoice.total", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["match"] == "exact"
    [symbol] = payload["symbols"]
    assert (symbol["qualified_name"], symbol["path"], symbol["start_line"]) == (
        "Invoice.total",
        "billing/invoice.py",
        2,
    )
    text = bld(workspace, "symbols", "shop", "slugify").stdout
    assert text.strip() == "shop/util.py:1-2  function  slugify  def slugify(text):"
    outline = bld(workspace, "outline", "shop", "shop", "billing/invoice.py")
    assert outline.stdout.splitlines() == [
        "1-3  class  Invoice  class Invoice:",
        "  2-3  method  total  def total(self):",
    ]
    missing = bld(workspace, "outline", "shop", "shop", "nope.py")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: shop/nope.py is not indexed")


# --- grep and find_references ------------------------------------------------------------------

SERVED = [*SCANS, "chunkers/cpp/matrix.hpp"]


def file_lines() -> dict[str, list[str]]:
    return {rel: (FIXTURES / rel).read_text().splitlines() for rel in SERVED}


def lines_where(test: Any) -> list[tuple[str, int, str]]:
    """(path, line, text) of every served line passing `test`, in path and line order."""
    return [
        (rel, n, text)
        for rel, lines in sorted(file_lines().items())
        for n, text in enumerate(lines, 1)
        if test(text)
    ]


def got(payload: dict[str, Any], key: str = "matches") -> list[tuple[str, int, str]]:
    assert all(m["repo"] == REPO for m in payload[key])
    return [(m["path"], m["line"], m["text"]) for m in payload[key]]


@pytest.mark.parametrize("pattern", ["return", "self", "::", "?", "$", "_", "%", "(", "=> "])
def test_grep_literal_returns_every_matching_line(fx: Served, pattern: str) -> None:
    found = call(fx, "grep", pattern=pattern, max_results=1000)
    assert found["complete"] is True
    assert got(found) == lines_where(lambda line: pattern in line)


def test_grep_ignoring_case_and_by_regex(fx: Served) -> None:
    found = call(fx, "grep", pattern="ReTuRn", case_sensitive=False, max_results=1000)
    assert got(found) == lines_where(lambda line: "return" in line.lower())
    pattern = r"^\s*(def|fn|func) [a-z_]+\("
    found = call(fx, "grep", pattern=pattern, regex=True, max_results=1000)
    assert got(found) == lines_where(lambda line: re.search(pattern, line) is not None)
    assert got(found)  # the pattern does match something
    found = call(fx, "grep", pattern="impl", language="rust", max_results=1000)
    assert got(found) == [m for m in lines_where(lambda ln: "impl" in ln) if m[0].endswith(".rs")]


# Regexes whose needles take each shape (one string, several, alternatives, none at all):
# the same lines as Python's `re` finds, the syntax these use meaning the same in both.
@pytest.mark.parametrize(
    ("pattern", "flags"),
    [
        (r"self\.[a-z_]+", 0),
        (r"***=::new(", 0),
        (r"(return|yield) (None|nil|null)", 0),
        (r"(public|private|protected) +(static +)?\w+", 0),
        (r"(?:let|const|var) [a-z]+ = ", 0),
        (r"\(\)\s*\{$", 0),
        (r"e{2}", 0),
        (r"(?i)RETURN", re.IGNORECASE),
        (r"CLASS \w+", re.IGNORECASE),
    ],
)
def test_grep_by_regex_finds_every_line(fx: Served, pattern: str, flags: int) -> None:
    ignoring_case = bool(flags) and not pattern.startswith("(?i)")
    found = call(
        fx, "grep", pattern=pattern, regex=True, case_sensitive=not ignoring_case, max_results=1000
    )
    assert found["complete"] is True
    if pattern.startswith("***="):
        assert got(found) == lines_where(lambda line: pattern[4:] in line) != []
        return
    assert got(found) == lines_where(lambda line: re.search(pattern, line, flags) is not None)
    assert got(found)


def test_grep_is_bounded_and_says_so(fx: Served) -> None:
    # Capped: five of the matching lines, sorted, and the flag that says there are more.
    everything = lines_where(lambda line: "e" in line)
    found = call(fx, "grep", pattern="e", max_results=5)
    assert len(got(found)) == 5 and set(got(found)) <= set(everything)
    assert got(found) == sorted(got(found)) and found["complete"] is False
    message = tool_error(fx, "grep", pattern="(unclosed", regex=True)
    assert "not valid" in message and "regex" in message
    assert "out of range" in tool_error(fx, "grep", pattern="x", max_results=100_000)


def references(name: str) -> list[tuple[str, int, str]]:
    """Whole-word occurrences of `name` in the scanned files, less its scanned definitions."""
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    defined = {(rel, line) for rel in SCANS for n, line in scan(rel) if n == name}
    return [
        m
        for m in lines_where(lambda text: word.search(text) is not None)
        if (m[0], m[1]) not in defined and m[0] in SCANS
    ]


@pytest.mark.parametrize("rel", sorted(SCANS))
def test_find_references_matches_a_whole_word_scan(fx: Served, rel: str) -> None:
    for name in sorted({n for n, _ in scan(rel)}):
        found = call(fx, "find_references", name=name, max_results=1000)
        assert found["complete"] is True
        # The C++ file is served but not scanned: leave its lines out of the comparison.
        refs = [m for m in got(found, "references") if m[0] in SCANS]
        assert refs == references(name), name


def test_find_references_of_odd_names_and_the_cap(fx: Served) -> None:
    # `$` is a whole word in `$(key)` and in a template literal's `${`, never inside `$$`.
    refs = got(call(fx, "find_references", name="$"), "references")
    assert ("navigation/dollar.js", 14, "    $cache.set(key, $(key));") in refs
    assert not [r for r in refs if "$$" in r[2]]
    # With owners, the last part is looked for; its definition line is not a reference.
    refs = got(call(fx, "find_references", name="Subscription#next_renewal"), "references")
    assert refs == references("next_renewal")
    assert [(p, n) for p, n, _ in refs] == [("chunkers/ruby/subscription.rb", 41)]  # one a line
    found = call(fx, "find_references", name="self", max_results=3)
    assert len(found["references"]) == 3 and found["complete"] is False


def test_cli_grep_and_refs(workspace: Path) -> None:
    assert bld(workspace, "scan", "shop").returncode == 0
    result = bld(workspace, "grep", "shop", "self.lines", "--json")
    assert json.loads(result.stdout) == {
        "matches": [
            {"repo": "shop", "path": "billing/invoice.py", "line": 3,
             "text": "        return sum(self.lines)"}
        ],
        "complete": True,
        "truncated": False,
    }  # fmt: skip
    text = bld(workspace, "refs", "shop", "slugify").stdout
    assert text.strip() == "no matches"  # its only line is its definition
    text = bld(workspace, "grep", "shop", "RETURN", "-i").stdout.splitlines()
    assert text == [
        "shop/billing/invoice.py:3:         return sum(self.lines)",
        "shop/util.py:2:     return text.lower()",
    ]
    bad = bld(workspace, "grep", "shop", "a(", "--regex")
    assert bad.returncode == 1 and "is not valid" in bad.stderr
