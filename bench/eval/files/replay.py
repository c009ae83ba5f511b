"""Ranking levers on files, replayed offline over the deep hits the evals keep, side by side on
the file-level eval and both definition-level evals.

Each rule reorders one query's first 50 hybrid hits (as `search_code` returned them, by chunk)
and the first 10 it leaves are scored: the file-level eval as `score.py` scores it (NDCG@10 of
the target files, files per 10 hits), the definition-level evals by the gold rule of
`bench/eval/compare.py` (Hit@1/5/10 and MRR@10 of the first hit naming the definition's lines).
A replay is a quick, approximate screen: a rule worth keeping is then built into the product and
measured live.

    .venv/bin/python -m bench.eval.files.run --split tune --json bench/.cache/files/tune.json
    .venv/bin/python -m bench.eval.run --split tune --json bench/.cache/eval/deep-tune.json
    .venv/bin/python -m bench.eval.files.replay bench/.cache/files/tune.json \\
        --definitions bench/.cache/eval/deep-tune.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.eval.compare import finds
from bench.eval.files.score import Summary, score

Row = dict[str, Any]
# A rule: one query's deep hits (best first) -> the hits it shows, in order.
Rule = Callable[[Sequence[Row]], list[Row]]
SYSTEM = "code-rag hybrid, by chunk"
K = 10


def _key(row: Row) -> tuple[Any, str]:
    return row.get("repo"), str(row["path"])


def rescored(hits: Sequence[Row], adjust: Callable[[Row, int, float], float | None]) -> list[Row]:
    """`hits` with each file's n-th hit (n from 1) rescored by adjust(row, n, its file's best
    score) (None leaves it out), then sorted by the new scores; first hits keep theirs."""
    best: dict[tuple[Any, str], float] = {}
    seen: Counter[tuple[Any, str]] = Counter()
    kept: list[tuple[float, int, Row]] = []
    for place, row in enumerate(hits):
        key = _key(row)
        n = seen[key]
        seen[key] += 1
        if not n:
            best[key] = float(row["score"])
            kept.append((float(row["score"]), place, row))
            continue
        new = adjust(row, n, best[key])
        if new is not None:
            kept.append((new, place, row))
    kept.sort(key=lambda t: (-t[0], t[1]))
    return [row for _, _, row in kept]


def evidence(weight: float) -> Rule:
    """One hit per file, a file's score raised by `weight` x its next two hits' scores."""

    def rule(hits: Sequence[Row]) -> list[Row]:
        scores: dict[tuple[Any, str], list[float]] = defaultdict(list)
        for row in hits:
            scores[_key(row)].append(float(row["score"]))
        firsts = {_key(row): row for row in reversed(hits)}
        bonus = {k: v[0] + weight * sum(v[1:3]) for k, v in scores.items()}
        return sorted(firsts.values(), key=lambda r: -bonus[_key(r)])

    return rule


def top_file(extra: int) -> Rule:
    """One hit per file, except the first hit's file keeps `extra` more of its own."""

    def rule(hits: Sequence[Row]) -> list[Row]:
        top = _key(hits[0]) if hits else None

        def adjust(row: Row, n: int, best: float) -> float | None:
            return float(row["score"]) if _key(row) == top and n <= extra else None

        return rescored(hits, adjust)

    return rule


def decay(factor: float) -> Rule:
    """A file's n-th further hit's score times factor**n."""
    return lambda hits: rescored(hits, lambda row, n, best: float(row["score"]) * factor**n)


def threshold(share: float) -> Rule:
    """A file's further hits kept only when they score at least `share` x its best."""

    def adjust(row: Row, n: int, best: float) -> float | None:
        return float(row["score"]) if float(row["score"]) >= share * best else None

    return lambda hits: rescored(hits, adjust)


RULES: dict[str, Rule] = {
    "by chunk (the default)": list,
    "one hit per file (by_file)": lambda hits: rescored(hits, lambda row, n, best: None),
    **{f"a file's n-th further hit x {d}^n": decay(d) for d in (0.8, 0.6, 0.5, 0.2)},
    **{f"further hits kept at >= {t} x the file's best": threshold(t) for t in (0.9, 0.8, 0.7)},
    **{f"by file, the first file keeps {m} more": top_file(m) for m in (2, 4)},
    **{f"by file, evidence {w} x the next two": evidence(w) for w in (0.1, 0.2)},
}


def file_scores(questions: Sequence[Row], rule: Rule) -> Summary:
    out = []
    for q in questions:
        shown = rule(q["systems"][SYSTEM]["deep"])
        out.append(score([str(r["path"]) for r in shown], [*q["primary"], *q["secondary"]]))
    return Summary.of(out)


def definition_scores(queries: Sequence[Row], rule: Rule) -> tuple[float, float, float, float]:
    """Hit@1, Hit@5, Hit@10 and MRR@10 of the first hit naming a target's lines."""
    ranks: list[int | None] = []
    for q in queries:
        shown = rule(q["deep"])[:K]
        targets = [tuple(t) for t in q["targets"]]
        ranks.append(
            next((i for i, r in enumerate(shown, 1) if any(finds(r, t) for t in targets)), None)
        )
    n = max(len(ranks), 1)

    def hit(k: int) -> float:
        return sum(r is not None and r <= k for r in ranks) / n

    return hit(1), hit(5), hit(10), sum(1 / r for r in ranks if r is not None) / n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, help="bench.eval.files.run --json output")
    ap.add_argument("--definitions", type=Path, help="bench.eval.run --json output")
    args = ap.parse_args(argv)
    data = json.loads(args.files.read_text(encoding="utf-8"))
    defs = json.loads(args.definitions.read_text(encoding="utf-8")) if args.definitions else {}
    evals = [name for name in ("docstring", "questions") if defs.get(name)]
    head = "| rule | file NDCG@10 | files per 10 |" + "".join(
        f" {name} Hit@1 / 5 / 10 / MRR@10 |" for name in evals
    )
    print(
        f"{data['split']} split: {len(data['questions'])} file-level questions"
        + "".join(f", {len(defs[name])} {name} queries" for name in evals)
    )
    print("\n" + head + "\n|---|---:|---:|" + "---:|" * len(evals))
    for name, rule in RULES.items():
        s = file_scores(data["questions"], rule)
        cells = "".join(
            " {:.3f} / {:.3f} / {:.3f} / {:.3f} |".format(*definition_scores(defs[e], rule))
            for e in evals
        )
        print(f"| {name} | {s.ndcg:.3f} | {s.files:.1f} |{cells}")


if __name__ == "__main__":
    main()
