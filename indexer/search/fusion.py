"""How one query's candidate lists become its hits, as pure functions (no connection).

The vector and keyword lists are fused by their scores: a convex combination of each list's
normalised scores. Files that are not code (tests, docs, examples, vendored or generated
copies, stubs: `roles.py`) count for less unless the query asks for them. Code chunks holding
an identifier of the query verbatim then come above the rest, and chunks named exactly by the
query above everything. The windows of a definition too long for one chunk collapse into one
hit for the definition, from its signature, and overlapping hits of one file into the best. By
file (the default), a file is one hit at its best chunk, the first top_k files ordered by
their own fused score (each side's best chunk in the file), and the file's further chunks that
a search by chunk would have shown fold into it (`also`).
`Ranking` holds the knobs of both sides, tuned on the tuning splits of the evals in
`bench/eval/` (docs/evals.md).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from indexer.db import ChunkFile, DefinitionPiece, Ranked, StoredChunk

# Lifted chunks sit above the best fused score by 1/(LIFT_SPACING + 1 + their place), so they
# keep their order among themselves and never tie with each other.
LIFT_SPACING = 60
# How many fused candidates, in multiples of top_k, are read back and collapsed into hits:
# collapsing (pieces of one definition, overlaps) may drop some.
SHORTLIST = 3
# Files read back beyond top_k by file, for a file whose chunks a concurrent sweep removed.
SPARE_FILES = 2
# A search over several projects (`parts.py`) tells their chunks apart by the project's place
# among them in the bits above these: the first project's ids are its own.
PART_SHIFT = 40


def global_id(part: int, local: int) -> int:
    """The id of chunk (or file) `local` of the project at place `part` of a search."""
    return (part << PART_SHIFT) | local


def part_of(gid: int) -> int:
    """The place of the project that chunk (or file) `gid` of a search is in."""
    return gid >> PART_SHIFT


@dataclass(frozen=True)
class Ranking:
    """How the two rankers run and how their lists are fused; the defaults are the tuned ones.

    `*_depth` is how many candidates each ranker hands to fusion (at least 3 x top_k);
    `field_weights` are ts_rank's {D, C, B, A} (A: symbol, B: path, C: body); `match_rows` is the
    estimated number of rows the keyword match may cover (rarest terms first; at least one term
    always matches) and `max_ranked` a hard cap on rows ranked, for statistics that are stale.
    """

    # The vector side's share of a fused score; the keyword side has the rest.
    vector_share: float = 0.55
    # Cosine is normalised between the vector list's first and its candidate at this rank (the
    # list's last at the default depth): a deeper list, for a larger top_k, ranks its extra
    # candidates below 0 instead of moving every score, so asking for more hits never
    # reorders the first ones.
    vector_floor_rank: int = 30
    vector_depth: int = 30
    keyword_depth: int = 200
    field_weights: tuple[float, float, float, float] = (0.05, 0.2, 0.5, 1.0)
    # The keyword side alone ranks with a body (C) that counts for more: beside the vectors,
    # which read the body already, the names and paths carry the keyword side's share; alone,
    # a question's words in the code's text are most of what it has (docs/lab-log.md).
    field_weights_alone: tuple[float, float, float, float] = (0.05, 0.3, 0.5, 1.0)
    match_rows: int = 5000
    # When the rarest terms match rows of fewer files than a search asks for, match every term
    # (`keyword.keyword_candidates`): an answer as long as asked whenever the words allow.
    widen: bool = True
    max_ranked: int = 20_000
    # What the fused score of a chunk of a file that is not code is multiplied by, unless the
    # query asks for such files (1.0: they count as code). Measured on the file-level eval's
    # tuning split (docs/lab-log.md).
    demote: float = 0.3
    # With no vector side beside it (`alone`: keyword mode, a server with no model), the
    # keyword side also matches a query word's English inflections (`lexical.inflections`:
    # "views" meets `view`, "deleted" `delete`), a form other than the word counting
    # `inflection_weight` of the word itself. Beside the vectors, which meet a word's forms
    # already, it matches words only (docs/lab-log.md).
    inflections_alone: bool = True
    inflection_weight: float = 0.5
    # By file, each of the first top_k files moves this share of the way from its best chunk's
    # fused score to the file's own: the vector side's share of its best cosine plus the
    # keyword side's of its best keyword score (normalised as in fusion). A file whose header
    # the keyword side finds and whose main function the vectors find counts both. Files are
    # reordered among the first top_k, never brought into them (docs/lab-log.md).
    file_fusion: float = 0.5
    # A query at least this long is read as a report (a bug report, a traceback, a log:
    # `reading.py`): template noise left out, roles asked for by its title alone, data and
    # markup files demoted, the files it names looked up. 0: every query is read as it is.
    # Each step was measured on the long-question eval's tuning split (docs/lab-log.md).
    long_query_chars: int = 400
    # What a long query's rankers read: its text without the template's comments,
    # checklists, headings and links (True), or the query as it is.
    long_clean: bool = True
    # A long query asks for tests, docs or examples by its title alone (True), or by any
    # word of it.
    long_title_roles: bool = True
    # A long query demotes files that are data or markup, not code (yaml, json, markdown...).
    long_demote_data: bool = True
    # Whether code holding a long query's identifiers verbatim is lifted, as a short one's.
    long_verbatim: bool = False
    # How much of a long query's text the vector side embeds: its first this many characters
    # (the title and the report's opening, within one window of the model for 237 of the long
    # eval's 240 reports: one run of it, where the whole report takes two or three), 0: all.
    long_vector_chars: int = 600
    # The vector side's share of a long query's fused scores (a report's words and names say
    # more than its first 600 characters' meaning); 0: `vector_share`, as any query's.
    long_vector_share: float = 0.3
    # Added to the fused score of the chunk at each file a long query names (a frame, a
    # path), before demotion: the lift of being named. 0: names are not looked up.
    mention_weight: float = 0.5
    # What a long query's files earn beyond their best chunk (`evidence.py`): the file's summed
    # fused score over the best file's, times `long_file_sum`, and the share of its stem's
    # words the report's title names, times `long_title_path`. Chosen on the long-question
    # eval's tuning split, held on its test, unseen and fresh sets (docs/lab-log.md). 0: off.
    long_file_sum: float = 0.2
    long_title_path: float = 0.3
    # Whether this ranking runs the keyword side alone, with no vector side (`alone()`).
    keyword_alone: bool = False

    def alone(self) -> Ranking:
        """This ranking for the keyword side alone, with no vector side beside it."""
        return self if self.keyword_alone else replace(self, keyword_alone=True)

    @property
    def weights(self) -> tuple[float, float, float, float]:
        """ts_rank's field weights {D, C, B, A} for this ranking's keyword side."""
        return self.field_weights_alone if self.keyword_alone else self.field_weights

    @property
    def inflections(self) -> bool:
        """Whether the keyword side matches a query word's inflections."""
        return self.keyword_alone and self.inflections_alone

    def deep_enough(self, depth: int) -> Ranking:
        """This ranking with each ranker handing at least `depth` candidates to fusion."""
        if self.vector_depth >= depth and self.keyword_depth >= depth:
            return self
        return replace(
            self,
            vector_depth=max(self.vector_depth, depth),
            keyword_depth=max(self.keyword_depth, depth),
        )


