"""What text a regex needs: the literal strings every line it matches must contain.

`grep` with a regex finds its blocks through the trigram index on their spelled text, like a
literal: first the blocks holding the regex's needles, then the regex over their lines. The
needles are read from PostgreSQL's regex syntax (ARE) by a small parser that only ever
weakens: whatever it does not follow (a bracket, a class escape, an optional part, a syntax
it does not know) simply requires nothing, so every line the regex matches holds every
needle of one of the alternatives. When no alternative has a needle long enough for a
trigram, the answer is `None` and the blocks are scanned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A needle makes a trigram only from three characters on.
MIN_NEEDLE = 3
MAX_ALTERNATIVES = 8
NEEDLES_PER_ALTERNATIVE = 3

# Alternatives, each a set of strings all required; [frozenset()] requires nothing.
Need = list[frozenset[str]]
NOTHING: Need = [frozenset()]

_BOUND = re.compile(r"\{(\d+)(,\d*)?\}")
_HEX = "0123456789abcdefABCDEF"
# Embedded options PostgreSQL allows at a regex's start that leave its syntax alone.
_PLAIN_FLAGS = set("cimnpstw")


@dataclass(frozen=True)
class Needles:
    """Alternatives of strings: a line the regex matches holds every string of at least one
    alternative. `ignore_case` when the regex's own options say so."""

    alternatives: tuple[tuple[str, ...], ...]
    ignore_case: bool = False


class _GiveUp(Exception):
    """A syntax the parser does not follow: nothing is required."""


def leading_options(pattern: str) -> tuple[str, str]:
    """(the embedded options `pattern` starts with, the pattern after them): PostgreSQL takes
    `***=` (the rest is a literal, given here as `q`), `***:` and `(?flags)` at the start only."""
    if pattern.startswith("***="):
        return "q", pattern[4:]
    if pattern.startswith("***:"):
        pattern = pattern[4:]
    options = re.match(r"\(\?([a-z]*)\)", pattern)
    return (options.group(1), pattern[options.end() :]) if options else ("", pattern)


def needles(pattern: str) -> Needles | None:
    """The needles of `pattern` (PostgreSQL ARE syntax, already known to compile), or None
    when some match need not hold any string of `MIN_NEEDLE` characters."""
    flags, pattern = leading_options(pattern)
    ignore_case = "i" in flags and "c" not in flags
    if "q" in flags:
        if set(flags) - {"q", "c", "i"}:
            return None
        return Needles(((pattern,),), ignore_case) if len(pattern) >= MIN_NEEDLE else None
    if not set(flags) <= _PLAIN_FLAGS:
        return None
    try:
        parser = _Parser(pattern)
        need = parser.alternation()
        if parser.at < len(pattern):
            return None  # an unbalanced `)`: PostgreSQL would have refused it
    except _GiveUp:
        return None
    chosen = []
    for alternative in need:
        long = sorted((s for s in alternative if len(s) >= MIN_NEEDLE), key=lambda s: (-len(s), s))
        if not long:
            return None
        chosen.append(tuple(long[:NEEDLES_PER_ALTERNATIVE]))
    return Needles(tuple(chosen), ignore_case)


def _both(a: Need, b: Need) -> Need:
    """Needs of `a` followed by `b`: an alternative of each, together."""
    joined = [x | y for x in a for y in b]
    return joined if len(joined) <= MAX_ALTERNATIVES else NOTHING


def _either(a: Need, b: Need) -> Need:
    if frozenset() in a or frozenset() in b:
        return NOTHING
    either = a + b
    return either if len(either) <= MAX_ALTERNATIVES else NOTHING


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.at = 0

    def peek(self) -> str:
        return self.p[self.at] if self.at < len(self.p) else ""

    def alternation(self) -> Need:
        need = self.sequence()
        while self.peek() == "|":
            self.at += 1
            need = _either(need, self.sequence())
        return need

    def sequence(self) -> Need:
        need = NOTHING
        run = ""  # the literal characters read since the last break

        def flush() -> None:
            nonlocal need, run
            if run:
                need = _both(need, [frozenset([run])])
            run = ""

        while self.at < len(self.p) and self.p[self.at] not in "|)":
            atom, char = self.atom()
            least, exact = self.quantifier()
            if char is not None and least >= 1:
                run += char
                if not exact:
                    flush()  # `ab+c` holds `ab`; what follows the repeats starts afresh
                continue
            flush()
            if atom is not None and least >= 1:
                need = _both(need, atom)
        flush()
        return need

    def atom(self) -> tuple[Need | None, str | None]:
        """(needs of a group, or a literal character); (None, None) for anything that
        requires nothing (brackets, classes, anchors, `.`)."""
        c = self.p[self.at]
        self.at += 1
        if c == "(":
            if self.p.startswith("?:", self.at):
                self.at += 2
            elif self.peek() == "?":
                self.at += 1  # a look-around: it holds nothing of the line for sure
                self.alternation()
                self.close()
                return None, None
            need = self.alternation()
            self.close()
            return need, None
        if c == "[":
            self.bracket()
            return None, None
        if c == "\\":
            return None, self.escape()
        if c in ".^$":
            return None, None
        if c in "*+?{":
            raise _GiveUp  # a quantifier with nothing before it
        return None, c

    def close(self) -> None:
        if self.peek() != ")":
            raise _GiveUp
        self.at += 1

    def escape(self) -> str | None:
        if self.at >= len(self.p):
            raise _GiveUp
        c = self.p[self.at]
        self.at += 1
        if not c.isalnum():
            return c  # an escaped special character stands for itself
        # A class, a constraint, a back reference or a character code: skip what belongs to it.
        if c in "xuU":
            while self.peek() and self.peek() in _HEX:
                self.at += 1
        elif c.isdigit():
            while self.peek().isdigit():
                self.at += 1
        elif c == "c":
            self.at += 1
        return None

    def bracket(self) -> None:
        if self.peek() == "^":
            self.at += 1
        if self.peek() == "]":
            self.at += 1
        while self.at < len(self.p):
            c = self.p[self.at]
            if c == "]":
                self.at += 1
                return
            if c == "[" and self.p[self.at + 1 : self.at + 2] in (":", ".", "="):
                end = self.p.find(self.p[self.at + 1] + "]", self.at + 2)
                if end < 0:
                    raise _GiveUp
                self.at = end + 2
            elif c == "\\":
                self.at += 2
            else:
                self.at += 1
        raise _GiveUp

    def quantifier(self) -> tuple[int, bool]:
        """(the least number of repeats, whether it is exactly one) of the quantifier after an
        atom, consumed."""
        c = self.peek()
        if c in ("*", "?"):
            least, exact = 0, False
            self.at += 1
        elif c == "+":
            least, exact = 1, False
            self.at += 1
        elif c == "{":
            bound = _BOUND.match(self.p, self.at)
            if not bound:
                raise _GiveUp
            least = int(bound.group(1))
            exact = least == 1 and not bound.group(2)
            self.at = bound.end()
        else:
            return 1, True
        if self.peek() == "?":
            self.at += 1  # non-greedy: the same repeats
        if self.peek() in ("*", "+", "?", "{"):
            raise _GiveUp
        return least, exact
