"""A 100,000-file tree on this machine: `serve` indexes it from nothing, killed and restarted.

The tree: three Debian source packages side by side, one root each, as a user would point
code-rag at a monorepo of that size: the Linux kernel 6.1 (78,579 files), OpenJDK 17's class
library (15,143) and binutils 2.40 (26,796): 120,518 files, 2.0 GB. `prepare` fetches them
with apt-get (the one step that needs the network) and unpacks them; the kernel package's
`.gitignore` ends with two lines of Debian packaging (`/*`, `!/debian/`) that ignore every
file of an unpacked tree, which are taken out so the tree reads as an upstream checkout.

`run` starts `serve` on a fresh data folder with the default settings (the bundled model, file
events followed) and, while it runs: samples the memory of the server's processes (RSS, parsing
workers included) and of PostgreSQL's (PSS: their shared buffers counted once) every few
seconds; asks `index_status` every few seconds (both phases' progress); sends a `search_code`
every `--search-every` seconds (a name, or a sentence; each answer's latency, client side: an
agent asking a few questions a minute);
and kills the server with SIGKILL at each `--kill` moment (`rows:0.3`: when 30 % of the files
are in; `vectors:120`: 120 s into the vectors), then starts it again. The embedded PostgreSQL
outlives a killed server, as it would on a user's machine, and the next one joins it. After
the last kill it lets the vectors run `--vector-seconds`, then stops the server (SIGTERM) and
reads every sweep's report from the index: how many files each read and how many it found
already in, which tells whether a restart redid committed work.

    .venv/bin/python -m bench.big_tree_bench prepare --dir ../bigtree/tree
    .venv/bin/python -m bench.big_tree_bench run --tree ../bigtree/tree --work ../bigtree/run \\
        --kill rows:0.3 --kill rows:0.7 --kill vectors:120 --vector-seconds 300 --search-every 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench import machine
from bench.served import TOKEN

HERE = Path(__file__).resolve().parent.parent
PACKAGES = ("linux-source-6.1", "openjdk-17-source", "binutils-source")
PROJECT = "big"
PORT = 17191
START_TIMEOUT_S = 300.0
# index_status counts the pending vectors: seconds at a million chunks, so asked sparingly.
STATUS_EVERY_S = 10.0
QUERIES = (
    "kmalloc",
    "spin_lock_irqsave",
    "ext4_fill_super",
    "HashMap",
    "ConcurrentHashMap.computeIfAbsent",
    "bfd_elf_generic_reloc",
    "how are dirty pages written back to disk",
    "where does the scheduler pick the next task to run",
    "parse ELF section headers",
    "TCP congestion window update on ack",
    "how does the linker resolve undefined symbols",
    "thread pool executor rejects a task",
)


# --- the tree ---------------------------------------------------------------------------


def prepare(target: Path) -> None:
    """Fetch the three source packages with apt-get and unpack them under `target`."""
    target.mkdir(parents=True, exist_ok=True)
    debs = target / "debs"
    debs.mkdir(exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(debs / "x")], check=True)
    x = debs / "x"
    subprocess.run(
        ["tar", "-xf", str(next(x.glob("usr/src/linux-source-*.tar.xz")))], cwd=target, check=True
    )
    subprocess.run(
        ["tar", "-xf", str(next(x.glob("usr/src/binutils/binutils-*.tar.xz")))],
        cwd=target,
        check=True,
    )
    jdk = target / "openjdk-17"
    jdk.mkdir(exist_ok=True)
    subprocess.run(
        ["unzip", "-q", "-o", str(next(x.glob("usr/lib/jvm/openjdk-17/lib/src.zip")))],
        cwd=jdk,
        check=True,
    )
    shutil.rmtree(debs)
    for ignore in target.glob("linux-source-*/.gitignore"):
        lines = ignore.read_text().splitlines()
        if lines[-2:] == ["/*", "!/debian/"]:
            ignore.write_text("\n".join(lines[:-2]) + "\n")
    files = sum(len(f) for _, _, f in os.walk(target))
    print(f"{target}: {files:,} files")


# --- what is measured -------------------------------------------------------------------


def _children(pid: int) -> set[int]:
    tree, parents = {pid}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return tree


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes, 0 when it is gone."""
    found = {"Rss": 0, "Pss": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in found:
                found[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return found["Rss"], found["Pss"]


def _postgres(pgdata: Path) -> set[int]:
    """The postmaster serving `pgdata` and its children."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "postgres" in cmd and str(pgdata) in cmd:
                return _children(int(entry))
    return set()


class Run:
    """One server at a time on `work`, and everything measured about it."""

    def __init__(self, tree: Path, work: Path, search_every: float) -> None:
        self.tree, self.work, self.search_every = tree, work, search_every
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = time.monotonic()
        self.samples: list[dict[str, Any]] = []  # memory
        self.statuses: list[dict[str, Any]] = []
        self.searches: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.status: dict[str, Any] = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def at(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def event(self, what: str, **data: Any) -> None:
        self.events.append({"t": self.at(), "event": what, **data})
        print(f"[{self.at():7.1f} s] {what} {json.dumps(data) if data else ''}", flush=True)

    def configure(self) -> Path:
        self.work.mkdir(parents=True, exist_ok=True)
        roots = [
            {"path": str(p), "name": p.name.split("-")[0]} for p in sorted(self.tree.iterdir())
        ]
        (self.work / "rag-projects.json").write_text(
            json.dumps({"projects": {PROJECT: {"roots": roots}}}, indent=1)
        )
        config = self.work / "application.ini"
        config.write_text(
            f"[server]\nport = {PORT}\ntoken = {TOKEN}\n"
            "[paths]\ndata = data\nprojects = rag-projects.json\n"
        )
        return config

    def start(self, config: Path) -> None:
        t = time.monotonic()
        log = (self.work / "serve.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rag_server.cli", "serve", "--config", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=HERE,
        )
        with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=5) as http:
            while True:
                try:
                    if http.get(f"http://127.0.0.1:{PORT}/rag-admin").status_code == 405:
                        break
                except httpx.TransportError:
                    pass
                if self.proc.poll() is not None or time.monotonic() - t > START_TIMEOUT_S:
                    raise SystemExit(f"serve did not start: see {self.work / 'serve.log'}")
                time.sleep(0.1)
        self.event("serving", seconds_to_accept=round(time.monotonic() - t, 1))

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.event("killed", files=self.status.get("files"), pending=self.pending())

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def call(self, http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        reply = http.post(f"http://127.0.0.1:{PORT}/rag-mcp/{PROJECT}", json=body)
        result = reply.json().get("result", {})
        if reply.status_code != 200 or result.get("isError"):
            raise RuntimeError(f"{tool}: {reply.status_code} {reply.text[:200]}")
        content = result.get("structuredContent")
        if content is None:  # the JSON is in the text content
            content = json.loads(result["content"][0]["text"])
        return dict(content)

    def pending(self) -> int | None:
        return self.status.get("vectors_pending")

    def phase(self) -> str:
        s = self.status
        last = s.get("last_sweep") or {}
        if s.get("sweep_running") or last.get("outcome") not in ("ok", "partial"):
            return "rows"
        return "vectors" if s.get("vectors_pending") else "done"

    # threads

    def sample_memory(self) -> None:
        pgdata = (self.work / "data" / "pgdata").resolve()
        while not self.stop.wait(5):
            proc = self.proc
            server = _children(proc.pid) if proc and proc.poll() is None else set()
            pg = _postgres(pgdata)
            server -= pg
            rss = sum(_memory(p)[0] for p in server)
            pss = sum(_memory(p)[1] for p in pg)
            self.samples.append(
                {"t": self.at(), "phase": self.phase(), "server_rss": rss, "postgres_pss": pss}
            )

    def poll_status(self) -> None:
        with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=60) as http:
            while not self.stop.wait(STATUS_EVERY_S):
                try:
                    s = self.call(http, "index_status", {})
                except (httpx.HTTPError, RuntimeError, ValueError):
                    continue
                self.status = s
                keep = (
                    "files",
                    "chunks",
                    "sweep_running",
                    "rows_progress",
                    "vectors_pending",
                    "vectors_per_second",
                    "vectors_eta_seconds",
                    "disk_bytes",
                )
                self.statuses.append({"t": self.at(), **{k: s.get(k) for k in keep}})

    def search(self) -> None:
        n = 0
        with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=120) as http:
            while not self.stop.wait(self.search_every):
                query = QUERIES[n % len(QUERIES)]
                n += 1
                phase = self.phase()
                t = time.perf_counter()
                try:
                    hits = len(self.call(http, "search_code", {"query": query}).get("hits", []))
                    ok = True
                except (httpx.HTTPError, RuntimeError, ValueError):
                    hits, ok = 0, False
                ms = 1000 * (time.perf_counter() - t)
                self.searches.append(
                    {
                        "t": self.at(),
                        "phase": phase,
                        "query": query,
                        "ms": round(ms, 1),
                        "ok": ok,
                        "hits": hits,
                    }
                )


def sweeps(work: Path) -> list[dict[str, Any]]:
    """Every sweep's report, oldest first, read from the index."""
    from indexer.db import Database

    with Database("", work / "data").open() as db, db.connection("reading the sweeps") as conn:
        rows = conn.execute(
            f'SELECT id, outcome, report FROM "{PROJECT}".rag_sweep ORDER BY id'
        ).fetchall()
    keep = (
        "files_seen",
        "files_unchanged",
        "files_changed",
        "files_failed",
        "chunks_written",
        "vectors_deferred",
        "source_tokens",
        "seconds",
    )
    return [{"id": i, "outcome": o, **{k: (r or {}).get(k) for k in keep}} for i, o, r in rows]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def summarize(run: Run) -> dict[str, Any]:
    by_phase: dict[str, list[float]] = {}
    failed = 0
    for s in run.searches:
        if s["ok"]:
            by_phase.setdefault(s["phase"], []).append(s["ms"])
        else:
            failed += 1
    latency = {
        phase: {
            "n": len(v),
            "p50": round(statistics.median(v), 1),
            "p95": round(percentile(v, 0.95), 1),
            "max": round(max(v), 1),
        }
        for phase, v in by_phase.items()
    }
    mem = {
        phase: {
            "server_rss_max_mb": round(max(s["server_rss"] for s in group) / 2**20),
            "postgres_pss_max_mb": round(max(s["postgres_pss"] for s in group) / 2**20),
        }
        for phase in {s["phase"] for s in run.samples}
        for group in [[s for s in run.samples if s["phase"] == phase]]
    }
    return {"searches": latency, "searches_failed": failed, "memory": mem}


def run(args: argparse.Namespace) -> None:
    print(f"machine: {machine.describe()}")
    print(f"command: {machine.command()}")
    work = args.work.resolve()
    if work.exists():
        shutil.rmtree(work)
    bench = Run(args.tree.resolve(), work, args.search_every)
    config = bench.configure()
    kills = [(k.split(":")[0], float(k.split(":")[1])) for k in args.kill]
    threads = [
        threading.Thread(target=f, daemon=True)
        for f in (bench.sample_memory, bench.poll_status, bench.search)
    ]
    bench.start(config)
    for thread in threads:
        thread.start()
    vectors_since: float | None = None
    try:
        while True:
            time.sleep(1)
            phase, s = bench.phase(), bench.status
            if phase == "vectors" and vectors_since is None:
                vectors_since = time.monotonic()
                bench.event("rows in", files=s.get("files"), chunks=s.get("chunks"))
            if kills:
                kind, at = kills[0]
                progress = s.get("rows_progress") or {}
                due = (
                    kind == "rows"
                    and phase == "rows"
                    and progress.get("total")
                    and progress["done"] >= at * progress["total"]
                ) or (
                    kind == "vectors"
                    and vectors_since is not None
                    and time.monotonic() - vectors_since >= at
                )
                if due:
                    kills.pop(0)
                    bench.kill()
                    bench.status = {}
                    time.sleep(2)
                    bench.start(config)
                    if kind == "vectors":
                        vectors_since = time.monotonic()
                    continue
            if (
                not kills
                and vectors_since is not None
                and time.monotonic() - vectors_since >= args.vector_seconds
            ):
                break
            if phase == "done":
                break
    finally:
        bench.event("stopping", pending=bench.pending())
        bench.stop.set()
        bench.terminate()
    summary = {
        "machine": machine.describe(),
        "events": bench.events,
        "sweeps": sweeps(work),
        **summarize(bench),
        "last_status": bench.statuses[-1] if bench.statuses else None,
    }
    out = work / "summary.json"
    out.write_text(
        json.dumps(
            {
                **summary,
                "statuses": bench.statuses,
                "searches_all": bench.searches,
                "samples": bench.samples,
            },
            indent=1,
        )
    )
    print(json.dumps(summary, indent=1))
    print(f"everything measured: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="fetch and unpack the tree (apt-get)")
    p.add_argument("--dir", type=Path, required=True)
    r = sub.add_parser("run", help="serve it from nothing, killed and restarted")
    r.add_argument("--tree", type=Path, required=True, help="each folder in it is a root")
    r.add_argument("--work", type=Path, required=True, help="config, data and results (wiped)")
    r.add_argument("--kill", action="append", default=[], help="rows:FRACTION or vectors:SECONDS")
    r.add_argument("--vector-seconds", type=float, default=300)
    r.add_argument("--search-every", type=float, default=2.0)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.dir)
    else:
        run(args)


if __name__ == "__main__":
    main()
