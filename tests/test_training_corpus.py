"""The training corpus cannot take code reserved for evaluation.

The corpus tool reads the shared reserved.txt whole and applies the rule every corpus tool
applies (bench/eval/reserved.py); a manifest that names a reserved library, by its name, its
package or the Debian source package it was built from, is refused before anything is fetched
or unpacked. Debian packages here are built with the real dpkg-deb.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.eval import reserved
from bench.train import training_corpus
from bench.train.training_corpus import TrainLibrary

SHARED_RESERVED = reserved.RESERVED_FILES


def library(**fields: str) -> TrainLibrary:
    entry = {
        "name": "tenacity",
        "language": "python",
        "version": "9.0.0",
        "source": "pypi",
        "package": "tenacity",
        "artifact": "tenacity-9.0.0.tar.gz",
        "sha256": "0" * 64,
    }
    return TrainLibrary(**{**entry, **fields})


def test_every_name_of_the_shared_list_is_reserved() -> None:
    # The tool reads the shared list whole, not a short copy of it.
    shared = next((p for p in SHARED_RESERVED if p.is_file()), None)
    listed = reserved.read_names(shared) if shared else reserved.BUILTIN_RESERVED
    assert len(listed) > 50
    assert listed <= reserved.reserved_names()
    for name in listed:
        assert reserved.reserved_component(name) == name


def test_a_reserved_list_is_read_with_its_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "reserved.txt"
    path.write_text("# Python\nflask\n\n  Rich  # a comment\n# trailing\n")
    assert reserved.read_names(path) == {"flask", "rich"}


@pytest.mark.parametrize(
    ("fields", "found"),
    [
        ({"name": "lodash", "package": "lodash"}, "lodash"),  # the name itself
        ({"name": "utils", "package": "@reduxjs/toolkit"}, None),  # a scoped name, not reserved
        ({"name": "express-app", "package": "express-app"}, "express"),  # part before a hyphen
        ({"name": "cobra", "package": "golang-github-spf13-cobra-dev"}, "cobra"),
        ({"name": "go-cli", "package": "golang-github-spf13-cobra-dev"}, "spf13-cobra"),
        ({"name": "web", "package": "golang-github-gin-gonic-gin-dev"}, "gin"),
        ({"name": "rack.core", "package": "x"}, "rack"),  # a stem
    ],
)
def test_a_library_naming_a_reserved_one_is_refused(fields: dict[str, str], found: str) -> None:
    why = training_corpus.refused(library(**fields))
    if found is None:
        assert why is None
    else:
        assert why is not None and repr(found) in why and "reserved for evaluation" in why


def test_a_library_of_the_file_level_eval_is_refused() -> None:
    evaluated = training_corpus.eval_library_names()
    assert "fastify" in evaluated
    why = training_corpus.refused(library(name="fastify", package="fastify"))
    assert why is not None and "file-level eval" in why


def test_the_pinned_training_corpus_names_nothing_reserved_or_evaluated() -> None:
    libraries = training_corpus.load_manifest()
    assert len(libraries) >= 40
    refusals = {lib.name: training_corpus.refused(lib) for lib in libraries}
    assert {name: why for name, why in refusals.items() if why is not None} == {}


def test_a_manifest_with_a_reserved_library_is_refused_before_any_fetch(tmp_path: Path) -> None:
    clean = dict(library().__dict__)
    bad = {**clean, "name": "sinatra", "package": "ruby-sinatra", "source": "debian"}
    manifest = tmp_path / "train_corpus.json"
    manifest.write_text(json.dumps({"libraries": [clean, bad]}))
    cache = tmp_path / "cache"
    with pytest.raises(SystemExit, match=r"sinatra.*reserved for evaluation"):
        training_corpus.ensure_corpus(cache, manifest)
    assert not cache.exists()  # nothing fetched, nothing unpacked


def build_deb(folder: Path, package: str, source: str | None) -> Path:
    root = folder / package
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr" / "lib" / "ruby").mkdir(parents=True)
    (root / "usr" / "lib" / "ruby" / "core_ext.rb").write_text("def blank?\n  true\nend\n")
    control = [f"Package: {package}", "Version: 1.0-1", "Architecture: all"]
    if source is not None:
        control.append(f"Source: {source}")
    control += ["Maintainer: A <a@example.org>", "Description: test package", ""]
    (root / "DEBIAN" / "control").write_text("\n".join(control))
    out = folder / f"{package}_1.0-1_all.deb"
    subprocess.run(["dpkg-deb", "--build", str(root), str(out)], check=True, capture_output=True)
    return out


def test_a_debian_package_built_from_a_reserved_source_package_is_refused(
    tmp_path: Path,
) -> None:
    # activesupport's Debian package comes from the rails source package: rails is reserved.
    deb = build_deb(tmp_path, "ruby-activesupport", "rails (2:6.1.7.10+dfsg-1)")
    lib = library(name="activesupport", package="ruby-activesupport", source="debian")
    assert training_corpus.refused(lib) is None  # its own names hold nothing reserved
    assert training_corpus.debian_source_package(deb) == "rails"
    why = training_corpus.refused_source_package(lib, deb)
    assert why is not None and "'rails'" in why


def test_a_debian_package_with_a_clean_source_package_is_kept(tmp_path: Path) -> None:
    deb = build_deb(tmp_path, "ruby-kramdown", None)  # no Source field: its own name
    lib = library(name="kramdown", package="ruby-kramdown", source="debian")
    assert training_corpus.debian_source_package(deb) == "ruby-kramdown"
    assert training_corpus.refused_source_package(lib, deb) is None


def test_a_file_under_a_reserved_folder_is_not_training_material() -> None:
    assert training_corpus.excluded_by("moment/src/rack-2.2/x.js") is not None
    assert "reserved" in (training_corpus.excluded_by("ramda/source/lodash/map.js") or "")
    assert training_corpus.excluded_by("ramda/source/map.js") is None
