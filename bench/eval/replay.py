"""Offline replay of fusion and result shaping over both evals' candidate lists.

Each query of both evals (docstring and developer questions, tuning and test splits) is asked
once of each ranker, 200 deep, through `indexer.search.candidates.gather_candidates` on the
indexes run.py built (run it first); the chunks named and the split definitions they belong
to are read once.
Every variant (rank fusion's weights and depths, each ranker's first candidate lifted to a
slot, how many fused candidates are shaped, collapse by line overlap or by definition; score
fusion's share is `score_fusion.py`'s) is then replayed in
memory exactly as `search_code` fuses and collapses, so a grid of hundreds of variants costs
seconds, not an eval run each. Variants are chosen on the tuning splits only; the test splits
are printed beside them to be read, not to choose.

    .venv/bin/python bench/eval/replay.py               # the tuned grid and the named variants
    .venv/bin/python bench/eval/replay.py --misses      # also the test questions each loses/wins
    .venv/bin/python bench/eval/replay.py --model DIR   # the indexes `run.py --model DIR` built
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import questions_eval  # noqa: E402
import sources  # noqa: E402
from compare import Gold, Scores, first_hit, product_vector, query_vectors  # noqa: E402
from corpus import build_corpus  # noqa: E402
from index import CACHE, REPO_LABEL, open_database, prepare_dirs  # noqa: E402
from index import project_for as docstring_project  # noqa: E402
from questions import ensure_valid  # noqa: E402

from indexer.db import rows  # noqa: E402
from indexer.embed import make_embedder  # noqa: E402
from indexer.search import candidates  # noqa: E402
from indexer.search.fusion import (  # noqa: E402
    DEFAULT_RANKING,
    Candidates,
    Ranking,
    collapse,
    fuse,
    shaping_rows,
)

TOP_K = 10
DEPTH = 200
T = TypeVar("T")


@dataclass
class Asked:
    """One eval split: its golds, each query's candidates, and the rows they name."""

    name: str
    golds: list[Gold]
    candidates: list[Candidates]
    details: dict[int, rows.StoredChunk]
    pieces: dict[int, rows.DefinitionPiece]


def gather(
    db: Any, project: str, golds: Sequence[Gold], vectors: dict[str, Any]
) -> tuple[list[Candidates], dict[int, rows.StoredChunk], dict[int, rows.DefinitionPiece]]:
    deep = Ranking(vector_depth=DEPTH, keyword_depth=DEPTH)
    filters = {"repo": None, "language": None, "path_re": None}
    out: list[Candidates] = []
    ids: set[int] = set()
    with db.connection() as conn:
        for gold in golds:
            with conn.transaction():
                c = candidates.gather_candidates(
                    conn, project, product_vector(vectors, gold.text), gold.text, filters, 400, deep
                )
            out.append(c)
            ids.update(c.vector, c.keyword, c.exact, c.verbatim)
        details, pieces = shaping_rows(conn, project, sorted(ids))
        conn.rollback()
    return out, details, pieces


def load(model: Any) -> list[Asked]:
    """Both evals' splits, gathered from the indexes run.py left in bench/.cache."""

    def asked(name: str, db: Any, project: str, golds: list[Gold], vectors: Any) -> Asked:
        return Asked(name, golds, *gather(db, project, golds, vectors))

    return each_split(model, asked)


def each_split(model: Any, collect: Callable[[str, Any, str, list[Gold], Any], T]) -> list[T]:
    """`collect(name, db, project, golds, query vectors)` for each split of both evals (the
    docstring eval's tune and test, then the questions'), on the indexes run.py built."""
    out: list[T] = []
    corpus, _ = prepare_dirs(CACHE)
    queries, _ = build_corpus(corpus)
    vectors = query_vectors(model, (q.text for q in queries), CACHE)
    db = open_database(CACHE)
    try:
        project = docstring_project(corpus, "chunker", None, model).name
        for split in ("tune", "test"):
            golds = [
                Gold(q.qid, q.text, "python", ((REPO_LABEL, q.path, q.start_line, q.end_line),))
                for q in queries
                if q.split == split
            ]
            out.append(collect(f"docstring {split}", db, project, golds, vectors))
    finally:
        db.close()
    questions = ensure_valid(cache=sources.CACHE)
    libs, _ = sources.ensure_corpus(sources.CACHE)
    root, _ = prepare_dirs(sources.CACHE)
    vectors = query_vectors(model, (q.text for q in questions), sources.CACHE)
    db = open_database(sources.CACHE)
    try:
        project = questions_eval.project_for(libs, root, "chunker", None, model).name
        for split in ("tune", "test"):
            golds = questions_eval.golds_of([q for q in questions if q.split == split])
            out.append(collect(f"questions {split}", db, project, golds, vectors))
    finally:
        db.close()
    return out


def replay(a: Asked, ranking: Ranking, by_definition: bool, mode: str = "hybrid") -> Scores:
    """Fusion, shortlist and collapse as search_code does them, over the gathered lists."""
    out = Scores()
    deep = replace(
        ranking,
        vector_depth=max(ranking.vector_depth, TOP_K * 3),
        keyword_depth=max(ranking.keyword_depth, TOP_K * 3),
    )
    for gold, c in zip(a.golds, a.candidates, strict=True):
        if mode != "hybrid":
            c = replace(c, **{"keyword" if mode == "vector" else "vector": []})
        scores = fuse(c, deep)
        ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))[: TOP_K * ranking.shortlist]
        hits = collapse(ordered, a.details, TOP_K, a.pieces if by_definition else None)
        out.add(first_hit([row for row, _ in hits], gold))
    return out


