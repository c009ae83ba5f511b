"""Index the eval corpus through the real sweep, reusing the index when nothing changed.

The database is an embedded PostgreSQL under `bench/.cache/eval/pgdata` (gitignored). One project
schema per embedding-text variant, because the sweep's vector cache is keyed by chunk content, not
by the text the model read: two variants must never share a schema. A manifest records the corpus
digest, model and variant of the last complete sweep; a changed corpus is simply re-swept (the
sweep re-embeds only the chunks that changed).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from psycopg import sql as pgsql

import indexer.sweep.write as sweep_module
from chunkers import Chunk, ChunkerConfig, embedding_text
from indexer import lexical
from indexer.db import Conn, Database, Schema, store
from indexer.embed import CHUNK_VECTORS_WHOLE, Embedder, make_embedder
from indexer.embed.model_dir import bundled_model_dir, read_manifest
from indexer.project import Project, Root
from indexer.sweep import (
    SweepOptions,
    SweepProgress,
    sweep_project,
)
from indexer.sweep.vectors import embed_pending

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

CACHE = REPO / "bench" / ".cache" / "eval"
REPO_LABEL = "stdlib"


def _content_only(chunk: Chunk, path: str) -> str:
    return chunk.content


def _symbol_only(chunk: Chunk, path: str) -> str:
    return (f"{chunk.symbol}\n\n" if chunk.symbol else "") + chunk.content


# What the model reads for a chunk: the chunker's header (the product), or ablations of it.
EMBEDDING_TEXTS: dict[str, Callable[[Chunk, str], str]] = {
    "chunker": embedding_text,
    "none": _content_only,
    "symbol": _symbol_only,
}


def prepare_dirs(cache: Path) -> tuple[Path, Path]:
    """The corpus folder and the database folder; the embedded server runs as another system
    user, so every folder on its way must be reachable (0755)."""
    for path in (cache.parent, cache, cache / "pgdata"):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
    return cache / "corpus", cache / "db"


def project_for(
    corpus: Path, header: str, chunk_chars: int | None, embedder: Embedder | None = None
) -> Project:
    name = f"eval_{header}" + (f"_c{chunk_chars}" if chunk_chars else "") + model_suffix(embedder)
    return Project(name, (Root(corpus, REPO_LABEL),))


def model_suffix(embedder: Embedder | None) -> str:
    """A tag of a non-default model's identity for project names (empty for the default), so
    an eval of another model indexes beside the default's instead of re-embedding it."""
    if embedder is None:
        return ""
    cut = embedder.identity.document_tokens
    tag = f"_t{cut}" if cut else ""
    if embedder.identity.chunk_vectors != CHUNK_VECTORS_WHOLE:
        tag += f"_{embedder.identity.chunk_vectors}"
    if embedder.identity.model == read_manifest(bundled_model_dir()).name:
        return tag
    identity = replace(
        embedder.identity, document_tokens=0, chunk_vectors=CHUNK_VECTORS_WHOLE
    ).to_dict()
    return (
        "_m" + hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8] + tag
    )


def whole_texts(embedder: Embedder) -> Embedder:
    """`embedder`, or the same local model embedding whole texts where it cuts them (or reads
    chunks by parts): what the plain baseline embeds, whatever the index under test does."""
    identity = embedder.identity
    if not identity.document_tokens and identity.chunk_vectors == CHUNK_VECTORS_WHOLE:
        return embedder
    return make_embedder(
        "local",
        str(embedder.path),  # type: ignore[attr-defined]
        chunk_vectors=CHUNK_VECTORS_WHOLE,
    )


