"""Startup benchmark: the first searches after `serve` starts, on an indexer and on a replica.

Corpus: a copy of this Python's standard library (real code no one here wrote): the first
1,352 files by path (`--files`), its tests included, 25,063 chunks; one project, indexed once by
`./bld scan` through the Ollama path against a stand-in that answers at once with cheap
vectors (768-d, as nomic-embed-text's), so only code-rag's own work counts. Then, per run,
`serve` starts as a subprocess (it starts the embedded PostgreSQL itself, as a restart does)
and, as soon as it accepts connections, one client sends `--searches` `search_code` calls in a
row, each a distinct query (the server starts with no query vector cached: each embeds its
query; every start is asked the same ones), then as many other queries right after: the
latency of each, client side, over HTTP. Roles: the indexer (`[indexer] enabled = true`:
scheduler, watcher, background vectors) and a read replica (`enabled = false`) of the same
database. `--code` alternates checkouts (the code `serve` runs: a baseline and this one) on the
same index. Goal: p95 over the first 200 <= 60 ms.

    .venv/bin/python -m bench.startup_bench --runs 3
    .venv/bin/python -m bench.startup_bench --runs 3 --code ../base --code .   # before/after
    .venv/bin/python -m bench.startup_bench --keep bench/.cache/startup --spy /tmp/spy

`--keep DIR` keeps the tree and the index between invocations (built once); `--spy DIR`
records each server's first seconds with py-spy (installed separately) into DIR. The scan's
own summary (its time, files/s, the embedding work) is printed as `./bld scan` prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench import machine
from bench.served import TOKEN
from tests.ollama_standin import OllamaStandin

PROJECT = "stdlib"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
# Installed packages are not the standard library.
SKIPPED_PARTS = frozenset({"site-packages", "__pycache__"})
DEFAULT_FILES = 1352
HERE = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0
WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]+")
DOCSTRING_RE = re.compile(r'def (\w+)\([^)]*\)[^:]*:\s*\n\s+"""([^\n"]{12,80})')


class FreeStandin(OllamaStandin):
    """The Ollama stand-in, answering every input at once with a cheap vector: its words
    hashed into the dimensions (texts sharing words lie close, as a model's do), rounded to
    four digits so the JSON stays small. Only code-rag's side of the exchange costs."""

    def embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        raw = body.get("input")
        inputs = [raw] if isinstance(raw, str) else list(raw or [])
        with self._lock:
            self.embed_requests += 1
            self.embed_inputs += len(inputs)
            self.embedded_inputs += len(inputs)
        dimension = next(iter(self.models.values())).dimension
        vectors = [_vector(text, dimension) for text in inputs]
        return 200, {"model": body.get("model"), "embeddings": vectors, "prompt_eval_count": 0}


def _vector(text: str, dimension: int) -> list[float]:
    words = WORD_RE.findall(text) or [text]
    hashes = np.fromiter((zlib.crc32(w.encode()) for w in words), np.int64, len(words))
    signs = np.where((hashes >> 16) & 1, 1.0, -1.0)
    v = np.bincount(hashes % dimension, weights=signs, minlength=dimension)
    norm = float(np.linalg.norm(v)) or 1.0
    rounded: list[float] = np.round(v / norm, 4).tolist()
    return rounded


def copy_corpus(tree: Path, files: int) -> int:
    """The first `files` modules of the standard library (sorted paths) copied under `tree`."""
    found = sorted(
        p
        for p in STDLIB.rglob("*.py")
        if not SKIPPED_PARTS.intersection(p.relative_to(STDLIB).parts)
    )[:files]
    for source in found:
        target = tree / source.relative_to(STDLIB)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return len(found)


def queries(tree: Path, count: int) -> list[str]:
    """`count` distinct queries drawn from the corpus: a function's docstring line (a question
    in words) alternating with its name (an identifier), spread over the tree."""
    pairs: list[tuple[str, str]] = []
    for path in sorted(tree.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        pairs.extend((m.group(1), m.group(2).strip()) for m in DOCSTRING_RE.finditer(text))
    distinct = list(dict.fromkeys(pair[i % 2] for i, pair in enumerate(pairs)))
    step = max(1, len(distinct) // count)
    return distinct[::step][:count]


def write_config(work: Path, standin: OllamaStandin, port: int, *, indexer: bool) -> Path:
    """application.ini of one role; both roles share the data folder (and so the database)."""
    role = "indexer" if indexer else "replica"
    path = work / f"{role}.ini"
    path.write_text(
        "\n".join(
            [
                "[server]",
                f"port = {port}",
                f"token = {TOKEN}",
                "[embedding]",
                "provider = ollama",
                f"host = {standin.url}",
                "[indexer]",
                f"enabled = {'true' if indexer else 'false'}",
                "[paths]",
                "data = data",
                "projects = rag-projects.json",
                "",
            ]
        )
    )
    return path


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rag_server.cli", *args]


def build(work: Path, tree: Path, standin: OllamaStandin, files: int) -> dict[str, Any]:
    """The tree copied and indexed once by `./bld scan` (its vectors included)."""
    (work / "rag-projects.json").write_text(
        json.dumps({"projects": {PROJECT: {"roots": [str(tree)]}}})
    )
    copied = copy_corpus(tree, files)
    config = write_config(work, standin, free_port(), indexer=True)
    t = time.perf_counter()
    done = subprocess.run(
        cli("scan", PROJECT, "--config", str(config)), capture_output=True, text=True
    )
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"scan failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    print(f"built: {copied:,} files copied, scan {seconds:.1f} s (./bld scan prints):")
    print("  " + "\n  ".join(done.stdout.strip().splitlines()[-8:]))
    return {"files": copied, "scan_s": seconds}


class Server:
    """`serve` in a subprocess of its own (its log in a file), stopped with SIGTERM."""

    def __init__(self, config: Path, log: Path, code: Path) -> None:
        self.config = config
        self.log = log
        self.code = code
        self.port = int(re.search(r"port = (\d+)", config.read_text()).group(1))  # type: ignore[union-attr]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start it; the seconds until it accepts connections (its lifespan done)."""
        t = time.perf_counter()
        with self.log.open("wb") as out:
            # Run from the checkout: its packages come first on the module path.
            self.proc = subprocess.Popen(
                cli("serve", "--config", str(self.config)),
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.code,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=5) as http:
            while True:
                if self.proc.poll() is not None:
                    raise SystemExit(f"serve exited: see {self.log}\n{self.log.read_text()}")
                try:
                    if http.get(f"{self.base}/rag-admin").status_code == 405:
                        return time.perf_counter() - t
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit(f"serve did not start within {START_TIMEOUT_S:.0f} s")
                time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def search_latencies(base: str, asked: Sequence[str]) -> list[float]:
    """Each query's `search_code` round trip in milliseconds, one after another."""
    url = f"{base}/rag-mcp/{PROJECT}"
    times: list[float] = []
    with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=60) as http:
        for i, query in enumerate(asked):
            body = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "search_code", "arguments": {"query": query}},
            }
            t = time.perf_counter()
            reply = http.post(url, json=body)
            times.append(1000 * (time.perf_counter() - t))
            result = reply.json().get("result", {})
            if reply.status_code != 200 or result.get("isError"):
                raise SystemExit(f"search failed: {reply.status_code} {reply.text[:300]}")
    return times


def spy(pid: int, out: Path, seconds: int) -> subprocess.Popen[bytes] | None:
    """py-spy recording the server's threads for `seconds`, if py-spy is installed."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(exe).exists():
        print("py-spy is not installed: pip install py-spy")
        return None
    return subprocess.Popen(
        [exe, "record", "--pid", str(pid), "--duration", str(seconds), "--threads",
         "--idle", "--format", "raw", "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def describe(times: Sequence[float]) -> str:
    slow = sum(t > 100 for t in times)
    return (
        f"p50 {statistics.median(times):6.1f} ms  p95 {percentile(times, 0.95):7.1f} ms  "
        f"max {max(times):7.1f} ms  first {times[0]:6.1f} ms  first 10 mean "
        f"{statistics.fmean(times[:10]):6.1f} ms  over 100 ms: {slow}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1, help="starts per role (and checkout)")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--files", type=int, default=DEFAULT_FILES)
    parser.add_argument("--roles", default="indexer,replica")
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        help="a checkout whose code serve runs (repeat: alternated per run); default this one",
    )
    parser.add_argument("--keep", type=Path, help="keep the tree and the index here")
    parser.add_argument("--spy", type=Path, help="py-spy each server's first seconds into here")
    parser.add_argument("--spy-seconds", type=int, default=20)
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="code-rag-startup-"))
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    codes = [c.resolve() for c in args.code or [HERE]]
    results: dict[tuple[Path, str], list[tuple[list[float], list[float]]]] = {}
    try:
        with FreeStandin() as standin:
            if not (work / "data").exists():
                build(work, tree, standin, args.files)
            asked = queries(tree, 2 * args.searches)
            if len(asked) < 2 * args.searches:
                raise SystemExit(f"only {len(asked)} distinct queries in the corpus")
            first, then = asked[0::2], asked[1::2]
            for run in range(args.runs):
                for code in codes:
                    for role in roles:
                        times = one_start(work, standin, code, role, run, first, then, args)
                        results.setdefault((code, role), []).append(times)
        print("medians over runs (first: the searches right after the start; then: as many "
              "others right after them):")  # fmt: skip
        for (code, role), runs in results.items():
            stats = {
                "p50": [statistics.median(f) for f, _ in runs],
                "p95": [percentile(f, 0.95) for f, _ in runs],
                "max": [max(f) for f, _ in runs],
                "then p50": [statistics.median(t) for _, t in runs],
                "then p95": [percentile(t, 0.95) for _, t in runs],
            }
            shown = ", ".join(f"{k} {statistics.median(v):.1f} ms" for k, v in stats.items())
            print(f"  {code.name} {role}: first {shown} (goal: first p95 <= 60 ms)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def one_start(
    work: Path,
    standin: OllamaStandin,
    code: Path,
    role: str,
    run: int,
    first: Sequence[str],
    then: Sequence[str],
    args: argparse.Namespace,
) -> tuple[list[float], list[float]]:
    """One start of `serve` (`code`'s, as `role`): the first searches, then as many others."""
    config = write_config(work, standin, free_port(), indexer=role == "indexer")
    server = Server(config, work / f"{code.name}-{role}-{run + 1}.log", code)
    started = server.start()
    assert server.proc is not None
    recorder = None
    if args.spy is not None:
        args.spy.mkdir(parents=True, exist_ok=True)
        recorder = spy(server.proc.pid, args.spy / f"{code.name}-{role}-{run + 1}.txt",
                       args.spy_seconds)  # fmt: skip
    try:
        times = search_latencies(server.base, first)
        later = search_latencies(server.base, then)
    finally:
        if recorder is not None:
            recorder.wait()
        server.stop()
    print(
        f"run {run + 1} {code.name} {role:<7}: up in {started:4.1f} s; first {describe(times)}; "
        f"then p50 {statistics.median(later):.1f} ms p95 {percentile(later, 0.95):.1f} ms; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return times, later


if __name__ == "__main__":
    main()
