"""Build the long-question eval's data (`questions.jsonl`) from SWE-bench's issues and fixes.

Reads two parquet files from the SWE-bench repository's history (SOURCE: its commit and paths,
each checked against its sha256): the SWE-bench dev split and SWE-bench Multilingual. A
repository is left out when it is reserved for evaluation, in SWE-bench's test split, a fork
of a reserved library, a library of the embedding model's training corpus
(questions.repo_refusal), or has no mirror on this machine (trees.py). An instance is left out
when its base commit is not in the mirror, when the fix changes no source file that existed at
that commit (tests, docs, configuration and added files are not targets: questions.is_test,
questions.source_language), or when a target's path holds a reserved or training library's
name (such files are never written into a tree). Then at most CAP_PER_REPO instances a
repository, the lowest-hashed ids; the splits are questions.assign_splits'. The query is the
issue's whole text (the runner asks its first 2,000 characters).

The parquet files are read by parquet_side.py in a virtual environment of its own
(`bench/.cache/long/parquet`, made on first use with `pip install pyarrow==26.0.1`), so
nothing is added to the product's dependencies.

    .venv/bin/python -m bench.eval.long.build             # writes questions.jsonl, prints counts
    .venv/bin/python -m bench.eval.long.build --check     # the same, writes nothing
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.eval.long import questions as qmod
from bench.eval.long.questions import (
    CAP_PER_REPO,
    Question,
    assign_splits,
    is_test,
    path_refusal,
    repo_refusal,
    source_language,
)
from bench.eval.long.trees import MIRRORS, Mirror, MirrorMissing

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / "bench" / ".cache" / "long"
PYARROW = "pyarrow==26.0.1"
SIDE = Path(__file__).with_name("parquet_side.py")
SOURCE_REPO = "SWE-bench/SWE-bench"
SOURCE_COMMIT = "9fa561428aeef6406f534c8370c670f9ce51c630"
# label -> (path at SOURCE_COMMIT, sha256 of the file)
SOURCE_FILES = {
    "SWE-bench/dev": (
        "data/SWE-bench/dev.parquet",
        "6e9a3cd6aa0e170563daad98c106926466347bd2091f14c746c7070aa96ed68e",
    ),
    "SWE-bench_Multilingual/test": (
        "data/SWE-bench_Multilingual/test.parquet",
        "f71dbee835fb3fd7d3b4b04334dab3f2c0ec16c518fb76b888d9d03d0a637904",
    ),
}

DIFF_RE = re.compile(r"^diff --git a/(.*) b/(.*)$")
HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
# A definition's name in a hunk header (the line git shows above the hunk), first match wins.
NAME_RES = tuple(
    re.compile(p)
    for p in (
        r"\b(?:def|fn|func|function|fun|sub|proc)\s+(?:\([^)]*\)\s*)?\*?\s*([A-Za-z_$][\w$]*[?!]?)",
        r"\bdef\s+self\.([A-Za-z_]\w*[?!=]?)",
        r"\b(?:class|struct|enum|trait|interface|module|impl|union|type|object|record)\s+"
        r"(?:<[^>]*>\s*)?(?:[\w:]+::)?([A-Za-z_]\w*)",
        r"([A-Za-z_$][\w$]*)\s*(?:=|:)\s*(?:async\s*)?(?:function\b|\([^)]*\)\s*=>)",
        r"([A-Za-z_][\w]*)\s*\([^;]*$",  # a C-like or Java-like signature: the name before "("
    )
)
NOT_NAMES = frozenset(
    """if for while switch return catch else sizeof new static const public private
    protected""".split()  # noqa: SIM905
)


@dataclass
class Change:
    """One file of a patch."""

    path: str
    added: bool = False
    deleted: bool = False
    headers: list[str] = field(default_factory=list)


def parse_patch(patch: str) -> list[Change]:
    changes: list[Change] = []
    for line in patch.splitlines():
        if m := DIFF_RE.match(line):
            changes.append(Change(m.group(2)))
        elif changes and line.startswith("new file mode"):
            changes[-1].added = True
        elif changes and line.startswith("deleted file mode"):
            changes[-1].deleted = True
        elif changes and (m := HUNK_RE.match(line)):
            changes[-1].headers.append(m.group(1).strip())
    return changes


def header_name(header: str) -> str | None:
    """The name of the definition a hunk header shows, where one can be read."""
    for pattern in NAME_RES:
        if (m := pattern.search(header)) and m.group(1) not in NOT_NAMES:
            return m.group(1)
    return None


def created(stamp: str) -> str:
    """SWE-bench's two spellings of a time as one: 2023-01-23T04:10:47Z."""
    return stamp.replace(" ", "T").rstrip("Z") + "Z"


def parquet_python(venv: Path) -> Path:
    """The interpreter of a virtual environment holding pyarrow, made on first use."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import pyarrow"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"making {venv} with {PYARROW} (once)", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PYARROW], check=True)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(
            f"could not install {PYARROW} into {venv} ({exc}): pip needs a package index"
        ) from exc
    return python


def read_source(mirrors: Path, cache: Path) -> list[dict]:
    """Every row of the source files (their `file` the label), each file's sha256 checked."""
    swe = Mirror.find(SOURCE_REPO, mirrors)
    cache.mkdir(parents=True, exist_ok=True)
    paths = {}
    for label, (path, sha) in SOURCE_FILES.items():
        data = subprocess.run(
            ["git", "-C", str(swe.path), "show", f"{SOURCE_COMMIT}:{path}"],
            capture_output=True,
            check=True,
        ).stdout
        if (got := hashlib.sha256(data).hexdigest()) != sha:
            raise SystemExit(f"{path} at {SOURCE_COMMIT[:12]}: sha256 {got}, pinned {sha}")
        local = cache / f"{label.replace('/', '-')}.parquet"
        local.write_bytes(data)
        paths[str(local)] = label
    out = cache / "source.json"
    subprocess.run(
        [str(parquet_python(cache / "parquet")), str(SIDE), str(out), *paths], check=True
    )
    rows = json.loads(out.read_text())
    for row in rows:
        row["file"] = paths[row["file"]]
    return rows


