"""Code, paths and symbols as a page shows them: hidden characters made visible, code highlighted
by Pygments on the server.

Everything shown comes from indexed files, which are hostile input. Templates escape every value
(Jinja's autoescape); before that, `reveal` replaces the characters a reader cannot see or that
reorder what is seen (control characters, right-to-left overrides and isolates, zero-width
marks) with a visible `⟨U+202E⟩`, so a line never reads differently from what it holds.
`highlight` reveals first, then lets Pygments escape and colour: its HTML holds only its own
`<span class=…>` tags around escaped text.
"""

from __future__ import annotations

import functools
import re

from markupsafe import Markup
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
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


# One formatter for every call: making one builds its style tables (about a millisecond).
# Without wrapping, it closes every span at the end of its line, so lines can be numbered here.
_FORMATTER = HtmlFormatter(nowrap=True)


def highlight(code: str, *, path: str = "", language: str | None = None, first: int = 1) -> Markup:
    """`code` (lines from `first` on) as highlighted HTML with line numbers: safe to insert."""
    if len(code) > CACHED_CHARS:
        return _highlighted.__wrapped__(code, path, language, max(first, 1))
    return _highlighted(code, path, language, max(first, 1))


# Lexing is most of a search page's own time (about a millisecond a snippet on a busy small
# machine); the same snippets come back often, for the next query and the next person.
@functools.lru_cache(maxsize=2048)
def _highlighted(code: str, path: str, language: str | None, start: int) -> Markup:
    html = pygments_highlight(reveal(code), _lexer(language, path), _FORMATTER)
    lines = html.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    width = len(str(start + len(lines) - 1))
    numbered = "\n".join(
        f'<span class="linenos">{n:>{width}}</span>{line}'
        for n, line in enumerate(lines, start=start)
    )
    return Markup(numbered)  # Pygments escaped the text; the tags are its own and ours


@functools.lru_cache(maxsize=1)
def stylesheet() -> str:
    """The colours of highlighted code (served from the package, never fetched)."""
    return HtmlFormatter(style=STYLE).get_style_defs(f".{CSS_CLASS}")
