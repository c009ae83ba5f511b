"""Navigation benchmark: find_symbol, get_outline, grep and find_references at ~100k chunks,
and what the symbol table and the file text add to a first sweep's store time.

Corpus: Python packages installed in the project's .venv (code no one here wrote). Part 1
sweeps them with a zero-cost embedder twice per run: as shipped, and with the symbol and
file-text writes switched off; it reports the store phase of each. Part 2 copies that index
over and over into one project (~100k chunks, no vectors: navigation never reads them),
rebuilds its indexes, analyses it, and times each navigation function as the server calls it
(a pooled connection per call, statement timeout included) on names and strings drawn from the
index itself.

    .venv/bin/python -m bench.nav_bench                   # both parts
    .venv/bin/python -m bench.nav_bench --part 2 --target 100000 --queries 300
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from psycopg import sql as pgsql

from bench import machine
from bench.served import stop_embedded
from bench.sweep_bench import CORPUS as SWEEP_CORPUS
from bench.sweep_bench import INLINE, ZeroCostEmbedder, fresh, project
from indexer.db import Database, Schema, blocks, bulk, statements, store
from indexer.project import Project, Root
from indexer.search import find_references, find_symbol, get_outline, grep
from indexer.sweep import sweep_project

HERE = Path(__file__).resolve().parent

CORPUS = ("litestar", "psycopg", "mcp", "pygments", "scipy")
STORE_CORPUS = ("litestar", "psycopg", "mcp")
SOURCE = Schema("bench_nav_src")
SCALED = Schema("bench_nav_100k")
FILE_STEP = 10_000_000  # id offset per copy, far above any source id


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def part1(db: Database, runs: int, corpus: tuple[str, ...]) -> None:
    proj = project("bench_nav_store", corpus)
    print(f"\n## Part 1: store time of a first sweep, {', '.join(corpus)}, zero-cost embedder")
    with_nav: list[float] = []
    without: list[float] = []
    # "without": no symbol rows and no file text, on both write paths (file by file, and the
    # bulk load a first sweep takes).
    saved = (
        store._replace_symbols,
        bulk._load_symbols,
        blocks.text_rows,
        statements.DELETE_FILE_TEXT,
    )
    for run in range(runs):
        for label, out in (("with symbols + text", with_nav), ("without", without)):
            if label == "without":
                store._replace_symbols = lambda *a, **k: None
                bulk._load_symbols = lambda *a, **k: None
                blocks.text_rows = lambda *a, **k: []
                statements.DELETE_FILE_TEXT = "SELECT %(file_id)s"
            try:
                fresh(db, proj.name)
                report = sweep_project(db, proj, ZeroCostEmbedder(), INLINE)
            finally:
                (
                    store._replace_symbols,
                    bulk._load_symbols,
                    blocks.text_rows,
                    statements.DELETE_FILE_TEXT,
                ) = saved
            # Writing rows, and building the indexes a bulk load leaves to the end.
            spent = report.seconds["store"] + report.seconds.get("build_index", 0.0)
            out.append(spent)
            print(
                f"run {run + 1} {label:<20} store + index build {spent:6.1f} s "
                f"(build {report.seconds.get('build_index', 0.0):.1f} s), "
                f"total {report.seconds['total']:6.1f} s, {report.files_changed:,} files, "
                f"{report.chunks_written:,} chunks"
            )
    a, b = statistics.median(with_nav), statistics.median(without)
    print(
        f"median store + index build: {a:.1f} s with, {b:.1f} s without: +{100 * (a / b - 1):.0f}%"
    )
    fresh(db, proj.name)


def build_source(db: Database) -> int:
    proj = project(SOURCE.name, CORPUS)
    with db.connection() as conn:
        have = store.project_exists(conn, SOURCE) and store.chunk_count(conn, SOURCE) > 0
    if not have:
        report = sweep_project(db, proj, ZeroCostEmbedder(), INLINE)
        print(f"source index: {report.chunks_written:,} chunks in {report.seconds['total']:.0f} s")
    with db.connection() as conn:
        return store.chunk_count(conn, SOURCE)


def build_scaled(db: Database, copies: int) -> None:
    s = pgsql.Identifier(SOURCE.name)
    d = pgsql.Identifier(SCALED.name)
    with db.connection() as conn:
        if store.project_exists(conn, SCALED):
            store.drop_project(conn, SCALED)
        store.ensure_project(conn, SCALED)
        conn.commit()
        store.set_embedding_dimension(conn, SCALED, 384)
        store.drop_bulk_indexes(conn, SCALED, secondary=True)  # trigram, keyword and symbol
        t = time.perf_counter()
        with conn.transaction():
            for k in range(copies):
                off = {"off": k * FILE_STEP, "k": str(k)}
                copies_of = [
                    "INSERT INTO {d}.rag_file (id, repo, path, size, mtime_ns, sha256, language,"
                    " chunk_count) SELECT id + %(off)s, repo || '_' || %(k)s, path, size,"
                    " mtime_ns, sha256, language, chunk_count FROM {s}.rag_file",
                    "INSERT INTO {d}.rag_chunk (id, file_id, ordinal, start_line, end_line,"
                    " symbol, kind, content, content_sha256, tsv) SELECT id + %(off)s,"
                    " file_id + %(off)s, ordinal, start_line, end_line, symbol, kind, content,"
                    " content_sha256, tsv FROM {s}.rag_chunk",
                    "INSERT INTO {d}.rag_symbol (file_id, ordinal, chunk_id, name,"
                    " qualified_name, kind, start_line, end_line, signature_line, signature,"
                    " parent) SELECT file_id + %(off)s, ordinal, chunk_id + %(off)s, name,"
                    " qualified_name, kind, start_line, end_line, signature_line, signature,"
                    " parent FROM {s}.rag_symbol",
                    "INSERT INTO {d}.rag_text_block (file_id, start_line, content, spelled)"
                    " SELECT file_id + %(off)s, start_line, content, spelled"
                    " FROM {s}.rag_text_block",
                ]
                for text in copies_of:
                    conn.execute(pgsql.SQL(text).format(d=d, s=s), off)
        print(f"copied {copies} times in {time.perf_counter() - t:.0f} s")
        t = time.perf_counter()
        with conn.transaction():
            conn.execute(statements.SET_BUILD_MEMORY, {"mem": "1GB"})
            for step in [*statements.CREATE_TRGM, *statements.CREATE_SECONDARY]:
                conn.execute(SCALED.sql(step))
        with conn.transaction():
            for table in ("rag_file", "rag_chunk", "rag_symbol", "rag_text_block", "rag_name"):
                conn.execute(pgsql.SQL("ANALYZE {}").format(SCALED.table(table)))
        print(f"indexes and statistics in {time.perf_counter() - t:.0f} s")


def sample(db: Database, n: int, seed: int, copies: int) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    s = pgsql.Identifier(SOURCE.name)
    with db.connection() as conn:
        names = [
            r[0]
            for r in conn.execute(
                pgsql.SQL("SELECT DISTINCT name FROM {}.rag_symbol WHERE length(name) >= 4").format(
                    s
                )
            )
        ]
        files = [
            (r[0], r[1])
            for r in conn.execute(
                pgsql.SQL(
                    "SELECT DISTINCT f.repo, f.path FROM {s}.rag_file f"
                    " JOIN {s}.rag_symbol y ON y.file_id = f.id"
                ).format(s=s)
            )
        ]
        lines = [
            r[0]
            for r in conn.execute(
                pgsql.SQL(
                    "SELECT signature FROM {}.rag_symbol WHERE length(signature) >= 12"
                ).format(s)
            )
        ]
    rng.shuffle(names)
    picked = names[:n]
    typo = [w[:2] + w[3:] if len(w) > 4 else w + "x" for w in picked]
    # Literal strings of 3+ characters cut from real signature lines, as an agent pastes them.
    strings = []
    for line in rng.sample(lines, min(n, len(lines))):
        start = rng.randrange(0, max(1, len(line) - 12))
        piece = line[start : start + rng.randint(3, 16)].strip()
        strings.append(piece if len(piece) >= 3 else line[:8])
    return {
        "names": picked,
        "prefixes": [w[: rng.randint(3, 5)] for w in picked],
        "typos": typo,
        "files": [(f"{repo}_{rng.randrange(copies)}", path) for repo, path in rng.sample(files, n)],
        "strings": strings,
    }


def timed(label: str, calls: list[Callable[[], Any]], goal_ms: float) -> None:
    for call in calls[:5]:
        call()  # warm the pool and the caches
    times = []
    for call in calls:
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    p50, p95 = statistics.median(times), percentile(times, 0.95)
    verdict = "ok" if p95 <= goal_ms else "OVER"
    print(
        f"| {label:<36} | {len(times):>4} | {p50:7.1f} | {p95:7.1f} | {max(times):7.1f} "
        f"| ≤ {goal_ms:g} ms {verdict} |"
    )


def part2(db: Database, target: int, queries: int) -> None:
    chunks = build_source(db)
    copies = max(1, round(target / chunks))
    print(f"\n## Part 2: {copies} copies of a {chunks:,}-chunk index = ~{copies * chunks:,} chunks")
    with db.connection() as conn:
        built = store.project_exists(conn, SCALED) and store.chunk_count(conn, SCALED) > chunks
    if not built:
        build_scaled(db, copies)
    with db.connection() as conn:
        counts = conn.execute(
            SCALED.sql(
                "SELECT (SELECT count(*) FROM {schema}.rag_chunk),"
                " (SELECT count(*) FROM {schema}.rag_symbol),"
                " (SELECT count(DISTINCT file_id) FROM {schema}.rag_text_block),"
                " (SELECT count(*) FROM {schema}.rag_text_block),"
                " (SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c"
                "   JOIN pg_namespace n ON n.oid = c.relnamespace"
                "  WHERE n.nspname = %(n)s"
                "    AND c.relname IN ('rag_symbol', 'rag_text_block', 'rag_name')),"
                " (SELECT pg_size_pretty(pg_total_relation_size(%(chunks)s::regclass)))"
            ),
            {"n": SCALED.name, "chunks": SCALED.table("rag_chunk").as_string(conn)},
        ).fetchone()
    assert counts is not None
    print(
        f"{counts[0]:,} chunks, {counts[1]:,} symbols, {counts[2]:,} files with text in "
        f"{counts[3]:,} blocks; rag_symbol + rag_text_block + rag_name take {counts[4]} "
        f"(rag_chunk: {counts[5]})"
    )
    roots = tuple(Root(HERE, f"{p}_{k}") for p in CORPUS for k in range(copies))
    proj = Project(SCALED.name, roots)
    q = sample(db, queries, seed=7, copies=copies)
    print("\n| call | n | p50 ms | p95 ms | max ms | goal |\n|---|---|---|---|---|---|")
    timed("find_symbol exact", [partial(find_symbol, db, proj, w) for w in q["names"]], 10)
    timed(
        "find_symbol prefix (3-5 chars)",
        [partial(find_symbol, db, proj, w, match="prefix") for w in q["prefixes"]],
        10,
    )
    timed(
        "find_symbol fuzzy (a typo)",
        [partial(find_symbol, db, proj, w, match="fuzzy") for w in q["typos"]],
        30,
    )
    timed("get_outline", [partial(get_outline, db, proj, f[0], f[1]) for f in q["files"]], 10)
    timed("grep literal (3-16 chars)", [partial(grep, db, proj, p) for p in q["strings"]], 50)
    timed(
        "grep literal, ignoring case",
        [partial(grep, db, proj, p, case_sensitive=False) for p in q["strings"]],
        50,
    )
    timed("grep literal, a symbol's name", [partial(grep, db, proj, w) for w in q["names"]], 50)
    timed(
        "grep regex, a name as a whole word",
        [partial(grep, db, proj, rf"\m{re.escape(w)}\M", regex=True) for w in q["names"]],
        50,
    )
    timed(
        "grep regex, a definition of a name",
        [
            partial(grep, db, proj, rf"(def|class) +{re.escape(w)}\(", regex=True)
            for w in q["names"]
        ],
        50,
    )
    timed("find_references", [partial(find_references, db, proj, w) for w in q["names"]], 100)
    common = ["return", "self", "import", "def ", "None"] * 4
    timed("grep literal, common words", [partial(grep, db, proj, p) for p in common], 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", type=int, choices=(1, 2))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--target", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--store-corpus",
        choices=("small", "sweep"),
        default="small",
        help="part 1's packages: three (575 files), or the sweep benchmark's (6,221 files)",
    )
    parser.add_argument("--keep", type=Path, help="a data folder to keep (and reuse) the index in")
    args = parser.parse_args()
    print(machine.describe())
    # A server of its own, in a temporary data folder the embedded server's user can reach.
    data = args.keep or Path(tempfile.mkdtemp(prefix="code-rag-bench-"))
    data.mkdir(parents=True, exist_ok=True)
    data.chmod(0o755)
    try:
        with Database("", data) as db:
            if args.part in (None, 1):
                part1(db, args.runs, STORE_CORPUS if args.store_corpus == "small" else SWEEP_CORPUS)
            if args.part in (None, 2):
                part2(db, args.target, args.queries)
    finally:
        stop_embedded(data)
        if args.keep is None:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
