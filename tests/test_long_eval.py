"""The long-question eval's committed data passes its validator, and the validator refuses what
it must: a reserved, forked, SWE-bench-test or training repository, a test or non-source
target, a split that is not the rule's, a repository both held out and tuned on.

Offline: the committed file and the rules only; the repositories' mirrors are not read here
(`python -m bench.eval.long.questions validate` checks the base commits and target files).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.eval.long import questions as qmod
from bench.eval.long.questions import Question


def committed() -> list[Question]:
    questions, problems = qmod.load()
    assert problems == []
    return questions


def test_the_committed_data_passes_the_offline_checks() -> None:
    questions = committed()
    assert qmod.validate(questions) == []
    assert qmod.warnings(questions) == []


def test_each_split_has_several_languages_and_unseen_repositories_are_whole() -> None:
    questions = committed()
    for split in qmod.SPLITS:
        assert len({q.language for q in questions if q.split == split}) >= 3, split
    unseen = {q.repo for q in questions if q.split == qmod.UNSEEN}
    tuned = {q.repo for q in questions if q.split != qmod.UNSEEN}
    assert unseen and not unseen & tuned
    assert "marshmallow-code/marshmallow" not in unseen  # another eval's library


def test_refused_repositories() -> None:
    # Reserved by name (owner/name or owner-name), a fork of a reserved library, a SWE-bench
    # test repository, and libraries of the embedding model's training corpus.
    for repo in (
        "redis/redis", "laravel/framework", "nlohmann/json", "tokio-rs/axum",
        "valkey-io/valkey", "pylint-dev/astroid", "django/django", "preactjs/preact",
        "briannesbitt/carbon",
    ):  # fmt: skip
        assert qmod.repo_refusal(repo) is not None, repo
    assert qmod.repo_refusal("jqlang/jq") is None


def test_what_counts_as_a_test_or_as_source() -> None:
    for path in (
        "tests/test_a.py", "src/test/java/FooTest.java", "pkg/x_test.go", "a/b.spec.ts",
        "spec/foo_spec.rb", "conftest.py", "internal/testdata/x.go", "lib/FooIT.java",
    ):  # fmt: skip
        assert qmod.is_test(path), path
    for path in ("src/latest.py", "lib/contest.rb", "src/attest/main.go"):
        assert not qmod.is_test(path), path
    assert qmod.source_language("CHANGELOG.md") is None
    assert qmod.source_language("config.yml") is None
    assert qmod.source_language("src/a.tsx") == "typescript"


def test_the_validator_refuses_bad_rows() -> None:
    questions = committed()
    first = questions[0]
    bad = [
        replace(first, targets=()),
        replace(first, targets=("tests/test_x.py",)),
        replace(first, targets=("README.md",)),
        replace(first, text="  "),
        replace(first, base_commit="abc"),
        replace(first, repo="redis/redis"),
    ]
    for row in bad:
        assert qmod.validate([row, *questions[1:]]), row
    # A split other than the rule's, and an id used twice.
    moved = replace(first, split="test" if first.split == "tune" else "tune")
    assert any("rule says" in p for p in qmod.validate([moved, *questions[1:]]))
    assert any("used twice" in p for p in qmod.validate([first, *questions]))


def test_the_fresh_set_passes_its_offline_checks_and_shares_nothing_with_the_rest() -> None:
    fresh, problems = qmod.load(qmod.FRESH)
    assert problems == []
    assert qmod.validate(fresh, fresh=True) == []
    assert {q.split for q in fresh} == {qmod.FRESH_SPLIT}
    assert len({q.language for q in fresh}) >= 2
    used = committed()
    assert not {q.repo for q in fresh} & {q.repo for q in used}
    # A row of questions.jsonl, or one of another split, is refused by the fresh rules.
    assert qmod.validate([*fresh, used[0]], fresh=True)
    assert qmod.validate([replace(fresh[0], split="test"), *fresh[1:]], fresh=True)


def test_a_stopped_run_keeps_its_answers_and_goes_on_only_from_its_own(tmp_path: Path) -> None:
    from bench.eval.long import run

    path = tmp_path / "answers.json"
    rows = ["code-rag hybrid", "plain BM25, whole files"]
    assert run.load_progress(path, "test", "hybrid", rows) == ({}, {}, [])
    answers = {"a__b-1": {rows[0]: ["x.py", "y.py"], rows[1]: ["y.py"]}}
    commits = [{"repo": "a/b", "commit": "0" * 40}]
    run.save_progress(path, "test", "hybrid", rows, answers, {"a__b-1": ["z.py"]}, commits)
    assert run.load_progress(path, "test", "hybrid", rows) == (
        answers,
        {"a__b-1": ["z.py"]},
        commits,
    )
    with pytest.raises(SystemExit, match="another run"):
        run.load_progress(path, "test", "none", rows)
    with pytest.raises(SystemExit, match="another run"):
        run.load_progress(path, "test", "hybrid", rows[:1])
    run.save_progress(None, "test", "hybrid", rows, answers, {}, commits)  # no file: nothing kept
