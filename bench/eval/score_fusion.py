"""Fusion by score instead of by rank, replayed offline over both evals.

Reciprocal rank fusion keeps only each ranker's order: a chunk the vector side puts far ahead
of the rest (cosine 0.71 against 0.52) counts the same as one a hair ahead. This gathers each
query's lists with their scores (the vector side's cosine, the keyword side's weighted rank)
through `gather_candidates`, 200 deep, on the indexes `run.py` built, and replays a
convex combination of the two normalised scores (Bruch et al., "An Analysis of Fusion
Functions for Hybrid Retrieval", 2023) beside rank fusion, then the same lifts (verbatim
identifiers, exact names) and collapse as `search_code`. Chosen on the tuning splits only; the
test splits are printed to be read.

    .venv/bin/python bench/eval/score_fusion.py --keep bench/.cache/scored.pkl [--prefix]
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import replay  # noqa: E402
from compare import Gold, Scores, first_hit, product_vector  # noqa: E402

from indexer.embed import make_embedder  # noqa: E402
from indexer.search import candidates  # noqa: E402
from indexer.search.fusion import (  # noqa: E402
    DEFAULT_RANKING,
    Candidates,
    Ranking,
    collapse,
    fuse,
    lift_named,
    shaping_rows,
)

DEPTH = 200
TOP_K = 10
NO_FILTERS = {"repo": None, "language": None, "path_re": None}


@dataclass
class Scored:
    """One eval split: each query's lists with their scores, and the rows they name."""

    name: str
    golds: list[Gold]
    vector: list[list[tuple[int, float]]]  # (chunk id, cosine), best first
    keyword: list[list[tuple[int, float]]]  # (chunk id, keyword score), best first
    others: list[Candidates]  # exact and verbatim lists
    details: dict[int, Any]
    pieces: dict[int, Any]


def gather(
    db: Any, project: str, golds: Sequence[Gold], vectors: dict[str, Any], ranking: Ranking
) -> tuple:
    deep = replace(ranking, vector_depth=DEPTH, keyword_depth=DEPTH)
    vector_lists, keyword_lists, others = [], [], []
    ids: set[int] = set()
    with db.connection() as conn:
        for gold in golds:
            with conn.transaction():
                c = candidates.gather_candidates(
                    conn, project, product_vector(vectors, gold.text), gold.text, NO_FILTERS,
                    400, deep,
                )  # fmt: skip
            vector_lists.append(list(zip(c.vector, c.vector_scores, strict=True)))
            keyword_lists.append(list(zip(c.keyword, c.keyword_scores, strict=True)))
            others.append(c)
            ids.update(c.vector, c.keyword, c.exact, c.verbatim)
        details, pieces = shaping_rows(conn, project, sorted(ids))
        conn.rollback()
    return vector_lists, keyword_lists, others, details, pieces


def load(model: Any, ranking: Ranking = DEFAULT_RANKING) -> list[Scored]:
    """Both evals' splits with their lists' scores, the keyword side run as `ranking` says."""

    def scored(name: str, db: Any, project: str, golds: list[Gold], vectors: Any) -> Scored:
        return Scored(name, golds, *gather(db, project, golds, vectors, ranking))

    return replay.each_split(model, scored)


@dataclass(frozen=True)
class Convex:
    """score = alpha x vector' + (1 - alpha) x keyword', each normalised over its list: cosine
    by min-max ("minmax") or from its theoretical minimum -1 ("tmm"); the keyword score by
    min-max or by its maximum alone ("max", its minimum being 0)."""

    alpha: float
    vector_norm: str = "minmax"
    keyword_norm: str = "max"
    vector_depth: int = 30
    keyword_depth: int = 200

    def fuse(self, vector: list[tuple[int, float]], keyword: list[tuple[int, float]]) -> dict:
        scores: dict[int, float] = {}
        for items, weight, norm in (
            (vector[: self.vector_depth], self.alpha, self.vector_norm),
            (keyword[: self.keyword_depth], 1.0 - self.alpha, self.keyword_norm),
        ):
            if not items:
                continue
            values = [s for _, s in items]
            top = max(values)
            low = {"minmax": min(values), "tmm": -1.0, "max": 0.0}[norm]
            span = top - low or 1.0
            for cid, s in items:
                scores[cid] = scores.get(cid, 0.0) + weight * (s - low) / span
        return scores


