"""Exact-text navigation: every line that says X (`grep`) and every use of an identifier
(`find_references`), over the indexed text of each file.

A pg_trgm index over the spelled form of blocks of whole lines (`store.text_rows`: trigrams
that span punctuation) picks the blocks that can match (those holding the literal, or a
regex's needles: `needles.py`), then their lines are matched one by one in PostgreSQL, so a
literal means the same here as in the database and a regex is PostgreSQL's (ARE) syntax,
checked before it runs. Answers are bounded
three ways: a result cap (one more row is read to know whether the list is `complete`), a
statement timeout, and a cap on each line's length (a long line is shown as a window around
the match unless `whole_lines` asks for it up to MAX_LINE_CHARS).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from indexer.db import BlockMatch, Database, LineMatch, Schema, like_escape, lookup, spelled
from indexer.errors import InvalidArgument
from indexer.project import Project
from indexer.search.filters import Filters
from indexer.search.needles import leading_options, needles

DEFAULT_MAX_RESULTS = 100
MAX_RESULTS = 1000
MAX_PATTERN_CHARS = 500
GREP_TIMEOUT_MS = 10_000
MAX_LINE_CHARS = 2000  # read from the database per line
SHOWN_LINE_CHARS = 300  # shown per line: a window around the match in longer lines
# What may stand next to an identifier without being part of it (`$` is part of one in JS/PHP).
_WORD = "[:alnum:]_$"
_ARE_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


@dataclass(frozen=True)
class LineMatches:
    matches: list[LineMatch]
    complete: bool

    def to_dict(self, key: str = "matches") -> dict[str, Any]:
        return {key: [asdict(m) for m in self.matches], "complete": self.complete}


def _check_limit(max_results: int) -> None:
    if (
        isinstance(max_results, bool)
        or not isinstance(max_results, int)
        or not 1 <= max_results <= MAX_RESULTS
    ):
        raise InvalidArgument(f"max_results must be an integer from 1 to {MAX_RESULTS}")


def _shown(text: str, needle: str | None, case_sensitive: bool) -> str:
    """The line, or a window of it around `needle` when it is long."""
    if len(text) <= SHOWN_LINE_CHARS:
        return text
    at = -1
    if needle:
        at = text.find(needle) if case_sensitive else text.lower().find(needle.lower())
    start = max(0, min(at - SHOWN_LINE_CHARS // 3, len(text) - SHOWN_LINE_CHARS)) if at > 0 else 0
    window = text[start : start + SHOWN_LINE_CHARS]
    return ("…" if start else "") + window + ("…" if start + SHOWN_LINE_CHARS < len(text) else "")


def grep(
    db: Database,
    project: Project,
    pattern: str,
    *,
    regex: bool = False,
    case_sensitive: bool = True,
    repo: str | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    max_results: int = DEFAULT_MAX_RESULTS,
    whole_lines: bool = False,
) -> LineMatches:
    """Every line of the indexed files matching `pattern` (a literal unless `regex`), sorted
    by repo, path and line, at most `max_results`; `complete` is False when more match (the
    lines shown are then some of them, not necessarily the first in path order)."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidArgument("pattern is empty: give the text to find")
    if "\n" in pattern:
        raise InvalidArgument("pattern spans lines: grep matches one line at a time")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgument(
            f"pattern is {len(pattern)} characters: keep it under {MAX_PATTERN_CHARS}"
        )
    _check_limit(max_results)
    params: dict[str, Any] = {
        **Filters.checked(project, repo, language, path_glob).params(),
        "limit": max_results + 1,
        "max_line_chars": MAX_LINE_CHARS,
    }
    if regex:
        line_op = "regex" if case_sensitive else "iregex"
        params["line_pattern"] = pattern
        params["block_pattern"] = newline_sensitive(pattern)
        found = needles(pattern)
        alternatives = found.alternatives if found else ()
        for a, alternative in enumerate(alternatives):
            for n, needle in enumerate(alternative):
                params[f"needle_{a}_{n}"] = "%" + spelled(needle) + "%"
        ignore_case = not case_sensitive or (found is not None and found.ignore_case)
        block = BlockMatch(
            needles=tuple(len(a) for a in alternatives),
            needle_op="ilike" if ignore_case else "like",
            block_regex=line_op,
        )
    else:
        line_op = "like" if case_sensitive else "ilike"
        # Spelled, a literal holds no LIKE wildcard or escape: `%`, `_` and `\` are letters.
        params["needle_0_0"] = "%" + spelled(pattern) + "%"
        params["line_pattern"] = "%" + like_escape(pattern) + "%"
        block = BlockMatch(needles=(1,), needle_op=line_op)
    with db.reading(f"searching the text of {project.name}", timeout_ms=GREP_TIMEOUT_MS) as conn:
        if regex:
            lookup.check_regex(conn, pattern)
        rows = lookup.grep_lines(conn, Schema(project.name), line_op, params, block)
    literal = None if regex else pattern
    return _bounded(rows, max_results, None if whole_lines else (literal, case_sensitive))