def cells(s: Scores) -> str:
    return f"{s.hit(1):.3f} / {s.hit(5):.3f} / {s.hit(10):.3f} / {s.mrr():.3f}"


GRID: dict[str, tuple[Any, ...]] = {
    "keyword_weight": (0.1, 0.2, 0.35, 0.5, 0.7),
    "keyword_depth": (30, 50, 200),
    "vector_depth": (30, 50),
    "keyword_slot": (0, 1, 3),
    "vector_slot": (0, 1, 3),
    "rrf_k": (20, 60),
}


def objective(scores: dict[str, Scores]) -> tuple[float, float]:
    """What the grid maximises: the two tuning splits' MRR@10, averaged (each eval counts the
    same however many queries it has); the Hit@10 average breaks ties."""
    tune = [s for name, s in scores.items() if name.endswith("tune")]
    return (
        sum(s.mrr() for s in tune) / len(tune),
        sum(s.hit(10) for s in tune) / len(tune),
    )


def table(asked: list[Asked], variants: list[tuple[str, Ranking, bool]]) -> None:
    names = [a.name for a in asked]
    print("| variant | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, ranking, by_def in variants:
        row = [cells(replay(a, ranking, by_def)) for a in asked]
        print(f"| {label} | " + " | ".join(row) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--misses", action="store_true", help="test questions lost or won")
    ap.add_argument("--keep", type=Path, help="keep the gathered lists in this file, and reuse")
    ap.add_argument(
        "--model", default=None, help="a local ONNX model folder (default: the bundled model)"
    )
    args = ap.parse_args(argv)
    if args.keep and args.keep.is_file():
        asked = pickle.loads(args.keep.read_bytes())
    else:
        asked = load(make_embedder("local", args.model))
        if args.keep:
            args.keep.write_bytes(pickle.dumps(asked))
    print(f"# replay: {', '.join(f'{a.name} {len(a.golds)}' for a in asked)} queries")
    print("(cells: Hit@1 / Hit@5 / Hit@10 / MRR@10)\n")
    base = DEFAULT_RANKING
    best: tuple[tuple[float, float], Ranking, bool] | None = None
    # Also the point whose smaller MRR@10 gain over today's fusion, of the two tuning splits,
    # is largest: one that gains on both.
    start = {a.name: replay(a, base, True).mrr() for a in asked if "tune" in a.name}
    both: tuple[float, Ranking] | None = None
    keys = list(GRID)
    for by_def in (False, True):
        # Collapse by line overlap is scored at today's fusion only: the grid is for the other.
        grid = itertools.product(*(GRID[k] for k in keys)) if by_def else [None]
        for values in grid:
            values_of = dict(zip(keys, values, strict=True)) if values else {}
            r = replace(base, fusion="rank", **values_of) if values else base
            tuned_scores = {a.name: replay(a, r, by_def) for a in asked if "tune" in a.name}
            score = objective(tuned_scores)
            if best is None or score > best[0]:
                best = (score, r, by_def)
            gain = min(s.mrr() - start[name] for name, s in tuned_scores.items())
            if by_def and (both is None or gain > both[0]):
                both = (gain, r)
    assert best is not None and both is not None
    tuned, tuned_def = best[1], best[2]
    tuned_fields = {k: getattr(tuned, k) for k in keys}
    print(f"tuned on the tuning splits (collapse by definition: {tuned_def}): {tuned_fields}")
    fields = {k: getattr(both[1], k) for k in keys}
    print(f"gaining most on both tuning splits (+{both[0]:.3f} MRR@10 at least): {fields}\n")
    issue = replace(base, fusion="rank", keyword_depth=30, keyword_weight=0.5, keyword_slot=1)
    variants = [
        ("product today (collapse by line overlap)", base, False),
        ("collapse by definition", base, True),
        ("by definition, shortlist 5 x top_k", replace(base, shortlist=5), True),
        ("by definition, keyword depth 30, weight 0.5, keyword #1 at rank 1", issue, True),
        ("tuned fusion, collapse by line overlap", tuned, False),
        ("tuned fusion, collapse by definition", tuned, True),
        ("fusion gaining on both tuning splits, collapse by definition", both[1], True),
    ]
    table(asked, variants)
    print("\nsingle rankers (collapse by definition):\n")
    for mode in ("keyword", "vector"):
        print(
            f"- {mode}: "
            + "; ".join(f"{a.name} {cells(replay(a, base, True, mode))}" for a in asked)
        )
    if args.misses:
        test = next(a for a in asked if a.name == "questions test")
        before, after = replay(test, base, False), replay(test, tuned, tuned_def)
        print("\n| id | before | after | query |\n|---|---:|---:|---|")
        for g, r0, r1 in zip(test.golds, before.ranks, after.ranks, strict=True):
            if r0 != r1:
                print(f"| {g.qid} | {r0 or '-'} | {r1 or '-'} | {g.text} |")


if __name__ == "__main__":
    main()