def replay_convex(a: Scored, fusion: Convex | None, mode: str = "hybrid") -> Scores:
    out = Scores()
    base = DEFAULT_RANKING
    for gold, v, k, c in zip(a.golds, a.vector, a.keyword, a.others, strict=True):
        if fusion is None:  # rank fusion, the product's before this
            ids = Candidates([cid for cid, _ in v], [cid for cid, _ in k], c.exact, c.verbatim)
            scores = fuse(ids, replace(base, fusion="rank"))
        else:
            scores = fusion.fuse(v if mode != "keyword" else [], k if mode != "vector" else [])
            lift_named(scores, c, base)
        out.add(rank_of(scores, a.details, a.pieces, gold))
    return out


def rank_of(scores: dict[int, float], details: dict, pieces: dict, gold: Gold) -> int | None:
    """The rank of `gold`'s first hit among the hits `search_code` would shape from `scores`
    (its shortlist of fused candidates, collapsed to the first TOP_K)."""
    ordered = sorted(scores, key=lambda cid: (-scores[cid], cid))
    hits = collapse(ordered[: TOP_K * DEFAULT_RANKING.shortlist], details, TOP_K, pieces)
    return first_hit([row for row, _ in hits], gold)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="keep the gathered lists in this file, and reuse")
    ap.add_argument("--model", default=None, help="a local ONNX model folder")
    ap.add_argument(
        "--prefix", action="store_true", help="also the keyword side with prefix (stem) matching"
    )
    args = ap.parse_args(argv)
    if args.keep and args.keep.is_file():
        asked = pickle.loads(args.keep.read_bytes())
    else:
        asked = load(make_embedder("local", args.model))
        if args.keep:
            args.keep.write_bytes(pickle.dumps(asked))
    tune = [a for a in asked if a.name.endswith("tune")]
    start = {a.name: replay_convex(a, None).mrr() for a in tune}
    grid = [
        Convex(alpha, vn, kn, vd, kd)
        for alpha, vn, kn, vd, kd in itertools.product(
            [round(0.5 + 0.05 * i, 2) for i in range(10)],
            ("minmax", "tmm"),
            ("max", "minmax"),
            (30, 50),
            (30, 200),
        )
    ]
    best_mean: tuple[float, Convex] | None = None
    best_both: tuple[float, Convex] | None = None
    for g in grid:
        scores = {a.name: replay_convex(a, g) for a in tune}
        mean = sum(s.mrr() for s in scores.values()) / len(scores)
        gain = min(s.mrr() - start[name] for name, s in scores.items())
        if best_mean is None or mean > best_mean[0]:
            best_mean = (mean, g)
        if best_both is None or gain > best_both[0]:
            best_both = (gain, g)
    assert best_mean is not None and best_both is not None
    print(f"# score fusion: {', '.join(f'{a.name} {len(a.golds)}' for a in asked)} queries")
    print(f"best mean tuning MRR@10: {best_mean[1]}")
    print(f"gaining most on both tuning splits (+{best_both[0]:.3f} at least): {best_both[1]}\n")
    print("| variant | " + " | ".join(a.name for a in asked) + " |")
    print("|---|" + "---:|" * len(asked))
    variants: list[tuple[str, Convex | None]] = [
        ("rank fusion (the product before)", None),
        ("the product's fusion", Convex(DEFAULT_RANKING.vector_share)),
        ("convex, best mean tuning MRR@10", best_mean[1]),
        ("convex, gaining on both tuning splits", best_both[1]),
    ]
    for alpha in (0.6, 0.7, 0.8, 0.9):
        other = replace(best_both[1], alpha=alpha)
        variants.append((f"convex alpha {alpha}, like the one gaining on both", other))
    for label, fusion in variants:
        cells = " | ".join(replay.cells(replay_convex(a, fusion)) for a in asked)
        print(f"| {label} | {cells} |")
    if args.prefix:  # the keyword lists gathered again, the product's fusion
        stemmed = load(make_embedder("local", args.model), replace(DEFAULT_RANKING, prefix=True))
        product = Convex(DEFAULT_RANKING.vector_share)
        cells = " | ".join(replay.cells(replay_convex(a, product)) for a in stemmed)
        print(f"| the product's fusion, keyword side with prefix matching | {cells} |")


if __name__ == "__main__":
    main()
