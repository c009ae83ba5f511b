"""Build the long-question eval's fresh held-out set (`fresh.jsonl`) from three other sources.

Real GitHub issues written by their reporters, over repositories that questions.jsonl does not
use, measured once and never tuned on (README.md, "A fresh set"). Every question's split is
`fresh`. The three sources are read from their repositories' git history at a pinned commit
(SOURCES), and the files read are checked against a pinned digest (the sha256 of the sorted
`sha256  path` lines of every file read, as `sha256sum` writes them):

- Kotlin SWE-bench (`ifabrish/kotlin-swe-bench`, `tasks/<owner>_<repo>-<PR>/`): the query is
  the issue(s) of `instruction.md` (each issue's title and body, less the task's heading), the
  base commit the `git checkout <sha>` of `environment/prepare.sh`, the fix
  `solution/fix.patch`; the id is the PR's (`task.toml`).
- Multi-SWE-bench's Java files (`multi-swe-bench/multi-swe-bench`, a commit reachable only
  through refs/pull/39/head, `mswebench_dataset/java/*_dataset.jsonl`): the query is the
  resolved issue(s)' title and body (never the PR's text), the base `base.sha`, the fix
  `fix_patch`; the id is the PR's.
- GitBug-Java (`gitbugactions/gitbug-java`, `data/bugs/*.json`, one bug a line): only bugs
  linked to an issue; the query is the first linked issue's title and body (never its
  comments, never the commit message; a linked pull request is not an issue), the base
  `previous_commit_hash`, the fix `bug_patch`; the id is the issue's.

Data files whose blob the snapshot does not carry (4 MiB or more) are listed in UNREAD and
never read. A repository is left out when questions.repo_refusal refuses it, when
questions.jsonl already uses it, or when it has no mirror here (NO_SNAPSHOT says why where it
is known); an instance when its base commit is not in the mirror, when its tree at the base
holds more than MAX_SOURCE_FILES source files, when the fix changes no non-test source file
that existed at the base, or when a target's path holds a reserved or training name
(build.question); then at most CAP_PER_REPO a repository, the lowest-hashed ids.
`created_at` is the source's date where it gives one (GitBug-Java: the fix commit's time),
else the base commit's committer date.

    .venv/bin/python -m bench.eval.long.fresh             # writes fresh.jsonl, prints counts
    .venv/bin/python -m bench.eval.long.fresh --check     # the same, writes nothing
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from bench.eval.long import build as bmod
from bench.eval.long import questions as qmod
from bench.eval.long.questions import (
    CAP_PER_REPO,
    FRESH_SPLIT,
    Question,
    repo_refusal,
    source_language,
)
from bench.eval.long.trees import MIRRORS, Mirror, MirrorMissing

KOTLIN = "Kotlin-SWE-bench"
MSWE = "Multi-SWE-bench/java"
GITBUG = "GitBug-Java"


@dataclass(frozen=True)
class Source:
    repo: str  # owner/name of the source's GitHub repository
    commit: str
    folder: str  # where its data lies at `commit`
    digest: str  # sha256 of the sorted "sha256  path" lines of every file read


SOURCES = {
    KOTLIN: Source(
        "ifabrish/kotlin-swe-bench",
        "272254fd34da2fd9023a9c798f6614994eb2be06",
        "tasks",
        "ae46f50a64c1c066e544b4ddca015ce5d2245f289457e3ae3886b46e44eeecc9",
    ),
    MSWE: Source(
        "multi-swe-bench/multi-swe-bench",
        "855ca03b822ac02f5ab9a37c3171b1929716327f",
        "mswebench_dataset/java",
        "883a4e714dcd32f9d98bae7ee3ec4255a18fa4ba186034919430e1dc35cea834",
    ),
    GITBUG: Source(
        "gitbugactions/gitbug-java",
        "fe986fb7919be62c2a6f611ee16659e849646798",
        "data/bugs",
        "7c25c2a6f6521a0ed192dd58ea70c5c14b4eb5eb4ca3675dd9b513a287b930d8",
    ),
}
# Data files the snapshots do not carry (their blobs are 4 MiB or more): never read, so the
# output does not change should a later snapshot carry them.
UNREAD = {
    MSWE: (
        "mswebench_dataset/java/elastic__logstash_dataset.jsonl",
        "mswebench_dataset/java/fasterxml__jackson-databind_dataset.jsonl",
        "mswebench_dataset/java/spring-projects__spring-boot_dataset.jsonl",
    ),
    GITBUG: (
        "data/bugs/TheAlgorithms-Java.json",
        "data/bugs/davidmoten-openapi-to-plantuml.json",
        "data/bugs/jhy-jsoup.json",
        "data/bugs/traccar-traccar.json",
    ),
}
# Why a repository has no mirror here, where that is known (`fetch` refused it).
NO_SNAPSHOT = {"google/guava": "its snapshot (709 MB) is over the 500 MiB a snapshot may weigh"}
MAX_SOURCE_FILES = 15_000  # a tree at its base with more source files is left out

ISSUE_RE = re.compile(r"^## Issue #(\d+) (https://\S+): (.*)$", re.MULTILINE)
CHECKOUT_RE = re.compile(r"^git checkout ([0-9a-f]{40})\s*$", re.MULTILINE)
SEPARATOR_RE = re.compile(r"\n---\s*\Z")  # instruction.md's rule between two issues


@dataclass
class Outcome(bmod.Outcome):
    """What became of each repository's instances, and the source of each repository."""

    source: dict[str, str] = field(default_factory=dict)

    def count(self, repo: str, label: str) -> None:
        self.total[repo] += 1
        self.source[repo] = label


