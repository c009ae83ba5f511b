"""How a search is executed, against the real database: the two sides run at once and give the
same hits as one after the other; a full pool never deadlocks searches; an error on either side
reaches the caller with every connection back in the pool; repeated queries reuse their vector."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from indexer.db import Database, Schema, lookup
from indexer.embed import EmbedBatchResult, EmbeddingModel
from indexer.errors import ModelMismatch
from indexer.search import QueryVectorCache, candidates, parts, search_code
from indexer.search.filters import Filters
from indexer.search.fusion import DEFAULT_RANKING, collapse, fuse, ordered, scored, shortlist
from indexer.search.roles import PathRoles
from tests.test_search import DIM, FixedEmbedder, stored_project, unit

Conn = psycopg.Connection[Any]


class CountingEmbedder:
    """A fixed query vector per text (seeded by the text), counting the model's calls."""

    def __init__(self, identity: EmbeddingModel = FixedEmbedder.identity) -> None:
        self.identity = identity
        self.calls: list[str] = []

    def embed_documents(self, texts: Any, labels: Any = None) -> EmbedBatchResult:
        raise AssertionError("not used")

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        rng = np.random.default_rng(sum(text.encode()))
        return [float(v) for v in unit(rng)]

    def close(self) -> None:
        pass


def corpus(conn: Conn, name: str) -> Any:
    """60 files of two chunks each: words shared by some, one rare identifier, one symbol."""
    rng = np.random.default_rng(11)
    files: dict[str, list[tuple[int, int, str, Any]]] = {}
    for i in range(60):
        body = f"def handler_{i}(request):\n    return parse_order(request, {i})\n"
        extra = "    retry_with_backoff(request)\n" if i % 7 == 0 else ""
        files[f"pkg/m{i}.py"] = [
            (1, 3, body + extra, unit(rng)),
            (5, 8, f"class Invoice{i}:\n    total = {i}\n", unit(rng)),
        ]
    return stored_project(conn, name, files)


def sequential_hits(
    database: Database, project: Any, vector: list[float], query: str, top_k: int = 10
) -> list[int]:
    """The same search, both sides one after the other on one connection."""
    ranking = DEFAULT_RANKING.deep_enough(top_k * 3)
    filters = Filters().params()
    schema = Schema(project.name)
    with database.reading() as conn, conn.transaction():
        ids, similarities = scored(
            candidates.nearest(
                conn,
                schema,
                vector,
                filters,
                ranking,
                candidates.DEFAULT_EF_SEARCH,
                database.iterative_scan,
            )
        )
        others = parts.other_candidates(conn, [parts.Part(0, schema, filters)], query, ranking)
        found = replace(others, vector=ids, vector_scores=similarities)
        scores = fuse(found, ranking)
        best = shortlist(scores, top_k)
        details, pieces = candidates.shaping_rows(conn, schema, best)
        demoted = PathRoles().demoted_chunks(details.values(), query)
        best = ordered(best, fuse(found, ranking, demoted))
    return [hit.row.chunk_id for hit in collapse([[c] for c in best], details, top_k, pieces)]


QUERIES = ("parse the order of a request", "retry_with_backoff", "Invoice7", "total invoice")


def test_concurrent_sides_give_the_hits_of_sequential_ones(
    database: Database, conn: Conn, project_name: str
) -> None:
    # Keyword, exact-symbol and verbatim lists come from a second connection while the vector
    # side runs: the fused order is exactly the one-connection order, for every kind of query.
    # Compared by chunk, the order `sequential_hits` builds.
    project = corpus(conn, project_name)
    embedder = CountingEmbedder()
    for query in QUERIES:
        hits = search_code(database, project, embedder, query, by_file=False)
        vector = embedder.embed_query(query)
        assert [h.chunk_id for h in hits] == sequential_hits(database, project, vector, query)
        assert hits, query