DEFAULT_RANKING = Ranking()


@dataclass(frozen=True)
class Candidates:
    """Each ranker's list of chunk ids, best first, the chunks named exactly by the query, and
    the code chunks holding an identifier of the query verbatim."""

    vector: list[int] = field(default_factory=list)
    keyword: list[int] = field(default_factory=list)
    exact: list[int] = field(default_factory=list)
    verbatim: list[int] = field(default_factory=list)
    # Each ranker's scores, by position in its list: cosine similarity, keyword score.
    vector_scores: list[float] = field(default_factory=list)
    keyword_scores: list[float] = field(default_factory=list)
    # The file of each chunk of the ranked lists (both rankers read it with the chunk).
    files: dict[int, ChunkFile] = field(default_factory=dict)
    # The chunks at the files a long query names, in the order it names them (`reading.py`).
    mentioned: list[int] = field(default_factory=list)


def scored(ranked: Sequence[Ranked]) -> tuple[list[int], list[float]]:
    """A ranker's list as its ids and its scores."""
    return [r.chunk_id for r in ranked], [r.score for r in ranked]


def files_of(ranked: Sequence[Ranked]) -> dict[int, ChunkFile]:
    """A ranker's list as the file of each of its chunks."""
    return {r.chunk_id: ChunkFile(r.chunk_id, r.file_id, r.path) for r in ranked}


