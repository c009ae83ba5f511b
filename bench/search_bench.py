"""Search at ~80k chunks of real code: HNSW recall by ef_search, each candidate list alone,
and `search_code` over HTTP with the server's memory.

Corpus: the Python packages of bench/sweep_bench.py (transformers, scipy, numpy, pygments,
litestar, psycopg, mcp from the project's .venv: ≈ 5,800 files, ≈ 81k chunks), indexed once by
the real sweep into an embedded PostgreSQL under --cache (kept between runs). Embedding 81k
chunks at full length with the local model would take hours on a small CPU, so the index's
vectors come from the shipped model on each chunk's first --tokens word pieces of its embedding
text (header: path, language, symbol; then the start of the code): real vectors of the model's
own distribution, from less text than a real sweep gives it. Once --model-minutes are spent (a
build can be stopped and resumed: what is stored is kept), the remaining chunks get noisy copies
of model vectors already stored; the manifest records how many of each. Queries: the docstring
eval's and the questions eval's (bench/eval), embedded in full by the real default embedder.

`server` runs the app under uvicorn in this process and sends JSON-RPC `tools/call`s of
`search_code` over HTTP (httpx); every query is new, so every request embeds its query. The
server records each query's embedding time, so a request's latency splits into "embed" and
"rest" (HTTP, guard, JSON-RPC, the database search, result shaping). Memory is the RSS of this
one process (server, model, bench client): idle after a warm-up, and its peak under load.

    .venv/bin/python -m bench.search_bench build            # index once (an hour or more)
    .venv/bin/python -m bench.search_bench refill --from-id N   # model vectors for copies
    .venv/bin/python -m bench.search_bench recall           # recall@10 and latency per ef_search
    .venv/bin/python -m bench.search_bench lists            # each candidate list timed alone
    .venv/bin/python -m bench.search_bench server           # search_code over HTTP, memory
    .venv/bin/python -m bench.search_bench server --ef-search 400,100 --requests 150 --seconds 20
    .venv/bin/python -m bench.search_bench server --by-chunk    # by file (the default) and by chunk
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import tempfile
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench import machine, served
from bench.search_index import CACHE, PROJECT, SCHEMA, open_database
from bench.sweep_bench import CORPUS, SITE, project
from chunkers import embedding_text
from chunkers.model import Chunk
from indexer.db import Conn, Database, Ranked, Schema, lookup, queries, statements, store
from indexer.embed import EmbedBatchResult, Embedder, EmbeddingModel
from indexer.embed.local import LocalEmbedder
from indexer.project import Project, Root
from indexer.search import DEFAULT_EF_SEARCH, keyword
from indexer.search.fusion import DEFAULT_RANKING
from indexer.sweep import (
    SweepOptions,
    SweepProgress,
    sweep_project,
)
from rag_server.app import create_app
from rag_server.config import SearchSettings

HERE = Path(__file__).resolve().parent

DEFAULT_TOKENS = 32
NOISE_SIGMA = 0.0247  # |noise|^2 = 384 sigma^2 ≈ 0.23: cosine ≈ 0.9 to the copied vector


class FirstWindowEmbedder:
    """The shipped local model on each document's first `tokens` word pieces (queries in full),
    for `budget_s` seconds of the sweep; after that, each document gets a copy of a model vector
    already in the index (chosen by a hash of its text) with Gaussian noise at cosine ≈ 0.9, so
    the set keeps the model's own distribution. Its identity is the model's, so the server's
    default embedder searches this index."""

    def __init__(
        self, inner: LocalEmbedder, tokens: int, budget_s: float, pool: np.ndarray
    ) -> None:
        self.inner = inner
        self.tokens = tokens
        self.deadline = time.monotonic() + budget_s
        self.pool = pool  # model vectors to copy from once the budget is spent
        self.embedded = 0
        self.copied = 0
        self.started = time.perf_counter()

    @property
    def identity(self) -> EmbeddingModel:
        return self.inner.identity

    def _cut(self, texts: Sequence[str]) -> list[str]:
        encoded = self.inner.runtime.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [
            t if len(e.offsets) <= self.tokens else t[: e.offsets[self.tokens - 1][1]]
            for t, e in zip(texts, encoded, strict=True)
        ]

    def _copy(self, text: str) -> list[float]:
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        base = self.pool[rng.integers(len(self.pool))]
        v = base + rng.standard_normal(base.shape[0]) * NOISE_SIGMA
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        before = self.embedded + self.copied
        if time.monotonic() < self.deadline or not len(self.pool):
            result = self.inner.embed_documents(self._cut(texts), labels)
            self.embedded += len(texts)
        else:
            result = EmbedBatchResult(vectors=[self._copy(t) for t in texts], requests=0)
            self.copied += len(texts)
        if before // 5000 != (self.embedded + self.copied) // 5000:
            took = time.perf_counter() - self.started
            print(
                f"  {self.embedded:,} chunks embedded, {self.copied:,} copied, {took:.0f} s",
                flush=True,
            )
        return result

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    def close(self) -> None:
        self.inner.close()


def model_vectors(db: Database, limit: int = 20_000) -> tuple[int, np.ndarray]:
    """How many chunks the index holds now, and up to `limit` of their vectors (a resumed
    build: every chunk already there was embedded by the model)."""
    with db.connection() as conn:
        if not store.project_exists(conn, SCHEMA):
            return 0, np.zeros((0, 384), dtype=np.float32)
        rows = conn.execute(
            SCHEMA.sql(
                "SELECT embedding FROM {schema}.rag_chunk WHERE embedding IS NOT NULL "
                "ORDER BY id LIMIT %(limit)s"
            ),
            {"limit": limit},
        ).fetchall()
        chunks = store.summary(conn, SCHEMA).chunks
    return chunks, np.asarray([r[0].to_numpy() for r in rows], dtype=np.float32)


def build(cache: Path, tokens: int, budget_s: float) -> None:
    manifest = cache / "manifest.json"
    if manifest.exists():
        print(f"index exists: {manifest.read_text().strip()}")
        return
    print(f"machine: {machine.describe()}")
    db = open_database(cache)
    try:
        proj = project(PROJECT, CORPUS)
        before, pool = model_vectors(db)
        embedder = FirstWindowEmbedder(LocalEmbedder(), tokens, budget_s, pool)
        started = time.perf_counter()
        report = sweep_project(db, proj, embedder, SweepOptions(defer_vectors=False))
        took = time.perf_counter() - started
        with db.connection() as conn:
            chunks = store.summary(conn, SCHEMA).chunks
        facts = {
            "project": PROJECT,
            "packages": list(CORPUS),
            "files": report.files_seen,
            "chunks": chunks,
            "tokens": tokens,
            "model": embedder.identity.describe(),
            "model_vectors_before_resume": before,
            "model_vectors_this_run": embedder.embedded,
            "copied_vectors": embedder.copied,
            "files_failed": report.files_failed,
            "seconds_this_run": round(took),
            "machine": machine.describe(),
        }
        manifest.write_text(json.dumps(facts) + "\n")
        print(json.dumps(facts, indent=1))
    finally:
        db.close()


def refill(cache: Path, from_id: int, tokens: int) -> None:
    """Give every chunk from `from_id` on the model's vector of its first `tokens` word pieces,
    as the rest of the set was built: a build whose model time ran out left noisy copies there
    (ids follow the sweep's order, so the copies are the last ids), and rebuild the HNSW index."""
    manifest = cache / "manifest.json"
    facts = json.loads(manifest.read_text())
    db = open_database(cache)
    try:
        with db.connection() as conn:
            rows = conn.execute(
                SCHEMA.sql(
                    "SELECT c.id, f.path, f.language, c.symbol, c.kind, c.content, c.start_line,"
                    " c.end_line FROM {schema}.rag_chunk c JOIN {schema}.rag_file f"
                    " ON f.id = c.file_id WHERE c.id >= %(from_id)s ORDER BY c.id"
                ),
                {"from_id": from_id},
            ).fetchall()
        embedder = FirstWindowEmbedder(LocalEmbedder(), tokens, float("inf"), np.zeros((0, 384)))
        started = time.perf_counter()
        vectors: list[tuple[list[float], int]] = []
        for at in range(0, len(rows), 64):
            batch = rows[at : at + 64]
            texts = [
                embedding_text(Chunk(r[6], r[7], r[3], r[4], r[2] or "text", r[5]), r[1])
                for r in batch
            ]
            found = embedder.embed_documents(texts).require_all()
            vectors.extend((v, r[0]) for v, r in zip(found, batch, strict=True))
        took = time.perf_counter() - started
        print(f"{len(rows):,} chunks embedded in {took:.0f} s", flush=True)
        with db.connection() as conn:
            conn.execute(SCHEMA.sql(statements.DROP_HNSW))
            with conn.cursor() as cur:
                cur.executemany(
                    SCHEMA.sql("UPDATE {schema}.rag_chunk SET embedding = %s WHERE id = %s"),
                    [(np.asarray(v, dtype=np.float32), i) for v, i in vectors],
                )
            conn.commit()
            # The updated rows left dead versions behind: clear them before the graph is built
            # (vacuuming them out of a built HNSW graph leaves it slower to search).
            conn.autocommit = True
            conn.execute(SCHEMA.sql("VACUUM ANALYZE {schema}.rag_chunk"))
            conn.autocommit = False
            store.build_bulk_indexes(conn, SCHEMA)
            conn.commit()
        facts.update(copied_vectors=0, refilled_from_id=from_id, refilled=len(rows))
        manifest.write_text(json.dumps(facts) + "\n")
    finally:
        db.close()


def lists(cache: Path, queries: int, ef_search: int) -> None:
    """Each candidate list of search_code timed alone, in-process, one connection: the keyword
    ranker (without filters, and within one repo), the vector side, over the same queries."""
    print(f"machine: {machine.describe()}")
    db = open_database(cache)
    try:
        texts, vectors = query_vectors(cache, LocalEmbedder())
        pick = np.linspace(0, len(texts) - 1, min(queries, len(texts))).astype(int)
        timed: dict[str, list[float]] = {"keyword": [], "keyword, one repo": [], "vector": []}
        one_repo = {**NO_FILTERS, "repo": "transformers"}
        with db.connection() as conn:

            def timed_run(name: str, fn: Any, *args: Any) -> None:
                t = time.perf_counter()
                with conn.transaction():
                    fn(conn, SCHEMA, *args)
                timed[name].append(time.perf_counter() - t)

            for i in pick:
                timed_run("keyword", keyword_candidates, texts[i], NO_FILTERS)
                timed_run("keyword, one repo", keyword_candidates, texts[i], one_repo)
                timed_run("vector", vector_candidates, vectors[i], NO_FILTERS, ef_search)
        print(f"{len(pick)} queries, each list alone (ef_search {ef_search}):")
        for name, values in timed.items():
            print(f"  {name:<18} {figures(values)}")
    finally:
        db.close()


def keyword_candidates(
    conn: Conn, schema: Schema, text: str, filters: dict[str, Any]
) -> list[Ranked]:
    return keyword.keyword_candidates(conn, schema, text, filters, DEFAULT_RANKING)


def vector_candidates(
    conn: Conn, schema: Schema, vector: np.ndarray, filters: dict[str, Any], ef_search: int
) -> list[Ranked]:
    """The vector side's list at the product's depth, unfiltered (no iterative scan)."""
    return lookup.vector_candidates(
        conn, schema, vector, filters, DEFAULT_RANKING.vector_depth, ef_search, iterative_scan=False
    )


# --- queries --------------------------------------------------------------------------------


def eval_queries() -> list[str]:
    """The docstring eval's test-split queries and every question of the questions eval."""
    from bench.eval import corpus, questions

    with tempfile.TemporaryDirectory(prefix="code-rag-docstrings-") as tmp:
        docstrings, _ = corpus.build_corpus(Path(tmp))
    texts = [q.text for q in docstrings if q.split == "test"]
    texts += [q.text for q in questions.load_questions()]
    return list(dict.fromkeys(texts))


def query_vectors(cache: Path, embedder: LocalEmbedder) -> tuple[list[str], np.ndarray]:
    """The eval queries and their vectors from the real embedder (computed once, kept)."""
    texts = eval_queries()
    kept_texts, kept_vectors = cache / "queries.json", cache / "queries.npy"
    if kept_texts.exists() and json.loads(kept_texts.read_text()) == texts:
        return texts, np.load(kept_vectors)
    vectors = np.asarray([embedder.embed_query(t) for t in texts], dtype=np.float32)
    np.save(kept_vectors, vectors)
    kept_texts.write_text(json.dumps(texts))
    return texts, vectors


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def figures(values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"p50 {percentile(ms, 0.5):6.1f} ms  p95 {percentile(ms, 0.95):6.1f} ms"


# --- recall ---------------------------------------------------------------------------------

NO_FILTERS: dict[str, Any] = {"repo": None, "language": None, "path_re": None}


def exact_nearest(conn: Any, vector: np.ndarray, k: int) -> tuple[list[int], float]:
    """The true `k` nearest chunks and the k-th distance: the same statement with index scans
    switched off."""
    rows = conn.execute(
        SCHEMA.sql(queries.VECTOR_CANDIDATES),
        {**NO_FILTERS, "vector": vector, "limit": k},
        prepare=False,  # a plan cached with index scans off would outlive the setting
    ).fetchall()
    return [r[0] for r in rows], float(rows[-1][1])


def distances(conn: Any, vector: np.ndarray, ids: Sequence[int]) -> list[float]:
    """Each chunk's distance as the vector ranker counts it: its nearest vector, its own or
    one of the definitions it holds that have their own."""
    rows = conn.execute(
        SCHEMA.sql(
            "SELECT least(c.embedding <=> %(vector)s,"
            " (SELECT min(s.embedding <=> %(vector)s) FROM {schema}.rag_symbol s"
            "   WHERE s.chunk_id = c.id AND s.embedding IS NOT NULL))"
            " FROM {schema}.rag_chunk c WHERE c.id = ANY(%(ids)s)"
        ),
        {"vector": vector, "ids": list(ids)},
    ).fetchall()
    return [float(r[0]) for r in rows]


def recall(cache: Path, settings: Sequence[int], limit: int | None) -> None:
    """recall@10 of the vector side (LIMIT vector_depth, as search_code asks) against exact
    search, and its latency inside the database, per ef_search. Two counts: by id (a result is
    right when it is one of the exact ten) and by distance (right when it is no farther than
    the exact tenth, ann-benchmarks' rule with ties only: 1e-6). They differ where vectors are
    equal: chunks of the same text (vendored or generated copies), or, in this set, chunks
    whose first word pieces are the same. Among equal vectors the exact ten are an arbitrary
    pick, and any of them is as near."""
    print(f"machine: {machine.describe()}")
    db = open_database(cache)
    try:
        _, vectors = query_vectors(cache, LocalEmbedder())
        if limit and limit < len(vectors):  # spread over both evals' queries
            vectors = vectors[np.linspace(0, len(vectors) - 1, limit).astype(int)]
        depth = DEFAULT_RANKING.vector_depth
        with db.connection() as conn:
            chunks = store.summary(conn, SCHEMA).chunks
            print(f"{chunks:,} chunks; {len(vectors)} queries; vector side LIMIT {depth}")
            kept = cache / f"truth-{len(vectors)}.json"
            truth: list[tuple[list[int], float]] = []
            if kept.exists():  # [ids, k-th distance] per query (a bare id list: before distances)
                stored = json.loads(kept.read_text())
                truth = [(t[0], t[1]) for t in stored if isinstance(t[-1], float)]
            if len(truth) != len(vectors):
                started = time.perf_counter()
                conn.execute("SET enable_indexscan = off")
                truth = [exact_nearest(conn, v, 10) for v in vectors]
                conn.execute("RESET enable_indexscan")
                conn.commit()
                took = (time.perf_counter() - started) / len(vectors)
                print(f"exact search: {took * 1000:.0f} ms per query (mean)")
                kept.write_text(json.dumps(truth))
            print("ef_search  recall@10 by id (min)  by distance (min)  latency in the database")
            for ef in settings:
                by_id, by_distance, times = [], [], []
                for v, (exact, kth) in zip(vectors, truth, strict=True):
                    t = time.perf_counter()
                    with conn.transaction():
                        found = vector_candidates(conn, SCHEMA, v, NO_FILTERS, ef)
                        ids = [r.chunk_id for r in found]
                    times.append(time.perf_counter() - t)
                    top = ids[:10]
                    by_id.append(len(set(top) & set(exact)) / len(exact))
                    near = sum(d <= kth + 1e-6 for d in distances(conn, v, top))
                    by_distance.append(near / len(exact))
                    conn.rollback()
                print(
                    f"{ef:>9}  {statistics.mean(by_id):9.4f} ({min(by_id):.2f})  "
                    f"{statistics.mean(by_distance):9.4f} ({min(by_distance):.2f})  "
                    f"{figures(times)}",
                    flush=True,
                )
    finally:
        db.close()


# --- server ---------------------------------------------------------------------------------

SWEEPING = "bench_sweeping"


class StopSweep(Exception):
    pass


class TimedEmbedder:
    """The real embedder, with each query's embedding time recorded inside the server (the
    "embed" share of a request; the rest is HTTP, JSON-RPC, the database search, shaping)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.query_seconds: list[float] = []
        self._lock = threading.Lock()

    @property
    def identity(self) -> EmbeddingModel:
        return self.inner.identity

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        return self.inner.embed_documents(texts, labels)

    def embed_query(self, text: str) -> list[float]:
        started = time.perf_counter()
        vector = self.inner.embed_query(text)
        with self._lock:
            self.query_seconds.append(time.perf_counter() - started)
        return vector

    def close(self) -> None:
        self.inner.close()


def rss_bytes() -> int:
    """This process's resident memory: the server, the model, the database client, the bench."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def timed_search(http: httpx.Client, url: str, query: str, by_file: bool = True) -> float:
    """Seconds for one `search_code` call over HTTP (hybrid, top_k 10, by file or by chunk)."""
    started = time.perf_counter()
    served.tool_call(http, url, "search_code", {"query": query, "top_k": 10, "by_file": by_file})
    return time.perf_counter() - started


def server(
    cache: Path,
    ef_values: Sequence[int],
    requests: int,
    seconds: float,
    clients: int,
    by_chunk: bool = False,
) -> None:
    """search_code over HTTP, the app under uvicorn in this process: one client (ef_search
    values interleaved, one app each, and with `by_chunk` the first ef_search by chunk too; each
    request's latency split into the query embedding and the rest), then `clients` clients at
    once while this process's memory is sampled, then one client while the same process sweeps
    another project with the model."""
    print(f"machine: {machine.describe()}")
    db = open_database(cache)
    inner = LocalEmbedder()
    texts = eval_queries()
    random.Random(7).shuffle(texts)
    pending = iter(f"{t}" if n < len(texts) else f"{t} ({n})" for n, t in enumerate(texts * 20))
    lock = threading.Lock()

    def fresh_query() -> str:  # never repeated: every request embeds its query
        with lock:
            return next(pending)

    proj = project(PROJECT, CORPUS)
    sweeping = Project(SWEEPING, (Root(SITE / "litestar", "litestar"),))
    apps, embedders = [], []
    settings_by = [(ef, True) for ef in ef_values] + ([(ef_values[0], False)] if by_chunk else [])
    for ef, _ in settings_by:
        embedder = TimedEmbedder(inner)
        settings = served.bench_settings(
            cache, {PROJECT: proj, SWEEPING: sweeping}, search=SearchSettings(ef_search=ef)
        )
        apps.append(create_app(settings, database=db, embedder=embedder, schedule=False))
        embedders.append(embedder)
    servers = [served.ServerThread(app).start() for app in apps]
    sessions = [served.client() for _ in servers]
    try:
        with db.connection() as conn:
            chunks = store.summary(conn, SCHEMA).chunks
        urls = [s.url(PROJECT) for s in servers]
        for _ in range(5):  # warm-up: model sessions, pool, plans, term statistics
            for http, url, (_, grouped) in zip(sessions, urls, settings_by, strict=True):
                timed_search(http, url, fresh_query(), grouped)
        time.sleep(1)
        idle_rss = rss_bytes()
        for e in embedders:
            e.query_seconds.clear()
        totals: list[list[float]] = [[] for _ in servers]
        for _ in range(requests):
            for n, (http, url) in enumerate(zip(sessions, urls, strict=True)):
                totals[n].append(timed_search(http, url, fresh_query(), settings_by[n][1]))
        print(f"\n{chunks:,} chunks; model {inner.identity.describe()}")
        print(
            f"one client, {requests} requests per setting, interleaved, top_k 10, hybrid, "
            "by file unless said:"
        )
        for (ef, grouped), total, e in zip(settings_by, totals, embedders, strict=True):
            rest = [t - q for t, q in zip(total, e.query_seconds, strict=True)]
            print(
                f"  ef_search {ef:>4}{'' if grouped else ', by chunk'}: total {figures(total)}"
                f"   embed {figures(e.query_seconds)}   rest {figures(rest)}"
            )

        def clients_for(n_clients: int, url: str, until: float) -> tuple[list[float], int]:
            """The latencies of `n_clients` clients searching until `until`, and the peak
            RSS sampled meanwhile."""
            latencies: list[float] = []

            def worker() -> None:
                with served.client() as http:
                    while time.monotonic() < until:
                        latencies.append(timed_search(http, url, fresh_query()))

            threads = [threading.Thread(target=worker) for _ in range(n_clients)]
            for t in threads:
                t.start()
            peak = rss_bytes()
            while any(t.is_alive() for t in threads):
                peak = max(peak, rss_bytes())
                time.sleep(0.2)
            for t in threads:
                t.join()
            return latencies, peak

        loaded, peak_rss = clients_for(clients, urls[0], time.monotonic() + seconds)
        print(
            f"{clients} clients, {seconds:.0f} s, ef_search {ef_values[0]}: {len(loaded)} "
            f"requests ({len(loaded) / seconds:.1f}/s), {figures(loaded)}"
        )
        print(
            f"RSS (server, model and bench client: one process): idle {idle_rss / 2**20:.0f} MiB, "
            f"peak under {clients} clients {peak_rss / 2**20:.0f} MiB"
        )

        with db.connection() as conn:
            if store.project_exists(conn, Schema(SWEEPING)):
                store.drop_project(conn, Schema(SWEEPING))
                conn.commit()
        stop = threading.Event()
        swept: list[int] = []

        def progress(p: SweepProgress) -> None:
            swept.append(p.files_done)
            if stop.is_set():
                raise StopSweep

        def sweep() -> None:
            with contextlib.suppress(StopSweep):
                sweep_project(
                    db,
                    sweeping,
                    inner,
                    SweepOptions(files_per_commit=5, defer_vectors=False),
                    progress=progress,
                )

        sweeper = threading.Thread(target=sweep)
        sweeper.start()
        time.sleep(5)  # the sweep is past its walk and embedding
        during, _ = clients_for(1, urls[0], time.monotonic() + seconds)
        alive = sweeper.is_alive()
        stop.set()
        sweeper.join()
        print(
            f"1 client during a sweep of {SWEEPING} (local model, same process; "
            f"{'still running' if alive else 'FINISHED EARLY'} at the end, "
            f"{swept[-1] if swept else 0} files done): {len(during)} requests, {figures(during)}"
        )
    finally:
        for http in sessions:
            http.close()
        for s in servers:
            s.stop()
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", choices=("build", "refill", "recall", "lists", "server"))
    parser.add_argument("--from-id", type=int, help="refill: the first chunk id to embed again")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, help="build: per chunk")
    parser.add_argument(
        "--model-minutes", type=float, default=120, help="build: model time before copies"
    )
    parser.add_argument(
        "--ef", default="30,40,50,64,80,100,150,200,400", help="recall: ef_search values"
    )
    parser.add_argument("--queries", type=int, default=0, help="recall: first N queries only")
    parser.add_argument(
        "--ef-search",
        default=f"{DEFAULT_EF_SEARCH}",
        help="server: ef_search values compared side by side, the first also under load",
    )
    parser.add_argument("--requests", type=int, default=200, help="server: per ef_search")
    parser.add_argument("--seconds", type=float, default=30, help="server: per loaded phase")
    parser.add_argument("--clients", type=int, default=4, help="server: clients at once")
    parser.add_argument(
        "--by-chunk", action="store_true", help="server: the first ef_search by chunk as well"
    )
    args = parser.parse_args()
    if args.part == "build":
        build(args.cache, args.tokens, args.model_minutes * 60)
    elif args.part == "refill":
        refill(args.cache, args.from_id, args.tokens)
    elif args.part == "recall":
        recall(args.cache, [int(x) for x in args.ef.split(",")], args.queries)
    elif args.part == "lists":
        lists(args.cache, args.queries or 150, int(args.ef_search.split(",")[0]))
    else:
        ef_values = [int(x) for x in args.ef_search.split(",")]
        server(args.cache, ef_values, args.requests, args.seconds, args.clients, args.by_chunk)


if __name__ == "__main__":
    main()
