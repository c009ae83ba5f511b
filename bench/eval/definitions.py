"""Every definition reachable by its own vector: measured offline before it is built.

A small definition merged into a neighbour's chunk, or one nested inside a bigger definition's
chunk, has no vector of its own: the chunk's vector speaks for its whole text, usually for the
definition it is named after. This replays both evals (the lists `replay.py` gathers) with one
extra vector per such definition, embedded alone by the same model (the chunker's header with
the definition's own name, then its lines), merged into the vector side's list by cosine. A
definition's vector stands for the definition's own lines: that is the hit it would return.
Chunk vectors are compared exactly here (these indexes are small), so the "chunks only" row is
the exact-search version of the product's vector side.

    .venv/bin/python bench/eval/definitions.py --keep bench/.cache/asked.pkl
    .venv/bin/python bench/eval/definitions.py --model DIR   # the indexes `run.py --model` built

Measured before definitions had vectors in the index, with rank fusion (`RANK_FUSION`).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import questions_eval  # noqa: E402
import replay  # noqa: E402
import sources  # noqa: E402
from compare import Scores, first_hit, query_vectors  # noqa: E402
from corpus import build_corpus  # noqa: E402
from index import CACHE, add_symbol_terms, copy_project, open_database, prepare_dirs  # noqa: E402
from index import project_for as docstring_project  # noqa: E402

from chunkers import embedding_text  # noqa: E402
from chunkers.model import Chunk  # noqa: E402
from indexer import lexical  # noqa: E402
from indexer.db import rows, store  # noqa: E402
from indexer.embed import make_embedder  # noqa: E402
from indexer.search.fusion import (  # noqa: E402
    DEFAULT_RANKING,
    Candidates,
    Ranking,
    collapse,
    fuse,
    lift_named,
)

MAX_CHARS = 2000  # a definition's text is cut here, as a chunk's is
# Measured with rank fusion, the product's fusion then (its exact lists carry no scores).
RANK_FUSION = replace(DEFAULT_RANKING, fusion="rank")


@dataclass
class Definition:
    repo: str
    path: str
    language: str | None
    name: str
    kind: str
    start_line: int
    end_line: int
    own_chunk: bool  # some chunk is named after it and lies in its lines
    chunk_id: int  # the chunk holding its signature line


@dataclass
class Index:
    """One eval's index as the replay needs it: every chunk's vector and row, every definition
    without a chunk of its own, and their vectors."""

    chunk_ids: list[int]
    chunk_vectors: np.ndarray
    chunks: dict[int, rows.StoredChunk]
    extra: list[Definition]
    extra_vectors: np.ndarray


CHUNKS = """
SELECT c.id, f.repo, f.path, c.start_line, c.end_line, c.symbol, c.kind, f.language, c.content,
       c.embedding
  FROM {schema}.rag_chunk c JOIN {schema}.rag_file f ON f.id = c.file_id
 ORDER BY c.id
"""
SYMBOLS = """
SELECT f.repo, f.path, f.language, s.qualified_name, s.kind, s.start_line, s.end_line,
       s.chunk_id
  FROM {schema}.rag_symbol s JOIN {schema}.rag_file f ON f.id = s.file_id
 ORDER BY f.id, s.ordinal
"""
TEXT = """
SELECT f.repo, f.path, b.content
  FROM {schema}.rag_text_block b JOIN {schema}.rag_file f ON f.id = b.file_id
 ORDER BY f.id, b.start_line
