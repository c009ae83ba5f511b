"""Screens of file-level levers that need no knob in the product: a question asked clause by
clause, vectors for code files only, and three reorderings replayed over run.py's deep hits.

    .venv/bin/python -m bench.eval.files.screens clauses --split tune      # test
    .venv/bin/python -m bench.eval.files.screens code-only --splits tune,test,unseen --drop test
    .venv/bin/python -m bench.eval.files.run --split tune --json /tmp/tune.json    # test, unseen
    .venv/bin/python -m bench.eval.files.screens replay /tmp/tune.json /tmp/test.json

- `clauses`: a question of several clauses ("what starts X, what looks for Y, and what keeps
  Z") is asked whole and clause by clause (split at `:;,?` and before a question word); each
  clause's list, normalised by its best score, adds `beta` x its mean to the whole question's
  normalised scores (also the mean's max and RRF forms). Top 30 files per search.
- `code-only`: the vector side as an index would have it if files that are not code (per
  `roles.default_role`; `--drop` names the roles) had no vectors: their chunks leave the
  vector list before fusion (fetched twice as deep and cut back to the ranking's depth).
- `replay`: over the deep hits of `code-rag hybrid` and `code-rag keyword`, (a) a file lifted
  by its folder's other files' scores, (b) a file of the same stem as one of the first three
  (`x.c` beside `x.h`) brought up beside it, (c) path words lifting files 2 to 10 only, never
  above the first.
"""

from __future__ import annotations

import argparse
import json
import math
import posixpath
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import indexer.search.hybrid as hybrid
from bench.eval.files import levers
from bench.eval.files import questions as questions_module
from bench.eval.files.corpus import CACHE, UNSEEN, ensure_corpus
from bench.eval.files.index import ensure_index, open_index, project_for
from bench.eval.files.product import local_embedder, search_code
from bench.eval.files.score import K
from indexer import lexical
from indexer.search.fusion import DEFAULT_RANKING, Candidates, Ranking
from indexer.search.roles import default_role

_CLAUSE = re.compile(
    r"[:;,?]|\s(?=(?:and |or )?(?:what|where|which|how|whether|who|when|why)\b)|\band then\b"
)
_STOP_TEXT = """a an and are as at be by do does for from has have how if in is it not of on or the
    to was what when where which who why with this that its into can"""
_STOP = frozenset(_STOP_TEXT.split())


def ndcg(files: Sequence[str], targets: set[str]) -> float:
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(K, len(targets)) + 1))
    got = sum(1 / math.log2(i + 1) for i, f in enumerate(files[:K], 1) if f in targets)
    return got / ideal


def clauses(text: str) -> list[str]:
    """The clauses of a question that hold at least three words of three letters."""
    parts = [p.strip() for p in _CLAUSE.split(text) if p and p.strip()]
    parts = [re.sub(r"^(and|or|but)\s+", "", p) for p in parts]
    return [p for p in parts if len(re.findall(r"[A-Za-z]{3,}", p)) >= 3]


def _fused(runs: list[list[tuple[str, float]]], beta: float, how: str) -> list[str]:
    whole: dict[str, float] = {}
    for path, s in runs[0]:
        whole.setdefault(path, s)
    if len(runs) == 1 or beta == 0:
        return list(whole)
    if how == "rrf":
        rrf: dict[str, float] = defaultdict(float)
        for i, (path, _) in enumerate(runs[0]):
            rrf[path] += 1 / (60 + i)
        for run in runs[1:]:
            for i, (path, _) in enumerate(run):
                rrf[path] += beta / (60 + i) / (len(runs) - 1)
        return sorted(rrf, key=lambda p: -rrf[p])
    top = max(whole.values()) or 1.0
    extra: dict[str, float] = defaultdict(float)
    for run in runs[1:]:
        best = max((s for _, s in run), default=1.0) or 1.0
        for path, s in run:
            if how == "max":
                extra[path] = max(extra[path], s / best)
            else:
                extra[path] += s / best / (len(runs) - 1)
    score = {p: whole.get(p, 0.0) / top + beta * extra.get(p, 0.0) for p in {*whole, *extra}}
    return sorted(score, key=lambda p: -score[p])


def screen_clauses(split: str) -> None:
    whole, _ = ensure_corpus(CACHE)
    questions, _ = questions_module.load_questions()
    chosen = [q for q in questions if q.split == split]
    unseen = split == UNSEEN
    db = open_index(CACHE)
    embedder = local_embedder()
    corpus = whole.part(unseen)
    project = project_for(corpus, None, UNSEEN if unseen else "")
    ensure_index(db, project, embedder, corpus, CACHE)
    asked: list[tuple[set[str], list[list[tuple[str, float]]]]] = []
    try:
        for q in chosen:
            parts = clauses(q.text)
            runs = []
            for text in [q.text, *(parts if len(parts) > 1 else [])]:
                hits = search_code(db, project, embedder, text, top_k=30, repo=q.repo)
                runs.append([(h.path, h.score) for h in hits])
            asked.append((set(q.targets), runs))
    finally:
        db.close()
    split_ones = sum(len(runs) > 1 for _, runs in asked)
    print(f"{split}: {split_ones} of {len(asked)} questions split; NDCG@10 all / split ones")
    for how in ("mean", "max", "rrf"):
        cells = []
        for beta in (0.0, 0.2, 0.5, 1.0, 2.0):
            scores = [ndcg(_fused(runs, beta, how), t) for t, runs in asked]
            split_scores = [s for s, (_, runs) in zip(scores, asked, strict=True) if len(runs) > 1]
            cells.append(
                f"{beta}: {statistics.mean(scores):.4f} / {statistics.mean(split_scores):.3f}"
            )
        print(f"  {how}: " + "  ".join(cells))


