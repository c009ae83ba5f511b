"""File-level evidence: what a file's name and its further matches add to its best chunk.

The pure functions of `indexer/search/evidence.py` and their place in fusion: a file named
after the question's subject climbs over files that only use its words, a file several of
whose chunks match climbs over a satellite with one slightly better chunk, and a name-like
query puts the file whose stem it is above the fused rest.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from indexer.db import ChunkFile
from indexer.search.evidence import (
    QueryWords,
    add_file_evidence,
    names_file,
    path_match,
    path_words,
)
from indexer.search.fusion import DEFAULT_RANKING, Candidates, FileContext, fuse, ordered


def test_path_words_split_the_stem_and_the_last_folders() -> None:
    stem, folders, joined = path_words("src/http/routing/RouterGroup.go")
    assert stem == {"router", "group"}
    assert folders == {"http", "rout"}  # crude stems (routing -> rout); src/ says nothing
    assert joined == "routergroup"


def test_a_nameless_stem_leaves_the_folder_to_speak() -> None:
    stem, folders, _ = path_words("packages/router/index.ts")
    assert stem == frozenset()
    assert "router" in folders


def test_the_query_names_a_share_of_the_path() -> None:
    words = QueryWords.of("how are snapshots compared", name_like=False)
    assert path_match(words, "src/snapshot/compare.rs") == (1.0, 1.0)  # compar- meets compare
    assert path_match(words, "src/snapshot/mod.rs") == (0.0, 1.0)
    assert path_match(words, "lib/snapshot_compare.py")[0] == 1.0
    assert path_match(words, "lib/parser.py") == (0.0, 0.0)


def test_a_name_like_query_names_the_file_whose_stem_it_is() -> None:
    words = QueryWords.of("RouterGroup", name_like=True)
    assert names_file(words, "router_group.go")
    assert names_file(words, "src/RouterGroup.ts")
    assert not names_file(words, "src/router.go")
    assert not names_file(QueryWords.of("router group", name_like=False), "router_group.go")


def test_evidence_adds_up_per_file() -> None:
    # A satellite's one chunk (0.85) against a central file's three (0.8, 0.6, 0.6).
    scores = {1: 0.85, 2: 0.8, 3: 0.6, 4: 0.6}
    files = {1: "satellite", 2: "central", 3: "central", 4: "central"}
    words = QueryWords.of("x", name_like=False)
    add_file_evidence(scores, files, {}, words, evidence=0.2, path_lift=0.0, folder_lift=0.0)
    # The best file's sum (2.0) earns the whole 0.2 x the best score, the satellite 0.85/2.0.
    assert scores[2] == pytest.approx(0.8 + 0.2 * 0.85)
    assert scores[1] == pytest.approx(0.85 + 0.2 * 0.85 * 0.85 / 2.0)
    assert scores[2] > scores[1]
    assert (scores[3], scores[4]) == (0.6, 0.6)  # only the best chunk of a file gains


def test_evidence_is_bounded_by_its_share_of_the_best_score() -> None:
    n = 50
    scores = {i: 0.5 for i in range(n)} | {n: 1.0}
    files = dict.fromkeys(range(n), "long") | {n: "short"}
    add_file_evidence(
        scores, files, {}, QueryWords.of("x", False), evidence=0.2, path_lift=0, folder_lift=0
    )
    assert scores[0] == pytest.approx(0.5 + 0.2 * 1.0)  # however many chunks it has


def test_the_file_named_after_the_subject_climbs() -> None:
    candidates = Candidates(
        keyword=[10, 20],
        keyword_scores=[1.0, 0.8],  # the caller first, the router second
    )
    chunk_files = {10: ChunkFile(10, 1, "app/server.go"), 20: ChunkFile(20, 2, "router.go")}
    query = "how are routers created"
    plain = fuse(candidates, DEFAULT_RANKING)
    context = FileContext.of(chunk_files, query, name_like=False)
    lifted = fuse(candidates, replace(DEFAULT_RANKING, path_lift=0.5), context=context)
    assert ordered(plain, plain)[0] == 10
    assert ordered(lifted, lifted)[0] == 20


def test_a_name_like_query_puts_its_file_above_the_fused_rest() -> None:
    candidates = Candidates(keyword=[10, 20, 30], keyword_scores=[1.0, 0.9, 0.2])
    chunk_files = {
        10: ChunkFile(10, 1, "app/uses_it.rb"),
        20: ChunkFile(20, 2, "lib/other.rb"),
        30: ChunkFile(30, 3, "lib/tokenizer.rb"),
    }
    context = FileContext.of(chunk_files, "Tokenizer", name_like=True)
    ranking = replace(DEFAULT_RANKING, path_lift=0.1, name_files=True)
    scores = fuse(candidates, ranking, context=context)
    assert ordered(scores, scores)[0] == 30
    # Without the switch the name only lifts, it does not lead.
    scores = fuse(candidates, replace(ranking, name_files=False), context=context)
    assert ordered(scores, scores)[0] == 10


def test_exact_definitions_stay_above_named_files() -> None:
    candidates = Candidates(keyword=[10, 30], keyword_scores=[1.0, 0.5], exact=[10])
    chunk_files = {10: ChunkFile(10, 1, "a/defines.rb"), 30: ChunkFile(30, 3, "tokenizer.rb")}
    context = FileContext.of(chunk_files, "Tokenizer", name_like=True)
    ranking = replace(DEFAULT_RANKING, path_lift=0.1, name_files=True)
    scores = fuse(candidates, ranking, context=context)
    assert ordered(scores, scores)[:2] == [10, 30]


def test_a_name_like_query_can_lean_on_keywords() -> None:
    candidates = Candidates(
        vector=[1, 2], vector_scores=[0.9, 0.5], keyword=[2, 1], keyword_scores=[1.0, 0.1]
    )
    files = {1: ChunkFile(1, 1, "a.py"), 2: ChunkFile(2, 2, "b.py")}
    ranking = replace(DEFAULT_RANKING, vector_share=0.9, name_vector_share=0.1)
    as_name = fuse(candidates, ranking, context=FileContext.of(files, "parseDate", True))
    as_words = fuse(candidates, ranking, context=FileContext.of(files, "parse a date", False))
    assert ordered(as_name, as_name)[0] == 2
    assert ordered(as_words, as_words)[0] == 1
