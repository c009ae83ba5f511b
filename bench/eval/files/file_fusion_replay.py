"""Replay: each file's best vector-mode and keyword-mode scores fused at the file level.

Over run.py's `--json` deep hits (the first 30 or 50 files of `code-rag vector` and
`code-rag keyword`, each the product's own search in that mode, one hit per file), each list's
scores normalised by min-max ("mm") or by its first ("max"), and a file ranked by
w x its vector score + (1 - w) x its keyword score (0 where a list lacks it). NDCG@10 of the
target files, per split, against the hybrid's own order as replayed.

    .venv/bin/python -m bench.eval.files.run --split tune --json /tmp/tune.json   # test, unseen
    .venv/bin/python -m bench.eval.files.file_fusion_replay /tmp/tune.json /tmp/test.json \
        /tmp/unseen.json
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

K = 10
WEIGHTS = (0.4, 0.5, 0.6, 0.7, 0.8)


def ndcg(files: list[str], targets: set[str]) -> float:
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(K, len(targets)) + 1))
    return sum(1 / math.log2(i + 1) for i, f in enumerate(files[:K], 1) if f in targets) / ideal


def files_of(q: dict[str, Any], system: str, count: int = 50) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hit in q["systems"][system]["deep"]:
        scores.setdefault(hit["path"], hit["score"])
    return dict(list(scores.items())[:count])


def normalised(scores: dict[str, float], how: str) -> dict[str, float]:
    if not scores:
        return {}
    top = max(scores.values())
    low = min(scores.values()) if how == "mm" else 0.0
    return {p: (v - low) / (top - low) if top > low else 1.0 for p, v in scores.items()}


def main(paths: list[str]) -> None:
    for path in paths:
        data = json.loads(Path(path).read_text())
        questions = data["questions"]
        hybrid = statistics.mean(
            ndcg(list(files_of(q, "code-rag hybrid")), set(q["primary"] + q["secondary"]))
            for q in questions
        )
        cells = [f"hybrid as replayed {hybrid:.4f}"]
        for how in ("mm", "max"):
            for count in (30, 50):
                row = []
                for w in WEIGHTS:
                    got = []
                    for q in questions:
                        v = normalised(files_of(q, "code-rag vector", count), how)
                        k = normalised(files_of(q, "code-rag keyword", count), how)
                        order = sorted(
                            {*v, *k}, key=lambda p: -(w * v.get(p, 0.0) + (1 - w) * k.get(p, 0.0))
                        )
                        got.append(ndcg(order, set(q["primary"] + q["secondary"])))
                    row.append(f"{statistics.mean(got):.4f}")
                cells.append(f"{how} {count}: " + "/".join(row))
        print(f"{data['split']}: " + "; ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