@dataclass
class Outcome:
    """What became of each repository's instances."""

    total: Counter[str] = field(default_factory=Counter)
    dropped: dict[str, Counter[str]] = field(default_factory=dict)

    def drop(self, repo: str, why: str) -> None:
        self.dropped.setdefault(repo, Counter())[why] += 1


def question(row: dict, mirror: Mirror, outcome: Outcome) -> Question | None:
    """The question of one instance, or None (the reason counted in `outcome`)."""
    repo = row["repo"]
    if not mirror.has_commit(row["base_commit"]):
        outcome.drop(repo, "base commit not in the mirror")
        return None
    tree = mirror.files(row["base_commit"])
    changes = parse_patch(row["patch"])
    targets = [
        c for c in changes
        if not c.added and c.path in tree and not is_test(c.path) and source_language(c.path)
    ]  # fmt: skip
    if not targets:
        outcome.drop(repo, "no source file the fix changes existed before it")
        return None
    if any(path_refusal(c.path) for c in targets):
        outcome.drop(repo, "a target's path holds a reserved or training name")
        return None
    langs = Counter(source_language(c.path) for c in targets)
    order = [source_language(c.path) for c in targets]
    language = max(langs, key=lambda lang: (langs[lang], -order.index(lang)))
    functions = []
    for c in targets:
        for name in dict.fromkeys(n for h in c.headers if (n := header_name(h))):
            functions.append((c.path, name))
    paths = [c.path for c in targets]
    return Question(
        qid=row["instance_id"],
        repo=repo,
        language=str(language),
        source=row["file"],
        base_commit=row["base_commit"],
        created_at=created(row["created_at"]),
        split="",
        text=row["problem_statement"],
        targets=tuple(paths),
        functions=tuple(functions),
        other_files=tuple(c.path for c in changes if c.path not in paths),
    )


def build(rows: Sequence[dict], mirrors: Path) -> tuple[list[Question], Outcome]:
    outcome = Outcome()
    kept: list[Question] = []
    found: dict[str, Mirror | None] = {}
    refusals: dict[str, str | None] = {}
    for row in rows:
        repo = row["repo"]
        outcome.total[repo] += 1
        if repo not in refusals:
            refusals[repo] = repo_refusal(repo)
        if refusals[repo] is not None:
            outcome.drop(repo, f"repository {refusals[repo]}")
            continue
        if repo not in found:
            try:
                found[repo] = Mirror.find(repo, mirrors)
            except MirrorMissing:
                found[repo] = None
        mirror = found[repo]
        if mirror is None:
            outcome.drop(repo, "no mirror (snapshot over the fetch limit or not available)")
            continue
        if (q := question(row, mirror, outcome)) is not None:
            kept.append(q)
    capped: list[Question] = []
    for repo in sorted({q.repo for q in kept}):
        mine = sorted(
            (q for q in kept if q.repo == repo),
            key=lambda q: hashlib.sha256(q.qid.encode()).hexdigest(),
        )
        capped += mine[:CAP_PER_REPO]
        for _ in mine[CAP_PER_REPO:]:
            outcome.drop(repo, f"over the cap of {CAP_PER_REPO} a repository")
    splits = assign_splits(capped)
    out = [replace(q, split=splits[q.qid]) for q in capped]
    return sorted(out, key=lambda q: (q.repo, q.created_at, q.qid)), outcome


def report(questions: Sequence[Question], outcome: Outcome) -> str:
    langs = qmod.repo_languages(questions)
    lines = [
        "| repository | language | in SWE-bench | kept | split | dropped (why) |",
        "|---|---|---:|---:|---|---|",
    ]
    for repo in sorted(outcome.total):
        mine = [q for q in questions if q.repo == repo]
        why = "; ".join(f"{n} {w}" for w, n in sorted(outcome.dropped.get(repo, {}).items()))
        split = "/".join(sorted({q.split for q in mine}, key=qmod.SPLITS.index)) or "-"
        lines.append(
            f"| {repo} | {langs.get(repo, '-')} | {outcome.total[repo]} | {len(mine)} | "
            f"{split} | {why} |"
        )
    dropped = Counter[str]()
    for counts in outcome.dropped.values():
        for why, n in counts.items():
            dropped[why.split(" (")[0] if why.startswith("repository") else why] += n
    lines.append(
        f"\n{sum(outcome.total.values())} instances in {len(outcome.total)} repositories; "
        f"kept {len(questions)} in {len(langs)} repositories; dropped: "
        + ", ".join(f"{n} {w}" for w, n in dropped.most_common())
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--out", type=Path, default=qmod.DATA)
    ap.add_argument("--check", action="store_true", help="print the counts, write nothing")
    args = ap.parse_args(argv)
    rows = read_source(args.mirrors, args.cache)
    built, outcome = build(rows, args.mirrors)
    print(report(built, outcome))
    problems = qmod.validate(built, args.mirrors)
    if problems:
        raise SystemExit(
            f"{len(problems)} problem(s), nothing written:\n  " + "\n  ".join(problems)
        )
    print()
    print(qmod.stats(built))
    if not args.check:
        qmod.write(built, args.out)
        print(f"\nwrote {len(built)} questions to {args.out}")


if __name__ == "__main__":
    main()
