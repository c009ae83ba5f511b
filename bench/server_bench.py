"""Server benchmark: `search_code` over HTTP at >= 100k chunks, and the server's memory.

The database side is synthetic: one project of N chunks (10 per file) with random unit vectors
of the local model's dimension and word-salad content from a small code vocabulary, built once
and kept under --data. The query side is real: the bundled local model embeds every query.
The app runs under uvicorn in this process; requests go over HTTP (httpx, JSON-RPC tools/call).
Each request's query-embedding time is recorded inside the server, so the latency splits into
"embed" and "rest" (HTTP, JSON-RPC, database search, result shaping).

    .venv/bin/python bench/server_bench.py                      # 100k chunks, 300 requests
    .venv/bin/python bench/server_bench.py --chunks 200000 --requests 500
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import psutil  # noqa: E402

from indexer.db import (  # noqa: E402
    Database,
    statements,
    store,
)
from indexer.embed import (  # noqa: E402
    Embedder,
    make_embedder,
)
from indexer.project import Project, Root  # noqa: E402
from rag_server.app import create_app  # noqa: E402
from rag_server.config import (  # noqa: E402
    DatabaseSettings,
    EmbeddingSettings,
    IndexerSettings,
    SearchSettings,
    ServerSettings,
    Settings,
)

PROJECT = "bench_server"
TOKEN = "bench-token-0123456789abcdef"
CHUNKS_PER_FILE = 10
WORDS = [
    "invoice",
    "order",
    "customer",
    "payment",
    "retry",
    "backoff",
    "timeout",
    "connection",
    "pool",
    "cache",
    "token",
    "parse",
    "config",
    "schema",
    "migration",
    "index",
    "vector",
    "search",
    "query",
    "embed",
    "chunk",
    "file",
    "path",
    "repo",
    "sweep",
    "lock",
    "user",
    "session",
    "request",
    "response",
    "handler",
    "route",
    "error",
    "message",
    "logger",
    "metric",
    "queue",
    "worker",
    "thread",
    "async",
    "await",
    "future",
    "stream",
    "buffer",
    "socket",
    "client",
    "server",
    "proxy",
    "header",
    "cookie",
    "auth",
    "hash",
    "digest",
    "encode",
    "decode",
    "serialize",
    "json",
    "yaml",
    "csv",
    "table",
    "column",
    "row",
    "transaction",
    "commit",
    "rollback",
    "cursor",
    "fetch",
    "insert",
    "update",
    "delete",
    "select",
    "join",
    "filter",
    "sort",
    "limit",
    "offset",
    "page",
]
QUERIES = [
    "retry a failed request with exponential backoff",
    "where is the invoice total computed",
    "parse the configuration file",
    "connection pool timeout handling",
    "commit the transaction or roll back",
    "hash the file content",
    "serialize the response as json",
    "authenticate the user session token",
    "cache lookup before the database query",
    "stream the buffer to the socket",
    "sort and paginate the rows",
    "migrate the schema",
]


class TimedEmbedder:
    """The real embedder, with each query's embedding time recorded (the "embed" share)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.query_seconds: list[float] = []
        self._lock = threading.Lock()

    @property
    def identity(self) -> Any:
        return self.inner.identity

    def embed_documents(self, texts: Any, labels: Any = None) -> Any:
        return self.inner.embed_documents(texts, labels)

    def embed_query(self, text: str) -> list[float]:
        started = time.perf_counter()
        vector = self.inner.embed_query(text)
        with self._lock:
            self.query_seconds.append(time.perf_counter() - started)
        return vector

    def close(self) -> None:
        self.inner.close()


