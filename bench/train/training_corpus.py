"""The training corpus: pinned packages of real code in six languages, none of them evaluated on.

`train_corpus.json` pins each artifact (PyPI sdist, npm tarball, Debian package) by name,
version and sha256; `ensure_corpus` fetches a missing one with the ordinary client (the same
code as the questions eval's sources), refuses a changed artifact, and unpacks the source files
of the library's language under `bench/.cache/train/corpus/<library>/`.

No library reserved for evaluation can enter: the shared `reserved.txt` is read whole
(`bench/eval/reserved.py`, the rule every corpus tool applies: a name, a package, any path
component, a component's stem or its part before a hyphen), and a manifest whose library, package
or Debian source package holds a reserved name, or that names a library of an in-repo eval, is
refused before anything is unpacked. Files are kept only when no path component names a reserved
library, a library of the developer questions eval, or a module of the docstring eval, and when
they are not tests, examples, builds or vendored copies. The kept files' digest is the corpus's
identity: the pair file and the model record it.

    .venv/bin/python -m bench.train.training_corpus     # fetch, verify, unpack; list the counts
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.eval import sources
from bench.eval.corpus import MODULES as DOCSTRING_EVAL_MODULES
from bench.eval.reserved import reserved_component, reserved_in_name
from chunkers.detect import detect_language

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

MANIFEST = HERE / "train_corpus.json"
FILE_EVAL_MANIFESTS = ROOT / "bench" / "eval" / "files"
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
    if (reserved := reserved_component(path)) is not None:
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


def eval_library_names() -> frozenset[str]:
    """The libraries the file-level eval searches, by label and by package name."""
    names: set[str] = set()
    for path in sorted(FILE_EVAL_MANIFESTS.glob("corpus-*.json")):
        for lib in json.loads(path.read_text())["libraries"]:
            names.update(str(lib[key]).lower() for key in ("name", "package") if key in lib)
    return frozenset(names)


def refused(lib: TrainLibrary) -> str | None:
    """Why `lib` may not be training material, judged on its manifest entry alone."""
    for name in (lib.name, lib.package):
        if (reserved := reserved_in_name(name)) is not None:
            return f"{name!r} holds {reserved!r}, reserved for evaluation"
    evaluated = eval_library_names()
    for name in (lib.name, lib.package):
        if name.lower() in evaluated:
            return f"{name!r} is a library of the file-level eval"
        if (why := excluded_by(name)) is not None:
            return why
    return None


def debian_source_package(artifact: Path) -> str:
    """The source package a Debian binary package was built from (its own name when the
    control file names none)."""
    fields = subprocess.run(
        ["dpkg-deb", "--field", str(artifact), "Package", "Source"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    values = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
    # "Source: rails (2:6.1.7)" names a version too.
    return values.get("Source", values.get("Package", "")).split(" ", 1)[0]


def refused_source_package(lib: TrainLibrary, artifact: Path) -> str | None:
    """Why a Debian binary package may not be training material because of the source package
    it was built from (ruby-activesupport comes from rails), or None."""
    if lib.source != "debian":
        return None
    source = debian_source_package(artifact)
    if (reserved := reserved_in_name(source)) is not None:
        return f"built from the source package {source!r}, reserved for evaluation ({reserved})"
    return None


def ensure_corpus(
    cache: Path = CACHE, manifest: Path = MANIFEST
) -> tuple[list[tuple[TrainLibrary, list[str]]], str]:
    """Fetch, verify and unpack every library; each with its kept files, and the digest. A
    manifest naming anything reserved is refused whole, before anything is fetched."""
    digest = hashlib.sha256()
    out = []
    libs = load_manifest(manifest)
    for lib in libs:
        if (bad := refused(lib)) is not None:
            raise SystemExit(f"{lib.name}: {bad}: it cannot be training material")
    for lib in libs:
        artifact = sources.download(lib.as_source(), cache / "downloads")
        if (bad := refused_source_package(lib, artifact)) is not None:
            raise SystemExit(f"{lib.name}: {bad}: it cannot be training material")
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
