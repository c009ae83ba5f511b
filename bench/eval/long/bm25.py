"""The long-question eval's plain reference: BM25 over whole files, path and contents.

What SWE-bench's own retrieval baseline does (one document a file, its path and its text; the
issue as the query), with the bench's identifier-aware tokens (bench/eval/baseline.py: words,
their camelCase and snake_case parts) and the same BM25 (k1 1.2, b 0.75; each query term
counted once). Built over exactly the files code-rag indexed at the commit, so both rank the
same documents. Tokens are kept per file while its size and mtime stay, so a repository's
next commit re-reads only the files that changed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from bench.eval.baseline import BM25_B, BM25_K1, tokens


class FileBM25:
    """BM25 over one tree's files; `index` it at each commit, then `search`."""

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}
        self._docs: dict[str, tuple[tuple[int, int], np.ndarray, np.ndarray]] = {}
        self.paths: list[str] = []

    def _terms(self, rel: str, path: Path) -> tuple[np.ndarray, np.ndarray]:
        st = path.stat()
        key = (st.st_size, st.st_mtime_ns)
        cached = self._docs.get(rel)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        text = path.read_bytes().decode("utf-8", errors="replace")
        counts = Counter(tokens(f"{rel}\n{text}"))
        ids = np.array([self.vocab.setdefault(t, len(self.vocab)) for t in counts], np.int64)
        tfs = np.array(list(counts.values()), dtype=np.float64)
        self._docs[rel] = (key, ids, tfs)
        return ids, tfs

    def index(self, root: Path, files: Iterable[str]) -> None:
        """Rank the files `files` (paths under `root`) from now on."""
        self.paths = sorted(files)
        for gone in set(self._docs) - set(self.paths):
            del self._docs[gone]
        per_doc = [self._terms(rel, root / rel) for rel in self.paths]
        lengths = np.array([tf.sum() for _, tf in per_doc], dtype=np.float64)
        avg = float(lengths.mean()) if len(lengths) else 1.0
        self.norm = self.k1 * (1 - self.b + self.b * lengths / max(avg, 1e-9))
        if per_doc:
            terms = np.concatenate([ids for ids, _ in per_doc])
            tfs = np.concatenate([tf for _, tf in per_doc])
            docs = np.repeat(np.arange(len(per_doc)), [len(ids) for ids, _ in per_doc])
        else:
            terms, tfs, docs = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64))
        order = np.argsort(terms, kind="stable")
        self._terms_sorted, self._tfs, self._doc_of = terms[order], tfs[order], docs[order]

    def search(self, query: str, k: int) -> list[str]:
        n = len(self.paths)
        scores = np.zeros(n)
        for term in set(tokens(query)):
            tid = self.vocab.get(term)
            if tid is None:
                continue
            lo = np.searchsorted(self._terms_sorted, tid, "left")
            hi = np.searchsorted(self._terms_sorted, tid, "right")
            if lo == hi:
                continue
            ids, tf = self._doc_of[lo:hi], self._tfs[lo:hi]
            idf = math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
            scores[ids] += idf * tf * (self.k1 + 1) / (tf + self.norm[ids])
        top = np.argsort(-scores, kind="stable")[:k]
        return [self.paths[i] for i in top if scores[i] > 0]
