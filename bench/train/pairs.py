"""Training pairs for the embedding model: a person's words -> the code they describe.

Mined from the training corpus (`training_corpus.py`) with the product's own tree-sitter
definitions, in three kinds, each pairing text with a definition as the chunker would embed it
(the chunker's header, then the code) with the text taken out of the code:

- `doc`: a definition's doc comment or docstring, first paragraph, markup and tags removed,
  and a Go-style leading name dropped ("NewRouter returns a router" -> "returns a router");
- `comment`: a comment line (or run of lines) inside a definition without nested ones, of at
  least four words, that reads as prose -> that definition (a person asks where something is
  done; such comments say what the code under them does);
- `name`: a definition's compound name split into words ("parse http date") -> it, so the
  model ties words to the identifiers that spell them in every casing.

Queries appearing for more than one definition are dropped (ambiguous), each definition keeps
at most `MAX_PER_DEFINITION` comment pairs, each library at most `--per-library` pairs (seeded
sample), so no one library or kind dominates. Writes `bench/.cache/train/pairs.jsonl` and
prints the counts per language and kind.

    .venv/bin/python -m bench.train.pairs [--per-library 1000] [--seed 13]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from bench.train.pair import Pair, document
from bench.train.training_corpus import CACHE, ensure_corpus
from chunkers.grammars import has_symbols, parser_for
from chunkers.symbols import Definition, extract
from indexer.lexical import split_identifier as split_words

PAIRS = CACHE / "pairs.jsonl"
MIN_WORDS, MAX_WORDS = 4, 40
MAX_PER_DEFINITION = 2
NAME_SHARE = 0.15  # name pairs, at most this share of a library's pairs

_LINE_COMMENT = {
    "python": "#",
    "ruby": "#",
    "php": "//",
    "go": "//",
    "javascript": "//",
    "typescript": "//",
}
_TAG = re.compile(
    r"^\s*[@:](param|return|returns|throws|throw|type|see|since|example|deprecated"
    r"|var|link|internal|api|template|psalm|phpstan|category|ignore|rtype|raises"
    r"|arg|yield|yields|option|private|public|author|license|todo|note|overload)\b",
    re.I,
)
_LEAD_TAG = re.compile(
    r"^@(summary|description|desc|name|category|kind|function|memberof|static|"
    r"module|class|constructor|method|alias|private|public|protected)\b",
    re.I,
)
_MARKUP = [
    (re.compile(r":[a-z]+:`~?([^`]+)`"), r"\1"),  # :func:`name`
    (re.compile(r"\{@link\s+([^}\s|]+)[^}]*\}"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # markdown link
    (re.compile(r"https?://\S+"), ""),
    (re.compile(r"`+([^`]*)`+"), r"\1"),
    (re.compile(r"<[^>]{1,40}>"), " "),  # html tags
    (re.compile(r"\*\*?([^*]+)\*\*?"), r"\1"),
    (re.compile(r"\s+"), " "),
]
_NOISE = re.compile(
    r"^(todo|fixme|xxx|hack|noqa|type:|pylint|eslint|nolint|phpcs|@ts-|"
    r"istanbul|prettier|fallthrough|go:|nosec|deprecated|copyright|license|"
    r"see |note:|\$)",
    re.I,
)
_CODEISH = re.compile(r"[{};=]|\(\)|->|=>|::|\w\(|^\w+\.\w+")


def clean(text: str) -> str:
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.strip()


def first_paragraph(lines: list[str]) -> str:
    """Prose up to the first blank line, tag line or code fence; cut to the first sentence
    when longer than MAX_WORDS."""
    kept: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if kept:
                break
            continue
        lead = _LEAD_TAG.match(stripped)
        if lead:  # JSDoc's "@summary Add days" / "@description ...": the tag's text is prose
            if kept or lead.group(1).lower() in ("summary", "description", "desc"):
                stripped = stripped[lead.end() :].strip()
                if not stripped:
                    continue
            else:
                continue  # "@name addDays", "@category Day Helpers" before any prose
        if _TAG.match(stripped) or stripped.startswith(("```", ">>>", "..", "@")):
            break
        kept.append(stripped)
    text = clean(" ".join(kept))
    if len(text.split()) > MAX_WORDS:
        text = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return text


def acceptable(query: str) -> bool:
    words = query.split()
    if not (MIN_WORDS <= len(words) <= MAX_WORDS) or _NOISE.match(query):
        return False
    letters = sum(c.isalpha() or c == " " for c in query)
    return letters >= 0.8 * len(query) and not _CODEISH.search(query)


def drop_leading_name(query: str, name: str) -> str:
    """Go (and some JS/PHP) docs open with the name: keep what it says about it."""
    words = query.split()
    for skip in (1, 2):
        if (
            len(words) > skip
            and words[skip - 1].strip("().,:") == name
            and (skip == 1 or words[0].lower() in ("a", "an", "the"))
        ):
            return " ".join(words[skip:])
    return query


def comment_text(lines: list[str]) -> list[str]:
    """Doc-comment lines with their markers removed."""
    out = []
    for line in lines:
        s = line.strip()
        for marker in ("/**", "/*!", "/*", "*/", "///", "//!", "//", "#", "*"):
            if s.startswith(marker):
                s = s[len(marker) :]
                break
        s = s.removesuffix("*/").strip()
        out.append(s)
    return out


def walk(defs: list[Definition]) -> Iterator[Definition]:
    for d in defs:
        yield d
        yield from walk(d.children)


def python_docstrings(text: str) -> dict[int, tuple[str, int, int]]:
    """Signature line -> (docstring, first line, last line) for every documented def/class."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node)
            body0 = node.body[0] if node.body else None
            if doc and body0 is not None and body0.end_lineno is not None:
                out[node.lineno] = (doc, body0.lineno, body0.end_lineno)
    return out


