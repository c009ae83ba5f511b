"""What a sweep is asked to do (`SweepOptions`) and its defaults. Values only, no work: the
configuration reads them without loading the sweep itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chunkers import ChunkerConfig
from indexer.sweep.walk import WalkOptions

DEFAULT_FILES_PER_COMMIT = 50


@dataclass(frozen=True)
class SweepOptions:
    files_per_commit: int = DEFAULT_FILES_PER_COMMIT
    walk: WalkOptions = field(default_factory=WalkOptions)
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    # False: every file goes in one by one (the HNSW and trigram indexes are still built
    # again after a large first sweep).
    bulk_load: bool = True
    # Worker processes that parse files; None: one per free core when that pays, 0: none.
    prepare_workers: int | None = None
    # True: rows first, vectors afterwards (`vectors.embed_pending`); False: embedded as they
    # are written; None: first when at least `run.DEFER_VECTORS_FILES` files are to be read.
    defer_vectors: bool | None = None
