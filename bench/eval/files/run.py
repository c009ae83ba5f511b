"""The file-level eval: which files code-rag's first 10 hits name, for questions agents ask.

The corpus (corpus.py) is indexed through the real sweep as one project, one root per library
(index.py); the questions (questions.py) are validated before anything is asked. Each question
is asked in its library only (`repo=`) through the product's `search_code`, top_k 10, in its
three modes (hybrid is the default) one hit per file as it serves them, and as hybrid a hit per
chunk (`by_file=False`), and of the plain baseline of `bench/eval/baseline.py`
(fixed line windows of the same files; BM25, vectors, and the two fused by unweighted RRF),
built over the question's library alone. Scored per score.py: NDCG@10 of the target files
(primary and secondary, gain 1 each, a file counted at its first hit), Hit@1, Hit@5 and MRR of
the first target file, and the distinct files per 10 hits; printed overall, per language and
per kind. `--json` keeps every query's hits (the 10 scored, and a deeper list of --depth) so
ranking levers can be replayed offline.

The unseen split (`--split unseen`: the libraries of corpus-unseen.json, which no lever or
weight is chosen on) is indexed as a project of its own, holding those libraries only; tune,
test and `all` (tune and test) ask the project of the other libraries. The keyword side's
term statistics are per project, so neither part's figures depend on the other's libraries.

    .venv/bin/python -m bench.eval.files.run                        # the test split
    .venv/bin/python -m bench.eval.files.run --split tune --json bench/.cache/files/tune.json
    .venv/bin/python -m bench.eval.files.run --split unseen         # after a lever is chosen
    .venv/bin/python -m bench.eval.files.model_free                # no model at all
    .venv/bin/python -m bench.eval.files.run --whole-pass  # vectors pooled from a pass per file

A first run embeds every chunk of the corpus and every baseline window (tens of minutes on a
few cores); later runs reuse the index, the window vectors and the query vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.eval.baseline import PlainBaseline, corpus_windows, window_vectors
from bench.eval.compare import bootstrap, hit_row
from bench.eval.files import questions as questions_module
from bench.eval.files.corpus import CACHE, UNSEEN, Corpus
from bench.eval.files.index import ensure_index, open_index, project_for
from bench.eval.files.product import (
    CHUNK_VECTORS,
    CHUNK_VECTORS_WHOLE,
    DEFAULT_CHUNK_VECTORS,
    Project,
    indexed_files,
    local_embedder,
    search_code,
)
from bench.eval.files.questions import Question
from bench.eval.files.score import K, QueryScore, Summary, rank_files, score
from bench.eval.whole_pass import PASS_CHOICES, PASS_HEADER
from bench.eval.whole_pass import ensure_index as ensure_pass_index

# Each code-rag system: its mode, and whether it asks for one hit per file (the default).
CODE_RAG = {
    "code-rag hybrid": ("hybrid", True),
    "code-rag hybrid, by chunk": ("hybrid", False),
    "code-rag keyword": ("keyword", True),
    "code-rag vector": ("vector", True),
}
PLAIN = {"plain hybrid (RRF)": "hybrid", "plain BM25": "keyword", "plain vector": "vector"}
SYSTEMS = (*CODE_RAG, *PLAIN)
PRODUCT, BASELINE = "code-rag hybrid", "plain hybrid (RRF)"
DEFAULT_DEPTH = 50  # hits kept for offline replay (search_code's most)


class CachedQueries:
    """The real model, its query vectors kept on disk per model (so a rerun asks the search,
    not the model); documents go straight to the model."""

    def __init__(self, model: Any, cache: Path) -> None:
        self.model = model
        key = hashlib.sha256(json.dumps(model.identity.to_dict(), sort_keys=True).encode())
        self.path = cache / f"query-vectors-{key.hexdigest()[:12]}.npz"
        self.stored: dict[str, np.ndarray] = {}
        self.added = 0
        if self.path.is_file():
            with np.load(self.path) as data:
                pairs = zip(data["texts"], data["vectors"], strict=True)
                self.stored = {str(t): v for t, v in pairs}

    @property
    def identity(self) -> Any:
        return self.model.identity

    def embed_query(self, text: str) -> list[float]:
        if text not in self.stored:
            self.stored[text] = np.asarray(self.model.embed_query(text), dtype=np.float32)
            self.added += 1
        return [float(x) for x in self.stored[text]]

    def embed_documents(self, texts: Sequence[str], labels: Sequence[str] | None = None) -> Any:
        return self.model.embed_documents(texts, labels)

    def close(self) -> None:
        self.model.close()

    def save(self) -> None:
        if self.added:
            texts = list(self.stored)
            vectors = np.stack([self.stored[t] for t in texts])
            np.savez(self.path, texts=np.array(texts), vectors=vectors)
            self.added = 0


def baselines(model: Any, corpus: Corpus, repos: set[str], cache: Path) -> dict[str, PlainBaseline]:
    """The plain baseline over each library in `repos`, its own windows only."""
    libs = [lib for lib in corpus.libraries if lib.name in repos]
    files = [(lib.name, rel, corpus.root / lib.name / rel) for lib in libs for rel in lib.files]
    windows = corpus_windows(files)
    vectors = window_vectors(model, windows, cache)
    out = {}
    for lib in libs:
        at = [i for i, w in enumerate(windows) if w.repo == lib.name]
        out[lib.name] = PlainBaseline([windows[i] for i in at], vectors[at])
    print(f"  baseline: {len(windows)} windows over {len(libs)} libraries", file=sys.stderr)
    return out


def ask(
    db: Any,
    project: Project,
    embedder: CachedQueries,
    plain: dict[str, PlainBaseline],
    q: Question,
    depth: int,
) -> dict[str, dict[str, Any]]:
    """Every system's hits for one question: the K scored (`files`, one per hit) and, with a
    depth above K, a deeper list (`deep`, rows) for replay."""
    out: dict[str, dict[str, Any]] = {}
    for system, (mode, by_file) in CODE_RAG.items():
        asked = partial(search_code, db, project, embedder, q.text, repo=q.repo, mode=mode)
        hits = asked(top_k=K, by_file=by_file)
        entry: dict[str, Any] = {"files": [h.path for h in hits]}
        if depth > K:
            deep = asked(top_k=depth, by_file=by_file)
            entry["deep"] = [hit_row(h) for h in deep]
        out[system] = entry
    vector = np.asarray(embedder.embed_query(q.text), dtype=np.float32)
    for system, mode in PLAIN.items():
        rows = plain[q.repo].search(q.text, vector, max(K, depth), mode)
        entry = {"files": [r["path"] for r in rows[:K]]}
        if depth > K:
            entry["deep"] = rows
        out[system] = entry
    return out


def summary_table(scores: dict[str, list[QueryScore]]) -> str:
    lines = [
        f"| system | n | NDCG@{K} | Hit@1 | Hit@5 | MRR@{K} | files per {K} hits |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for system, per_query in scores.items():
        s = Summary.of(per_query)
        lines.append(
            f"| {system} | {s.n} | {s.ndcg:.3f} | {s.hit1:.3f} | {s.hit5:.3f} | {s.mrr:.3f} | "
            f"{s.files:.1f} |"
        )
    return "\n".join(lines)


def group_table(
    scores: dict[str, list[QueryScore]], labels: Sequence[str], title: str, metric: str = "ndcg"
) -> str:
    """`metric` per group of queries (`labels[i]`: query i's group) and system."""
    systems = list(scores)
    lines = [
        f"| {title} | n | " + " | ".join(systems) + " |",
        "|---|---:|" + "---:|" * len(systems),
    ]
    for group in [*sorted(set(labels)), "all"]:
        idx = [i for i, label in enumerate(labels) if group in ("all", label)]
        cells = [f"{getattr(Summary.of([scores[s][i] for i in idx]), metric):.3f}" for s in systems]
        lines.append(f"| {group} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired(scores: dict[str, list[QueryScore]], a: str, b: str, seed: int = 0) -> str:
    """`a` against `b` query by query on NDCG@10: mean difference, a 95% bootstrap interval,
    and how many queries each does better on."""
    diff = np.array([x.ndcg - y.ndcg for x, y in zip(scores[a], scores[b], strict=True)])
    if not len(diff):
        return f"{a} vs {b}: no queries"
    lo, hi = bootstrap(diff, seed)
    return (
        f"{a} vs {b}: NDCG@{K} difference {diff.mean():+.3f} (95% bootstrap {lo:+.3f} to "
        f"{hi:+.3f}); better on {int((diff > 0).sum())}, worse on {int((diff < 0).sum())}, "
        f"tied on {int((diff == 0).sum())} of {len(diff)} queries"
    )


def missing_targets(db: Any, project: Project, chosen: Sequence[Question]) -> list[str]:
    """Target files (repo/path) of the chosen questions that the sweep did not index."""
    indexed = indexed_files(db, project)
    wanted = {(q.repo, path) for q in chosen for path in q.targets}
    return sorted(f"{repo}/{path}" for repo, path in wanted - indexed)


def run(
    split: str = "test",
    limit: int = 0,
    depth: int = DEFAULT_DEPTH,
    json_path: Path | None = None,
    cache: Path = CACHE,
    model_dir: str | None = None,
    folder: Path = questions_module.HERE,
    lenient: bool = False,
    log: Callable[[str], None] = print,
    document_tokens: int = 0,
    chunk_vectors: str | None = None,
    whole_pass: str | None = None,
) -> dict[str, list[QueryScore]]:
    """The eval as `main` runs it; with `whole_pass` (a variant of `whole_pass.PASS_CHOICES`),
    of an index of its own whose vectors are pooled from one pass of the model over each
    file (bench/eval/whole_pass.py)."""
    if whole_pass and (document_tokens or chunk_vectors is not None):
        raise SystemExit("a whole pass reads whole files: drop document_tokens/chunk_vectors")
    questions, whole = questions_module.ensure_valid(cache, folder, lenient)
    unseen = split == UNSEEN
    chosen = [q for q in questions if (q.split == UNSEEN) == unseen and split in ("all", q.split)]
    if limit:
        chosen = chosen[:limit]
    corpus = whole.part(unseen)
    # Queries, and a whole pass (which pools whole texts' vectors), take the model as it
    # reads whole texts; the index under test, as [embedding] says (the product's default).
    model = local_embedder(model_dir, chunk_vectors=CHUNK_VECTORS_WHOLE)
    chunk_vectors = chunk_vectors or DEFAULT_CHUNK_VECTORS
    indexing = local_embedder(model_dir, document_tokens, chunk_vectors)
    embedder = CachedQueries(indexing, cache)
    db = open_index(cache)
    try:
        part = UNSEEN if unseen else ""
        project = project_for(corpus, model_dir, part, document_tokens, chunk_vectors)
        if whole_pass:
            project, manifest = ensure_pass_index(
                db,
                project,
                model,
                corpus.digest,
                cache,
                variant=whole_pass,
                describe={"libraries": len(corpus.libraries)},
            )
        else:
            manifest = ensure_index(db, project, indexing, corpus, cache)
        plain = baselines(model, corpus, {q.repo for q in chosen}, cache)
        absent = missing_targets(db, project, chosen)
        started = time.perf_counter()
        results: list[dict[str, dict[str, Any]]] = []
        for i, q in enumerate(chosen, 1):
            results.append(ask(db, project, embedder, plain, q, depth))
            if i % 20 == 0 or i == len(chosen):
                embedder.save()
                print(f"\r  asked {i}/{len(chosen)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        embedder.save()
        scores = {
            s: [score(r[s]["files"], q.targets) for q, r in zip(chosen, results, strict=True)]
            for s in SYSTEMS
        }
        log(
            f"\n# file-level eval: {len(corpus.libraries)} libraries, {manifest['files']} files, "
            f"{manifest['chunks']} code-rag chunks; {len(questions)} questions "
            f"({sum(q.split == 'tune' for q in questions)} tune, "
            f"{sum(q.split == 'test' for q in questions)} test, "
            f"{sum(q.split == UNSEEN for q in questions)} {UNSEEN}); model "
            f"{indexing.identity.describe()}; asked in {time.perf_counter() - started:.0f} s"
            + (f"; vectors from one pass per file ({whole_pass})" if whole_pass else "")
        )
        if absent:
            shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
            log(
                f"\n{len(absent)} target file(s) of these questions are not in the index (the "
                f"sweep skipped them): {shown}"
            )
        log(f"\n## {split} split, {len(chosen)} questions, top_k {K}, one library per question\n")
        log(summary_table(scores))
        log("\n" + paired(scores, PRODUCT, BASELINE))
        log("\n" + paired(scores, PRODUCT, "plain BM25"))
        log(f"\n## NDCG@{K} per kind ({split} split)\n")
        log(group_table(scores, [q.kind for q in chosen], "kind"))
        log(f"\n## NDCG@{K} per language ({split} split)\n")
        log(group_table(scores, [q.language for q in chosen], "language"))
        log(f"\n## Hit@5 per language ({split} split)\n")
        log(group_table(scores, [q.language for q in chosen], "language", "hit5"))
        if json_path is not None:
            write_json(json_path, split, manifest, chosen, results, scores, depth)
            log(f"\nper-query results: {json_path}")
    finally:
        db.close()
    return scores


def question_rows(
    chosen: Sequence[Question],
    results: Sequence[dict[str, dict[str, Any]]],
    scores: dict[str, list[QueryScore]],
    systems: Sequence[str],
) -> list[dict[str, Any]]:
    """Each question as the per-query JSON holds it: its fields, and per system its hits and
    scores."""
    rows = []
    for i, (q, r) in enumerate(zip(chosen, results, strict=True)):
        answers = {}
        for s in systems:
            sc = scores[s][i]
            answers[s] = {
                **r[s],
                "ranked_files": rank_files(r[s]["files"]),
                "ndcg": round(sc.ndcg, 6),
                "first": sc.first,
                "distinct_files": sc.files,
            }
        rows.append(
            {
                "id": q.qid, "language": q.language, "kind": q.kind, "repo": q.repo,
                "split": q.split, "query": q.text, "primary": list(q.primary),
                "secondary": list(q.secondary), "systems": answers,
            }
        )  # fmt: skip
    return rows


def write_json(
    path: Path,
    split: str,
    manifest: dict,
    chosen: Sequence[Question],
    results: Sequence[dict[str, dict[str, Any]]],
    scores: dict[str, list[QueryScore]],
    depth: int,
) -> None:
    """Every question with each system's files per hit (`files`, the K scored), its deeper
    hits (`deep`, rows with lines, symbol and score) and its scores."""
    queries = question_rows(chosen, results, scores, SYSTEMS)
    out = {
        "split": split,
        "top_k": K,
        "depth": depth,
        "index": manifest,
        "systems": {
            s: {"mode": m, "by_file": f, "by": "search_code"} for s, (m, f) in CODE_RAG.items()
        }
        | {s: {"mode": m, "by": "bench/eval/baseline.py"} for s, m in PLAIN.items()},
        "summary": {s: Summary.of(v).__dict__ for s, v in scores.items()},
        "questions": queries,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


def parser(description: str) -> argparse.ArgumentParser:
    """The options this eval and its model-free twin (model_free.py) share."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(
        "--split",
        choices=("test", "tune", "all", UNSEEN),
        default="test",
        help=f"all: tune and test; {UNSEEN}: the libraries nothing is tuned on, indexed apart",
    )
    ap.add_argument("--limit", type=int, default=0, help="the first N questions only")
    ap.add_argument("--json", type=Path, default=None, help="write per-query results here")
    ap.add_argument(
        "--depth", type=int, default=DEFAULT_DEPTH, help=f"hits kept for replay ({K} to 50)"
    )
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--model", default=None, help="a local model folder (default: the bundled)")
    ap.add_argument("--data", type=Path, default=questions_module.HERE, help="the data folder")
    ap.add_argument(
        "--document-tokens",
        type=int,
        default=0,
        help="embed each text's first N tokens ([embedding] document_tokens; 0: whole texts)",
    )
    ap.add_argument(
        "--chunk-vectors",
        choices=CHUNK_VECTORS,
        default=None,
        help="[embedding] chunk_vectors (default: the product's)",
    )
    ap.add_argument(
        "--lenient",
        action="store_true",
        help="go on without refused libraries and faulty questions (saying which)",
    )
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument(
        "--whole-pass",
        nargs="?",
        const=PASS_HEADER,
        choices=PASS_CHOICES,
        default=None,
        help="ask an index whose vectors are pooled from one pass of the model over each file "
        "(bench/eval/whole_pass.py), in a project of its own; bare: no header in the pass",
    )
    args = ap.parse_args(argv)
    if not K <= args.depth <= 50:
        ap.error(f"--depth must be from {K} to 50")
    if args.whole_pass and (args.document_tokens or args.chunk_vectors is not None):
        ap.error("--whole-pass reads whole files: drop --document-tokens/--chunk-vectors")
    run(
        args.split,
        args.limit,
        args.depth,
        args.json,
        args.cache,
        args.model,
        args.data,
        args.lenient,
        document_tokens=args.document_tokens,
        chunk_vectors=args.chunk_vectors,
        whole_pass=args.whole_pass,
    )


if __name__ == "__main__":
    main()
