"""The questions eval's corpus: pinned releases of real libraries, fetched at bench time only.

`questions_corpus.json` pins each library (name, language, version, the package client that
fetches it, the artifact's sha256, the prefix stripped inside the archive, the include/exclude
globs, and the exact files kept). `ensure_corpus` downloads every artifact with its ordinary
client (`pip download`, `npm pack`, `apt-get download`) into `bench/.cache/questions/downloads`,
refuses one whose sha256 differs, and unpacks exactly the kept files under
`bench/.cache/questions/corpus/<library>/`, byte for byte (nothing blanked). The product never
fetches anything; this runs only when a bench asks for the corpus.

The libraries reserved for evaluation (`bench/eval/reserved.py` reads the shared list) may never
enter this corpus, under any path component, so a vendored copy cannot slip in either.

    .venv/bin/python -m bench.eval.sources            # fetch, verify, unpack; print the table
    .venv/bin/python -m bench.eval.sources --record   # rewrite the kept-file lists (new pins)
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import io
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.eval.reserved import reserved_component

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "questions_corpus.json"
CACHE = HERE.parent / ".cache" / "questions"


@dataclass(frozen=True)
class Library:
    name: str  # also the repo label of its root in the index
    language: str
    version: str
    source: str  # pypi | npm | debian
    package: str  # the name the client knows it by
    artifact: str  # the downloaded file's name
    sha256: str
    strip: str  # archive prefix removed from kept paths
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    files: tuple[str, ...]  # kept files, relative to the library's root

    @property
    def fetch_command(self) -> list[str]:
        if self.source == "pypi":
            spec = f"{self.package}=={self.version}"
            # Only the package itself from source: its build requirements (Cython, say) as
            # wheels, or pip compiles them too, only to read the sdist's metadata.
            return ["pip", "download", "--no-deps", "--no-binary", self.package, spec, "-d", "."]
        if self.source == "npm":
            return ["npm", "pack", f"{self.package}@{self.version}", "--silent"]
        if self.source == "debian":
            return ["apt-get", "download", f"{self.package}={self.version}"]
        raise ValueError(f"{self.name}: unknown source {self.source!r}")


def load_manifest(path: Path = MANIFEST) -> list[Library]:
    data = json.loads(path.read_text())
    libs = []
    for entry in data["libraries"]:
        entry = {**entry, **{k: tuple(entry[k]) for k in ("include", "exclude", "files")}}
        libs.append(Library(**entry))
    return libs


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(lib: Library, downloads: Path) -> Path:
    """The library's artifact, fetched with its client when missing; its sha256 checked."""
    downloads.mkdir(parents=True, exist_ok=True)
    target = downloads / lib.artifact
    if not target.is_file():
        print(f"  fetching {lib.package} {lib.version} ({lib.source}) ...", file=sys.stderr)
        with tempfile.TemporaryDirectory(dir=downloads) as tmp:
            Path(tmp).chmod(0o777)  # apt-get download hands the file to the _apt user
            done = subprocess.run(lib.fetch_command, cwd=tmp, capture_output=True, text=True)
            fetched = Path(tmp) / lib.artifact
            if done.returncode != 0 or not fetched.is_file():
                raise SystemExit(
                    f"{lib.name}: `{' '.join(lib.fetch_command)}` did not produce "
                    f"{lib.artifact} (exit {done.returncode}): {done.stderr.strip()[-400:]}"
                    + (
                        " (a Debian version missing from stale package lists: run apt-get update)"
                        if lib.source == "debian"
                        else ""
                    )
                )
            shutil.move(str(fetched), target)
    digest = _sha256(target)
    if digest != lib.sha256:
        raise SystemExit(
            f"{lib.name}: {target} has sha256 {digest}, the manifest pins {lib.sha256}; "
            "delete the file to fetch it again, or update the pin deliberately"
        )
    return target


