"""Two runs of the definition-level evals side by side, question by question.

`bench.eval.run --json` keeps each query's first hybrid hits by chunk. Given two such files of
the same split (two models, two rankings, two commits), this scores each query's first hit
naming one of its targets among the first 10 (the gold rule of compare.py), and reads the two
runs paired: Hit@1/5/10 and MRR@10 of each, the mean difference of reciprocal rank with a 95%
bootstrap interval, and on how many queries each ranks the target higher. On a split of 73
questions a difference of 0.02 is one or two of them; the paired counts say which.

    .venv/bin/python -m bench.eval.run --split tune --json bench/.cache/eval/a.json
    .venv/bin/python -m bench.eval.run --split tune --model DIR --json bench/.cache/eval/b.json
    .venv/bin/python -m bench.eval.versus bench/.cache/eval/a.json bench/.cache/eval/b.json

Two `bench.eval.files.run --json` files of one split are read the same way, by question, on
NDCG@10 of the files each system's first 10 hits name (each system both ran, and the default
one by kind of question).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.eval.compare import bootstrap, finds

K = 10
EVALS = ("docstring", "questions")


def first_ranks(queries: Sequence[dict[str, Any]]) -> dict[str, int | None]:
    """Per query id, the place (from 1) of its first hit naming a target, None past K."""
    out: dict[str, int | None] = {}
    for q in queries:
        targets = [tuple(t) for t in q["targets"]]
        shown = q["deep"][:K]
        out[q["qid"]] = next(
            (i for i, row in enumerate(shown, 1) if any(finds(row, t) for t in targets)), None
        )
    return out


def measures(ranks: Sequence[int | None]) -> str:
    n = max(len(ranks), 1)
    hits = [sum(r is not None and r <= k for r in ranks) / n for k in (1, 5, 10)]
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return " / ".join(f"{x:.3f}" for x in (*hits, mrr))


def versus(a: dict[str, int | None], b: dict[str, int | None], seed: int = 0) -> str:
    """b against a over the queries both ran."""
    ids = sorted(a.keys() & b.keys())
    rr = np.array([[1 / r if r else 0.0 for r in (a[i], b[i])] for i in ids]).reshape(-1, 2)
    diff = rr[:, 1] - rr[:, 0]
    if not len(diff):
        return "no query in both runs"
    lo, hi = bootstrap(diff, seed)
    return (
        f"{len(ids)} queries; Hit@1 / Hit@5 / Hit@10 / MRR@10: A {measures([a[i] for i in ids])}, "
        f"B {measures([b[i] for i in ids])}; B - A MRR@10 {diff.mean():+.3f} (95% bootstrap "
        f"{lo:+.3f} to {hi:+.3f}); B higher on {int((diff > 0).sum())}, lower on "
        f"{int((diff < 0).sum())}, tied on {int((diff == 0).sum())}"
    )


def files_versus(a: dict[str, Any], b: dict[str, Any], system: str, kind: str = "") -> str:
    """b against a on NDCG@10 of `system`, over the file-level questions both ran (of `kind`)."""
    scores = [
        {
            q["id"]: q["systems"][system]["ndcg"]
            for q in run["questions"]
            if system in q["systems"] and kind in ("", q["kind"])
        }
        for run in (a, b)
    ]
    ids = sorted(scores[0].keys() & scores[1].keys())
    if not ids:
        return "no question in both runs"
    pair = np.array([[scores[0][i], scores[1][i]] for i in ids])
    diff = pair[:, 1] - pair[:, 0]
    lo, hi = bootstrap(diff)
    return (
        f"{len(ids)} questions; NDCG@10 A {pair[:, 0].mean():.3f}, B {pair[:, 1].mean():.3f}; "
        f"B - A {diff.mean():+.3f} (95% bootstrap {lo:+.3f} to {hi:+.3f}); B higher on "
        f"{int((diff > 0).sum())}, lower on {int((diff < 0).sum())}"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="bench.eval.run --json output (A)")
    ap.add_argument("b", type=Path, help="the same split's output of the other run (B)")
    args = ap.parse_args(argv)
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in (args.a, args.b)]
    if runs[0]["split"] != runs[1]["split"]:
        ap.error(f"A is the {runs[0]['split']} split, B the {runs[1]['split']}")
    if "questions" in runs[0] and "systems" in runs[0]:  # the file-level eval's
        split = runs[0]["split"]
        for system in runs[0]["systems"]:
            if system in runs[1].get("systems", {}):
                print(f"files ({split}), {system}: {files_versus(runs[0], runs[1], system)}")
        kinds = sorted({q["kind"] for q in runs[0]["questions"]})
        for kind in kinds:
            default = "code-rag hybrid"
            paired = files_versus(runs[0], runs[1], default, kind)
            print(f"files ({split}), {default}, {kind}: {paired}")
        return
    for name in EVALS:
        if runs[0].get(name) and runs[1].get(name):
            ranks = [first_ranks(run[name]) for run in runs]
            print(f"{name} ({runs[0]['split']}), hybrid by chunk: {versus(ranks[0], ranks[1])}")


if __name__ == "__main__":
    main()
