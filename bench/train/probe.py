"""A quick, offline read of a model on both evals' tuning splits: the vector side alone.

Training choices (epochs, batch, learning rate, data) are made on this probe, never on a test
split. `build` writes one JSON file with, for each eval, the documents exactly as the product
embeds them (the chunker's chunks of the eval corpus with their header) and the tuning split's
queries with their targets; `score` ranks every document by cosine for each query, with any
embedding function, and reports Hit@1/5/10 and MRR@10 by the evals' rule (a hit is in the
target's file and holds its first line, or covers half of it). The file travels alone (no
database, no corpus), so a model can be probed wherever it is trained.

    .venv/bin/python -m bench.train.probe build          # -> bench/.cache/train/probe.json
    .venv/bin/python -m bench.train.probe score --model bench/.cache/train/model

`train.py --probe` scores the base model and the model after every epoch.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# Only the standard library at the top: `score` runs where the model trains, which may have
# torch and transformers but none of the product's dependencies.
PROBE = HERE.parent / ".cache" / "train" / "probe.json"
Embed = Callable[[Sequence[str], bool], Any]  # texts, is_query -> (n, d) normalised array


def _documents(files: Sequence[tuple[str, Path]]) -> list[dict[str, Any]]:
    from chunkers import chunk_file, embedding_text

    docs = []
    for key, path in files:
        rel = key.split("/", 1)[1]
        for chunk in chunk_file(rel, path.read_bytes()).chunks:
            docs.append(
                {
                    "path": key,
                    "start": chunk.start_line,
                    "end": chunk.end_line,
                    "text": embedding_text(chunk, rel),
                }
            )
    return docs


def build(out: Path = PROBE) -> dict[str, Any]:
    """Both evals' documents and tuning queries, as the product would index and ask them."""
    from bench.eval import questions as questions_data
    from bench.eval import sources
    from bench.eval.corpus import build_corpus
    from bench.eval.index import CACHE as DOCSTRING_CACHE
    from bench.eval.index import REPO_LABEL, prepare_dirs

    corpus, _ = prepare_dirs(DOCSTRING_CACHE)
    queries, _ = build_corpus(corpus)
    doc_files = [
        (f"{REPO_LABEL}/{f.relative_to(corpus).as_posix()}", f)
        for f in sorted(corpus.rglob("*.py"))
    ]
    docstring = {
        "documents": _documents(doc_files),
        "queries": [
            {"text": q.text, "targets": [[f"{REPO_LABEL}/{q.path}", q.start_line, q.end_line]]}
            for q in queries
            if q.split == "tune"
        ],
    }
    questions = questions_data.ensure_valid()
    libs, _ = sources.ensure_corpus(sources.CACHE)
    root = sources.corpus_root(sources.CACHE)
    q_files = [(f"{lib.name}/{rel}", root / lib.name / rel) for lib in libs for rel in lib.files]
    asked = {
        "documents": _documents(q_files),
        "queries": [
            {
                "text": q.text,
                "targets": [[f"{t.repo}/{t.path}", t.start_line, t.end_line] for t in q.targets],
            }
            for q in questions
            if q.split == "tune"
        ],
    }
    probe = {"docstring": docstring, "questions": asked}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(probe))
    return probe


def _finds(doc: dict[str, Any], target: Sequence[Any]) -> bool:
    path, start, end = target
    if doc["path"] != path:
        return False
    if doc["start"] <= start <= doc["end"]:
        return True
    overlap = min(doc["end"], end) - max(doc["start"], start) + 1
    return overlap * 2 >= end - start + 1


def score(probe: dict[str, Any], embed: Embed) -> dict[str, dict[str, float]]:
    """Hit@1/5/10 and MRR@10 of the vector side alone, per eval."""
    import numpy as np

    out = {}
    for name, data in probe.items():
        docs = data["documents"]
        dv = np.asarray(embed([d["text"] for d in docs], False), dtype=np.float32)
        qv = np.asarray(embed([q["text"] for q in data["queries"]], True), dtype=np.float32)
        top = np.argsort(-(qv @ dv.T), axis=1, kind="stable")[:, :10]
        ranks = []
        for q, row in zip(data["queries"], top, strict=True):
            found = [
                i for i, d in enumerate(row, 1) if any(_finds(docs[d], t) for t in q["targets"])
            ]
            ranks.append(found[0] if found else None)
        n = len(ranks)
        out[name] = {
            "hit1": sum(r == 1 for r in ranks if r) / n,
            "hit5": sum(r <= 5 for r in ranks if r) / n,
            "hit10": sum(1 for r in ranks if r) / n,
            "mrr10": sum(1 / r for r in ranks if r) / n,
        }
    return out


def describe(scores: dict[str, dict[str, float]]) -> str:
    return "; ".join(
        f"{name} {s['hit1']:.3f}/{s['hit5']:.3f}/{s['hit10']:.3f}/{s['mrr10']:.3f}"
        for name, s in scores.items()
    )


def torch_embedder(model: Any, tokenizer: Any, device: Any, max_tokens: int = 256) -> Embed:
    """Mean-pooled, normalised vectors of a transformers model, as the product's model pools
    (`device`: a torch device, or its name)."""
    import torch

    def embed(texts: Sequence[str], is_query: bool) -> Any:
        was_training = model.training
        model.eval()
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), 128):
                enc = tokenizer(
                    list(texts[i : i + 128]),
                    max_length=max_tokens,
                    truncation=True,
                    padding=True,
                    return_tensors="pt",
                ).to(device)
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(pooled, dim=-1).float().cpu())
        model.train(was_training)
        return torch.cat(out).numpy()

    return embed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the probe file")
    b.add_argument("--out", type=Path, default=PROBE)
    s = sub.add_parser("score", help="score a sentence-transformers or transformers folder")
    s.add_argument("--model", default="all-MiniLM-L6-v2")
    s.add_argument("--probe", type=Path, default=PROBE)
    s.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    if args.command == "build":
        probe = build(args.out)
        for name, data in probe.items():
            print(f"{name}: {len(data['documents'])} documents, {len(data['queries'])} queries")
        print(f"-> {args.out}")
        return
    from transformers import AutoModel, AutoTokenizer

    from indexer.embed.export import resolve_source

    source = resolve_source(args.model)
    model = AutoModel.from_pretrained(source).to(args.device)
    tokenizer = AutoTokenizer.from_pretrained(source)
    probe = json.loads(args.probe.read_text())
    print(describe(score(probe, torch_embedder(model, tokenizer, args.device))))


if __name__ == "__main__":
    main()
