"""What the local embedder costs the commands a person runs: wall time, memory, query latency.

    .venv/bin/python -m bench.footprint_bench                 # all parts, ~5 minutes
    .venv/bin/python -m bench.footprint_bench --part cli --runs 7

On the demo project (`./bld init`'s: this checkout's README, docs and packages), in a scratch
folder with its own application.ini and embedded PostgreSQL, default [embedding] (provider =
local, the bundled int8 model):

- cli: `./bld scan code_rag --yes` with nothing changed, and a one-shot `./bld search`, each
  run through the launcher under `/usr/bin/time -v` (wall time and peak RSS of the process);
  once with `./bld serve` running (as after `./bld up`: the database is up) and once without
  (each command starts and stops the embedded database itself).
- server: RSS of `./bld serve` after start-up, and after a warm-up and 20 searches over HTTP.
- query: `embed_query` latency in one process, idle, then while a full sweep of the demo
  project (every chunk re-embedded) runs in another thread of the same process, as the
  server's scheduler would; p50 / p95 and the ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench import machine
from rag_server.config import DEMO_PROJECT, load_settings, write_initial_config

ROOT = Path(__file__).resolve().parent.parent

QUERIES = [
    "where are files hashed",
    "compare the token in constant time",
    "split long inputs into windows",
    "reciprocal rank fusion of keyword and vector hits",
    "drop the schema of a removed project",
    "embed a query with the local model",
    "which files does the walker skip",
    "retry an Ollama batch by halving it",
]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CODE_RAG_")}


def timed(folder: Path, *args: str) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB, output) of `./bld --config … args` under /usr/bin/time -v."""
    command = ["/usr/bin/time", "-v", str(ROOT / "bld"), *args, "--config",
               str(folder / "application.ini")]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=env(), capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    assert wall and rss, done.stderr
    hours = float(wall.group(1) or 0)
    seconds = hours * 3600 + float(wall.group(2)) * 60 + float(wall.group(3))
    return seconds, int(rss.group(1)) / 1024, done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_of(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


class Server:
    """`./bld serve` in `folder` (the launcher execs Python: its pid is the server's)."""

    def __init__(self, folder: Path) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(ROOT / "bld"), "serve", "--port", str(self.port), "--config",
             str(folder / "application.ini")],
            cwd=folder, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        settings = load_settings(folder / "application.ini")
        self.token = settings.server.token
        self.url = f"http://127.0.0.1:{self.port}/rag-mcp/{DEMO_PROJECT}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                answer = self.call({"jsonrpc": "2.0", "id": 1, "method": "ping"})
                if answer.status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        raise SystemExit("the server did not answer")

    def call(self, body: dict[str, object]) -> httpx.Response:
        return httpx.post(
            self.url,
            json=body,
            headers={"X-RAG-Token": self.token, "MCP-Protocol-Version": "2025-11-25"},
            timeout=60,
        )

    def search(self, query: str) -> None:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_code", "arguments": {"query": query}}}  # fmt: skip
        result = self.call(body).json()["result"]
        assert result["isError"] is False, result

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def part_cli(folder: Path, runs: int) -> None:
    def measure(label: str) -> None:
        scans = [timed(folder, "scan", DEMO_PROJECT, "--yes") for _ in range(runs)]
        searches = [timed(folder, "search", DEMO_PROJECT, q) for q in QUERIES[:runs]]
        assert all(" 0 indexed" in out for _, _, out in scans), scans[0][2]
        print(f"\n{label} ({runs} runs each; median [min–max])")
        print("| command | wall s | peak RSS MiB |")
        print("|---|---|---|")
        for name, rows in (("scan code_rag --yes, nothing changed", scans),
                           ("search code_rag QUERY, one-shot", searches)):  # fmt: skip
            walls = [w for w, _, _ in rows]
            rss = [r for _, r, _ in rows]
            print(
                f"| {name} | {statistics.median(walls):.2f} [{min(walls):.2f}–{max(walls):.2f}] "
                f"| {statistics.median(rss):.0f} [{min(rss):.0f}–{max(rss):.0f}] |"
            )

    server = Server(folder)
    try:
        measure("with ./bld serve running (the database is up)")
    finally:
        server.stop()
    measure("without a server (each command starts and stops the embedded database)")


