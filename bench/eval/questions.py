"""Developer questions over real code: the data file, its tuning/test split and its validator.

`questions.jsonl` holds hand-written queries, phrased as a person searching a codebase they do
not know ("where is ...", "how does ...", a behaviour, or words mixed with partial identifiers),
each with one or a few gold definitions: library (the index's repo label), path, name, and the
definition's lines (the line holding its name, through its last line). They were written by
reading the code of the libraries pinned in `questions_corpus.json`, never from its comments.

The split is by a hash of the query text, stratified per language: in each language the
TUNE_SHARE of queries with the lowest hashes tune, the rest test (a pure hash threshold left
one language at 21% tuning). Adding queries to a language can move a query at its boundary:
add them before tuning on the split, not after. `validate` fails loudly on a
target whose file is missing, whose name is not on its start line, whose range is not the
definition's (per the chunker's tree-sitter symbols), on duplicates, on a query sharing NGRAM
consecutive words with its target file (comments and docstrings included: the rule is stricter
than "not copied from a comment"), and on a count or mix outside the constraints below.

    .venv/bin/python -m bench.eval.questions validate      # fetches the corpus if needed
    .venv/bin/python -m bench.eval.questions fill          # add lines to targets named only
    .venv/bin/python -m bench.eval.questions stats
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.eval import sources
from chunkers.detect import detect_language
from chunkers.grammars import has_symbols, parser_for
from chunkers.symbols import Definition, extract

HERE = Path(__file__).resolve().parent

DATA = HERE / "questions.jsonl"
KINDS = ("where", "how", "behaviour", "mixed")
TUNE_SHARE = 0.4
NGRAM = 5
MIN_QUERIES = 150
MIN_LANGUAGES = 5
MIN_PER_LANGUAGE = 25
# Shares of the query mix: where/how questions about half, behaviour about a third, the rest
# words mixed with partial identifiers.
MIX_BOUNDS = {"where+how": (0.40, 0.65), "behaviour": (0.20, 0.45), "mixed": (0.08, 0.30)}
WORD_RE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Target:
    repo: str
    path: str
    name: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Question:
    qid: str
    language: str
    kind: str
    text: str
    targets: tuple[Target, ...]
    split: str  # "tune" or "test"


def _hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()


def assign_splits(rows: list[dict]) -> dict[str, str]:
    """qid -> split: per language, the lowest-hashed TUNE_SHARE of queries tune."""
    out: dict[str, str] = {}
    by_lang: dict[str, list[dict]] = {}
    for row in rows:
        by_lang.setdefault(row["language"], []).append(row)
    for group in by_lang.values():
        ordered = sorted(group, key=lambda r: _hash(r["query"]))
        n_tune = round(len(ordered) * TUNE_SHARE)
        for i, row in enumerate(ordered):
            out[row["id"]] = "tune" if i < n_tune else "test"
    return out


def read_rows(path: Path = DATA) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not JSON: {e}") from e
    return rows


def load_questions(path: Path = DATA) -> list[Question]:
    rows = read_rows(path)
    splits = assign_splits(rows)
    return [
        Question(
            r["id"],
            r["language"],
            r["kind"],
            r["query"],
            tuple(Target(**t) for t in r["targets"]),
            splits[r["id"]],
        )
        for r in rows
    ]


def simple_name(name: str) -> str:
    """`Money::Arithmetic#<=>` -> `<=>`, `QueryObserver.#notify` -> `#notify`."""
    last = re.split(r"\.|::", name)[-1]
    return last.rsplit("#", 1)[-1] if "#" in last[1:] else last


def name_on_line(name: str, line: str) -> bool:
    simple = simple_name(name)
    if re.fullmatch(r"#?[\w$]+[?!=]?", simple):
        core = re.escape(simple.rstrip("?!="))
        return re.search(rf"(?<![\w$]){core}(?![\w$])", line) is not None
    return simple in line  # operators: <=>, -@, ==


def definitions(path: Path) -> list[Definition]:
    """Every definition tree-sitter finds in the file, nested ones included, flattened."""
    data = path.read_bytes()
    lang = detect_language(str(path), data[:4096])
    if lang is None or not has_symbols(lang):
        return []
    text = data.decode("utf-8", errors="replace").encode("utf-8")
    found: list[Definition] = []

    def walk(defs: list[Definition]) -> None:
        for d in defs:
            found.append(d)
            walk(d.children)

    walk(extract(parser_for(lang).parse(text), lang, text))
    return found


def name_line(d: Definition, name: str, lines: list[str]) -> int | None:
    """The first line of `d` (attachments skipped) that holds `name`."""
    for n in range(d.start_line, d.end_line + 1):
        if name_on_line(name, lines[n - 1]) and not _comment_line(lines[n - 1]):
            return n
    return None


def _comment_line(line: str) -> bool:
    s = line.lstrip()
    return s.startswith(("//", "# ", "*", "/*", '"""')) or s == "#"


