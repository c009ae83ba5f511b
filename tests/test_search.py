"""Hybrid search against the real database: identifier spellings meet, an exact symbol finds its
definition first, filters keep recall under HNSW iterative scans, overlapping chunks collapse,
and the keyword side stays bounded however common the query's words are."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from indexer import lexical
from indexer.db import Schema, lookup, queries, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import candidates, get_chunk, keyword, search_code
from indexer.search.filters import glob_to_regex
from indexer.search.fusion import Candidates, Ranking, fuse
from indexer.search.keyword import TermStats, keyword_plan, read_term_stats
from indexer.sweep import SweepOptions, sweep_project
from tests.fixed_vectors import DIM, FixedEmbedder
from tests.ollama_standin import OllamaStandin, ollama_standin

__all__ = ["ollama_standin"]

NO_FILTERS = {"repo": None, "language": None, "path_re": None}

Conn = psycopg.Connection[Any]


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def swept(database: Any, name: str, root: Path, standin: OllamaStandin) -> tuple[Project, Any]:
    project = Project(name, (Root(root, "app"),))
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", standin.url)
    sweep_project(database, project, embedder, SweepOptions())
    return project, embedder


def stored_project(
    conn: Conn, name: str, files: dict[str, list[tuple[int, int, str, Any]]]
) -> Project:
    """A project written straight through the store: {path: [(start, end, content, vector)]}."""
    store.ensure_project(conn, Schema(name))
    store.set_embedding_dimension(conn, Schema(name), DIM)
    store.set_meta(conn, Schema(name), "embedding", FixedEmbedder.identity.to_dict())
    for path, chunks in files.items():
        rows = [
            store.ChunkRow(
                ordinal=i,
                start_line=start,
                end_line=end,
                symbol=None,
                kind="window",
                content=content,
                content_sha256=hashlib.sha256(f"{path}{i}".encode()).hexdigest(),
                embedding=np.asarray(vector, dtype=np.float32),
                path_terms=lexical.path_terms_text(path),
                body_terms=lexical.terms_text(content),
            )
            for i, (start, end, content, vector) in enumerate(chunks)
        ]
        record = store.FileRecord(
            "app", path, 1, 1, hashlib.sha256(path.encode()).hexdigest(), "python"
        )
        store.upsert_file(conn, Schema(name), record, rows)
    conn.execute(psycopg.sql.SQL("ANALYZE {}").format(psycopg.sql.Identifier(name, "rag_chunk")))
    conn.commit()
    return Project(name, (Root(Path("/nowhere"), "app"),))


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM)
    return v / np.linalg.norm(v)


def test_identifier_spellings_meet_in_keyword_search(
    database: Any, conn: Conn, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    # camelCase, snake_case, kebab-case and plain words all find each other.
    root = work_dir / "src"
    write(root, "users.py", "def getUserById(uid):\n    return DB[uid]\n")
    write(root, "accounts.py", "def get_user_by_id(uid):\n    return ROWS[uid]\n")
    write(root, "routes.sh", "curl http://localhost/get-user-by-id/42\n")
    write(root, "other.py", "def list_orders(customer):\n    return []\n")
    project, embedder = swept(database, project_name, root, ollama_standin)
    for query in ("get user by id", "getUserById", "get_user_by_id", "get-user-by-id"):
        hits = search_code(database, project, embedder, query, mode="keyword", top_k=5)
        assert {h.path for h in hits} == {"users.py", "accounts.py", "routes.sh"}, query


def test_a_question_s_inflected_words_meet_the_code_s_forms(
    database: Any, conn: Conn, project_name: str
) -> None:
    # The keyword side alone (keyword mode, or no model): "views" meets `view`, "deleted"
    # meets `delete`; a chunk holding the word as asked ranks above one holding another form,
    # and without inflections neither is found. Beside the vector side it matches words only.
    rng = np.random.default_rng(5)
    files = {
        "lazy_view.py": [(1, 2, "class LazyView:\n    def delete(self): ...", unit(rng))],
        "views.py": [(1, 2, "VIEWS = {}\nDELETED = set()", unit(rng))],
        "other.py": [(1, 2, "def unrelated(): ...", unit(rng))],
    }
    project = stored_project(conn, project_name, files)
    hits = search_code(database, project, None, "views deleted", mode="keyword")
    assert [h.path for h in hits] == ["views.py", "lazy_view.py"]
    plain = replace(Ranking(), inflections_alone=False)
    hits = search_code(database, project, None, "view delete", mode="keyword", ranking=plain)
    assert [h.path for h in hits] == ["lazy_view.py"]
    assert not Ranking().inflections and Ranking().alone().inflections
    assert not plain.alone().inflections


def test_the_keyword_side_alone_weighs_the_code_s_words_more(
    database: Any, conn: Conn, project_name: str
) -> None:
    # Alone (keyword mode, or no model), a chunk whose code uses both of the question's words
    # again and again ranks above one that only has a word in its file name; beside the
    # vectors, which read the code already, the keyword side weighs names and paths as before.
    rng = np.random.default_rng(6)
    body = "\n".join(["total = ledger + balance", "ledger = balance - total"] * 3)
    files = {
        "accounts/ledger_tool.py": [(1, 2, "ready = balance is None", unit(rng))],
        "accounts/sums.py": [(1, 6, body, unit(rng))],
        "accounts/other.py": [(1, 2, "def unrelated(): ...", unit(rng))],
    }
    project = stored_project(conn, project_name, files)
    hits = search_code(database, project, None, "ledger balance", mode="keyword")
    assert [h.path for h in hits] == ["accounts/sums.py", "accounts/ledger_tool.py"]
    before = replace(Ranking(), field_weights_alone=Ranking().field_weights)
    hits = search_code(database, project, None, "ledger balance", mode="keyword", ranking=before)
    assert [h.path for h in hits] == ["accounts/ledger_tool.py", "accounts/sums.py"]
    assert Ranking().weights == Ranking().field_weights
    assert Ranking().alone().weights == Ranking().field_weights_alone


def test_a_function_word_the_query_writes_as_a_name_finds_it(
    database: Any, conn: Conn, project_name: str
) -> None:
    # "either" is a function word and dropped from prose; "like an Either" names a type.
    rng = np.random.default_rng(7)
    files = {
        "core/Either.swift": [(1, 3, "public struct Either<A, B> { let value: Any }", unit(rng))],
        "types/Dynamic.swift": [(1, 2, "func argument(type: Any) -> Any { value }", unit(rng))],
    }
    project = stored_project(conn, project_name, files)
    hits = search_code(database, project, None, "an argument like an Either", mode="keyword")
    assert hits[0].path == "core/Either.swift"
    hits = search_code(database, project, None, "an argument like either", mode="keyword")
    assert [h.path for h in hits] == ["types/Dynamic.swift"]


def test_exact_symbol_query_finds_its_definition_first(
    database: Any, conn: Conn, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    # Many callers mention the name more often than its definition does; the definition wins.
    root = work_dir / "src"
    write(root, "net/retry.py", "def retry_with_backoff(fn, tries=3):\n    return fn()\n")
    for i in range(8):
        write(
            root,
            f"callers/c{i}.py",
            f"def caller_{i}():\n"
            + "    retry_with_backoff(job)\n" * 5
            + "    # retry_with_backoff retries with backoff\n",
        )
    # Small definitions are merged into one chunk, named after the class or a neighbour.
    write(root, "billing.py", "class Invoice:\n    def total(self):\n        return 1\n")
    write(root, "text.py", "def slugify(s):\n    return s\n\n\ndef titlecase(s):\n    return s\n")
    project, embedder = swept(database, project_name, root, ollama_standin)
    for mode in ("hybrid", "keyword", "vector"):
        hits = search_code(database, project, embedder, "retry_with_backoff", mode=mode)
        assert (hits[0].path, hits[0].symbol) == ("net/retry.py", "retry_with_backoff"), mode
    hits = search_code(database, project, embedder, "Invoice.total")
    assert (hits[0].path, hits[0].symbol) == ("billing.py", "Invoice")
    assert hits[0].start_line <= 2 <= hits[0].end_line
    hits = search_code(database, project, embedder, "titlecase")
    assert hits[0].path == "text.py" and hits[0].start_line <= 5 <= hits[0].end_line


def test_a_filter_matching_one_percent_of_rows_still_returns_top_k(
    conn: Conn, project_name: str
) -> None:
    # 2,000 chunks, 20 of them under special/: the HNSW scan keeps going until top_k pass the
    # filter (iterative scans), where a post-filtered candidate list would hold about one.
    rng = np.random.default_rng(7)
    files = {f"common/m{i}.py": [(1, 5, f"value {i}", unit(rng))] for i in range(1980)}
    files.update({f"special/s{i}.py": [(1, 5, f"value {i}", unit(rng))] for i in range(20)})
    project = stored_project(conn, project_name, files)
    embedder = FixedEmbedder(unit(rng))
    # The planner must take the HNSW index here (on its own it filters files first, exactly).
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_sort = off")
    try:
        filters = {"repo": None, "language": None, "path_re": glob_to_regex("special/**")}
        schema = Schema(project.name)
        with conn.transaction():
            found = candidates.nearest(
                conn,
                schema,
                embedder.query_vector,
                filters,
                Ranking(vector_depth=10),
                40,
                iterative_scan=True,
            )
            ids = [r.chunk_id for r in found]
            paths = [c.path for c in lookup.chunks_by_id(conn, schema, ids).values()]
        assert len(ids) == 10 and all(p.startswith("special/") for p in paths)
        # Control: the same index scan without iterative scans loses most of them.
        with conn.transaction():
            conn.execute(queries.SET_EF_SEARCH, {"ef": "40"})
            conn.execute("SELECT set_config('hnsw.iterative_scan', 'off', true)")
            rows = conn.execute(
                Schema(project_name).sql(queries.VECTOR_CANDIDATES),
                {
                    "repo": None,
                    "language": None,
                    "path_re": glob_to_regex("special/**"),
                    "vector": np.asarray(embedder.query_vector, dtype=np.float32),
                    "limit": 10,
                },
            ).fetchall()
        assert len(rows) < 10
    finally:
        conn.execute("RESET enable_seqscan")
        conn.execute("RESET enable_sort")


def test_overlapping_chunks_of_one_file_collapse_into_the_best(
    database: Any, conn: Conn, project_name: str
) -> None:
    # Line windows overlap by design; one region of a file is one hit, other regions stay.
    rng = np.random.default_rng(3)
    q = unit(rng)
    files = {
        "big.py": [
            (1, 60, "tax rate tax rate", q),
            (51, 110, "tax rate", q * 0.9 + unit(rng) * 0.1),
            (200, 230, "tax rate", q * 0.8 + unit(rng) * 0.2),
        ],
        "small.py": [(1, 10, "tax", unit(rng))],
    }
    project = stored_project(conn, project_name, files)
    for mode in ("hybrid", "keyword", "vector"):
        search = partial(search_code, database, project, FixedEmbedder(q), "tax rate", mode=mode)
        hits = search(top_k=10, by_file=False)
        big = sorted((h.start_line, h.end_line) for h in hits if h.path == "big.py")
        assert big in ([(1, 60), (200, 230)], [(51, 110), (200, 230)]), mode
        assert len(hits) == 3, mode
        # By file (the default) the same two regions: one the hit, the other its `also`.
        files = search(top_k=10)
        [hit] = [h for h in files if h.path == "big.py"]
        ranges = [(hit.start_line, hit.end_line), *((a.start_line, a.end_line) for a in hit.also)]
        assert sorted(ranges) == big, mode
        assert len(files) == 2, mode


def test_keyword_side_matches_only_rare_terms_and_ranks_a_bounded_set(
    database: Any, conn: Conn, project_name: str
) -> None:
    # 600 chunks all hold "value" and "data"; 5 hold "checksum". With a budget of 100 rows the
    # match is decided by "checksum" alone; a query of only common words still answers, ranking
    # at most max_ranked rows.
    rng = np.random.default_rng(11)
    files = {
        f"m{i}.py": [(1, 3, "value data value" + (" checksum" if i < 5 else ""), unit(rng))]
        for i in range(600)
    }
    project = stored_project(conn, project_name, files)
    ranking = Ranking(match_rows=100, max_ranked=50)
    stats = read_term_stats(conn, Schema(project_name))
    assert stats.known and stats.shares["value"] == pytest.approx(1.0)
    plan = keyword_plan(["value", "data", "checksum"], stats, ranking)
    assert plan.match_terms == ("checksum",)
    assert plan.idfs[2] > plan.idfs[0]
    hits = search_code(
        database, project, None, "value data checksum", mode="keyword", ranking=ranking, top_k=5
    )
    assert {h.path for h in hits} == {f"m{i}.py" for i in range(5)}
    # Asked for more files than the rare term is in, the match widens to every term: the
    # answer holds the ten asked for, the rare term's files first.
    hits = search_code(
        database, project, None, "value data checksum", mode="keyword", ranking=ranking
    )
    assert len(hits) == 10
    assert {h.path for h in hits[:5]} == {f"m{i}.py" for i in range(5)}
    with conn.transaction():
        schema = Schema(project_name)
        narrow = keyword.keyword_candidates(
            conn, schema, "value data checksum", NO_FILTERS, ranking, files=5
        )
        wide = keyword.keyword_candidates(
            conn, schema, "value data checksum", NO_FILTERS, ranking, files=6
        )
        assert {r.path for r in narrow} == {f"m{i}.py" for i in range(5)}
        assert len({r.file_id for r in wide}) > 5

    # The statement reads its rows through the GIN index and puts the planner back after.
    with conn.transaction():
        found = keyword.keyword_candidates(
            conn, Schema(project_name), "checksum", NO_FILTERS, ranking
        )
        assert len(found) == 5
        assert conn.execute("SELECT current_setting('enable_seqscan')").fetchone() == ("on",)

    common = keyword_plan(["value", "data"], stats, ranking)
    assert len(common.match_terms) == 1  # the rarest term always matches, alone
    hits = search_code(
        database, project, None, "value data", mode="keyword", ranking=ranking, top_k=10
    )
    assert len(hits) == 10
    # The plan: however many rows match, the rows ranked stop at max_ranked.
    plan_json = conn.execute(
        psycopg.sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ")
        + Schema(project_name).sql(queries.keyword_candidates_idf(2)),
        {
            "repo": None,
            "language": None,
            "path_re": None,
            "weights": list(ranking.field_weights),
            "term_queries": ["'value'", "'data'"],
            "idfs": [1.0, 1.0],
            "tsquery": "'value'",
            "max_ranked": ranking.max_ranked,
            "limit": 30,
        },
    ).fetchone()[0]
    conn.rollback()
    ranked = _subquery_rows(plan_json[0]["Plan"])
    assert ranked == ranking.max_ranked


def _subquery_rows(node: dict[str, Any]) -> int:
    """Rows out of the innermost LIMIT (the rows that got a score)."""
    deepest = -1
    for child in node.get("Plans", []):
        deepest = max(deepest, _subquery_rows(child))
    if deepest < 0 and node.get("Node Type") == "Limit":
        return int(node["Actual Rows"])
    return deepest


def test_keyword_plan_without_statistics_matches_every_term() -> None:
    plan = keyword_plan(["a1", "b2"], TermStats(-1.0, {}, 0.0), Ranking())
    assert plan.match_terms == ("a1", "b2") and plan.idfs == (1.0, 1.0)


def test_fusion_cuts_each_list_at_its_depth_and_puts_exact_matches_first() -> None:
    c = Candidates(
        vector=[1, 2, 3],
        keyword=[3, 4],
        exact=[9],
        vector_scores=[0.9, 0.8, 0.7],
        keyword_scores=[2.0, 1.0],
    )
    scores = fuse(c, Ranking(vector_depth=2))
    assert scores[3] == pytest.approx(0.45)  # vector rank 3 cut by depth: its keyword score only
    assert scores[4] == pytest.approx(0.45 * 0.5)
    assert max(scores, key=scores.__getitem__) == 9


_ = json


def test_windows_of_a_long_definition_collapse_into_one_hit_from_its_signature(
    database: Any, conn: Conn, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    # A definition too long for one chunk is windowed; a query matching only its last window
    # gets one hit for the whole definition, from its signature, ranked by that window; the
    # windows holding the signature and the middle do not come back as hits of their own.
    root = work_dir / "src"
    body = "".join(f"    step_{i} = advance(step_{i - 1}, amount={i})\n" for i in range(1, 80))
    tail = "    ledger.reconcile_overdraft(step_79)\n    return step_79\n"
    write(root, "engine.py", "import os\n\n\ndef run_engine(step_0):\n" + body + tail)
    write(root, "other.py", "def audit(books):\n    return books\n")
    project, embedder = swept(database, project_name, root, ollama_standin)
    windows = conn.execute(
        psycopg.sql.SQL("SELECT start_line, end_line FROM {} WHERE symbol = 'run_engine'").format(
            psycopg.sql.Identifier(project_name, "rag_chunk")
        )
    ).fetchall()
    conn.rollback()
    assert len(windows) >= 2  # the definition really is split
    for mode in ("keyword", "hybrid"):
        hits = search_code(database, project, embedder, "reconcile overdraft", mode=mode)
        engine = [h for h in hits if h.path == "engine.py"]
        assert len(engine) == 1, mode
        hit = engine[0]
        assert (hit.start_line, hit.end_line, hit.symbol) == (4, 85, "run_engine"), mode
        assert hit.snippet.startswith("def run_engine(step_0):"), mode
        assert hit.symbols == ["run_engine"], mode
        # The chunk id is the window holding the signature: get_chunk reads from there.
        view = get_chunk(database, project, hit.chunk_id)
        assert view.start_line <= 4 <= view.end_line < 85 and "def run_engine" in view.text, mode
        if mode == "keyword":
            assert hits[0] == hit  # ranked by its best window, which alone holds "overdraft"


def test_score_fusion_keeps_a_clear_vector_lead_and_normalises_each_list() -> None:
    # The vector side's first is far nearer than the rest; the keyword side ranks 20 others
    # first. Score fusion keeps it first (where counting ranks would let chunks found by both
    # overtake it), and a chunk's score is its normalised scores weighted by the vector
    # side's share.
    shared = list(range(100, 120))
    c = Candidates(
        vector=[7, *shared],
        keyword=shared,
        vector_scores=[0.9, *(0.5 - i / 1000 for i in range(20))],
        keyword_scores=[4.0 - i / 10 for i in range(20)],
    )
    ranking = Ranking(vector_share=0.6)
    by_score = fuse(c, ranking)
    assert max(by_score, key=lambda cid: (by_score[cid], -cid)) == 7
    assert by_score[7] == pytest.approx(0.6)  # the best cosine: 1 after min-max, no keyword
    assert by_score[100] == pytest.approx(0.6 * (0.5 - 0.481) / (0.9 - 0.481) + 0.4)
    assert by_score[119] == pytest.approx(0.4 * (4.0 - 1.9) / 4.0)  # the worst cosine: 0
    # One side alone keeps its order; a list of equal scores counts all as its best.
    alone = fuse(replace(c, keyword=[], keyword_scores=[]), ranking)
    assert sorted(alone, key=lambda cid: -alone[cid]) == [7, *shared]
    flat = fuse(Candidates(vector=[1, 2], vector_scores=[0.3, 0.3]), ranking)
    assert flat == {1: pytest.approx(0.6), 2: pytest.approx(0.6)}
    with pytest.raises(ValueError, match="scores beside its ids"):
        fuse(Candidates(vector=[1, 2]), ranking)


def test_a_file_counts_its_best_chunk_on_each_side_among_the_first_files() -> None:
    # File B's best vector chunk (2) and best keyword chunk (3) differ; file A has one chunk
    # both sides like (1). By chunk A leads; by file B's own fused score (both its bests)
    # takes it half the way there and B leads. File E, outside the first two files, keeps
    # its place: files are reordered among the first top_k, never brought into them.
    c = Candidates(
        vector=[2, 1, 4, 6, 5],
        vector_scores=[0.9, 0.8, 0.5, 0.45, 0.4],
        keyword=[3, 1, 7, 5],
        keyword_scores=[10.0, 7.0, 3.0, 2.0],
    )
    file_of = {1: "a", 2: "b", 3: "b", 4: "c", 5: "d", 6: "e", 7: "e"}
    ranking = Ranking(vector_share=0.55, file_fusion=0.5)
    plain = fuse(c, ranking)
    assert plain[1] > plain[2] > plain[3]
    by_file = fuse(c, ranking, file_of=file_of, top_k=2)
    assert by_file[2] == pytest.approx(plain[2] + 0.5 * (0.55 + 0.45 - plain[2]))
    assert by_file[2] > by_file[1] == pytest.approx(plain[1])  # A's chunk is its own best
    assert by_file[3] == pytest.approx(plain[3])  # only a file's best chunk moves
    assert by_file[7] == pytest.approx(plain[7])  # E is not among the first two files
    wider = fuse(c, ranking, file_of=file_of, top_k=10)
    assert wider[7] > plain[7]
    assert fuse(c, replace(ranking, file_fusion=0.0), file_of=file_of, top_k=2) == plain
    # A file that is not code counts its own score demoted too.
    demoted = fuse(c, ranking, {2, 3}, file_of, 2)
    assert demoted[2] == pytest.approx(0.3 * (plain[2] + 0.5 * (1.0 - plain[2])))


def test_a_deeper_vector_list_never_reorders_the_first_hits() -> None:
    # A larger top_k asks each ranker for more candidates: the extra ones score below 0 on the
    # vector side, and every score of the default depth's candidates stays as it was.
    rng = np.random.default_rng(3)
    cosines = sorted(rng.uniform(0.2, 0.8, 90), reverse=True)
    keyword = [int(i) for i in rng.permutation(120)[:60]]
    deep = Candidates(
        vector=list(range(90)),
        vector_scores=cosines,
        keyword=keyword,
        keyword_scores=sorted(rng.uniform(0.5, 9.0, 60), reverse=True),
    )
    shallow = fuse(deep, Ranking(vector_depth=30))
    deeper = fuse(deep, Ranking(vector_depth=90))
    extra = set(range(30, 90))
    for cid, score in shallow.items():
        if cid in extra:  # only the keyword side had it: it lost ground
            assert deeper[cid] < score
        else:
            assert deeper[cid] == pytest.approx(score)
    order = sorted(deeper, key=lambda cid: (-deeper[cid], cid))
    assert order[:10] == sorted(shallow, key=lambda cid: (-shallow[cid], cid))[:10]


@pytest.mark.parametrize(
    ("query", "embedded"),
    [
        ("where is the retry delay computed", "the retry delay computed"),
        ("How do I parse an ISO date", "parse an ISO date"),
        ("where does a request get cancelled", "a request get cancelled"),
        ("what can we cache per host", "cache per host"),
        ("how is it done", "how is it done"),  # fewer than three words would remain
        ("where it is computed", "where it is computed"),  # no question's opening
        ("retry delay", "retry delay"),
        ("When rotating, rotate the current log.", "When rotating, rotate the current log."),
    ],
)
def test_a_questions_opening_is_left_out_of_what_the_vector_side_embeds(
    query: str, embedded: str
) -> None:
    assert candidates.vector_query(query) == embedded


def test_search_embeds_a_question_without_its_opening(
    database: Any, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    root = work_dir / "src"
    write(root, "retry.py", "def backoff(attempt):\n    return 2 ** attempt\n")
    project, embedder = swept(database, project_name, root, ollama_standin)
    ollama_standin.batches.clear()
    hits = search_code(database, project, embedder, "where is the retry delay computed")
    assert hits and hits[0].path == "retry.py"
    assert ollama_standin.batches == [["search_query: the retry delay computed"]]
