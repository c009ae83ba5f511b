"""Several projects indexed at once (`./bld scan all`, a server's start) are one stream: every
project's rows go in before any vector, so each answers by keyword, name and exact text within
seconds; then the vectors follow one project after another, the fewest pending first, and
never two projects' at once. A project whose vectors fail (a dead connection) fails alone: the
others end complete."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest

# Helpers come from the fixture plugins below: let pytest rewrite their asserts on first import.
pytest.register_assert_rewrite("server_fixtures")

from cli_fixtures import bld, own_dsn  # noqa: E402
from ollama_standin import OllamaStandin, ollama_standin  # noqa: E402
from server_fixtures import (  # noqa: E402
    Served,
    call,
    make_project,
    serve,
    standin_embedder,
    unique_name,
    wait_for,
)

from indexer.db import Database, Schema, store  # noqa: E402
from indexer.embed import Embedder  # noqa: E402
from indexer.project import Project, Root  # noqa: E402
from indexer.search import find_symbol, grep  # noqa: E402
from indexer.sweep import SweepOptions, pending_order, sweep_project  # noqa: E402

__all__ = ["ollama_standin", "own_dsn"]
pytest_plugins = ["server_fixtures"]

# Files per project; the projects file lists them largest first, so the order the vectors
# come in is the stream's own, not the file's.
SIZES = {"large": 9, "small": 1, "medium": 4}
ORDER = ["small", "medium", "large"]  # fewest pending first


def files(kind: str, count: int) -> dict[str, str]:
    """`count` files whose names and definitions say which project they belong to."""
    return {
        f"{kind}_{i}.py": f"def {kind}_fn_{i}(value):\n    return value + {i}  # {kind} marker\n"
        for i in range(count)
    }


def write_tree(base: Path, kind: str) -> Path:
    root = base / kind
    root.mkdir(parents=True)
    for rel, text in files(kind, SIZES[kind]).items():
        (root / rel).write_text(text, encoding="utf-8")
    return root


def kind_of(text: str) -> str | None:
    """Which project an embedding input (its first line: `File: <path>`) belongs to."""
    first = text.split("\n", 1)[0]
    for kind in SIZES:
        if f"File: {kind}_" in first:
            return kind
    return None


def runs_of(sequence: Sequence[str]) -> list[str]:
    """`sequence` with repeats in a row collapsed: the order of the projects' turns."""
    return [k for i, k in enumerate(sequence) if i == 0 or sequence[i - 1] != k]


def counts(conn: psycopg.Connection[Any], name: str) -> tuple[int, int]:
    """(rows that get a vector, of them still pending) in project `name`; (0, 0) before it
    has an index."""
    exists = store.project_exists(conn, Schema(name))
    found = store.pending_counts(conn, Schema(name), of_all=True) if exists else None
    conn.rollback()
    if found is None:
        return 0, 0
    if not found.total:
        return 0, 0
    return found.all_chunks + found.all_definitions, found.total


def answers(db: Database, project: Project, kind: str) -> bool:
    """Whether the project's last file answers by name and by exact text."""
    with db.connection() as conn:
        if not store.project_exists(conn, Schema(project.name)):
            return False
    last = SIZES[kind] - 1
    named = [s.path for s in find_symbol(db, project, f"{kind}_fn_{last}").symbols]
    exact = [m.path for m in grep(db, project, f"return value + {last}  # {kind}").matches]
    return named == [f"{kind}_{last}.py"] == exact


@pytest.fixture
def workspace(tmp_path: Path, own_dsn: str, ollama_standin: OllamaStandin) -> Path:
    """application.ini and rag-projects.json for three projects of different sizes."""
    projects = {kind: {"roots": [str(write_tree(tmp_path, kind))]} for kind in SIZES}
    (tmp_path / "rag-projects.json").write_text(json.dumps({"projects": projects}))
    (tmp_path / "application.ini").write_text(
        f"[database]\ndsn = {own_dsn}\n"
        f"[embedding]\nprovider = ollama\nhost = {ollama_standin.url}\n",
        encoding="utf-8",
    )
    return tmp_path


