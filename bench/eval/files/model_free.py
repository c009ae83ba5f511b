"""The file-level eval with no model at all: code-rag model-free beside plain BM25.

The corpus is swept with no embedder (`[embedding] provider = none`) into a project of its own
(`index.model_free_project`): rows only, nothing embedded, so a first run takes the minutes of
parsing, not the tens of minutes of embedding. Each question is asked through the product's
`search_code` with no embedder in its default mode, which is the hybrid's keyword side with its
exact-name and verbatim-identifier lifts, one hit per file (and a hit per chunk): what a first
index serves before its vectors, and what a model-free server serves always. Plain BM25 is
bench/eval/baseline.py's over the question's library. No model is loaded; the tables, the
scores and the per-query JSON are run.py's.

    .venv/bin/python -m bench.eval.files.model_free                # the test split
    .venv/bin/python -m bench.eval.files.model_free --split tune --json out.json
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.eval.baseline import PlainBaseline, corpus_windows
from bench.eval.compare import hit_row
from bench.eval.files import questions as questions_module
from bench.eval.files.corpus import CACHE, Corpus
from bench.eval.files.index import ensure_index, model_free_project, open_index
from bench.eval.files.product import Project, search_code
from bench.eval.files.questions import Question
from bench.eval.files.run import (
    DEFAULT_DEPTH,
    group_table,
    missing_targets,
    paired,
    parser,
    question_rows,
    summary_table,
)
from bench.eval.files.score import K, QueryScore, Summary, score

# Each code-rag system: whether it asks for one hit per file (the default); no embedder.
CODE_RAG = {"code-rag model-free": True, "code-rag model-free, by chunk": False}
PLAIN_BM25 = "plain BM25"
SYSTEMS = (*CODE_RAG, PLAIN_BM25)
PRODUCT = "code-rag model-free"


def bm25_baselines(corpus: Corpus, repos: set[str]) -> dict[str, PlainBaseline]:
    """The plain baseline's BM25 over each library in `repos` (no vectors: keyword mode
    never reads them)."""
    libs = [lib for lib in corpus.libraries if lib.name in repos]
    files = [(lib.name, rel, corpus.root / lib.name / rel) for lib in libs for rel in lib.files]
    windows = corpus_windows(files)
    out = {}
    for lib in libs:
        mine = [w for w in windows if w.repo == lib.name]
        out[lib.name] = PlainBaseline(mine, np.zeros((len(mine), 1), dtype=np.float32))
    print(f"  baseline: {len(windows)} windows over {len(libs)} libraries", file=sys.stderr)
    return out


def ask(
    db: Any, project: Project, plain: dict[str, PlainBaseline], q: Question, depth: int
) -> dict[str, dict[str, Any]]:
    """Every system's hits for one question, as run.ask records them."""
    out: dict[str, dict[str, Any]] = {}
    for system, by_file in CODE_RAG.items():
        hits = search_code(db, project, None, q.text, repo=q.repo, top_k=K, by_file=by_file)
        entry: dict[str, Any] = {"files": [h.path for h in hits]}
        if depth > K:
            deep = search_code(db, project, None, q.text, repo=q.repo, top_k=depth, by_file=by_file)
            entry["deep"] = [hit_row(h) for h in deep]
        out[system] = entry
    rows = plain[q.repo].search(q.text, np.zeros(1, dtype=np.float32), max(K, depth), "keyword")
    out[PLAIN_BM25] = {"files": [r["path"] for r in rows[:K]]}
    if depth > K:
        out[PLAIN_BM25]["deep"] = rows
    return out


def run(
    split: str = "test",
    limit: int = 0,
    depth: int = DEFAULT_DEPTH,
    json_path: Path | None = None,
    cache: Path = CACHE,
    folder: Path = questions_module.HERE,
    lenient: bool = False,
    log: Callable[[str], None] = print,
) -> dict[str, list[QueryScore]]:
    questions, corpus = questions_module.ensure_valid(cache, folder, lenient)
    chosen = [q for q in questions if split in ("all", q.split)]
    if limit:
        chosen = chosen[:limit]
    db = open_index(cache)
    try:
        project = model_free_project(corpus)
        manifest = ensure_index(db, project, None, corpus, cache)
        plain = bm25_baselines(corpus, {q.repo for q in chosen})
        absent = missing_targets(db, project, chosen)
        started = time.perf_counter()
        results = []
        for i, q in enumerate(chosen, 1):
            results.append(ask(db, project, plain, q, depth))
            if i % 20 == 0 or i == len(chosen):
                print(f"\r  asked {i}/{len(chosen)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        scores = {
            s: [score(r[s]["files"], q.targets) for q, r in zip(chosen, results, strict=True)]
            for s in SYSTEMS
        }
        splits = ", ".join(
            f"{sum(q.split == name for q in questions)} {name}"
            for name in sorted({q.split for q in questions})
        )
        log(
            f"\n# file-level eval, model-free: {len(corpus.libraries)} libraries, "
            f"{manifest['files']} files, {manifest['chunks']} code-rag chunks (no vectors); "
            f"{len(questions)} questions ({splits}); no model; asked in "
            f"{time.perf_counter() - started:.0f} s"
        )
        if absent:
            shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
            log(f"\n{len(absent)} target file(s) are not in the index: {shown}")
        log(f"\n## {split} split, {len(chosen)} questions, top_k {K}, one library per question\n")
        log(summary_table(scores))
        log("\n" + paired(scores, PRODUCT, PLAIN_BM25))
        log(f"\n## NDCG@{K} per kind ({split} split)\n")
        log(group_table(scores, [q.kind for q in chosen], "kind"))
        log(f"\n## NDCG@{K} per language ({split} split)\n")
        log(group_table(scores, [q.language for q in chosen], "language"))
        if json_path is not None:
            write_json(json_path, split, manifest, chosen, results, scores, depth)
            log(f"\nper-query results: {json_path}")
    finally:
        db.close()
    return scores


def write_json(
    path: Path,
    split: str,
    manifest: dict[str, Any],
    chosen: Sequence[Question],
    results: Sequence[dict[str, dict[str, Any]]],
    scores: dict[str, list[QueryScore]],
    depth: int,
) -> None:
    """run.write_json's layout, for these systems."""
    queries = question_rows(chosen, results, scores, SYSTEMS)
    out = {
        "split": split,
        "top_k": K,
        "depth": depth,
        "index": manifest,
        "systems": {
            s: {"mode": "hybrid", "by_file": f, "embedder": None, "by": "search_code"}
            for s, f in CODE_RAG.items()
        }
        | {PLAIN_BM25: {"mode": "keyword", "by": "bench/eval/baseline.py"}},
        "summary": {s: Summary.of(v).__dict__ for s, v in scores.items()},
        "questions": queries,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__.split("\n\n")[0])
    args = ap.parse_args(argv)
    if not K <= args.depth <= 50:
        ap.error(f"--depth must be from {K} to 50")
    if args.model is not None:
        ap.error("--model: the model-free eval loads no model")
    run(args.split, args.limit, args.depth, args.json, args.cache, args.data, args.lenient)


if __name__ == "__main__":
    main()