class SourceChanged(SystemExit):
    """A source whose files differ from the pinned digest."""


@dataclass
class Reader:
    """One source's files at its pinned commit, each file read recorded for the digest."""

    source: Source
    mirror: Mirror
    read: dict[str, str] = field(default_factory=dict)  # path -> sha256

    def list(self, folder: str) -> list[str]:
        out = self.mirror.git("ls-tree", "--name-only", f"{self.source.commit}:{folder}")
        return [f"{folder}/{name}" for name in sorted(out.splitlines())]

    def text(self, path: str) -> str:
        data = subprocess.run(
            ["git", "-C", str(self.mirror.path), "show", f"{self.source.commit}:{path}"],
            capture_output=True,
            check=True,
        ).stdout
        self.read[path] = hashlib.sha256(data).hexdigest()
        return data.decode()

    def digest(self) -> str:
        lines = "".join(f"{sha}  {path}\n" for path, sha in sorted(self.read.items()))
        return hashlib.sha256(lines.encode()).hexdigest()


def issue_text(title: str, body: str | None) -> str:
    """One issue as SWE-bench writes a problem statement: its title, a newline, its body."""
    return f"{title.strip()}\n{(body or '').strip()}".strip()


def instance(
    label: str, path: str, repo: str, number: int, base: str, text: str, patch: str
) -> dict:
    """A row in build.question's shape (`created_at` filled in later where None)."""
    return {
        "instance_id": f"{repo.replace('/', '__')}-{number}",
        "repo": repo,
        "file": f"{label}:{path}",
        "base_commit": base,
        "created_at": None,
        "problem_statement": text,
        "patch": patch,
    }


def read_kotlin(reader: Reader, outcome: Outcome) -> list[dict]:
    rows = []
    for task in reader.list(reader.source.folder):
        meta = tomllib.loads(reader.text(f"{task}/task.toml"))["metadata"]["source"]
        repo = f"{meta['repository_owner']}/{meta['repository_name']}".lower()
        issues = list(ISSUE_RE.finditer(instruction := reader.text(f"{task}/instruction.md")))
        bases = CHECKOUT_RE.findall(reader.text(f"{task}/environment/prepare.sh"))
        if not issues or len(set(bases)) != 1:
            raise SystemExit(f"{task}: {len(issues)} issue(s), base commits {bases}")
        texts = []
        for i, m in enumerate(issues):
            end = issues[i + 1].start() if i + 1 < len(issues) else len(instruction)
            body = SEPARATOR_RE.sub("", instruction[m.end() : end])  # the "---" between two
            texts.append(issue_text(m.group(3), body))
        patch = reader.text(f"{task}/solution/fix.patch")
        number = int(meta["code_change_id"])
        rows.append(instance(KOTLIN, task, repo, number, bases[0], "\n\n".join(texts), patch))
        outcome.count(repo, KOTLIN)
    return rows


