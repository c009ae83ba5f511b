"""Worker benchmark: a project's pending vectors filled by one `code-rag worker` process and by
two, side by side, on the same rows.

Corpus: the first `--files` Python files of an installed package (litestar by default), one
project written rows first (every chunk and definition pending), the bundled local model.
Each run resets the same rows to pending (vectors cleared, the graphs dropped, the embedding
cache every project shares emptied, so nothing is reused), starts the worker processes
(`code-rag worker <project> --once --threads T`), and watches the pending count from here:
the rate is the texts written between the first commit and the last (model loading and process
start left out; they are shown apart as the whole wall time). Configurations: one worker with
one thread, two workers with one thread each (target: >= 1.8 x the first on two cores), and,
for reference, one worker with two threads.

`--embedder standin`: the workers embed with Ollama's test stand-in (tests/ollama_standin.py)
answering each request `--delay` seconds late, a model that costs no processor time here (as
Ollama on a GPU host would): what is left is the workers' own work and PostgreSQL's, so the
figures say how far claims scale, with 1, 2 and 4 workers.

    nice -n 10 .venv/bin/python -m bench.worker_bench                 # 3 runs of each
    nice -n 10 .venv/bin/python -m bench.worker_bench --runs 5 --files 300
    nice -n 10 .venv/bin/python -m bench.worker_bench --embedder standin --delay 0.5

These machines are shared: the load average is printed at the start and after each run, and
the figures are medians.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import machine
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project

SITE = (
    Path(sys.prefix)
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
)
PACKAGE = "litestar"
NAME = "worker_bench"
ROOT = Path(__file__).resolve().parent.parent
# How often the pending count is read here (each read is a query the workers' cores serve).
WATCH_EVERY_S = 0.25
RESET = [
    "UPDATE {schema}.rag_chunk SET embedding = NULL WHERE embedding IS NOT NULL",
    "UPDATE {schema}.rag_symbol SET embedding = NULL"
    " WHERE embedding IS NOT NULL AND content_sha256 IS NOT NULL",
]


@dataclass(frozen=True)
class Config:
    label: str
    workers: int
    threads: int


CONFIGS = (
    Config("1 worker x 1 thread", 1, 1),
    Config("2 workers x 1 thread", 2, 1),
    Config("1 worker x 2 threads", 1, 2),
)
# With the stand-in the model's threads do not matter: how many workers does.
STANDIN_CONFIGS = (
    Config("1 worker", 1, 1),
    Config("2 workers", 2, 1),
    Config("4 workers", 4, 1),
)
STANDIN_MODEL = "nomic-embed-text:v1.5"


@dataclass(frozen=True)
class Run:
    texts: int  # written between the first commit and the last
    seconds: float  # between them
    wall: float  # from the workers' start to the last vector in
    load: float  # the 1-minute load average after the run

    @property
    def per_second(self) -> float:
        return self.texts / self.seconds if self.seconds > 0 else 0.0


def corpus(files: int, into: Path) -> Path:
    """The first `files` Python files of PACKAGE (by path), copied under `into`."""
    source = SITE / PACKAGE
    chosen = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)[:files]
    for path in chosen:
        target = into / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return into


def pending(db: Database) -> int:
    with db.connection("counting what is pending") as conn:
        return store.pending_counts(conn, Schema(NAME)).total


def reset(db: Database) -> int:
    """The same rows pending again, as a first index written rows first leaves them."""
    schema = Schema(NAME)
    with db.connection("resetting the vectors") as conn:
        for step in RESET:
            conn.execute(schema.sql(step))
        conn.execute('TRUNCATE "code-rag".embedding_cache')
        conn.commit()
        store.drop_vector_indexes(conn, schema)
        conn.commit()
    return pending(db)


def run_once(db: Database, config: Config, ini: Path, batch: int) -> Run:
    waiting = reset(db)
    command = [
        sys.executable, "-m", "rag_server.cli", "worker", NAME, "--once",
        "--threads", str(config.threads), "--batch", str(batch), "--poll", "0.2",
        "--config", str(ini),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}
    logs = [ini.with_name(f"worker{i}.log") for i in range(config.workers)]
    outs = [log.open("w", encoding="utf-8") for log in logs]
    started = time.perf_counter()
    procs = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        for out in outs
    ]
    first: tuple[float, int] | None = None
    last = started
    try:
        while True:
            ended = [i for i, p in enumerate(procs) if p.poll() is not None]  # before the count
            left = pending(db)
            now = time.perf_counter()
            if first is None and left < waiting:
                first = (now, left)
            if left == 0:
                last = now
                break
            failed = [i for i in ended if procs[i].returncode != 0]
            if failed or len(ended) == len(procs):  # none left to fill what is pending
                said = logs[(failed or ended)[0]].read_text(encoding="utf-8", errors="replace")
                raise SystemExit(f"the workers ended with {left} pending: {said[-2000:]}")
            time.sleep(WATCH_EVERY_S)
    finally:
        for p in procs:
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
        for out in outs:
            out.close()
    assert first is not None
    return Run(first[1], last - first[0], last - started, os.getloadavg()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each configuration")
    parser.add_argument("--files", type=int, default=200, help=f"files of {PACKAGE}")
    parser.add_argument(
        "--batch",
        type=int,
        default=32,
        help="each worker's --batch: texts per claim (smaller than the default 128, so that "
        "the last batches of a run this short leave no worker idle for long)",
    )
    parser.add_argument(
        "--embedder",
        choices=("local", "standin"),
        default="local",
        help="the bundled local model, or a stand-in that costs no processor time here",
    )
    parser.add_argument(
        "--delay", type=float, default=0.5, help="standin: seconds each request takes"
    )
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    dsn = os.environ.get("CODE_RAG_DSN", "")
    work = Path(tempfile.mkdtemp(prefix="code-rag-bench-"))
    work.chmod(0o755)
    standin = None
    try:
        tree = corpus(args.files, work / "src")
        with Database(dsn, work / "data") as db:
            project = Project(NAME, (Root(tree, PACKAGE),))
            if args.embedder == "standin":
                from tests.ollama_standin import OllamaStandin

                standin = OllamaStandin().start()
                standin.delay_seconds = args.delay
                embedding = f"provider = ollama\nmodel = {STANDIN_MODEL}\nhost = {standin.url}\n"
                embedder = make_embedder("ollama", STANDIN_MODEL, standin.url)
                configs = STANDIN_CONFIGS
            else:
                embedding = "provider = local\n"
                embedder = make_embedder("local")
                configs = CONFIGS
            try:
                swept = sweep_project(db, project, embedder, SweepOptions(defer_vectors=True))
            finally:
                embedder.close()
            ini = work / "application.ini"
            ini.write_text(
                f"[database]\ndsn = {db.dsn}\n[embedding]\n{embedding}", encoding="utf-8"
            )
            print(
                f"corpus: {swept.files_changed} files of {PACKAGE}, {swept.chunks_written} "
                f"chunks, {swept.vectors_deferred} texts pending; {args.runs} runs of each, "
                f"batches of {args.batch}, {args.embedder} model"
                + (f" answering {args.delay} s late" if standin is not None else "")
            )
            results: dict[str, list[Run]] = {c.label: [] for c in configs}
            for i in range(args.runs):  # interleaved: a burst of load hits every configuration
                for config in configs:
                    run = run_once(db, config, ini, args.batch)
                    results[config.label].append(run)
                    print(
                        f"  run {i + 1} {config.label}: {run.texts} texts in {run.seconds:.1f} s "
                        f"= {run.per_second:.1f}/s (wall {run.wall:.1f} s, load {run.load:.2f})",
                        flush=True,
                    )
            report(results)
    finally:
        if standin is not None:
            standin.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(results: dict[str, list[Run]]) -> None:
    base = statistics.median(r.per_second for r in next(iter(results.values())))
    print("\n| configuration | texts/s (median) | runs | x 1 worker | wall s (median) |")
    print("|---|---|---|---|---|")
    for label, runs in results.items():
        rate = statistics.median(r.per_second for r in runs)
        every = ", ".join(f"{r.per_second:.1f}" for r in runs)
        wall = statistics.median(r.wall for r in runs)
        print(f"| {label} | {rate:.1f} | {every} | {rate / base:.2f} | {wall:.1f} |")
    print(f"\nload average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