"""


def read_index(db: Any, project: str, model: Any, cache: Path) -> Index:
    with db.connection() as conn:
        found = conn.execute(store.statement(CHUNKS, project)).fetchall()
        symbols = conn.execute(store.statement(SYMBOLS, project)).fetchall()
        blocks = conn.execute(store.statement(TEXT, project)).fetchall()
        conn.rollback()
    chunks = {
        r[0]: rows.StoredChunk(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]) for r in found
    }
    by_file: dict[tuple[str, str], list[rows.StoredChunk]] = defaultdict(list)
    for c in chunks.values():
        by_file[(c.repo, c.path)].append(c)
    texts: dict[tuple[str, str], list[str]] = defaultdict(list)
    for repo, path, content in blocks:
        texts[(repo, path)].append(content)
    lines = {key: "\n".join(parts).split("\n") for key, parts in texts.items()}
    definitions = [
        Definition(
            repo,
            path,
            language,
            name,
            kind,
            start,
            end,
            any(
                c.symbol == name and start <= c.start_line and c.end_line <= end
                for c in by_file[(repo, path)]
            ),
            chunk_id,
        )
        for repo, path, language, name, kind, start, end, chunk_id in symbols
    ]
    extra = [d for d in definitions if not d.own_chunk]
    kept = cache / f"definitions-{project}.npy"
    if kept.exists() and len(np.load(kept)) == len(extra):
        extra_vectors = np.load(kept)
    else:
        inputs = [
            embedding_text(
                Chunk(
                    d.start_line,
                    d.end_line,
                    d.name,
                    d.kind,
                    d.language or "text",
                    "\n".join(lines[(d.repo, d.path)][d.start_line - 1 : d.end_line])[:MAX_CHARS],
                ),
                d.path,
            )
            for d in extra
        ]
        started = time.perf_counter()
        out: list[list[float]] = []
        for at in range(0, len(inputs), 64):
            out.extend(model.embed_documents(inputs[at : at + 64]).vectors)
        extra_vectors = np.asarray(out, dtype=np.float32).reshape(len(inputs), -1)
        np.save(kept, extra_vectors)
        print(f"  {len(inputs)} definitions embedded in {time.perf_counter() - started:.0f} s")
    ids = sorted(chunks)
    vectors = np.asarray([found_row[9].to_numpy() for found_row in found], dtype=np.float32)
    print(
        f"  {project}: {len(chunks)} chunks, {len(definitions)} definitions, "
        f"{len(extra)} without a chunk of their own"
    )
    return Index(ids, vectors, chunks, extra, extra_vectors)


def replay_with(
    asked: replay.Asked,
    index: Index,
    vectors: dict[str, Any],
    ranking: Ranking,
    mode: str,
    max_lines: int | None = None,
) -> Scores:
    """The hybrid of `asked`, its vector side replaced by exact search over the chunk vectors
    and, by `mode`, the extra definitions' vectors: "none"; "merge" (into the vector list,
    each a hit of its own lines); "chunk" (each raising the chunk holding its signature: a
    chunk ranks by the best of its vectors); "list:W" (a third list fused at weight W, each a
    hit of its own lines)."""
    with_definitions = mode != "none"
    out = Scores()
    deep = replace(ranking, vector_depth=max(ranking.vector_depth, replay.TOP_K * 3))
    usable = [
        i
        for i, d in enumerate(index.extra)
        if with_definitions and (max_lines is None or d.end_line - d.start_line < max_lines)
    ]
    for gold, c in zip(asked.golds, asked.candidates, strict=True):
        q = np.asarray(vectors[gold.text], dtype=np.float32)
        scored = [
            (float(s), cid) for s, cid in zip(index.chunk_vectors @ q, index.chunk_ids, strict=True)
        ]
        extra = [(float(index.extra_vectors[i] @ q), -1 - i) for i in usable]
        extra.sort(key=lambda p: (-p[0], p[1]))
        if mode == "merge":
            scored += extra
        elif mode.startswith("chunk"):
            penalty = float(mode.split(":")[1]) if ":" in mode else 0.0
            scored += [(score - penalty, index.extra[-1 - cid].chunk_id) for score, cid in extra]
        scored.sort(key=lambda p: (-p[0], p[1]))
        vector = list(dict.fromkeys(cid for _, cid in scored))[: replay.DEPTH]
        if mode.startswith("list:"):
            weight = float(mode.split(":")[1])
            fused = fuse(Candidates(vector, c.keyword), deep)
            for rank, (_, cid) in enumerate(extra[: deep.vector_depth], start=1):
                fused[cid] = fused.get(cid, 0.0) + weight / (deep.rrf_k + rank)
            lift_named(fused, c, deep)
        else:
            fused = fuse(Candidates(vector, c.keyword, c.exact, c.verbatim), deep)
        ordered = sorted(fused, key=lambda cid: (-fused[cid], cid))[: replay.TOP_K * 3]
        details = dict(asked.details)
        for cid in ordered:
            if cid < 0:
                d = index.extra[-1 - cid]
                details[cid] = rows.StoredChunk(
                    cid, d.repo, d.path, d.start_line, d.end_line, d.name, d.kind, d.language, ""
                )
            elif cid not in details:
                details[cid] = index.chunks[cid]
        hits = collapse(ordered, details, replay.TOP_K, asked.pieces)
        out.add(first_hit([row for row, _ in hits], gold))
    return out


NAMES = """
SELECT c.id, c.symbol, array_agg(s.name ORDER BY s.ordinal)
  FROM {schema}.rag_chunk c JOIN {schema}.rag_symbol s ON s.chunk_id = c.id
 GROUP BY c.id, c.symbol
"""


def with_names(db: Any, project: str) -> str:
    """A copy of `project` where every definition whose signature a chunk holds adds its name
    to the chunk's symbol-weighted (A) keyword terms, not only the one the chunk is named after
    (what the sweep would write instead). Returns the copy's name."""
    copy = f"{project}_names"
    with db.connection() as conn:
        tables = ("rag_meta", "rag_file", "rag_chunk", "rag_symbol", "rag_text_block")
        copy_project(conn, project, copy, tables)
        updates = []
        for chunk_id, symbol, names in conn.execute(store.statement(NAMES, copy)).fetchall():
            own = set(lexical.terms(symbol or ""))
            extra = [t for t in lexical.terms(" ".join(names)) if t not in own]
            if extra:
                updates.append({"id": chunk_id, "terms": " ".join(extra)})
        add_symbol_terms(conn, copy, updates)
        conn.commit()
    print(f"  {copy}: {len(updates)} chunks gained names")
    return copy


