"""Many projects in one scan: how soon every project answers, and when every vector is in.

Corpus: three projects of different sizes cut from this Python's standard library (disjoint
slices of its modules of at most 8 KB in path order, tests left out: `--sizes 5,25,80` files,
24, 299 and 650 texts to embed), named small, medium and large and listed in the projects
file as medium, large, small (neither the best nor the worst order for a scan that takes
them in turn; the small one has fewer files than a sweep defers the vectors of). The
bundled local model embeds (`provider = local`, as by default). Per run, the index starts
empty (the three schemas dropped, the embedding cache every project shares emptied) and
`./bld scan all` runs as a subprocess from a checkout (`--code`, alternated per run: a
baseline and this one), while this process reads the database every quarter second: for each
project, when its rows are in (its first sweep finished: it answers by keyword, name and
exact text) and when its vectors are (its sweep finished and nothing pending). Reported per
checkout, medians over runs: each project's two times, the time until every project's rows
are in, until every vector is in, and the scan's own end (graphs built).

    .venv/bin/python -m bench.scan_all_bench --runs 3 --code ../base --code .   # before/after
    .venv/bin/python -m bench.scan_all_bench --sizes 2,5,10 --runs 1            # a quick look

`--corpus DIR` indexes each folder of DIR as a project instead (listed in name order): the
whole first index of the file-level eval's corpus is `--corpus bench/.cache/files/corpus`. A
`--code` of `PATH:N` runs that checkout with `[embedding] document_tokens = N`, so a cut is
measured side by side with whole texts, and `PATH:whole`, `PATH:parts`, `PATH:rest` or
`PATH:outline` with `[embedding] chunk_vectors` set so (each chunk read whole, or each line read
once: rest is the default). The
embedding work each scan printed (texts and tokens
embedded, the source's tokens) is summed over the projects.

    .venv/bin/python -m bench.scan_all_bench --corpus bench/.cache/files/corpus --runs 1 \
        --code ../base --code . --code .:128 --code .:whole
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from bench import machine
from indexer.db import Database, Schema, store
from indexer.embed import CHUNK_VECTORS

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# Installed packages and tests are not the modules taken.
SKIPPED_PARTS = frozenset({"site-packages", "__pycache__", "test", "tests", "idlelib", "lib2to3"})
KINDS = ("small", "medium", "large")
LISTED = ("medium", "large", "small")  # the order of the projects file
MAX_BYTES = 8000  # small modules only: a few texts each, so a scan takes a minute or two
HERE = Path(__file__).resolve().parent.parent
POLL_S = 0.25


def copy_projects(work: Path, sizes: Sequence[int]) -> dict[str, int]:
    """Disjoint slices of the standard library's modules (path order) under work/<kind>."""
    found = sorted(
        p
        for p in STDLIB.rglob("*.py")
        if not SKIPPED_PARTS.intersection(p.relative_to(STDLIB).parts)
        and p.stat().st_size <= MAX_BYTES
    )
    start = 0
    copied: dict[str, int] = {}
    for kind, size in zip(KINDS, sizes, strict=True):
        for source in found[start : start + size]:
            target = work / kind / source.relative_to(STDLIB)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        copied[kind] = len(found[start : start + size])
        start += size
    return copied


def corpus_projects(corpus: Path) -> dict[str, Path]:
    """Each folder of `corpus` a project, named after it (lowercase, `_` for other signs)."""
    return {
        re.sub(r"[^a-z0-9_]", "_", d.name.lower()): d
        for d in sorted(corpus.iterdir())
        if d.is_dir()
    }


def write_config(work: Path, dsn: str, roots: dict[str, Path], setting: str = "") -> Path:
    """The configuration of a variant: `setting` is "" (the defaults), a count of tokens
    (`document_tokens`), or a way of reading chunks (`chunk_vectors`)."""
    projects = {name: {"roots": [str(root)]} for name, root in roots.items()}
    (work / "rag-projects.json").write_text(json.dumps({"projects": projects}))
    config = work / f"application-{setting or 'default'}.ini"
    cut = ""
    if setting.isdigit():
        cut = f"document_tokens = {setting}\n"
    elif setting:
        cut = f"chunk_vectors = {setting}\n"
    config.write_text(
        f"[database]\ndsn = {dsn}\n[embedding]\nprovider = local\n{cut}"
        "[paths]\ndata = data\nprojects = rag-projects.json\n"
    )
    return config


