"""Chunker throughput over a real tree: files/s, MB/s and peak memory, median of several runs.

    .venv/bin/python -m bench.chunk_bench                       # the venv's site-packages
    .venv/bin/python -m bench.chunk_bench --root ~/src --runs 5 --threads 2

Every regular file up to --max-bytes (the indexer's default cap) is read and handed to
`chunk_file`; binary files count (they are refused, which is work too), and the text-only figures
leave them out. Only `chunk_file` is timed, not the disk (with --threads, wall time is).
Peak memory is the process's maximum RSS (`ru_maxrss`); with --tracemalloc one extra run reports
the peak of Python allocations inside one `chunk_file` call (slower, so untimed).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench import machine
from chunkers import ChunkerConfig, chunk_file

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / ".venv/lib/python3.11/site-packages"
DEFAULT_MAX_BYTES = 1_000_000


@dataclass
class RunStats:
    files: int = 0
    bytes: int = 0
    # Files that were chunked (not refused as binary), and their bytes.
    text_files: int = 0
    text_bytes: int = 0
    chunks: int = 0
    seconds: float = 0.0
    # CPU time of this thread inside chunk_file: steadier than wall time on a busy machine.
    cpu_seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    languages: Counter[str] = field(default_factory=Counter)


def corpus(root: Path, max_bytes: int, limit: int | None) -> list[Path]:
    """Regular files under `root` up to `max_bytes`, in a stable order."""
    paths: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder, name)
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= max_bytes:
                paths.append(path)
    return paths[:limit] if limit else paths


Outcome = tuple[int, int, float, float, str, str]


def chunk_one(path: Path, root: Path, config: ChunkerConfig) -> Outcome:
    data = path.read_bytes()
    start, cpu = time.perf_counter(), time.thread_time()
    result = chunk_file(str(path.relative_to(root)), data, config)
    elapsed, cpu = time.perf_counter() - start, time.thread_time() - cpu
    outcome = "refused" if result.refused else (result.fallback or "symbols")
    return len(data), len(result.chunks), elapsed, cpu, outcome, result.language or "unknown"


def run(paths: list[Path], root: Path, config: ChunkerConfig, threads: int) -> RunStats:
    stats = RunStats()
    wall = time.perf_counter()
    results: Iterator[Outcome]
    if threads > 1:
        pool = ThreadPoolExecutor(max_workers=threads)
        results = pool.map(lambda p: chunk_one(p, root, config), paths, chunksize=64)
    else:
        pool = None
        results = (chunk_one(p, root, config) for p in paths)
    busy = 0.0
    for size, chunks, elapsed, cpu, outcome, language in results:
        stats.files += 1
        stats.bytes += size
        stats.chunks += chunks
        busy += elapsed
        stats.cpu_seconds += cpu
        stats.outcomes[outcome] += 1
        if outcome != "refused":
            stats.text_files += 1
            stats.text_bytes += size
        stats.languages[language] += 1
    if pool is not None:
        pool.shutdown()
        # With threads, wall time (including reads) is the honest figure.
        stats.seconds = time.perf_counter() - wall
    else:
        stats.seconds = busy
    return stats


def traced_peak(paths: list[Path], root: Path, config: ChunkerConfig) -> int:
    tracemalloc.start()
    peak = 0
    for path in paths:
        data = path.read_bytes()
        tracemalloc.reset_peak()
        chunk_file(str(path.relative_to(root)), data, config)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="only the first N files")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()

    root = args.root.resolve()
    paths = corpus(root, args.max_bytes, args.limit)
    config = ChunkerConfig()
    print(f"machine: {machine.describe()}")
    print(f"corpus: {root} ({len(paths)} files <= {args.max_bytes} bytes)")
    runs = []
    for index in range(args.runs):
        stats = run(paths, root, config, args.threads)
        runs.append(stats)
        print(
            f"run {index + 1}: {stats.files} files, {stats.bytes / 1e6:.1f} MB, "
            f"{stats.chunks} chunks in {stats.seconds:.2f} s: "
            f"{stats.files / stats.seconds:.0f} files/s, "
            f"{stats.bytes / 1e6 / stats.seconds:.2f} MB/s; text only: {stats.text_files} files, "
            f"{stats.text_bytes / 1e6:.1f} MB, {stats.text_bytes / 1e6 / stats.seconds:.2f} MB/s"
        )
    last = runs[-1]
    print(f"outcomes: {dict(last.outcomes.most_common())}")
    print(f"languages: {dict(last.languages.most_common(12))}")
    print(
        f"median of {len(runs)} runs ({args.threads} thread(s)): "
        f"{statistics.median(s.files / s.seconds for s in runs):.0f} files/s, "
        f"{statistics.median(s.bytes / 1e6 / s.seconds for s in runs):.2f} MB/s, "
        f"{statistics.median(s.chunks for s in runs):.0f} chunks; text only "
        f"{statistics.median(s.text_files / s.seconds for s in runs):.0f} files/s, "
        f"{statistics.median(s.text_bytes / 1e6 / s.seconds for s in runs):.2f} MB/s"
    )
    print(
        "median by CPU time: "
        f"{statistics.median(s.files / s.cpu_seconds for s in runs):.0f} files/s, "
        f"{statistics.median(s.bytes / 1e6 / s.cpu_seconds for s in runs):.2f} MB/s; text only "
        f"{statistics.median(s.text_bytes / 1e6 / s.cpu_seconds for s in runs):.2f} MB/s"
    )
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.tracemalloc:
        peak = traced_peak(paths, root, config)
        print(f"peak Python allocations inside one chunk_file call: {peak / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