def part_server(folder: Path) -> None:
    server = Server(folder)
    try:
        started = rss_of(server.proc.pid)
        for query in QUERIES[:2]:  # warm-up: the query session is created on the first
            server.search(query)
        warm = rss_of(server.proc.pid)
        latencies = []
        for i in range(20):
            t = time.perf_counter()
            server.search(QUERIES[i % len(QUERIES)])
            latencies.append(time.perf_counter() - t)
        after = rss_of(server.proc.pid)
    finally:
        server.stop()
    print("\n./bld serve, provider = local (RSS / peak RSS of the server process, MiB)")
    print(f"- after start-up: {started[0]:.0f} / {started[1]:.0f}")
    print(f"- after 2 warm-up searches: {warm[0]:.0f} / {warm[1]:.0f}")
    print(
        f"- after 20 more searches: {after[0]:.0f} / {after[1]:.0f} "
        f"(search_code over HTTP p50 {statistics.median(latencies) * 1000:.0f} ms)"
    )


def part_query(folder: Path, samples: int) -> None:
    from indexer.db import Database
    from indexer.sweep import sweep_project
    from rag_server.config import make_settings_embedder, sweep_options

    settings = load_settings(folder / "application.ini")
    embedder = make_settings_embedder(settings)
    if embedder is None:
        raise SystemExit("this bench measures a model: set [embedding] provider = local")
    embedder.embed_query("warm up")

    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(int(q * len(values)), len(values) - 1)] * 1000

    idle = []
    for i in range(samples):
        t = time.perf_counter()
        embedder.embed_query(QUERIES[i % len(QUERIES)])
        idle.append(time.perf_counter() - t)
        time.sleep(0.05)
    during: list[float] = []
    done = threading.Event()
    report = {}

    def sweep() -> None:
        with Database(settings.database.dsn, settings.data_dir).open() as db:
            report["r"] = sweep_project(
                db, settings.projects[DEMO_PROJECT], embedder,
                dataclasses.replace(sweep_options(settings), defer_vectors=False),
                full=True, wait=True,
            )  # fmt: skip
        done.set()

    thread = threading.Thread(target=sweep)
    started = time.perf_counter()
    thread.start()
    time.sleep(2)  # past the walk: embedding is under way
    i = 0
    while not done.is_set():
        t = time.perf_counter()
        embedder.embed_query(QUERIES[i % len(QUERIES)])
        during.append(time.perf_counter() - t)
        i += 1
        time.sleep(0.05)
    thread.join()
    sweep_s = time.perf_counter() - started
    chunks = report["r"].chunks_written
    print(f"\nquery embedding, idle vs during a full sweep ({chunks} chunks in {sweep_s:.0f} s)")
    print("| | queries | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    print(f"| idle | {len(idle)} | {p(idle, 0.5):.1f} | {p(idle, 0.95):.1f} |")
    print(f"| during the sweep | {len(during)} | {p(during, 0.5):.1f} | {p(during, 0.95):.1f} |")
    print(f"p95 ratio during / idle: {p(during, 0.95) / p(idle, 0.95):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("cli", "server", "query", "all"), default="all")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=60, help="idle queries (part query)")
    parser.add_argument("--keep", type=Path, help="reuse/keep this scratch folder")
    args = parser.parse_args()
    print(machine.describe())
    print(f"command: {machine.command()}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="code-rag-footprint-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # the embedded server runs as its own user and must reach its data
    try:
        if not (folder / "application.ini").exists():
            write_initial_config(folder / "application.ini")
        wall, rss, out = timed(folder, "scan", DEMO_PROJECT, "--yes")
        print(f"\nfirst scan (index or refresh the demo project): {wall:.1f} s, {rss:.0f} MiB")
        print("   " + out.strip().splitlines()[-1])
        if args.part in ("cli", "all"):
            part_cli(folder, args.runs)
        if args.part in ("server", "all"):
            part_server(folder)
        if args.part in ("query", "all"):
            part_query(folder, args.samples)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
