"""The keyword side at ~100k chunks: latency of each keyword ranker on a scaled-up copy.

The eval index (built by run.py) is copied 40 times over into one project (~97k chunks, the
same term distribution, no vectors), analysed, and the eval's test queries are run through the
keyword side alone: the first version (one OR query over every term, ts_rank_cd over all
matches) against the idf ranker with several match budgets. The idf ranker without a budget is
left out: it ranks most of the table with every term, tens of seconds on some queries. Run
run.py once first.

    .venv/bin/python -m bench.eval.keyword_scale
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from psycopg import sql as pgsql

from bench.eval.index import CACHE, copy_project, open_database, prepare_dirs
from indexer import lexical
from indexer.db import Conn, Schema, store
from indexer.search.fusion import DEFAULT_RANKING, Ranking
from indexer.search.keyword import TermStats, keyword_candidates, keyword_plan, read_term_stats

COPIES = 40
SOURCE = Schema("eval_chunker")
SCALED = Schema("eval_scaled")


def build(conn: Conn, copies: int) -> int:
    copy_project(conn, SOURCE, SCALED, ())
    src_file, src_chunk = SOURCE.table("rag_file"), SOURCE.table("rag_chunk")
    dst_file, dst_chunk = SCALED.table("rag_file"), SCALED.table("rag_chunk")
    conn.execute(
        pgsql.SQL(
            "INSERT INTO {} (id, repo, path, size, mtime_ns, sha256, language, chunk_count) "
            "SELECT f.id * 1000 + g, f.repo, 'copy' || g || '/' || f.path, f.size, f.mtime_ns, "
            "f.sha256, f.language, f.chunk_count FROM {} f, generate_series(1, %(n)s) g"
        ).format(dst_file, src_file),
        {"n": copies},
    )
    conn.execute(
        pgsql.SQL(
            "INSERT INTO {} (file_id, ordinal, start_line, end_line, symbol, kind, content, "
            "content_sha256, embedding, tsv) SELECT c.file_id * 1000 + g, c.ordinal, c.start_line, "
            "c.end_line, c.symbol, c.kind, c.content, c.content_sha256, NULL, c.tsv "
            "FROM {} c, generate_series(1, %(n)s) g"
        ).format(dst_chunk, src_chunk),
        {"n": copies},
    )
    store.analyze_chunks(conn, SCALED)
    conn.commit()
    return store.chunk_count(conn, SCALED)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument(
        "--without-first",
        action="store_true",
        help="leave out the first version (it reads the "
        "whole table on every query, evicting the others' pages from the buffer cache)",
    )
    args = ap.parse_args()
    prepare_dirs(args.cache)
    queries = [json.loads(line) for line in (args.cache / "queries.jsonl").open()]
    queries = [q["text"] for q in queries if q["split"] == "test"][: args.queries]
    db = open_database(args.cache)
    filters = {"repo": None, "language": None, "path_re": None}
    variants = {
        "first version: OR of every term, ts_rank_cd": Ranking(
            stopwords=False, idf=False, prefix=False
        ),
        "idf ranker, budget 1,000 rows": replace(DEFAULT_RANKING, match_rows=1000),
        "idf ranker, budget 2,000 rows": replace(DEFAULT_RANKING, match_rows=2000),
        "idf ranker, budget 5,000 rows (default)": DEFAULT_RANKING,
    }
    if args.without_first:
        variants = {k: v for k, v in variants.items() if not k.startswith("first")}
    try:
        with db.connection() as conn:
            chunks = build(conn, COPIES)
            stats = read_term_stats(conn, SCALED)
            print(f"\n## keyword side alone, {chunks:,} chunks, {len(queries)} test queries\n")
            print("| keyword ranker | rows matched (median) | p50 ms | p95 ms |")
            print("|---|---:|---:|---:|")
            times: dict[str, list[float]] = {name: [] for name in variants}
            for q in queries:
                for name, ranking in variants.items():  # interleaved: shared noise
                    t = time.perf_counter()
                    with conn.transaction():
                        keyword_candidates(conn, SCALED, q, filters, ranking)
                    times[name].append((time.perf_counter() - t) * 1000)
            for name, ranking in variants.items():
                matched = [_estimate(stats, q, ranking) for q in queries]
                ms = times[name]
                print(
                    f"| {name} | {statistics.median(matched):,.0f} | "
                    f"{np.percentile(ms, 50):.1f} | {np.percentile(ms, 95):.1f} |"
                )
            store.drop_project(conn, SCALED)
            conn.commit()
    finally:
        db.close()


def _estimate(stats: TermStats, query: str, ranking: Ranking) -> float:
    words = lexical.query_terms(query, stopwords=ranking.stopwords)
    if not ranking.idf:
        return min(sum(stats.shares.get(w, stats.floor) for w in words), 1.0) * stats.rows
    return min(keyword_plan(words, stats, ranking).estimated_rows, stats.rows)


if __name__ == "__main__":
    main()
