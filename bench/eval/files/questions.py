"""The file-level eval's questions: every `questions-*.jsonl` beside this file, their split and
their validator.

A question (FORMAT.md) asks for files: architecture ("how is the connection pool organised"),
behaviour ("where are retries with backoff decided") or symbol ("the function that parses the
config file"), with 1-3 primary files that answer it and 0-4 secondary files that help.

The split is by a hash of the query text (that of the developer-questions eval), stratified
per language and kind: in each (language, kind) group the lowest-hashed TUNE_SHARE of queries
tune, the rest test. Adding queries to a group can move one at its boundary: add them before
tuning on the split, not after. A third split, `unseen`, is explicit: the questions of
`questions-unseen.jsonl`, over the libraries of `corpus-unseen.json` only, never hashed into
tune or test; no lever or weight is chosen on it, it only tells whether a choice holds on
libraries nothing was tuned on.

`validate` fails on: an id not `<1-3 letters>-<2 digits>` or used twice, a language or kind
outside the lists, a library no corpus file pins (or not fetched), a language that is not the
library's, an unseen question over a tuning library or the reverse, 0 or more than 3 primary
files (more than 4 secondary), a file listed twice, a path outside the library's kept files, a
query sharing NGRAM consecutive words with a primary file (comments included), the same query
twice, a language of the tuning libraries missing from tune or test. It warns on a language
with fewer than MIN_PER_LANGUAGE questions or a kind far from a third of one.

    .venv/bin/python -m bench.eval.files.questions validate    # fetches the corpus if needed
    .venv/bin/python -m bench.eval.files.questions stats
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.eval.files import corpus as corpus_module
from bench.eval.files.corpus import LANGUAGES, Corpus
from bench.eval.questions import NGRAM, TUNE_SHARE, _hash, shared_ngram, words

HERE = Path(__file__).resolve().parent
KINDS = ("architecture", "behaviour", "symbol")
FIELDS = ("id", "language", "kind", "repo", "query", "primary", "secondary")
ID_RE = re.compile(r"[a-z]{1,3}-\d{2}")  # "c-01" too
MAX_PRIMARY = 3
MAX_SECONDARY = 4
MIN_PER_LANGUAGE = 18
KIND_SHARE = (0.25, 0.42)  # "about a third" of a language's questions, per kind
UNSEEN = corpus_module.UNSEEN  # the split of the libraries nothing is tuned on
UNSEEN_FILE = f"questions-{UNSEEN}.jsonl"
SPLITS = ("tune", "test", UNSEEN)


@dataclass(frozen=True)
class Question:
    qid: str
    language: str
    kind: str
    repo: str  # the library's name, its repo label in the index
    text: str
    primary: tuple[str, ...]
    secondary: tuple[str, ...]
    split: str  # "tune", "test" or "unseen"
    source: str  # the file it came from

    @property
    def targets(self) -> tuple[str, ...]:
        return (*self.primary, *self.secondary)


def data_files(folder: Path = HERE) -> list[Path]:
    return sorted(folder.glob("questions-*.jsonl"))


def read_rows(folder: Path = HERE) -> tuple[list[tuple[str, dict]], list[str]]:
    """(file name, row) of every question line, and the lines that could not be read."""
    rows: list[tuple[str, dict]] = []
    problems: list[str] = []
    for path in data_files(folder):
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
            rows.append((path.name, row))
    return rows, problems


def assign_splits(rows: Sequence[tuple[str, dict]]) -> dict[str, str]:
    """qid -> split of (file name, row) pairs: the rows of UNSEEN_FILE unseen; of the others,
    per (language, kind), the lowest-hashed TUNE_SHARE of queries tune, the rest test (the
    unseen rows take no part in the hash, so they move no other question's split)."""
    out: dict[str, str] = {}
    groups: dict[tuple[str, str], list[dict]] = {}
    for name, row in rows:
        if name == UNSEEN_FILE:
            out[row["id"]] = UNSEEN
            continue
        groups.setdefault((row["language"], row["kind"]), []).append(row)
    for group in groups.values():
        ordered = sorted(group, key=lambda r: (_hash(r["query"]), r["id"]))
        n_tune = round(len(ordered) * TUNE_SHARE)
        for i, row in enumerate(ordered):
            out[row["id"]] = "tune" if i < n_tune else "test"
    return out


def load_questions(folder: Path = HERE) -> tuple[list[Question], list[str]]:
    """Every question (with its split), and the lines that could not be read."""
    rows, problems = read_rows(folder)
    splits = assign_splits(rows)
    questions = [
        Question(
            str(r["id"]),
            str(r["language"]),
            str(r["kind"]),
            str(r["repo"]),
            str(r["query"]),
            tuple(r["primary"]),
            tuple(r["secondary"]),
            splits[r["id"]],
            name,
        )
        for name, r in rows
    ]
    return questions, problems


@dataclass
class Report:
    problems: list[str]
    warnings: list[str]
    faulty: set[str]  # ids of the questions with a problem of their own


def validate(questions: Sequence[Question], corpus: Corpus) -> Report:
    """The problems and warnings of the questions over the fetched corpus."""
    problems: list[str] = []
    faulty: set[str] = set()
    seen_ids: dict[str, str] = {}
    seen_text: dict[str, str] = {}
    texts: dict[Path, str] = {}
    for q in questions:
        before = len(problems)
        _check(q, corpus, seen_ids, seen_text, texts, problems)
        if len(problems) > before:
            faulty.add(q.qid)
    mix_problems, warnings = _mix(questions)
    return Report(problems + mix_problems, warnings, faulty)


def _check(
    q: Question,
    corpus: Corpus,
    seen_ids: dict[str, str],
    seen_text: dict[str, str],
    texts: dict[Path, str],
    problems: list[str],
) -> None:
    """Append the problems of one question (its id and text recorded as seen)."""
    where = f"{q.source} {q.qid}"
    if not ID_RE.fullmatch(q.qid):
        problems.append(f"{where}: id is not <1-3 letters>-<two digits>")
    if q.qid in seen_ids:
        problems.append(f"{where}: id also used in {seen_ids[q.qid]}")
    seen_ids[q.qid] = q.source
    norm = " ".join(words(q.text))
    if norm in seen_text:
        problems.append(f"{where}: same query as {seen_text[norm]}")
    seen_text[norm] = q.qid
    if q.language not in LANGUAGES:
        problems.append(f"{where}: language {q.language!r} is not one of {LANGUAGES}")
    if q.kind not in KINDS:
        problems.append(f"{where}: kind {q.kind!r} is not one of {KINDS}")
    if len(words(q.text)) < 2:
        problems.append(f"{where}: query too short")
    if not 1 <= len(q.primary) <= MAX_PRIMARY:
        problems.append(f"{where}: {len(q.primary)} primary files, 1-{MAX_PRIMARY} wanted")
    if len(q.secondary) > MAX_SECONDARY:
        problems.append(f"{where}: {len(q.secondary)} secondary files, 0-{MAX_SECONDARY} wanted")
    if len(set(q.targets)) != len(q.targets):
        problems.append(f"{where}: a file is listed twice")
    lib = corpus.library(q.repo)
    if lib is None:
        problems.append(f"{where}: library {q.repo!r} is not pinned (or was not fetched)")
        return
    if lib.language != q.language:
        problems.append(f"{where}: {q.repo} is {lib.language}, the question says {q.language}")
    if (q.split == UNSEEN) != (q.repo in corpus.unseen):
        pinned = (
            corpus_module.UNSEEN_MANIFEST if q.repo in corpus.unseen else "a tuning corpus file"
        )
        problems.append(
            f"{where}: {q.repo} is pinned in {pinned}, the question is in the {q.split} split "
            f"({UNSEEN} questions belong in {UNSEEN_FILE}, over the libraries of "
            f"{corpus_module.UNSEEN_MANIFEST} only)"
        )
    kept = set(lib.files)
    for rel in q.targets:
        path = corpus.root / q.repo / rel
        if rel not in kept or not path.is_file():
            problems.append(f"{where}: {q.repo}/{rel} is not among the library's kept files")
            continue
        if rel not in q.primary:
            continue
        if path not in texts:
            texts[path] = path.read_bytes().decode("utf-8", errors="replace")
        if (gram := shared_ngram(q.text, texts[path])) is not None:
            problems.append(f"{where}: shares {NGRAM} words with {rel}: {gram!r}")


def _mix(questions: Sequence[Question]) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    warnings: list[str] = []
    for lang in sorted({q.language for q in questions}):
        qs = [q for q in questions if q.language == lang]
        if len(qs) < MIN_PER_LANGUAGE:
            warnings.append(f"{lang}: {len(qs)} questions, at least {MIN_PER_LANGUAGE} wanted")
        kinds = Counter(q.kind for q in qs)
        lo, hi = KIND_SHARE
        off = {k: kinds[k] for k in KINDS if not lo <= kinds[k] / len(qs) <= hi}
        if off:
            warnings.append(f"{lang}: kinds {dict(kinds)} of {len(qs)}, about a third each wanted")
        splits = {q.split for q in qs if q.split != UNSEEN}
        if splits and splits != {"tune", "test"}:
            problems.append(f"{lang}: only in the {sorted(splits)} split(s) of tune and test")
    return problems, warnings


def stats(questions: Sequence[Question]) -> str:
    """Counts per language x kind x split (cells: tune / test / unseen)."""
    lines = [
        "| language | questions | libraries | " + " | ".join(f"{k} tune/test/unseen" for k in KINDS)
        + " | tune | test | unseen |",
        "|---|---:|---:|" + "---:|" * (len(KINDS) + 3),
    ]  # fmt: skip
    for lang in [*sorted({q.language for q in questions}), "all"]:
        qs = [q for q in questions if lang in ("all", q.language)]
        cells = []
        for kind in KINDS:
            s = Counter(q.split for q in qs if q.kind == kind)
            cells.append(f"{s['tune']}/{s['test']}/{s[UNSEEN]}")
        s = Counter(q.split for q in qs)
        lines.append(
            f"| {lang} | {len(qs)} | {len({q.repo for q in qs})} | {' | '.join(cells)} | "
            f"{s['tune']} | {s['test']} | {s[UNSEEN]} |"
        )
    return "\n".join(lines)


def ensure_valid(
    cache: Path = corpus_module.CACHE, folder: Path = HERE, lenient: bool = False
) -> tuple[list[Question], Corpus]:
    """The questions and the corpus once every check passed, else exit; warnings printed.
    `lenient` goes on without the libraries refused and the questions with a problem of their
    own, saying what it left out."""
    corpus, corpus_problems = corpus_module.ensure_corpus(cache, folder, strict=not lenient)
    questions, problems = load_questions(folder)
    report = validate(questions, corpus)
    for w in report.warnings:
        print(f"warning: {w}")
    problems = corpus_problems + problems + report.problems
    if problems and lenient:
        kept = [q for q in questions if q.qid not in report.faulty]
        print(
            f"warning: {len(problems)} problem(s); going on without {len(questions) - len(kept)} "
            "question(s):\n  " + "\n  ".join(problems)
        )
        return kept, corpus
    if problems:
        raise SystemExit(f"questions: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return questions, corpus


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("validate", "stats"))
    ap.add_argument("--cache", type=Path, default=corpus_module.CACHE)
    ap.add_argument("--data", type=Path, default=HERE, help="the folder of the data files")
    args = ap.parse_args(argv)
    questions, problems = load_questions(args.data)
    if args.command == "stats":
        print(stats(questions))
        return
    corpus, corpus_problems = corpus_module.ensure_corpus(args.cache, args.data, strict=False)
    report = validate(questions, corpus)
    problems = corpus_problems + problems + report.problems
    print(stats(questions))
    n_targets = sum(len(q.targets) for q in questions)
    print(
        f"\n{len(questions)} questions ({n_targets} target files) in "
        f"{len(data_files(args.data))} file(s), "
        f"{len({q.language for q in questions})} languages, {len(corpus.libraries)} libraries"
    )
    for w in report.warnings:
        print(f"warning: {w}")
    if problems:
        print(f"\n{len(problems)} problem(s):\n  " + "\n  ".join(problems))
        raise SystemExit(1)
    print("all valid")


if __name__ == "__main__":
    main()
