"""Long queries on one real index: what a 2,000-character report costs beside a short question,
and whether it gets as many hits as it asks for.

Index: one repository of the long-question eval (bench/eval/long: its bare mirror, `--repo`,
default astral-sh/ruff, about 27,000 chunks) written at one commit (`--commit`, default its
eval questions' latest base) and swept by the real sweep into an embedded PostgreSQL under
`bench/.cache/long-bench`: rows only (`--mode none`) or with vectors (`--mode hybrid`). As in
bench/search_bench.py, the hybrid index's vectors come from the bundled model on each text's
first `--tokens` word pieces (default 32: the model's own vectors, from less text, so that
27,000 chunks index in minutes on two cores; what a query costs does not depend on how much of
each chunk made its vector), and every query is embedded whole by the model, as served.

With `--corpus packages` the index is instead the search benchmark's corpus at its scale
(bench/sweep_bench.py's installed Python packages: about 5,800 files and 81,000 chunks), swept
the same way into the same database: what a report costs where the index is three times
ruff's.

Queries: long, the first 2,000 characters of every issue of the long eval
(all splits: only their length and shape matter here; none is scored); short, the file-level
eval's questions. The two kinds are asked interleaved, `--rounds` times each, through
`search_code` in this process (no HTTP: docs/performance.md has the server's own overhead),
top_k 10 by file, the default ranking.

Reported per kind: p50, p95 and max latency, and the ratio of the medians; the reports also
read as written (the ranking with `long_query_chars = 0`), for the record. Then every report is
asked once more for `--hits` hits (default 20), both ways: how many answers hold fewer, and
for each of those, how many files of the index hold any of the terms the keyword side read.

    .venv/bin/python -m bench.long_query_bench                      # model-free
    .venv/bin/python -m bench.long_query_bench --mode hybrid
    .venv/bin/python -m bench.long_query_bench --repo astral-sh/ruff --rounds 5
    .venv/bin/python -m bench.long_query_bench --corpus packages --mode hybrid
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from bench import machine
from bench.eval.files.index import prepare_dirs
from bench.eval.files.product import (
    Project,
    Root,
    SweepOptions,
    analyze,
    local_embedder,
    open_database,
    search_code,
    sweep_project,
)
from bench.eval.files.questions import load_questions
from bench.eval.long import questions as qmod
from bench.eval.long.trees import MIRRORS, Mirror, materialise
from bench.sweep_bench import CORPUS
from bench.sweep_bench import project as packages_project
from indexer import lexical
from indexer.search.fusion import DEFAULT_RANKING, Ranking
from indexer.search.reading import read_query

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / ".cache" / "long-bench"
QUERY_CHARS = 2000
# A report read as any query is (before `reading.py`): beside the default, for the record.
AS_WRITTEN = replace(DEFAULT_RANKING, long_query_chars=0)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def row(kind: str, seconds: list[float], base: float | None = None) -> str:
    ms = [s * 1000 for s in seconds]
    p50 = percentile(ms, 0.5)
    ratio = f"{p50 / base:.2f}" if base else "1.00"
    return (
        f"| {kind} | {len(ms)} | {p50:.1f} | {percentile(ms, 0.95):.1f} | {max(ms):.1f} | {ratio} |"
    )


def files_matching(db: object, schema: str, terms: list[str]) -> int:
    """Files of the index with a chunk holding any of `terms`."""
    from psycopg import sql as pgsql

    query = " | ".join(lexical.tsquery_term(t) for t in terms)
    statement = pgsql.SQL(
        "SELECT count(DISTINCT file_id) FROM {} WHERE tsv @@ to_tsquery('simple', %s)"
    ).format(pgsql.Identifier(schema, "rag_chunk"))
    with db.connection("counting matching files") as conn:  # type: ignore[attr-defined]
        found = conn.execute(statement, (query,)).fetchone()
        conn.rollback()
    return int(found[0]) if found else 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default="astral-sh/ruff")
    ap.add_argument("--commit", default="", help="default: its questions' latest base commit")
    ap.add_argument("--mode", choices=("none", "hybrid"), default="none")
    ap.add_argument("--rounds", type=int, default=3, help="times each query is asked")
    ap.add_argument("--hits", type=int, default=20, help="hits asked for in the count")
    ap.add_argument("--tokens", type=int, default=32, help="hybrid: word pieces per chunk")
    ap.add_argument(
        "--corpus",
        choices=("repo", "packages"),
        default="repo",
        help="the index: --repo at one commit, or the search benchmark's packages (81k chunks)",
    )
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args(argv)

    questions, problems = qmod.load()
    if problems:
        raise SystemExit("questions: " + "; ".join(problems))
    own = sorted((q for q in questions if q.repo == args.repo), key=lambda q: q.created_at)
    if not own and not args.commit:
        raise SystemExit(f"{args.repo}: no question of the long eval; give --commit")
    commit = args.commit or own[-1].base_commit
    long_texts = [q.text[:QUERY_CHARS] for q in questions]
    short_texts = [q.text for q in load_questions()[0]]

    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    embedder = None
    if args.mode == "hybrid":
        import numpy as np

        from bench.search_bench import FirstWindowEmbedder

        embedder = FirstWindowEmbedder(local_embedder(), args.tokens, float("inf"), np.zeros(0))
    db = open_database(prepare_dirs(args.cache))
    try:
        if args.corpus == "packages":
            name = "long_bench_packages_" + args.mode
            project = packages_project(name, CORPUS)
            what = "the packages " + ", ".join(CORPUS)
        else:
            tree = materialise(Mirror.find(args.repo, args.mirrors), commit, args.cache / "trees")
            name = "long_bench_" + args.repo.split("/")[1].replace("-", "_") + "_" + args.mode
            project = Project(name, (Root(tree.path, args.repo.split("/")[1]),))
            what = f"{args.repo} at {commit[:10]}"
        t0 = time.perf_counter()
        report = sweep_project(db, project, embedder, SweepOptions(defer_vectors=False))
        chunks = analyze(db, project)
        print(
            f"index: {what}, {report.files_seen} files, {chunks} chunks, mode "
            f"{args.mode} (swept in {time.perf_counter() - t0:.0f} s, "
            f"{report.files_failed} failed)"
        )
        print(
            f"queries: {len(long_texts)} long (median {statistics.median(map(len, long_texts)):.0f}"
            f" characters), {len(short_texts)} short (median "
            f"{statistics.median(map(len, short_texts)):.0f}); {args.rounds} rounds, interleaved"
        )

        def ask(
            text: str, top_k: int = 10, ranking: Ranking = DEFAULT_RANKING
        ) -> tuple[float, int]:
            started = time.perf_counter()
            hits = search_code(db, project, embedder, text, top_k=top_k, ranking=ranking)
            return time.perf_counter() - started, len(hits)

        for text in long_texts[:5] + short_texts[:5]:
            ask(text)  # warm: caches, the model's first run
        times: dict[str, list[float]] = {"long": [], "as written": [], "short": []}
        for _ in range(args.rounds):
            n = max(len(long_texts), len(short_texts))
            for i in range(n):
                if i < len(long_texts):
                    times["long"].append(ask(long_texts[i])[0])
                    times["as written"].append(ask(long_texts[i], ranking=AS_WRITTEN)[0])
                if i < len(short_texts):
                    times["short"].append(ask(short_texts[i])[0])
        base = percentile([s * 1000 for s in times["short"]], 0.5)
        print("\n| queries | asked | p50 ms | p95 ms | max ms | p50 × short |")
        print("|---|---:|---:|---:|---:|---:|")
        print(row("short questions", times["short"]))
        print(row(f"reports, first {QUERY_CHARS} characters", times["long"], base))
        print(row("the same, read as written", times["as written"], base))

        for label, ranking in (("read as reports", DEFAULT_RANKING), ("as written", AS_WRITTEN)):
            short_answers = []
            for text in long_texts:
                _, count = ask(text, args.hits, ranking)
                if count < args.hits:
                    terms = lexical.query_terms(read_query(text, ranking).text)
                    short_answers.append((count, files_matching(db, name, terms)))
            print(
                f"\nasked for {args.hits} hits, {label}: {len(long_texts) - len(short_answers)} "
                f"of {len(long_texts)} reports got {args.hits}"
            )
            for count, matching in short_answers:
                print(f"  {count} hits; files holding a term the keyword side read: {matching}")
    finally:
        db.close()
        if embedder is not None:
            embedder.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
