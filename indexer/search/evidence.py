"""What a report's files earn beyond their best chunk, as pure functions.

A report is answered by files, not by one definition: the file a fix changes often holds
several of the chunks a report's words meet, and is often named by its title's words (the
utility `cp` of "completion broken for `cp`" lives in `cp/src/cp.rs`). So, for a long query
only, after fusion each candidate file's best chunk gains:
- `Ranking.long_file_sum` x the file's summed fused score over the best file's sum;
- `Ranking.long_title_path` x the share of the file stem's words the report's title names
  (a stem's role words aside: `zip_spec.rb` is named `zip`).
A file that counts for less for this query (`Ranking.demote`: data, markup, tests not asked
for) earns less by as much.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Hashable, Mapping
from pathlib import PurePosixPath

from indexer import lexical
from indexer.search.fusion import Ranking

# Stems that say nothing about what a file holds (its folder does).
_NAMELESS_TEXT = "index init __init__ mod main lib core common util utils base impl types module"
NAMELESS = frozenset(_NAMELESS_TEXT.split())
# Words of a stem that say what role its file plays, not what it is about.
_ROLE_TEXT = "test tests spec specs testing mock mocks fixture fixtures bench"
ROLE_WORDS = frozenset(_ROLE_TEXT.split())


def title_words(title: str) -> frozenset[str]:
    """The title's words and the forms they may be inflections of."""
    words = [w for w in lexical.query_terms(title) if w.isalpha()]
    return frozenset(form for w in words for form in lexical.inflections(w))


@functools.lru_cache(maxsize=1 << 14)
def stem_words(path: str) -> tuple[str, ...]:
    """The words of a path's file stem (`src/http/RouterGroup.go`: router, group), its role
    words aside (`zip_spec.rb`: zip); none for a stem that says nothing of what its file
    holds (`mod.rs`, `index.ts`)."""
    stem = PurePosixPath(path).name.split(".", 1)[0]
    if stem.lower() in NAMELESS:
        return ()
    words = lexical.split_identifier(stem)
    return tuple(w for w in words if w.isalpha() and w not in ROLE_WORDS)


def _share(words: tuple[str, ...], named: frozenset[str]) -> float:
    if not words:
        return 0.0
    return sum(any(f in named for f in lexical.inflections(w)) for w in words) / len(words)


def add_report_evidence(
    scores: dict[int, float],
    file_of: Mapping[int, Hashable],
    paths: Mapping[int, str],
    title: str,
    ranking: Ranking,
    demoted: Collection[int] = (),
) -> None:
    """Add to each file's best chunk in `scores` what its other chunks and its name say
    (the module's docstring); `file_of` maps a chunk to its file, `paths` a chunk to its
    file's path, `title` is the report's first line; a file whose best chunk is `demoted`
    earns `ranking.demote` of its gain."""
    if not scores or not (ranking.long_file_sum or ranking.long_title_path):
        return
    heads: dict[Hashable, int] = {}
    sums: dict[Hashable, float] = {}
    for chunk_id in sorted(scores, key=lambda cid: (-scores[cid], cid)):
        file_id = file_of.get(chunk_id)
        if file_id is None:
            continue
        heads.setdefault(file_id, chunk_id)
        sums[file_id] = sums.get(file_id, 0.0) + max(scores[chunk_id], 0.0)
    most = max(sums.values(), default=0.0)
    named = title_words(title)
    for file_id, head in heads.items():
        gain = ranking.long_file_sum * sums[file_id] / most if most > 0 else 0.0
        path = paths.get(head)
        if path is not None and named:
            gain += ranking.long_title_path * _share(stem_words(path), named)
        scores[head] += gain * ranking.demote if head in demoted else gain
