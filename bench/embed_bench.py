"""Embedding benchmark: local chunks/s, and what the Ollama batching logic itself costs.

    .venv/bin/python -m bench.embed_bench                  # everything, ~5 minutes on 2 cores
    .venv/bin/python -m bench.embed_bench --skip-local     # only the Ollama-side figures

Chunks are real code: 40-line windows of the .py files of a few packages in this venv's
site-packages, spread evenly, the same on every run. The local part times `embed_documents`
of the bundled all-MiniLM-L6-v2 (int8 ONNX) at several batch sizes, and `embed_query`. The
Ollama part runs against the test stand-in (tests/ollama_standin.py, which hashes trigrams
instead of running a model), so it measures the client: `OllamaEmbedder.embed_documents`
against raw `ollama.Client.embed` calls on the same batches, and `pack_batches` alone. Figures
are medians of --repeats runs.
"""

from __future__ import annotations

import argparse
import statistics
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from bench import machine
from indexer.embed.embedder import pack_batches, utf8_len

PACKAGES = ("httpx", "ollama", "pydantic", "click", "typer", "jinja2", "litestar", "psycopg")
WINDOW_LINES = 40


def code_chunks(count: int) -> list[str]:
    """`count` 40-line windows of site-packages code, evenly spread, deterministic."""
    site = Path(sysconfig.get_paths()["purelib"])
    windows: list[str] = []
    for package in PACKAGES:
        for path in sorted((site / package).rglob("*.py")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            for start in range(0, len(lines), WINDOW_LINES):
                window = lines[start : start + WINDOW_LINES]
                if sum(1 for line in window if line.strip()) >= 8:
                    windows.append("".join(window))
    if len(windows) < count:
        raise SystemExit(f"only {len(windows)} chunks found under {site}")
    step = len(windows) / count
    return [windows[int(i * step)] for i in range(count)]


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_local(chunks: list[str], batch_sizes: list[int], repeats: int) -> None:
    from indexer.embed.local import LocalEmbedder

    started = time.perf_counter()
    embedder = LocalEmbedder()
    embedder.embed_query("load")  # loads the query session
    print(
        f"local model load (onnxruntime import, first query): {time.perf_counter() - started:.2f} s"
    )
    print(f"model: {embedder.identity.describe()}, threads: {embedder.threads}")
    embedder.embed_documents(chunks[:16])  # warm-up (creates the document session)
    result = embedder.embed_documents(chunks)
    print(
        f"chunks: {len(chunks)}, mean {statistics.mean(len(c) for c in chunks):.0f} chars; "
        f"{result.split_inputs} longer than one 256-token window, {len(result.truncated)} "
        "past 8 windows"
    )
    print("\n| batch size | embed_documents (windowed) chunks/s |")
    print("|---:|---:|")
    for size in batch_sizes:
        embedder.batch_size = size
        ours = median_seconds(lambda: embedder.embed_documents(chunks), repeats)
        print(f"| {size} | {len(chunks) / ours:.1f} |")
    query = median_seconds(lambda: embedder.embed_query("parse the config file"), 20)
    print(f"\nlocal embed_query: {query * 1000:.1f} ms (median of 20)")


def bench_ollama(chunks: list[str], repeats: int) -> None:
    import ollama

    from indexer.embed.ollama import OllamaEmbedder, checked_vectors
    from tests.ollama_standin import OllamaStandin

    with OllamaStandin() as server:
        embedder = OllamaEmbedder(host=server.url, backoff_seconds=0.0)
        prefix = embedder.identity.document_prefix
        client = ollama.Client(host=server.url)
        sizes = [utf8_len(prefix) + utf8_len(c) for c in chunks]
        batches = pack_batches(sizes, embedder.batch_max_inputs, embedder.batch_max_bytes)
        texts = [prefix + c for c in chunks]

        def raw() -> None:
            for batch in batches:
                client.embed(model=embedder.model, input=[texts[i] for i in batch], truncate=False)

        raw()  # warm-up: the stand-in caches its vectors, so HTTP + JSON + client remain
        embedder.embed_documents(chunks)
        ours_runs, raw_runs = [], []
        for _ in range(repeats):  # interleaved, so drift on a noisy machine hits both alike
            ours_runs.append(median_seconds(lambda: embedder.embed_documents(chunks), 1))
            raw_runs.append(median_seconds(raw, 1))
        ours_s, raw_s = statistics.median(ours_runs), statistics.median(raw_runs)
        requests = len(batches)
        print(
            f"\nOllama stand-in, {len(chunks)} chunks in {requests} requests "
            f"(<= {embedder.batch_max_inputs} inputs, <= {embedder.batch_max_bytes} bytes):"
        )
        print("| path | total ms | ms per request |")
        print("|---|---:|---:|")
        print(f"| raw ollama.Client.embed | {raw_s * 1000:.1f} | {raw_s * 1000 / requests:.2f} |")
        print(
            f"| OllamaEmbedder.embed_documents | {ours_s * 1000:.1f} | "
            f"{ours_s * 1000 / requests:.2f} |"
        )
        print(
            f"| difference (our client logic) | {(ours_s - raw_s) * 1000:.1f} | "
            f"{(ours_s - raw_s) * 1000 / requests:.2f} |"
        )

        answer = client.embed(model=embedder.model, input=texts[:32], truncate=False).embeddings
        check = median_seconds(lambda: checked_vectors(answer, 32, 768), max(repeats, 20))
        print(
            f"\nchecking one answer (32 x 768 floats: count, size, finite): {check * 1000:.2f} ms"
        )

        many = sizes * (100_000 // len(sizes) + 1)
        many = many[:100_000]
        pack = median_seconds(lambda: pack_batches(many, 32, 64 * 1024), repeats)
        print(
            f"\npack_batches over 100,000 inputs: {pack * 1000:.1f} ms "
            f"({pack * 1e9 / len(many):.0f} ns per input)"
        )

        server.fail_every = 4
        failing = median_seconds(lambda: embedder.embed_documents(chunks), repeats)
        server.reset_counters()
        result = embedder.embed_documents(chunks)
        print(
            f"with every 4th request failing: {failing * 1000:.1f} ms, {result.requests} "
            f"requests, {result.halvings} halvings, {result.retries} retries"
        )
        embedder.close()
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=512, help="for the Ollama part")
    parser.add_argument("--local-chunks", type=int, default=96, help="for the local part")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-sizes", default="4,8,16,32")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--skip-ollama", action="store_true")
    args = parser.parse_args()
    print(machine.describe())
    print(f"command: {machine.command()}")
    chunks = code_chunks(args.chunks)
    if not args.skip_ollama:
        bench_ollama(chunks, args.repeats)
    if not args.skip_local:
        sizes = [int(s) for s in args.batch_sizes.split(",")]
        bench_local(code_chunks(args.local_chunks), sizes, args.repeats)


if __name__ == "__main__":
    main()
