"""Training the query side alone, against the document vectors the index already holds.

A model change re-embeds every chunk; a change on the query side alone does not, and costs
little to train on a CPU, since the documents are embedded once. Both ways here keep the
shipped model's document vectors of the training pairs (`pairs.py`) fixed and rank every
query against all of them (a softmax over the 13,775 definitions, not only a batch's):

- `adapter`: a 384 x 384 linear map added to the query vector (`q + qA`, normalised);
- `tower`: a query encoder of its own, all-MiniLM-L6-v2 fine-tuned (queries cut at 48 word
  pieces, batch 64, AdamW lr 5e-5, 10 % warm-up then linear decay, 2 epochs, seed 13).

With `--questions N` the adapter also trains on the hand-written developer questions
(`question_pairs.py`), each N times an epoch (`--questions-only`: on them alone), their
definitions added to the documents every query ranks against.

Each then runs both evals with its query vectors through the product's fusion and collapse
(`bench/eval/probes.py`), beside the product. Measured, not kept (docs/performance.md).

    .venv/bin/python bench/train/query_side.py vectors     # the pairs' vectors (about 9 min)
    .venv/bin/python bench/train/query_side.py adapter --keep bench/.cache/scored.pkl
    .venv/bin/python bench/train/query_side.py tower --keep bench/.cache/scored.pkl  # 20 min
    .venv/bin/python bench/train/query_side.py adapter --keep bench/.cache/scored.pkl --questions 5
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "eval"))
sys.path.insert(0, str(HERE.parent.parent))

import probes  # noqa: E402
import question_pairs  # noqa: E402
from compare import Gold  # noqa: E402
from training_corpus import CACHE  # noqa: E402

from indexer.embed import make_embedder  # noqa: E402
from indexer.search import candidates  # noqa: E402

PAIRS = CACHE / "pairs.jsonl"
VECTORS = CACHE / "query-side-vectors.npz"
SEED = 13
SCALE = 20.0


def load_pairs() -> tuple[list[dict], list[str], list[int]]:
    pairs = [json.loads(line) for line in PAIRS.read_text().splitlines()]
    documents = list(dict.fromkeys(p["document"] for p in pairs))
    at = {d: i for i, d in enumerate(documents)}
    return pairs, documents, [at[p["document"]] for p in pairs]


def embed_pairs(embedder: Any) -> None:
    """Each pair's query as the product embeds a query, each definition as it embeds a chunk."""
    pairs, documents, _ = load_pairs()
    queries = [embedder.embed_query(p["query"]) for p in pairs]
    np.savez(
        VECTORS, queries=np.asarray(queries, np.float32), documents=_embed(embedder, documents)
    )