def newline_sensitive(pattern: str) -> str:
    """`pattern` with the option that makes `^`, `$` and `.` stop at newlines, so over a
    block they mean a line's edges as they do over a line: added to the options the pattern
    starts with, where it has any (PostgreSQL takes them at the very start only)."""
    flags, rest = leading_options(pattern)
    return f"(?n{flags})" + rest


def _bounded(
    rows: list[LineMatch], max_results: int, window: tuple[str | None, bool] | None
) -> LineMatches:
    """The first `max_results` rows in path order, each line whole (`window` None) or as a
    window around (needle, case_sensitive) when long."""
    kept = sorted(rows[:max_results], key=lambda r: (r.repo, r.path, r.line))
    if window is not None:
        kept = [LineMatch(r.repo, r.path, r.line, _shown(r.text, *window)) for r in kept]
    return LineMatches(kept, complete=len(rows) <= max_results)


def word_regex(name: str) -> str:
    """A PostgreSQL regex for `name` as a whole word: not inside a longer identifier."""
    escaped = _ARE_SPECIAL.sub(r"\\\1", name)
    return f"(^|[^{_WORD}]){escaped}($|[^{_WORD}])"


def find_references(
    db: Database,
    project: Project,
    name: str,
    *,
    repo: str | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    max_results: int = DEFAULT_MAX_RESULTS,
    whole_lines: bool = False,
) -> LineMatches:
    """Every line where `name` occurs as a whole word, except the lines where a symbol of that
    name is defined, grouped by file (repo, path, line order). With owners (`Cart.add`), the
    last part is looked for. `complete` is False when the cap cut the list."""
    name = (name or "").strip()
    if not name:
        raise InvalidArgument("name is empty: give an identifier such as parse_config")
    if len(name) > MAX_PATTERN_CHARS or "\n" in name:
        raise InvalidArgument("name must be one identifier, not a passage of text")
    _check_limit(max_results)
    parts = [p for p in re.split(r"::|#|\.", name) if p]
    if len(parts) > 1 and not name.startswith("operator"):
        name = parts[-1]
    params: dict[str, Any] = {
        **Filters.checked(project, repo, language, path_glob).params(),
        "limit": max_results + 1,
        "max_line_chars": MAX_LINE_CHARS,
        "name": name,
    }
    with db.reading(f"finding references in {project.name}", timeout_ms=GREP_TIMEOUT_MS) as conn:
        # Blocks through the trigram index on the literal, lines by the whole-word regex.
        rows = lookup.grep_lines(
            conn,
            Schema(project.name),
            "regex",
            {
                **params,
                "needle_0_0": "%" + spelled(name) + "%",
                "line_pattern": word_regex(name),
            },
            BlockMatch(needles=(1,), needle_op="like"),
            exclude_definitions=True,
        )
    return _bounded(rows, max_results, None if whole_lines else (name, True))
