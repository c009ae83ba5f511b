"""The long-question eval: an issue's text as the query, the files its fix changed as the answer.

For each question of the split, its repository's tree is written at the question's base
commit (trees.py; one folder per repository, moved from commit to commit, re-writing only the
files that changed) and swept by the product's real sweep into a project of its own, one per
repository and mode (`long_<owner>_<name>`, `..._none` with no model): the sweep brings the
index to exactly that tree, re-chunking only what changed since the repository's last commit
(in hybrid mode the product's shared embedding cache serves unchanged chunks). Then the issue's
first QUERY_CHARS characters are asked through `search_code`, top_k 10, one hit per file (the
default): with no model (`--mode none`, the default: what a `provider = none` server answers)
or with the bundled model (`--mode hybrid`, the product's default; slow on two cores).

Reference rows on the same questions and trees: plain BM25 over whole files (bm25.py, the
files the sweep indexed) and, with `--semble`, semble 0.7.0's ranking with no model as the
file-level eval runs it (bench/eval/files/semble_side.py, in its own virtual environment under
`bench/.cache/semble`), one hit per file. Scored by score.py: the share of questions whose
every target is among the first 1 / 3 / 5 / 10 files, and MRR@10 of the first target; overall,
per language, with a paired bootstrap against BM25.

    .venv/bin/python -m bench.eval.long.run --split tune
    .venv/bin/python -m bench.eval.long.run --split test --mode hybrid --json out.json
    .venv/bin/python -m bench.eval.long.run --split unseen --semble
    .venv/bin/python -m bench.eval.long.run --split tune --try long:long_query_chars=400
    .venv/bin/python -m bench.eval.long.run --split fresh --semble --cache bench/.cache/long-fresh

`--split fresh` asks fresh.jsonl's questions (the held-out set from other sources, measured
once and never tuned on; README.md, "A fresh set") instead of questions.jsonl's.

`--resume FILE` keeps the answers in FILE as each commit is done, and a run given a FILE of the
same split, mode and rows asks only the commits whose questions it lacks: a run stopped (a
session's end, a kill) goes on where it stopped, its vectors already in the cache.

`--try NAME:key=value,...` (again for more) adds a row of the product with those fields of its
`Ranking` changed (`bench/eval/run.py`'s `ranking_of`), asked on the same index right after the
default: levers compared on one sweep, each paired against the product's row.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.eval.compare import bootstrap
from bench.eval.files.index import prepare_dirs
from bench.eval.files.product import (
    Project,
    Root,
    SweepOptions,
    analyze,
    indexed_files,
    local_embedder,
    open_database,
    search_code,
    sweep_project,
)
from bench.eval.long import questions as qmod
from bench.eval.long.bm25 import FileBM25
from bench.eval.long.questions import Question
from bench.eval.long.score import AT, K, LongScore, Summary, distinct, score
from bench.eval.long.trees import MIRRORS, Mirror, materialise
from indexer.search import Ranking

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / "bench" / ".cache" / "long"
QUERY_CHARS = 2000
MODES = {"none": "code-rag model-free", "hybrid": "code-rag hybrid"}
BM25 = "plain BM25, whole files"
SEMBLE = "semble, no model, one hit per file"
SEMBLE_SIDE = REPO / "bench" / "eval" / "files" / "semble_side.py"


def project_name(repo: str, mode: str) -> str:
    base = "long_" + re.sub(r"[^a-z0-9]+", "_", repo.lower()).strip("_")
    return (base[:58] + "_none") if mode == "none" else base[:63]


def project_for(repo: str, mode: str, folder: Path) -> Project:
    """One project per repository and mode, its one root the repository's tree."""
    return Project(project_name(repo, mode), (Root(folder, repo.split("/")[1]),))