def _deb_data(deb: bytes) -> tarfile.TarFile:
    """The data tarball inside a .deb (an `ar` archive), without dpkg."""
    if not deb.startswith(b"!<arch>\n"):
        raise ValueError("not a Debian package")
    pos = 8
    while pos + 60 <= len(deb):
        name = deb[pos : pos + 16].decode().strip().rstrip("/")
        size = int(deb[pos + 48 : pos + 58].decode().strip())
        body = deb[pos + 60 : pos + 60 + size]
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                body = lzma.decompress(body)
            return tarfile.open(fileobj=io.BytesIO(body))
        pos += 60 + size + (size % 2)
    raise ValueError("no data.tar member")


def _members(lib: Library, artifact: Path) -> dict[str, bytes]:
    """Every regular file under the library's prefix, keyed by its path relative to it."""
    out: dict[str, bytes] = {}
    with (
        _deb_data(artifact.read_bytes()) if lib.source == "debian" else tarfile.open(artifact)
    ) as tar:
        for m in tar.getmembers():
            name = m.name[2:] if m.name.startswith("./") else m.name
            if not m.isfile() or not name.startswith(lib.strip):
                continue
            f = tar.extractfile(m)
            assert f is not None
            out[name[len(lib.strip) :]] = f.read()
    return out


def select(lib: Library, paths: list[str]) -> list[str]:
    return sorted(
        p
        for p in paths
        if any(fnmatch.fnmatchcase(p, g) for g in lib.include)
        and not any(fnmatch.fnmatchcase(p, g) for g in lib.exclude)
    )


def unpack(lib: Library, artifact: Path, dest: Path, record: bool = False) -> list[str]:
    """Write the kept files under `dest`; the selection must equal the manifest's list."""
    members = _members(lib, artifact)
    kept = select(lib, list(members))
    if not record and kept != list(lib.files):
        extra, missing = set(kept) - set(lib.files), set(lib.files) - set(kept)
        raise SystemExit(
            f"{lib.name}: the archive's files differ from the manifest "
            f"(extra {sorted(extra)[:5]}, missing {sorted(missing)[:5]})"
        )
    for rel in kept:
        if (bad := reserved_component(f"{lib.name}/{rel}")) is not None:
            raise SystemExit(f"{lib.name}/{rel}: {bad!r} is reserved for the hidden evaluation")
        target = dest / rel
        if target.is_file() and target.read_bytes() == members[rel]:
            continue  # keep its mtime: the sweep then skips it without reading
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(members[rel])
    for stale in [p for p in dest.rglob("*") if p.is_file()]:
        if stale.relative_to(dest).as_posix() not in kept:
            stale.unlink()
    return kept


def ensure_corpus(cache: Path = CACHE, record: bool = False) -> tuple[list[Library], str]:
    """Fetch, verify and unpack every library; the libraries and a digest of the corpus."""
    libs = load_manifest()
    digest = hashlib.sha256()
    recorded = []
    for lib in libs:
        if (bad := reserved_component(lib.name) or reserved_component(lib.package)) is not None:
            raise SystemExit(f"{lib.name}: {bad!r} is reserved for the hidden evaluation")
        artifact = download(lib, cache / "downloads")
        kept = unpack(lib, artifact, corpus_root(cache) / lib.name, record)
        recorded.append(kept)
        digest.update(f"{lib.name}\0{lib.version}\0{lib.sha256}\0{len(kept)}\n".encode())
    if record:
        data = json.loads(MANIFEST.read_text())
        for entry, kept in zip(data["libraries"], recorded, strict=True):
            entry["files"] = kept
        MANIFEST.write_text(json.dumps(data, indent=1) + "\n")
        libs = load_manifest()
    return libs, digest.hexdigest()


def corpus_root(cache: Path = CACHE) -> Path:
    return cache / "corpus"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="rewrite the kept-file lists")
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args(argv)
    libs, digest = ensure_corpus(args.cache, args.record)
    root = corpus_root(args.cache)
    print("| library | language | version | source | files | lines |")
    print("|---|---|---|---|---:|---:|")
    for lib in libs:
        lines = sum(len((root / lib.name / f).read_bytes().splitlines()) for f in lib.files)
        print(
            f"| {lib.name} | {lib.language} | {lib.version} | {lib.source} `{lib.package}` | "
            f"{len(lib.files)} | {lines:,} |"
        )
    print(f"\ncorpus digest {digest[:16]}, under {root}")


if __name__ == "__main__":
    main()
