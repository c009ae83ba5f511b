"""The long-question eval's data: `questions.jsonl` beside this file, its rules and its validator.

A question is a real issue's text (a bug report, a failing test's output, a stack trace) over a
repository at the commit the fix was written against; its targets are the non-test source
files that the fix changed and that existed at that commit (README.md, FORMAT). The rules that
decide what a target is, which repositories are allowed and which split a question is in live
here, so the builder (build.py) writes what the validator checks.

Splits. `unseen`: whole repositories that nothing is ever tuned on: per language (the most
common language of a repository's questions), its repositories sorted by a hash of their name,
the first third (rounded down) of them, leaving out any repository another in-repo eval uses.
The rest: per repository, questions sorted by a hash of their id, the lowest-hashed TUNE_SHARE
tune, the rest test, so every repository with two or more questions is in both.

Fresh. `fresh.jsonl` beside this file is a held-out set from other sources (fresh.py;
README.md, "A fresh set"), measured once and never tuned on: the same rows and rules, every
split FRESH_SPLIT, no repository or id of questions.jsonl (the tune/test/unseen rule applies
to questions.jsonl only; `validate --data fresh` checks it by these rules).

`validate` fails on: a row whose fields are not FIELDS, an id not SWE-bench's
`<owner>__<name>-<number>` or used twice, a repository that is reserved for evaluation
(reserved.txt, by bench/eval/reserved.py's rule), in SWE-bench's test split, a fork of a
reserved library, or a library of the embedding model's training corpus; a language outside
LANGUAGES, a base commit that is not 40 hex digits, an empty query, no target, a target
listed twice, a target that is a test or not source by the rules below, or whose path holds a
reserved or training library's name; a function whose file is not a target; more than
CAP_PER_REPO questions of one repository; a split that is not the rule's, or a repository in
`unseen` and in tune or test. With mirrors (the default; `--offline` leaves them out) it also
fails on a base commit the repository's mirror lacks and a target that is not a file in the
tree at the base commit, or whose contents the snapshot does not carry. It warns on a split
with fewer than two languages.

    .venv/bin/python -m bench.eval.long.questions validate            # with the mirrors
    .venv/bin/python -m bench.eval.long.questions validate --offline  # the data alone
    .venv/bin/python -m bench.eval.long.questions stats
    .venv/bin/python -m bench.eval.long.questions validate --data fresh  # fresh.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.eval.files.corpus import Forbidden
from bench.eval.questions import TUNE_SHARE
from bench.eval.reserved import forbidden_component, reserved_in_name
from chunkers import detect_language

HERE = Path(__file__).resolve().parent
DATA = HERE / "questions.jsonl"
FRESH = HERE / "fresh.jsonl"  # the held-out set from other sources (fresh.py)
FRESH_SPLIT = "fresh"  # fresh.jsonl's one split
FIELDS = (
    "id", "repo", "language", "source", "base_commit", "created_at", "split", "query",
    "targets", "functions", "other_files",
)  # fmt: skip
SPLITS = ("tune", "test", "unseen")
UNSEEN = "unseen"
CAP_PER_REPO = 20  # questions kept per repository, the lowest-hashed ids
ID_RE = re.compile(r"[A-Za-z0-9_.-]+__[A-Za-z0-9_.-]+-\d+")
REPO_RE = re.compile(r"[a-z0-9_.-]+/[a-z0-9_.-]+")  # SWE-bench writes them lowercase
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
LANGUAGES = ("c", "cpp", "go", "html", "java", "javascript", "kotlin", "php", "python", "ruby",
             "rust", "typescript")  # fmt: skip

# SWE-bench's test split: its twelve repositories are never part of this eval.
SWE_BENCH_TEST = frozenset(
    """astropy django matplotlib seaborn flask requests xarray pylint pytest scikit-learn
    sphinx sympy""".split()  # noqa: SIM905
)
# Repositories that are forks or renamed copies of a reserved library, which no name rule
# can see: "any version, any fork" (reserved.txt).
FORKS = {"valkey-io/valkey": "redis"}
# The names a repository's library is also published under, where a training-corpus label
# uses that name (the Composer package nesbot/carbon, Debian's php-nesbot-carbon).
ALSO_KNOWN_AS = {"briannesbitt/carbon": "nesbot-carbon"}
# Libraries of the other in-repo evals: never held out as unseen (levers were chosen on them).
OTHER_EVALS = frozenset({"marshmallow-code/marshmallow"})

# What counts as a test file: a path component that names tests, fixtures or test data, or a
# file name that test runners pick up (test_x.py, x_test.go, x.test.ts, x.spec.js, x_spec.rb,
# FooTest.java, conftest.py).
TEST_DIRS = frozenset(
    """test tests __tests__ __test__ spec specs testdata test_data test-data fixtures
    __fixtures__ __snapshots__ e2e""".split()  # noqa: SIM905
)
TEST_NAME_RE = re.compile(
    r"(^test_|^tests?\.|_tests?\.|\.tests?\.|\.spec\.|_spec\.|(Test|Tests|IT)\.(java|kt|scala)$"
    r"|^conftest\.py$)"
)
# Languages that are not source code: documentation, data and configuration.
NOT_SOURCE = frozenset(
    """markdown rst latex text csv json yaml toml ini xml asciidoc""".split()  # noqa: SIM905
)
# The language a question is reported under, where the chunker names a dialect.
LANGUAGE_OF = {"tsx": "typescript"}


def is_test(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if any(p.lower() in TEST_DIRS for p in parts[:-1]):
        return True
    return bool(TEST_NAME_RE.search(parts[-1]))


def source_language(path: str) -> str | None:
    """The language a source file is written in (by the chunker's detection), or None when the
    file is documentation, data, configuration, or of no language the chunker knows."""
    lang = detect_language(path)
    if lang is None or lang in NOT_SOURCE:
        return None
    return LANGUAGE_OF.get(lang, lang)


def repo_refusal(repo: str) -> str | None:
    """Why `repo` (owner/name) may not be part of this eval, or None."""
    owner, _, name = repo.partition("/")
    for form in (repo, f"{owner}-{name}"):
        if (found := reserved_in_name(form)) is not None:
            return f"reserved ({found!r} in reserved.txt)"
    if (found := forbidden_component(repo, SWE_BENCH_TEST)) is not None:
        return f"SWE-bench test split ({found!r})"
    if repo in FORKS:
        return f"reserved (a fork of {FORKS[repo]!r})"
    training = Forbidden.load().training
    for form in (repo, ALSO_KNOWN_AS.get(repo, "")):
        if form and (found := forbidden_component(form, training)) is not None:
            return f"the embedding model's training corpus ({found!r})"
    return None


def path_refusal(path: str) -> str | None:
    """The reserved or training library's name a path holds (the file-level eval's rule)."""
    return Forbidden.load().in_path(path)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Question:
    qid: str
    repo: str  # owner/name, as SWE-bench writes it
    language: str
    source: str  # the SWE-bench data file it came from
    base_commit: str
    created_at: str
    split: str
    text: str  # the whole text; the runner asks its first QUERY_CHARS
    targets: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (path, name) read from the fix's hunk headers
    other_files: tuple[str, ...]  # files the fix touches that are not targets

    @staticmethod
    def of(row: dict) -> Question:
        return Question(
            str(row["id"]),
            str(row["repo"]),
            str(row["language"]),
            str(row["source"]),
            str(row["base_commit"]),
            str(row["created_at"]),
            str(row["split"]),
            str(row["query"]),
            tuple(row["targets"]),
            tuple((f["path"], f["name"]) for f in row["functions"]),
            tuple(row["other_files"]),
        )

    def row(self) -> dict:
        return {
            "id": self.qid, "repo": self.repo, "language": self.language,
            "source": self.source, "base_commit": self.base_commit,
            "created_at": self.created_at, "split": self.split, "query": self.text,
            "targets": list(self.targets),
            "functions": [{"path": p, "name": n} for p, n in self.functions],
            "other_files": list(self.other_files),
        }  # fmt: skip


def repo_languages(questions: Iterable[Question]) -> dict[str, str]:
    """Each repository's language: the most common of its questions' (ties: the first by
    name)."""
    counts: dict[str, Counter[str]] = {}
    for q in questions:
        counts.setdefault(q.repo, Counter())[q.language] += 1
    return {repo: min(c, key=lambda lang: (-c[lang], lang)) for repo, c in sorted(counts.items())}


def unseen_repos(questions: Iterable[Question]) -> set[str]:
    """The repositories held out whole: per language, the lowest-hashed third (rounded down)
    of its repositories, among those no other in-repo eval uses."""
    by_language: dict[str, list[str]] = {}
    for repo, lang in repo_languages(questions).items():
        by_language.setdefault(lang, []).append(repo)
    out: set[str] = set()
    for repos in by_language.values():
        n = len(repos) // 3
        allowed = sorted((r for r in repos if r not in OTHER_EVALS), key=lambda r: _hash(r))
        out.update(allowed[:n])
    return out


def assign_splits(questions: Sequence[Question]) -> dict[str, str]:
    """id -> split: the unseen repositories' questions unseen; per other repository, the
    lowest-hashed TUNE_SHARE of ids tune, the rest test."""
    held = unseen_repos(questions)
    out: dict[str, str] = {}
    by_repo: dict[str, list[Question]] = {}
    for q in questions:
        if q.repo in held:
            out[q.qid] = UNSEEN
        else:
            by_repo.setdefault(q.repo, []).append(q)
    for group in by_repo.values():
        ordered = sorted(group, key=lambda q: (_hash(q.qid), q.qid))
        n_tune = round(len(ordered) * TUNE_SHARE)
        for i, q in enumerate(ordered):
            out[q.qid] = "tune" if i < n_tune else "test"
    return out


def load(path: Path = DATA) -> tuple[list[Question], list[str]]:
    """Every question of the data file, and the lines that could not be read."""
    questions: list[Question] = []
    problems: list[str] = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"{path.name}:{n}: not JSON: {e}")
            continue
        if not isinstance(row, dict) or sorted(row) != sorted(FIELDS):
            got = sorted(row) if isinstance(row, dict) else type(row).__name__
            problems.append(f"{path.name}:{n}: fields {got}, wanted {sorted(FIELDS)}")
            continue
        questions.append(Question.of(row))
    return questions, problems


def write(questions: Sequence[Question], path: Path = DATA) -> None:
    lines = [json.dumps(q.row(), ensure_ascii=False) for q in questions]
    path.write_text("\n".join(lines) + "\n")


def validate(
    questions: Sequence[Question], mirrors: Path | None = None, fresh: bool = False
) -> list[str]:
    """The problems of the questions; with `mirrors` (the folder of the repositories' bare
    git mirrors, trees.py) also each base commit and target file against the mirror. `fresh`:
    the rules of fresh.jsonl (every split FRESH_SPLIT, no repository or id of questions.jsonl)
    instead of the tune/test/unseen rule."""
    problems: list[str] = []
    seen: set[str] = set()
    refused: dict[str, str | None] = {}
    for q in questions:
        where = q.qid
        if not ID_RE.fullmatch(q.qid):
            problems.append(f"{where}: id is not <owner>__<name>-<number>")
        if q.qid in seen:
            problems.append(f"{where}: id used twice")
        seen.add(q.qid)
        if not REPO_RE.fullmatch(q.repo):
            problems.append(f"{where}: repo {q.repo!r} is not owner/name")
        if q.repo not in refused:
            refused[q.repo] = repo_refusal(q.repo)
        if refused[q.repo] is not None:
            problems.append(f"{where}: {q.repo} may not be used: {refused[q.repo]}")
        if q.language not in LANGUAGES:
            problems.append(f"{where}: language {q.language!r} is not one of {LANGUAGES}")
        if not COMMIT_RE.fullmatch(q.base_commit):
            problems.append(f"{where}: base commit {q.base_commit!r} is not 40 hex digits")
        if not q.text.strip():
            problems.append(f"{where}: empty query")
        if fresh and q.split != FRESH_SPLIT:
            problems.append(f"{where}: split {q.split!r} is not {FRESH_SPLIT!r}")
        elif not fresh and q.split not in SPLITS:
            problems.append(f"{where}: split {q.split!r} is not one of {SPLITS}")
        if not q.targets:
            problems.append(f"{where}: no target file")
        if len(set(q.targets)) != len(q.targets):
            problems.append(f"{where}: a target is listed twice")
        for path in q.targets:
            if is_test(path):
                problems.append(f"{where}: target {path} is a test file")
            if source_language(path) is None:
                problems.append(f"{where}: target {path} is not source")
            if (bad := path_refusal(path)) is not None:
                problems.append(f"{where}: target {path} holds {bad!r}")
        for path, name in q.functions:
            if path not in q.targets or not name:
                problems.append(f"{where}: function {path}::{name} is not in a target")
    problems += _fresh(questions) if fresh else _splits(questions)
    if mirrors is not None:
        problems += against_mirrors(questions, mirrors)
    return problems


def _splits(questions: Sequence[Question]) -> list[str]:
    problems = _cap(questions)
    wanted = assign_splits(questions)
    for q in questions:
        if q.split != wanted[q.qid]:
            problems.append(f"{q.qid}: in the {q.split} split, the rule says {wanted[q.qid]}")
    unseen = {q.repo for q in questions if q.split == UNSEEN}
    tuned = {q.repo for q in questions if q.split != UNSEEN}
    for repo in sorted(unseen & tuned):
        problems.append(f"{repo}: in the {UNSEEN} split and in tune or test")
    return problems


def _cap(questions: Sequence[Question]) -> list[str]:
    per_repo = Counter(q.repo for q in questions)
    return [
        f"{repo}: {n} questions, at most {CAP_PER_REPO}"
        for repo, n in sorted(per_repo.items())
        if n > CAP_PER_REPO
    ]


def _fresh(questions: Sequence[Question]) -> list[str]:
    """fresh.jsonl's rules: at most CAP_PER_REPO a repository, and nothing of questions.jsonl
    (its repositories, its ids)."""
    problems = _cap(questions)
    used, _ = load(DATA)
    repos, ids = {q.repo for q in used}, {q.qid for q in used}
    for q in questions:
        if q.repo in repos:
            problems.append(f"{q.qid}: {q.repo} is a repository of {DATA.name}")
        if q.qid in ids:
            problems.append(f"{q.qid}: an id of {DATA.name}")
    return problems


def warnings(questions: Sequence[Question], splits: Sequence[str] = SPLITS) -> list[str]:
    out = []
    for split in splits:
        langs = {q.language for q in questions if q.split == split}
        if len(langs) < 2:
            out.append(f"{split}: {len(langs)} language(s)")
    return out


def against_mirrors(questions: Sequence[Question], mirrors: Path) -> list[str]:
    """The problems of `questions` against their repositories' mirrors in `mirrors`: a
    repository with no mirror, a base commit not in it, a target not a file at the base."""
    from bench.eval.long.trees import Mirror, MirrorMissing

    problems: list[str] = []
    found: dict[str, Mirror | None] = {}
    for q in questions:
        if q.repo not in found:
            try:
                found[q.repo] = Mirror.find(q.repo, mirrors)
            except MirrorMissing as exc:
                found[q.repo] = None
                problems.append(str(exc))
        mirror = found[q.repo]
        if mirror is None:
            continue
        if not mirror.has_commit(q.base_commit):
            problems.append(f"{q.qid}: base commit {q.base_commit} is not in {mirror.path}")
            continue
        files = mirror.files(q.base_commit)
        for path in q.targets:
            if path not in files:
                problems.append(f"{q.qid}: {path} is not a file at {q.base_commit[:12]}")
        for path in mirror.absent(q.base_commit, list(q.targets)):
            problems.append(f"{q.qid}: the snapshot does not carry {path}'s contents")
    return problems


def stats(questions: Sequence[Question], splits: Sequence[str] = SPLITS) -> str:
    """Questions per language and split (repositories in brackets)."""
    lines = [
        "| language | questions | repositories | " + " | ".join(splits) + " |",
        "|---|---:|---:|" + "---:|" * len(splits),
    ]
    for lang in [*sorted({q.language for q in questions}), "all"]:
        qs = [q for q in questions if lang in ("all", q.language)]
        cells = []
        for split in splits:
            mine = [q for q in qs if q.split == split]
            cells.append(f"{len(mine)} ({len({q.repo for q in mine})})")
        n_repos = len({q.repo for q in qs})
        lines.append(f"| {lang} | {len(qs)} | {n_repos} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| repository | language | split | questions | targets |",
        "|---|---|---|---:|---:|",
    ]
    langs = repo_languages(questions)
    for repo in sorted(langs):
        qs = [q for q in questions if q.repo == repo]
        in_splits = "/".join(sorted({q.split for q in qs}, key=list(splits).index))
        n_targets = sum(len(q.targets) for q in qs)
        lines.append(f"| {repo} | {langs[repo]} | {in_splits} | {len(qs)} | {n_targets} |")
    return "\n".join(lines)


def data_path(name: str) -> Path:
    """`fresh` or `questions` (the files beside this one), else a path; a file named like
    fresh.jsonl is checked by its rules."""
    return {"fresh": FRESH, "questions": DATA}.get(name, Path(name))


def main(argv: list[str] | None = None) -> None:
    from bench.eval.long.trees import MIRRORS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("validate", "stats"))
    ap.add_argument(
        "--data",
        type=data_path,
        default=DATA,
        help="questions.jsonl (the default), `fresh` (fresh.jsonl, its rules) or a path",
    )
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--offline", action="store_true", help="check the data alone, no mirrors")
    args = ap.parse_args(argv)
    fresh = args.data.name == FRESH.name
    splits = (FRESH_SPLIT,) if fresh else SPLITS
    questions, problems = load(args.data)
    print(stats(questions, splits))
    if args.command == "stats":
        return
    problems += validate(questions, None if args.offline else args.mirrors, fresh)
    n_targets = sum(len(q.targets) for q in questions)
    print(
        f"\n{len(questions)} questions ({n_targets} target files), "
        f"{len({q.repo for q in questions})} repositories, "
        f"{len({q.language for q in questions})} languages"
        + ("; mirrors not read (--offline)" if args.offline else f"; mirrors in {args.mirrors}")
    )
    for w in warnings(questions, splits):
        print(f"warning: {w}")
    if problems:
        print(f"\n{len(problems)} problem(s):\n  " + "\n  ".join(problems))
        raise SystemExit(1)
    print("all valid")


if __name__ == "__main__":
    main()