def screen_code_only(splits: str, drop: set[str]) -> None:
    fuse = hybrid.fuse

    def code_only(
        candidates: Candidates,
        ranking: Ranking = DEFAULT_RANKING,
        demoted: Any = (),
        file_of: Any = None,
        top_k: int = 0,
    ) -> dict[int, float]:
        depth = ranking.vector_depth // 2
        kept = [
            (cid, s)
            for cid, s in zip(candidates.vector, candidates.vector_scores, strict=True)
            if (f := candidates.files.get(cid)) is None or default_role(f.path) not in drop
        ][:depth]
        candidates = replace(
            candidates, vector=[c for c, _ in kept], vector_scores=[s for _, s in kept]
        )
        return fuse(candidates, replace(ranking, vector_depth=depth), demoted, file_of, top_k)

    hybrid.fuse = code_only
    depth = DEFAULT_RANKING.vector_depth * 2
    lever = f"code_only:vector_depth={depth}"
    levers.main(["--mode", "hybrid", "--splits", splits, "--levers", "", "--try", lever])


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0].lower()


def _near(a: str, b: str) -> bool:
    return a == b or (len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a)))


def _folder(order: list[str], score: dict[str, float], q: dict[str, Any], lam: float) -> list[str]:
    top = score[order[0]] or 1.0
    by_dir: dict[str, list[float]] = defaultdict(list)
    for p in order:
        by_dir[posixpath.dirname(p)].append(score[p] / top)
    new = {}
    for p in order:
        others = sorted(by_dir[posixpath.dirname(p)], reverse=True)
        others.remove(score[p] / top)
        new[p] = score[p] / top + lam * (others[0] if others else 0.0)
    return sorted(order, key=lambda p: -new[p])


def _companion(order: list[str], score: dict[str, float], q: dict[str, Any], _: float) -> list[str]:
    out: list[str] = []
    for p in order:
        if p in out:
            continue
        out.append(p)
        if len(out) <= 3:
            out += [c for c in order if c not in out and _stem(c) == _stem(p)]
    return out


def _path_below_first(
    order: list[str], score: dict[str, float], q: dict[str, Any], lam: float
) -> list[str]:
    words = [w.lower() for w in re.findall(r"[A-Za-z]+", q["query"])]
    words = [w for w in words if len(w) >= 3 and w not in _STOP]
    top = score[order[0]]

    def share(path: str) -> float:
        stem = posixpath.splitext(posixpath.basename(path))[0]
        parts = [w.lower() for w in lexical.split_identifier(stem) if len(w) >= 3]
        return sum(any(_near(w, x) for x in words) for w in parts) / len(parts) if parts else 0.0

    new = {p: score[p] + (lam * top * share(p) if 0 < i < K else 0.0) for i, p in enumerate(order)}
    new[order[0]] = math.inf
    return sorted(order, key=lambda p: -new[p])


Reorder = Callable[[list[str], dict[str, float], dict[str, Any], float], list[str]]
_RULES: dict[str, tuple[Reorder, tuple[float, ...]]] = {
    "folder": (_folder, (0.05, 0.1, 0.2, 0.3)),
    "companion": (_companion, (1.0,)),
    "path-below-first": (_path_below_first, (0.1, 0.2, 0.3, 0.5)),
}


def screen_replay(paths: Sequence[Path]) -> None:
    for system in ("code-rag hybrid", "code-rag keyword"):
        for path in paths:
            data = json.loads(path.read_text())
            rows = []
            for q in data["questions"]:
                score: dict[str, float] = {}
                for h in q["systems"][system]["deep"]:
                    score.setdefault(h["path"], h["score"])
                rows.append((q, list(score), score, set(q["primary"] + q["secondary"])))
            base = statistics.mean(ndcg(order, t) for _, order, _, t in rows)
            cells = [f"as replayed {base:.4f}"]
            for name, (rule, weights) in _RULES.items():
                figures = [
                    statistics.mean(ndcg(rule(order, s, q, w), t) for q, order, s, t in rows)
                    for w in weights
                ]
                cells.append(f"{name} " + "/".join(f"{f:.4f}" for f in figures))
            print(f"{system}, {data['split']}: " + "; ".join(cells))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="screen", required=True)
    sub.add_parser("clauses").add_argument("--split", default="tune")
    code = sub.add_parser("code-only")
    code.add_argument("--splits", default="tune,test,unseen")
    code.add_argument("--drop", default="test,docs,example,vendored,generated,stub")
    sub.add_parser("replay").add_argument("json", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.screen == "clauses":
        screen_clauses(args.split)
    elif args.screen == "code-only":
        screen_code_only(args.splits, set(args.drop.split(",")))
    else:
        screen_replay(args.json)


if __name__ == "__main__":
    main()
