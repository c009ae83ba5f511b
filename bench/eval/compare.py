"""Systems side by side on one query set, scored by one rule: code-rag's three modes (live
`search_code` calls) and the plain baseline's three (baseline.py), per query and per language.

A hit finds a gold definition when it is in the definition's file (and repo) and holds its
first line, or covers at least half of its lines; a hit by file (search's default) also finds
it when one of its `also` ranges does, at the hit's rank. A query with several gold
definitions is found by the first hit that finds any of them. Hit@k: the first such hit is in
the top k; MRR@10: mean of 1/rank of the first such hit in the top 10 (0 if none).
"code-rag hybrid, own range only" scores the default's hits as if they had no `also` ranges;
"code-rag hybrid, by chunk" asks for a hit per chunk (`by_file=False`).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.eval.baseline import PlainBaseline
from indexer.embed import EmbedBatchResult, Embedder, EmbeddingModel
from indexer.project import Project
from indexer.search import candidates, hybrid
from indexer.search.fusion import DEFAULT_RANKING, Ranking

TOP_K = 10
# Each code-rag system: its mode, and whether it asks for one hit per file (the default).
CODE_RAG = {
    "code-rag keyword": ("keyword", True),
    "code-rag vector": ("vector", True),
    "code-rag hybrid": ("hybrid", True),
    "code-rag hybrid, by chunk": ("hybrid", False),
}
OWN_RANGE = "code-rag hybrid, own range only"  # the default's hits, their `also` not read
PLAIN = {"plain hybrid (RRF)": "hybrid", "plain BM25": "keyword", "plain vector": "vector"}
SYSTEMS = (*CODE_RAG, OWN_RANGE, *PLAIN)


@dataclass(frozen=True)
class Gold:
    """One query and the definitions that answer it: (repo, path, first line, last line)."""

    qid: str
    text: str
    language: str
    targets: tuple[tuple[str, str, int, int], ...]


def _field(row: Any, key: str) -> Any:
    return row[key] if isinstance(row, dict) else getattr(row, key)


def finds(row: Any, target: tuple[str, str, int, int], also: bool = True) -> bool:
    """Whether the hit `row` finds `target`: by its own range, or (with `also`) by one of
    the further ranges of its file it carries."""
    repo, path, first, last = target
    if _field(row, "repo") != repo or _field(row, "path") != path:
        return False
    ranges = [(_field(row, "start_line"), _field(row, "end_line"))]
    if also:
        further = row.get("also", []) if isinstance(row, dict) else getattr(row, "also", [])
        ranges += [(_field(a, "start_line"), _field(a, "end_line")) for a in further]
    return any(_covers(start, end, first, last) for start, end in ranges)


def _covers(start: int, end: int, first: int, last: int) -> bool:
    if start <= first <= end:
        return True
    overlap = min(end, last) - max(start, first) + 1
    return overlap * 2 >= last - first + 1


def first_hit(rows: Sequence[Any], gold: Gold, also: bool = True) -> int | None:
    """The rank of the first of `rows` that finds one of `gold`'s targets (None: none)."""
    return next(
        (i for i, r in enumerate(rows, 1) if any(finds(r, t, also) for t in gold.targets)), None
    )


@dataclass
class Scores:
    ranks: list[int | None] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, rank: int | None, ms: float | None = None) -> None:
        self.ranks.append(rank)
        if ms is not None:
            self.ms.append(ms)

    def hit(self, k: int) -> float:
        return sum(r is not None and r <= k for r in self.ranks) / max(len(self.ranks), 1)

    def mrr(self, k: int = 10) -> float:
        return sum(1 / r for r in self.ranks if r is not None and r <= k) / max(len(self.ranks), 1)

    def pct(self, p: float) -> float:
        return float(np.percentile(self.ms, p)) if self.ms else float("nan")


class CachedQueries:
    """An embedder whose query vectors were computed ahead (by the real model): searches then
    measure the search, not the model. Documents are never embedded through it."""

    def __init__(self, identity: EmbeddingModel, vectors: dict[str, np.ndarray]) -> None:
        self.identity = identity
        self.vectors = vectors

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        raise RuntimeError("the eval never embeds documents through the query cache")

    def embed_query(self, text: str) -> list[float]:
        return list(self.vectors[text])

    def close(self) -> None:
        pass


def query_vectors(embedder: Embedder, texts: Iterable[str], cache: Path) -> dict[str, np.ndarray]:
    """Query vectors from the real model, cached on disk per model: of each query as asked
    (the plain baseline embeds that) and of the text the product embeds for it
    (`candidates.vector_query`, a question without its opening), each under its own text."""
    key = hashlib.sha256(json.dumps(embedder.identity.to_dict(), sort_keys=True).encode())
    path = cache / f"query-vectors-{key.hexdigest()[:12]}.npz"
    stored: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as data:
            stored = {str(t): v for t, v in zip(data["texts"], data["vectors"], strict=True)}
    asked = list(dict.fromkeys(texts))
    wanted = list(dict.fromkeys([*asked, *(candidates.vector_query(t) for t in asked)]))
    missing = [t for t in wanted if t not in stored]
    for i, text in enumerate(missing, 1):
        stored[text] = np.asarray(embedder.embed_query(text), dtype=np.float32)
        if i % 50 == 0 or i == len(missing):
            print(f"\r  query vectors: {i}/{len(missing)}", end="", file=sys.stderr, flush=True)
    if missing:
        print(file=sys.stderr)
        texts_all = list(stored)
        np.savez(path, texts=np.array(texts_all), vectors=np.stack([stored[t] for t in texts_all]))
    return {t: stored[t] for t in wanted}