def reset(db: Database, kinds: Sequence[str]) -> None:
    """An empty index: the projects' schemas dropped, the shared embedding cache emptied."""
    with db.connection() as conn:
        for kind in kinds:
            if store.project_exists(conn, Schema(kind)):
                store.drop_project(conn, Schema(kind))
        conn.execute('TRUNCATE "code-rag".embedding_cache')
        conn.commit()


def state(conn: psycopg.Connection[Any], kind: str) -> tuple[bool, bool]:
    """(its rows are in, its vectors are in) for project `kind`, as the database says now."""
    schema = Schema(kind)
    if not store.project_exists(conn, schema):
        return False, False
    last = store.last_sweeps(conn, schema, 1)
    rows = bool(last) and last[0].finished_at is not None
    return rows, rows and store.pending_counts(conn, schema).total == 0


def one_scan(db: Database, config: Path, code: Path, kinds: Sequence[str]) -> dict[str, Any]:
    """`./bld scan all` of `code`'s checkout on an empty index, watched from here."""
    reset(db, kinds)
    env = {**os.environ, "PYTHONPATH": str(code)}
    log = config.parent / "scan.log"
    times: dict[str, dict[str, float]] = {kind: {} for kind in kinds}
    with log.open("wb") as out, psycopg.connect(db.dsn, autocommit=True) as conn:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rag_server.cli", "scan", "all", "--config", str(config)],
            cwd=code, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        while True:
            ended = proc.poll() is not None
            now = time.perf_counter() - t0
            for kind in kinds:
                if len(times[kind]) == 2:  # complete: no more reads of it
                    continue
                rows, vectors = state(conn, kind)
                if rows:
                    times[kind].setdefault("rows", now)
                if vectors:
                    times[kind].setdefault("vectors", now)
            if ended:
                break
            time.sleep(POLL_S)
        wall = time.perf_counter() - t0
    if proc.returncode != 0 or any(len(t) < 2 for t in times.values()):
        raise SystemExit(f"scan all failed ({proc.returncode}):\n{log.read_text()}")
    with db.connection() as c:
        pending = {kind: store.pending_counts(c, Schema(kind)).total for kind in kinds}
        chunks = {kind: store.chunk_count(c, Schema(kind)) for kind in kinds}
    assert not any(pending.values()), pending
    return {
        "times": times,
        "rows_all": max(t["rows"] for t in times.values()),
        "vectors_all": max(t["vectors"] for t in times.values()),
        "wall": wall,
        "chunks": chunks,
        "work": embedding_work(log.read_text(errors="replace")),
    }


# `./bld scan` prints, per project: "embedding work — 2.10 texts embedded per chunk (52,676 for
# 25,058 chunks), 1.58 tokens embedded per token of source (11,496,741 of 7,256,872, ...)".
WORK = re.compile(r"embedding work .*?\(([\d,]+) for ([\d,]+) chunks\).*?\(([\d,]+) of ([\d,]+)")


def embedding_work(log: str) -> dict[str, int]:
    """The embedding work the scan printed, summed over its projects (empty if it printed none)."""
    total = {"texts": 0, "chunks": 0, "tokens": 0, "source_tokens": 0}
    for match in WORK.finditer(log):
        for key, value in zip(total, match.groups(), strict=True):
            total[key] += int(value.replace(",", ""))
    return total if total["chunks"] else {}


