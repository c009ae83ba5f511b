"""How search reads a query before its lists are gathered.

A short query is read as it is. A long one (at least `Ranking.long_query_chars`: a bug report,
a failing test's output, a log excerpt) is read as an engineer reads it:

- What an issue template wraps around the report says nothing about the code: its hidden
  instructions (`<!-- ... -->`), its checklists (`- [x] I searched the issues`), its section
  headings ("### Describe the bug", "#### What version are you using?") and its links are
  left out of what the rankers read (`text`); the report's own words, code and output stay.
- The files it names, in a stack frame (`File "app/models.py", line 12`, `at Foo.bar
  (Foo.java:40)`, `lib/x/server.rb:84:in ...`, `src/main.rs:7:5`), a path in its text or a
  link to a file of the repository (`.../blob/<ref>/src/x.go#L42`), are `mentions`: search
  looks each up among the index's files by the longest tail of its path and lifts the chunk
  holding the named line (`candidates.mentioned_chunks`).
- The identifiers it holds are not lifted above the rest as a short query's are
  (`parts.verbatim_code`): a report names many in passing, and the rankers weigh them.
- Only its first line, the title, asks for tests, docs or examples by name (`roles.asked`):
  a report's body names tests and docs in passing (a traceback through a test file, a link to
  the documentation) without asking for them; and files that are data or markup rather than
  code count for less (`roles.PathRoles.demoted`), since a report is about the code.
- The vector side embeds the report's first `Ranking.long_vector_chars` characters (600: its
  title and opening, one run of the model where the whole report takes two or three), and
  weighs `Ranking.long_vector_share` of the fused scores (0.3, where a short query's is 0.55).
- A report is answered by files: each file earns what its other chunks score and what its
  name shares with the title (`evidence.py`).

Pure functions: no connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from indexer.search.fusion import Ranking
from indexer.search.roles import is_data

# At most this many files named by a query are looked up: the first ones (a traceback's
# first frames, the paths of its opening lines).
MAX_MENTIONS = 12

_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_CHECKBOX = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]+\[[ xX]?\].*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.MULTILINE)
_URL = re.compile(r"\bhttps?://[^\s)\]>'\"`]+")
# A link to a file of a repository: github/gitlab `blob` (or `tree`) URLs, with a line anchor.
_BLOB = re.compile(r"/(?:-/)?blob/[^/\s]+/([^\s#?)\]>'\"`]+)(?:#L(\d+))?")
# A Python frame: File "path", line N.
_PY_FRAME = re.compile(r"""File "([^"\n]+)", line (\d+)""")
# A path or a file name with an extension, maybe followed by :line (and :column).
_PATH = re.compile(r"(?<![\w@.$/-])(/?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[A-Za-z]\w{0,9})(?::(\d+))?")


@dataclass(frozen=True)
class Mention:
    """A file a query names: the path as written (a tail of the indexed path, or a longer
    path ending in one) and the line it points at, if any."""

    path: str
    line: int | None = None

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in self.path.replace("\\", "/").split("/") if p.strip(".~"))


@dataclass(frozen=True)
class Reading:
    """A query as search reads it: `text` for the rankers, `asking` for what it asks for by
    name (`roles.asked`), the files it names, and whether files of data and markup count for
    less."""

    text: str
    asking: str
    mentions: tuple[Mention, ...] = ()
    demote_data: bool = False
    # Whether code holding an identifier of the query verbatim is lifted (`parts.verbatim_code`).
    verbatim: bool = True
    # What the vector side embeds (`candidates.vector_query` reads it further); None: `text`.
    vector_text: str | None = None
    long: bool = False  # read as a report

    @property
    def embedded(self) -> str:
        return self.text if self.vector_text is None else self.vector_text


def read_query(query: str, ranking: Ranking) -> Reading:
    """`query` read for search: as it is when shorter than `ranking.long_query_chars` (or
    that is 0), else as a report (the module's docstring; each step as `ranking` says)."""
    if not ranking.long_query_chars or len(query) < ranking.long_query_chars:
        return Reading(query, query)
    report = without_template(query)
    text = report_text(report) if ranking.long_clean else query
    return Reading(
        text,
        title(query) if ranking.long_title_roles else query,
        mentions(report) if ranking.mention_weight > 0 else (),
        ranking.long_demote_data,
        ranking.long_verbatim,
        text[: ranking.long_vector_chars] if ranking.long_vector_chars else None,
        long=True,
    )


def title(query: str) -> str:
    """A report's first non-empty line."""
    return next((line.strip() for line in query.splitlines() if line.strip()), "")


def without_template(query: str) -> str:
    """A report without what its template wraps around it: hidden comments, checklists and
    section headings (the title is kept, even as a heading)."""
    first = title(query)
    text = _COMMENT.sub(" ", query)
    text = _CHECKBOX.sub(" ", text)
    text = _HEADING.sub(" ", text)
    first = first.lstrip("# \t")
    return text if not first or text.lstrip().startswith(first) else f"{first}\n{text}"


def report_text(report: str) -> str:
    """What the rankers read of a report (`without_template`'s): its words without links,
    blank lines and runs of spaces."""
    text = _URL.sub(" ", report)
    text = re.sub(r"[ \t]+", " ", text)
    return re.sub(r"\n\s*\n+", "\n", text).strip()


def mentions(query: str) -> tuple[Mention, ...]:
    """The source files `query` names, in the order it names them (each once, with the first
    line given for it): links to a repository's files, Python frames, and paths or file names
    whose extension is a language's (with `:line` when one follows), not files of data or
    markup (`roles.is_data`)."""
    found: list[tuple[int, Mention]] = []
    for url in _URL.finditer(query):
        blob = _BLOB.search(url.group(0))
        if blob:
            found.append((url.start(), Mention(blob.group(1), _line(blob.group(2)))))
    spans = [m.span() for m in _URL.finditer(query)]
    for frame in _PY_FRAME.finditer(query):
        found.append((frame.start(), Mention(frame.group(1), _line(frame.group(2)))))
    for match in _PATH.finditer(query):
        if any(a <= match.start() < b for a, b in spans):
            continue  # inside a link: taken above when it names a file
        found.append((match.start(), Mention(match.group(1), _line(match.group(2)))))
    out: dict[tuple[str, ...], Mention] = {}
    for _, mention in sorted(found, key=lambda f: f[0]):
        parts = mention.parts
        if not parts or is_data(parts[-1]) or parts in out:
            continue
        out[parts] = mention
        if len(out) >= MAX_MENTIONS:
            break
    return tuple(out.values())


def _line(text: str | None) -> int | None:
    return int(text) if text and 0 < int(text) < 10_000_000 else None


def best_tail(mention: Mention, paths: list[str]) -> list[str]:
    """Of indexed `paths` ending in `mention`'s file name, those sharing the longest tail of
    path components with it: all of a path written whole or from a folder down, or the file
    name alone when the mention is no more than that. An ambiguous short tail (more than three
    files share it) names none of them."""
    want = mention.parts
    if not want:
        return []
    best: list[str] = []
    best_len = 0
    for path in paths:
        have = tuple(path.split("/"))
        n = 0
        while n < min(len(want), len(have)) and want[-1 - n] == have[-1 - n]:
            n += 1
        if n == 0:
            continue
        # A tail of one component (the file name) counts only when the mention is the file
        # name alone or the indexed path is that one name.
        if n == 1 and len(want) > 1 and len(have) > 1:
            continue
        if n > best_len:
            best, best_len = [path], n
        elif n == best_len:
            best.append(path)
    return best if len(best) <= 3 else []
