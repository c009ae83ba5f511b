"""The long-question eval's repositories: bare git mirrors read, and trees written at a commit.

Each repository is a bare git directory `<MIRRORS>/<owner>+<name>/repo` (the GitHub snapshot's
own spelling; found whatever its case). A tree is written under `bench/.cache/long/trees/`,
one folder per repository, holding the files of one commit at a time: what
`git archive <commit> | tar -x` would write, less symbolic links, submodules and every path
that holds a reserved or training library's name (the file-level eval's rule,
`Forbidden.in_path`), and less the blobs the snapshot does not carry (a snapshot may leave
out its largest files: jars, binaries, data; `Tree.absent` counts them). Moving a folder to
another commit rewrites only the files whose blob differs and removes those that are gone, so
the files that did not change keep their mtime and a sweep of the folder re-reads only what
the commits changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.eval.files.corpus import Forbidden

REPO = Path(__file__).resolve().parents[3]
MIRRORS = REPO.parent / ".mirror"
TREES = REPO / "bench" / ".cache" / "long" / "trees"
FILE_MODES = ("100644", "100755")  # not links (120000) nor submodules (160000)


class MirrorMissing(Exception):
    """A repository with no mirror on this machine."""


def slug(repo: str) -> str:
    """The folder name of a repository: owner+name, lowercase."""
    return repo.lower().replace("/", "+")


@dataclass(frozen=True)
class Mirror:
    repo: str
    path: Path

    @staticmethod
    def find(repo: str, mirrors: Path = MIRRORS) -> Mirror:
        wanted = slug(repo)
        if mirrors.is_dir():
            for entry in sorted(mirrors.iterdir()):
                if entry.name.lower() == wanted and (entry / "repo").is_dir():
                    return Mirror(repo, entry / "repo")
        raise MirrorMissing(
            f"{repo}: no mirror at {mirrors}/{repo.replace('/', '+')}/repo: bring the "
            f"repository's snapshot there (a bare git directory with its history)"
        )

    def git(self, *args: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, check=True
        )
        return out.stdout

    def has_commit(self, commit: str) -> bool:
        probe = ["git", "-C", str(self.path), "cat-file", "-e", f"{commit}^{{commit}}"]
        return subprocess.run(probe, capture_output=True).returncode == 0

    def blobs(self, commit: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) of every regular file at `commit`."""
        return _blobs(self.path, commit)

    def files(self, commit: str) -> set[str]:
        return set(self.blobs(commit))

    def absent(self, commit: str, paths: list[str]) -> list[str]:
        """The paths of `paths` at `commit` whose blob the snapshot does not carry."""
        blobs = self.blobs(commit)
        ids = [blobs[p][1] for p in paths if p in blobs]
        out = subprocess.run(
            ["git", "-C", str(self.path), "cat-file", "--batch-check"],
            input="".join(f"{i}\n" for i in ids),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        missing = {line.split()[0] for line in out.splitlines() if line.endswith(" missing")}
        return [p for p in paths if p in blobs and blobs[p][1] in missing]

    def kept(self, commit: str) -> tuple[dict[str, tuple[str, str]], list[str]]:
        """The files a tree at `commit` holds, and the paths left out (a reserved or training
        library's name)."""
        kept, refused = {}, []
        for path, blob in self.blobs(commit).items():
            if Forbidden.load().in_path(path) is None:
                kept[path] = blob
            else:
                refused.append(path)
        return kept, refused


@cache
def _blobs(git_dir: Path, commit: str) -> dict[str, tuple[str, str]]:
    out = subprocess.run(
        ["git", "-C", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="surrogateescape")
    blobs = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in FILE_MODES:
            blobs[path] = (mode, sha)
    return blobs


@dataclass(frozen=True)
class Tree:
    """A repository's folder at one commit."""

    path: Path
    commit: str
    files: int
    written: int  # files written to reach this commit (all of them, the first time)
    removed: int
    refused: int  # files left out for a reserved or training library's name
    absent: int  # files whose blob the snapshot does not carry


def materialise(mirror: Mirror, commit: str, trees: Path = TREES) -> Tree:
    """The repository's folder under `trees`, moved to `commit` (written whole the first
    time, or when its record is missing)."""
    folder = trees / slug(mirror.repo)
    record_path = trees / f"{slug(mirror.repo)}.json"
    wanted, refused = mirror.kept(commit)
    record: dict = {}
    if record_path.is_file() and folder.is_dir():
        record = json.loads(record_path.read_text())
    else:
        shutil.rmtree(folder, ignore_errors=True)
    have: dict[str, list[str]] = record.get("blobs", {})
    if record.get("commit") == commit:
        return Tree(folder, commit, len(have), 0, 0, len(refused), record.get("absent", 0))
    record_path.unlink(missing_ok=True)  # a write cut short leaves no record: rebuilt whole
    removed = 0
    for path in sorted(set(have) - set(wanted), reverse=True):
        target = folder / path
        if target.is_file() or target.is_symlink():
            target.unlink()
            removed += 1
        _prune(target.parent, folder)
    changed = [p for p, blob in wanted.items() if tuple(have.get(p, ())) != blob]
    absent = _write_blobs(mirror.path, folder, [(p, *wanted[p]) for p in changed])
    folder.mkdir(parents=True, exist_ok=True)
    blobs = {p: list(b) for p, b in wanted.items() if p not in absent}
    record = {"commit": commit, "blobs": blobs, "absent": len(absent)}
    record_path.write_text(json.dumps(record))
    written = len(changed) - len(absent)
    return Tree(folder, commit, len(blobs), written, removed, len(refused), len(absent))


def _prune(folder: Path, top: Path) -> None:
    """Remove `folder` and its parents up to `top` while they are empty."""
    while folder != top and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _write_blobs(git_dir: Path, folder: Path, wanted: list[tuple[str, str, str]]) -> set[str]:
    """Write each (path, mode, blob id) under `folder`, read through one `git cat-file`; the
    paths whose blob the mirror lacks."""
    absent: set[str] = set()
    if not wanted:
        return absent
    proc = subprocess.Popen(
        ["git", "-C", str(git_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for path, mode, sha in wanted:
            proc.stdin.write(f"{sha}\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) == 2 and header[1] == b"missing":
                absent.add(path)
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after the contents
            target = folder / path
            if target.is_dir():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            target.write_bytes(data)
            os.chmod(target, 0o755 if mode == "100755" else 0o644)
    finally:
        proc.stdin.close()
        proc.wait()
    return absent
