"""Levers measured on both evals and not kept, each replayed against the product's ranking.

Every probe starts from the lists `score_fusion.py --keep` gathered (each query's vector and
keyword lists with their scores, on the indexes `run.py` built), changes one thing, and
replays the product's fusion and collapse; a probe that changes a list gathers it again from
the same index (inside a transaction it rolls back, where it has to change the index). Rows
are Hit@1 / Hit@5 / Hit@10 / MRR@10 of each split; variants are chosen on the tuning splits
only, the test splits are printed to be read.

- `coherence`: a chunk gains from the fused score of the other candidates of its file (or
  repository) among the first ten, the way a file about the question holds several hits.
- `curves`: each side's normalised score raised to a power before they are summed (a cosine
  far ahead counts more, or a keyword score less), with the share and the cosine's floor.
- `fields`: the keyword ranker's field weights (body, path; symbol 1.0) with the vector
  side's share re-tuned beside them.
- `names`: the names of the definitions merged into a chunk (those with vectors of their own)
  added to its symbol field, so the keyword side ranks them as it ranks the chunk's own name.
- `definers`: among the chunks holding an identifier of the query verbatim, those defining
  it first.
- `centre`: the query vector less a share of the index's mean chunk vector (hub reduction).
- `raw`: the question's vector as asked added to the product's (the opening left out).
- `compounds`: runs of adjacent query words also matched joined, as the whole-name term of
  a compound identifier (`Ranking.compounds`: "retry delay" meets `retryDelay`).
- `lengths`: the keyword score per term divided by a function of the chunk's length
  (`Ranking.normalization`, ts_rank's flags: 1 + log of its words, its unique words, ...).
- `feedback`: the query vector moved towards the vectors of the vector side's first hits
  (pseudo-relevance feedback, Rocchio's), then asked again.

    .venv/bin/python bench/eval/probes.py --keep bench/.cache/scored.pkl coherence
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import replay  # noqa: E402
import score_fusion  # noqa: E402
from compare import Gold, Scores, product_vector  # noqa: E402
from score_fusion import Convex, Scored, rank_of, replay_convex  # noqa: E402

from indexer import lexical  # noqa: E402
from indexer.db import lookup, store  # noqa: E402
from indexer.embed import make_embedder  # noqa: E402
from indexer.search import candidates  # noqa: E402
from indexer.search import fusion as ranking_module  # noqa: E402
from indexer.search.fusion import DEFAULT_RANKING, Ranking, lift_named, shaping_rows  # noqa: E402

NO_FILTERS = score_fusion.NO_FILTERS
PRODUCT = Convex(DEFAULT_RANKING.vector_share)
Found = dict[Any, list[tuple[int, float]]]  # one query's lists, by variant
Lists = dict[Any, list[list[tuple[int, float]]]]  # every query's, by variant


def cells(asked: Sequence[Scored], score: Callable[[Scored], Scores]) -> str:
    return " | ".join(replay.cells(score(a)) for a in asked)


def print_row(label: str, asked: Sequence[Scored], score: Callable[[Scored], Scores]) -> None:
    print(f"| {label} | {cells(asked, score)} |")


def header(asked: Sequence[Scored]) -> None:
    print("| variant | " + " | ".join(a.name for a in asked) + " |")
    print("|---|" + "---:|" * len(asked))
    print_row("the product", asked, lambda a: replay_convex(a, PRODUCT))


def regather(
    model: Any, lists: Callable[[Any, str, Gold, Any], Found], prepare: Callable | None = None
) -> dict[str, tuple[Lists, dict, dict]]:
    """Per split, `lists(conn, project, gold, vectors)` for every query (each a dict of
    variant -> list), with the rows their chunks name; `prepare(conn, project)` runs first in
    the same transaction, which is rolled back."""

    def collect(name: str, db: Any, project: str, golds: list[Gold], vectors: Any) -> tuple:
        out: Lists = {}
        ids: set[int] = set()
        with db.connection() as conn:
            if prepare is not None:
                prepare(conn, project)
            for gold in golds:
                with conn.transaction():
                    found = lists(conn, project, gold, vectors)
                for variant, pairs in found.items():
                    out.setdefault(variant, []).append(pairs)
                    ids.update(cid for cid, _ in pairs)
            details, pieces = shaping_rows(conn, project, sorted(ids))
            conn.rollback()
        ranking_module._term_stats_cache.clear()  # statistics read inside the rollback
        return name, (out, details, pieces)

    return dict(replay.each_split(model, collect))


def swapped(a: Scored, gathered: tuple[Lists, dict, dict], variant: Any, side: str) -> Scored:
    lists, details, pieces = gathered
    return replace(
        a,
        **{side: lists[variant]},
        details={**a.details, **details},
        pieces={**a.pieces, **pieces},
    )


def coherence(asked: list[Scored], _model: Any) -> None:
    def score(a: Scored, gamma: float, level: str) -> Scores:
        out = Scores()
        for gold, v, k, c in zip(a.golds, a.vector, a.keyword, a.others, strict=True):
            scores = PRODUCT.fuse(v, k)
            first = sorted(scores, key=lambda cid: (-scores[cid], cid))[:10]

            def key(cid: int) -> tuple:
                row = a.details[cid]
                return (row.repo, row.path) if level == "file" else (row.repo,)

            mass: Counter = Counter()
            for cid in first:
                if cid in a.details:
                    mass[key(cid)] += scores[cid]
            total = sum(mass.values()) or 1.0
            for cid in list(scores):
                if cid in a.details:
                    own = scores[cid] if cid in first else 0.0
                    scores[cid] += gamma * (mass[key(cid)] - own) / total
            lift_named(scores, c, DEFAULT_RANKING)
            out.add(rank_of(scores, a.details, a.pieces, gold))
        return out

    header(asked)
    for level, gamma in itertools.product(("file", "repo"), (0.05, 0.1, 0.2, 0.4)):
        print_row(
            f"{level} evidence x {gamma}", asked, lambda a, g=gamma, lv=level: score(a, g, lv)
        )


def curves(asked: list[Scored], _model: Any) -> None:
    def fused(v: list, k: list, share: float, power: tuple[float, float], floor: int) -> dict:
        scores: dict[int, float] = {}
        if v:
            values = [s for _, s in v[:30]]
            top, low = max(values), min(values[:floor])
            for cid, s in v[:30]:
                x = (s - low) / ((top - low) or 1.0)
                scores[cid] = scores.get(cid, 0.0) + share * (x ** power[0] if x > 0 else x)
        if k:
            best = max(s for _, s in k) or 1.0
            for cid, s in k:
                scores[cid] = scores.get(cid, 0.0) + (1 - share) * (s / best) ** power[1]
        return scores

    def score(a: Scored, share: float, power: tuple[float, float], floor: int) -> Scores:
        out = Scores()
        for gold, v, k, c in zip(a.golds, a.vector, a.keyword, a.others, strict=True):
            scores = fused(v, k, share, power, floor)
            lift_named(scores, c, DEFAULT_RANKING)
            out.add(rank_of(scores, a.details, a.pieces, gold))
        return out

    tune = [a for a in asked if a.name.endswith("tune")]
    grid = itertools.product(
        (0.5, 0.55, 0.6, 0.65), itertools.product((0.5, 1, 1.5, 2), repeat=2), (20, 30)
    )
    ranked = sorted(grid, key=lambda g: -sum(score(a, *g).mrr() for a in tune) / len(tune))
    start = {a.name: replay_convex(a, PRODUCT).mrr() for a in tune}
    safest = max(ranked, key=lambda g: min(score(a, *g).mrr() - start[a.name] for a in tune))
    header(asked)
    for share, power, floor in [*ranked[:3], safest]:
        label = f"share {share}, cosine ^ {power[0]}, keyword ^ {power[1]}, floor #{floor}"
        print_row(label, asked, lambda a, g=(share, power, floor): score(a, *g))


def fields(asked: list[Scored], model: Any) -> None:
    grid = list(itertools.product((0.2, 0.35, 0.5, 0.7, 1.0), (0.1, 0.2, 0.35, 0.5)))

    def lists(conn: Any, project: str, gold: Gold, _vectors: Any) -> Found:
        return {
            (body, path): ranking_module.keyword_candidates(
                conn,
                project,
                gold.text,
                NO_FILTERS,
                replace(DEFAULT_RANKING, field_weights=(0.05, body, path, 1.0)),
            )
            for body, path in grid
        }

    gathered = regather(model, lists)
    rows = []
    for weights, share in itertools.product(grid, (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)):
        variant = [swapped(a, gathered[a.name], weights, "keyword") for a in asked]
        scores = [replay_convex(a, Convex(share)) for a in variant]
        tune = [s.mrr() for a, s in zip(asked, scores, strict=True) if a.name.endswith("tune")]
        rows.append((sum(tune) / len(tune), weights, share, variant))
    rows.sort(key=lambda r: -r[0])
    header(asked)
    for label, weights in (
        ("the product's weights", (0.2, 0.5)),
        ("body 0.5, path 0.2", (0.5, 0.2)),
    ):
        variant = [swapped(a, gathered[a.name], weights, "keyword") for a in asked]
        print_row(
            f"{label}, keyword side alone", variant, lambda a: replay_convex(a, PRODUCT, "keyword")
        )
    for mean, (body, path), share, variant in rows[:5]:
        label = f"body {body}, path {path}, vector share {share} (tuning mean {mean:.4f})"
        print_row(label, variant, lambda a, s=share: replay_convex(a, Convex(s)))


def names(asked: list[Scored], model: Any) -> None:
    def prepare(conn: Any, project: str) -> None:
        merged = conn.execute(
            store.statement(
                """SELECT c.id, string_agg(s.name, ' ')
                     FROM {schema}.rag_symbol s
                     JOIN {schema}.rag_chunk c ON c.file_id = s.file_id
                      AND s.start_line >= c.start_line AND s.end_line <= c.end_line
                    WHERE s.embedding IS NOT NULL
                      AND (c.symbol IS NULL OR s.qualified_name <> c.symbol)
                    GROUP BY c.id""",
                project,
            )
        ).fetchall()
        update = store.statement(
            "UPDATE {schema}.rag_chunk SET tsv = tsv || setweight(to_tsvector('simple', %(t)s),"
            " 'A') WHERE id = %(id)s",
            project,
        )
        for chunk_id, merged_names in merged:
            conn.execute(update, {"t": lexical.terms_text(merged_names), "id": chunk_id})
        conn.execute(store.statement("ANALYZE {schema}.rag_chunk", project))
        ranking_module._term_stats_cache.clear()

    def lists(conn: Any, project: str, gold: Gold, _vectors: Any) -> Found:
        kw = ranking_module.keyword_candidates(
            conn, project, gold.text, NO_FILTERS, DEFAULT_RANKING
        )
        return {"names": kw}

    gathered = regather(model, lists, prepare)
    variant = [swapped(a, gathered[a.name], "names", "keyword") for a in asked]
    header(asked)
    print_row(
        "merged definitions' names in the symbol field",
        variant,
        lambda a: replay_convex(a, PRODUCT),
    )
    print_row(
        "the same, keyword side alone", variant, lambda a: replay_convex(a, PRODUCT, "keyword")
    )
    print_row(
        "the product, keyword side alone", asked, lambda a: replay_convex(a, PRODUCT, "keyword")
    )


def definers(asked: list[Scored], model: Any) -> None:
    def lists(conn: Any, project: str, gold: Gold, _vectors: Any) -> Found:
        found: list[int] = []
        for word in candidates.query_identifiers(gold.text):
            if candidates.SYMBOL_QUERY_RE.match(word):
                found += [
                    c
                    for c in candidates.exact_symbol(conn, project, word, NO_FILTERS)
                    if c not in found
                ]
        return {"definers": [(cid, 0.0) for cid in found]}

    gathered = regather(model, lists)

    def score(a: Scored) -> Scores:
        out = Scores()
        lists_, details, pieces = gathered[a.name]
        details, pieces = {**a.details, **details}, {**a.pieces, **pieces}
        for gold, v, k, c, defined in zip(
            a.golds, a.vector, a.keyword, a.others, lists_["definers"], strict=True
        ):
            ids = [cid for cid, _ in defined]
            scores = PRODUCT.fuse(v, k)
            lift_named(
                scores,
                replace(c, verbatim=[x for x in c.verbatim if x not in ids], exact=[]),
                DEFAULT_RANKING,
            )
            top = max(scores.values(), default=0.0)
            for offset, cid in enumerate(ids):
                scores[cid] = top + 0.5 / (DEFAULT_RANKING.rrf_k + 1 + offset)
            lift_named(scores, replace(c, verbatim=[]), DEFAULT_RANKING)
            out.add(rank_of(scores, details, pieces, gold))
        return out

    header(asked)
    print_row("chunks defining a query identifier above its other verbatim chunks", asked, score)


def vector_lists(
    model: Any, transform: Callable[[Any, str, Gold, Any], dict[Any, Any]]
) -> dict[str, tuple[Lists, dict, dict]]:
    def lists(conn: Any, project: str, gold: Gold, vectors: Any) -> Found:
        out: Found = {}
        for variant, q in transform(conn, project, gold, vectors).items():
            q = np.asarray(q, dtype=np.float64)
            q = (q / np.linalg.norm(q)).astype(np.float32)
            out[variant] = lookup.vector_candidates(
                conn,
                project,
                candidates.vector_param(q),
                NO_FILTERS,
                30,
                candidates.DEFAULT_EF_SEARCH,
            )
        return out

    return regather(model, lists)


def centre(asked: list[Scored], model: Any) -> None:
    means: dict[str, Any] = {}

    def transform(conn: Any, project: str, gold: Gold, vectors: Any) -> dict[Any, Any]:
        if project not in means:
            text = conn.execute(
                store.statement("SELECT avg(embedding)::text FROM {schema}.rag_chunk", project)
            ).fetchone()[0]
            mean = np.array([float(x) for x in text.strip("[]").split(",")])
            means[project] = mean / np.linalg.norm(mean)
        q = np.asarray(product_vector(vectors, gold.text), dtype=np.float64)
        return {lam: q - lam * means[project] for lam in (0.1, 0.2, 0.3)}

    gathered = vector_lists(model, transform)
    header(asked)
    for lam in (0.1, 0.2, 0.3):
        variant = [swapped(a, gathered[a.name], lam, "vector") for a in asked]
        print_row(
            f"query less {lam} x the mean chunk vector",
            variant,
            lambda a: replay_convex(a, PRODUCT),
        )


def raw(asked: list[Scored], model: Any) -> None:
    def transform(_conn: Any, _project: str, gold: Gold, vectors: Any) -> dict[Any, Any]:
        q = np.asarray(product_vector(vectors, gold.text), dtype=np.float64)
        asked_so = np.asarray(vectors[gold.text], dtype=np.float64)
        return {w: q + w * asked_so for w in (0.25, 0.5, 1.0)}

    gathered = vector_lists(model, transform)
    header(asked)
    for w in (0.25, 0.5, 1.0):
        variant = [swapped(a, gathered[a.name], w, "vector") for a in asked]
        print_row(f"plus {w} x the question as asked", variant, lambda a: replay_convex(a, PRODUCT))


def keyword_variants(asked: list[Scored], model: Any, variants: dict[str, Ranking]) -> None:
    """The keyword lists gathered again under each variant's ranking; its rows (the keyword
    side alone, then the hybrid) beside the product's."""

    def lists(conn: Any, project: str, gold: Gold, _vectors: Any) -> Found:
        return {
            label: ranking_module.keyword_candidates(conn, project, gold.text, NO_FILTERS, r)
            for label, r in variants.items()
        }

    gathered = regather(model, lists)
    header(asked)
    print_row("keyword side alone", asked, lambda a: replay_convex(a, PRODUCT, "keyword"))
    for label in variants:
        variant = [swapped(a, gathered[a.name], label, "keyword") for a in asked]
        print_row(
            f"{label}, keyword side alone", variant, lambda a: replay_convex(a, PRODUCT, "keyword")
        )
        print_row(label, variant, lambda a: replay_convex(a, PRODUCT))


