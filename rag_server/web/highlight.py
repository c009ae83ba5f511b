"""Code, paths and symbols as a page shows them: hidden characters made visible, code highlighted
by Pygments on the server.

Everything shown comes from indexed files, which are hostile input. Templates escape every value
(Jinja's autoescape); before that, `reveal` replaces the characters a reader cannot see or that
reorder what is seen (control characters, right-to-left overrides and isolates, zero-width
marks) with a visible `⟨U+202E⟩`, so a line never reads differently from what it holds.
`highlight` reveals first, then lets Pygments' lexer name each token, escapes it and wraps it
in a `<span class=…>` of Pygments' own names: no other tag is ever made. A token the lexer
calls an error (a character it did not expect, such as the "…" a cut snippet ends with) is
shown as plain text: it is the file's own text, and a search page is no linter.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from markupsafe import Markup
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES, Error, _TokenType
from pygments.util import ClassNotFound

# C0 and C1 controls but tab and newline; DEL; the bidirectional embeddings, overrides,
# isolates and marks (Trojan Source); zero-width characters; the BOM; line and paragraph
# separators, which some renderers break lines at.
HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
CSS_CLASS = "hl"
STYLE = "friendly"
CACHED_CHARS = 4000  # snippets and short definitions are kept highlighted; whole files never
# Languages whose index name is not a Pygments alias.
ALIASES = {"shell": "bash", "tsx": "tsx", "c_sharp": "csharp", "markdown": "markdown"}


def reveal(text: object) -> str:
    """`text` with every hidden or reordering character spelled out as ⟨U+XXXX⟩."""
    return HIDDEN.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", "" if text is None else str(text))


@functools.lru_cache(maxsize=256)
def _lexer(language: str | None, path: str) -> Lexer:
    if language:
        try:
            return get_lexer_by_name(ALIASES.get(language, language), stripnl=False)
        except ClassNotFound:
            pass
    try:
        return get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False)


def highlight(code: str, *, path: str = "", language: str | None = None, first: int = 1) -> Markup:
    """`code` (lines from `first` on) as highlighted HTML with line numbers: safe to insert."""
    if len(code) > CACHED_CHARS:
        return _highlighted.__wrapped__(code, path, language, max(first, 1))
    return _highlighted(code, path, language, max(first, 1))


# Lexing is most of a search page's own time (about a millisecond a snippet on a busy small
# machine); the same snippets come back often, for the next query and the next person.
@functools.lru_cache(maxsize=2048)
def _highlighted(code: str, path: str, language: str | None, start: int) -> Markup:
    lines = _html_lines(_lexer(language, path).get_tokens(reveal(code)))
    width = len(str(start + len(lines) - 1))
    numbered = "\n".join(
        f'<span class="linenos">{n:>{width}}</span>{line}'
        for n, line in enumerate(lines, start=start)
    )
    return Markup(numbered)  # every piece of text escaped; the tags are ours


def forget_highlights() -> None:
    """Drop every snippet kept highlighted (a benchmark's cold start)."""
    _highlighted.cache_clear()


_ESCAPE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


@functools.lru_cache(maxsize=512)
def _css_class(ttype: _TokenType) -> str:
    """The class Pygments' HTML formatter gives a token type (its style sheet's names); none
    for an error token, which is shown as plain text."""
    if ttype in Error:
        return ""
    name = STANDARD_TYPES.get(ttype)
    suffix = ""
    while name is None:
        suffix = ttype[-1] + suffix
        ttype = ttype.parent
        name = STANDARD_TYPES.get(ttype)
    return name + suffix


def _html_lines(tokens: Iterable[tuple[_TokenType, str]]) -> list[str]:
    """Escaped, classed HTML per line: a token across lines is cut at each line's end, so
    every line closes its own spans, and neighbours of one class share a span (as Pygments'
    formatter does, at a fraction of its cost)."""
    lines: list[str] = []
    pieces: list[list[str]] = []  # [class, text] of the line so far

    def end_line() -> None:
        lines.append(
            "".join(f'<span class="{css}">{text}</span>' if css else text for css, text in pieces)
        )
        pieces.clear()

    for ttype, value in tokens:
        css = _css_class(ttype)
        for k, part in enumerate(value.translate(_ESCAPE).split("\n")):
            if k:
                end_line()
            if not part:
                continue
            if pieces and pieces[-1][0] == css:
                pieces[-1][1] += part
            else:
                pieces.append([css, part])
    if pieces:
        end_line()
    return lines


@functools.lru_cache(maxsize=1)
def stylesheet() -> str:
    """The colours of highlighted code (served from the package, never fetched)."""
    return HtmlFormatter(style=STYLE).get_style_defs(f".{CSS_CLASS}")
