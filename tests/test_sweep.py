"""The sweep against the real database and the Ollama stand-in: exact rows after adds,
modifications, deletions and renames; failures recorded and retried; zero embedding calls on an
unchanged tree; one sweep per project at a time."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from index_rows import file_chunks
from ollama_standin import OllamaStandin, StandinModel, ollama_standin, unreachable_url

from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.errors import EmbedderUnavailable, ModelMismatch, SweepRunning
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import SweepOptions, SweepReport, sweep_project

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]

PY_INVOICE = '''"""Invoices."""


class Invoice:
    """A bill for a customer."""

    def __init__(self, customer, lines):
        self.customer = customer
        self.lines = lines

    def total(self):
        """Sum of all line amounts."""
        return sum(line.amount for line in self.lines)
'''

PY_UTIL = '''def slugify(text):
    """Lowercase words joined by hyphens."""
    return "-".join(text.lower().split())
'''


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def files_and_chunks(conn: Conn, project: str) -> dict[str, list[tuple[int, int, str | None]]]:
    """{repo/path: [(start, end, symbol), ...]} for every indexed file (failed ones too)."""
    conn.rollback()
    out: dict[str, list[tuple[int, int, str | None]]] = {}
    for (repo, path), _state in sorted(store.file_states(conn, Schema(project)).items()):
        rows = file_chunks(conn, project, repo, path)
        out[f"{repo}/{path}"] = [(r[1], r[2], r[3]) for r in rows]
    conn.rollback()
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    write(root, "billing/invoice.py", PY_INVOICE)
    write(root, "util.py", PY_UTIL)
    write(root, "README.md", "# App\n\nBilling for customers.\n")
    return root


@pytest.fixture
def project(tree: Path, project_name: str) -> Project:
    return Project(project_name, (Root(tree, "app"),))


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    emb = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    yield emb
    emb.close()


def sweep(database: Database, project: Project, embedder: Any, **kw: Any) -> SweepReport:
    return sweep_project(database, project, embedder, SweepOptions(files_per_commit=2), **kw)


def test_first_sweep_indexes_every_file(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    report = sweep(database, project, embedder)
    assert report.outcome == "ok"
    assert (report.files_seen, report.files_changed, report.files_failed) == (3, 3, 0)
    rows = files_and_chunks(conn, project.name)
    assert sorted(rows) == ["app/README.md", "app/billing/invoice.py", "app/util.py"]
    assert all(chunks for chunks in rows.values())
    symbols = {s for chunks in rows.values() for (_a, _b, s) in chunks}
    assert "slugify" in symbols
    summary = store.summary(conn, Schema(project.name))
    assert summary.files == 3
    assert summary.chunks == report.chunks_written
    conn.rollback()


def test_unchanged_tree_makes_zero_embedding_calls(
    database: Database, project: Project, embedder: Any, ollama_standin: OllamaStandin
) -> None:
    sweep(database, project, embedder)
    ollama_standin.reset_counters()
    report = sweep(database, project, embedder)
    assert ollama_standin.embedding_calls == 0
    assert (report.files_unchanged, report.files_changed, report.chunks_written) == (3, 0, 0)


def test_touched_but_identical_file_is_not_rechunked(
    database: Database, project: Project, tree: Path, embedder: Any, ollama_standin: OllamaStandin
) -> None:
    sweep(database, project, embedder)
    ollama_standin.reset_counters()
    os.utime(tree / "util.py", ns=(1, 1))
    report = sweep(database, project, embedder)
    assert ollama_standin.embedding_calls == 0
    assert (report.files_unchanged, report.files_changed) == (3, 0)
    # The new mtime is recorded: the next sweep does not even read the file.
    again = sweep(database, project, embedder)
    assert again.files_unchanged == 3


def test_add_modify_delete_and_rename(
    database: Database,
    conn: Conn,
    project: Project,
    tree: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    sweep(database, project, embedder)
    before = files_and_chunks(conn, project.name)

    write(tree, "billing/tax.py", "def vat(amount):\n    return amount * 0.2\n")  # add
    write(tree, "util.py", PY_UTIL + "\n\ndef shout(text):\n    return text.upper() + '!'\n")
    (tree / "README.md").unlink()  # delete
    (tree / "billing/invoice.py").rename(tree / "billing/bill.py")  # rename
    ollama_standin.reset_counters()
    report = sweep(database, project, embedder)

    after = files_and_chunks(conn, project.name)
    assert sorted(after) == ["app/billing/bill.py", "app/billing/tax.py", "app/util.py"]
    assert after["app/billing/bill.py"] == before["app/billing/invoice.py"]
    assert report.files_deleted == 2  # README.md and the old name
    assert report.files_changed == 3
    # The renamed file's chunks came from the embedding cache: only new content was embedded.
    embedded = [text for batch in ollama_standin.batches for text in batch]
    assert not any("class Invoice" in text for text in embedded)
    assert any("def shout" in text for text in embedded)
    assert report.cache_hits >= len(before["app/billing/invoice.py"])


def test_removed_root_rows_are_deleted(
    database: Database, conn: Conn, project: Project, tmp_path: Path, embedder: Any
) -> None:
    other = tmp_path / "lib"
    write(other, "lib.py", "def helper():\n    return 42\n")
    both = Project(project.name, (*project.roots, Root(other, "lib")))
    sweep(database, both, embedder)
    assert "lib/lib.py" in files_and_chunks(conn, project.name)
    report = sweep(database, project, embedder)
    assert report.files_deleted == 1
    assert not any(k.startswith("lib/") for k in files_and_chunks(conn, project.name))


def test_secret_and_ignored_files_are_never_indexed(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    write(tree, ".env", "API_KEY=abc123\n")
    write(tree, "deploy/server.pem", "-----BEGIN PRIVATE KEY-----\n")
    write(tree, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
    write(tree, ".gitignore", "*.log\n")
    write(tree, "debug.log", "noise\n")
    write(tree, "node_modules/pkg/index.js", "module.exports = 1;\n")
    report = sweep(database, project, embedder)
    indexed = files_and_chunks(conn, project.name)
    for secret in ("app/.env", "app/deploy/server.pem", "app/id_rsa", "app/debug.log"):
        assert secret not in indexed
    assert not any("node_modules" in k for k in indexed)
    assert report.skipped["secret file"] == 3
    assert report.skipped["gitignored"] == 1
    assert report.skipped["in a skipped folder"] == 1


def test_a_file_that_fails_to_embed_is_recorded_and_retried(
    database: Database,
    conn: Conn,
    project: Project,
    tree: Path,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    write(tree, "poison.py", "def poisoned():\n    return 'POISON'\n")
    ollama_standin.poison = {"POISON"}
    report = sweep(database, project, embedder)
    assert report.outcome == "partial"
    assert report.files_failed == 1
    [failure] = report.failures
    assert failure["path"] == "poison.py"
    assert "refused" in failure["reason"]
    rows = files_and_chunks(conn, project.name)
    assert rows["app/poison.py"] == []  # recorded, with no chunks
    assert rows["app/util.py"] and rows["app/billing/invoice.py"]  # the others landed
    [recorded] = store.failures(conn, Schema(project.name))
    assert recorded.path == "poison.py"
    conn.rollback()

    # Next sweep retries the failed file (unchanged on disk) and, now accepted, indexes it.
    ollama_standin.poison = set()
    ollama_standin.reset_counters()
    again = sweep(database, project, embedder)
    assert again.outcome == "ok"
    assert again.files_changed == 1 and again.files_unchanged == 3
    assert files_and_chunks(conn, project.name)["app/poison.py"]
    assert store.failures(conn, Schema(project.name)) == []
    conn.rollback()


def test_symlinks_never_lead_out_of_a_root(
    database: Database, conn: Conn, project: Project, tree: Path, tmp_path: Path, embedder: Any
) -> None:
    outside = write(tmp_path / "outside", "secret.py", "PASSWORD = 'hunter2'\n")
    os.symlink(outside, tree / "escape.py")
    os.symlink(outside.parent, tree / "escape_dir")
    report = sweep(database, project, embedder)
    indexed = files_and_chunks(conn, project.name)
    assert not any("escape" in key for key in indexed)
    assert report.skipped["symlink leading out of the root"] == 2


def test_embedder_down_fails_the_sweep_clearly_and_keeps_the_index(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    sweep(database, project, embedder)
    before = files_and_chunks(conn, project.name)
    write(tree, "util.py", PY_UTIL + "\n# changed\n")
    down = make_embedder("ollama", "nomic-embed-text:v1.5", unreachable_url(), retries=0)
    with pytest.raises(EmbedderUnavailable, match="Ollama is not reachable"):
        sweep(database, project, down)
    assert files_and_chunks(conn, project.name) == before
    [last] = store.last_sweeps(conn, Schema(project.name))
    assert last.outcome == "failed"
    assert "not reachable" in last.report["error"]
    conn.rollback()
    # The embedder is back: the next sweep picks the change up.
    report = sweep(database, project, embedder)
    assert report.files_changed == 1


def test_model_change_reembeds_everything_never_mixing(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    sweep(database, project, embedder)
    with OllamaStandin(models=[StandinModel(name="mxbai-embed-large", dimension=1024)]) as other:
        big = make_embedder("ollama", "mxbai-embed-large", other.url)
        with pytest.raises(ModelMismatch, match=r"run `code-rag scan .* --full`"):
            search_code(database, project, big, "invoice total")
        conn.rollback()
        report = sweep(database, project, big)
        assert report.warnings and "re-embedding every chunk" in report.warnings[0]
        assert report.files_changed == 3
        assert store.embedding_dimension(conn, Schema(project.name)) == 1024
        hits = search_code(database, project, big, "invoice total")
        assert hits
        conn.rollback()


def test_one_sweep_per_project_at_a_time(
    database: Database, project: Project, embedder: Any, ollama_standin: OllamaStandin
) -> None:
    ollama_standin.delay_seconds = 1.0
    errors: list[BaseException] = []

    def first() -> None:
        try:
            sweep(database, project, embedder)
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    deadline = time.time() + 10
    with database.connection() as conn:
        while not store.sweep_running(conn, Schema(project.name)) and time.time() < deadline:
            time.sleep(0.05)
        assert store.sweep_running(conn, Schema(project.name))
    with pytest.raises(SweepRunning, match="already running"):
        sweep(database, project, embedder)
    # wait=True queues behind the running sweep instead.
    report = sweep(database, project, embedder, wait=True)
    thread.join()
    assert not errors
    assert report.outcome == "ok"
    with database.connection() as conn:
        assert not store.sweep_running(conn, Schema(project.name))


def test_binary_files_are_skipped_not_failed(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    (tree / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tree / "blob.dat").write_bytes(b"\x00\x01\x02binary\x00" * 10)
    write(tree, "later.txt", "text for now\n")
    first = sweep(database, project, embedder)
    assert first.outcome == "ok"
    assert first.skipped["binary file"] == 1  # by its suffix, never read
    assert first.skipped["binary content"] == 1  # by its bytes
    assert "app/later.txt" in files_and_chunks(conn, project.name)
    (tree / "later.txt").write_bytes(b"\x00\x00now binary\x00")
    second = sweep(database, project, embedder)
    assert (second.files_failed, second.files_deleted) == (0, 1)
    assert "app/later.txt" not in files_and_chunks(conn, project.name)


def test_bulk_load_builds_the_vector_index_at_the_end(
    database: Database,
    conn: Conn,
    project: Project,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import indexer.sweep

    monkeypatch.setattr(indexer.sweep.run, "BULK_LOAD_FILES", 1)
    report = sweep(database, project, embedder)
    assert "build_index" in report.seconds
    index = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (project.name, "rag_chunk_embedding_hnsw"),
    ).fetchone()
    assert index is not None and "hnsw" in index[0]
    conn.rollback()
    # Not empty any more: the next sweep updates the index in place.
    assert "build_index" not in sweep(database, project, embedder).seconds


def test_large_writes_refresh_the_term_statistics(
    database: Database,
    conn: Conn,
    project: Project,
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The keyword ranker reads term frequencies from pg_stats: a sweep that wrote many chunks
    # analyzes the table instead of leaving every term weighted alike until autovacuum runs.
    import indexer.sweep

    monkeypatch.setattr(indexer.sweep.run, "ANALYZE_AFTER_CHUNKS", 1)
    report = sweep(database, project, embedder)
    assert "analyze" in report.seconds
    row = conn.execute(
        "SELECT most_common_elems IS NOT NULL FROM pg_stats "
        "WHERE schemaname = %s AND tablename = 'rag_chunk' AND attname = 'tsv'",
        (project.name,),
    ).fetchone()
    assert row == (True,)
    conn.rollback()