def compounds(asked: list[Scored], model: Any) -> None:
    keyword_variants(
        asked,
        model,
        {f"runs of 2..{n} words joined": replace(DEFAULT_RANKING, compounds=n) for n in (2, 3, 4)},
    )


LENGTHS = {1: "1 + log(words)", 2: "words", 8: "unique words", 16: "1 + log(unique words)"}


def lengths(asked: list[Scored], model: Any) -> None:
    keyword_variants(
        asked,
        model,
        {
            f"divided by {label}": replace(DEFAULT_RANKING, normalization=flag)
            for flag, label in LENGTHS.items()
        },
    )


FEEDBACK = tuple(itertools.product((1, 3, 5), (0.1, 0.2, 0.35, 0.5)))


def feedback(asked: list[Scored], model: Any) -> None:
    def transform(conn: Any, project: str, gold: Gold, vectors: Any) -> dict[Any, Any]:
        q = np.asarray(product_vector(vectors, gold.text), dtype=np.float64)
        q = q / np.linalg.norm(q)
        first = lookup.vector_candidates(
            conn,
            project,
            candidates.vector_param(q.astype(np.float32)),
            NO_FILTERS,
            max(k for k, _ in FEEDBACK),
            candidates.DEFAULT_EF_SEARCH,
        )
        ids = [cid for cid, _ in first]
        found = dict(
            conn.execute(
                store.statement(
                    "SELECT id, embedding::text FROM {schema}.rag_chunk WHERE id = ANY(%s)",
                    project,
                ),
                (ids,),
            ).fetchall()
        )
        docs = [np.array([float(x) for x in found[cid].strip("[]").split(",")]) for cid in ids]
        out: dict[Any, Any] = {}
        for k, beta in FEEDBACK:
            centroid = np.mean(docs[:k], axis=0)
            out[(k, beta)] = q + beta * centroid / np.linalg.norm(centroid)
        return out

    gathered = vector_lists(model, transform)
    header(asked)
    for k, beta in FEEDBACK:
        variant = [swapped(a, gathered[a.name], (k, beta), "vector") for a in asked]
        print_row(
            f"query plus {beta} x the mean of the first {k}",
            variant,
            lambda a: replay_convex(a, PRODUCT),
        )


class KeptLists(pickle.Unpickler):
    """score_fusion.py's kept lists, whose rows it pickled as a script (`__main__.Scored`)."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class("score_fusion" if module == "__main__" else module, name)


def kept_or_gathered(keep: Path | None, model: Any) -> list[Scored]:
    """The lists `score_fusion.py --keep` kept in `keep`, or gathered now (and kept there)."""
    if keep and keep.is_file():
        with keep.open("rb") as f:
            return list(KeptLists(f).load())
    asked = score_fusion.load(model)
    if keep:
        keep.write_bytes(pickle.dumps(asked))
    return asked


PROBES = {
    f.__name__: f
    for f in (coherence, curves, fields, names, definers, centre, raw, compounds, lengths, feedback)
}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("probe", choices=sorted(PROBES))
    ap.add_argument("--keep", type=Path, help="the lists score_fusion.py keeps (made if missing)")
    ap.add_argument("--model", default=None, help="a local ONNX model folder")
    args = ap.parse_args(argv)
    model = make_embedder("local", args.model)
    PROBES[args.probe](kept_or_gathered(args.keep, model), model)


if __name__ == "__main__":
    main()
