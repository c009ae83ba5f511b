"""Identifier-aware terms for keyword search, the same on the index side and the query side.

Code names things `getUserById`, `get_user_by_id` or `get-user-by-id`; a person types "get user
by id". Each identifier yields its lowercased parts (split at camelCase humps, digits,
underscores and hyphens) and, when it has several parts, the whole identifier joined without
separators, so all four spellings meet on `get`, `user`, `by`, `id` and `getuserbyid`.

The query side drops English function words ("the", "of", "if") that carry no meaning in code
search. Neither side is stemmed; a query word's inflections (`inflections`: "views" for `view`)
are other terms the keyword side may look for beside it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

IDENTIFIER_RE = re.compile(r"[^\W_][\w-]*|_[\w-]+")  # hyphens kept: kebab-case is one name
# The same split for plain ASCII names, done by the regex engine (the common, fast case).
ASCII_HUMP_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
MAX_TERM_CHARS = 60  # longer "words" are data (hashes, base64), not names
MAX_QUERY_TERMS = 32
# Function words of English prose: they match most chunks and say nothing about which one.
_STOPWORD_TEXT = """a about above after again against all also am an and any are as at be because
    been
    before being below between both but by can could did do does doing down during each either
    etc few for from further given had has have having he her here hers how i ie if in into
    is it its itself just me more most my no nor not now of off on once only or other our out
    over own same she should so some such than that the their them then there these they this
    those through thus to too under until up upon very via was we were what when where whether
    which while who whom why will with would you your"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# A function word capitalised after none of these, inside a query, is a name (`named_words`).
_WORD_RE = re.compile(r"[A-Za-z]+")
_SENTENCE_ENDS = frozenset(".!?:;\n")


def _humps(piece: str) -> list[str]:
    """Split at lower->Upper, letter<->digit, and before the last capital of a capital run."""
    out: list[str] = []
    start = 0
    for i in range(1, len(piece)):
        prev, cur = piece[i - 1], piece[i]
        nxt = piece[i + 1] if i + 1 < len(piece) else ""
        if (
            (prev.islower() and cur.isupper())
            or (prev.isdigit() != cur.isdigit())
            or (prev.isupper() and cur.isupper() and nxt.islower())
        ):
            out.append(piece[start:i])
            start = i
    out.append(piece[start:])
    return [p.lower() for p in out if p]


def split_identifier(identifier: str) -> list[str]:
    """The lowercased parts of one identifier: `parseHTTPResponse2` -> parse, http, response, 2."""
    if identifier.isascii():
        return [m.lower() for m in ASCII_HUMP_RE.findall(identifier)]
    parts: list[str] = []
    for piece in re.split(r"[_\-]+", identifier):
        parts.extend(_humps(piece))
    return parts


@functools.lru_cache(maxsize=1 << 16)
def identifier_terms(identifier: str) -> tuple[str, ...]:
    """Parts of an identifier plus, for compound names, the whole name joined."""
    parts = split_identifier(identifier)
    if len(parts) > 1:
        parts.append("".join(parts))
    return tuple(p for p in parts if len(p) <= MAX_TERM_CHARS)


def terms(text: str) -> list[str]:
    """Every term of a text, in order, duplicates kept (frequency matters to ranking)."""
    out: list[str] = []
    for match in IDENTIFIER_RE.finditer(text):
        out.extend(identifier_terms(match.group(0)))
    return out


def terms_text(text: str) -> str:
    """Terms as one space-separated string, for `to_tsvector('simple', ...)`."""
    return " ".join(terms(text))


def path_terms_text(path: str) -> str:
    """Terms of a repo-relative path: its folders, the file's stem and its extension."""
    return terms_text(path.replace("/", " ").replace(".", " "))


def query_terms(query: str) -> list[str]:
    """Distinct terms of a query, in order of first appearance, capped; function words are
    dropped unless nothing else is left (a query of only "is it" still searches), or unless
    the query writes them as names (`named_words`)."""
    seen: dict[str, None] = {}
    for term in terms(query):
        seen.setdefault(term, None)
    named = named_words(query)
    words = [w for w in seen if w not in STOPWORDS or w in named] or list(seen)
    return words[:MAX_QUERY_TERMS]


def named_words(query: str) -> frozenset[str]:
    """The function words a query writes as names: capitalised inside a sentence ("one of
    two types, like an Either", "the Retry-After header", "NOT NULL"), lowercased. A sentence's
    first word, and single letters ("how do I"), are prose."""
    named = set()
    for match in _WORD_RE.finditer(query):
        word = match.group(0)
        if len(word) < 2 or not word[0].isupper() or word.lower() not in STOPWORDS:
            continue
        before = query[: match.start()].rstrip()
        if before and before[-1] not in _SENTENCE_ENDS:
            named.add(word.lower())
    return frozenset(named)


_VOWELS = frozenset("aeiou")
_SIBILANTS = ("s", "x", "z", "ch", "sh")


def _bases(word: str) -> set[str]:
    """The words `word` may be an inflection of (`views` -> view, `parsed` -> pars and parse,
    `stopped` -> stop), or `word` alone."""
    if word.endswith("ies") and len(word) > 4:
        return {word[:-3] + "y", word[:-1]}  # dependencies, cookies
    if word.endswith("ied") and len(word) > 4:
        return {word[:-3] + "y"}
    if word.endswith("es") and len(word) > 4:
        return {word[:-2], word[:-1]}  # classes, caches
    if word.endswith("s") and not word.endswith("ss"):
        return {word[:-1]}
    for suffix in ("ed", "ing"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3:
            bases = {base, base + "e"}
            if len(base) >= 4 and base[-1] == base[-2]:
                bases.add(base[:-1])  # stopped -> stop
            return bases
    return {word}


@functools.lru_cache(maxsize=1 << 14)
def inflections(word: str) -> tuple[str, ...]:
    """`word`, then the words it may be an inflection of, or, for a word that is not one, its
    plural or third person: a question's `views` meets a name's `view`, `deleted` meets
    `delete`, `parse` meets `parses`. Never a derived word (`parser` for `parse`); words of
    fewer than 4 letters, and words that are not all letters, stand alone."""
    if len(word) < 4 or not word.isalpha():
        return (word,)
    bases = _bases(word)
    if bases == {word}:
        plural = word + ("es" if word.endswith(_SIBILANTS) else "s")
        if word.endswith("y") and word[-2:-1] not in _VOWELS:
            plural = word[:-1] + "ies"
        return (word, plural)
    return (word, *sorted(b for b in bases if len(b) >= 3))


def _quote(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_term(word: str) -> str:
    """One term as `tsquery` input: the exact lexeme, quoted so that it parses."""
    return _quote(word)


def tsquery_any(words: Iterable[str]) -> str:
    """A `to_tsquery('simple', ...)` text that matches any of `words` (quoted, so it parses)."""
    return " | ".join(tsquery_term(w) for w in words)