def label(code: Path) -> str:
    commit = subprocess.run(
        ["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return f"{code.name}@{commit or '?'}"


def describe(result: dict[str, Any], kinds: Sequence[str]) -> str:
    per = "  ".join(
        f"{kind} {result['times'][kind]['rows']:5.1f}/{result['times'][kind]['vectors']:5.1f}"
        for kind in kinds
    )
    work = result["work"]
    said = (
        f"; {work['texts']:,} texts, {work['tokens']:,} tokens embedded "
        f"({work['tokens'] / work['source_tokens']:.2f} per token of source)"
        if work
        else ""
    )
    return (
        f"rows/vectors in (s): {per}; every project's rows {result['rows_all']:5.1f} s, "
        f"every vector {result['vectors_all']:5.1f} s, scan ended {result['wall']:5.1f} s{said}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="scans per checkout")
    parser.add_argument("--sizes", default="5,25,80", help="files of small,medium,large")
    parser.add_argument("--corpus", type=Path, help="each folder of it a project instead")
    parser.add_argument(
        "--code",
        action="append",
        help="a checkout whose `scan` runs, PATH or PATH:N for [embedding] document_tokens = N "
        "or PATH:whole / PATH:parts for chunk_vectors (repeat: alternated per run); default this "
        "one",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    variants = [_variant(c) for c in args.code or [str(HERE)]]
    work = Path(tempfile.mkdtemp(prefix="code-rag-scan-all-"))
    work.chmod(0o755)  # the embedded server runs as its own user when this runs as root
    results: dict[tuple[Path, str], list[dict[str, Any]]] = {v: [] for v in variants}
    try:
        if args.corpus:
            roots = corpus_projects(args.corpus.resolve())
            kinds: Sequence[str] = list(roots)
            copied = {k: sum(1 for p in r.rglob("*") if p.is_file()) for k, r in roots.items()}
        else:
            copied = copy_projects(work, sizes)
            kinds = KINDS
            roots = {kind: work / kind for kind in LISTED}
        with Database("", work / "pg").open() as db:
            configs = {t: write_config(work, db.dsn, roots, t) for t in {t for _, t in variants}}
            for run in range(args.runs):
                for code, tokens in variants:
                    result = one_scan(db, configs[tokens], code, kinds)
                    results[(code, tokens)].append(result)
                    print(
                        f"run {run + 1} {_name(code, tokens)}: {describe(result, kinds)}",
                        flush=True,
                    )
        chunks = results[variants[0]][0]["chunks"]
        print(
            "projects (files, chunks): "
            + ", ".join(f"{k} {copied[k]:,}, {chunks[k]:,}" for k in kinds)
            + f"; listed {', '.join(roots)}"
        )
        print(f"medians over {args.runs} runs (seconds from the scan's start):")
        summary = {v: _medians(runs, kinds) for v, runs in results.items()}
        for (code, tokens), m in summary.items():
            per = (
                ", ".join(f"{k} {m[k + ' rows']:.1f} / {m[k + ' vectors']:.1f}" for k in kinds)
                if len(kinds) <= 3
                else f"{len(kinds)} projects"
            )
            print(
                f"  {_name(code, tokens)}: rows / vectors in: {per}; every project's rows "
                f"{m['rows_all']:.1f}, every vector {m['vectors_all']:.1f}, scan ended "
                f"{m['wall']:.1f}"
            )
        first = summary[variants[0]]
        for variant in variants[1:]:
            after = summary[variant]
            ratios = ", ".join(f"{k} {after[k] / first[k]:.2f}" for k in _TOTALS)
            print(f"  ratios {_name(*variant)} / {_name(*variants[0])}: {ratios}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


_TOTALS = ("rows_all", "vectors_all", "wall")


def _variant(text: str) -> tuple[Path, str]:
    """`PATH`, `PATH:N`, or `PATH:` a way of reading chunks such as `PATH:whole` (a checkout,
    and [embedding] document_tokens or chunk_vectors)."""
    path, _, setting = text.partition(":")
    if setting and not setting.isdigit() and setting not in CHUNK_VECTORS:
        raise SystemExit(
            f"--code {text}: the part after ':' is a count of tokens or one of "
            + ", ".join(CHUNK_VECTORS)
        )
    return Path(path).resolve(), setting


def _name(code: Path, setting: str) -> str:
    if setting.isdigit():
        return label(code) + f" document_tokens {setting}"
    return label(code) + (f" chunk_vectors {setting}" if setting else "")


def _medians(runs: Sequence[dict[str, Any]], kinds: Sequence[str]) -> dict[str, float]:
    medians = {key: statistics.median(r[key] for r in runs) for key in _TOTALS}
    for kind in kinds:
        for what in ("rows", "vectors"):
            medians[f"{kind} {what}"] = statistics.median(r["times"][kind][what] for r in runs)
    return medians


if __name__ == "__main__":
    main()
