"""The write path: which files are indexed (`walk`), a changed file read, hashed and chunked
(`prepare`, in worker processes when many), a batch embedded and written (`write`), the sweep
itself and the file-event path beside it (`run`), and what a sweep reports (`report`).
`sweep_project(...) -> SweepReport` is what the scheduler, the CLI and the admin endpoint call.
"""

from indexer.sweep.report import EmbeddingWork, ProgressCallback, SweepProgress, SweepReport
from indexer.sweep.run import DEFAULT_FILES_PER_COMMIT, SweepOptions, apply_changes, sweep_project
from indexer.sweep.walk import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_SKIP_DIRS,
    WalkOptions,
    walk_project,
)

__all__ = [
    "DEFAULT_FILES_PER_COMMIT",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_SKIP_DIRS",
    "EmbeddingWork",
    "ProgressCallback",
    "SweepOptions",
    "SweepProgress",
    "SweepReport",
    "WalkOptions",
    "apply_changes",
    "sweep_project",
    "walk_project",
]