def semble_answers(
    python: Path, folder: Path, asked: Sequence[Question], work: Path
) -> dict[str, list[str]]:
    """semble's files, one hit per file, for questions over the tree in `folder`."""
    work.mkdir(parents=True, exist_ok=True)
    request, out = work / "request.json", work / "answers.json"
    rows = [{"id": q.qid, "repo": folder.name, "text": q.text[:QUERY_CHARS]} for q in asked]
    request.write_text(json.dumps({"corpus": str(folder.parent), "questions": rows}))
    subprocess.run(
        [str(python), str(SEMBLE_SIDE), str(request), str(out)],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    got = json.loads(out.read_text())["answers"]
    return {qid: got[qid]["by_file"] for qid in got}


def by_commit(chosen: Sequence[Question]) -> list[tuple[str, str, list[Question]]]:
    """(repository, commit, its questions), each repository's commits in time order."""
    groups: dict[tuple[str, str], list[Question]] = {}
    for q in sorted(chosen, key=lambda q: (q.repo, q.created_at, q.qid)):
        groups.setdefault((q.repo, q.base_commit), []).append(q)
    return [(repo, commit, qs) for (repo, commit), qs in groups.items()]


def run(
    split: str = "test",
    mode: str = "none",
    json_path: Path | None = None,
    semble: bool = False,
    repos: Sequence[str] = (),
    limit: int = 0,
    mirrors: Path = MIRRORS,
    cache: Path = CACHE,
    log: Callable[[str], None] = print,
    tries: Sequence[tuple[str, Ranking]] = (),
    resume: Path | None = None,
) -> dict[str, list[LongScore]]:
    fresh = split == qmod.FRESH_SPLIT  # fresh.jsonl, the held-out set measured once
    questions, problems = qmod.load(qmod.FRESH if fresh else qmod.DATA)
    problems += qmod.validate(questions, None, fresh)  # every row by the rules, offline
    chosen = [q for q in questions if q.split == split and (not repos or q.repo in repos)]
    if limit:
        chosen = chosen[:limit]
    problems += qmod.against_mirrors(chosen, mirrors)  # the mirrors of the questions asked
    if problems:
        raise SystemExit(f"questions: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    semble_python = None
    if semble:
        from bench.eval.files.semble_row import semble_python as make_semble

        semble_python = make_semble(cache.parent / "semble")
    embedder = local_embedder() if mode == "hybrid" else None
    product = MODES[mode]
    variants = [(f"{product} {name}", ranking) for name, ranking in tries]
    systems = [product, *(v for v, _ in variants), BM25, *([SEMBLE] if semble else [])]
    db = open_database(prepare_dirs(cache))
    started = time.perf_counter()
    # Per question: each row's files, and the targets not in the index.
    answers, missing, commits = load_progress(resume, split, mode, systems)
    try:
        current, plain = "", FileBM25()
        for n, (repo, commit, asked) in enumerate(by_commit(chosen), 1):
            if all(q.qid in answers for q in asked):
                print(f"  [{n}] {repo} {commit[:10]}: answered in {resume}", file=sys.stderr)
                continue
            if repo != current:
                current, plain = repo, FileBM25()
            t0 = time.perf_counter()
            tree = materialise(Mirror.find(repo, mirrors), commit, cache / "trees")
            project = project_for(repo, mode, tree.path)
            report = sweep_project(db, project, embedder, SweepOptions(defer_vectors=False))
            chunks = analyze(db, project)
            swept = time.perf_counter() - t0
            files = {path for _, path in indexed_files(db, project)}
            plain.index(tree.path, files)
            semble_files = (
                semble_answers(semble_python, tree.path, asked, cache / "semble")
                if semble_python
                else {}
            )
            for q in asked:
                text = q.text[:QUERY_CHARS]
                hits = search_code(db, project, embedder, text, top_k=K)
                answers[q.qid] = {product: [h.path for h in hits], BM25: plain.search(text, K)}
                for variant, ranking in variants:
                    tried = search_code(db, project, embedder, text, top_k=K, ranking=ranking)
                    answers[q.qid][variant] = [h.path for h in tried]
                if semble_python:
                    answers[q.qid][SEMBLE] = semble_files[q.qid]
                missing[q.qid] = [t for t in q.targets if t not in files]
            commits.append(
                {
                    "repo": repo, "commit": commit, "files": len(files), "chunks": chunks,
                    "tree_files": tree.files, "written": tree.written, "removed": tree.removed,
                    "refused": tree.refused, "absent": tree.absent, "failed": report.files_failed,
                    "chunks_embedded": report.chunks_embedded, "seconds": round(swept, 1),
                }
            )  # fmt: skip
            save_progress(resume, split, mode, systems, answers, missing, commits)
            print(
                f"  [{n}] {repo} {commit[:10]}: {len(files)} files, {chunks} chunks, "
                f"{tree.written} written, {report.files_failed} failed, swept in {swept:.0f} s",
                file=sys.stderr,
                flush=True,
            )
    finally:
        db.close()
    scores = {s: [score(answers[q.qid][s], q.targets) for q in chosen] for s in systems}
    log(
        f"\n# long-question eval, {split} split: {len(chosen)} questions, "
        f"{len({q.repo for q in chosen})} repositories, {len(commits)} commits; mode {mode}; "
        f"query the issue's first {QUERY_CHARS} characters, top_k {K}, one hit per file; "
        f"{time.perf_counter() - started:.0f} s"
    )
    absent = [f"{q.qid}: {t}" for q in chosen for t in missing.get(q.qid, [])]
    if absent:
        log(f"\n{len(absent)} target file(s) are not in the index: " + ", ".join(absent))
    log("\n" + summary_table(scores))
    log("\n" + paired(scores, product, BM25))
    for variant, _ in variants:
        log("\n" + paired(scores, variant, product))
    langs = [q.language for q in chosen]
    log(f"\n## every target among the first 5 files, per language ({split})\n")
    log(group_table(scores, langs, "language", lambda s: s.all_at[AT.index(5)]))
    log(f"\n## MRR@{K}, per language ({split})\n")
    log(group_table(scores, langs, "language", lambda s: s.mrr))
    if json_path is not None:
        write_json(json_path, split, mode, chosen, answers, scores, commits)
        log(f"\nper-question results: {json_path}")
    return scores


def summary_table(scores: dict[str, list[LongScore]]) -> str:
    at = " | ".join(f"all@{k}" for k in AT)
    lines = [f"| system | n | {at} | MRR@{K} |", "|---|---:|" + "---:|" * (len(AT) + 1)]
    for system, per_q in scores.items():
        s = Summary.of(per_q)
        cells = " | ".join(f"{v:.3f}" for v in s.all_at)
        lines.append(f"| {system} | {s.n} | {cells} | {s.mrr:.3f} |")
    return "\n".join(lines)


def group_table(
    scores: dict[str, list[LongScore]],
    labels: Sequence[str],
    title: str,
    metric: Callable[[Summary], float],
) -> str:
    systems = list(scores)
    lines = [
        f"| {title} | n | " + " | ".join(systems) + " |",
        "|---|---:|" + "---:|" * len(systems),
    ]
    for group in [*sorted(set(labels)), "all"]:
        idx = [i for i, label in enumerate(labels) if group in ("all", label)]
        cells = [f"{metric(Summary.of([scores[s][i] for i in idx])):.3f}" for s in systems]
        lines.append(f"| {group} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired(scores: dict[str, list[LongScore]], a: str, b: str, seed: int = 0) -> str:
    """`a` against `b` question by question on the reciprocal rank of the first target."""
    diff = np.array([x.rr - y.rr for x, y in zip(scores[a], scores[b], strict=True)])
    if not len(diff):
        return f"{a} vs {b}: no questions"
    lo, hi = bootstrap(diff, seed)
    return (
        f"{a} vs {b}: MRR@{K} difference {diff.mean():+.3f} (95% bootstrap {lo:+.3f} to "
        f"{hi:+.3f}); better on {int((diff > 0).sum())}, worse on {int((diff < 0).sum())}, "
        f"tied on {int((diff == 0).sum())} of {len(diff)} questions"
    )


def write_json(
    path: Path,
    split: str,
    mode: str,
    chosen: Sequence[Question],
    answers: dict[str, dict[str, list[str]]],
    scores: dict[str, list[LongScore]],
    commits: list[dict[str, Any]],
) -> None:
    rows = []
    for i, q in enumerate(chosen):
        systems = {
            s: {
                "files": distinct(answers[q.qid][s])[:K],
                "first": scores[s][i].first,
                "all_at": dict(zip(map(str, AT), scores[s][i].all_at, strict=True)),
            }
            for s in scores
        }
        rows.append(
            {
                "id": q.qid, "repo": q.repo, "language": q.language, "split": q.split,
                "targets": list(q.targets), "systems": systems,
            }
        )  # fmt: skip
    out = {
        "split": split,
        "mode": mode,
        "query_chars": QUERY_CHARS,
        "top_k": K,
        "machine": platform.node(),
        "summary": {s: Summary.of(v).__dict__ for s, v in scores.items()},
        "commits": commits,
        "questions": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


Answers = dict[str, dict[str, list[str]]]  # per question, each row's files


def load_progress(
    path: Path | None, split: str, mode: str, systems: Sequence[str]
) -> tuple[Answers, dict[str, list[str]], list[dict[str, Any]]]:
    """The answers, missing targets and commits a run stopped with (`--resume`), or none."""
    if path is None or not path.exists():
        return {}, {}, []
    data = json.loads(path.read_text())
    if (data["split"], data["mode"], data["systems"]) != (split, mode, list(systems)):
        raise SystemExit(
            f"{path}: the answers of another run (its split, mode or rows differ): "
            "remove it or name another file"
        )
    return data["answers"], data["missing"], data["commits"]


def save_progress(
    path: Path | None,
    split: str,
    mode: str,
    systems: Sequence[str],
    answers: Answers,
    missing: dict[str, list[str]],
    commits: list[dict[str, Any]],
) -> None:
    """Keep the answers so far in `path` (written whole, then moved into place)."""
    if path is None:
        return
    data: dict[str, Any] = {"split": split, "mode": mode, "systems": list(systems)}
    data |= {"answers": answers, "missing": missing, "commits": commits}
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, ensure_ascii=False) + "\n")
    part.replace(path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=(*qmod.SPLITS, qmod.FRESH_SPLIT), default="test")
    ap.add_argument("--mode", choices=tuple(MODES), default="none")
    ap.add_argument("--json", type=Path, default=None, help="write per-question results here")
    ap.add_argument("--semble", action="store_true", help="also semble's ranking, no model")
    ap.add_argument("--repo", action="append", default=[], help="this repository only (again)")
    ap.add_argument("--limit", type=int, default=0, help="the first N questions only")
    ap.add_argument("--mirrors", type=Path, default=MIRRORS, help="the repositories' mirrors")
    ap.add_argument("--cache", type=Path, default=CACHE, help="trees, database, work files")
    ap.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="FILE",
        help="keep the answers here as each commit is done; go on from them if present",
    )
    ap.add_argument(
        "--try",
        dest="tries",
        action="append",
        default=[],
        metavar="NAME:key=value,...",
        help="also the product with these Ranking fields changed (again for more)",
    )
    args = ap.parse_args(argv)
    from bench.eval.run import ranking_of

    tries = [
        (name, ranking_of(fields)) for name, _, fields in (t.partition(":") for t in args.tries)
    ]
    run(
        args.split, args.mode, args.json, args.semble, args.repo, args.limit, args.mirrors,
        args.cache, tries=tries, resume=args.resume,
    )  # fmt: skip


if __name__ == "__main__":
    main()
