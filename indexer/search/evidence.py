"""What a file's name and its other matches add to its best chunk, as pure functions.

A question about how routers are made wants `router.go`, not the files that call into it; a
library's central module has many matching chunks where a satellite has one. So, after fusion,
each file's best chunk gains (in units of the fused list's best score):
- `path_lift` x the share of the file stem's words the query names (`snapshot_compare.py`
  for "how are snapshots compared": both words), and `folder_lift` x the share of the words of
  its last folders the query names, each word matched by its crude stem;
- `evidence` x the file's summed fused score over the best file's (so at most `evidence`):
  evidence adds up per file.
A file whose stem is the query's name (a name-like query `Router` and `router.rs`) counts as
named: it comes above the fused rest, with the definitions the query names.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from indexer import lexical

# The folders above a file whose names count as its path words (nearest first).
PATH_FOLDERS = 3
# Names that say nothing about what a file holds: the stem `index` of `router/index.ts` is
# not a word of the question; its folder is.
_NAMELESS_TEXT = "index init __init__ mod main lib core common util utils base impl types module"
NAMELESS_STEMS = frozenset(_NAMELESS_TEXT.split())
# Folders that hold a project's code whatever it does (`src/`, `lib/`, `internal/`).
_LAYOUT_TEXT = """src source sources lib libs pkg internal include inc app apps packages modules
    main java kotlin scala python ruby go rust php js ts com org net"""
LAYOUT_FOLDERS = frozenset(_LAYOUT_TEXT.split())
# A path word and a query word meet when one's crude stem begins the other's, both at least
# this long (`compar`/`compare`, `rout`/`router`), or when they are the same word.
MIN_PREFIX = 4
# Suffixes the crude English stemmer strips (longest first), keeping at least MIN_PREFIX letters.
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s")


def crude_stem(word: str) -> str:
    """A crude English stem: `parsed` -> `pars`, `routers` -> `router`; names stay whole."""
    if not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_PREFIX:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class QueryWords:
    """A query's content words by their crude stems, and, for a name-like query, the name."""

    stems: frozenset[str]
    name: str | None  # the query's identifier joined and lowercased (`getUser` -> getuser)

    @staticmethod
    def of(query: str, name_like: bool) -> QueryWords:
        words = lexical.query_terms(query)
        stems = frozenset(crude_stem(w) for w in words if w.isalpha() and len(w) > 1)
        name = None
        if name_like:
            last = query.replace("::", ".").replace("#", ".").split(".")[-1].rstrip("?!")
            name = "".join(lexical.split_identifier(last)) or None
        return QueryWords(stems, name)


@functools.lru_cache(maxsize=1 << 14)
def path_words(path: str) -> tuple[frozenset[str], frozenset[str], str]:
    """The crude stems of a path's file-stem words and of its last folders' words, and its
    stem joined lowercased (`src/http/RouterGroup.go` -> {router, group}, {src, http},
    routergroup)."""
    pure = PurePosixPath(path)
    stem = pure.name.split(".", 1)[0]
    stem_parts = lexical.split_identifier(stem) if stem.lower() not in NAMELESS_STEMS else []
    folders = [f for f in pure.parts[:-1] if f.lower() not in LAYOUT_FOLDERS][-PATH_FOLDERS:]
    folder_parts = [w for f in folders for w in lexical.split_identifier(f)]

    def stems(parts: list[str]) -> frozenset[str]:
        return frozenset(crude_stem(w) for w in parts if w.isalpha() and len(w) > 1)

    return stems(stem_parts), stems(folder_parts), "".join(stem_parts)


def _meets(word: str, stems: frozenset[str]) -> bool:
    if word in stems:
        return True
    if len(word) < MIN_PREFIX:
        return False
    return any(len(q) >= MIN_PREFIX and (word.startswith(q) or q.startswith(word)) for q in stems)


def _share(words: frozenset[str], stems: frozenset[str]) -> float:
    return sum(_meets(w, stems) for w in words) / len(words) if words else 0.0


def path_match(words: QueryWords, path: str) -> tuple[float, float]:
    """The share of the file stem's words and of its folders' words that the query names."""
    if not words.stems:
        return 0.0, 0.0
    stem, folders, _ = path_words(path)
    return _share(stem, words.stems), _share(folders, words.stems)


def query_share(words: QueryWords, path: str) -> float:
    """The share of the query's words that the file's stem or its folder name holds."""
    if not words.stems:
        return 0.0
    stem, _, _ = path_words(path)
    parent = PurePosixPath(path).parent.name
    near = stem | frozenset(
        crude_stem(w) for w in lexical.split_identifier(parent) if w.isalpha() and len(w) > 1
    )
    return sum(_meets(q, near) for q in words.stems) / len(words.stems)


def names_file(words: QueryWords, path: str) -> bool:
    """Whether a name-like query is the file's stem (`Router`, `router.go`)."""
    return words.name is not None and path_words(path)[2] == words.name


def add_file_evidence(
    scores: dict[int, float],
    files: Mapping[int, Hashable],
    paths: Mapping[int, str],
    words: QueryWords,
    *,
    evidence: float,
    path_lift: float,
    folder_lift: float,
    query_path_lift: float = 0.0,
) -> list[int]:
    """Add to each file's best chunk in `scores` (fused, before the named lifts) what its
    path and its further matches say; `files` maps a chunk to its file, `paths` a file's
    chunk to its path. Returns the best chunks of the files the query names by their stem,
    best first."""
    if not scores:
        return []
    top = max(scores.values())
    by_file: dict[Hashable, list[int]] = {}
    for chunk_id in sorted(scores, key=lambda cid: (-scores[cid], cid)):
        file_id = files.get(chunk_id)
        if file_id is not None:
            by_file.setdefault(file_id, []).append(chunk_id)
    sums = {f: sum(scores[c] for c in chunks) for f, chunks in by_file.items()}
    most = max(sums.values(), default=0.0)
    named: list[int] = []
    for file_id, chunks in by_file.items():
        best = chunks[0]
        gain = evidence * top * sums[file_id] / most if most > 0 else 0.0
        path = paths.get(best)
        if path is not None:
            stem_share, folder_share = path_match(words, path)
            gain += top * (path_lift * stem_share + folder_lift * folder_share)
            if query_path_lift:
                gain += top * query_path_lift * query_share(words, path)
            if names_file(words, path):
                named.append(best)
        scores[best] += gain
    named.sort(key=lambda cid: (-scores[cid], cid))
    return named
