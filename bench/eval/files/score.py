"""Scoring of the file-level eval: pure functions over the files of the hits, in hit order.

A question's targets are files (primary and secondary, each gain 1). Over the first K (10) hits
as returned, a target file counts once, at its first hit: NDCG@K divides that DCG
(sum of 1/log2(1 + position)) by the ideal one over min(K, number of targets) positions. Hit@k
and reciprocal rank are of the first hit in a target file (reciprocal rank 0 past K). "Files per
K hits" is the number of distinct files among the first K hits (fewer when one file fills
several). Run alone, it checks itself on known cases:

    .venv/bin/python -m bench.eval.files.score
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

K = 10


def hit_path(hit: Any) -> str:
    """The file of a hit: a path string, a dict with `path`, or an object with `.path`."""
    if isinstance(hit, str):
        return hit
    if isinstance(hit, Mapping):
        return str(hit["path"])
    return str(hit.path)


def rank_files(hits: Iterable[Any]) -> list[str]:
    """The distinct files of `hits`, in the order of their first hit."""
    return list(dict.fromkeys(hit_path(h) for h in hits))


def dcg(paths: Sequence[str], targets: Iterable[str], k: int = K) -> float:
    wanted = set(targets)
    seen: set[str] = set()
    total = 0.0
    for position, path in enumerate(paths[:k], 1):
        if path in wanted and path not in seen:
            total += 1.0 / math.log2(position + 1)
        seen.add(path)
    return total


def ndcg(paths: Sequence[str], targets: Iterable[str], k: int = K) -> float:
    """NDCG@k of the hits' files `paths` (one per hit, repeats allowed) for `targets`."""
    wanted = set(targets)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(wanted)) + 1))
    return dcg(paths, wanted, k) / ideal if ideal else 0.0


def first_target(paths: Sequence[str], targets: Iterable[str], k: int = K) -> int | None:
    """The position (1-based) of the first of the first k hits in a target file."""
    wanted = set(targets)
    return next((i for i, p in enumerate(paths[:k], 1) if p in wanted), None)


def distinct_files(paths: Sequence[str], k: int = K) -> int:
    return len(set(paths[:k]))


@dataclass(frozen=True)
class QueryScore:
    """One question's scores for one system."""

    ndcg: float
    first: int | None  # position of the first hit in a target file, None if not in the top K
    files: int  # distinct files among the first K hits
    hits: int  # hits returned (up to K)

    def hit_at(self, k: int) -> bool:
        return self.first is not None and self.first <= k

    @property
    def rr(self) -> float:
        return 1.0 / self.first if self.first is not None else 0.0


def score(paths: Sequence[str], targets: Iterable[str], k: int = K) -> QueryScore:
    wanted = set(targets)
    return QueryScore(
        ndcg(paths, wanted, k), first_target(paths, wanted, k), distinct_files(paths, k),
        min(len(paths), k),
    )  # fmt: skip


@dataclass(frozen=True)
class Summary:
    n: int
    ndcg: float
    hit1: float
    hit5: float
    mrr: float
    files: float  # mean distinct files per K hits

    @staticmethod
    def of(scores: Sequence[QueryScore]) -> Summary:
        n = len(scores)
        if not n:
            return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan)
        return Summary(
            n,
            sum(s.ndcg for s in scores) / n,
            sum(s.hit_at(1) for s in scores) / n,
            sum(s.hit_at(5) for s in scores) / n,
            sum(s.rr for s in scores) / n,
            sum(s.files for s in scores) / n,
        )


# (hits' files, targets, expected NDCG@10, first target position, distinct files)
CASES: list[tuple[str, list[str], set[str], float, int | None, int]] = [
    ("first hit is the only target", ["a", "b", "c"], {"a"}, 1.0, 1, 3),
    ("no target in the hits", ["b", "c", "d"], {"a"}, 0.0, None, 3),
    ("only target second", ["b", "a"], {"a"}, 1 / math.log2(3), 2, 2),
    ("a file counts at its first hit only", ["a", "a", "a", "b"], {"a", "b"},
     (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)), 1, 2),
    ("repeats of a non-target push a target down", ["x", "x", "x", "a"], {"a"},
     1 / math.log2(5), 4, 2),
    ("two targets in the first two hits are ideal", ["b", "a", "c"], {"a", "b"}, 1.0, 1, 3),
    ("ideal over min(10, targets): 12 targets, all 10 hits targets", [f"t{i}" for i in range(10)],
     {f"t{i}" for i in range(12)}, 1.0, 1, 10),
    ("a target at hit 11 is past the cut", [*[f"x{i}" for i in range(10)], "a"], {"a"}, 0.0,
     None, 10),
    ("no hits at all", [], {"a"}, 0.0, None, 0),
]  # fmt: skip


def self_check() -> list[str]:
    """Every known case's failure (empty when all hold)."""
    failures = []
    for name, paths, targets, want_ndcg, want_first, want_files in CASES:
        s = score(paths, targets)
        got = (round(s.ndcg, 6), s.first, s.files)
        want = (round(want_ndcg, 6), want_first, want_files)
        status = "ok  " if got == want else "FAIL"
        print(f"{status} {name}: NDCG@10 {got[0]:.4f}, first {got[1]}, files {got[2]}")
        if got != want:
            failures.append(f"{name}: got {got}, wanted {want}")
    hits = [{"path": "a"}, {"path": "b"}, {"path": "a"}, {"path": "c"}]
    files = rank_files(hits)
    print(f"{'ok  ' if files == ['a', 'b', 'c'] else 'FAIL'} rank_files: {files}")
    if files != ["a", "b", "c"]:
        failures.append(f"rank_files: got {files}")
    summary = Summary.of([score(["a"], {"a"}), score(["b", "a"], {"a"}), score([], {"a"})])
    want_summary = (3, 1 / 3, 2 / 3, 1 / 2)
    got_summary = (summary.n, summary.hit1, summary.hit5, summary.mrr)
    ok = all(math.isclose(g, w) for g, w in zip(got_summary, want_summary, strict=True))
    print(f"{'ok  ' if ok else 'FAIL'} summary: Hit@1 {summary.hit1:.3f}, Hit@5 "
          f"{summary.hit5:.3f}, MRR {summary.mrr:.3f}")  # fmt: skip
    if not ok:
        failures.append(f"summary: got {got_summary}, wanted {want_summary}")
    return failures


def main() -> None:
    failures = self_check()
    if failures:
        raise SystemExit(f"{len(failures)} case(s) failed:\n  " + "\n  ".join(failures))
    print(f"all {len(CASES) + 2} cases hold")


if __name__ == "__main__":
    main()
