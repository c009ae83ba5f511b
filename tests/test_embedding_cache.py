"""One embedding cache for every project: a second checkout of the same code (another root,
another project) embeds only text it has never seen, whichever way its vectors go in; the
cache holds digests and vectors, never text; it stays within its bound, least recently used
out first; and a model no project uses any more takes its vectors with it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from ollama_standin import OllamaStandin, StandinModel, ollama_standin
from server_fixtures import call, serve, unique_name
from test_sweep_bulk import CHUNKS, FIXTURES, SYMBOLS, rows

from indexer.db import Database, Schema, embedding_cache, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project
from indexer.sweep.vectors import embed_pending

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
INLINE = SweepOptions(defer_vectors=False)


def cached(conn: Conn) -> list[tuple[Any, ...]]:
    found = conn.execute(
        'SELECT model, digest, used FROM "code-rag".embedding_cache ORDER BY model, digest'
    ).fetchall()
    conn.rollback()
    return found


def drop(database: Database, *names: str) -> None:
    with database.connection() as c:
        for name in names:
            if store.project_exists(c, Schema(name)):
                store.drop_project(c, Schema(name))


@pytest.mark.parametrize("defer", [False, True], ids=["as written", "rows first"])
def test_a_second_checkout_embeds_only_text_it_has_never_seen(
    database: Database,
    conn: Conn,
    project_name: str,
    tmp_path: Path,
    ollama_standin: OllamaStandin,
    defer: bool,
) -> None:
    main = tmp_path / "main"
    shutil.copytree(FIXTURES, main)
    worktree = tmp_path / "worktree"  # another checkout: another root, another project
    shutil.copytree(FIXTURES, worktree)
    (worktree / "new.py").write_text("def brand_new(x):\n    return x * 41\n", encoding="utf-8")
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    first = Project(project_name, (Root(main, "repo"),))
    second = Project(f"{project_name}_wt", (Root(worktree, "repo"),))
    options = SweepOptions(defer_vectors=defer)
    try:
        sweep_project(database, first, embedder, options)
        embed_pending(database, first, embedder)
        ollama_standin.reset_counters()
        report = sweep_project(database, second, embedder, options)
        later = embed_pending(database, second, embedder)
        assert ollama_standin.embedded_inputs == 1  # new.py's one chunk, nothing else
        assert report.chunks_embedded + later.chunks_embedded == 1
        assert report.cache_hits + later.reused > 0
        # The same vectors, file for file.
        for query in (CHUNKS, SYMBOLS):
            theirs = [r for r in rows(conn, second.name, query) if r[0] != "new.py"]
            assert theirs == rows(conn, first.name, query)
    finally:
        drop(database, second.name)


def test_the_cache_holds_digests_and_vectors_never_text(
    database: Database, conn: Conn, project_name: str, tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    root = tmp_path / "src"
    shutil.copytree(FIXTURES, root)
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    project = Project(project_name, (Root(root, "src"),))
    sweep_project(database, project, embedder, INLINE)
    columns = conn.execute(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = 'code-rag' AND table_name = 'embedding_cache'"
    ).fetchall()
    conn.rollback()
    assert {c for (c,) in columns} == {"model", "digest", "embedding", "used"}
    entries = cached(conn)
    chunks = rows(conn, project_name, CHUNKS)
    assert {bytes(d).hex() for _, d, _ in entries} >= {r[7] for r in chunks}
    assert all(len(bytes(d)) == 32 for _, d, _ in entries)
    # Not a project: never listed, altered or dropped as one.
    assert "code-rag" not in store.list_projects(conn)
    conn.rollback()


def test_the_cache_keeps_its_bound_the_least_recently_used_out_first(conn: Conn) -> None:
    vectors = {f"{i:064x}": np.full(3, i + 1, dtype=np.float32) for i in range(6)}
    embedding_cache.share_vectors(conn, "m", vectors)
    conn.execute(
        """UPDATE "code-rag".embedding_cache SET used = current_date - (6 - get_byte(digest, 31))
            WHERE model = 'm'"""
    )  # the entry of hash i last used 6 - i days ago
    conn.commit()
    assert embedding_cache.trim_shared_cache(conn, 10) == 0
    assert embedding_cache.trim_shared_cache(conn, 4) == 2
    conn.commit()
    left = {bytes(d).hex() for _, d, _ in cached(conn)}
    assert left == {f"{i:064x}" for i in range(2, 6)}
    # A hit marks an entry used today: it outlives older ones.
    assert set(embedding_cache.shared_vectors(conn, "m", [f"{2:064x}"])) == {f"{2:064x}"}
    conn.commit()
    assert embedding_cache.trim_shared_cache(conn, 3) == 1
    conn.commit()
    assert {bytes(d).hex() for _, d, _ in cached(conn)} == {f"{i:064x}" for i in (2, 4, 5)}


def test_a_model_no_project_uses_takes_its_cached_vectors_with_it(
    database: Database, conn: Conn, project_name: str, tmp_path: Path
) -> None:
    root = tmp_path / "src"
    shutil.copytree(FIXTURES, root)
    models = [StandinModel(), StandinModel(name="all-minilm", dimension=384, family="bert")]
    with OllamaStandin(models) as standin:
        old = make_embedder("ollama", "nomic-embed-text:v1.5", standin.url)
        new = make_embedder("ollama", "all-minilm", standin.url)
        one = Project(project_name, (Root(root, "src"),))
        two = Project(f"{project_name}_two", (Root(root, "src"),))
        try:
            sweep_project(database, one, old, INLINE)
            sweep_project(database, two, old, INLINE)
            old_key = old.identity.cache_key
            assert {m for m, _, _ in cached(conn)} == {old_key}
            sweep_project(database, one, new, INLINE)  # another model: re-embedded
            assert {m for m, _, _ in cached(conn)} == {old_key, new.identity.cache_key}
            sweep_project(database, two, new, INLINE)  # the last project using the old model moves
            assert {m for m, _, _ in cached(conn)} == {new.identity.cache_key}
        finally:
            drop(database, two.name)


def test_two_projects_sharing_vectors_never_see_each_other_s_files(
    database: Database, tmp_path: Path, ollama_standin: OllamaStandin
) -> None:
    # Two checkouts of the same code, each with a file of its own: the second takes every
    # shared vector from the cache, and still no tool of either project names, reads or finds
    # anything of the other's.
    roots = {}
    for side in ("main", "twin"):
        roots[side] = tmp_path / side
        shutil.copytree(FIXTURES, roots[side])
        (roots[side] / f"only_{side}.py").write_text(
            f"def only_in_{side}_checkout():\n    return {side!r}\n", encoding="utf-8"
        )
    projects = {
        side: Project(unique_name(f"c{side}"), (Root(roots[side], "repo"),)) for side in roots
    }
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    sweep_project(database, projects["main"], embedder)
    embed_pending(database, projects["main"], embedder)
    ollama_standin.reset_counters()
    sweep_project(database, projects["twin"], embedder)
    embed_pending(database, projects["twin"], embedder)
    assert ollama_standin.embedded_inputs == 1  # only_twin.py's one chunk
    served_projects = {p.name: p for p in projects.values()}
    for served in serve(tmp_path, served_projects, ollama_standin, database):
        for side, other in (("main", "twin"), ("twin", "main")):
            name, own = projects[side].name, str(roots[side])
            word = f"only_in_{other}_checkout"

            def ask(tool: str, **arguments: Any) -> dict[str, Any]:
                return call(served, name, tool, arguments)  # noqa: B023

            found = ask("search_code", query=word, top_k=50, by_file=False)["hits"]
            assert found and all(h["absolute_path"].startswith(own) for h in found)
            assert f"only_{other}.py" not in {h["path"] for h in found}
            for hit in found:
                chunk = ask("get_chunk", chunk_id=hit["chunk_id"])
                assert chunk["absolute_path"].startswith(own)
            symbols = ask("find_symbol", name=word)["symbols"]
            assert f"only_{other}.py" not in {s["path"] for s in symbols}
            assert ask("grep", pattern=word)["matches"] == []
            assert ask("find_references", name=word)["references"] == []
            assert [r["root"] for r in ask("list_repos")["repos"]] == [own]
            response = served.rpc(
                name,
                "tools/call",
                {"name": "get_outline", "arguments": {"repo": "repo", "path": f"only_{other}.py"}},
            ).json()
            assert response["result"]["isError"] is True