def chunker_config(chunk_chars: int | None) -> ChunkerConfig:
    if not chunk_chars:
        return ChunkerConfig()
    return ChunkerConfig(target_chars=chunk_chars, max_chars=max(chunk_chars * 5 // 3, 400))


def open_database(cache: Path) -> Database:
    _, db_dir = prepare_dirs(cache)
    db_dir.mkdir(exist_ok=True)
    db_dir.chmod(0o755)
    return Database("", db_dir).open()


def _progress(p: SweepProgress) -> None:
    if p.phase == "index" and p.files_total:
        rate = p.chunks_written / p.elapsed if p.elapsed else 0.0
        print(
            f"\r  indexing: {p.files_done}/{p.files_total} files, {p.chunks_written} chunks, "
            f"{p.elapsed:.0f} s "
            f"({rate:.1f} chunks/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )


def ensure_index(
    db: Database,
    project: Project,
    embedder: Embedder,
    digest: str,
    header: str,
    chunk_chars: int | None,
    cache: Path,
) -> dict[str, object]:
    """Sweep the corpus (a no-op when unchanged) and return the manifest of the index."""
    manifest_path = cache / f"manifest-{project.name}.json"
    wanted = {
        "corpus": digest,
        "model": embedder.identity.to_dict(),
        "embedding_text": header,
        "chunk_chars": chunk_chars,
    }
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    reuse = {k: manifest.get(k) for k in wanted} == wanted
    print(f"index {project.name}: {'reusing' if reuse else 'building'} ...", file=sys.stderr)
    original = sweep_module.embedding_text
    sweep_module.embedding_text = EMBEDDING_TEXTS[header]  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        report = sweep_project(
            db,
            project,
            embedder,
            SweepOptions(chunker=chunker_config(chunk_chars), defer_vectors=False),
            progress=_progress,
        )
    finally:
        sweep_module.embedding_text = original
    print(file=sys.stderr)
    if report.files_failed:
        raise SystemExit(
            f"the eval index has {report.files_failed} failed files: {report.failures}"
        )
    schema = Schema(project.name)
    with db.connection() as conn:
        # Planner statistics (and the term frequencies the keyword ranker reads) after a load.
        store.analyze_chunks(conn, schema)
        chunks = store.chunk_count(conn, schema)
    manifest = {
        **wanted,
        "chunks": chunks,
        "files": report.files_seen,
        "chunks_embedded": report.chunks_embedded,
        "definitions_embedded": report.definitions_embedded,
        "sweep_seconds": round(time.perf_counter() - started, 1),
        "embed_seconds": round(report.seconds.get("embed", 0.0), 1),
    }
    if not reuse:
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    else:
        manifest = {**json.loads(manifest_path.read_text()), "chunks": manifest["chunks"]}
    return manifest


def rows_first_index(
    db: Database, project: Project, embedder: Embedder, chunk_chars: int | None
) -> Project:
    """`project`'s corpus indexed afresh as a first index runs in the product: every row
    first, then the vectors that follow them (`embed_pending`), from an empty embedding cache
    (so every vector is computed by the second phase, none taken from an earlier index)."""
    twin = replace(project, name=f"{project.name}_rows_first")
    schema = Schema(twin.name)
    with db.connection() as conn:
        if store.project_exists(conn, schema):
            store.drop_project(conn, schema)
        conn.execute('TRUNCATE "code-rag".embedding_cache')
    print(f"index {twin.name}: rows first, then the vectors ...", file=sys.stderr)
    started = time.perf_counter()
    options = SweepOptions(chunker=chunker_config(chunk_chars), defer_vectors=True)
    report = sweep_project(db, twin, embedder, options, progress=_progress)
    rows = time.perf_counter() - started
    vectors = embed_pending(db, twin, embedder)
    if report.files_failed or vectors.outcome != "ok":
        raise SystemExit(f"the rows-first index is incomplete: {report.failures}, {vectors}")
    with db.connection() as conn:
        store.analyze_chunks(conn, schema)
        left = store.pending_counts(conn, schema).total
    print(
        f"\n  rows in {rows:.0f} s, then {vectors.written:,} vectors in "
        f"{time.perf_counter() - started - rows:.0f} s; {left} pending",
        file=sys.stderr,
    )
    return twin


def split_projects(db: Database, project: Project, parts: int) -> list[Project]:
    """`project` as `parts` projects over the same code, for a group's search beside the one
    index: its roots dealt over them in turn when it has that many, else its indexed files,
    each to the part a digest of its path names (exact paths as include globs)."""
    if parts < 2:
        return [project]
    name = f"{project.name}_of{parts}"
    if len(project.roots) >= parts:
        roots = sorted(project.roots, key=lambda r: r.name)
        return [
            replace(project, name=f"{name}_{i}", roots=tuple(roots[i::parts])) for i in range(parts)
        ]
    with db.connection() as conn:
        paths = sorted({p for _, p in store.file_states(conn, Schema(project.name))})
    dealt: list[list[str]] = [[] for _ in range(parts)]
    for path in paths:
        dealt[int(hashlib.sha256(path.encode()).hexdigest(), 16) % parts].append("/" + path)
    return [
        replace(project, name=f"{name}_{i}", include=tuple(files)) for i, files in enumerate(dealt)
    ]


DEFINITION_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)


def copy_project(conn: Conn, source: Schema, target: Schema, tables: Sequence[str]) -> None:
    """`target` made afresh (dropped first if it exists) with `source`'s embedding dimension,
    and the rows of `tables` copied from `source`, ids and all: an index-side experiment's
    copy."""
    if store.project_exists(conn, target):
        store.drop_project(conn, target)
    store.ensure_project(conn, target)
    dim = store.embedding_dimension(conn, source)
    assert dim is not None
    store.set_embedding_dimension(conn, target, dim)
    for table in tables:
        conn.execute(
            pgsql.SQL("INSERT INTO {} SELECT * FROM {} ON CONFLICT DO NOTHING").format(
                target.table(table), source.table(table)
            )
        )


def add_symbol_terms(conn: Conn, schema: Schema, updates: Sequence[dict[str, Any]]) -> None:
    """Add `terms` to chunk `id`'s symbol-weighted (A) keyword terms, for each update; then
    refresh the statistics the keyword ranker's term rarities come from."""
    with conn.cursor() as cur:
        cur.executemany(
            schema.sql(
                "UPDATE {schema}.rag_chunk"
                " SET tsv = tsv || setweight(to_tsvector('simple', %(terms)s), 'A')"
                " WHERE id = %(id)s"
            ),
            updates,
        )
    store.analyze_chunks(conn, schema)


def with_definition_terms(db: Database, project: Project) -> Project:
    """An index-side experiment, on a copy of the project: every definition in a chunk (not only
    the one the chunk is named after) adds its name to the symbol-weighted (A) terms. Small
    functions merged into a neighbour's chunk then weigh like the chunk's own symbol."""
    copy = Project(f"{project.name}_defs", project.roots)
    schema = Schema(copy.name)
    with db.connection() as conn:
        copy_project(conn, Schema(project.name), schema, ("rag_meta", "rag_file", "rag_chunk"))
        rows = conn.execute(schema.sql("SELECT id, symbol, content FROM {schema}.rag_chunk"))
        updates = []
        for chunk_id, symbol, content in rows.fetchall():
            own = (symbol or "").rpartition(".")[2]
            names = [n for n in DEFINITION_RE.findall(content) if n != own]
            if names:
                updates.append({"id": chunk_id, "terms": lexical.terms_text(" ".join(names))})
        add_symbol_terms(conn, schema, updates)
        conn.commit()
    return copy
