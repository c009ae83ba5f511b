"""Retrieval evals: code-rag's keyword, vector and hybrid modes against a plain baseline.

Two evals, both by default (`--eval docstring|questions|both`):
- docstring -> function: stdlib modules with their docstrings removed (corpus.py), each
  docstring's first paragraph a query for its function;
- developer questions: hand-written questions over six libraries in six languages
  (questions.py, sources.py, questions_eval.py), reported per language and per kind too.
Each corpus is indexed through the real sweep with the local model (reused from bench/.cache
when unchanged); each held-out query is asked in all three modes through
`indexer.search.hybrid.search_code`, and of the plain baseline (fixed line windows, BM25 + vectors,
unweighted RRF: baseline.py). Reported: Hit@1/5/10, MRR@10 and code-rag's search latency (query
vectors are embedded once and cached, so latencies are the search's own).

    .venv/bin/python -m bench.eval.run                   # both evals: docs/performance.md
    .venv/bin/python -m bench.eval.run --eval questions  # the developer questions only
    .venv/bin/python -m bench.eval.run --split tune      # the tuning split instead
    .venv/bin/python -m bench.eval.run --eval docstring --tune       # re-tune fusion
    .venv/bin/python -m bench.eval.run --eval docstring --ablations  # what each choice gains
    .venv/bin/python -m bench.eval.run --eval docstring --header none  # no header in embeddings
    .venv/bin/python -m bench.eval.run --whole-pass      # vectors pooled from a pass per file

A first run embeds ~2,400 + ~1,200 chunks and ~3,300 + ~1,300 baseline windows: about an hour
on 2 busy cores; later runs reuse every vector and take a few minutes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.eval import questions_eval
from bench.eval.baseline import PlainBaseline, corpus_windows, window_vectors
from bench.eval.compare import (
    CachedQueries,
    Gold,
    Scores,
    evaluate,
    first_hit,
    paired,
    query_vectors,
    system_table,
)
from bench.eval.corpus import Query, build_corpus, save_queries
from bench.eval.index import (
    CACHE,
    EMBEDDING_TEXTS,
    REPO_LABEL,
    chunker_config,
    ensure_index,
    open_database,
    prepare_dirs,
    project_for,
    rows_first_index,
    split_projects,
    whole_texts,
    with_definition_terms,
)
from bench.eval.whole_pass import PASS_CHOICES, PASS_HEADER
from bench.eval.whole_pass import ensure_index as ensure_pass_index
from indexer.db import Schema
from indexer.embed import (
    CHUNK_VECTORS,
    CHUNK_VECTORS_WHOLE,
    DEFAULT_CHUNK_VECTORS,
    Embedder,
    make_embedder,
)
from indexer.project import Project
from indexer.search import candidates, parts
from indexer.search.fusion import (
    DEFAULT_RANKING,
    Candidates,
    Ranking,
    collapse,
    fuse,
    ordered,
    scored,
    shortlist,
)
from indexer.search.roles import PathRoles
from indexer.sweep import SweepOptions

TOP_K = 10
ROLES = PathRoles()  # the corpus is one project without globs of its own
GATHER_DEPTH = 200  # candidates per ranker gathered once for tuning and ablations
NO_FILTERS: dict[str, Any] = {"repo": None, "language": None, "path_re": None}


def docstring_gold(q: Query) -> Gold:
    """A docstring query as the evals score it: its function, in the one repo of the corpus."""
    return Gold(q.qid, q.text, "python", ((REPO_LABEL, q.path, q.start_line, q.end_line),))


@dataclass
class Gathered:
    """Per query: each ranker's list gathered once at GATHER_DEPTH with its scores, the lists
    that lift (exact names; verbatim identifiers, per keyword variant), and the rows they name."""

    queries: list[Query]
    vector: list[list[int]]
    vector_scores: list[list[float]]
    exact: list[list[int]]
    keyword: dict[str, list[list[int]]]  # per keyword variant
    keyword_scores: dict[str, list[list[float]]]
    verbatim: dict[str, list[list[int]]]
    details: dict[int, Any]
    pieces: dict[int, Any]


def gather(
    conn: Any,
    project: Project,
    embedder: CachedQueries,
    queries: Sequence[Query],
    keyword_variants: dict[str, Ranking],
    ef_search: int,
    projects: dict[str, Project] | None = None,
) -> Gathered:
    """The lists `search_code` would fuse for each query, GATHER_DEPTH deep, through the same
    lookups: the vector side once, the keyword side once per variant (on its own project
    where `projects` names one)."""
    g = Gathered(list(queries), [], [], [], {}, {}, {}, {}, {})
    for name in keyword_variants:
        g.keyword[name], g.keyword_scores[name], g.verbatim[name] = [], [], []
    ids: set[int] = set()
    schema = Schema(project.name)
    part = parts.Part(0, schema, NO_FILTERS)
    deep = DEFAULT_RANKING.deep_enough(GATHER_DEPTH)
    for i, q in enumerate(queries, 1):
        with conn.transaction():
            vector = embedder.embed_query(candidates.vector_query(q.text))
            # No filters here, so pgvector's iterative scan would change nothing.
            found, similarities = scored(
                candidates.nearest(
                    conn, schema, vector, NO_FILTERS, deep, ef_search, iterative_scan=False
                )
            )
            exact = parts.other_candidates(conn, [part], q.text, deep, keyword=False).exact
            g.vector.append(found)
            g.vector_scores.append(similarities)
            g.exact.append(exact)
            ids.update(found, exact)
            for name, variant in keyword_variants.items():
                k = parts.other_candidates(
                    conn,
                    [parts.Part(0, Schema((projects or {}).get(name, project).name), NO_FILTERS)],
                    q.text,
                    variant.deep_enough(GATHER_DEPTH),
                )
                g.keyword[name].append(k.keyword)
                g.keyword_scores[name].append(k.keyword_scores)
                g.verbatim[name].append(k.verbatim)
                ids.update(k.keyword, k.verbatim)
        if i % 100 == 0:
            print(f"\r  gathered {i}/{len(queries)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    g.details, g.pieces = candidates.shaping_rows(conn, schema, sorted(ids))
    conn.rollback()
    return g


def replay(g: Gathered, variant: str, ranking: Ranking, mode: str) -> Scores:
    """Fusion and collapse as search_code does them, over the gathered lists: each list cut at
    its depth (at least 3 x top_k), the shortlist of fused candidates (the files that are not
    code demoted) collapsed."""
    out = Scores()
    r = ranking.deep_enough(TOP_K * 3)
    for i, q in enumerate(g.queries):
        c = Candidates(
            vector=g.vector[i] if mode != "keyword" else [],
            keyword=g.keyword[variant][i] if mode != "vector" else [],
            exact=g.exact[i],
            verbatim=g.verbatim[variant][i] if mode != "vector" else [],
            vector_scores=g.vector_scores[i] if mode != "keyword" else [],
            keyword_scores=g.keyword_scores[variant][i] if mode != "vector" else [],
        )
        best = shortlist(fuse(c, r), TOP_K)
        demoted = ROLES.demoted_chunks((g.details[cid] for cid in best), q.text)
        best = ordered(best, fuse(c, r, demoted))
        hits = collapse([[cid] for cid in best], g.details, TOP_K, g.pieces)
        out.add(first_hit([hit.row for hit in hits], docstring_gold(q)))
    return out


# The grid of the product's fusion knobs: the vector side's share of the fused score, and
# each list's depth.
VECTOR_SHARES = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
VECTOR_DEPTHS = (30, 50)
KEYWORD_DEPTHS = (30, 200)


def tune(g: Gathered, variant: str, base: Ranking) -> Ranking:
    """The grid point of the fusion knobs with the best MRR@10 (Hit@5 breaks ties) on the
    tuning split."""
    best: tuple[float, float, Ranking] | None = None
    for share in VECTOR_SHARES:
        for vd in VECTOR_DEPTHS:
            for kd in KEYWORD_DEPTHS:
                r = replace(base, vector_share=share, vector_depth=vd, keyword_depth=kd)
                s = replay(g, variant, r, "hybrid")
                if best is None or (s.mrr(), s.hit(5)) > best[:2]:
                    best = (s.mrr(), s.hit(5), r)
    assert best is not None
    return best[2]


# Keyword-side variants for the ablation: the product's ranker, and each of its values changed
# alone. (The choices measured and not kept, from the plain OR ranker on, are in the lab log,
# each with the commit that runs it.)
PRODUCT_VARIANT = "idf-weighted ts_rank, function words dropped (product)"
KEYWORD_VARIANTS: dict[str, Ranking] = {
    PRODUCT_VARIANT: Ranking(),
    "  with flat field weights": Ranking(field_weights=(0.2, 0.2, 0.2, 0.2)),
    "  with symbol x2 field weights": Ranking(field_weights=(0.05, 0.1, 0.25, 1.0)),
    "  match budget 250 rows": Ranking(match_rows=250),
    "  match budget 500 rows": Ranking(match_rows=500),
    "  match budget 1000 rows": Ranking(match_rows=1000),
}
DEFS_VARIANT = "  + every definition's name as a symbol term (index side, eval copy)"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", choices=("both", "docstring", "questions"), default="both")
    ap.add_argument("--header", choices=sorted(EMBEDDING_TEXTS), default="chunker")
    ap.add_argument("--chunk-chars", type=int, default=None, help="chunker target_chars")
    ap.add_argument("--split", choices=("test", "tune", "all"), default="test")
    ap.add_argument("--limit", type=int, default=0, help="first N queries only")
    ap.add_argument("--ef-search", type=int, default=400)
    ap.add_argument("--tune", action="store_true", help="grid-search fusion on the tuning split")
    ap.add_argument("--ablations", action="store_true", help="keyword variants and fusion")
    ap.add_argument("--cache", type=Path, default=CACHE, help="the docstring eval's cache")
    ap.add_argument(
        "--model", default=None, help="a local ONNX model folder (default: the bundled model)"
    )
    ap.add_argument(
        "--document-tokens",
        type=int,
        default=0,
        help="embed each text's first N tokens ([embedding] document_tokens; 0: whole texts)",
    )
    ap.add_argument(
        "--chunk-vectors",
        choices=CHUNK_VECTORS,
        default=None,
        help="[embedding] chunk_vectors (default: the product's)",
    )
    ap.add_argument(
        "--rows-first",
        action="store_true",
        help="search an index built as a first index is: rows first, then the vectors after",
    )
    ap.add_argument(
        "--projects",
        type=int,
        default=1,
        help="index each corpus as this many projects and search them as one group",
    )
    ap.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write each query's first 50 hybrid hits here, for bench/eval/files/replay.py",
    )
    ap.add_argument(
        "--ranking",
        type=ranking_of,
        default=DEFAULT_RANKING,
        metavar="KEY=VALUE,...",
        help="the product's ranking with these fields changed (a lever measured before it ships)",
    )
    ap.add_argument(
        "--whole-pass",
        nargs="?",
        const=PASS_HEADER,
        choices=PASS_CHOICES,
        default=None,
        help="search an index whose vectors are pooled from one pass of the model over each "
        "file (bench/eval/whole_pass.py), in a project of its own; bare: no header in the pass",
    )
    args = ap.parse_args(argv)
    if args.whole_pass and (
        args.rows_first
        or args.projects > 1
        or args.header != "chunker"
        or args.document_tokens
        or args.chunk_vectors is not None
    ):
        ap.error(
            "--whole-pass pools every vector from one pass per file into one project: drop "
            "--rows-first/--projects/--header/--document-tokens/--chunk-vectors"
        )
    if args.rows_first and (args.projects > 1 or args.header != "chunker"):
        ap.error("--rows-first builds the product's index of one project: drop --projects/--header")
    if args.eval == "questions" and (args.tune or args.ablations):
        ap.error("--tune and --ablations apply to the docstring eval")
    # These change the docstring eval's index only: the questions beside it would mislead.
    # (--chunk-chars builds an index of that chunk size for each eval run.)
    if args.eval != "docstring" and (args.header != "chunker" or args.cache != CACHE):
        ap.error("--header and --cache change the docstring eval's index: add --eval docstring")
    model = make_embedder(
        "local",
        args.model,
        document_tokens=args.document_tokens,
        # A whole pass pools whole texts' vectors (keys of whole texts): its model reads them so.
        chunk_vectors=CHUNK_VECTORS_WHOLE
        if args.whole_pass
        else (args.chunk_vectors or DEFAULT_CHUNK_VECTORS),
    )
    ranking = args.ranking
    deep: dict[str, list[dict[str, Any]]] = {"docstring": [], "questions": []}
    keep = args.json is not None
    if args.eval in ("both", "docstring"):
        ranking = docstring_eval(args, model, deep["docstring"] if keep else None)
    if args.eval in ("both", "questions"):
        questions_eval.run(
            model,
            args.split,
            args.limit,
            ranking,
            args.ef_search,
            chunk_chars=args.chunk_chars,
            deep=deep["questions"] if keep else None,
            projects=args.projects,
            rows_first=args.rows_first,
            whole_pass=args.whole_pass,
        )
    if keep:
        args.json.write_text(json.dumps({"split": args.split, **deep}), encoding="utf-8")
        print(f"\nper-query deep hits: {args.json}")


def ranking_of(text: str) -> Ranking:
    """`DEFAULT_RANKING` with the fields of `key=value,...` changed (numbers, true/false, and
    tuples of numbers split by `/`)."""
    changes: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        current = getattr(DEFAULT_RANKING, key)
        if isinstance(current, bool):
            changes[key] = value == "true"
        elif isinstance(current, tuple):  # field_weights=0.05/0.2/0.5/1.0
            changes[key] = tuple(float(v) for v in value.split("/"))
        else:
            changes[key] = type(current)(float(value))
    return replace(DEFAULT_RANKING, **changes)


def docstring_eval(
    args: argparse.Namespace, model: Embedder, deep: list[dict[str, Any]] | None = None
) -> Ranking:
    """The docstring eval as `args` ask; the ranking it used (tuned with --tune)."""
    corpus, _ = prepare_dirs(args.cache)
    queries, digest = build_corpus(corpus)
    save_queries(args.cache / "queries.jsonl", queries)
    db = open_database(args.cache)
    try:
        project = project_for(corpus, args.header, args.chunk_chars, model)
        if args.whole_pass:
            project, manifest = ensure_pass_index(
                db,
                project,
                model,
                digest,
                args.cache,
                variant=args.whole_pass,
                options=SweepOptions(chunker=chunker_config(args.chunk_chars)),
                describe={"embedding_text": args.header, "chunk_chars": args.chunk_chars},
            )
        else:
            manifest = ensure_index(
                db, project, model, digest, args.header, args.chunk_chars, args.cache
            )
        searched = split_projects(db, project, args.projects)
        for part in searched if len(searched) > 1 else ():
            ensure_index(db, part, model, digest, args.header, args.chunk_chars, args.cache)
        if args.rows_first:
            searched = [rows_first_index(db, project, model, args.chunk_chars)]
        vectors = query_vectors(model, (q.text for q in queries), args.cache)
        took = []
        for q in queries[:20]:
            started = time.perf_counter()
            model.embed_query(q.text)
            took.append((time.perf_counter() - started) * 1000)
        embed_ms = statistics.median(took)
        cached = CachedQueries(model.identity, vectors)
        tune_set = [q for q in queries if q.split == "tune"]
        test_set = [q for q in queries if args.split in ("all", q.split)]
        if args.limit:
            tune_set, test_set = tune_set[: args.limit], test_set[: args.limit]
        files = sorted(corpus.rglob("*.py"))
        windows = corpus_windows([(REPO_LABEL, f.relative_to(corpus).as_posix(), f) for f in files])
        plain = PlainBaseline(windows, window_vectors(whole_texts(model), windows, args.cache))
        print(
            f"\n# docstring eval: {manifest['files']} files, {manifest['chunks']} chunks "
            f"(embedding text: {args.header}, chunk target: {args.chunk_chars or 'default'}), "
            f"{len(windows)} baseline windows; "
            f"{len(queries)} queries: {sum(q.split == 'tune' for q in queries)} tuning, "
            f"{sum(q.split == 'test' for q in queries)} test; model {model.identity.describe()}; "
            f"query embedding median {embed_ms:.0f} ms (not in the latencies below)"
            + (f"; searched as a group of {len(searched)} projects" if len(searched) > 1 else "")
            + ("; the index built rows first, vectors after" if args.rows_first else "")
            + (f"; vectors from one pass per file ({args.whole_pass})" if args.whole_pass else "")
        )
        ranking = args.ranking
        with db.connection() as conn:
            if args.tune:
                g = gather(conn, project, cached, tune_set, {"product": ranking}, args.ef_search)
                ranking = tune(g, "product", ranking)
                print(f"\n## tuned on {len(tune_set)} tuning queries: {ranking}")
                s = replay(g, "product", ranking, "hybrid")
                print(f"tuning split hybrid: MRR@10 {s.mrr():.3f}, Hit@5 {s.hit(5):.3f}")
            golds = [docstring_gold(q) for q in test_set]
            results = evaluate(db, searched, cached, plain, golds, ranking, args.ef_search, deep)
            print(
                f"\n## docstring eval, {args.split} split, {len(test_set)} queries, top_k {TOP_K}, "
                f"ef_search {args.ef_search}, live search_code calls\n"
            )
            print(system_table(results))
            print("\n" + paired(results, "code-rag hybrid", "plain hybrid (RRF)"))
            if args.ablations:
                defs_project = with_definition_terms(db, project)
                ablations(
                    conn, project, cached, tune_set, test_set, ranking, args.ef_search, defs_project
                )
    finally:
        db.close()
    return ranking


def ablations(
    conn: Any,
    project: Project,
    cached: CachedQueries,
    tune_set: list[Query],
    test_set: list[Query],
    ranking: Ranking,
    ef_search: int,
    defs_project: Project,
) -> None:
    variants = {
        name: replace(ranking, **_keyword_fields(v)) for name, v in KEYWORD_VARIANTS.items()
    }
    variants[DEFS_VARIANT] = ranking
    projects = {DEFS_VARIANT: defs_project}
    g = gather(conn, project, cached, test_set, variants, ef_search, projects)
    gt = gather(conn, project, cached, tune_set, variants, ef_search, projects)
    print(
        "\n## keyword side, the product's ranker and its values changed one at a time (test "
        "split; hybrid re-tuned per row on the tuning split)\n"
    )
    print("| keyword ranker | kw Hit@1 | kw Hit@5 | kw MRR@10 | hybrid Hit@5 | hybrid MRR@10 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, variant in variants.items():
        kw = replay(g, name, variant, "keyword")
        tuned = tune(gt, name, variant)
        hy = replay(g, name, tuned, "hybrid")
        print(
            f"| {name} | {kw.hit(1):.3f} | {kw.hit(5):.3f} | {kw.mrr():.3f} | "
            f"{hy.hit(5):.3f} | {hy.mrr():.3f} |"
        )
    vec = replay(g, next(iter(variants)), ranking, "vector")
    print(f"\nvector-only on the same split: Hit@5 {vec.hit(5):.3f}, MRR@10 {vec.mrr():.3f}")
    print("\n## fusion (test split, product keyword ranker)\n")
    print("| fusion | Hit@1 | Hit@5 | MRR@10 |")
    print("|---|---:|---:|---:|")
    product = PRODUCT_VARIANT
    rows: list[tuple[str, Ranking]] = [("tuned (product)", ranking)]
    for share in (0.4, 0.5, 0.6, 0.7, 0.8):
        rows.append((f"tuned, vector share {share}", replace(ranking, vector_share=share)))
    for kd in (20, 50, 100, 200):
        rows.append((f"tuned, keyword depth {kd}", replace(ranking, keyword_depth=kd)))
    for vd in (20, 50, 100, 200):
        rows.append((f"tuned, vector depth {vd}", replace(ranking, vector_depth=vd)))
    for name, r in rows:
        s = replay(g, product, r, "hybrid")
        print(f"| {name} | {s.hit(1):.3f} | {s.hit(5):.3f} | {s.mrr():.3f} |")


def _keyword_fields(r: Ranking) -> dict[str, Any]:
    return {"field_weights": r.field_weights, "match_rows": r.match_rows}


if __name__ == "__main__":
    main()
