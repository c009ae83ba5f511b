"""The vector side at scale with definitions' own vectors: what the second HNSW list costs.

A definition no chunk speaks for has a vector of its own in `rag_symbol`, and the vector ranker
walks both HNSW indexes (`queries.VECTOR_CANDIDATES`). This benchmark builds, once, a project of
--chunks chunk vectors and --definitions definition vectors (the eval corpora hold 0.9 to 1.4
such definitions per chunk), each a noisy copy (cosine ≈ 0.9) of a real vector of the shipped
model from the eval indexes (`bench/eval/run.py` builds them), loaded as the bulk load does
(COPY, then both HNSW indexes built). Then, over the eval queries embedded by the default
model, it times side by side in one run, interleaved query by query, on one connection:

- "chunks only": the chunks' HNSW list alone (the vector ranker before definitions had vectors);
- "chunks + definitions": the product's statement, both lists, each chunk by its nearest vector;

reporting p50 / p95 inside the database at the product's depth (30) and ef_search (400), and
recall@10 of the product's statement against the same statement with index scans off.

    .venv/bin/python -m bench.eval.run                 # the eval indexes (model vectors)
    .venv/bin/python -m bench.vector_bench build       # ~100k + ~100k vectors, once
    .venv/bin/python -m bench.vector_bench time        # latency and recall
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from bench.eval import index as eval_index
from bench.search_bench import NO_FILTERS, figures, open_database, query_vectors
from indexer.db import ChunkRow, FileRecord, Schema, SymbolRow, bulk, queries, store
from indexer.embed.local import LocalEmbedder
from indexer.search import DEFAULT_EF_SEARCH

HERE = Path(__file__).resolve().parent

PROJECT = Schema("bench_vectors")
CACHE = HERE / ".cache" / "vectors-100k"
SOURCE = Schema("eval_chunker")  # the docstring eval's index, shipped model
NOISE_SIGMA = 0.0247  # as search_bench: cosine ≈ 0.9 to the copied vector
PER_FILE = 10
DEPTH = 30  # the product's vector depth (Ranking.vector_depth)

CHUNKS_ONLY = """
SELECT c.id, c.embedding <=> %(vector)s AS distance
  FROM {schema}.rag_chunk c
  JOIN {schema}.rag_file f ON f.id = c.file_id
 WHERE c.embedding IS NOT NULL
   AND (%(repo)s::text IS NULL OR f.repo = %(repo)s)
   AND (%(language)s::text IS NULL OR f.language = %(language)s)
   AND (%(path_re)s::text IS NULL OR f.path ~ %(path_re)s)
 ORDER BY c.embedding <=> %(vector)s
 LIMIT %(limit)s
