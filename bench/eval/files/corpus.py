"""The file-level eval's corpus: the libraries pinned in every `corpus-*.json` beside this file.

Each entry has the fields of `bench/eval/questions_corpus.json` (FORMAT.md). Artifacts are
fetched by their ordinary client into `bench/.cache/files/downloads` (pypi, npm and debian as
`bench/eval/sources.py` fetches them; `debian-source` by `apt-get source --download-only`
against Debian bookworm's deb-src through a private apt configuration under
`bench/.cache/files/apt`, never the system's), refused when their sha256 differs from the pin,
and exactly the kept files are unpacked under `bench/.cache/files/corpus/<library>/`.
The libraries of `corpus-unseen.json` are those of the unseen split (questions.py): they are
indexed apart from the others (`Corpus.part`), and no lever or weight is chosen on them.

No library or package may hold a name reserved for the hidden evaluation (`reserved.txt` in
the shared folder beside the repository, with the built-in copy below) or a library of the
embedding model's training corpus (`bench/train/train_corpus.json`), as a path component, its
stem, or its part before a hyphen (the rule of sources.py); no kept path a reserved name in
any of those forms, nor a training library's name as a whole component (a vendored folder).

    .venv/bin/python -m bench.eval.files.corpus                 # fetch, verify, unpack; a table
    .venv/bin/python -m bench.eval.files.corpus --only NAME     # some libraries only
    .venv/bin/python -m bench.eval.files.corpus --record        # write each library's `files`
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from bench.eval import sources
from bench.eval.reserved import forbidden_component, reserved_names

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = REPO / "bench" / ".cache" / "files"
TRAIN_CORPUS = REPO / "bench" / "train" / "train_corpus.json"
LANGUAGES = (
    "python", "javascript", "typescript", "go", "bash", "rust", "c", "cpp", "java", "csharp",
    "ruby", "php", "kotlin", "scala", "swift", "elixir", "lua",
)  # fmt: skip
SOURCES = ("pypi", "npm", "debian", "debian-source")
FIELDS = (
    "name", "language", "version", "source", "package", "artifact", "sha256", "strip",
    "include", "exclude", "files",
)  # fmt: skip
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]*")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "bookworm"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
UNSEEN = "unseen"  # the split of the libraries nothing is tuned on, and its corpus file's tag
UNSEEN_MANIFEST = f"corpus-{UNSEEN}.json"


class CorpusError(Exception):
    """A library that cannot be fetched, verified or unpacked as pinned."""


@dataclass(frozen=True)
class Pinned:
    """One library and the corpus file that pins it."""

    library: sources.Library
    manifest: Path

    @property
    def name(self) -> str:
        return self.library.name


def manifests(folder: Path = HERE) -> list[Path]:
    return sorted(folder.glob("corpus-*.json"))


def training_names() -> frozenset[str]:
    """The training corpus's libraries, by label and by package name."""
    if not TRAIN_CORPUS.is_file():
        return frozenset()
    data = json.loads(TRAIN_CORPUS.read_text())
    return frozenset(
        str(lib[key]).lower()
        for lib in data["libraries"]
        for key in ("name", "package")
        if key in lib
    )


@dataclass(frozen=True)
class Forbidden:
    """The names no library of this corpus may hold: those reserved for the hidden evaluation,
    and the training corpus's libraries."""

    reserved: frozenset[str]
    training: frozenset[str]

    @staticmethod
    def load() -> Forbidden:
        return Forbidden(reserved_names(), training_names())

    def in_name(self, name: str) -> str | None:
        """The forbidden name a library's or package's name holds (either list, any form)."""
        return forbidden_component(name, self.reserved | self.training)

    def in_path(self, path: str) -> str | None:
        """The forbidden name a kept path holds: a reserved name in any form (reserved.txt:
        "match every path component"), a training library's name as a whole component only
        (a vendored copy's folder; not a file such as `middleware/i18n.rb`)."""
        if (bad := forbidden_component(path, self.reserved)) is not None:
            return bad
        return next((p for p in PurePosixPath(path.lower()).parts if p in self.training), None)


