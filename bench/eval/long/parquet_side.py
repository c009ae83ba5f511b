"""SWE-bench's parquet files as JSON rows, run inside a virtual environment that has pyarrow.

Not imported by code-rag: build.py runs this file with the interpreter of a virtual environment
of its own (`bench/.cache/long/parquet`, pyarrow only), so the product's dependencies stay as
they are. It reads each parquet file and writes the columns the eval keeps, one object a row.

    python parquet_side.py OUT.json IN.parquet [IN.parquet ...]
"""

from __future__ import annotations

import json
import sys

import pyarrow.parquet as pq

COLUMNS = ("instance_id", "repo", "base_commit", "created_at", "problem_statement", "patch")


def main(out: str, *paths: str) -> None:
    rows = []
    for path in paths:
        for row in pq.read_table(path, columns=list(COLUMNS)).to_pylist():
            rows.append({**{k: str(row[k]) for k in COLUMNS}, "file": path})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(rows, f, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
