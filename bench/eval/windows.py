"""Each window of a long chunk a vector of its own: measured offline, not kept.

The local model reads 250 word pieces at a time; a chunk's embedding text longer than that is
embedded window by window and its vector is the windows' mean (`embed_local`). This asks
whether keeping each window's vector too (the chunk ranking by the nearest of its vectors, as
it does with its definitions' vectors) finds more: the windows are cut exactly as the embedder
cuts them, embedded alone (later windows with the chunk's header before them, or without:
"plain"), and both evals (the lists `score_fusion.py` gathered, its `--keep` file) are replayed
with exact cosine search over every chunk's vectors, fused as the product fuses.

    .venv/bin/python bench/eval/score_fusion.py --keep bench/.cache/scored.pkl
    .venv/bin/python bench/eval/windows.py --keep bench/.cache/scored.pkl
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import questions_eval  # noqa: E402
import replay  # noqa: E402
import score_fusion  # noqa: E402
import sources  # noqa: E402
from compare import product_vector, query_vectors  # noqa: E402
from index import CACHE, open_database, prepare_dirs  # noqa: E402
from index import project_for as docstring_project  # noqa: E402

from chunkers import embedding_text  # noqa: E402
from chunkers.model import Chunk  # noqa: E402
from indexer.db import store  # noqa: E402
from indexer.embed.local import LocalEmbedder  # noqa: E402
from indexer.search.fusion import DEFAULT_RANKING  # noqa: E402

CHUNKS = """
SELECT c.id, f.path, c.symbol, c.kind, coalesce(f.language, 'text'), c.content, c.embedding
  FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
 ORDER BY c.id
"""
DEFINITIONS = """
SELECT chunk_id, embedding FROM {schema}.rag_symbol
 WHERE embedding IS NOT NULL AND chunk_id IS NOT NULL
"""
VARIANTS = ("chunks and definitions", "+ windows", "+ plain windows", "windows instead of mean")
# The product's fusion, as score_fusion.py replays it.
PRODUCT = score_fusion.Convex(
    DEFAULT_RANKING.vector_share,
    vector_depth=DEFAULT_RANKING.vector_depth,
    keyword_depth=DEFAULT_RANKING.keyword_depth,
)


def index_vectors(model: LocalEmbedder, cache: Path, project: str) -> dict[str, Any]:
    """Every chunk's (mean) vector, the definitions' vectors, and each window of the chunks
    longer than one window, embedded alone (kept in `cache`)."""
    kept = cache / f"windows-{project}.pkl"
    if kept.exists():
        return pickle.loads(kept.read_bytes())
    db = open_database(cache)
    try:
        with db.connection() as conn:
            chunks = conn.execute(store.statement(CHUNKS, project)).fetchall()
            definitions = conn.execute(store.statement(DEFINITIONS, project)).fetchall()
            conn.rollback()
    finally:
        db.close()
    rt = model.runtime
    window = model.manifest.max_tokens - rt.frame - 4  # as embed_local cuts (no prefix)
    texts = [embedding_text(Chunk(1, 1, r[2], r[3], r[4], r[5]), r[1]) for r in chunks]
    headed, plain, owners = [], [], []
    for i, (text, enc) in enumerate(
        zip(texts, rt.tokenizer.encode_batch(texts, add_special_tokens=False), strict=True)
    ):
        n = len(enc.offsets)
        if n <= window:
            continue
        header = text[: text.index("\n\n") + 2]
        for start in range(0, n, window):
            end = min(start + window, n)
            piece = text[enc.offsets[start][0] : enc.offsets[end - 1][1]]
            headed.append(piece if start == 0 else header + piece)
            plain.append(piece)
            owners.append(chunks[i][0])
    started = time.perf_counter()
    out = {
        "ids": [r[0] for r in chunks],
        "chunks": np.asarray([r[6].to_numpy() for r in chunks], dtype=np.float32),
        "definition_owners": [r[0] for r in definitions],
        "definitions": np.asarray([r[1].to_numpy() for r in definitions], dtype=np.float32),
        "window_owners": owners,
        "windows": np.asarray(model.embed_documents(headed).vectors, dtype=np.float32),
        "plain_windows": np.asarray(model.embed_documents(plain).vectors, dtype=np.float32),
    }
    print(
        f"  {project}: {len(chunks)} chunks, {len(set(owners))} longer than a window, "
        f"{len(owners)} windows, embedded in {time.perf_counter() - started:.0f} s"
    )
    kept.write_bytes(pickle.dumps(out))
    return out


def exact_lists(a: Any, d: dict[str, Any], vectors: dict[str, Any], variant: str) -> list:
    """Each query's 200 nearest chunks, a chunk by the nearest of its vectors in `variant`."""
    at = {cid: i for i, cid in enumerate(d["ids"])}
    split = {at[cid] for cid in d["window_owners"]}
    out = []
    for gold in a.golds:
        q = product_vector(vectors, gold.text)
        best = d["chunks"] @ q
        extra = [(d["definition_owners"], d["definitions"])]
        if variant in ("+ windows", "windows instead of mean"):
            extra.append((d["window_owners"], d["windows"]))
        elif variant == "+ plain windows":
            extra.append((d["window_owners"], d["plain_windows"]))
        if variant == "windows instead of mean":
            best[sorted(split)] = -2.0
        for owners, vecs in extra:
            for cid, score in zip(owners, vecs @ q, strict=True):
                j = at[cid]
                best[j] = max(best[j], score)
        order = np.argsort(-best, kind="stable")[:200]
        out.append([(d["ids"][j], float(best[j])) for j in order])
    return out


class _Lists(pickle.Unpickler):
    """score_fusion.py's lists, pickled when it ran as the main module."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class("score_fusion" if module == "__main__" else module, name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, required=True, help="score_fusion.py's --keep file")
    args = ap.parse_args()
    with args.keep.open("rb") as f:
        asked = _Lists(f).load()
    model = LocalEmbedder()
    libs, _ = sources.ensure_corpus(sources.CACHE)
    root, _ = prepare_dirs(sources.CACHE)
    corpus, _ = prepare_dirs(CACHE)
    where = {
        "docstring": (CACHE, docstring_project(corpus, "chunker", None, model).name),
        "questions": (
            sources.CACHE,
            questions_eval.project_for(libs, root, "chunker", None, model).name,
        ),
    }
    data = {key: index_vectors(model, cache, project) for key, (cache, project) in where.items()}
    vectors: dict[str, Any] = {}
    for key, (cache, _) in where.items():
        texts = (g.text for a in asked if a.name.startswith(key) for g in a.golds)
        vectors.update(query_vectors(model, texts, cache))
    print("\n| variant | " + " | ".join(a.name for a in asked) + " |")
    print("|---|" + "---:|" * len(asked))
    for variant in VARIANTS:
        sets = [
            replace(a, vector=exact_lists(a, data[a.name.split()[0]], vectors, variant))
            for a in asked
        ]
        cells = " | ".join(replay.cells(score_fusion.replay_convex(a, PRODUCT)) for a in sets)
        print(f"| {variant} | {cells} |")


if __name__ == "__main__":
    main()
