"""Scoring of the long-question eval: pure functions over the files a system names, in order.

A question's targets are every source file its fix changed. Over the distinct files of the
first hits, in the order of their first hit, "all@k" is 1 when every target is among the first
k files (a fix of three files cannot count at k = 1), and the reciprocal rank is of the first
target among the first K files (0 past K). Run alone, it checks itself on known cases:

    .venv/bin/python -m bench.eval.long.score
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

K = 10
AT = (1, 3, 5, 10)


def distinct(files: Sequence[str]) -> list[str]:
    """The files in the order of their first hit."""
    return list(dict.fromkeys(files))


@dataclass(frozen=True)
class LongScore:
    """One question's scores for one system."""

    first: int | None  # position of the first target among the first K files, None if absent
    all_at: tuple[bool, ...]  # every target among the first k files, for each k of AT

    @property
    def rr(self) -> float:
        return 1.0 / self.first if self.first is not None else 0.0


def score(files: Sequence[str], targets: Sequence[str]) -> LongScore:
    ranked = distinct(files)[:K]
    wanted = set(targets)
    first = next((i for i, f in enumerate(ranked, 1) if f in wanted), None)
    return LongScore(first, tuple(wanted <= set(ranked[:k]) for k in AT))


@dataclass(frozen=True)
class Summary:
    n: int
    all_at: tuple[float, ...]
    mrr: float

    @staticmethod
    def of(scores: Sequence[LongScore]) -> Summary:
        n = len(scores)
        if not n:
            return Summary(0, tuple(0.0 for _ in AT), 0.0)
        shares = tuple(sum(s.all_at[i] for s in scores) / n for i in range(len(AT)))
        return Summary(n, shares, sum(s.rr for s in scores) / n)


def _self_check() -> None:
    one = score(["a", "b", "a", "c"], ["c"])
    assert one.first == 3 and one.all_at == (False, True, True, True), one
    two = score(["x", "a", "y", "z", "b"], ["a", "b"])
    assert two.first == 2 and two.all_at == (False, False, True, True), two
    none = score(["x"] * 3 + [f"f{i}" for i in range(20)] + ["a"], ["a"])
    assert none.first is None and none.all_at == (False,) * 4 and none.rr == 0.0
    s = Summary.of([one, two, none])
    assert s.n == 3 and abs(s.mrr - (1 / 3 + 1 / 2) / 3) < 1e-12
    assert s.all_at == (0.0, 1 / 3, 2 / 3, 2 / 3), s
    print("score: all checks pass")


if __name__ == "__main__":
    _self_check()