def locate(path: Path, name: str, hint: int | None = None) -> tuple[int, int]:
    """(name line, end line) of the definition `name` in `path`; unique or pinned by `hint`."""
    lines = path.read_text(errors="replace").splitlines()
    defs = definitions(path)
    exact = [d for d in defs if d.name == name]
    simple = [d for d in defs if simple_name(d.name) == simple_name(name)]
    candidates = exact or simple
    spans = [(name_line(d, name, lines), d.end_line) for d in candidates]
    spans = [(s, e) for s, e in spans if s is not None]
    if hint is not None:
        spans = [(s, e) for s, e in spans if s == hint]
    if len(set(spans)) != 1:
        raise ValueError(f"{path}: {name!r} matches {len(set(spans))} definitions: {spans[:5]}")
    start, end = spans[0]
    assert start is not None
    return start, end


def words(text: str) -> list[str]:
    return WORD_RE.findall(text.lower())


def shared_ngram(query: str, text: str, n: int = NGRAM) -> str | None:
    q = words(query)
    grams = {tuple(q[i : i + n]) for i in range(len(q) - n + 1)}
    if not grams:
        return None
    t = words(text)
    for i in range(len(t) - n + 1):
        if tuple(t[i : i + n]) in grams:
            return " ".join(t[i : i + n])
    return None


def validate(questions: list[Question], root: Path, libs: list[sources.Library]) -> list[str]:
    """Every problem found (empty when the data is sound)."""
    problems: list[str] = []
    by_name = {lib.name: lib for lib in libs}
    seen_ids: set[str] = set()
    seen_text: dict[str, str] = {}
    defs_cache: dict[Path, list[Definition]] = {}
    for q in questions:
        where = f"{q.qid}"
        if q.qid in seen_ids:
            problems.append(f"{where}: duplicate id")
        seen_ids.add(q.qid)
        norm = " ".join(words(q.text))
        if norm in seen_text:
            problems.append(f"{where}: same query as {seen_text[norm]}")
        seen_text[norm] = q.qid
        if q.kind not in KINDS:
            problems.append(f"{where}: kind {q.kind!r} is not one of {KINDS}")
        if len(words(q.text)) < 2:
            problems.append(f"{where}: query too short")
        if not q.targets:
            problems.append(f"{where}: no target")
        for t in q.targets:
            lib = by_name.get(t.repo)
            if lib is None:
                problems.append(f"{where}: unknown library {t.repo!r}")
                continue
            if lib.language != q.language:
                problems.append(f"{where}: {t.repo} is {lib.language}, query says {q.language}")
            if (bad := sources.reserved_component(f"{t.repo}/{t.path}")) is not None:
                problems.append(f"{where}: {t.path} holds the reserved name {bad!r}")
            path = root / t.repo / t.path
            if t.path not in lib.files or not path.is_file():
                problems.append(f"{where}: {t.repo}/{t.path} is not in the corpus")
                continue
            lines = path.read_text(errors="replace").splitlines()
            if not 1 <= t.start_line <= t.end_line <= len(lines):
                problems.append(
                    f"{where}: {t.path} lines {t.start_line}-{t.end_line} outside 1-{len(lines)}"
                )
                continue
            if not name_on_line(t.name, lines[t.start_line - 1]):
                problems.append(
                    f"{where}: {t.name!r} is not on {t.path}:{t.start_line}: "
                    f"{lines[t.start_line - 1].strip()[:80]!r}"
                )
            if path not in defs_cache:
                defs_cache[path] = definitions(path)
            if not any(
                simple_name(d.name) == simple_name(t.name)
                and d.start_line <= t.start_line <= d.end_line
                and d.end_line == t.end_line
                for d in defs_cache[path]
            ):
                problems.append(
                    f"{where}: no definition {t.name!r} spans {t.path}:{t.start_line}-{t.end_line}"
                )
            if (gram := shared_ngram(q.text, "\n".join(lines))) is not None:
                problems.append(f"{where}: shares {NGRAM} words with {t.path}: {gram!r}")
    problems.extend(_mix_problems(questions))
    return problems


