"""Sweep benchmark: the sweep's own cost, and how busy it keeps a real embedder.

Corpus: Python packages installed in the project's .venv (code no one here wrote), as the roots
of one project. Part 1 uses a zero-cost embedder, so what is measured is walk, hash, chunk and
store: first-sweep files/s, the share of time per phase, and a sweep with nothing changed.
Part 2 uses the local model on a subset: the end-to-end sweep against the embedder alone on the
very same texts, chunks and definitions embedded alone (target: sweep <= 1.15 x embedding
alone), and what the definitions cost beside the chunks.

    .venv/bin/python -m bench.sweep_bench                  # both parts, 3 runs each
    .venv/bin/python -m bench.sweep_bench --part 1 --runs 5

Part 1 also times reading and chunking the same files alone in this process (one core), and
(`--old-runs`, default 1) a first sweep through the row-by-row path with parsing in one thread,
side by side in the same run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine
from chunkers import chunk_file, embedding_text, lone_definitions
from indexer.db import Database, Schema, store
from indexer.embed import (
    EmbedBatchResult,
    EmbeddingModel,
    make_embedder,
)
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project
from indexer.sweep.walk import Candidate, walk_project

SITE = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
)
# Installed packages of real code, never a library reserved for evaluation: the evals at scale
# tune the keyword side among these chunks.
CORPUS = ("transformers", "scipy", "numpy", "pygments", "litestar", "psycopg", "mcp")
SUBSET = ("litestar",)
# Vectors as the rows are written (a sweep of many files would leave them for afterwards):
# what is measured here is a sweep with its embedding.
INLINE = SweepOptions(defer_vectors=False)
DIM = 384


# Words of a chunk for the stand-in vectors (see ZeroCostEmbedder).
WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")


class ZeroCostEmbedder:
    """Answers at once, isolating the sweep's own work. Each text's vector is, by default
    (`vectors="words"`), its words hashed into the dimensions with a sign each (the hashing
    trick): texts sharing words lie close, so the HNSW build sees the clustered set a real model
    gives (at 104,867 chunks of this corpus, one parallel worker: model vectors 14.0 s, these
    17.4 s). `vectors="random"` gives a pseudo-random unit vector per text (seeded by its CRC),
    the worst case for the graph (50.7 s on the same chunks), as earlier figures used."""

    identity = EmbeddingModel("bench", "zero-cost", DIM)

    def __init__(self, vectors: str = "words") -> None:
        if vectors not in ("words", "random"):
            raise ValueError(f"vectors must be words or random, got {vectors!r}")
        self.vectors = vectors

    def _vector(self, text: str) -> Any:
        words = WORD_RE.findall(text) if self.vectors == "words" else []
        if words:
            hashes = np.fromiter((zlib.crc32(w.encode()) for w in words), np.int64, len(words))
            signs = np.where((hashes >> 16) & 1, 1.0, -1.0)
            v = np.bincount(hashes % DIM, weights=signs, minlength=DIM)
            norm = np.linalg.norm(v)
            if norm > 0:
                return (v / norm).astype(np.float32)
        noise = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM)
        return (noise / np.linalg.norm(noise)).astype(np.float32)

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        return EmbedBatchResult(vectors=[self._vector(t) for t in texts], requests=1)

    def embed_query(self, text: str) -> list[float]:
        return list(self._vector(text))

    def close(self) -> None:
        pass


def project(name: str, packages: Sequence[str]) -> Project:
    roots = tuple(Root(SITE / p, p) for p in packages if (SITE / p).is_dir())
    return Project(name, roots)


def fresh(db: Database, name: str, *, shared: bool = True) -> None:
    """Drop project `name`'s schema, if there is one, and (`shared`) empty the embedding cache
    every project shares: the next sweep is a first sweep, on a machine that embedded nothing."""
    schema = Schema(name)
    with db.connection() as conn:
        if store.project_exists(conn, schema):
            store.drop_project(conn, schema)
        if shared:
            conn.execute('TRUNCATE "code-rag".embedding_cache')


def chunk_alone(files: Sequence[Candidate]) -> float:
    """Seconds to read and chunk `files` here, on one core: what parsing alone costs."""
    t = time.perf_counter()
    for cand in files:
        chunk_file(cand.path, cand.absolute.read_bytes())
    return time.perf_counter() - t


def part1(db: Database, runs: int, old_runs: int, vectors: str = "words") -> None:
    proj = project("bench_sweep", CORPUS)
    walked = walk_project(proj).files
    files = len(walked)
    print(
        f"\n## Part 1: zero-cost embedder ({vectors} vectors), {files:,} files in "
        f"{', '.join(CORPUS)}"
    )
    print(f"load average at start: {os.getloadavg()}")
    first, unchanged, phases, alone, old = [], [], [], [], []
    for run in range(runs):
        alone.append(chunk_alone(walked))
        fresh(db, proj.name)
        report = sweep_project(db, proj, ZeroCostEmbedder(vectors), INLINE)
        total = report.seconds["total"]
        first.append(total)
        phases.append(report.seconds)
        again = sweep_project(db, proj, ZeroCostEmbedder(vectors), INLINE)
        unchanged.append(again.seconds["total"])
        print(
            f"run {run + 1}: chunking alone (one core) {alone[-1]:.1f} s; "
            f"first {total:.1f} s ({report.files_changed / total:,.0f} files/s, "
            f"{report.chunks_written:,} chunks, ratio {total / alone[-1]:.2f}), "
            f"unchanged {again.seconds['total']:.2f} s "
            f"({again.files_unchanged:,} unchanged, {again.embed_requests} embedding calls); "
            f"load {os.getloadavg()[0]:.1f}"
        )
        if run < old_runs:
            fresh(db, proj.name)
            options = SweepOptions(bulk_load=False, prepare_workers=0, defer_vectors=False)
            before = sweep_project(db, proj, ZeroCostEmbedder(vectors), options).seconds
            old.append(before["total"])
            print(
                f"run {run + 1}: row-by-row path, parsing in one thread: first {old[-1]:.1f} s "
                f"(store {before.get('store', 0):.1f} s, "
                f"index build {before.get('build_index', 0):.1f} s); "
                f"load {os.getloadavg()[0]:.1f}"
            )
    med = statistics.median(first)
    rate = files / med
    print(f"median first sweep: {med:.1f} s = {rate:,.0f} files/s = {60 * rate:,.0f} files/min")
    print(f"median unchanged sweep: {statistics.median(unchanged):.2f} s")
    ratio = statistics.median([f / a for f, a in zip(first, alone, strict=True)])
    print(
        f"median chunking alone: {statistics.median(alone):.1f} s; median ratio first sweep / "
        f"chunking alone: {ratio:.2f} (goal <= 1.3)"
    )
    if old:
        print(
            f"median row-by-row first sweep: {statistics.median(old):.1f} s; "
            f"ratio to the bulk path: {statistics.median(old) / med:.2f}"
        )
    keys = [
        "walk",
        "compare",
        "read",
        "chunk",
        "cache_lookup",
        "embed",
        "copy",
        "store",
        "wait_prepare",
        "build_index",
        "analyze",
        "delete",
    ]
    print(
        "median seconds per phase (read/chunk/cache_lookup run in the preparation thread or its "
        "worker processes, summed over workers; copy is part of store):"
    )
    for key in keys:
        values = [p.get(key, 0.0) for p in phases]
        share = 100 * statistics.median(values) / med
        print(f"  {key:<13} {statistics.median(values):7.2f} s  {share:5.1f}% of wall")
    fresh(db, proj.name)


def part2(db: Database, runs: int, files: int) -> None:
    # The local model embeds a few chunks per second on a small CPU: a copy of the first
    # `files` files of the subset keeps each run to a minute or two.
    source = walk_project(project("bench_subset", SUBSET)).files[:files]
    tree = Path(tempfile.mkdtemp(prefix="code-rag-bench-tree-"))
    for cand in source:
        target = tree / cand.repo / cand.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cand.absolute, target)
    proj = Project("bench_local", (Root(tree, "subset"),))
    walked = walk_project(proj).files
    # What the sweep embeds: every chunk and every definition no chunk speaks for.
    texts: list[str] = []
    chunks = 0
    for cand in walked:
        result = chunk_file(cand.path, cand.absolute.read_bytes())
        texts.extend(embedding_text(c, cand.path) for c in result.chunks)
        chunks += len(result.chunks)
        texts.extend(embedding_text(c, cand.path) for _, c in lone_definitions(result))
    embedder = make_embedder("local")
    embedder.embed_documents(texts[:8])  # load the model outside the timings
    model = embedder.identity.describe()
    print(
        f"\n## Part 2: local model ({model}), {len(walked):,} files, {chunks:,} chunks and "
        f"{len(texts) - chunks:,} definitions embedded alone"
    )
    ratios, shares = [], []
    for run in range(runs):
        t = time.perf_counter()
        embedder.embed_documents(texts[:chunks])
        split = time.perf_counter()
        embedder.embed_documents(texts[chunks:])
        alone = time.perf_counter() - t
        shares.append((time.perf_counter() - split) / (split - t))
        fresh(db, proj.name)
        report = sweep_project(db, proj, embedder, INLINE)
        total = report.seconds["total"]
        ratios.append(total / alone)
        print(
            f"run {run + 1}: embedder alone {alone:.1f} s ({len(texts) / alone:.1f} texts/s; "
            f"definitions {shares[-1]:.2f} x the chunks' time); "
            f"sweep {total:.1f} s ({report.chunks_written / total:.1f} chunks/s, "
            f"{report.chunks_embedded:,} + {report.definitions_embedded:,} embedded, "
            f"{report.cache_hits:,} cache hits); "
            f"ratio {total / alone:.3f}"
        )
    print(f"median ratio sweep / embedder alone: {statistics.median(ratios):.3f} (target <= 1.15)")
    print(
        "median embedding time of the definitions embedded alone / of the chunks: "
        f"{statistics.median(shares):.2f}"
    )
    fresh(db, proj.name)
    shutil.rmtree(tree, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", type=int, choices=(1, 2))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--old-runs",
        type=int,
        default=1,
        help="part 1: runs of the row-by-row path with parsing in one thread, side by side",
    )
    parser.add_argument("--files", type=int, default=40, help="files for part 2 (local model)")
    parser.add_argument(
        "--vectors",
        choices=("words", "random"),
        default="words",
        help="part 1: the stand-in vectors (see ZeroCostEmbedder)",
    )
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    dsn = os.environ.get("CODE_RAG_DSN", "")
    data = Path(tempfile.mkdtemp(prefix="code-rag-bench-"))
    data.chmod(0o755)
    try:
        with Database(dsn, data) as db:
            if args.part in (None, 1):
                part1(db, args.runs, args.old_runs, args.vectors)
            if args.part in (None, 2):
                part2(db, args.runs, args.files)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