def synthetic_vocabulary(rng: random.Random, size: int = 20_000) -> list[str]:
    """A code-like vocabulary with a Zipf-shaped frequency order: made-up identifiers, with the
    domain words of the queries spread over ranks 40..4000 (so a query word matches a few
    percent of chunks, as in real code, not half of them)."""
    syllables = ["ar", "be", "co", "de", "fi", "gu", "ha", "jo", "ki", "lu", "mo", "ne", "po"]
    made_up = {"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(size * 2)} - set(
        WORDS
    )
    vocabulary = sorted(made_up)[: size - len(WORDS)]
    rng.shuffle(vocabulary)
    for n, word in enumerate(WORDS):
        vocabulary.insert(40 + n * 4000 // len(WORDS), word)
    return vocabulary


def build(db: Database, embedder: Embedder, chunks: int, root: Path) -> None:
    """Create the synthetic project unless it already holds `chunks` chunks."""
    with db.connection() as conn:
        if store.project_exists(conn, PROJECT):
            if store.summary(conn, PROJECT).chunks >= chunks:
                return
            store.drop_project(conn, PROJECT)
            conn.commit()
        identity = embedder.identity
        store.ensure_project(conn, PROJECT)
        store.set_embedding_dimension(conn, PROJECT, identity.dimension)
        store.set_meta(conn, PROJECT, "embedding", identity.to_dict())
        conn.execute(store.statement(statements.DROP_HNSW, PROJECT))
        conn.commit()
        rng = np.random.default_rng(7)
        words = random.Random(7)
        vocabulary = synthetic_vocabulary(words)
        weights = [1.0 / (rank + 1) ** 1.1 for rank in range(len(vocabulary))]
        started = time.perf_counter()
        files = chunks // CHUNKS_PER_FILE
        for i in range(files):
            vectors = rng.standard_normal((CHUNKS_PER_FILE, identity.dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = []
            for j in range(CHUNKS_PER_FILE):
                body = " ".join(words.choices(vocabulary, weights, k=50))
                symbol = f"{words.choice(vocabulary)}_{words.choice(vocabulary)}_{i}_{j}"
                content = f"def {symbol}():\n    # {body}\n    return None\n"
                rows.append(
                    store.ChunkRow(
                        ordinal=j,
                        start_line=j * 5 + 1,
                        end_line=j * 5 + 4,
                        symbol=symbol,
                        kind="function",
                        content=content,
                        content_sha256=f"{i:08d}{j:04d}",
                        embedding=vectors[j],
                        symbol_terms=symbol.replace("_", " "),
                        path_terms=f"pkg{i % 100} module{i}",
                        body_terms=body,
                    )
                )
            record = store.FileRecord("main", f"pkg{i % 100}/module{i}.py", 1, 1, f"{i}", "python")
            store.upsert_file(conn, PROJECT, record, rows)
            if i % 500 == 499:
                conn.commit()
                done = (i + 1) * CHUNKS_PER_FILE
                print(f"  {done:,} chunks ({time.perf_counter() - started:.0f} s)")
        conn.commit()
        print("  building the HNSW index ...")
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(store.statement(statements.CREATE_HNSW, PROJECT))
        conn.commit()
        print(f"  built in {time.perf_counter() - started:.0f} s")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def call(client: httpx.Client, url: str, query: str) -> float:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_code", "arguments": {"query": query, "top_k": 10}},
    }
    started = time.perf_counter()
    response = client.post(url, json=body)
    took = time.perf_counter() - started
    result = response.json()["result"]
    if result.get("isError"):
        raise SystemExit(f"search failed: {result['content'][0]['text']}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=4, help="clients for the load phase")
    parser.add_argument("--load-seconds", type=float, default=30)
    parser.add_argument(
        "--data", type=Path, default=Path(tempfile.gettempdir()) / "code-rag-server-bench"
    )
    args = parser.parse_args()

    import logging

    from server_fixtures import ServerThread

    logging.getLogger("httpx").setLevel(logging.WARNING)

    args.data.mkdir(parents=True, exist_ok=True)
    args.data.chmod(0o755)  # the embedded server runs as its own user
    root = args.data / "root"
    root.mkdir(exist_ok=True)
    db = Database("", args.data).open()
    embedder = TimedEmbedder(make_embedder("local"))
    print(f"model: {embedder.identity.describe()}; building/checking {args.chunks:,} chunks")
    build(db, embedder.inner, args.chunks, root)
    with db.connection() as conn:
        total_chunks = store.summary(conn, PROJECT).chunks
    project = Project(PROJECT, (Root(root.resolve(), "main"),))
    settings = Settings(
        config_path=args.data / "application.ini",
        data_dir=args.data,
        projects_path=args.data / "rag-projects.json",
        server=ServerSettings("127.0.0.1", 0, TOKEN),
        database=DatabaseSettings(""),
        embedding=EmbeddingSettings("local"),
        indexer=IndexerSettings(),
        search=SearchSettings(),
        projects={PROJECT: project},
    )
    app = create_app(settings, database=db, embedder=embedder, schedule=False)
    process = psutil.Process(os.getpid())
    with ServerThread(app) as server:
        url = server.url(PROJECT)
        client = httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=60)
        for query in QUERIES:  # warm-up: model, pool, caches
            call(client, url, query)
        time.sleep(1)
        idle_rss = process.memory_info().rss
        embedder.query_seconds.clear()
        totals = [
            call(client, url, QUERIES[i % len(QUERIES)] + f" {i}") for i in range(args.requests)
        ]
        embeds = list(embedder.query_seconds)
        rests = [t - e for t, e in zip(totals, embeds, strict=True)]

        peak = [idle_rss]
        load_latencies: list[float] = []
        stop = time.monotonic() + args.load_seconds

        def worker(n: int) -> None:
            with httpx.Client(headers={"X-RAG-Token": TOKEN}, timeout=60) as c:
                i = 0
                while time.monotonic() < stop:
                    # Never repeated: the server reuses a repeated query's vector.
                    query = QUERIES[(i + n) % len(QUERIES)] + f" w{n} {i}"
                    load_latencies.append(call(c, url, query))
                    i += 1

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.concurrency)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak.append(process.memory_info().rss)
            time.sleep(0.2)
        client.close()

    ms = 1000.0
    print()
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"python {platform.python_version()}"
    )
    print(
        f"chunks: {total_chunks:,}  requests: {args.requests} sequential, top_k 10, hybrid, "
        f"ef_search {settings.search.ef_search}"
    )
    for label, values in (("total", totals), ("embed", embeds), ("rest", rests)):
        print(
            f"  {label:<6} p50 {percentile(values, 0.5) * ms:7.1f} ms   "
            f"p95 {percentile(values, 0.95) * ms:7.1f} ms   "
            f"mean {statistics.mean(values) * ms:7.1f} ms"
        )
    print(
        f"under load: {args.concurrency} clients for {args.load_seconds:.0f} s: "
        f"{len(load_latencies)} requests ({len(load_latencies) / args.load_seconds:.1f}/s), "
        f"p50 {percentile(load_latencies, 0.5) * ms:.1f} ms, "
        f"p95 {percentile(load_latencies, 0.95) * ms:.1f} ms"
    )
    print(
        f"RSS (server + bench client, one process): idle {idle_rss / 2**20:.0f} MiB, "
        f"under load peak {max(peak) / 2**20:.0f} MiB"
    )
    db.close()


if __name__ == "__main__":
    main()
