"""The training corpus: pinned packages of real code in six languages, none of them evaluated on.

`train_corpus.json` pins each artifact (PyPI sdist, npm tarball, Debian package) by name,
version and sha256; `ensure_corpus` fetches a missing one with the ordinary client (the same
code as the questions eval's sources), refuses a changed artifact, and unpacks the source files
of the library's language under `bench/.cache/train/corpus/<library>/`. Files are kept only when
no path component names a distribution reserved for evaluation, a library of the developer
questions eval, or a module of the docstring eval, and when they are not tests, examples,
builds or vendored copies. The kept files' digest is the corpus's identity: the pair file and
the model record it.

    .venv/bin/python -m bench.train.training_corpus     # fetch, verify, unpack; list the counts
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.eval import sources
from bench.eval.corpus import MODULES as DOCSTRING_EVAL_MODULES
from chunkers.detect import detect_language

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

MANIFEST = HERE / "train_corpus.json"
CACHE = ROOT / "bench" / ".cache" / "train"
# Path components that keep a file out: the questions eval's libraries (and their namespaces),
# the docstring eval's stdlib modules, and what is not a library's own source.
_QUESTIONS_EVAL_TEXT = (
    "marshmallow chi go-chi tanstack query-core semver money psr7 guzzlehttp guzzle"
)
QUESTIONS_EVAL_NAMES = frozenset(_QUESTIONS_EVAL_TEXT.split())
DOCSTRING_EVAL_NAMES = frozenset(m.removesuffix(".py") for m in DOCSTRING_EVAL_MODULES)
_NOT_SOURCE_TEXT = """test tests testing __tests__ spec specs example examples _examples doc docs
    benchmark benchmarks bench fixtures vendor _vendor node_modules dist build locale locales min
    esm es6 fp"""
NOT_SOURCE = frozenset(_NOT_SOURCE_TEXT.split())
_SUFFIX_TEXT = """.cjs cdn.js _test.go .test.ts .spec.ts .test.js .spec.js .min.js .d.ts _spec.rb
    _test.rb Test.php"""
NOT_SOURCE_SUFFIXES = tuple(_SUFFIX_TEXT.split())
MAX_FILE_BYTES = 400_000


@dataclass(frozen=True)
class TrainLibrary:
    name: str
    language: str
    version: str
    source: str
    package: str
    artifact: str
    sha256: str

    def as_source(self) -> sources.Library:
        return sources.Library(
            self.name,
            self.language,
            self.version,
            self.source,
            self.package,
            self.artifact,
            self.sha256,
            strip="",
            include=("*",),
            exclude=(),
            files=(),
        )


def load_manifest(path: Path = MANIFEST) -> list[TrainLibrary]:
    return [TrainLibrary(**entry) for entry in json.loads(path.read_text())["libraries"]]


def excluded_by(path: str) -> str | None:
    """Why `path` (library name first) is not training material, or None when it is."""
    if (reserved := sources.reserved_component(path)) is not None:
        return f"reserved for evaluation ({reserved})"
    for part in PurePosixPath(path.lower()).parts:
        stem = part.split(".", 1)[0]
        if part in QUESTIONS_EVAL_NAMES or stem in QUESTIONS_EVAL_NAMES:
            return f"a questions-eval library ({part})"
        if stem in DOCSTRING_EVAL_NAMES:
            return f"a docstring-eval module ({part})"
        if part in NOT_SOURCE:
            return "not library source"
    if path.endswith(NOT_SOURCE_SUFFIXES):
        return "not library source"
    return None


def kept_files(lib: TrainLibrary, members: dict[str, bytes]) -> dict[str, bytes]:
    """The archive's source files in the library's language that training may read."""
    kept: dict[str, bytes] = {}
    for rel, data in sorted(members.items()):
        if len(data) > MAX_FILE_BYTES or excluded_by(f"{lib.name}/{rel}") is not None:
            continue
        if detect_language(rel, data[:4096]) == lib.language:
            kept[rel] = data
    return kept


def ensure_corpus(cache: Path = CACHE) -> tuple[list[tuple[TrainLibrary, list[str]]], str]:
    """Fetch, verify and unpack every library; each with its kept files, and the digest."""
    digest = hashlib.sha256()
    out = []
    for lib in load_manifest():
        if (bad := sources.reserved_component(lib.name) or excluded_by(lib.package)) is not None:
            raise SystemExit(f"{lib.name}: {bad}: it cannot be training material")
        artifact = sources.download(lib.as_source(), cache / "downloads")
        files = kept_files(lib, sources._members(lib.as_source(), artifact))
        dest = cache / "corpus" / lib.name
        for rel, data in files.items():
            target = dest / rel
            if not (target.is_file() and target.read_bytes() == data):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            digest.update(f"{lib.name}/{rel}\0".encode() + hashlib.sha256(data).digest())
        out.append((lib, sorted(files)))
    return out, digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    libs, digest = ensure_corpus()
    for lib, files in libs:
        print(f"{lib.language:<11} {lib.name:<28} {lib.version:<28} {len(files):>5} files")
    print(f"{sum(len(f) for _, f in libs)} files from {len(libs)} libraries; corpus {digest[:16]}")


if __name__ == "__main__":
    main()