def mine_file(lib: str, rel: str, language: str, text: str) -> Iterator[Pair]:
    source = text.encode("utf-8")
    if not has_symbols(language):
        return
    defs = extract(parser_for(language).parse(source), language, source)
    lines = text.splitlines()
    docstrings = python_docstrings(text) if language == "python" else {}
    marker = _LINE_COMMENT[language]
    for d in walk(defs):
        if d.end_line - d.start_line < 1 or d.end_line > len(lines):
            continue
        short = d.short_name or d.name.rsplit(".", 1)[-1]
        # The doc: above the signature (attached comment lines), or a Python docstring.
        doc_lines: set[int] = set()
        if language == "python":
            found = docstrings.get(d.name_line)
            doc = first_paragraph(found[0].splitlines()) if found else ""
            if found:
                doc_lines = set(range(found[1], found[2] + 1))
        else:
            above = [
                i
                for i in range(d.start_line, d.name_line)
                if lines[i - 1].strip().startswith(("/*", "*", "//", "#"))
            ]
            doc = first_paragraph(comment_text([lines[i - 1] for i in above]))
            doc_lines = set(above)
        doc = drop_leading_name(doc, short)
        base = document(lib, rel, language, d, lines, doc_lines)
        if doc and acceptable(doc):
            yield Pair("doc", language, lib, rel, d.name_line, doc, base)
        words = split_words(short)
        if len(words) >= 2:
            yield Pair(
                "name",
                language,
                lib,
                rel,
                d.name_line,
                " ".join(words),
                base,
            )
        if d.children:
            continue
        # Comments inside a leaf definition: a run of line comments, as one text.
        taken = 0
        i = d.name_line + 1
        while i <= d.end_line and taken < MAX_PER_DEFINITION:
            if i in doc_lines or not lines[i - 1].strip().startswith(marker):
                i += 1
                continue
            run = []
            while i <= d.end_line and lines[i - 1].strip().startswith(marker):
                run.append(i)
                i += 1
            text_run = clean(" ".join(lines[j - 1].strip()[len(marker) :].strip() for j in run))
            if acceptable(text_run):
                taken += 1
                yield Pair(
                    "comment",
                    language,
                    lib,
                    rel,
                    run[0],
                    text_run,
                    document(lib, rel, language, d, lines, doc_lines | set(run)),
                )


def mine(per_library: int, seed: int) -> tuple[list[Pair], str]:
    libs, digest = ensure_corpus()
    rng = random.Random(seed)
    chosen: list[Pair] = []
    for lib, files in libs:
        found: list[Pair] = []
        for rel in files:
            text = (CACHE / "corpus" / lib.name / rel).read_text("utf-8", errors="replace")
            found.extend(mine_file(lib.name, rel, lib.language, text))
        # One document per text and one text per document: duplicates (a .js and its .cjs,
        # an overload's repeated doc) and ambiguous texts ("Returns the value") go.
        by_query: dict[str, set[str]] = defaultdict(set)
        for p in found:
            by_query[p.query.lower()].add(p.document)
        seen: set[tuple[str, str]] = set()
        unique = []
        for p in found:
            key = (p.query.lower(), p.document)
            if len(by_query[p.query.lower()]) == 1 and key not in seen:
                seen.add(key)
                unique.append(p)
        names = [p for p in unique if p.kind == "name"]
        others = [p for p in unique if p.kind != "name"]
        rng.shuffle(others)
        rng.shuffle(names)
        n_names = min(len(names), int(per_library * NAME_SHARE), max(len(others) // 5, 1))
        picked = others[: per_library - n_names] + names[:n_names]
        chosen.extend(sorted(picked, key=lambda p: (p.path, p.line, p.kind)))
    return chosen, digest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-library", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path, default=PAIRS)
    args = ap.parse_args(argv)
    pairs, digest = mine(args.per_library, args.seed)
    body = "".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in pairs)
    args.out.write_text(body)
    print(
        f"{len(pairs)} pairs from corpus {digest[:16]} -> {args.out} "
        f"(sha256 {hashlib.sha256(body.encode()).hexdigest()[:16]})"
    )
    counts = Counter((p.language, p.kind) for p in pairs)
    for lang in sorted({p.language for p in pairs}):
        kinds = ("doc", "comment", "name")
        row = ", ".join(f"{k} {counts[(lang, k)]}" for k in kinds)
        print(f"  {lang:<11} {sum(counts[(lang, k)] for k in kinds):>6}  ({row})")


if __name__ == "__main__":
    main()