@pytest.fixture
def reader(workspace: Path, own_dsn: str) -> Iterator[Database]:
    """The scan's database, opened by the test (the scan runs in a process of its own)."""
    db = Database(own_dsn, workspace / ".data").open()
    try:
        yield db
    finally:
        db.close()


def projects_of(workspace: Path) -> dict[str, Project]:
    return {kind: Project(kind, (Root((workspace / kind).resolve(), kind),)) for kind in SIZES}


class Watch:
    """Records, from the stand-in, which project each embedding request is for; at the
    first, whether every project's rows answered and how many vectors were in by then."""

    def __init__(self, db: Database, projects: dict[str, Project]) -> None:
        self.db = db
        self.projects = projects
        self.kinds: list[str] = []
        self.at_first: dict[str, tuple[bool, tuple[int, int]]] | None = None
        self.then: Any = None  # called with each request's project, after it is recorded

    def __call__(self, inputs: list[str]) -> None:
        kind = next((k for k in map(kind_of, inputs) if k), None)
        if kind is None:  # not a document (a probe)
            return
        if self.at_first is None:
            with self.db.connection() as conn:
                self.at_first = {
                    k: (answers(self.db, p, k), counts(conn, k)) for k, p in self.projects.items()
                }
        self.kinds.append(kind)
        if self.then is not None:
            self.then(kind)


def test_scan_all_writes_every_projects_rows_then_one_stream_of_vectors_fewest_first(
    workspace: Path, reader: Database, ollama_standin: OllamaStandin
) -> None:
    projects = projects_of(workspace)
    watch = Watch(reader, projects)
    ollama_standin.on_embed = watch
    result = bld(workspace, "scan", "all")
    assert result.returncode == 0, result.stdout + result.stderr
    # Before the first vector was asked for, every project answered by name and exact text,
    # and no project had a vector yet (all of them pending).
    assert watch.at_first is not None
    for kind, (answered, (rows, pending)) in watch.at_first.items():
        assert answered, kind
        assert rows > 0 and pending == rows, kind
    # Then one project after another, the fewest pending first, each once.
    assert runs_of(watch.kinds) == ORDER
    # Each ends complete, its vectors' graphs built.
    with reader.connection() as conn:
        for kind in SIZES:
            assert counts(conn, kind)[1] == 0
            assert not store.vector_indexes_missing(conn, Schema(kind))
            conn.rollback()
    out = result.stdout
    assert "vectors of 3 projects, fewest pending first: small (" in out
    assert out.index("small: ok") < out.index("vectors of 3 projects")  # rows before vectors
    for kind in SIZES:
        assert f"{kind}: vectors done" in out
        assert f"{kind}: embedding work" in out
    # Progress names each project's place in the stream, and the time left for all of them.
    for place, kind in enumerate(ORDER, 1):
        assert f"{kind} [{place}/3]: vectors " in result.stderr
    assert "(all projects: about " in result.stderr


def test_scan_all_a_project_whose_vectors_fail_fails_alone(
    workspace: Path, reader: Database, ollama_standin: OllamaStandin, own_dsn: str
) -> None:
    """The database drops the scan's connections while the medium project's vectors are
    being embedded: that project's run fails, the next one reconnects and ends complete."""
    watch = Watch(reader, projects_of(workspace))
    dropped: list[str] = []

    def drop_connections(kind: str) -> None:
        if kind == "medium" and not dropped:
            dropped.append(kind)
            with psycopg.connect(own_dsn, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND backend_type = 'client backend'"
                )

    watch.then = drop_connections
    ollama_standin.on_embed = watch
    result = bld(workspace, "scan", "all")
    assert dropped == ["medium"]
    assert result.returncode == 1, result.stdout + result.stderr
    assert "medium: vectors failed" in result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith("error: medium: ")
    with reader.connection() as conn:
        assert counts(conn, "small")[1] == 0
        assert counts(conn, "large")[1] == 0
        assert counts(conn, "medium")[1] > 0  # left pending for the next scan
    # The next scan finishes it; nothing else is embedded again.
    watch.then = None
    watch.kinds.clear()
    again = bld(workspace, "scan", "all")
    assert again.returncode == 0, again.stdout + again.stderr
    assert set(watch.kinds) == {"medium"}
    with reader.connection() as conn:
        assert counts(conn, "medium")[1] == 0


