"""Freshness benchmark: how long after a save `search_code` (over HTTP) returns the new code.

A small project (copies of this checkout's `indexer/*.py`) is indexed with the default local
embedder and served in this process with file events on (the default). Each round writes a new
file holding a unique word, then polls `search_code` for that word every 20 ms until the file is
the first hit and its snippet shows the word; then rewrites it with another word (a change);
then deletes it and waits until it is no longer returned. Times run from the write to the
first answer that shows it.

    .venv/bin/python -m bench.watch_bench                 # 30 rounds
    .venv/bin/python -m bench.watch_bench --rounds 50 --debounce-ms 300
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench import served
from bench.machine import describe
from bench.served import ServerThread, bench_settings
from indexer.db import Database
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project
from rag_server.app import create_app
from rag_server.config import (
    IndexerSettings,
)

HERE = Path(__file__).resolve().parent

PROJECT = "bench_watch"
POLL_S = 0.02
TIMEOUT_S = 30.0


def search_hits(client: httpx.Client, url: str, word: str) -> list[tuple[str, str]]:
    """(path, snippet) of each hit for `word`, best first."""
    response = client.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_code", "arguments": {"query": word, "top_k": 3}},
        },
        headers={"MCP-Protocol-Version": "2025-11-25"},
    )
    result: dict[str, Any] = response.json()["result"]
    return [(hit["path"], hit["snippet"]) for hit in result["structuredContent"]["hits"]]


def wait_until(check: Callable[[], bool]) -> float:
    """Seconds until `check` holds (polled every POLL_S), from now."""
    started = time.perf_counter()
    while time.perf_counter() - started < TIMEOUT_S:
        if check():
            return time.perf_counter() - started
        time.sleep(POLL_S)
    raise TimeoutError("the index did not follow the change within 30 s")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--debounce-ms", type=int, default=IndexerSettings().watch_debounce_ms)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)

    work = Path(tempfile.mkdtemp(prefix="code-rag-watch-bench-"))
    work.chmod(0o755)  # the embedded server runs as its own user
    root = work / "src"
    shutil.copytree(HERE.parent / "indexer", root, ignore=shutil.ignore_patterns("__pycache__"))
    db = Database("", work / ".data").open()
    embedder = make_embedder("local")
    project = Project(PROJECT, (Root(root.resolve(), "src"),))
    first = sweep_project(db, project, embedder, SweepOptions(defer_vectors=False))
    settings = bench_settings(
        work / ".data",
        {PROJECT: project},
        indexer=IndexerSettings(watch_debounce_ms=args.debounce_ms),
    )
    app = create_app(settings, database=db, embedder=embedder, schedule=False)
    added: list[float] = []
    changed: list[float] = []
    deleted: list[float] = []
    try:
        with (
            ServerThread(app) as server,
            served.client() as client,
        ):
            url = server.url(PROJECT)
            wait_until(lambda: bool(app.state.service.status(PROJECT)["watching"]))
            search_hits(client, url, "warm up the model and the pool")
            for i in range(args.rounds):
                target = root / f"fresh_{i:03d}.py"
                name = target.name
                # Letters only: an identifier is also split into its parts (digits apart), and
                # the two words must share no part, or the old text would answer the new query.
                tag = "".join(chr(ord("a") + int(d)) for d in f"{i:03d}")
                new, other = f"kiwiword{tag}", f"mangoword{tag}"

                def first_is(word: str, path: str = name) -> Callable[[], bool]:
                    """The file is the first hit, and the hit shows the word (not old text)."""

                    def check() -> bool:
                        hits = search_hits(client, url, word)
                        return bool(hits) and hits[0][0] == path and word in hits[0][1]

                    return check

                def absent(word: str, path: str = name) -> Callable[[], bool]:
                    return lambda: path not in {p for p, _ in search_hits(client, url, word)}

                target.write_text(f"def {new}(payload):\n    return payload\n")
                added.append(wait_until(first_is(new)))
                target.write_text(f"def {other}(payload):\n    return payload\n")
                changed.append(wait_until(first_is(other)))
                target.unlink()
                deleted.append(wait_until(absent(other)))
                time.sleep(0.2)
    finally:
        db.close()
        shutil.rmtree(work, ignore_errors=True)

    print(f"machine: {describe()}")
    print(
        f"project: {first.files_seen} files, {first.chunks_written} chunks; model "
        f"{embedder.identity.describe()}; debounce {args.debounce_ms} ms; {args.rounds} rounds"
    )
    print("| change | p50 s | p95 s | max s |")
    print("|---|---:|---:|---:|")
    for name, values in (("new file", added), ("changed file", changed), ("deleted file", deleted)):
        print(
            f"| {name} | {statistics.median(values):.2f} | {pct(values, 0.95):.2f} | "
            f"{max(values):.2f} |"
        )


if __name__ == "__main__":
    main()
