"""What a file is for, from its path, and how search ranks the files that are not code: the
defaults for the usual layouts, a project's own globs (`code` winning), the words by which a
query asks for tests or docs, and search over a real index putting code first unless asked."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from indexer.project import Project, Root
from indexer.search import search_code
from indexer.search.fusion import Candidates, Ranking, fuse
from indexer.search.roles import (
    DOCS,
    EXAMPLE,
    GENERATED,
    STUB,
    TEST,
    VENDORED,
    PathRoles,
    asked,
    default_role,
)
from indexer.sweep import SweepOptions, sweep_project
from tests.ollama_standin import OllamaStandin, ollama_standin
from tests.test_search import swept, write

__all__ = ["ollama_standin"]


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("src/retry.py", None),
        ("lib/sidekiq/testing.rb", None),  # a module named testing, not a test folder
        ("src/latest.py", None),
        ("CMakeLists.txt", None),
        ("tests/test_retry.py", TEST),
        ("test_retry.py", TEST),
        ("pkg/retry_test.go", TEST),
        ("spec/retry_spec.rb", TEST),
        ("src/retry.test.ts", TEST),
        ("src/test/java/app/RetryTest.java", TEST),
        ("Tests/RetryTests/Policy.swift", TEST),
        ("App.Tests/RetryFacts.cs", TEST),
        ("conftest.py", TEST),
        ("README.md", DOCS),
        ("docs/guide/retry.py", DOCS),
        ("CHANGELOG", DOCS),
        ("notes.rst", DOCS),
        ("examples/retry.rs", EXAMPLE),
        ("benches/retry.rs", EXAMPLE),
        ("vendor/github.com/x/retry.go", VENDORED),
        ("static/app.min.js", VENDORED),
        ("api/retry_pb2.py", GENERATED),
        ("api/retry.pb.go", GENERATED),
        ("types/retry.d.ts", STUB),
        ("retry.pyi", STUB),
    ],
)
def test_default_roles_of_the_usual_layouts(path: str, role: str | None) -> None:
    assert default_role(path) == role


def test_a_query_asks_for_tests_docs_or_examples_by_name() -> None:
    assert asked("where are the unit tests of the retry policy") == {TEST}
    assert asked("an example of retrying, and its docs") == {EXAMPLE, DOCS}
    assert asked("how does the client retry with backoff") == set()
    assert asked("the generated protobuf messages") == {GENERATED}


def test_a_projects_globs_add_tests_and_docs_and_code_wins() -> None:
    project = Project(
        "app",
        (Root(Path("/nowhere"), "app"),),
        tests=("qa/**",),
        docs=("handbook/",),
        code=("tests/fixtures_lib/**",),
    )
    roles = PathRoles.of(project)
    assert roles.role("qa/retry_check.py") == TEST
    assert roles.role("handbook/retry.py") == DOCS
    assert roles.role("tests/fixtures_lib/retry.py") is None
    assert roles.role("tests/test_retry.py") == TEST
    assert roles.role("src/retry.py") is None
    paths = {"qa/retry_check.py", "src/retry.py", "README.md"}
    assert roles.demoted(paths, "retry delay") == {"qa/retry_check.py", "README.md"}
    assert roles.demoted(paths, "tests of the retry delay") == {"README.md"}


def test_fusion_multiplies_demoted_chunks_and_does_not_lift_them_for_a_verbatim_name() -> None:
    found = Candidates(
        vector=[1, 2], keyword=[2, 1], verbatim=[2], vector_scores=[0.9, 0.8], keyword_scores=[1, 1]
    )
    # Vector side (share 0.55, min-max): 1 -> 1.0, 2 -> 0.0; keyword side (0.45): both 1.0.
    plain = fuse(found, Ranking())
    assert plain[1] == pytest.approx(1.0)
    assert plain[2] > plain[1]  # it holds an identifier of the query verbatim: lifted
    demoted = fuse(found, Ranking(), {2})
    assert demoted[1] == pytest.approx(1.0)
    assert demoted[2] == pytest.approx(0.45 * 0.3)
    assert fuse(found, Ranking(demote=0.5), {1})[1] == pytest.approx(0.5)


RETRY = (
    "def retry_delay(attempt):\n"
    "    # the backoff delay before the next retry\n"
    "    return 2 ** attempt\n"
)
TEST_FILE = (
    "def test_retry_delay_doubles():\n"
    + "    # retry backoff delay retry backoff delay\n" * 4
    + "    assert retry_delay(2) == 4\n"
)
README = "# Retries\n\n" + "The retry backoff delay doubles with each retry.\n" * 6


def sample(root: Path) -> None:
    write(root, "src/retry.py", RETRY)
    write(root, "tests/test_retry.py", TEST_FILE)
    write(root, "README.md", README)


def test_search_puts_code_above_tests_and_docs_unless_the_query_asks(
    database: Any, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    root = work_dir / "src"
    sample(root)
    project, embedder = swept(database, project_name, root, ollama_standin)
    hits = search_code(database, project, embedder, "retry backoff delay", mode="keyword")
    assert hits[0].path == "src/retry.py"
    assert {h.path for h in hits} >= {"tests/test_retry.py", "README.md"}
    asked_for = search_code(
        database, project, embedder, "tests of the retry backoff delay", mode="keyword"
    )
    assert asked_for[0].path == "tests/test_retry.py"
    in_glob = search_code(
        database, project, embedder, "retry backoff delay", mode="keyword", path_glob="**/*.md"
    )
    assert [h.path for h in in_glob] == ["README.md"]
    # The demoted file's score is its fused score times the ranking's demote.
    even = search_code(
        database,
        project,
        embedder,
        "retry backoff delay",
        mode="keyword",
        ranking=Ranking(demote=1.0),
    )
    assert even[0].path != "src/retry.py"
    scores = {h.path: h.score for h in even}
    demoted = {h.path: h.score for h in hits}
    assert demoted["README.md"] == pytest.approx(scores["README.md"] * 0.3, abs=1e-5)


def test_a_projects_own_folders_rank_as_its_globs_say(
    database: Any, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    root = work_dir / "src"
    sample(root)
    write(root, "handbook/retries.py", TEST_FILE.replace("test_", "show_"))
    project, embedder = swept(database, project_name, root, ollama_standin)
    hits = search_code(database, project, embedder, "retry backoff delay", mode="keyword")
    assert [h.path for h in hits].index("handbook/retries.py") < [h.path for h in hits].index(
        "README.md"
    )
    own = Project(project.name, project.roots, docs=("handbook/",), code=("tests/",))
    sweep_project(database, own, embedder, SweepOptions())
    hits = search_code(database, own, embedder, "retry backoff delay", mode="keyword")
    paths = [h.path for h in hits]
    assert paths[0] == "tests/test_retry.py"  # the project says its tests folder is code
    assert paths.index("src/retry.py") < paths.index("handbook/retries.py")


# Definitions long enough to be chunks of their own (small ones are merged).
POLICY = "".join(
    f"def retry_{name}(attempt):\n    # the retry backoff delay, {name}\n"
    + "".join(f"    step_{i} = attempt * {i}  # {name} schedule entry {i}\n" for i in range(30))
    + "    return attempt\n\n\n"
    for name in ("linear", "doubling", "capped", "jittered", "fixed")
)


def test_by_file_one_hit_per_file_with_its_further_matches_as_also(
    database: Any, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    root = work_dir / "src"
    sample(root)
    write(root, "src/policy.py", POLICY)
    project, embedder = swept(database, project_name, root, ollama_standin)
    query = "retry backoff delay"
    chunks = search_code(database, project, embedder, query, mode="keyword", by_file=False)
    paths = [h.path for h in chunks]
    assert paths.count("src/policy.py") > 1  # by chunk: one file fills several places
    assert all(not h.also for h in chunks)
    files = search_code(database, project, embedder, query, mode="keyword")  # by file
    assert len({h.path for h in files}) == len(files)
    assert {h.path for h in files} == set(paths)
    policy = next(h for h in files if h.path == "src/policy.py")
    # Its best chunk is the hit; its further chunks that the search by chunk showed follow as
    # ranges of their own, best first, with their symbols.
    by_chunk = [h for h in chunks if h.path == "src/policy.py"]
    assert (policy.chunk_id, policy.start_line) == (by_chunk[0].chunk_id, by_chunk[0].start_line)
    assert [a.chunk_id for a in policy.also] == [h.chunk_id for h in by_chunk[1:]]
    assert [a.symbol for a in policy.also] == [h.symbol for h in by_chunk[1:]]
    # The files that are not code are demoted by file as well.
    assert {h.path for h in files[:2]} == {"src/retry.py", "src/policy.py"}


@pytest.mark.parametrize("file_fusion", [0.0, Ranking().file_fusion])
def test_by_file_keeps_every_range_the_search_by_chunk_shows(
    database: Any,
    project_name: str,
    work_dir: Path,
    ollama_standin: OllamaStandin,
    file_fusion: float,
) -> None:
    # Every range of the answer by chunk is in the answer by file. Files ranked by their best
    # chunks alone keep each range at a rank no lower; ranked by their own fused scores (the
    # default) they are the same files, reordered among themselves.
    root = work_dir / "src"
    sample(root)
    write(root, "src/policy.py", POLICY)
    write(root, "src/schedule.py", POLICY.replace("retry_", "schedule_"))
    project, embedder = swept(database, project_name, root, ollama_standin)
    ranking = replace(Ranking(), file_fusion=file_fusion)
    for query, mode in [
        ("retry backoff delay", "keyword"),
        ("the capped schedule entry", "hybrid"),
        ("retry_jittered attempt", "vector"),
    ]:
        for top_k in (3, 10):
            search = partial(
                search_code, database, project, embedder, query, mode=mode, ranking=ranking
            )
            chunks, files = search(top_k=top_k, by_file=False), search(top_k=top_k)
            where = {
                (r.chunk_id, r.start_line, r.end_line): rank
                for rank, hit in enumerate(files, 1)
                for r in (hit, *hit.also)
            }
            for rank, h in enumerate(chunks, 1):
                found = where[(h.chunk_id, h.start_line, h.end_line)]
                assert found <= (rank if not file_fusion else top_k), (query, top_k, h)
            assert len(files) == min(top_k, len({h.path for h in search(top_k=50)}))
