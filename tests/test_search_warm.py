"""The first searches after a start run as later ones do: the vector side walks the HNSW graphs
whatever the planner reckons (it would scan and sort every vector of a small table), and a
start reads each project's search indexes into PostgreSQL's buffers before the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from ollama_standin import OllamaStandin, ollama_standin
from server_fixtures import server_settings, standin_embedder

from indexer.db import Database, Schema, lookup
from rag_server.service import Service
from tests.test_search_execution import CountingEmbedder, corpus

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
GRAPHS = ("rag_chunk_embedding_hnsw", "rag_symbol_embedding_hnsw")
NO_FILTERS = {"repo": None, "language": None, "path_re": None}
BUFFERED = """
SELECT count(*) FROM pg_buffercache b
  JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)
 WHERE c.oid = %s
   AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def graph_scans(conn: Conn, schema: Schema) -> dict[str, int]:
    """How often each vector graph of `schema` was scanned, as the statistics have it now."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    rows = conn.execute(
        "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes "
        "WHERE schemaname = %s AND indexrelname = ANY(%s)",
        (schema.name, list(GRAPHS)),
    ).fetchall()
    conn.rollback()
    return {str(name): int(count) for name, count in rows}


def test_the_vector_side_walks_both_graphs_where_the_planner_would_scan_every_vector(
    database: Database, conn: Conn, project_name: str
) -> None:
    # On 120 chunks the planner would scan and sort every vector; on the definitions' table of a
    # 25,000-chunk project with 768-d vectors (in TOAST, which it does not cost) it did too, at
    # a second a search. The vector statement walks both graphs, and the rest of its
    # transaction is planned as usual.
    project = corpus(conn, project_name)
    schema = Schema(project.name)
    before = graph_scans(conn, schema)
    vector = np.asarray(CountingEmbedder().embed_query("parse the order"), dtype=np.float32)
    with database.reading() as reader:
        with reader.transaction():
            found = lookup.vector_candidates(
                reader, schema, vector, NO_FILTERS, 30, 40, iterative_scan=False
            )
            settings = reader.execute(
                "SELECT current_setting('enable_seqscan'), current_setting('enable_sort')"
            ).fetchone()
        reader.execute("SELECT pg_stat_force_next_flush()")
        reader.commit()
    assert len(found) == 30
    assert settings == ("on", "on")
    after = graph_scans(conn, schema)
    for _ in range(200):  # the statistics arrive when the reading session is idle
        if all(after[g] > before[g] for g in GRAPHS):
            break
        after = graph_scans(conn, schema)
    assert {g: after[g] - before[g] for g in GRAPHS} == dict.fromkeys(GRAPHS, 1)


def test_warming_up_reads_every_projects_graphs_and_keyword_index_into_the_buffers(
    database: Database,
    conn: Conn,
    project_name: str,
    work_dir: Path,
    ollama_standin: OllamaStandin,
) -> None:
    project = corpus(conn, project_name)
    with database.reading() as reader:
        relations = lookup.warm_relations(reader, Schema(project.name))
        reader.rollback()
    assert [name for _, name, _ in relations] == [*GRAPHS, "rag_chunk_tsv"]
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
    for oid, _, _ in relations:  # as after a start: none of their blocks in the buffers
        conn.execute("SELECT pg_buffercache_evict_relation(%s::oid::regclass)", (oid,))
    conn.commit()
    assert buffered(conn, relations) == [0, 0, 0]
    settings = server_settings(work_dir, {project.name: project}, ollama_standin, database.dsn)
    service = Service(settings, database, standin_embedder(ollama_standin))
    try:
        assert service.warm_up() == sum(size for _, _, size in relations) > 0
    finally:
        service.close()
    assert buffered(conn, relations) == [size // 8192 for _, _, size in relations]


def buffered(conn: Conn, relations: list[tuple[int, str, int]]) -> list[int]:
    """How many blocks of each relation are in PostgreSQL's shared buffers."""
    found = [
        int(
            conn.execute(
                BUFFERED,
                (oid,),
            ).fetchone()[0]  # type: ignore[index]
        )
        for oid, _, _ in relations
    ]
    conn.rollback()
    return found
