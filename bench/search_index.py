"""Where the search benchmark keeps its index: the sweep benchmark's corpus as one project
(PROJECT) in an embedded PostgreSQL under bench/.cache/search-100k, built by
`python -m bench.search_bench build`, read by that benchmark and by `bench/eval/at_scale.py`
(which copies it), so neither imports the other.
"""

from __future__ import annotations

from pathlib import Path

from indexer.db import Database, Schema

PROJECT = "bench_search"
SCHEMA = Schema(PROJECT)
CACHE = Path(__file__).resolve().parent / ".cache" / "search-100k"


def open_database(cache: Path) -> Database:
    cache.mkdir(parents=True, exist_ok=True)
    cache.chmod(0o755)  # the embedded server runs as its own user
    return Database("", cache).open()
