"""The write path: which files are indexed (`walk`), a changed file read, hashed and chunked
(`prepare`, in worker processes when many), a batch embedded and written (`write`), the sweep
itself and the file-event path beside it (`run`), the vectors a sweep left for after its rows,
claimed by any number of processes at once, and the order several projects' vectors go in
(`vectors`), what a sweep is asked to do (`options`) and what it reports (`report`).
`sweep_project(...) -> SweepReport` is what the scheduler, the CLI and the admin endpoint call.

The face loads each module when one of its names is first used: the configuration reads the
options and the walk's defaults without loading the sweep (numpy, the writer, worker processes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.lazy import lazy_names

if TYPE_CHECKING:
    from indexer.sweep.options import DEFAULT_FILES_PER_COMMIT, SweepOptions
    from indexer.sweep.report import (
        EmbeddingWork,
        ProgressCallback,
        SweepProgress,
        SweepReport,
    )
    from indexer.sweep.run import apply_changes, sweep_project
    from indexer.sweep.vectors import (
        VECTOR_BATCH,
        Participant,
        PendingWork,
        VectorProgress,
        VectorProgressCallback,
        VectorReport,
        embed_pending,
        pending_order,
    )
    from indexer.sweep.walk import (
        DEFAULT_MAX_FILE_BYTES,
        DEFAULT_SKIP_DIRS,
        WalkOptions,
        walk_project,
    )

# Each name of the face and the module of this wing that defines it.
_HOMES = {
    "DEFAULT_FILES_PER_COMMIT": "options",
    "SweepOptions": "options",
    "EmbeddingWork": "report",
    "ProgressCallback": "report",
    "SweepProgress": "report",
    "SweepReport": "report",
    "apply_changes": "run",
    "sweep_project": "run",
    "VECTOR_BATCH": "vectors",
    "Participant": "vectors",
    "PendingWork": "vectors",
    "VectorProgress": "vectors",
    "VectorProgressCallback": "vectors",
    "VectorReport": "vectors",
    "embed_pending": "vectors",
    "pending_order": "vectors",
    "DEFAULT_MAX_FILE_BYTES": "walk",
    "DEFAULT_SKIP_DIRS": "walk",
    "WalkOptions": "walk",
    "walk_project": "walk",
}

__all__ = [
    "DEFAULT_FILES_PER_COMMIT",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_SKIP_DIRS",
    "VECTOR_BATCH",
    "EmbeddingWork",
    "Participant",
    "PendingWork",
    "ProgressCallback",
    "SweepOptions",
    "SweepProgress",
    "SweepReport",
    "VectorProgress",
    "VectorProgressCallback",
    "VectorReport",
    "WalkOptions",
    "apply_changes",
    "embed_pending",
    "pending_order",
    "sweep_project",
    "walk_project",
]


__getattr__ = lazy_names(__name__, _HOMES, globals())