def test_pending_order_is_fewest_first_ties_as_given_and_no_index_counts_none(
    database: Database, tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    names = {kind: unique_name(kind) for kind in SIZES}
    projects = {
        kind: Project(names[kind], (Root(write_tree(tmp_path, kind), kind),)) for kind in SIZES
    }
    embedder = standin_embedder(ollama_standin)
    try:
        for project in projects.values():
            sweep_project(database, project, embedder, SweepOptions(defer_vectors=True))
        never = unique_name("never")
        order = pending_order(database, [names["large"], never, names["medium"], names["small"]])
        expected = [never, names["small"], names["medium"], names["large"]]
        assert [w.project for w in order] == expected
        assert order[0].pending == 0
        assert all(w.pending for w in order[1:])
    finally:
        with database.connection() as conn:
            for name in names.values():
                if store.project_exists(conn, Schema(name)):
                    store.drop_project(conn, Schema(name))
            conn.commit()


class Recording:
    """Wraps a real embedder: which project each batch of documents is for (by its labels,
    which start with the root's name), how many batches ran at once at most, and at the first
    whether every project's rows answered while none had a vector."""

    def __init__(self, inner: Embedder, db: Database, projects: dict[str, Project]) -> None:
        self.inner = inner
        self.db = db
        self.projects = projects
        self.kinds: list[str] = []
        self.at_first: dict[str, tuple[bool, tuple[int, int]]] | None = None
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    @property
    def identity(self) -> Any:
        return self.inner.identity

    def embed_documents(self, texts: Any, labels: Any = None) -> Any:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
            first = self.at_first is None
            if first:
                self.at_first = {}
        try:
            if first:
                with self.db.connection() as conn:
                    self.at_first = {
                        k: (answers(self.db, p, k), counts(conn, p.name))
                        for k, p in self.projects.items()
                    }
            kinds = {str(label).split("/", 1)[0] for label in labels or []}
            self.kinds.extend(sorted(kinds))
            return self.inner.embed_documents(texts, labels)
        finally:
            with self._lock:
                self.running -= 1

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)

    def close(self) -> None:
        self.inner.close()


def complete(served: Served, name: str) -> bool:
    status = call(served, name, "index_status", {})
    return status["vectors_pending"] == 0 and status["last_vectors_run"] is not None


def test_a_servers_start_sweeps_every_projects_rows_then_embeds_one_project_at_a_time(
    work_dir: Path, ollama_standin: OllamaStandin, database: Database
) -> None:
    # Never swept: each is swept at the start (two at a time). Each has fewer files than a
    # sweep defers the vectors of, so before, each embedded its own as it wrote its rows.
    projects = {
        kind: make_project(unique_name(kind), work_dir / kind, files(kind, n), label=kind)
        for kind, n in SIZES.items()
    }
    recording = Recording(standin_embedder(ollama_standin), database, projects)
    served_projects = {p.name: p for p in projects.values()}
    for served in serve(
        work_dir, served_projects, ollama_standin, database, schedule=True, embedder=recording
    ):
        for project in projects.values():
            wait_for(partial(complete, served, project.name), what=f"{project.name} complete")
        assert recording.at_first is not None
        for kind, (answered, (rows, pending)) in recording.at_first.items():
            assert answered, kind
            assert rows > 0 and pending == rows, kind
        assert runs_of(recording.kinds) == ORDER
        assert recording.most == 1
        for project in projects.values():
            status = call(served, project.name, "index_status", {})
            assert status["last_run"]["trigger"] == "startup"
            assert status["last_vectors_run"]["outcome"] == "ok"
