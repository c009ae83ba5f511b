"""The web pages at the search benchmark's index size: a status page, and a search page next to
the `search_code` call it shows.

Corpus: the search benchmark's (bench/search_bench.py: the Python packages of
bench/sweep_bench.py, ≈ 5,800 files, ≈ 81k chunks), indexed once by the real sweep into an
embedded PostgreSQL under --cache (kept between runs) with the zero-cost embedder of
bench/sweep_bench.py: the pages' cost does not depend on which vectors the index holds, and
the build takes minutes instead of hours. The app runs under uvicorn in this process with that
embedder; a session signs in through the form, as a browser does.

Status: GET /web/p/<project> (and the home page), --requests times. Search: each query sent
as a JSON-RPC `tools/call` of `search_code` and as GET /web/p/<project>/search, one after the
other, the order alternating, --rounds times; the page's cost over the tool's is the
difference, with every snippet highlighted anew (the page's cache of highlighted snippets
emptied first) and with the snippets kept highlighted (the same page asked again).

    .venv/bin/python -m bench.web_bench build       # index once (minutes)
    .venv/bin/python -m bench.web_bench run         # the pages' latency
"""

from __future__ import annotations

import argparse
import datetime
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from bench import machine, served
from bench.sweep_bench import CORPUS, ZeroCostEmbedder, project
from indexer.db import Database, Schema, store
from indexer.sweep import SweepOptions, sweep_project
from rag_server.app import create_app
from rag_server.web import forget_highlights

HERE = Path(__file__).resolve().parent
PROJECT = "bench_web"
CACHE = HERE / ".cache" / "web-80k"
QUERIES = (
    "parse a configuration file",
    "retry a request with exponential backoff",
    "compute the inverse of a matrix",
    "tokenize text into words",
    "read a JSON body from the request",
    "connection pool with a maximum size",
    "sparse matrix multiplication",
    "highlight source code as HTML",
    "load model weights from a checkpoint",
    "validate the arguments of a function",
    "format a date as ISO 8601",
    "run a query with bound parameters",
    "cache results of an expensive call",
    "random number generator seed",
    "route a path to its handler",
    "fast fourier transform of a signal",
    "escape HTML special characters",
    "stream the response in chunks",
    "attention mask for padded tokens",
    "close the connection when done",
)


def open_database(cache: Path) -> Database:
    cache.mkdir(parents=True, exist_ok=True)
    cache.chmod(0o755)  # the embedded server runs as its own user
    return Database("", cache).open()


def build(cache: Path) -> None:
    print(f"machine: {machine.describe()}")
    with open_database(cache) as db:
        started = time.perf_counter()
        report = sweep_project(
            db, project(PROJECT, CORPUS), ZeroCostEmbedder(), SweepOptions(defer_vectors=False)
        )
        with db.reading() as conn:
            summary = store.summary(conn, Schema(PROJECT))
        print(
            f"indexed {summary.files:,} files, {summary.chunks:,} chunks "
            f"({report.files_changed:,} changed) in {time.perf_counter() - started:.0f} s"
        )


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered) * 1000:6.1f} ms, p95 {p95 * 1000:6.1f} ms"


def _timed(
    client: httpx.Client, url: str, body: dict[str, Any] | None = None, **params: str
) -> float:
    """Seconds for one answer: a POST of `body` when given, else a GET with `params`."""
    started = time.perf_counter()
    if body is not None:
        response = client.post(url, json=body)
    else:
        response = client.get(url, params=params or None)
    took = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}")
    return took


def run(cache: Path, requests: int, rounds: int) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    print(f"date: {datetime.date.today().isoformat()}, commit: {commit}")
    proj = project(PROJECT, CORPUS)
    with open_database(cache) as db:
        with db.reading() as conn:
            summary = store.summary(conn, Schema(PROJECT))
        print(f"index: {summary.files:,} files, {summary.chunks:,} chunks")
        settings = served.bench_settings(cache, {PROJECT: proj})
        app = create_app(
            settings, database=db, embedder=ZeroCostEmbedder(), schedule=False, watch=False
        )
        with (
            served.ServerThread(app) as server,
            httpx.Client(base_url=server.base, timeout=60) as page,
            served.client() as rpc,
        ):
            form = page.get("/web/sign-in").text
            csrf = re.search(r'name="csrf" value="([^"]+)"', form)
            assert csrf is not None
            signed = page.post("/web/sign-in", data={"csrf": csrf.group(1), "token": served.TOKEN})
            assert signed.status_code == 303, signed.text
            status_url = f"/web/p/{PROJECT}"
            for _ in range(3):  # warm-up: connections, templates, caches
                _timed(page, status_url)
                _timed(page, "/web/")
            status = [_timed(page, status_url) for _ in range(requests)]
            home = [_timed(page, "/web/") for _ in range(requests)]
            print(f"status page ({requests} requests): {_ms(status)}")
            print(f"home page   ({requests} requests): {_ms(home)}")

            tool: list[float] = []
            cold: list[float] = []
            warm: list[float] = []
            for query in QUERIES:  # warm-up: every query once through the tool
                served.tool_call(rpc, server.url(PROJECT), "search_code", {"query": query})
            _timed(page, f"{status_url}/search", q="warm up the templates")
            for n in range(rounds):
                for i, query in enumerate(QUERIES):
                    call = {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {"name": "search_code", "arguments": {"query": query}},
                    }
                    for way in ("tool", "page") if (n + i) % 2 == 0 else ("page", "tool"):
                        if way == "tool":
                            tool.append(_timed(rpc, server.url(PROJECT), call))
                        else:
                            forget_highlights()  # every snippet highlighted anew
                            cold.append(_timed(page, f"{status_url}/search", q=query))
                            warm.append(_timed(page, f"{status_url}/search", q=query))
            print(f"search_code over MCP   ({len(tool)} calls): {_ms(tool)}")
            for what, pages in (("highlighted anew", cold), ("kept highlighted", warm)):
                extra = statistics.median(pages) - statistics.median(tool)
                print(
                    f"search page, snippets {what} ({len(pages)} pages): {_ms(pages)}; "
                    f"{extra * 1000:+.1f} ms over the tool (medians)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("build", "run"))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5, help="times each query is asked")
    args = parser.parse_args()
    if args.what == "build":
        build(args.cache)
    else:
        run(args.cache, args.requests, args.rounds)


if __name__ == "__main__":
    main()