def _embed(embedder: Any, documents: list[str]) -> np.ndarray:
    vectors: list[Any] = []
    for i in range(0, len(documents), 64):
        vectors += embedder.embed_documents(documents[i : i + 64]).require_all()
        print(f"\r  documents {len(vectors)}/{len(documents)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return np.asarray(vectors, np.float32)


def question_vectors(embedder: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hand-written training questions (`question_pairs.py`): their query vectors, the
    vectors of their definitions not among the mined pairs' documents, and each question's
    target among the mined documents followed by those."""
    _, documents, _ = load_pairs()
    asked = question_pairs.question_pairs(question_pairs.read([question_pairs.DATA]))
    at = {d: i for i, d in enumerate(documents)}
    extra = list(dict.fromkeys(p.document for p in asked if p.document not in at))
    at.update({d: len(documents) + i for i, d in enumerate(extra)})
    # Keyed by the questions and the definitions they add: new mined pairs change the latter.
    digest = hashlib.sha256(question_pairs.DATA.read_bytes() + "\0".join(extra).encode())
    cache = CACHE / f"question-vectors-{digest.hexdigest()[:12]}.npz"
    if not cache.is_file():
        queries = [embedder.embed_query(p.query) for p in asked]
        np.savez(cache, queries=np.asarray(queries, np.float32), documents=_embed(embedder, extra))
    with np.load(cache) as data:
        return data["queries"], data["documents"], np.asarray([at[p.document] for p in asked])


def train_adapter(
    epochs: int = 2,
    lr: float = 1e-3,
    asked: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    repeat: int = 0,
    mined: bool = True,
) -> np.ndarray:
    """The adapter, trained on the mined pairs (unless not `mined`) and on the hand-written
    questions `asked` (query vectors, extra documents, targets), each question `repeat` times
    an epoch; every query ranks against all documents."""
    import torch

    torch.manual_seed(SEED)
    _, _, targets = load_pairs()
    with np.load(VECTORS) as data:
        queries, documents = data["queries"], data["documents"]
    if not mined:
        queries, targets = queries[:0], []
    target = np.asarray(targets, np.int64)
    if asked is not None and repeat:
        queries = np.concatenate([queries, *[asked[0]] * repeat])
        documents = np.concatenate([documents, asked[1]])
        target = np.concatenate([target, *[asked[2]] * repeat])
    q_all, docs, gold = torch.tensor(queries), torch.tensor(documents), torch.tensor(target)
    adapter = torch.nn.Parameter(torch.zeros(q_all.shape[1], q_all.shape[1]))
    optimizer = torch.optim.AdamW([adapter], lr=lr, weight_decay=0.01)
    for epoch in range(epochs):
        order = torch.randperm(len(gold))
        for i in range(0, len(order), 256):
            b = order[i : i + 256]
            q = q_all[b] + q_all[b] @ adapter
            q = q / q.norm(dim=1, keepdim=True)
            loss = torch.nn.functional.cross_entropy(SCALE * q @ docs.T, gold[b])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"  epoch {epoch + 1}: loss {float(loss.detach()):.3f}", file=sys.stderr)
    return adapter.detach().numpy().astype(np.float64)


def train_tower(out: Path, epochs: int = 2, lr: float = 5e-5, batch: int = 64) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from indexer.embed.export import BUNDLED_SOURCE, resolve_source

    torch.manual_seed(SEED)
    pairs, _, targets = load_pairs()
    with np.load(VECTORS) as data:
        documents = torch.tensor(data["documents"])
    target = torch.tensor(targets)
    source = resolve_source(BUNDLED_SOURCE)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source)
    model.train()
    steps = epochs * (len(pairs) // batch)
    warmup = max(1, steps // 10)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / (steps - warmup)),
    )
    step = 0
    for epoch in range(epochs):
        order = list(range(len(pairs)))
        random.Random(SEED + epoch).shuffle(order)
        for i in range(0, len(order) - batch + 1, batch):
            b = order[i : i + batch]
            q = _pooled(model, tokenizer, [pairs[j]["query"] for j in b], 48)
            loss = torch.nn.functional.cross_entropy(SCALE * q @ documents.T, target[b])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step % 25 == 0:
                print(
                    f"\r  step {step}/{steps}: loss {float(loss.detach()):.3f}",
                    end="",
                    file=sys.stderr,
                )
    print(file=sys.stderr)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _pooled(model: Any, tokenizer: Any, texts: list[str], max_tokens: int) -> Any:
    import torch

    enc = tokenizer(
        texts, max_length=max_tokens, truncation=True, padding=True, return_tensors="pt"
    )
    out = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
    pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def evaluate(embedder: Any, keep: Path | None, label: str, query_vector: Any) -> None:
    """Both evals with `query_vector(product vector, text)` on the vector side."""
    asked = probes.kept_or_gathered(keep, embedder)

    def transform(_conn: Any, _project: str, gold: Gold, vectors: Any) -> dict[Any, Any]:
        return {label: query_vector(probes.product_vector(vectors, gold.text), gold.text)}

    gathered = probes.vector_lists(embedder, transform)
    variant = [probes.swapped(a, gathered[a.name], label, "vector") for a in asked]
    probes.header(asked)
    probes.print_row(label, variant, lambda a: probes.replay_convex(a, probes.PRODUCT))
    probes.print_row(
        f"{label}, vector side alone",
        variant,
        lambda a: probes.replay_convex(a, probes.PRODUCT, "vector"),
    )
    probes.print_row(
        "the product, vector side alone",
        asked,
        lambda a: probes.replay_convex(a, probes.PRODUCT, "vector"),
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("vectors", "adapter", "tower"))
    ap.add_argument("--keep", type=Path, help="the lists score_fusion.py keeps (made if missing)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument(
        "--questions",
        type=int,
        default=0,
        help="train the adapter on the hand-written questions too, each this many times an epoch",
    )
    ap.add_argument("--questions-only", action="store_true", help="not on the mined pairs")
    ap.add_argument("--save", type=Path, help="write the adapter (.npy) here")
    args = ap.parse_args(argv)
    if args.questions_only and not args.questions:
        ap.error("--questions-only trains on the questions alone: give --questions N too")
    embedder = make_embedder("local", None)
    if args.step == "vectors":
        embed_pairs(embedder)
        return
    if args.step == "adapter":
        asked = question_vectors(embedder) if args.questions else None
        adapter = train_adapter(
            args.epochs, args.lr, asked, args.questions, mined=not args.questions_only
        )
        if args.save:
            np.save(args.save, adapter.astype(np.float32))
        evaluate(embedder, args.keep, "query adapter", lambda q, _text: q + q @ adapter)
        return
    import torch
    from transformers import AutoModel, AutoTokenizer

    out = CACHE / "query-tower"
    train_tower(out)
    tokenizer, model = AutoTokenizer.from_pretrained(out), AutoModel.from_pretrained(out).eval()

    def tower(_q: Any, text: str) -> Any:
        with torch.no_grad():
            return _pooled(model, tokenizer, [candidates.vector_query(text)], 256)[0].numpy()

    evaluate(embedder, args.keep, "query tower", tower)


if __name__ == "__main__":
    main()
