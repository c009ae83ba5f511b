"""File-level ranking levers measured side by side, per split, in one run.

Each lever is a `Ranking` (the product's own knobs, `indexer/search/fusion.py`); every question
of the file-level eval is asked through the product's `search_code` once per lever and split,
scored as `score.py` scores it (NDCG@10, Hit@1/5, MRR of the target files), overall and per
kind. `--mode keyword` needs no vector at all: the index is built rows first and its vectors
are never made (the model-free mode's ranking), so a lever of the keyword side or of the fusion
is measured in minutes. `--mode hybrid` searches the eval's full index (run.py builds
it).

    .venv/bin/python -m bench.eval.files.levers --mode keyword --try demote5:demote=0.5
    .venv/bin/python -m bench.eval.files.levers --mode hybrid --try v7:vector_share=0.7

A choice is made on `tune`; `test` confirms it; `unseen` is only ever checked, never chosen on.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.eval.files import questions as questions_module
from bench.eval.files.corpus import CACHE, UNSEEN, Corpus, ensure_corpus
from bench.eval.files.index import ensure_index, open_index, prepare_dirs, project_for
from bench.eval.files.product import (
    Database,
    Project,
    SweepOptions,
    analyze,
    local_embedder,
    open_database,
    search_code,
    sweep_project,
)
from bench.eval.files.questions import Question
from bench.eval.files.score import K, Summary, rank_files, score
from bench.eval.run import ranking_of
from indexer.search.fusion import DEFAULT_RANKING, Ranking

ROWS_PROJECT = "files_rows"

# Named levers to measure (`--levers`); `--try` adds others. The product's ranking is `base`.
LEVERS: dict[str, Ranking] = {"base": DEFAULT_RANKING}


def rows_index(db: Database, corpus: Corpus, unseen: bool) -> Project:
    """The eval corpus's part (the unseen libraries, or the others) swept rows first, its
    vectors never made: what a model-free index (or a first index before its vectors)
    searches."""
    part = corpus.part(unseen)
    base = project_for(part)
    project = Project(ROWS_PROJECT + ("_unseen" if unseen else ""), base.roots)
    print(f"index {project.name}: sweeping rows only ...", file=sys.stderr)
    report = sweep_project(db, project, _NoVectors(), SweepOptions(defer_vectors=True))
    analyze(db, project)
    print(f"  {report.files_seen} files, {report.chunks_written} chunks", file=sys.stderr)
    return project


class _NoVectors:
    """The bundled model's identity for the index's record; a rows-first sweep never asks it
    to embed (a call would be a bug, and fails loudly)."""

    def __init__(self) -> None:
        self._model = local_embedder()
        self.identity = self._model.identity

    def __getattr__(self, name: str) -> Any:
        if name.startswith("embed"):
            raise AssertionError(f"a rows-first sweep called {name}")
        return getattr(self._model, name)


def measure(
    db: Database,
    project: Project,
    embedder: Any,
    questions: Sequence[Question],
    ranking: Ranking,
    mode: str,
) -> dict[str, Summary]:
    """Every question asked with `ranking`; summaries overall and per kind."""
    per: dict[str, list[Any]] = {}
    for q in questions:
        hits = search_code(
            db, project, embedder, q.text, top_k=K, repo=q.repo, mode=mode, ranking=ranking
        )
        s = score(rank_files(hits), q.targets)
        per.setdefault("all", []).append(s)
        per.setdefault(q.kind, []).append(s)
    return {k: Summary.of(v) for k, v in per.items()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("keyword", "hybrid"), default="keyword")
    ap.add_argument("--levers", default=",".join(LEVERS), help="comma-separated names")
    ap.add_argument(
        "--try",
        dest="tries",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE,...",
        help="a lever of your own: the default ranking with these fields changed",
    )
    ap.add_argument("--splits", default="tune,test")
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args(argv)

    whole, _ = ensure_corpus(args.cache)
    questions, problems = questions_module.load_questions()
    if problems:
        raise SystemExit("questions: " + "; ".join(problems))
    splits = args.splits.split(",")
    parts = sorted({split == UNSEEN for split in splits})
    projects: dict[bool, Project] = {}
    embedder: Any = None
    if args.mode == "keyword":
        db = open_database(prepare_dirs(args.cache))
        for unseen in parts:
            projects[unseen] = rows_index(db, whole, unseen)
    else:
        db = open_index(args.cache)
        embedder = local_embedder()
        for unseen in parts:
            corpus = whole.part(unseen)
            projects[unseen] = project_for(corpus, None, UNSEEN if unseen else "")
            ensure_index(db, projects[unseen], embedder, corpus, args.cache)
    levers = {name: LEVERS[name] for name in args.levers.split(",") if name}
    for spec in args.tries:
        name, _, fields = spec.partition(":")
        levers[name] = ranking_of(fields)
    print(
        f"| lever ({args.mode}) | split | n | NDCG@10 | Hit@1 | Hit@5 | MRR | "
        "architecture | behaviour | symbol |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for name, ranking in levers.items():
            for split in splits:
                chosen = [q for q in questions if q.split == split]
                started = time.perf_counter()
                project = projects[split == UNSEEN]
                out = measure(db, project, embedder, chosen, ranking, args.mode)
                a = out["all"]
                kinds = " | ".join(
                    f"{out[k].ndcg:.3f}" if k in out else "-"
                    for k in ("architecture", "behaviour", "symbol")
                )
                print(
                    f"| {name} | {split} | {a.n} | {a.ndcg:.3f} | {a.hit1:.3f} | {a.hit5:.3f} "
                    f"| {a.mrr:.3f} | {kinds} |",
                    flush=True,
                )
                print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)
    finally:
        db.close()


if __name__ == "__main__":
    main()
