"""The file-level eval's index: every library a root of one project, swept by the real sweep.

The embedded PostgreSQL lives under `bench/.cache/files/db` (gitignored); the project's roots
(two projects: `files_eval` for the tuning libraries, `files_eval_unseen` for the unseen ones)
are the unpacked libraries (`bench/.cache/files/corpus/<library>`), each labelled with the
library's name, so hits carry it as `repo` and `search_code(repo=...)` keeps a question in its
library. Each run sweeps: an unchanged corpus is a walk with nothing to embed, a changed one
embeds only what changed. A manifest beside the database records the corpus digest and the
model of the last complete sweep. With no embedder (model-free) the index is a project of its
own (`model_free_project`), swept to rows only.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.eval.files.corpus import Corpus
from bench.eval.files.product import (
    DEFAULT_CHUNK_VECTORS,
    Database,
    Project,
    Root,
    SweepOptions,
    analyze,
    open_database,
    sweep_project,
)

PROJECT = "files_eval"


def prepare_dirs(cache: Path) -> Path:
    """The database folder; the embedded server runs as another system user, so every folder
    on its way must be reachable (0755)."""
    db_dir = cache / "db"
    for path in (cache.parent, cache, db_dir):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o755)
    return db_dir


def open_index(cache: Path) -> Database:
    return open_database(prepare_dirs(cache))


def project_for(
    corpus: Corpus,
    model_dir: str | None = None,
    part: str = "",
    document_tokens: int = 0,
    chunk_vectors: str = DEFAULT_CHUNK_VECTORS,
) -> Project:
    """The eval's project over `corpus`; another model than the bundled one (`model_dir`),
    texts cut at `document_tokens`, or chunks read whole or by parts (`chunk_vectors`; whole
    texts keep the name they had before parts), indexes into a project of its own, beside
    the others instead of re-embedding them, and so does a part of the corpus named by
    `part` (the unseen libraries: `files_eval_unseen`)."""
    roots = tuple(Root(corpus.root / lib.name, lib.name) for lib in corpus.libraries)
    name = PROJECT
    if model_dir is not None:
        tag = hashlib.sha256(str(Path(model_dir).resolve()).encode()).hexdigest()[:8]
        name = f"{PROJECT}_m{tag}"
    if document_tokens:
        name = f"{name}_t{document_tokens}"
    if chunk_vectors != "whole":
        name = f"{name}_{chunk_vectors}"
    return Project(f"{name}_{part}" if part else name, roots)


def model_free_project(corpus: Corpus) -> Project:
    """The eval's project indexed with no model (rows only), beside the model's."""
    roots = tuple(Root(corpus.root / lib.name, lib.name) for lib in corpus.libraries)
    return Project(f"{PROJECT}_none", roots)


def _progress(p: Any) -> None:
    if getattr(p, "phase", None) == "index" and p.files_total:
        rate = p.chunks_written / p.elapsed if p.elapsed else 0.0
        print(
            f"\r  indexing: {p.files_done}/{p.files_total} files, {p.chunks_written} chunks, "
            f"{p.elapsed:.0f} s ({rate:.1f} chunks/s)",
            end="",
            file=sys.stderr,
            flush=True,
        )


def ensure_index(
    db: Database, project: Project, embedder: Any, corpus: Corpus, cache: Path
) -> dict:
    """Sweep the corpus (a walk when unchanged) and return the manifest of the index; with no
    `embedder`, rows only."""
    path = cache / f"manifest-{project.name}.json"
    model = None if embedder is None else embedder.identity.to_dict()
    wanted = {"corpus": corpus.digest, "model": model}
    old = json.loads(path.read_text()) if path.is_file() else {}
    same = {k: old.get(k) for k in wanted} == wanted
    print(f"index {project.name}: {'checking' if same else 'sweeping'} ...", file=sys.stderr)
    started = time.perf_counter()
    report = sweep_project(
        db, project, embedder, SweepOptions(defer_vectors=False), progress=_progress
    )
    print(file=sys.stderr)
    if report.files_failed:
        raise SystemExit(
            f"the eval index has {report.files_failed} failed files: {report.failures}"
        )
    chunks = analyze(db, project)
    if same and not report.chunks_embedded:
        return {**old, "chunks": chunks}
    manifest = {
        **wanted,
        "libraries": len(corpus.libraries),
        "files": report.files_seen,
        "chunks": chunks,
        "skipped": report.skipped,
        "chunks_embedded": report.chunks_embedded,
        "definitions_embedded": report.definitions_embedded,
        "sweep_seconds": round(time.perf_counter() - started, 1),
        "embed_seconds": round(report.seconds.get("embed", 0.0), 1),
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
