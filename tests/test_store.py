"""The store against the real embedded PostgreSQL: opening it, schemas, migrations, markers,
file upserts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import psycopg
import pytest
from index_rows import file_chunks
from psycopg.conninfo import make_conninfo

from indexer.db import (
    ChunkRow,
    Database,
    FileRecord,
    Schema,
    migrations,
    prepare_database,
    statements,
    store,
)
from indexer.errors import ForeignSchema, InvalidProjectName, PgvectorMissing, ProjectNotFound

Conn = psycopg.Connection[Any]


def chunk(ordinal: int, text: str, dim: int = 3) -> ChunkRow:
    return ChunkRow(
        ordinal=ordinal,
        start_line=ordinal * 10 + 1,
        end_line=ordinal * 10 + 5,
        symbol=f"sym{ordinal}",
        kind="function",
        content=text,
        content_sha256=f"h-{text}",
        embedding=[float(ordinal + 1)] * dim,
        symbol_terms=f"sym{ordinal}",
        path_terms="src a py",
        body_terms=text,
    )


def record(path: str = "src/a.py", sha: str = "s1") -> FileRecord:
    return FileRecord(repo="app", path=path, size=10, mtime_ns=1, sha256=sha, language="python")


def chunk_rows(conn: Conn, project: str) -> list[tuple[Any, ...]]:
    return file_chunks(conn, project, "app", "src/a.py")


def test_schema_creation_is_idempotent(conn: Conn, project_name: str) -> None:
    assert store.ensure_project(conn, Schema(project_name)) == [
        name for name, _ in migrations.MIGRATIONS
    ]
    assert store.ensure_project(conn, Schema(project_name)) == []
    assert project_name in store.list_projects(conn)
    summary = store.summary(conn, Schema(project_name))
    assert (summary.files, summary.chunks, summary.schema_version) == (
        0,
        0,
        len(migrations.MIGRATIONS),
    )


def test_upsert_replaces_the_chunks_of_a_file(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    first = store.upsert_file(
        conn, Schema(project_name), record(), [chunk(0, "a"), chunk(1, "b"), chunk(2, "c")]
    )
    second = store.upsert_file(
        conn, Schema(project_name), record(sha="s2"), [chunk(0, "x"), chunk(1, "y")]
    )
    assert first == second  # the file row is updated in place, not duplicated
    rows = chunk_rows(conn, project_name)
    assert [(r[0], r[5]) for r in rows] == [(0, "x"), (1, "y")]
    states = store.file_states(conn, Schema(project_name))
    assert states[("app", "src/a.py")].sha256 == "s2"
    assert states[("app", "src/a.py")].chunk_count == 2
    assert store.summary(conn, Schema(project_name)).chunks == 2


def test_failed_upsert_leaves_the_previous_state(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    store.upsert_file(conn, Schema(project_name), record(), [chunk(0, "a"), chunk(1, "b")])
    conn.commit()
    bad = [chunk(0, "new"), chunk(1, "wrong dimension", dim=5)]
    with pytest.raises(psycopg.errors.DataException):
        store.upsert_file(conn, Schema(project_name), record(sha="s2"), bad)
    conn.rollback()
    assert [(r[0], r[5]) for r in chunk_rows(conn, project_name)] == [(0, "a"), (1, "b")]
    assert store.file_states(conn, Schema(project_name))[("app", "src/a.py")].sha256 == "s1"


def test_failed_file_inside_a_batch_rolls_back_only_that_file(
    conn: Conn, project_name: str
) -> None:
    # Several files share one transaction (commit every N files): a savepoint per file keeps
    # one bad file from taking its neighbours down.
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    with conn.transaction():
        store.upsert_file(conn, Schema(project_name), record("src/ok1.py"), [chunk(0, "one")])
        with pytest.raises(psycopg.errors.DataException):
            store.upsert_file(
                conn, Schema(project_name), record("src/bad.py"), [chunk(0, "x", dim=2)]
            )
        store.record_file_error(
            conn, Schema(project_name), "app", "src/bad.py", "dimension mismatch"
        )
        store.upsert_file(conn, Schema(project_name), record("src/ok2.py"), [chunk(0, "two")])
    states = store.file_states(conn, Schema(project_name))
    assert sorted(states) == [("app", "src/bad.py"), ("app", "src/ok1.py"), ("app", "src/ok2.py")]
    assert states[("app", "src/bad.py")].error == "dimension mismatch"
    assert states[("app", "src/bad.py")].chunk_count == 0
    assert store.summary(conn, Schema(project_name)).chunks == 2
    assert [f.path for f in store.failures(conn, Schema(project_name))] == ["src/bad.py"]


def test_error_on_an_indexed_file_keeps_its_chunks(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    store.upsert_file(conn, Schema(project_name), record(), [chunk(0, "a")])
    store.record_file_error(conn, Schema(project_name), "app", "src/a.py", "embedder down")
    state = store.file_states(conn, Schema(project_name))[("app", "src/a.py")]
    assert (state.error, state.sha256, state.chunk_count) == ("embedder down", "s1", 1)
    # A successful upsert clears the error.
    store.upsert_file(conn, Schema(project_name), record(sha="s3"), [chunk(0, "b")])
    assert store.file_states(conn, Schema(project_name))[("app", "src/a.py")].error is None


def test_dimension_change_clears_rows_so_models_never_mix(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    assert store.set_embedding_dimension(conn, Schema(project_name), 3) is False
    assert store.embedding_dimension(conn, Schema(project_name)) == 3
    store.upsert_file(conn, Schema(project_name), record(), [chunk(0, "a")])
    assert store.set_embedding_dimension(conn, Schema(project_name), 3) is False
    assert store.summary(conn, Schema(project_name)).chunks == 1
    assert store.set_embedding_dimension(conn, Schema(project_name), 5) is True
    assert store.embedding_dimension(conn, Schema(project_name)) == 5
    assert store.embedding_dimension(conn, Schema(project_name), "rag_symbol") == 5
    assert store.summary(conn, Schema(project_name)).files == 0


def test_a_project_from_before_definition_vectors_gets_their_column_typed_alone(
    conn: Conn, project_name: str
) -> None:
    # Migration m007 adds the definitions' vector column untyped beside the chunks' typed
    # one: the model check types it and builds its index, and keeps every chunk.
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    store.upsert_file(conn, Schema(project_name), record(), [chunk(0, "a")])
    for step in (
        "DROP INDEX {schema}.rag_symbol_embedding_hnsw",
        "ALTER TABLE {schema}.rag_symbol ALTER COLUMN embedding TYPE vector",
    ):
        conn.execute(Schema(project_name).sql(step))
    assert store.embedding_dimension(conn, Schema(project_name), "rag_symbol") is None
    assert store.set_embedding_dimension(conn, Schema(project_name), 3) is False
    assert store.embedding_dimension(conn, Schema(project_name), "rag_symbol") == 3
    assert store.summary(conn, Schema(project_name)).chunks == 1
    indexes = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (project_name,)
    ).fetchall()
    assert ("rag_symbol_embedding_hnsw",) in indexes


def test_deleting_files_cascades_to_chunks(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    file_id = store.upsert_file(
        conn, Schema(project_name), record(), [chunk(0, "a"), chunk(1, "b")]
    )
    assert store.delete_files(conn, Schema(project_name), [file_id]) == 1
    assert store.summary(conn, Schema(project_name)).chunks == 0


def test_cached_embeddings_by_content_hash(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 3)
    store.upsert_file(conn, Schema(project_name), record(), [chunk(0, "a"), chunk(1, "b")])
    cached = store.cached_embeddings(conn, Schema(project_name), ["h-a", "h-zzz"])
    assert list(cached) == ["h-a"]
    assert [float(x) for x in cached["h-a"].to_list()] == [1.0, 1.0, 1.0]


def test_meta_round_trip(conn: Conn, project_name: str) -> None:
    store.ensure_project(conn, Schema(project_name))
    store.set_meta(conn, Schema(project_name), "embedding", {"model": "m", "dimension": 384})
    assert store.get_meta(conn, Schema(project_name), "embedding") == {
        "model": "m",
        "dimension": 384,
    }
    assert store.get_meta(conn, Schema(project_name), "missing") is None


def test_foreign_schema_is_never_listed_altered_or_dropped(conn: Conn) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS someone_elses")
    conn.execute("CREATE TABLE IF NOT EXISTS someone_elses.precious (x int)")
    conn.commit()
    try:
        assert "someone_elses" not in store.list_projects(conn)
        assert not store.project_exists(conn, Schema("someone_elses"))
        with pytest.raises(ForeignSchema, match="was not created by code-rag"):
            store.drop_project(conn, Schema("someone_elses"))
        with pytest.raises(ForeignSchema):
            store.ensure_project(conn, Schema("someone_elses"))
        conn.rollback()
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'someone_elses'"
        ).fetchall()
        assert tables == [("precious",)]
    finally:
        conn.rollback()
        conn.execute("DROP SCHEMA someone_elses CASCADE")
        conn.commit()


def test_missing_project_says_how_to_create_it(conn: Conn) -> None:
    with pytest.raises(ProjectNotFound, match=r"run `./bld scan nosuchproject`"):
        store.summary(conn, Schema("nosuchproject"))


@pytest.mark.parametrize(
    "hostile",
    [
        'x"; DROP SCHEMA public CASCADE; --',
        "public",
        "information_schema",
        "pg_catalog",
        "pg_temp",
        "Upper",
        "1abc",
        "a-b",
        "",
        "a" * 64,
        "naïve",
        "a b",
    ],
)
def test_hostile_project_names_are_refused_before_any_sql(hostile: str) -> None:
    # No connection is given: validation must fail before a statement could be composed.
    for call in (
        lambda: Schema(hostile).sql(statements.DROP_SCHEMA),
        lambda: store.drop_project(None, Schema(hostile)),  # type: ignore[arg-type]
        lambda: store.ensure_project(None, Schema(hostile)),  # type: ignore[arg-type]
        lambda: store.summary(None, Schema(hostile)),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidProjectName):
            call()


def test_a_database_opened_before_its_block_opens_once(database: Database) -> None:
    # `with Database(...).open() as db`, as the commands write it, makes one pool, not two.
    db = Database(database.dsn, database.data_dir).open()
    pool = db.pool
    with db as same:
        assert same.pool is pool
    assert db.pool is None


def test_opening_a_prepared_database_writes_nothing(database: Database) -> None:
    # Every command opens the database: what is already there is left alone (the shared
    # cache's steps rewrite the schema's marker), and a part that went missing is made again.
    def marker_version() -> str:
        with psycopg.connect(database.dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT xmin::text FROM pg_description"
                " WHERE objoid = to_regnamespace('\"code-rag\"')"
            ).fetchone()
        assert row is not None
        return str(row[0])

    before = marker_version()
    prepare_database(database.dsn)
    assert marker_version() == before
    with psycopg.connect(database.dsn, autocommit=True) as admin:
        admin.execute('DROP INDEX "code-rag".embedding_cache_used')
    prepare_database(database.dsn)
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        index = conn.execute("SELECT to_regclass('\"code-rag\".embedding_cache_used')")
        assert index.fetchone() == ('"code-rag".embedding_cache_used',)


def test_server_without_rights_to_enable_pgvector_says_what_to_do(database: Database) -> None:
    # A fresh database without the extension, reached as a role that may not create it.
    with psycopg.connect(database.dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS novector")
        admin.execute("DROP ROLE IF EXISTS plainuser")
        admin.execute("CREATE ROLE plainuser LOGIN")
        admin.execute("CREATE DATABASE novector OWNER plainuser")
    try:
        dsn = make_conninfo(database.dsn, dbname="novector", user="plainuser")
        with pytest.raises(
            PgvectorMissing, match=r"run `CREATE EXTENSION vector;` there as a superuser"
        ):
            prepare_database(dsn)
    finally:
        with psycopg.connect(database.dsn, autocommit=True) as admin:
            admin.execute("DROP DATABASE novector")
            admin.execute("DROP ROLE plainuser")


def test_interactive_reads_give_up_instead_of_hanging(database: Database) -> None:
    # A stuck statement on a read connection ends with a clear error, and the pooled
    # connection keeps no timeout afterwards (it was set for that transaction only).
    from indexer.db.database import mapped_errors
    from indexer.errors import DatabaseError

    with (
        pytest.raises(DatabaseError, match="PostgreSQL did not answer in time"),
        mapped_errors("searching"),
        database.reading(timeout_ms=200) as conn,
    ):
        conn.execute("SELECT pg_sleep(5)")
    with database.connection() as conn:
        assert conn.execute("SHOW statement_timeout").fetchone() == ("0",)


def _toasted_keywords(conn: Conn, project: str) -> tuple[int, int]:
    """(rows, rows whose keyword vector lives out of line in the TOAST table)."""
    row = conn.execute(
        Schema(project).sql(
            "SELECT count(*), count(*) FILTER (WHERE pg_column_toast_chunk_id(tsv) IS NOT NULL)"
            " FROM {schema}.rag_chunk",
        )
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def _keyword_statistics(conn: Conn, project: str) -> bool:
    row = conn.execute(
        "SELECT most_common_elems IS NOT NULL FROM pg_stats"
        " WHERE schemaname = %s AND tablename = 'rag_chunk' AND attname = 'tsv'",
        (project,),
    ).fetchone()
    return bool(row and row[0])


def test_keyword_vectors_stay_in_their_row_and_older_rows_are_moved_in(
    conn: Conn, project_name: str
) -> None:
    # Rows the size of real ones: 384-d vectors, a chunk of code, a hundred distinct terms.
    def sized(ordinal: int, file: int = 0) -> ChunkRow:
        words = [f"name{file}n{ordinal}x{i * 7919 % 10007}" for i in range(100)]
        return replace(
            chunk(ordinal, " ".join(words), dim=384),
            content="\n".join(f"    value_{i} = compute(value_{i - 1}, {i})" for i in range(40)),
            body_terms=" ".join(words),
        )

    store.ensure_project(conn, Schema(project_name))
    store.set_embedding_dimension(conn, Schema(project_name), 384)
    # Stage the layout of the previous release: keyword vectors moved out of line first, and
    # the HNSW graph built with pgvector's default options.
    conn.execute(
        Schema(project_name).sql(
            "ALTER TABLE {schema}.rag_chunk ALTER COLUMN tsv SET STORAGE EXTENDED"
        )
    )
    conn.execute(
        Schema(project_name).sql(
            "ALTER INDEX {schema}.rag_chunk_embedding_hnsw RESET (m, ef_construction)",
        )
    )
    conn.execute(
        Schema(project_name).sql(
            "DELETE FROM {schema}.rag_migration WHERE name = 'm006_search_layout'"
        )
    )
    store.upsert_file(conn, Schema(project_name), record(), [sized(i) for i in range(4)])
    conn.execute(Schema(project_name).sql("ANALYZE {schema}.rag_chunk"))
    conn.commit()
    assert _toasted_keywords(conn, project_name) == (4, 4)
    assert _keyword_statistics(conn, project_name)
    before = conn.execute(
        Schema(project_name).sql("SELECT id, tsv::text FROM {schema}.rag_chunk ORDER BY id")
    ).fetchall()

    hnsw = "SELECT pg_get_indexdef('{schema}.rag_chunk_embedding_hnsw'::regclass)"
    assert "ef_construction" not in conn.execute(Schema(project_name).sql(hnsw)).fetchone()[0]
    assert store.ensure_project(conn, Schema(project_name)) == ["m006_search_layout"]
    conn.commit()
    assert _toasted_keywords(conn, project_name) == (4, 0)
    assert _keyword_statistics(conn, project_name)  # the ranker's term rarities survive
    after = conn.execute(
        Schema(project_name).sql("SELECT id, tsv::text FROM {schema}.rag_chunk ORDER BY id")
    ).fetchall()
    assert after == before
    store.upsert_file(
        conn, Schema(project_name), record("src/b.py"), [sized(i, file=1) for i in range(2)]
    )
    conn.commit()
    assert _toasted_keywords(conn, project_name) == (6, 0)
    indexes = Schema(project_name).sql(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %(s)s"
    )
    definitions = {n: d for n, d in conn.execute(indexes, {"s": project_name})}
    assert {"rag_chunk_tsv", "rag_chunk_content_sha256"} <= definitions.keys()
    assert "ef_construction='200'" in definitions["rag_chunk_embedding_hnsw"]
