"""The strings a regex needs (`indexer.search.needles`): what grep looks up in the trigram index
before it runs a regex.

Two kinds of check. By hand: what a few patterns need, and the syntax after which nothing is
required. Against PostgreSQL: over every line of the chunker fixtures (14 languages), each
line the database's own regex engine matches holds every needle of one alternative — the
needles may only ever say too little, never too much.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from fixture_scan import FIXTURES

from indexer.search.needles import Needles, needles


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("compare_digest", (("compare_digest",),)),
        (r"self\.retries", (("self.retries",),)),
        (r"def \w+\(self", (("def ", "(self"),)),
        ("colou?r", (("colo",),)),
        (r"(get|set)_item\(", (("get", "_item("), ("set", "_item("))),
        (r"(get_item|set_item)\(", (("get_item",), ("set_item",))),
        (r"retry_(delay)+ =", (("retry_", "delay"),)),
        (r"(?:async )?def fetch", (("def fetch",),)),
        (r"fo{2}bar", (("bar",),)),  # `o` repeats: `fo` alone is too short to need
        (r"timeout{1}s", (("timeouts",),)),
        (r"[Tt]imeout\d+ms", (("imeout",),)),
        ("^import os$", (("import os",),)),
        (r"\mpool\M\.checkout", (("pool", ".checkout"),)),
        (r"\x41ZYXW", (("ZYXW",),)),  # not `41ZYXW`: the digits belong to the escape
        ("***=a.b(c", (("a.b(c",),)),
        ("(?i)Pool", (("Pool",),)),
    ],
)
def test_what_a_regex_needs(pattern: str, expected: tuple[tuple[str, ...], ...]) -> None:
    found = needles(pattern)
    assert found is not None
    assert {frozenset(a) for a in found.alternatives} == {frozenset(a) for a in expected}
    assert found.ignore_case == pattern.startswith("(?i)")


@pytest.mark.parametrize(
    "pattern",
    [
        "ab",  # too short for a trigram
        ".*",
        r"\d+",
        "[a-z]+_i",  # `_i` is too short
        "(foo)?ba",  # `ba` too short, and `foo` optional
        "retry|x",  # one alternative needs nothing long enough
        "(?=retry)",
        "(?x) retry # a comment",  # expanded syntax: not followed
        "retry{",  # not a bound
        r"\1",
    ],
)
def test_what_needs_nothing(pattern: str) -> None:
    assert needles(pattern) is None


PATTERNS = [
    r"^\s*(def|fn|func|function) [a-z_]+\(",
    r"self\.[a-z_]+ = ",
    r"(return|yield) (None|nil|null)",
    r"class \w+(\(|:| extends| <)",
    r"(public|private|protected) +(static +)?\w+",
    r"\$[a-z]+->[a-z]+",
    r"[A-Z][a-z]+Error",
    r"\.\.\.",
    r"(?i)RETURN",
    r"(?:let|const|var) [a-z]+ = ",
    r"\m(if|else)\M",
    r"end\s*$",
    r"#include <[a-z]+(\.h)?>",
    r"impl(<[^>]*>)? \w+ for",
    r"\(\)\s*\{$",
    r"[a-z_]+\(self(, \w+: \w+)*\)",
    r"fn \w+\(&?(mut )?self",
    r"(def|fun|func)+ +ma?in",
    r"::new\(",
    r"e{2}",
    r"'[^']*'",
    r"\"[^\"]{3,}\"",
    r"***=->",
    r"(?i)import (os|sys|re)",
]


def fixture_lines() -> list[str]:
    return sorted(
        {
            line
            for path in (FIXTURES / "chunkers").rglob("*")
            if path.is_file()
            for line in path.read_text(errors="replace").split("\n")
        }
    )


def holds(line: str, found: Needles) -> bool:
    text = line.lower() if found.ignore_case else line
    return any(
        all((n.lower() if found.ignore_case else n) in text for n in alternative)
        for alternative in found.alternatives
    )


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_matching_line_holds_the_needles(conn: psycopg.Connection[Any], pattern: str) -> None:
    lines = fixture_lines()
    matched = [
        row[0]
        for row in conn.execute(
            "SELECT l FROM unnest(%s::text[]) AS l WHERE l ~ %s", (lines, pattern)
        ).fetchall()
    ]
    assert matched, "the pattern matches some fixture line"
    found = needles(pattern)
    if found is None:
        return  # nothing needed: every block is read
    assert [line for line in matched if not holds(line, found)] == []