def _mix_problems(questions: list[Question]) -> list[str]:
    problems = []
    if len(questions) < MIN_QUERIES:
        problems.append(f"{len(questions)} queries: at least {MIN_QUERIES} wanted")
    langs = Counter(q.language for q in questions)
    if len(langs) < MIN_LANGUAGES or "python" not in langs:
        problems.append(f"languages {dict(langs)}: Python and {MIN_LANGUAGES - 1} others wanted")
    for lang, n in langs.items():
        if n < MIN_PER_LANGUAGE:
            problems.append(f"{lang}: {n} queries, at least {MIN_PER_LANGUAGE} wanted")
        splits = {q.split for q in questions if q.language == lang}
        if splits != {"tune", "test"}:
            problems.append(f"{lang}: only in the {splits} split(s)")
    kinds = Counter(q.kind for q in questions)
    total = max(len(questions), 1)
    shares = {
        "where+how": (kinds["where"] + kinds["how"]) / total,
        "behaviour": kinds["behaviour"] / total,
        "mixed": kinds["mixed"] / total,
    }
    for key, (lo, hi) in MIX_BOUNDS.items():
        if not lo <= shares[key] <= hi:
            problems.append(f"{key} is {shares[key]:.0%} of the queries, wanted {lo:.0%}-{hi:.0%}")
    return problems


def fill(path: Path, root: Path) -> int:
    """Give every target written as a name only (with an optional `@line` hint) its lines."""
    rows = read_rows(path)
    filled = 0
    for row in rows:
        for t in row["targets"]:
            if "start_line" in t:
                continue
            name, _, hint = t["name"].partition("@")
            try:
                start, end = locate(root / t["repo"] / t["path"], name, int(hint or 0) or None)
            except (ValueError, OSError) as e:
                print(f"{row['id']}: {e}", file=sys.stderr)
                continue
            t.update(name=name, start_line=start, end_line=end)
            filled += 1
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return filled


def stats(questions: list[Question]) -> str:
    lines = ["| language | queries | tune | test | where | how | behaviour | mixed |"]
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    groups = [*sorted({q.language for q in questions}), "all"]
    for lang in groups:
        qs = [q for q in questions if lang in ("all", q.language)]
        k = Counter(q.kind for q in qs)
        s = Counter(q.split for q in qs)
        lines.append(
            f"| {lang} | {len(qs)} | {s['tune']} | {s['test']} | {k['where']} | {k['how']} | "
            f"{k['behaviour']} | {k['mixed']} |"
        )
    return "\n".join(lines)


def ensure_valid(path: Path = DATA, cache: Path = sources.CACHE) -> list[Question]:
    """The questions, after the corpus is in place and every check passed (else exit)."""
    libs, _ = sources.ensure_corpus(cache)
    questions = load_questions(path)
    problems = validate(questions, sources.corpus_root(cache), libs)
    if problems:
        raise SystemExit(
            f"{path.name}: {len(problems)} problem(s):\n  " + "\n  ".join(problems[:50])
        )
    return questions


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("validate", "fill", "stats"))
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--cache", type=Path, default=sources.CACHE)
    args = ap.parse_args(argv)
    if args.command == "fill":
        sources.ensure_corpus(args.cache)
        n = fill(args.data, sources.corpus_root(args.cache))
        print(f"filled {n} target(s)")
        return
    if args.command == "stats":
        print(stats(load_questions(args.data)))
        return
    questions = ensure_valid(args.data, args.cache)
    n_targets = sum(len(q.targets) for q in questions)
    print(f"{len(questions)} questions, {n_targets} targets: all valid\n")
    print(stats(questions))


if __name__ == "__main__":
    main()
