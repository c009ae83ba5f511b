"""First contact: how soon a new project answers, and what its whole first index costs.

Corpus: an installed package of real code with more than 1,000 files (scipy by default),
one project, a fresh schema each run, the bundled local model.

Part 1, rows first. A first sweep writes every file's rows before any vector (the default for
a sweep of many files). While it runs, a second thread asks, every quarter second, for three
identifiers defined in files early, midway and late in the walk: `find_symbol` (exact),
`grep` (the name as a literal) and `search_code` (the name as the query, hybrid, the real
model embedding it); for each, the first time its answer names the right file, counted from
the sweep's start. Then the same tree swept with a zero-cost embedder (vectors at once, the
sweep's own work alone): the rows-first phase against it (target <= 1.2 x).

Part 2, the whole first index. On a subset (`--model-files`), the bare model embedding every
distinct text a sweep embeds (chunks and the definitions no chunk speaks for, each text once),
against a rows-first sweep followed by `embed_pending` (target <= 1.1 x). Then a second
checkout of the same files (a copy under another root, another project): its whole index,
and how much of it came from the embedding cache every project shares; and a second checkout
of the whole package against a sweep of the copy whose vectors cost nothing (target <= 1.5 x).

    .venv/bin/python -m bench.first_contact_bench                 # every part
    .venv/bin/python -m bench.first_contact_bench --part 1 --runs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import machine
from bench.sweep_bench import ZeroCostEmbedder, fresh, project
from chunkers import chunk_file, embedding_text, lone_definitions
from indexer.db import Database
from indexer.embed import Embedder, make_embedder
from indexer.project import Project, Root
from indexer.search import find_symbol, grep, search_code
from indexer.sweep import SweepOptions, sweep_project, walk_project
from indexer.sweep.prepare import content_hash
from indexer.sweep.vectors import embed_pending

PACKAGE = "scipy"
PROBE_EVERY_S = 0.25
ROWS_FIRST = SweepOptions(defer_vectors=True)
INLINE = SweepOptions(defer_vectors=False)


def targets(proj: Project, count: int = 3) -> list[tuple[str, str]]:
    """(identifier, path) of `count` top-level functions or classes whose name is defined
    once in the project, in files spread over the walk (first, middle, last)."""
    files = walk_project(proj).files
    defined: dict[str, list[str]] = {}
    per_file: list[list[str]] = []
    for cand in files:
        names = []
        if cand.path.endswith(".py"):
            result = chunk_file(cand.path, cand.absolute.read_bytes())
            names = [s.name for s in result.symbols if s.parent is None and len(s.name) >= 8]
        for name in names:
            defined.setdefault(name, []).append(cand.path)
        per_file.append(names)
    chosen: list[tuple[str, str]] = []
    for k in range(count):
        start = (len(files) - 1) * k // max(count - 1, 1)
        order = range(start, -1, -1) if k == count - 1 else range(start, len(files))
        for i in order:
            unique = [n for n in per_file[i] if len(defined[n]) == 1]
            if unique:
                chosen.append((unique[0], files[i].path))
                break
    return chosen


class Probe:
    """Asks each tool for each target until it answers with the right file; keeps when."""

    def __init__(
        self, db: Database, proj: Project, embedder: Embedder, wanted: Sequence[tuple[str, str]]
    ) -> None:
        self.asks: dict[str, Callable[[str], list[str]]] = {
            "find_symbol": lambda n: [s.path for s in find_symbol(db, proj, n).symbols],
            "grep": lambda n: [m.path for m in grep(db, proj, n).matches],
            "search_code": lambda n: [h.path for h in search_code(db, proj, embedder, n)][:1],
        }
        self.wanted = list(wanted)
        self.found: dict[tuple[str, str], float] = {}
        self.errors = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self, t0: float) -> Probe:
        self.t0 = t0
        self.thread.start()
        return self

    def _run(self) -> None:
        while not self.stop.is_set():
            for tool, ask in self.asks.items():
                for name, path in self.wanted:
                    if (tool, name) in self.found:
                        continue
                    try:
                        if path in ask(name):
                            self.found[(tool, name)] = time.perf_counter() - self.t0
                    except Exception:  # a statement racing an index build: ask again
                        self.errors += 1
            if len(self.found) == len(self.asks) * len(self.wanted):
                return
            self.stop.wait(PROBE_EVERY_S)

    def finish(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        self.stop.set()


def part1(db: Database, runs: int) -> None:
    proj = project("bench_first_contact", (PACKAGE,))
    wanted = targets(proj)
    model = make_embedder("local")
    model.embed_query("warm up the model")
    files = len(walk_project(proj).files)
    print(f"\n## Part 1: {PACKAGE}, {files:,} files; targets (walk order): " + ", ".join(
        f"{name} in {path}" for name, path in wanted
    ))  # fmt: skip
    ratios, phase1s = [], []
    for run in range(runs):
        fresh(db, proj.name)
        probe = Probe(db, proj, model, wanted)
        t0 = time.perf_counter()
        probe.start(t0)
        report = sweep_project(db, proj, model, ROWS_FIRST)
        phase1 = time.perf_counter() - t0
        probe.finish()
        fresh(db, proj.name)
        zero = sweep_project(db, proj, ZeroCostEmbedder(), INLINE)
        inline = zero.seconds["total"]
        ratios.append(phase1 / inline)
        phase1s.append(phase1)
        print(
            f"run {run + 1}: rows first {phase1:.1f} s ({report.chunks_written:,} chunks, "
            f"{report.vectors_deferred:,} texts left for later); zero-cost sweep {inline:.1f} s; "
            f"ratio {phase1 / inline:.3f}; probe errors {probe.errors}"
        )
        for tool in probe.asks:
            when = [probe.found.get((tool, name)) for name, _ in wanted]
            shown = ", ".join("never" if w is None else f"{w:.1f} s" for w in when)
            print(f"  {tool:<12} right file at {shown}")
    fresh(db, proj.name)
    print(
        f"median rows first {statistics.median(phase1s):.1f} s; median ratio rows first / "
        f"zero-cost sweep {statistics.median(ratios):.3f} (target <= 1.2)"
    )
    model.close()


def subset_tree(count: int) -> Path:
    """A copy of the first `count` files of litestar, in a folder of its own."""
    tree = Path(tempfile.mkdtemp(prefix="code-rag-bench-tree-"))
    for cand in walk_project(project("bench_subset", ("litestar",))).files[:count]:
        target = tree / cand.repo / cand.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cand.absolute, target)
    return tree


def distinct_texts(proj: Project) -> list[str]:
    """What a sweep of `proj` embeds: each chunk and each definition no chunk speaks for, a
    text once (by its cache key, as the sweep keys them)."""
    texts: dict[str, str] = {}
    for cand in walk_project(proj).files:
        result = chunk_file(cand.path, cand.absolute.read_bytes())
        for c in [*result.chunks, *(c for _, c in lone_definitions(result))]:
            texts.setdefault(content_hash(c), embedding_text(c, cand.path))
    return list(texts.values())


def part2(db: Database, runs: int, count: int) -> None:
    tree = subset_tree(count)
    proj = Project("bench_first_index", (Root(tree, "subset"),))
    copy = Path(tempfile.mkdtemp(prefix="code-rag-bench-twin-")) / "subset"
    shutil.copytree(tree, copy)
    twin = Project("bench_second_checkout", (Root(copy, "subset"),))
    distinct = distinct_texts(proj)
    model = make_embedder("local")
    model.embed_documents(distinct[:8])  # load the model outside the timings
    print(
        f"\n## Part 2: {model.identity.describe()}, {count} files of litestar, "
        f"{len(distinct):,} distinct texts"
    )
    ratios = []
    for run in range(runs):
        t = time.perf_counter()
        model.embed_documents(distinct)
        bare = time.perf_counter() - t
        fresh(db, proj.name)  # a first index: nothing embedded before, anywhere
        t = time.perf_counter()
        sweep_project(db, proj, model, ROWS_FIRST)
        rows = time.perf_counter() - t
        vectors = embed_pending(db, proj, model)
        whole = time.perf_counter() - t
        ratios.append(whole / bare)
        print(
            f"run {run + 1}: bare model {bare:.1f} s ({len(distinct) / bare:.1f} texts/s); "
            f"rows {rows:.1f} s, then vectors {vectors.seconds:.1f} s "
            f"({vectors.chunks_embedded:,} + {vectors.definitions_embedded:,} embedded, "
            f"{vectors.reused:,} reused); whole {whole:.1f} s; ratio {whole / bare:.3f}"
        )
        # A second checkout of the same code (another root, another project).
        fresh(db, twin.name, shared=False)
        t = time.perf_counter()
        again = sweep_project(db, twin, model, ROWS_FIRST)
        more = embed_pending(db, twin, model)
        print(
            f"  second checkout: whole {time.perf_counter() - t:.1f} s, "
            f"{again.chunks_embedded + more.chunks_embedded + more.definitions_embedded:,} "
            f"embedded, {again.cache_hits + more.reused:,} vectors from the cache"
        )
        fresh(db, twin.name, shared=False)
    print(f"median ratio whole first index / bare model: {statistics.median(ratios):.3f} "
          "(target <= 1.1)")  # fmt: skip
    fresh(db, proj.name)
    model.close()
    shutil.rmtree(tree, ignore_errors=True)
    shutil.rmtree(copy.parent, ignore_errors=True)
    second_checkout_at_scale(db, runs)


def second_checkout_at_scale(db: Database, runs: int) -> None:
    """A second checkout of a whole package (a copy under another root, another project)
    after its first index, against a sweep of the same copy whose vectors cost nothing: what
    taking every vector from the embedding cache costs. The zero-cost embedder stands for the
    model on both sides (the cache keys vectors by model), so the first index takes seconds."""
    proj = project("bench_checkout_first", (PACKAGE,))
    copy = Path(tempfile.mkdtemp(prefix="code-rag-bench-checkout-"))
    shutil.copytree(proj.roots[0].path, copy / PACKAGE)
    twin = Project("bench_checkout_second", (Root(copy / PACKAGE, PACKAGE),))
    model = ZeroCostEmbedder()
    print(f"\n## Part 2b: a second checkout of {PACKAGE} ({len(walk_project(twin).files):,} files)")
    ratios = []
    for run in range(runs):
        fresh(db, proj.name)
        fresh(db, twin.name, shared=False)
        sweep_project(db, proj, model, ROWS_FIRST)
        embed_pending(db, proj, model)
        t = time.perf_counter()
        again = sweep_project(db, twin, model, ROWS_FIRST)
        more = embed_pending(db, twin, model)
        second = time.perf_counter() - t
        embedded = again.chunks_embedded + more.chunks_embedded + more.definitions_embedded
        fresh(db, twin.name)  # and an empty cache: the zero-cost sweep computes every vector
        inline = sweep_project(db, twin, model, INLINE).seconds["total"]
        ratios.append(second / inline)
        print(
            f"run {run + 1}: second checkout {second:.1f} s ({embedded:,} embedded, "
            f"{again.cache_hits + more.reused:,} vectors from the cache); zero-cost sweep of "
            f"the copy {inline:.1f} s; ratio {second / inline:.3f} (target <= 1.5)"
        )
    fresh(db, proj.name)
    fresh(db, twin.name)
    shutil.rmtree(copy, ignore_errors=True)
    print(f"median ratio second checkout / zero-cost sweep: {statistics.median(ratios):.3f}")


def part3(db: Database, runs: int, count: int) -> None:
    """Tokens per second: the bare model (its ONNX session on the pieces the product runs for
    the texts: each text, or each window of a text longer than the model's, a piece a run, at
    1 thread and at the configured threads) against the product's embedder and against the
    vectors that follow a sweep's rows, on the same texts, every token of them."""
    from indexer.embed.local import DOCUMENTS, LocalEmbedder, default_threads

    tree = subset_tree(count)
    proj = Project("bench_tokens", (Root(tree, "subset"),))
    distinct = distinct_texts(proj)
    threads = default_threads()
    models = {n: LocalEmbedder(threads=n) for n in sorted({1, threads})}
    product = models[threads]
    framed = product.pieces(distinct)
    tokens = sum(len(e.ids) for e in product.runtime.framer.encode_batch(framed))
    for m in models.values():
        m.runtime.run(framed[:4], DOCUMENTS, 1)  # load each session outside the timings
    print(
        f"\n## Part 3: {product.identity.describe()}, {len(distinct):,} distinct texts of "
        f"{count} files: {len(framed):,} pieces (a text, or a window of a longer one), "
        f"{tokens:,} tokens as the model reads them"
    )
    for run in range(runs):
        bare = {}
        for n, m in models.items():
            t = time.perf_counter()
            m.runtime.run(framed, DOCUMENTS, 1)
            bare[n] = tokens / (time.perf_counter() - t)
        t = time.perf_counter()
        product.embed_documents(distinct)
        embedder = tokens / (time.perf_counter() - t)
        fresh(db, proj.name)
        sweep_project(db, proj, product, ROWS_FIRST)
        vectors = embed_pending(db, proj, product)
        phase = tokens / vectors.seconds
        shown = ", ".join(f"{n} thread{'s' * (n > 1)} {v:,.0f}" for n, v in bare.items())
        print(
            f"run {run + 1}: bare model tokens/s: {shown}; the embedder {embedder:,.0f} "
            f"({embedder / bare[threads]:.2f} x the bare model); the vectors after the rows "
            f"{phase:,.0f} ({phase / bare[threads]:.2f} x; target >= 0.85)"
        )
    fresh(db, proj.name)
    shutil.rmtree(tree, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", type=int, choices=(1, 2, 3))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--model-files", type=int, default=40, help="part 2: files embedded")
    args = parser.parse_args()
    print(f"machine: {machine.describe()}")
    dsn = os.environ.get("CODE_RAG_DSN", "")
    data = Path(tempfile.mkdtemp(prefix="code-rag-bench-"))
    data.chmod(0o755)
    try:
        with Database(dsn, data) as db:
            if args.part in (None, 1):
                part1(db, args.runs)
            if args.part in (None, 2):
                part2(db, args.runs, args.model_files)
            if args.part in (None, 3):
                part3(db, args.runs, args.model_files)
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
