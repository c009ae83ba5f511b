"""A group's search beside one project's, side by side: the docstring eval's corpus indexed as
one project and as N projects (`bench.eval.run --projects N` measures the quality of both), the
same queries searched both ways in turn, so both share the machine's noise.

Prints each way's latency (median and p95 over the queries, the query vectors computed ahead
so the model is not timed) and how often the group's first 10 hits name the same files in
the same order as the one project's.

    .venv/bin/python -m bench.group_bench --projects 3 --queries 300
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from bench.eval.compare import CachedQueries, query_vectors
from bench.eval.corpus import build_corpus
from bench.eval.index import (
    CACHE,
    ensure_index,
    open_database,
    prepare_dirs,
    project_for,
    split_projects,
)
from indexer.embed import make_embedder
from indexer.project import Project
from indexer.search import search_code


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--projects", type=int, default=3, help="the group's projects")
    ap.add_argument("--queries", type=int, default=300, help="test-split queries searched")
    ap.add_argument("--ef-search", type=int, default=400)
    args = ap.parse_args(argv)
    model = make_embedder("local", None)
    corpus, _ = prepare_dirs(CACHE)
    queries, digest = build_corpus(corpus)
    chosen = [q for q in queries if q.split == "test"][: args.queries]
    db = open_database(CACHE)
    try:
        one = project_for(corpus, "chunker", None, model)
        ensure_index(db, one, model, digest, "chunker", None, CACHE)
        parts = split_projects(db, one, args.projects)
        for part in parts:
            ensure_index(db, part, model, digest, "chunker", None, CACHE)
        cached = CachedQueries(
            model.identity, query_vectors(model, (q.text for q in chosen), CACHE)
        )
        took: dict[str, list[float]] = {"one project": [], f"a group of {len(parts)}": []}
        targets: list[Project | list[Project]] = [one, parts]
        same = 0
        for query in chosen:
            answers = []
            for times, target in zip(took.values(), targets, strict=True):
                started = time.perf_counter()
                hits = search_code(db, target, cached, query.text, ef_search=args.ef_search)
                times.append((time.perf_counter() - started) * 1000)
                answers.append([(h.repo, h.path) for h in hits])
            same += answers[0] == answers[1]
    finally:
        db.close()
    print(
        f"\n{len(chosen)} queries of the docstring eval's test split, top_k 10, by file, "
        f"ef_search {args.ef_search}, the two ways in turn per query\n"
    )
    print("| searched as | p50 ms | p95 ms |\n|---|---:|---:|")
    for label, times in took.items():
        print(f"| {label} | {statistics.median(times):.1f} | {_percentile(times, 0.95):.1f} |")
    print(f"\nthe same files in the same order: {same} of {len(chosen)} queries")


if __name__ == "__main__":
    main()