def fuse(
    candidates: Candidates,
    ranking: Ranking = DEFAULT_RANKING,
    demoted: Collection[int] = (),
    file_of: Mapping[int, Hashable] | None = None,
    top_k: int = 0,
) -> dict[int, float]:
    """The two lists (each cut at its depth) fused by score, the chunks `demoted` (of files
    that are not code, for this query) multiplied by `ranking.demote`; with `file_of` (each
    chunk's file), the best chunks of the first `top_k` files moved towards their files' own
    fused scores (`Ranking.file_fusion`). Code chunks holding an identifier of the query
    verbatim (and not demoted) come above the rest (in their fused order), and chunks named
    exactly by the query above everything, in their order."""
    scores = _score_fusion(candidates, ranking)
    for chunk_id in candidates.mentioned:
        scores[chunk_id] = scores.get(chunk_id, 0.0) + ranking.mention_weight
    if demoted:
        for chunk_id in demoted:
            if chunk_id in scores:
                scores[chunk_id] *= ranking.demote
        verbatim = [cid for cid in candidates.verbatim if cid not in demoted]
        candidates = replace(candidates, verbatim=verbatim)
    if file_of is not None and ranking.file_fusion and top_k > 0:
        firsts = dict(scores)
        lift_named(firsts, candidates)
        files = _first_files(firsts, file_of, top_k)
        _fuse_files(scores, candidates, ranking, file_of, files, demoted)
    lift_named(scores, candidates)
    return scores


def _first_files(
    scores: Mapping[int, float], file_of: Mapping[int, Hashable], count: int
) -> set[Hashable]:
    """The files of the first `count` files' best chunks in `scores`."""
    files: dict[Hashable, None] = {}
    for chunk_id in ordered(scores, scores):
        file_id = file_of.get(chunk_id)
        if file_id is not None:
            files.setdefault(file_id, None)
            if len(files) >= count:
                break
    return set(files)


def _fuse_files(
    scores: dict[int, float],
    candidates: Candidates,
    ranking: Ranking,
    file_of: Mapping[int, Hashable],
    files: set[Hashable],
    demoted: Collection[int],
) -> None:
    """Move the best chunk of each of `files` `ranking.file_fusion` of the way to its file's
    fused score: each side's best normalised score among the file's chunks, by its share (and
    demoted with the file). A file only gains: its fused score is at least its best chunk's."""
    sides: list[tuple[float, dict[Hashable, float]]] = []
    for share, ids, normalised in _normalised(candidates, ranking):
        best: dict[Hashable, float] = {}
        for chunk_id, value in zip(ids, normalised, strict=True):
            file_id = file_of.get(chunk_id)
            if file_id in files:
                best[file_id] = max(best.get(file_id, value), value)
        sides.append((share, best))
    heads: dict[Hashable, int] = {}
    for chunk_id in ordered(scores, scores):
        file_id = file_of.get(chunk_id)
        if file_id in files:
            heads.setdefault(file_id, chunk_id)
    named = {file_of.get(chunk_id) for chunk_id in candidates.mentioned}
    for file_id, head in heads.items():
        whole = sum(share * best.get(file_id, 0.0) for share, best in sides)
        if file_id in named:
            whole += ranking.mention_weight
        if head in demoted:
            whole *= ranking.demote
        scores[head] += ranking.file_fusion * (whole - scores[head])


def _score_fusion(candidates: Candidates, ranking: Ranking) -> dict[int, float]:
    """A convex combination of the two lists' normalised scores: a chunk the vector side puts
    far ahead of the rest stays ahead, where rank fusion would count it one rank ahead; a
    chunk absent from a list gets 0 there."""
    scores: dict[int, float] = {}
    for share, ids, normalised in _normalised(candidates, ranking):
        for chunk_id, value in zip(ids, normalised, strict=True):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + share * value
    return scores


def _normalised(
    candidates: Candidates, ranking: Ranking
) -> list[tuple[float, list[int], list[float]]]:
    """Each ranker's share and its list (cut at its depth) with normalised scores. Cosine is
    normalised by min-max over its list, up to `vector_floor_rank` (its spread differs from
    query to query), the keyword score by the list's best (its floor is 0)."""
    sides = []
    for ids, values, share, depth, floor in (
        (candidates.vector, candidates.vector_scores, ranking.vector_share,
         ranking.vector_depth, None),
        (candidates.keyword, candidates.keyword_scores, 1.0 - ranking.vector_share,
         ranking.keyword_depth, 0.0),
    ):  # fmt: skip
        ids, values = ids[:depth], values[:depth]
        if not ids:
            continue
        if len(values) != len(ids):
            raise ValueError("score fusion needs each ranker's scores beside its ids")
        top = max(values)
        low = min(values[: ranking.vector_floor_rank]) if floor is None else floor
        span = top - low
        sides.append((share, ids, [(v - low) / span if span > 0 else 1.0 for v in values]))
    return sides


