"""Developer questions over the training corpus: question -> definition pairs for training.

The mined pairs (`pairs.py`) are text that code writes about itself: doc comments, comments,
names. A person searching asks differently ("where does the router pick a handler for a
trailing slash"), and a model trained on doc comments alone moves its queries towards doc
comments. `questions.jsonl` here holds hand-written questions of the kinds the questions eval
has (where, how, behaviour, mixed), written by reading the code of the training corpus's
libraries (`train_corpus.json`), never an evaluation library's, under the eval's rules: one
gold definition each, named by library, path (inside the library's corpus folder) and name;
no run of `NGRAM` words shared with the target's file, comments and docstrings included.

    .venv/bin/python -m bench.train.question_pairs validate [FILE ...]   # default: questions.jsonl
    .venv/bin/python -m bench.train.question_pairs stats [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.eval.questions import (
    KINDS,
    NGRAM,
    definitions,
    locate,
    shared_ngram,
    simple_name,
    words,
)
from bench.train.pair import Pair, document
from bench.train.training_corpus import CACHE, load_manifest

HERE = Path(__file__).resolve().parent

DATA = HERE / "questions.jsonl"
FIELDS = {"id", "language", "kind", "query", "library", "path", "name"}


@dataclass(frozen=True)
class TrainQuestion:
    qid: str
    language: str
    kind: str
    query: str
    library: str
    path: str
    name: str


def read(paths: Iterable[Path]) -> list[TrainQuestion]:
    out = []
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not JSON: {e}") from e
            if set(row) != FIELDS:
                raise SystemExit(f"{path}:{n}: fields {sorted(row)}, wanted {sorted(FIELDS)}")
            out.append(
                TrainQuestion(
                    row["id"],
                    row["language"],
                    row["kind"],
                    row["query"],
                    row["library"],
                    row["path"],
                    row["name"],
                )
            )
    return out


def resolve(q: TrainQuestion) -> tuple[int, int]:
    """(name line, end line) of the question's definition; ValueError when not exactly one."""
    name, _, hint = q.name.partition("@")
    return locate(CACHE / "corpus" / q.library / q.path, name, int(hint or 0) or None)


def validate(questions: list[TrainQuestion]) -> list[str]:
    """Every problem found (empty when the data is sound)."""
    languages = {lib.name: lib.language for lib in load_manifest()}
    problems: list[str] = []
    seen_ids: set[str] = set()
    seen_text: dict[str, str] = {}
    for q in questions:
        if q.qid in seen_ids:
            problems.append(f"{q.qid}: duplicate id")
        seen_ids.add(q.qid)
        norm = " ".join(words(q.query))
        if norm in seen_text:
            problems.append(f"{q.qid}: same query as {seen_text[norm]}")
        seen_text[norm] = q.qid
        if q.kind not in KINDS:
            problems.append(f"{q.qid}: kind {q.kind!r} is not one of {KINDS}")
        if len(words(q.query)) < 3:
            problems.append(f"{q.qid}: query too short")
        if q.library not in languages:
            problems.append(f"{q.qid}: {q.library!r} is not a training-corpus library")
            continue
        if languages[q.library] != q.language:
            problems.append(f"{q.qid}: {q.library} is {languages[q.library]}, not {q.language}")
        path = CACHE / "corpus" / q.library / q.path
        if not path.is_file():
            problems.append(f"{q.qid}: {q.library}/{q.path} is not in the training corpus")
            continue
        try:
            resolve(q)
        except (ValueError, OSError) as e:
            problems.append(f"{q.qid}: {e}")
            continue
        if (gram := shared_ngram(q.query, path.read_text(errors="replace"))) is not None:
            problems.append(f"{q.qid}: shares {NGRAM} words with {q.path}: {gram!r}")
    return problems


def question_pairs(questions: list[TrainQuestion]) -> list[Pair]:
    """Each question, as the vector side embeds it (its opening left out:
    `candidates.vector_query`), paired with its definition as the chunker embeds it (as
    `pairs.py`)."""
    from indexer.search.candidates import vector_query

    out = []
    for q in questions:
        path = CACHE / "corpus" / q.library / q.path
        line, end = resolve(q)
        name = q.name.partition("@")[0]
        d = next(
            d
            for d in definitions(path)
            if simple_name(d.name) == simple_name(name)
            and d.start_line <= line <= d.end_line
            and d.end_line == end
        )
        lines = path.read_text("utf-8", errors="replace").splitlines()
        doc = document(q.library, q.path, q.language, d, lines, set())
        query = vector_query(q.query)
        out.append(Pair("question", q.language, q.library, q.path, line, query, doc))
    return out


def stats(questions: list[TrainQuestion]) -> str:
    rows = ["| language | questions | libraries | where | how | behaviour | mixed |"]
    rows.append("|---|---:|---:|---:|---:|---:|---:|")
    for lang in [*sorted({q.language for q in questions}), "all"]:
        qs = [q for q in questions if lang in ("all", q.language)]
        k = Counter(q.kind for q in qs)
        libs = len({q.library for q in qs})
        rows.append(
            f"| {lang} | {len(qs)} | {libs} | {k['where']} | {k['how']} | "
            f"{k['behaviour']} | {k['mixed']} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("validate", "stats"))
    ap.add_argument("files", nargs="*", type=Path, default=[DATA])
    args = ap.parse_args(argv)
    questions = read(args.files)
    if args.command == "stats":
        print(stats(questions))
        return
    problems = validate(questions)
    for p in problems:
        print(p)
    print(f"{len(questions)} questions, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
