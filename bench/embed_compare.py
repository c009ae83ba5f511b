"""The ONNX local embedder against the torch path: chunks/s and cosine on the same chunks.

    .venv/bin/python bench/embed_compare.py                     # 300 chunks, 5 rounds, ~6 minutes
    .venv/bin/python bench/embed_compare.py --chunks 96 --rounds 3 --onnx /tmp/fp32 --onnx bundled

Each backend runs in its own worker process (so neither's thread pool or memory disturbs the
other), on the same chunks (real code: the 40-line windows of bench/embed_bench.py), and the
rounds are interleaved (torch, onnx, onnx..., then again in the other order), so a noisy shared
machine slows every backend alike. Each worker reports its start-up (process start to first
vector), RSS after load and after the runs, and returns its vectors; the parent prints chunks/s
per round, the median ratio to torch measured round by round, and the cosine of every chunk's
vector to the torch path's (mean and minimum). The torch path is the embedder code-rag used
before ONNX Runtime (tests/torch_reference.py): it needs the dev install.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def worker(backend: str, chunks_file: Path, out_dir: Path, batch: int, threads: int) -> None:
    """Load one backend, answer `run` lines on stdin with the seconds one pass took."""
    started = time.perf_counter()
    import numpy as np

    chunks = json.loads(chunks_file.read_text(encoding="utf-8"))
    if backend == "torch":
        import torch
        from torch_reference import TorchEmbedder

        torch.set_num_threads(threads)
        embedder: object = TorchEmbedder(batch_size=batch)
    else:
        from indexer.embed.local import LocalEmbedder

        model = None if backend == "onnx:bundled" else backend.split(":", 1)[1]
        embedder = LocalEmbedder(model, batch_size=batch, threads=threads)
    embedder.embed_documents(chunks[:1])  # type: ignore[attr-defined]
    first = time.perf_counter() - started
    print(json.dumps({"first_vector_s": first, "rss_after_load_mib": rss_mib()}), flush=True)
    for n, line in enumerate(sys.stdin):
        if line.strip() != "run":
            break
        t, cpu = time.perf_counter(), time.process_time()
        result = embedder.embed_documents(chunks)  # type: ignore[attr-defined]
        seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
        np.save(
            out_dir / f"{backend.replace('/', '_').replace(':', '_')}-{n}.npy",
            np.asarray(result.require_all(), dtype=np.float32),
        )
        print(
            json.dumps(
                {"seconds": seconds, "cpu": cpu, "rss_mib": rss_mib(), "split": result.split_inputs}
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=0, help="ONNX batch size (0: the default)")
    parser.add_argument("--torch-batch", type=int, default=32, help="the torch path's default")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--onnx", action="append", help="ONNX model directories ('bundled': the default model)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--chunks-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.chunks_file, args.out, args.batch, args.threads)
        return

    import machine
    import numpy as np
    from embed_bench import code_chunks

    from indexer.embed.local import DEFAULT_LOCAL_BATCH_SIZE

    print(machine.describe())
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    chunks = code_chunks(args.chunks)
    backends = ["torch", *[f"onnx:{o}" for o in (args.onnx or ["bundled"])]]
    with tempfile.TemporaryDirectory(prefix="code-rag-embed-compare-") as scratch:
        out = Path(scratch)
        chunks_file = out / "chunks.json"
        chunks_file.write_text(json.dumps(chunks), encoding="utf-8")
        procs = {}
        start = {}
        for backend in backends:
            batch = (
                args.torch_batch if backend == "torch" else args.batch or DEFAULT_LOCAL_BATCH_SIZE
            )
            command = [sys.executable, __file__, "--worker", backend, "--chunks-file",
                       str(chunks_file), "--out", str(out), "--batch", str(batch),
                       "--threads", str(args.threads)]  # fmt: skip
            procs[backend] = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
            )
            start[backend] = json.loads(procs[backend].stdout.readline())  # type: ignore[union-attr]
        speeds: dict[str, list[float]] = {b: [] for b in backends}
        cpu: dict[str, list[float]] = {b: [] for b in backends}
        rss: dict[str, float] = {}
        split = 0
        for r in range(args.rounds):
            order = backends if r % 2 == 0 else backends[::-1]
            for backend in order:
                proc = procs[backend]
                proc.stdin.write("run\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
                answer = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
                speeds[backend].append(len(chunks) / answer["seconds"])
                cpu[backend].append(answer["cpu"] / len(chunks))
                rss[backend] = answer["rss_mib"]
                split = answer["split"]
        for proc in procs.values():
            proc.stdin.close()  # type: ignore[union-attr]
            proc.wait()
        mean_chars = statistics.mean(len(c) for c in chunks)
        print(f"\n{len(chunks)} chunks, mean {mean_chars:.0f} characters, {split} longer than "
              f"one window; {args.rounds} interleaved rounds, {args.threads} threads")  # fmt: skip
        print("\n| backend | chunks/s per round | median | × torch (median of per-round ratios) "
              "| CPU s per chunk | cosine to torch mean / min | RSS after load / after runs "
              "| start → first vector |")  # fmt: skip
        print("|---|---|---:|---:|---:|---|---|---:|")
        reference = [np.load(out / f"torch-{n}.npy") for n in range(args.rounds)]
        for backend in backends:
            tag = backend.replace("/", "_").replace(":", "_")
            vectors = np.load(out / f"{tag}-{args.rounds - 1}.npy")
            cos = (vectors * reference[-1]).sum(axis=1)
            ratios = [s / t for s, t in zip(speeds[backend], speeds["torch"], strict=True)]
            runs = ", ".join(f"{s:.1f}" for s in speeds[backend])
            print(
                f"| {backend} | {runs} | {statistics.median(speeds[backend]):.1f} | "
                f"{statistics.median(ratios):.2f}× | {statistics.median(cpu[backend]):.3f} | "
                f"{cos.mean():.4f} / {cos.min():.4f} | "
                f"{start[backend]['rss_after_load_mib']:.0f} / {rss[backend]:.0f} MiB | "
                f"{start[backend]['first_vector_s']:.2f} s |"
            )
        for backend in backends[1:]:
            tag = backend.replace("/", "_").replace(":", "_")
            first = np.load(out / f"{tag}-0.npy")
            last = np.load(out / f"{tag}-{args.rounds - 1}.npy")
            same = (first * last).sum(axis=1).min()
            print(f"{backend}: the same chunks in two rounds, min cosine {same:.6f}")


if __name__ == "__main__":
    main()