"""
EXACT_OFF = ["SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"]


def model_pool() -> np.ndarray:
    """The shipped model's vectors of the docstring eval's chunks and definitions."""
    db = eval_index.open_database(eval_index.CACHE)
    try:
        with db.connection() as conn:
            if not store.project_exists(conn, SOURCE):
                raise SystemExit(
                    f"no eval index {SOURCE.name}: run `python -m bench.eval.run` first"
                )
            rows = conn.execute(
                SOURCE.sql(
                    "SELECT embedding FROM {schema}.rag_chunk WHERE embedding IS NOT NULL"
                    " UNION ALL "
                    "SELECT embedding FROM {schema}.rag_symbol WHERE embedding IS NOT NULL"
                )
            ).fetchall()
    finally:
        db.close()
    return np.asarray([r[0].to_numpy() for r in rows], dtype=np.float32)


def noisy(pool: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    base = pool[rng.integers(len(pool))]
    v = base + rng.standard_normal(base.shape[0]).astype(np.float32) * NOISE_SIGMA
    return v / np.linalg.norm(v)


def build(cache: Path, chunks: int, definitions: int) -> None:
    pool = model_pool()
    rng = np.random.default_rng(13)
    db = open_database(cache)
    started = time.perf_counter()
    try:
        with db.connection() as conn:
            if store.project_exists(conn, PROJECT):
                store.drop_project(conn, PROJECT)
            store.ensure_project(conn, PROJECT)
            store.set_embedding_dimension(conn, PROJECT, pool.shape[1])
            store.drop_bulk_indexes(conn, PROJECT)
            conn.commit()
            files = chunks // PER_FILE
            per_chunk = definitions / chunks
            written = 0
            for at in range(0, files, 500):
                batch = []
                for i in range(at, min(files, at + 500)):
                    rows = [
                        ChunkRow(k, 3 * k + 1, 3 * k + 3, f"f{i}_{k}", "function",
                                 f"def f{i}_{k}():\n    pass\n", f"{i}-{k}", noisy(pool, rng),
                                 f"f{i}_{k}", f"m{i}", "pass")
                        for k in range(PER_FILE)
                    ]  # fmt: skip
                    lone = round(per_chunk * PER_FILE * (i + 1)) - round(per_chunk * PER_FILE * i)
                    symbols = [
                        SymbolRow(j, j % PER_FILE, f"g{i}_{j}", f"g{i}_{j}", "function",
                                  3 * (j % PER_FILE) + 1, 3 * (j % PER_FILE) + 2,
                                  3 * (j % PER_FILE) + 1, f"def g{i}_{j}():", None,
                                  f"g{i}-{j}", noisy(pool, rng))
                        for j in range(lone)
                    ]  # fmt: skip
                    record = FileRecord("bench", f"m{i}.py", 1, 1, f"{i}", "python")
                    batch.append(bulk.NewFile(record, rows, symbols))
                bulk.load_files(conn, PROJECT, batch)
                conn.commit()
                written += len(batch)
                print(f"  {written * PER_FILE:,} chunks loaded", flush=True)
            t = time.perf_counter()
            store.build_bulk_indexes(conn, PROJECT)
            store.analyze_chunks(conn, PROJECT)
            conn.commit()
            print(f"  indexes built in {time.perf_counter() - t:.0f} s")
            counts = conn.execute(
                PROJECT.sql(
                    "SELECT (SELECT count(*) FROM {schema}.rag_chunk),"
                    " (SELECT count(*) FROM {schema}.rag_symbol WHERE embedding IS NOT NULL)"
                )
            ).fetchone()
    finally:
        db.close()
    assert counts is not None
    manifest = {"chunks": counts[0], "definitions": counts[1], "pool": len(pool)}
    (cache / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"built {manifest} in {time.perf_counter() - started:.0f} s")


def timed(conn: Any, text: str, vector: np.ndarray, ef_search: int) -> tuple[float, list[int]]:
    t = time.perf_counter()
    with conn.transaction():
        conn.execute(queries.SET_EF_SEARCH, {"ef": str(ef_search)})
        rows = conn.execute(
            PROJECT.sql(text),
            {**NO_FILTERS, "vector": vector, "limit": DEPTH},
            prepare=False,
        ).fetchall()
    return time.perf_counter() - t, [r[0] for r in rows]


def exact(conn: Any, vector: np.ndarray) -> list[int]:
    with conn.transaction():
        for step in EXACT_OFF:
            conn.execute(step)
        rows = conn.execute(
            PROJECT.sql(queries.VECTOR_CANDIDATES),
            {**NO_FILTERS, "vector": vector, "limit": 10},
            prepare=False,
        ).fetchall()
    return [r[0] for r in rows]


def time_lists(cache: Path, n_queries: int, ef_search: int, recall_queries: int) -> None:
    print(f"machine: {machine.describe()}")
    print(f"index: {(cache / 'manifest.json').read_text().strip()}")
    texts, vectors = query_vectors(cache, LocalEmbedder())  # embedded once, kept in `cache`
    pick = np.linspace(0, len(texts) - 1, min(n_queries, len(texts))).astype(int)
    db = open_database(cache)
    try:
        with db.connection() as conn:
            for i in pick[:20]:  # warm the caches: both indexes read from memory after this
                timed(conn, queries.VECTOR_CANDIDATES, vectors[i], ef_search)
                timed(conn, CHUNKS_ONLY, vectors[i], ef_search)
            old: list[float] = []
            new: list[float] = []
            for n, i in enumerate(pick):
                order = [(CHUNKS_ONLY, old), (queries.VECTOR_CANDIDATES, new)]
                for text, out in order if n % 2 else reversed(order):
                    out.append(timed(conn, text, vectors[i], ef_search)[0])
            print(f"{len(pick)} queries, depth {DEPTH}, ef_search {ef_search}, in the database:")
            print(f"  chunks only            {figures(old)}")
            print(f"  chunks + definitions   {figures(new)}")
            ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
            print(f"  median ratio per query {ratio:.2f}")
            hits = total = 0
            for i in pick[:recall_queries]:
                truth = exact(conn, vectors[i])
                _, found = timed(conn, queries.VECTOR_CANDIDATES, vectors[i], ef_search)
                hits += len(set(truth) & set(found[:10]))
                total += len(truth)
            print(
                f"  recall@10 against exact search ({recall_queries} queries): {hits / total:.3f}"
            )
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--chunks", type=int, default=100_000)
    b.add_argument("--definitions", type=int, default=100_000)
    t = sub.add_parser("time")
    t.add_argument("--queries", type=int, default=400)
    t.add_argument("--recall-queries", type=int, default=100)
    t.add_argument("--ef-search", type=int, default=DEFAULT_EF_SEARCH)
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    if args.command == "build":
        build(args.cache, args.chunks, args.definitions)
    else:
        time_lists(args.cache, args.queries, args.ef_search, args.recall_queries)


if __name__ == "__main__":
    main()
