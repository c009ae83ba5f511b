"""A first sweep's memory does not grow with the tree: it holds a batch of files at a time, never
the tree's text, chunks or symbols. Swept in a process of its own (rows first, no model, the
parsing in that process), four times the files (40 MB of source against 10) raised its peak
by 9 MB (120 to 130 MB), where keeping what it read would add its 30 MB of text and more."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from indexer.db import Database

ROOT = Path(__file__).resolve().parent.parent
FILE_BYTES = 40_000


def write_tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"pkg{i % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def handler_{i}_{n}(request, limit={n}):\n"
            f"    '''Answer request {n} of module {i}.'''\n"
            f"    total = sum(x * {n} for x in range(limit))\n"
            f"    return request.reply(total + {i})\n\n"
            for n in range(FILE_BYTES // 150)
        )
        (folder / f"mod{i}.py").write_text(body, encoding="utf-8")


def peak_mb(database: Database, name: str, root: Path) -> float:
    """The peak RSS (MB) of a process that sweeps `root` into project `name`, rows only."""
    script = textwrap.dedent(
        f"""
        import resource
        from pathlib import Path
        from indexer.db import Database
        from indexer.project import Project, Root
        from indexer.sweep import SweepOptions, sweep_project
        db = Database({database.dsn!r}, Path(".")).open()
        project = Project({name!r}, (Root(Path({str(root)!r}), "tree"),))
        report = sweep_project(db, project, None, SweepOptions(prepare_workers=0))
        assert report.outcome == "ok", report.outcome
        print(report.files_changed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    files, kib = done.stdout.split()
    assert int(files) == sum(1 for _ in root.rglob("*.py"))
    return int(kib) / 1024


def test_a_first_sweeps_peak_memory_does_not_grow_with_the_tree(
    database: Database, project_name: str, tmp_path: Path
) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    write_tree(small, 250)
    write_tree(large, 1000)
    source_mb = sum(p.stat().st_size for p in large.rglob("*.py")) / 1e6
    assert source_mb > 38
    try:
        small_peak = peak_mb(database, f"{project_name}_small", small)
        large_peak = peak_mb(database, f"{project_name}_large", large)
    finally:
        with database.connection() as conn:
            for suffix in ("_small", "_large"):
                conn.execute(f'DROP SCHEMA IF EXISTS "{project_name}{suffix}" CASCADE')
            conn.commit()
    # 30 MB more source (and some 40,000 more chunks) than the small tree: a sweep that kept
    # the text alone would peak 30 MB higher, its chunks and symbols more.
    assert large_peak - small_peak < 25, (small_peak, large_peak)