def read_mswe(reader: Reader, outcome: Outcome) -> list[dict]:
    rows = []
    for path in reader.list(reader.source.folder):
        if not path.endswith("_dataset.jsonl") or path in UNREAD[MSWE]:
            continue
        for line in reader.text(path).splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            repo = f"{row['org']}/{row['repo']}".lower()
            outcome.count(repo, MSWE)
            # each issue once (a row may list one twice)
            issues = list({i["number"]: i for i in reversed(row["resolved_issues"])}.values())
            issues.reverse()
            if not issues:
                outcome.drop(repo, "no resolved issue")
                continue
            text = "\n\n".join(issue_text(i["title"], i["body"]) for i in issues)
            rows.append(
                instance(
                    MSWE, path, repo, int(row["number"]), row["base"]["sha"], text,
                    row["fix_patch"],
                )
            )  # fmt: skip
    return rows


def read_gitbug(reader: Reader, outcome: Outcome) -> list[dict]:
    rows = []
    for path in reader.list(reader.source.folder):
        if not path.endswith(".json") or path in UNREAD[GITBUG]:
            continue
        for line in reader.text(path).splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            repo = str(row["repository"]).lower()
            outcome.count(repo, GITBUG)
            if not row["issues"]:
                outcome.drop(repo, "no linked issue (a commit message only)")
                continue
            issues = [i for i in row["issues"] if not i.get("is_pull_request")]
            if not issues:
                outcome.drop(repo, "linked only to pull requests, no issue")
                continue
            first = issues[0]
            text = issue_text(first["title"], first["body"])
            got = instance(
                GITBUG, path, repo, int(first["id"]), row["previous_commit_hash"], text,
                row["bug_patch"],
            )  # fmt: skip
            got["created_at"] = bmod.created(row["commit_timestamp"])
            rows.append(got)
    return rows


READERS = {KOTLIN: read_kotlin, MSWE: read_mswe, GITBUG: read_gitbug}


def read_sources(mirrors: Path, outcome: Outcome) -> tuple[list[dict], dict[str, str]]:
    """Every instance of the three sources, and each source's digest; a digest that differs
    from the pinned one stops the build."""
    rows: list[dict] = []
    digests = {}
    for label, source in SOURCES.items():
        reader = Reader(source, Mirror.find(source.repo, mirrors))
        if not reader.mirror.has_commit(source.commit):
            raise SystemExit(f"{label}: {source.commit} is not in {reader.mirror.path}")
        got = READERS[label](reader, outcome)
        digests[label] = reader.digest()
        if digests[label] != source.digest:
            raise SourceChanged(
                f"{label}: the {len(reader.read)} files read at {source.commit[:12]} have "
                f"digest {digests[label]}, pinned {source.digest}"
            )
        rows += got
    return rows, digests


def committed(mirror: Mirror, commit: str) -> str:
    """The commit's committer date, in UTC: 2023-01-23T04:10:47Z."""
    stamp = int(mirror.git("show", "-s", "--format=%ct", commit).strip())
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@cache
def _is_source(path: str) -> bool:
    return source_language(path) is not None


def source_files(mirror: Mirror, commit: str) -> int:
    return sum(1 for path in mirror.files(commit) if _is_source(path))


