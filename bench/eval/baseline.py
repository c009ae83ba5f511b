"""The plain hybrid baseline, in the bench only: what a simple code-search would do.

The same files are cut into fixed line windows (WINDOW_LINES lines, a new one every
WINDOW_STRIDE lines, the last one kept only if it reaches past the one before); each window's
raw text (no header) is ranked two ways: BM25 (k1 1.2, b 0.75) over identifier-aware tokens
(words, camelCase and snake_case parts, the whole identifier lowercased), computed with numpy,
and cosine similarity of the local model's vectors (the same `embed_documents` / `embed_query`
as the product). The two rankings (DEPTH each) are fused by unweighted reciprocal rank fusion
(k RRF_K); overlapping windows of one file collapse into the best, as code-rag's results do.
Window vectors are cached under the eval's cache folder, keyed by the model and the window text.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

WINDOW_LINES = 40
WINDOW_STRIDE = 20
BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60
DEPTH = 100  # candidates per ranker handed to fusion
EMBED_BATCH = 32

WORD_RE = re.compile(r"[A-Za-z0-9_]+")
HUMP_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@dataclass(frozen=True)
class Window:
    repo: str
    path: str
    start_line: int
    end_line: int
    text: str


def line_windows(text: str) -> list[tuple[int, int, str]]:
    """(start line, end line, text) of each window of `text`; blank windows are skipped."""
    lines = text.splitlines()
    out: list[tuple[int, int, str]] = []
    start = 0
    while start < len(lines):
        end = min(start + WINDOW_LINES, len(lines))
        chunk = "\n".join(lines[start:end])
        if chunk.strip():
            out.append((start + 1, end, chunk))
        if end == len(lines):
            break
        start += WINDOW_STRIDE
    return out


def corpus_windows(files: Sequence[tuple[str, str, Path]]) -> list[Window]:
    """Windows of every (repo, relative path, absolute path) file."""
    out: list[Window] = []
    for repo, rel, path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        out.extend(Window(repo, rel, s, e, t) for s, e, t in line_windows(text))
    return out


def tokens(text: str) -> list[str]:
    """Lowercased words, with the camelCase / snake_case parts of each identifier."""
    out: list[str] = []
    for word in WORD_RE.findall(text):
        parts = [p.lower() for piece in word.split("_") for p in HUMP_RE.findall(piece)]
        out.append(word.lower())
        if len(parts) > 1:
            out.extend(parts)
    return out


class BM25:
    """Okapi BM25 over pre-tokenised documents, one postings array per term."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B):
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if self.n else 1.0
        self.norm = k1 * (1 - b + b * lengths / max(avg, 1e-9))
        self.k1 = k1
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(i)
                tfs.append(tf)
        self.postings = {
            term: (np.array(ids), np.array(tfs, dtype=np.float64))
            for term, (ids, tfs) in postings.items()
        }

    def scores(self, query: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n)
        for term in set(query):
            if term not in self.postings:
                continue
            ids, tf = self.postings[term]
            idf = math.log(1 + (self.n - len(ids) + 0.5) / (len(ids) + 0.5))
            out[ids] += idf * tf * (self.k1 + 1) / (tf + self.norm[ids])
        return out


def window_vectors(embedder: Any, windows: Sequence[Window], cache: Path) -> np.ndarray:
    """Unit vectors of every window's text from the real model, cached on disk per model."""
    key = hashlib.sha256(json.dumps(embedder.identity.to_dict(), sort_keys=True).encode())
    path = cache / f"window-vectors-{key.hexdigest()[:12]}.npz"
    stored: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as data:
            stored = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    keys = [hashlib.sha256(w.text.encode()).hexdigest() for w in windows]
    missing = list(dict.fromkeys(k for k in keys if k not in stored))
    text_of = {k: w.text for k, w in zip(keys, windows, strict=True)}

    def save() -> None:
        names = list(stored)
        np.savez(path, keys=np.array(names), vectors=np.stack([stored[k] for k in names]))

    for i in range(0, len(missing), EMBED_BATCH):
        batch = missing[i : i + EMBED_BATCH]
        result = embedder.embed_documents([text_of[k] for k in batch])
        for k, v in zip(batch, result.vectors, strict=True):
            assert v is not None, "the local model never refuses an input"
            stored[k] = np.asarray(v, dtype=np.float32)
        done = min(i + EMBED_BATCH, len(missing))
        print(f"\r  baseline windows embedded: {done}/{len(missing)}", end="", file=sys.stderr)
        if (i // EMBED_BATCH) % 10 == 9:
            save()
    if missing:
        print(file=sys.stderr)
        save()
    matrix = np.stack([stored[k] for k in keys]) if keys else np.zeros((0, 1), np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


class PlainBaseline:
    """BM25 windows + vector windows, unweighted RRF, overlapping windows collapsed."""

    def __init__(self, windows: Sequence[Window], vectors: np.ndarray) -> None:
        self.windows = list(windows)
        self.vectors = vectors
        self.bm25 = BM25([tokens(w.text) for w in self.windows])

    def rankings(self, query: str, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        kw = self.bm25.scores(tokens(query))
        kw_order = np.argsort(-kw, kind="stable")[:DEPTH]
        kw_order = kw_order[kw[kw_order] > 0]
        q = np.asarray(query_vector, dtype=np.float32)
        cos = self.vectors @ (q / max(float(np.linalg.norm(q)), 1e-12))
        vec_order = np.argsort(-cos, kind="stable")[:DEPTH]
        return kw_order, vec_order

    def search(
        self, query: str, query_vector: np.ndarray, top_k: int = 10, mode: str = "hybrid"
    ) -> list[dict[str, Any]]:
        kw_order, vec_order = self.rankings(query, query_vector)
        scores: dict[int, float] = {}
        lists = {"hybrid": (kw_order, vec_order), "keyword": (kw_order,), "vector": (vec_order,)}
        for order in lists[mode]:
            for rank, i in enumerate(order.tolist(), 1):
                scores[i] = scores.get(i, 0.0) + 1.0 / (RRF_K + rank)
        hits: list[dict[str, Any]] = []
        for i in sorted(scores, key=lambda j: (-scores[j], j)):
            w = self.windows[i]
            row = {"repo": w.repo, "path": w.path, "start_line": w.start_line,
                   "end_line": w.end_line}  # fmt: skip
            if any(_overlaps(row, kept) for kept in hits):
                continue
            hits.append(row)
            if len(hits) == top_k:
                break
        return hits


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["repo"] == b["repo"]
        and a["path"] == b["path"]
        and a["start_line"] <= b["end_line"]
        and b["start_line"] <= a["end_line"]
    )