def load(folder: Path = HERE) -> tuple[list[Pinned], list[str]]:
    """Every pinned library of every corpus file, and the problems of the entries refused
    (a field missing or unknown, a language or source outside the lists, a name used twice)."""
    pinned: list[Pinned] = []
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for path in manifests(folder):
        try:
            entries = json.loads(path.read_text())["libraries"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            problems.append(f"{path.name}: not a corpus file ({e})")
            continue
        for n, entry in enumerate(entries):
            where = f"{path.name}[{n}] {entry.get('name', '?')}"
            if sorted(entry) != sorted(FIELDS):
                missing = set(FIELDS) - set(entry)
                extra = set(entry) - set(FIELDS)
                problems.append(
                    f"{where}: fields missing {sorted(missing)}, unknown {sorted(extra)}"
                )
                continue
            if not NAME_RE.fullmatch(entry["name"]):
                problems.append(f"{where}: the name must be lowercase [a-z0-9-]")
            if entry["language"] not in LANGUAGES:
                problems.append(f"{where}: language {entry['language']!r} is not in {LANGUAGES}")
            if entry["source"] not in SOURCES:
                problems.append(f"{where}: source {entry['source']!r} is not one of {SOURCES}")
            if entry["name"] in seen:
                problems.append(f"{where}: also pinned in {seen[entry['name']].name}")
            seen[entry["name"]] = path
            entry = {**entry, **{k: tuple(entry[k]) for k in ("include", "exclude", "files")}}
            pinned.append(Pinned(sources.Library(**entry), path))
    return pinned, problems


def _apt_dir(cache: Path) -> Path:
    return cache / "apt"


def apt_options(cache: Path) -> list[str]:
    """apt-get options that read bookworm's deb-src from a private configuration only."""
    apt = _apt_dir(cache)
    return [
        "-o", "Dir::Etc::SourceList=/dev/null",
        "-o", f"Dir::Etc::SourceParts={apt / 'sources.list.d'}",
        "-o", f"Dir::State::Lists={apt / 'lists'}",
        "-o", f"Dir::Cache={apt / 'cache'}",
    ]  # fmt: skip


def update_apt_lists(cache: Path) -> None:
    """Write the private deb-src source and download its package lists."""
    apt = _apt_dir(cache)
    for sub in ("sources.list.d", "lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "sources.list.d" / "bookworm-src.sources").write_text(
        f"Types: deb-src\nURIs: {DEBIAN_MIRROR}\nSuites: {DEBIAN_SUITE}\nComponents: main\n"
        f"Signed-By: {DEBIAN_KEYRING}\n"
    )
    print(f"  apt-get update (deb-src {DEBIAN_SUITE}, private lists) ...", file=sys.stderr)
    done = subprocess.run(
        ["apt-get", *apt_options(cache), "update"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise CorpusError(
            f"apt-get update of the private deb-src lists failed: {done.stderr[-400:]}"
        )
    (apt / "updated").touch()


def _download_source(lib: sources.Library, downloads: Path, cache: Path) -> Path:
    """A debian-source library's upstream (or native) tarball, fetched when missing."""
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / lib.artifact
    if target.is_file():
        return target
    if not (_apt_dir(cache) / "updated").is_file():
        update_apt_lists(cache)
    command = ["apt-get", *apt_options(cache), "source", "--download-only"]
    command.append(f"{lib.package}={lib.version}")
    print(f"  fetching {lib.package} {lib.version} (debian-source) ...", file=sys.stderr)
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory(dir=downloads) as tmp:
            Path(tmp).chmod(0o777)  # apt hands the download to the _apt user
            done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
            fetched = Path(tmp) / lib.artifact
            if done.returncode == 0 and fetched.is_file():
                shutil.move(str(fetched), target)
                return target
            got = sorted(p.name for p in Path(tmp).iterdir())
        if attempt == 1 and done.returncode != 0:
            update_apt_lists(cache)  # stale lists: the version may be newer than they are
            continue
        raise CorpusError(
            f"{lib.name}: `apt-get source --download-only {lib.package}={lib.version}` did not "
            f"produce {lib.artifact} (exit {done.returncode}; got {got}): "
            f"{done.stderr.strip()[-400:]}"
        )
    raise AssertionError("unreachable")


def download(lib: sources.Library, cache: Path) -> Path:
    """The library's artifact, fetched with its client when missing; its sha256 checked."""
    downloads = cache / "downloads"
    if lib.source != "debian-source":
        try:
            return sources.download(lib, downloads)
        except SystemExit as e:
            raise CorpusError(str(e)) from None
    target = _download_source(lib, downloads, cache)
    digest = sources._sha256(target)
    if digest != lib.sha256:
        raise CorpusError(
            f"{lib.name}: {target} has sha256 {digest}, the manifest pins {lib.sha256}; "
            "delete the file to fetch it again, or update the pin deliberately"
        )
    return target


def fetch(lib: sources.Library, cache: Path, forbidden: Forbidden, record: bool) -> list[str]:
    """Fetch, verify and unpack one library; its kept files. Without `record`, a library whose
    `files` are recorded must keep exactly them (an unrecorded one, `[]`, keeps its selection)."""
    for what in (lib.name, lib.package):
        if (bad := forbidden.in_name(what)) is not None:
            raise CorpusError(f"{lib.name}: {what!r} holds {bad!r}, reserved or a training library")
    artifact = download(lib, cache)
    try:
        kept = sources.select(lib, list(sources._members(lib, artifact)))
    except (OSError, ValueError, EOFError) as e:  # tarfile's errors are ValueErrors too
        raise CorpusError(f"{lib.name}: cannot read {artifact.name}: {e}") from None
    if not kept:
        raise CorpusError(f"{lib.name}: no file under {lib.strip!r} matches the include globs")
    refused = [(rel, bad) for rel in kept if (bad := forbidden.in_path(rel))]
    if refused:
        listed = ", ".join(f"{rel} ({bad})" for rel, bad in refused[:8])
        raise CorpusError(
            f"{lib.name}: {len(refused)} kept path(s) hold a reserved or training library's "
            f"name: {listed}; exclude them"
        )
    if lib.files and not record and kept != list(lib.files):
        extra, missing = set(kept) - set(lib.files), set(lib.files) - set(kept)
        raise CorpusError(
            f"{lib.name}: the archive's selection differs from the recorded files "
            f"(extra {sorted(extra)[:5]}, missing {sorted(missing)[:5]})"
        )
    try:
        return sources.unpack(lib, artifact, corpus_root(cache) / lib.name, record=True)
    except SystemExit as e:
        raise CorpusError(str(e)) from None


def corpus_root(cache: Path = CACHE) -> Path:
    return cache / "corpus"


@dataclass(frozen=True)
class Corpus:
    """The libraries fetched (their `files` the kept files), and a digest of the whole."""

    libraries: list[sources.Library]
    root: Path
    digest: str
    unrecorded: list[str]  # libraries whose `files` are not recorded yet
    unseen: frozenset[str] = frozenset()  # the libraries pinned in UNSEEN_MANIFEST

    def library(self, name: str) -> sources.Library | None:
        return next((lib for lib in self.libraries if lib.name == name), None)

    def part(self, unseen: bool) -> Corpus:
        """The unseen libraries only, or the others only, with the digest of that part (the
        others' digest is the one the whole corpus had before the unseen libraries came)."""
        libs = [lib for lib in self.libraries if (lib.name in self.unseen) == unseen]
        names = {lib.name for lib in libs}
        return replace(
            self,
            libraries=libs,
            digest=corpus_digest(libs),
            unrecorded=[n for n in self.unrecorded if n in names],
            unseen=self.unseen & names,
        )


def corpus_digest(libraries: list[sources.Library]) -> str:
    """A digest of the libraries' pins and kept files, in their order."""
    digest = hashlib.sha256()
    for lib in libraries:
        digest.update(f"{lib.name}\0{lib.version}\0{lib.sha256}\0{'|'.join(lib.files)}\n".encode())
    return digest.hexdigest()


def ensure_corpus(
    cache: Path = CACHE,
    folder: Path = HERE,
    record: bool = False,
    only: set[str] | None = None,
    strict: bool = True,
) -> tuple[Corpus, list[str]]:
    """Fetch, verify and unpack every library (or `only` those); the corpus and the problems.
    With `strict`, any problem exits instead."""
    pinned, problems = load(folder)
    forbidden = Forbidden.load()
    libs: list[sources.Library] = []
    unrecorded: list[str] = []
    kept_by_name: dict[str, list[str]] = {}
    for p in pinned:
        if only and p.name not in only:
            continue
        try:
            kept = fetch(p.library, cache, forbidden, record)
        except CorpusError as e:
            problems.append(str(e))
            continue
        kept_by_name[p.name] = kept
        if not p.library.files:
            unrecorded.append(p.name)
        libs.append(replace(p.library, files=tuple(kept)))
    if strict and problems:
        raise SystemExit(f"corpus: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    if record:
        write_files(pinned, kept_by_name)
        unrecorded = []
    unseen = frozenset(p.name for p in pinned if p.manifest.name == UNSEEN_MANIFEST)
    corpus = Corpus(libs, corpus_root(cache), corpus_digest(libs), unrecorded, unseen)
    return corpus, problems


def write_files(pinned: list[Pinned], kept_by_name: dict[str, list[str]]) -> None:
    """Rewrite each corpus file's `files` lists for the libraries fetched (the one write this
    code makes to the data files)."""
    for path in sorted({p.manifest for p in pinned}):
        text = path.read_text()
        data = json.loads(text)
        changed = False
        for entry in data["libraries"]:
            kept = kept_by_name.get(entry.get("name"))
            if kept is not None and entry.get("files") != kept:
                entry["files"] = kept
                changed = True
        if changed:
            # Keep the writer's indentation (that of the first indented line).
            indent = next((len(line) - len(line.lstrip(" ")) for line in text.splitlines()[1:2]), 1)
            path.write_text(json.dumps(data, indent=indent or 1, ensure_ascii=False) + "\n")
            print(f"recorded the kept files in {path.name}", file=sys.stderr)


def table(corpus: Corpus) -> str:
    lines = [
        "| library | language | version | source | files | lines |",
        "|---|---|---|---|---:|---:|",
    ]
    for lib in sorted(corpus.libraries, key=lambda lib: (lib.language, lib.name)):
        base = corpus.root / lib.name
        n_lines = sum(len((base / f).read_bytes().splitlines()) for f in lib.files)
        lines.append(
            f"| {lib.name} | {lib.language} | {lib.version} | {lib.source} `{lib.package}` | "
            f"{len(lib.files)} | {n_lines:,} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write each library's kept files")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="these libraries only")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--data", type=Path, default=HERE, help="the folder of the corpus files")
    args = ap.parse_args(argv)
    corpus, problems = ensure_corpus(
        args.cache, args.data, record=args.record, only=set(args.only or ()), strict=False
    )
    print(table(corpus))
    print(f"\n{len(corpus.libraries)} libraries, digest {corpus.digest[:16]}, under {corpus.root}")
    if corpus.unrecorded:
        print(f"files not recorded yet (--record): {', '.join(corpus.unrecorded)}")
    if problems:
        print(f"\n{len(problems)} problem(s):\n  " + "\n  ".join(problems))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