def build(rows: Sequence[dict], mirrors: Path, outcome: Outcome) -> list[Question]:
    """The questions of the instances (every split `fresh`), what was left out counted in
    `outcome`."""
    questions, _ = qmod.load(qmod.DATA)
    used = {q.repo for q in questions}
    kept: list[Question] = []
    found: dict[str, Mirror | None] = {}
    refusals: dict[str, str | None] = {}
    seen: set[str] = set()
    for row in rows:
        repo = row["repo"]
        if repo not in refusals:
            refusals[repo] = repo_refusal(repo)
        if refusals[repo] is not None:
            outcome.drop(repo, f"repository {refusals[repo]}")
            continue
        if repo in used:
            outcome.drop(repo, "repository already in questions.jsonl")
            continue
        if repo not in found:
            try:
                found[repo] = Mirror.find(repo, mirrors)
            except MirrorMissing:
                found[repo] = None
        mirror = found[repo]
        if mirror is None:
            outcome.drop(repo, f"no snapshot: {NO_SNAPSHOT.get(repo, 'no mirror here')}")
            continue
        if row["instance_id"] in seen:
            outcome.drop(repo, "the same id as another instance")
            continue
        seen.add(row["instance_id"])
        if not mirror.has_commit(row["base_commit"]):
            outcome.drop(repo, "base commit not in the mirror")
            continue
        if (n := source_files(mirror, row["base_commit"])) > MAX_SOURCE_FILES:
            outcome.drop(repo, f"over {MAX_SOURCE_FILES:,} source files at the base ({n:,})")
            continue
        if row["created_at"] is None:
            row = {**row, "created_at": committed(mirror, row["base_commit"])}
        if (q := bmod.question(row, mirror, outcome)) is not None:
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
    out = [replace(q, split=FRESH_SPLIT) for q in capped]
    return sorted(out, key=lambda q: (q.repo, q.created_at, q.qid))


def reason(why: str) -> str:
    """A drop's reason without its particulars (for the totals)."""
    if why.startswith("repository"):
        return why.split(" (")[0]
    if why.startswith("over ") and "source files" in why:
        return why.split(" (")[0]
    return why


def report(questions: Sequence[Question], outcome: Outcome, digests: dict[str, str]) -> str:
    langs = qmod.repo_languages(questions)
    lines = [
        "| source | repository | language | in the source | kept | dropped (why) |",
        "|---|---|---|---:|---:|---|",
    ]
    for repo in sorted(outcome.total, key=lambda r: (list(SOURCES).index(outcome.source[r]), r)):
        mine = [q for q in questions if q.repo == repo]
        why = "; ".join(f"{n} {w}" for w, n in sorted(outcome.dropped.get(repo, {}).items()))
        lines.append(
            f"| {outcome.source[repo]} | {repo} | {langs.get(repo, '-')} | "
            f"{outcome.total[repo]} | {len(mine)} | {why} |"
        )
    lines.append("")
    for label, source in SOURCES.items():
        repos_of = [r for r in outcome.total if outcome.source[r] == label]
        kept = [q for q in questions if outcome.source[q.repo] == label]
        unread = ", ".join(p.rsplit("/", 1)[1] for p in UNREAD.get(label, ()))
        lines.append(
            f"{label} ({source.repo} @ {source.commit[:12]}, digest {digests[label][:16]}…): "
            f"{sum(outcome.total[r] for r in repos_of)} instances in {len(repos_of)} "
            f"repositories, "
            f"kept {len(kept)} in {len({q.repo for q in kept})}"
            + (f"; not read (not in the snapshot): {unread}" if unread else "")
        )
    dropped: Counter[str] = Counter()
    repos: dict[str, set[str]] = {}
    for repo, counts in outcome.dropped.items():
        for why, n in counts.items():
            dropped[reason(why)] += n
            repos.setdefault(reason(why), set()).add(repo)
    lines.append(
        f"\n{sum(outcome.total.values())} instances in {len(outcome.total)} repositories; "
        f"kept {len(questions)} in {len(langs)} repositories; dropped:"
    )
    for why, n in dropped.most_common():
        lines.append(f"  {n} {why} ({len(repos[why])} repositories: "
                     + ", ".join(sorted(repos[why])) + ")")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=MIRRORS)
    ap.add_argument("--out", type=Path, default=qmod.FRESH)
    ap.add_argument("--check", action="store_true", help="print the counts, write nothing")
    args = ap.parse_args(argv)
    outcome = Outcome()
    rows, digests = read_sources(args.mirrors, outcome)
    built = build(rows, args.mirrors, outcome)
    print(report(built, outcome, digests))
    problems = qmod.validate(built, args.mirrors, fresh=True)
    if problems:
        raise SystemExit(
            f"{len(problems)} problem(s), nothing written:\n  " + "\n  ".join(problems)
        )
    print()
    print(qmod.stats(built, (FRESH_SPLIT,)))
    if not args.check:
        qmod.write(built, args.out)
        print(f"\nwrote {len(built)} questions to {args.out}")


if __name__ == "__main__":
    main()
