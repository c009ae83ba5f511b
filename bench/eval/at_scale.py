"""Both evals at scale: their corpora among the search benchmark's ~81k chunks of real code, to
judge levers that only bind at scale (the keyword side's row budget).

The project `eval_at_scale` lives in the search benchmark's database (bench/search_index.py;
`python -m bench.search_bench build` must have built it): a copy of its index (files, chunks
with their vectors and keyword vectors, symbols, text blocks), with the docstring eval's corpus
and the questions eval's six libraries added as roots and swept with the shipped model (only
their ~3,600 chunks are embedded; the copied files are unchanged). Then each query of a split
of both evals is asked through `search_code` (hybrid, top_k 10) under each ranking variant, and
scored as the evals score (`compare.first_hit`): Hit@1/5/10 and MRR@10 per variant, with a
paired comparison to the product's ranking. The distractors' vectors are the benchmark's (the
model's, of each chunk's first 32 word pieces); the variants share them, so the comparison
between variants is paired.

    .venv/bin/python -m bench.eval.at_scale --split tune          # choose on the tuning split
    .venv/bin/python -m bench.eval.at_scale                       # then the test split
    .venv/bin/python -m bench.eval.at_scale --match-rows 5000,1000
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from psycopg import sql as pgsql

from bench import search_index
from bench.eval import sources
from bench.eval.compare import CachedQueries, Scores, first_hit, query_vectors
from bench.eval.corpus import build_corpus
from bench.eval.index import CACHE, REPO_LABEL, prepare_dirs
from bench.eval.questions import ensure_valid
from bench.eval.questions_eval import golds_of
from bench.eval.run import docstring_gold
from bench.sweep_bench import CORPUS, SITE
from chunkers import CHUNKER_VERSION
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.search.fusion import DEFAULT_RANKING
from indexer.sweep import SweepOptions, sweep_project

PROJECT = "eval_at_scale"
SCHEMA = Schema(PROJECT)
COPIED = ("rag_file", "rag_chunk", "rag_symbol", "rag_text_block", "rag_meta")
WITH_IDS = ("rag_file", "rag_chunk", "rag_symbol")


def scaled_project(
    questions_root: Path, libs: list[sources.Library], docstring_root: Path
) -> Project:
    roots = [Root(SITE / p, p) for p in CORPUS if (SITE / p).is_dir()]
    roots += [Root(questions_root / lib.name, lib.name) for lib in libs]
    roots.append(Root(docstring_root, REPO_LABEL))
    return Project(PROJECT, tuple(roots))


def copy_benchmark_index(db: Database) -> None:
    """The search benchmark's index, copied row for row into PROJECT (indexes built after)."""
    source = pgsql.Identifier(search_index.PROJECT)
    target = pgsql.Identifier(PROJECT)
    with db.connection() as conn:
        store.ensure_project(conn, SCHEMA)
        conn.commit()
        store.set_embedding_dimension(conn, SCHEMA, 384)
        store.drop_bulk_indexes(conn, SCHEMA, secondary=True)
        with conn.transaction():
            conn.execute(pgsql.SQL("DELETE FROM {}.rag_meta").format(target))
            for table in COPIED:
                conn.execute(
                    pgsql.SQL("INSERT INTO {}.{} SELECT * FROM {}.{}").format(
                        target, pgsql.Identifier(table), source, pgsql.Identifier(table)
                    )
                )
            for table in WITH_IDS:
                conn.execute(
                    pgsql.SQL(
                        "SELECT setval(pg_get_serial_sequence(%(t)s, 'id'), max(id)) FROM {}.{}"
                    ).format(target, pgsql.Identifier(table)),
                    {"t": f"{PROJECT}.{table}"},
                )
        store.build_bulk_indexes(conn, SCHEMA)
        store.analyze_chunks(conn, SCHEMA)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--match-rows", default="5000,3000,2000", help="keyword row budgets to compare")
    ap.add_argument("--ef-search", type=int, default=400)
    ap.add_argument("--split", choices=("test", "tune"), default="test")
    args = ap.parse_args()
    budgets = [int(b) for b in args.match_rows.split(",")]
    model = make_embedder("local")

    docstring_root, _ = prepare_dirs(CACHE)
    doc_queries, _digest = build_corpus(docstring_root)
    questions = ensure_valid(cache=sources.CACHE)
    libs, _digest = sources.ensure_corpus(sources.CACHE)
    questions_root, _ = prepare_dirs(sources.CACHE)
    golds = {
        "docstring": [docstring_gold(q) for q in doc_queries if q.split == args.split],
        "questions": golds_of([q for q in questions if q.split == args.split]),
    }
    vectors = {
        **query_vectors(model, (g.text for g in golds["docstring"]), CACHE),
        **query_vectors(model, (g.text for g in golds["questions"]), sources.CACHE),
    }
    cached = CachedQueries(model.identity, vectors)

    db = search_index.open_database(search_index.CACHE)
    try:
        project = scaled_project(questions_root, libs, docstring_root)
        with db.connection() as conn:
            exists = store.project_exists(conn, SCHEMA)
            chunked_by = store.get_meta(conn, SCHEMA, "chunker_version") if exists else None
        if chunked_by not in (None, CHUNKER_VERSION):
            # A sweep would re-chunk the copied benchmark files and embed them in full: hours.
            raise SystemExit(
                f"{PROJECT} was chunked by chunker version {chunked_by}, this code chunks with "
                f"version {CHUNKER_VERSION}: rebuild the benchmark's index with this chunker "
                "(python -m bench.search_bench build into a fresh --cache), then drop the schema "
                f"{PROJECT} so that it is copied again"
            )
        if not exists:
            t = time.perf_counter()
            copy_benchmark_index(db)
            print(f"copied the benchmark's index in {time.perf_counter() - t:.0f} s", flush=True)
        report = sweep_project(db, project, model, SweepOptions(defer_vectors=False))
        with db.connection() as conn:
            chunks = store.summary(conn, SCHEMA).chunks
        print(
            f"sweep: {report.files_changed:,} files changed, {report.chunks_written:,} chunks "
            f"written in {report.seconds['total']:.0f} s; {chunks:,} chunks in the project"
        )
        variants = {b: replace(DEFAULT_RANKING, match_rows=b) for b in budgets}
        for name, gold in golds.items():
            print(
                f"\n## {name} eval at scale, {args.split} split, {len(gold)} queries, hybrid, "
                "top_k 10\n"
            )
            print("| match_rows | Hit@1 | Hit@5 | Hit@10 | MRR@10 | p50 ms | p95 ms |")
            print("|---:|---:|---:|---:|---:|---:|---:|")
            scores: dict[int, Scores] = {}
            for budget, ranking in variants.items():
                s = Scores()
                for g in gold:
                    start = time.perf_counter()
                    hits = search_code(
                        db, project, cached, g.text, top_k=10, ranking=ranking,
                        ef_search=args.ef_search,
                    )  # fmt: skip
                    s.add(first_hit(hits, g), (time.perf_counter() - start) * 1000)
                scores[budget] = s
                ms = sorted(s.ms)
                p50, p95 = ms[len(ms) // 2], ms[int(0.95 * (len(ms) - 1))]
                print(
                    f"| {budget:,} | {s.hit(1):.3f} | {s.hit(5):.3f} | {s.hit(10):.3f} | "
                    f"{s.mrr():.3f} | {p50:.1f} | {p95:.1f} |",
                    flush=True,
                )
            base = scores.get(DEFAULT_RANKING.match_rows)
            for budget, s in scores.items():
                if base is None or s is base:
                    continue
                better = sum(
                    (a or 99) < (b or 99) for a, b in zip(s.ranks, base.ranks, strict=True)
                )
                worse = sum((a or 99) > (b or 99) for a, b in zip(s.ranks, base.ranks, strict=True))
                print(
                    f"match_rows {budget:,} against {DEFAULT_RANKING.match_rows:,}: "
                    f"better on {better}, worse on {worse} of {len(s.ranks)} queries"
                )
    finally:
        db.close()


if __name__ == "__main__":
    main()
