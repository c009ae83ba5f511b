"""Load benchmark: N concurrent MCP clients on two projects while sweeps run, for a fixed time.

Everything is real except the embedder: an embedded PostgreSQL of its own (a temporary data
folder), the Litestar app under uvicorn on 127.0.0.1, JSON-RPC over HTTP (httpx, one client per
worker thread). The embedder is the Ollama stand-in (hashed trigrams, no model), so the figures
measure the server, the pool and the database under contention, not a model. The two projects
are this checkout's own code (`indexer/`, `chunkers/`, `rag_server/` and `tests/`). While the
clients run, the admin endpoint re-sweeps the first project with `full: true` back to back, so
every search competes with a sweep rewriting every row it reads.

Each worker loops until the time is up or it has sent --max-requests: 70 % `search_code`,
15 % `get_chunk` (an id from its last hits), 15 % `list_repos`/`index_status`, alternating
projects. An error is any answer that is not HTTP 200 with a result whose `isError` is false,
or a hit from the other project. Bounded in time and count; binds only to 127.0.0.1.

    .venv/bin/python -m bench.load_bench                         # 8 clients, 30 s
    .venv/bin/python -m bench.load_bench --clients 16 --seconds 60
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from bench.machine import describe
from bench.served import TOKEN, ServerThread, bench_settings, stop_embedded
from indexer.db import Database
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project
from rag_server.app import create_app
from rag_server.config import EmbeddingSettings
from tests.ollama_standin import OllamaStandin

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STANDIN_MODEL = "nomic-embed-text:v1.5"  # a model the stand-in serves

QUERIES = [
    "where the sweep takes its advisory lock",
    "embed a batch and halve it when refused",
    "reciprocal rank fusion",
    "parse one JSON-RPC message",
    "constant time token comparison",
    "walk the roots and skip secret files",
    "tree-sitter symbol chunks",
    "connection pool factory",
    "ProjectNotFound",
    "sweep_project",
    "stand-in for Ollama",
    "the scheduler plans the next sweep",
]
V25 = {"MCP-Protocol-Version": "2025-11-25", "X-RAG-Token": TOKEN}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Worker(threading.Thread):
    def __init__(self, base: str, projects: list[str], until: float, limit: int, seed: int):
        super().__init__(daemon=True)
        self.base, self.projects, self.until, self.limit = base, projects, until, limit
        self.rng = random.Random(seed)
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.last_hits: dict[str, list[int]] = defaultdict(list)

    def call(self, http: httpx.Client, project: str, tool: str, args: dict[str, Any]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        started = time.perf_counter()
        try:
            response = http.post(f"/rag-mcp/{project}", json=body)
        except httpx.HTTPError as exc:
            self.errors.append(f"{tool}: {type(exc).__name__}")
            return None
        self.latencies[tool].append(time.perf_counter() - started)
        if response.status_code != 200:
            self.errors.append(f"{tool}: HTTP {response.status_code}")
            return None
        result = response.json().get("result")
        if result is None or result.get("isError"):
            self.errors.append(f"{tool}: {str(response.json())[:200]}")
            return None
        return result.get("structuredContent")

    def run(self) -> None:
        with httpx.Client(base_url=self.base, headers=V25, timeout=60) as http:
            sent = 0
            while time.monotonic() < self.until and sent < self.limit:
                project = self.projects[sent % len(self.projects)]
                roll = self.rng.random()
                if roll < 0.70:
                    query = self.rng.choice(QUERIES)
                    found = self.call(http, project, "search_code", {"query": query, "top_k": 10})
                    if found is not None:
                        self.last_hits[project] = [h["chunk_id"] for h in found["hits"]]
                        other = [p for p in self.projects if p != project]
                        if any(h["repo"] in other for h in found["hits"]):
                            self.errors.append("search_code: a hit from the other project")
                elif roll < 0.85 and self.last_hits[project]:
                    chunk_id = self.rng.choice(self.last_hits[project])
                    # An id may vanish when the concurrent full sweep rewrites the project:
                    # asking for it is still a request, and "gone" is a correct answer.
                    self.call_chunk(http, project, chunk_id)
                else:
                    tool = "list_repos" if roll < 0.93 else "index_status"
                    self.call(http, project, tool, {})
                sent += 1

    def call_chunk(self, http: httpx.Client, project: str, chunk_id: int) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_chunk", "arguments": {"chunk_id": chunk_id}},
        }
        started = time.perf_counter()
        try:
            response = http.post(f"/rag-mcp/{project}", json=body)
        except httpx.HTTPError as exc:
            self.errors.append(f"get_chunk: {type(exc).__name__}")
            return
        self.latencies["get_chunk"].append(time.perf_counter() - started)
        result = response.json().get("result") if response.status_code == 200 else None
        if result is None:
            self.errors.append(f"get_chunk: HTTP {response.status_code}")
        elif result.get("isError") and "no chunk" not in result["content"][0]["text"].lower():
            self.errors.append(f"get_chunk: {result['content'][0]['text'][:200]}")


def sweeper(base: str, project: str, until: float, outcomes: list[str]) -> None:
    """Re-sweep `project` (full) back to back through the admin endpoint until `until`."""
    with httpx.Client(base_url=base, headers={"X-RAG-Token": TOKEN}, timeout=60) as http:

        def admin(method: str, params: dict[str, Any]) -> Any:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            return http.post("/rag-admin", json=body).json()["result"]

        while time.monotonic() < until:
            run = admin("reindex", {"project": project, "full": True})["run_id"]
            while time.monotonic() < until + 120:
                status = admin("status", {"project": project})
                last = status.get("last_run") or {}
                if status["current_run"] is None and last.get("run_id") == run:
                    outcomes.append(last["outcome"])
                    break
                time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--max-requests", type=int, default=5000, help="per client")
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="code-rag-load-"))
    data.chmod(0o755)
    db = Database("", data / "db").open()
    try:
        with OllamaStandin() as standin:
            code = Project(
                "load_code",
                tuple(
                    Root((ROOT / name).resolve(), name)
                    for name in ("indexer", "chunkers", "rag_server")
                ),
            )
            tests = Project("load_tests", (Root((ROOT / "tests").resolve(), "tests"),))
            embedder = make_embedder("ollama", STANDIN_MODEL, standin.url)
            for project in (code, tests):
                report = sweep_project(db, project, embedder, SweepOptions(defer_vectors=False))
                print(f"indexed {project.name}: {report.files_changed} files", file=sys.stderr)
            settings = bench_settings(
                data / "db",
                {code.name: code, tests.name: tests},
                embedding=EmbeddingSettings("ollama", STANDIN_MODEL, standin.url),
                dsn=db.dsn,
            )
            app = create_app(settings, database=db, embedder=embedder, schedule=False)
            with ServerThread(app) as server:
                until = time.monotonic() + args.seconds
                outcomes: list[str] = []
                sweeps = threading.Thread(
                    target=sweeper, args=(server.base, code.name, until, outcomes), daemon=True
                )
                workers = [
                    Worker(server.base, [code.name, tests.name], until, args.max_requests, seed)
                    for seed in range(args.clients)
                ]
                started = time.monotonic()
                sweeps.start()
                for worker in workers:
                    worker.start()
                for worker in workers:
                    worker.join(timeout=args.seconds + 120)
                elapsed = time.monotonic() - started
                sweeps.join(timeout=180)
            report_figures(args, workers, elapsed, outcomes)
    finally:
        db.close()
        stop_embedded(data / "db")
        shutil.rmtree(data, ignore_errors=True)


def report_figures(
    args: argparse.Namespace, workers: list[Worker], elapsed: float, sweeps: list[str]
) -> None:
    by_tool: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    for worker in workers:
        for tool, values in worker.latencies.items():
            by_tool[tool].extend(values)
        errors.extend(worker.errors)
    every = [v for values in by_tool.values() for v in values]
    print(describe())
    print(
        f"{args.clients} clients, 2 projects, {elapsed:.1f} s, "
        f"{len(sweeps)} full sweeps of load_code finished meanwhile ({', '.join(sweeps)})"
    )
    print("| tool | requests | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for tool in sorted(by_tool):
        values = by_tool[tool]
        print(
            f"| {tool} | {len(values)} | {statistics.median(values) * 1000:.1f} | "
            f"{percentile(values, 0.95) * 1000:.1f} | {percentile(values, 0.99) * 1000:.1f} |"
        )
    print(
        f"| all | {len(every)} | {statistics.median(every) * 1000:.1f} | "
        f"{percentile(every, 0.95) * 1000:.1f} | {percentile(every, 0.99) * 1000:.1f} |"
    )
    print(f"throughput: {len(every) / elapsed:.1f} requests/s; errors: {len(errors)}")
    for line in sorted(set(errors))[:10]:
        print(f"  error: {line}")


if __name__ == "__main__":
    main()