def lift_named(scores: dict[int, float], candidates: Candidates) -> None:
    """Put the chunks holding an identifier of the query verbatim above the fused rest (in
    their fused order), and those named exactly by the query above everything."""
    if candidates.verbatim:
        top = max(scores.values(), default=0.0)
        fused = sorted(candidates.verbatim, key=lambda cid: (-scores.get(cid, 0.0), cid))
        for offset, chunk_id in enumerate(fused):
            scores[chunk_id] = top + 0.5 / (LIFT_SPACING + 1 + offset)
    if candidates.exact:
        top = max(scores.values(), default=0.0)
        for offset, chunk_id in enumerate(candidates.exact):
            scores[chunk_id] = top + 1.0 / (LIFT_SPACING + 1 + offset)


def shortlist(scores: Mapping[int, float], top_k: int) -> list[int]:
    """The best `SHORTLIST x top_k` fused candidates, best first (ties by id)."""
    return ordered(scores, scores)[: top_k * SHORTLIST]


def ordered(ids: Iterable[int], scores: Mapping[int, float]) -> list[int]:
    """`ids` by their scores, best first (ties by id)."""
    return sorted(ids, key=lambda cid: (-scores.get(cid, 0.0), cid))


def by_file(
    ranked: Sequence[int], files: Mapping[int, Hashable], top_k: int, shown: Collection[int] = ()
) -> list[list[int]]:
    """`ranked` (best first) as one group per file, in the order of each file's best chunk:
    the first `top_k` files (and SPARE_FILES more), each its best chunk then its further
    chunks that are in `shown` (the hits a search by chunk gives: `chunk_hits`), so that every
    range of that answer stays in this one, in a hit ranked no lower. `files` maps a chunk to
    its file; a chunk absent from it is skipped."""
    groups: dict[Hashable, list[int]] = {}
    for chunk_id in ranked:
        file_id = files.get(chunk_id)
        if file_id is None:
            continue
        group = groups.get(file_id)
        if group is None:
            if len(groups) == top_k + SPARE_FILES:
                break
            groups[file_id] = [chunk_id]
        elif chunk_id in shown:
            group.append(chunk_id)
    return list(groups.values())


def chunk_hits(
    ranked: Sequence[int],
    details: Mapping[int, StoredChunk],
    top_k: int,
    pieces: Mapping[int, DefinitionPiece] | None = None,
) -> list[Hit]:
    """The first `top_k` hits of `ranked` (best first), a chunk each."""
    return collapse([[chunk_id] for chunk_id in ranked], details, top_k, pieces)


@dataclass(frozen=True)
class Hit:
    """One hit: the chunk that locates it (`row`), the id of the chunk whose score ranks it,
    and, by file, the file's further matches, best first."""

    row: StoredChunk
    ranked_by: int
    also: list[StoredChunk] = field(default_factory=list)


def collapse(
    groups: Sequence[Sequence[int]],
    details: Mapping[int, StoredChunk],
    top_k: int,
    pieces: Mapping[int, DefinitionPiece] | None = None,
) -> list[Hit]:
    """The first `top_k` hits of `groups` (a chunk each, or a file each from `by_file`: its
    best chunk, then its further matches). A window of a split definition (in `pieces`)
    stands for the whole definition: the range is the chunk holding its signature, spanning
    the definition's lines. A range overlapping a better one of its file is left out; a
    chunk without its row (removed meanwhile) is skipped."""
    hits: list[Hit] = []
    shown: dict[tuple[int, str, str], list[StoredChunk]] = {}
    for group in groups:
        ranges: list[tuple[StoredChunk, int]] = []
        for chunk_id in group:
            row = _whole(chunk_id, details, pieces or {})
            if row is None:
                continue
            kept = shown.setdefault((part_of(chunk_id), row.repo, row.path), [])
            if not any(_overlaps(row, k) for k in kept):
                ranges.append((row, chunk_id))
                kept.append(row)
        if ranges:
            (row, ranked_by), *rest = ranges
            hits.append(Hit(row, ranked_by, [r for r, _ in rest]))
        if len(hits) == top_k:
            break
    return hits


def _whole(
    chunk_id: int, details: Mapping[int, StoredChunk], pieces: Mapping[int, DefinitionPiece]
) -> StoredChunk | None:
    """The chunk `chunk_id`, or for a window of a split definition the definition whole, from
    the chunk holding its signature."""
    row = details.get(chunk_id)
    piece = pieces.get(chunk_id)
    if row is None or piece is None:
        return row
    head = details.get(piece.head_id, row)
    # The head may hold glue before the definition (merged into it): cut that off.
    skip = max(0, piece.start_line - head.start_line)
    content = "\n".join(head.content.split("\n")[skip:])
    return replace(head, start_line=piece.start_line, end_line=piece.end_line, content=content)


def _overlaps(a: StoredChunk, b: StoredChunk) -> bool:
    return a.start_line <= b.end_line and b.start_line <= a.end_line