def evaluate(
    db: Any,
    project: Project | Sequence[Project],
    embedder: CachedQueries,
    baseline: PlainBaseline,
    golds: Sequence[Gold],
    ranking: Ranking = DEFAULT_RANKING,
    ef_search: int = 400,
    deep: list[dict[str, Any]] | None = None,
) -> dict[str, list[Scores]]:
    """Per system, one Scores per query (so any grouping can be summed later). With `deep`,
    each query's first DEEP_HITS hybrid hits are added to it, with the query's targets, for
    offline replay (`bench/eval/files/replay.py`).

    code-rag's modes are interleaved per query, so they share the machine's noise; the
    baseline runs in-process over numpy arrays (its latency is not comparable, not reported).
    """
    out: dict[str, list[Scores]] = {s: [] for s in SYSTEMS}
    for i, g in enumerate(golds, 1):
        for system, (mode, by_file) in CODE_RAG.items():
            t = time.perf_counter()
            hits = hybrid.search_code(
                db,
                project,
                embedder,
                g.text,
                top_k=TOP_K,
                mode=mode,
                ranking=ranking,
                ef_search=ef_search,
                by_file=by_file,
            )
            s = Scores()
            s.add(first_hit(hits, g), (time.perf_counter() - t) * 1000)
            out[system].append(s)
            if system == "code-rag hybrid":
                own = Scores()
                own.add(first_hit(hits, g, also=False))
                out[OWN_RANGE].append(own)
        if deep is not None:
            deep.append(deep_hits(db, project, embedder, g, ranking, ef_search))
        vector = embedder.vectors[g.text]
        for system, mode in PLAIN.items():
            s = Scores()
            s.add(first_hit(baseline.search(g.text, vector, TOP_K, mode), g))
            out[system].append(s)
        if i % 50 == 0 or i == len(golds):
            print(f"\r  searched {i}/{len(golds)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


DEEP_HITS = 50


def deep_hits(
    db: Any,
    project: Project | Sequence[Project],
    embedder: Any,
    g: Gold,
    ranking: Ranking,
    ef_search: int,
) -> dict[str, Any]:
    """One query's first DEEP_HITS hybrid hits by chunk as rows, with its targets."""
    hits = hybrid.search_code(
        db,
        project,
        embedder,
        g.text,
        top_k=DEEP_HITS,
        ranking=ranking,
        ef_search=ef_search,
        by_file=False,
    )
    rows = [hit_row(h) for h in hits]
    return {"qid": g.qid, "query": g.text, "targets": [list(t) for t in g.targets], "deep": rows}


def hit_row(hit: Any) -> dict[str, Any]:
    """A search hit as the deep lists keep it for offline replay."""
    fields = ("repo", "path", "start_line", "end_line", "symbol", "kind", "score")
    return {k: getattr(hit, k) for k in fields}


def merged(scores: Iterable[Scores]) -> Scores:
    out = Scores()
    for s in scores:
        out.ranks.extend(s.ranks)
        out.ms.extend(s.ms)
    return out


def system_table(results: dict[str, list[Scores]]) -> str:
    lines = [
        "| system | Hit@1 | Hit@5 | Hit@10 | MRR@10 | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for system, per_query in results.items():
        s = merged(per_query)
        lat = f"{s.pct(50):.1f} | {s.pct(95):.1f}" if s.ms else "– | –"
        lines.append(
            f"| {system} | {s.hit(1):.3f} | {s.hit(5):.3f} | {s.hit(10):.3f} | "
            f"{s.mrr():.3f} | {lat} |"
        )
    return "\n".join(lines)


def bootstrap(diff: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """A 95% bootstrap interval (2,000 resamples) for the mean of per-query differences."""
    means = np.random.default_rng(seed).choice(diff, size=(2000, len(diff))).mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def paired(results: dict[str, list[Scores]], a: str, b: str, seed: int = 0) -> str:
    """`a` against `b` query by query: mean difference of reciprocal rank (MRR@10), a 95%
    bootstrap interval for it, and how many queries each ranks better."""
    ra = np.array([merged([s]).mrr() for s in results[a]])
    rb = np.array([merged([s]).mrr() for s in results[b]])
    diff = ra - rb
    if not len(diff):
        return f"{a} vs {b}: no queries"
    lo, hi = bootstrap(diff, seed)
    return (
        f"{a} vs {b}: MRR@10 difference {diff.mean():+.3f} (95% bootstrap {lo:+.3f} to "
        f"{hi:+.3f}); {a} better on {int((diff > 0).sum())}, worse on "
        f"{int((diff < 0).sum())}, tied on {int((diff == 0).sum())} of {len(diff)} queries"
    )


def group_table(results: dict[str, list[Scores]], labels: Sequence[str], title: str) -> str:
    """MRR@10 / Hit@10 per group of queries (rows: `labels[i]` is query i's group) and system."""
    systems = list(results)
    lines = [
        f"| {title} | n | " + " | ".join(f"{s} MRR@10 / Hit@10" for s in systems) + " |",
        "|---|---:|" + "---:|" * len(systems),
    ]
    for group in [*sorted(set(labels)), "all"]:
        idx = [i for i, label in enumerate(labels) if group in ("all", label)]
        cells = []
        for system in systems:
            s = merged(results[system][i] for i in idx)
            cells.append(f"{s.mrr():.3f} / {s.hit(10):.3f}")
        lines.append(f"| {group} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