def test_a_pool_of_one_connection_serves_concurrent_searches(
    database: Database, conn: Conn, project_name: str, work_dir: Path
) -> None:
    # Each search uses two connections; with a single pooled connection and four searches at
    # once, none may hold a connection while waiting for another: all finish, none time out.
    project = corpus(conn, project_name)
    small = Database(database.dsn, work_dir, max_size=1, pool_timeout_s=30).open()
    try:
        embedder = CountingEmbedder()
        expected = {
            q: [h.chunk_id for h in search_code(small, project, embedder, q)] for q in QUERIES
        }
        results: dict[tuple[int, str], list[int]] = {}
        errors: list[BaseException] = []

        def client(n: int) -> None:
            try:
                for query in QUERIES:
                    hits = search_code(small, project, embedder, query)
                    results[(n, query)] = [h.chunk_id for h in hits]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert all(results[(n, q)] == expected[q] for n in range(4) for q in QUERIES)
    finally:
        small.close()


def test_a_model_mismatch_is_reported_and_every_connection_comes_back(
    database: Database, conn: Conn, project_name: str, work_dir: Path
) -> None:
    # The index was built by another model: the caller gets the clear mismatch error (not a
    # dimension error from the vector query), and the keyword side's connection is returned.
    project = corpus(conn, project_name)
    other = CountingEmbedder(EmbeddingModel("test", "another", DIM))
    pooled = Database(database.dsn, work_dir, max_size=2).open()
    try:
        with pytest.raises(ModelMismatch):
            search_code(pooled, project, other, "parse the order")
        assert pooled.pool is not None
        # A connection the pool grew for the second side may still be settling in: poll.
        for _ in range(100):
            stats = pooled.pool.get_stats()
            if stats["pool_available"] == stats["pool_size"]:
                break
            time.sleep(0.1)
        assert stats["pool_available"] == stats["pool_size"], stats
        # The pool still serves: a keyword search needs no model.
        assert search_code(pooled, project, other, "parse order", mode="keyword")
    finally:
        pooled.close()


def test_repeated_queries_reuse_their_vector(
    database: Database, conn: Conn, project_name: str
) -> None:
    # The second identical query skips the model and returns the same hits; another text or
    # another model is embedded afresh.
    project = corpus(conn, project_name)
    cache = QueryVectorCache()
    embedder = CountingEmbedder()
    first = search_code(database, project, embedder, "parse the order", query_vectors=cache)
    again = search_code(database, project, embedder, "parse the order", query_vectors=cache)
    assert embedder.calls == ["parse the order"]
    assert [h.chunk_id for h in again] == [h.chunk_id for h in first]
    search_code(database, project, embedder, "total invoice", query_vectors=cache)
    assert embedder.calls == ["parse the order", "total invoice"]
    renamed = CountingEmbedder(EmbeddingModel("test", "renamed", DIM))
    assert cache.vector(renamed, "parse the order") == renamed.embed_query("parse the order")
    assert len(renamed.calls) == 2 and cache.hits == 1 and cache.misses == 3


def test_the_query_cache_drops_the_least_recently_used() -> None:
    cache = QueryVectorCache(size=2)
    embedder = CountingEmbedder()
    cache.vector(embedder, "a")
    cache.vector(embedder, "b")
    cache.vector(embedder, "a")  # "a" is now the most recent
    cache.vector(embedder, "c")  # drops "b"
    cache.vector(embedder, "a")
    cache.vector(embedder, "b")
    assert embedder.calls == ["a", "b", "c", "b"] and len(cache) == 2
    with pytest.raises(ValueError):
        QueryVectorCache(size=0)


def test_the_vector_statement_is_planned_with_its_values_every_time(
    database: Database, conn: Conn, project_name: str
) -> None:
    # A prepared vector statement would switch to PostgreSQL's generic plan after a few runs,
    # which sorts every chunk by distance instead of walking the HNSW index: it is never
    # prepared, however often one connection runs it.
    project = corpus(conn, project_name)
    embedder = CountingEmbedder()
    filters = {"repo": None, "language": None, "path_re": None}
    with database.reading() as reader, reader.transaction():
        for n in range(12):
            vector = np.asarray(embedder.embed_query(f"query {n}"), dtype=np.float32)
            assert lookup.vector_candidates(
                reader, Schema(project.name), vector, filters, 30, 40, iterative_scan=False
            )
        prepared = reader.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    assert not [s for (s,) in prepared if "embedding <=>" in s]
