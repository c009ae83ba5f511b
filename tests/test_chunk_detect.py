"""Language detection by file name, extension and shebang, and the binary check."""

from __future__ import annotations

import pytest

from chunkers import detect_language, is_binary
from chunkers.detect import KNOWN_LANGUAGES
from chunkers.grammars import has_symbols, query_for

SYMBOL_LANGUAGES = {
    "java", "groovy", "javascript", "typescript", "tsx", "kotlin", "scala", "csharp", "swift",
    "dart", "c", "cpp", "objc", "python", "ruby", "php", "rust", "go", "elixir", "commonlisp",
    "scheme", "racket", "clojure",
}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app/models.py", "python"),
        ("/abs/path/types.pyi", "python"),
        ("web/index.js", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/util.mjs", "javascript"),
        ("web/api.ts", "typescript"),
        ("web/types.d.ts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("Main.java", "java"),
        ("build.gradle", "groovy"),
        ("Script.groovy", "groovy"),
        ("App.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("Main.scala", "scala"),
        ("build.sbt", "scala"),
        ("Program.cs", "csharp"),
        ("View.swift", "swift"),
        ("main.dart", "dart"),
        ("main.c", "c"),
        ("main.cpp", "cpp"),
        ("vec.hpp", "cpp"),
        ("x.cc", "cpp"),
        ("AppDelegate.m", "objc"),
        ("Bridge.mm", "objc"),
        ("app.rb", "ruby"),
        ("tasks.rake", "ruby"),
        ("index.php", "php"),
        ("lib.rs", "rust"),
        ("main.go", "go"),
        ("lib/app.ex", "elixir"),
        ("test/app_test.exs", "elixir"),
        ("utils.lisp", "commonlisp"),
        ("system.asd", "commonlisp"),
        ("lib.scm", "scheme"),
        ("main.rkt", "racket"),
        ("core.clj", "clojure"),
        ("app.cljs", "clojure"),
        ("deploy.sh", "bash"),
        ("schema.sql", "sql"),
        ("ci.yml", "yaml"),
        ("compose.yaml", "yaml"),
        ("package.json", "json"),
        ("pyproject.toml", "toml"),
        ("pom.xml", "xml"),
        ("index.html", "html"),
        ("site.css", "css"),
        ("theme.scss", "scss"),
        ("README.md", "markdown"),
        ("main.tf", "terraform"),
        ("config.hcl", "hcl"),
        ("api.proto", "proto"),
        ("schema.graphql", "graphql"),
        ("init.lua", "lua"),
        ("Main.hs", "haskell"),
        ("main.ml", "ocaml"),
        ("analysis.R", "r"),
        ("solver.jl", "julia"),
        ("script.pl", "perl"),
        ("Module.pm", "perl"),
        ("server.erl", "erlang"),
        ("build.zig", "zig"),
        ("Makefile", "make"),
        ("GNUmakefile", "make"),
        ("rules.mk", "make"),
        ("Dockerfile", "dockerfile"),
        ("Dockerfile.prod", "dockerfile"),
        ("api.dockerfile", "dockerfile"),
        ("Jenkinsfile", "groovy"),
        ("CMakeLists.txt", "cmake"),
        ("Gemfile", "ruby"),
        ("Rakefile", "ruby"),
        ("BUILD", "starlark"),
        ("BUILD.bazel", "starlark"),
        ("WORKSPACE", "starlark"),
        ("go.mod", "gomod"),
        ("requirements-dev.txt", "requirements"),
        ("notes.txt", "text"),
        ("CONTRIBUTING.unknownext", None),
    ],
)
def test_detects_by_name_and_extension(path: str, language: str | None) -> None:
    assert detect_language(path) == language


@pytest.mark.parametrize(
    ("head", "language"),
    [
        (b"#!/usr/bin/env python3\nimport sys\n", "python"),
        (b"#!/usr/bin/python3.11\n", "python"),
        (b"#!/bin/sh\nset -e\n", "bash"),
        (b"#!/usr/bin/env bash\n", "bash"),
        (b"#! /usr/bin/env node\n", "javascript"),
        (b"#!/usr/bin/env -S deno run --allow-net\n", "typescript"),
        (b"#!/usr/bin/env ruby\n", "ruby"),
        (b"#!/usr/bin/perl -w\n", "perl"),
        (b"#!/usr/bin/env Rscript\n", "r"),
        (b"#!/usr/bin/env escript\n", "erlang"),
        (b"#!/usr/bin/env elixir\n", "elixir"),
        (b"#!/usr/bin/env racket\n", "racket"),
        (b"#!/usr/bin/env bb\n", "clojure"),
        (b"#!/usr/bin/env unheard-of\n", None),
        (b"no shebang here\n", None),
    ],
)
def test_detects_by_shebang(head: bytes, language: str | None) -> None:
    assert detect_language("bin/tool", head) == language


def test_extension_beats_shebang() -> None:
    assert detect_language("tool.py", b"#!/bin/sh\n") == "python"


@pytest.mark.parametrize(
    ("head", "language"),
    [
        (b"#include <stdio.h>\nint add(int a, int b);\n", "c"),
        (b"#pragma once\nnamespace geo {\nclass Point {\n", "cpp"),
        (b"#include <vector>\ntemplate <typename T>\nT max(T a, T b);\n", "cpp"),
        (b"#import <Foundation/Foundation.h>\n@interface Foo : NSObject\n", "objc"),
    ],
)
def test_header_files_are_sniffed(head: bytes, language: str) -> None:
    # `.h` is shared by C, C++ and Objective-C; the first bytes decide, C by default.
    assert detect_language("include/thing.h", head) == language


def test_matlab_m_files_are_told_from_objective_c() -> None:
    assert detect_language("solve.m", b"% solve the system\nfunction x = solve(A, b)\n") == "matlab"
    assert detect_language("Foo.m", b'#import "Foo.h"\n@implementation Foo\n@end\n') == "objc"


def test_at_least_fifty_languages_are_known() -> None:
    assert len(KNOWN_LANGUAGES) >= 50


def test_every_listed_language_has_symbol_rules() -> None:
    for language in SYMBOL_LANGUAGES:
        assert has_symbols(language), language
        assert query_for(language).pattern_count > 0, language


@pytest.mark.parametrize(
    ("data", "binary"),
    [
        (b"", False),
        (b"plain ascii\n", False),
        ("naïve café — ünïcödé\n".encode(), False),
        (b"latin-1 caf\xe9\n", False),
        (b"\x1b[31mred\x1b[0m log line\n", False),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", True),
        (b"ELF\x02\x01\x01" + b"\x00" * 20, True),
        ("utf-16 text".encode("utf-16"), True),
        (bytes(range(1, 32)) * 20, True),
    ],
)
def test_is_binary(data: bytes, binary: bool) -> None:
    assert is_binary(data) is binary