def names_experiment(model: Any, asked: list[replay.Asked]) -> None:
    """Both evals replayed with their keyword lists gathered again from the copies."""
    corpus, _ = prepare_dirs(CACHE)
    queries, _ = build_corpus(corpus)
    regathered: list[replay.Asked] = []
    for cache, project, texts in (
        (CACHE, docstring_project(corpus, "chunker", None, model).name, [q.text for q in queries]),
        (
            sources.CACHE,
            questions_eval.project_for(
                sources.ensure_corpus(sources.CACHE)[0],
                prepare_dirs(sources.CACHE)[0],
                "chunker",
                None,
                model,
            ).name,
            [q.text for q in questions_eval.ensure_valid(cache=sources.CACHE)],
        ),
    ):
        vectors = query_vectors(model, texts, cache)
        db = open_database(cache)
        try:
            copy = with_names(db, project)
            prefix = "docstring" if cache == CACHE else "questions"
            for a in asked:
                if a.name.startswith(prefix):
                    lists, details, pieces = replay.gather(db, copy, a.golds, vectors)
                    regathered.append(replay.Asked(a.name, a.golds, lists, details, pieces))
        finally:
            db.close()
    print("\n| variant | " + " | ".join(a.name for a in asked) + " |")
    print("|---|" + "---:|" * len(asked))
    for label, sets in (
        ("product", asked),
        ("+ every definition's name a symbol term", regathered),
    ):
        for mode in ("keyword", "hybrid"):
            row = [replay.cells(replay.replay(a, RANK_FUSION, True, mode)) for a in sets]
            print(f"| {label}, {mode} | " + " | ".join(row) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="the gathered lists of replay.py (kept, reused)")
    ap.add_argument(
        "--names", action="store_true", help="instead: every definition's name a symbol term"
    )
    ap.add_argument(
        "--model", default=None, help="a local ONNX model folder (default: the bundled model)"
    )
    args = ap.parse_args()
    model = make_embedder("local", args.model)
    if args.keep and args.keep.is_file():
        asked = pickle.loads(args.keep.read_bytes())
    else:
        asked = replay.load(model)
        if args.keep:
            args.keep.write_bytes(pickle.dumps(asked))
    if args.names:
        names_experiment(model, asked)
        return
    corpus, _ = prepare_dirs(CACHE)
    queries, _ = build_corpus(corpus)
    doc_vectors = query_vectors(model, (q.text for q in queries), CACHE)
    db = open_database(CACHE)
    try:
        doc_project = docstring_project(corpus, "chunker", None, model).name
        doc_index = read_index(db, doc_project, model, CACHE)
    finally:
        db.close()
    questions = questions_eval.ensure_valid(cache=sources.CACHE)
    libs, _ = sources.ensure_corpus(sources.CACHE)
    root, _ = prepare_dirs(sources.CACHE)
    q_vectors = query_vectors(model, (q.text for q in questions), sources.CACHE)
    db = open_database(sources.CACHE)
    try:
        q_project = questions_eval.project_for(libs, root, "chunker", None, model).name
        q_index = read_index(db, q_project, model, sources.CACHE)
    finally:
        db.close()
    print("\n| variant | " + " | ".join(a.name for a in asked) + " |")
    print("|---|" + "---:|" * len(asked))
    base = RANK_FUSION
    print(
        "| product (HNSW lists as gathered) | "
        + " | ".join(replay.cells(replay.replay(a, base, True)) for a in asked)
        + " |"
    )
    variants: list[tuple[str, str, int | None]] = [
        ("chunks only, exact", "none", None),
        ("+ every definition without its own chunk, merged into the vector list", "merge", None),
        ("+ every such definition, raising the chunk holding it", "chunk", None),
        ("+ those of at most 30 lines, raising their chunk", "chunk", 30),
        ("+ those of at most 10 lines, raising their chunk", "chunk", 10),
        ("+ every such definition, raising their chunk, cosine - 0.02", "chunk:0.02", None),
        ("+ every such definition, raising their chunk, cosine - 0.05", "chunk:0.05", None),
        ("+ those of at most 30 lines, raising their chunk, cosine - 0.02", "chunk:0.02", 30),
        ("+ every such definition, a third list at weight 0.5", "list:0.5", None),
    ]
    for label, with_defs, max_lines in variants:
        cells = []
        for a in asked:
            index, vectors = (
                (doc_index, doc_vectors)
                if a.name.startswith("doc")
                else (
                    q_index,
                    q_vectors,
                )
            )
            cells.append(replay.cells(replay_with(a, index, vectors, base, with_defs, max_lines)))
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
