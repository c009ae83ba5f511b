"""What a file is for, from its path: code, or a test, docs, an example, a vendored or
generated copy, a declaration stub. Search ranks the files that are not code below the code
that matches as well, unless the query asks for them ("the tests of the parser", "docs on
retries") or a path_glob chose the files.

The defaults cover the usual layouts of the languages the chunkers know; a project adds its
own folders in `rag-projects.json` (`"tests"`, `"docs"`: globs as in .gitignore) and can say
that paths the defaults would take for tests or docs are code (`"code"`), which wins.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import pathspec

from chunkers import detect_language
from indexer.project import Project

TEST, DOCS, EXAMPLE, VENDORED, GENERATED, STUB = (
    "test",
    "docs",
    "example",
    "vendored",
    "generated",
    "stub",
)
ROLES = (TEST, DOCS, EXAMPLE, VENDORED, GENERATED, STUB)

_DIR = r"(?:^|/)(?:{})/"
# Each role's paths by default, matched against a path relative to its root, in this order.
DEFAULT_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        VENDORED,
        re.compile(
            _DIR.format(r"vendor|vendored|third[_-]?party|node_modules|bower_components")
            + r"|\.min\.(?:js|css)$",
            re.IGNORECASE,
        ),
    ),
    (
        GENERATED,
        re.compile(
            r"(?:_pb2(?:_grpc)?\.pyi?|\.pb(?:\.gw)?\.go|\.pb\.(?:h|cc)|[._]generated\.\w+"
            r"|_gen\.go|\.g\.dart|\.designer\.cs)$",
            re.IGNORECASE,
        ),
    ),
    (STUB, re.compile(r"\.d\.[cm]?ts$|\.pyi$")),
    (
        TEST,
        re.compile(
            _DIR.format(
                r"tests?|specs?|__tests__|__mocks__|testing|testdata|test[_-]?data|fixtures?"
                r"|mocks?|test[_-]?utils?|test[_-]?helpers?|integration[_-]tests?|e2e"
                r"|[A-Za-z.]*Tests?"
            )
            + r"|(?:^|/)(?:test_[^/]*|tests?\.\w+|conftest\.py)$"
            + r"|[._-](?:test|tests|spec)\.\w+$"
            + r"|[a-z0-9](?:Test|Tests|Spec|Suite|IT)\.(?:java|kt|kts|scala|swift|cs|php|groovy)$",
        ),
    ),
    (
        DOCS,
        re.compile(
            _DIR.format(r"docs?|documentation|man|website|site")
            + r"|\.(?:md|markdown|mdx|rst|adoc|asciidoc|rdoc|org|pod|txt)$"
            + r"|(?:^|/)(?:README|CHANGELOG|CHANGES|HISTORY|NEWS|CONTRIBUTING|AUTHORS|LICENSE"
            r"|COPYING|NOTICE|UPGRADING|MIGRATING)(?:\.[^/]*)?$",
            re.IGNORECASE,
        ),
    ),
    (
        EXAMPLE,
        re.compile(
            _DIR.format(r"examples?|samples?|demos?|benchmarks?|benches|bench|tutorials?"),
            re.IGNORECASE,
        ),
    ),
)
# Files that look like docs by their extension and are not.
_NOT_DOCS = re.compile(r"(?:^|/)(?:CMakeLists|requirements[^/]*|constraints[^/]*)\.txt$", re.I)

# Languages of data and markup, not code: a long query (a report, `reading.py`) demotes their
# files, as it does files of no known language.
DATA_LANGUAGES = frozenset(
    ("markdown", "yaml", "json", "toml", "text", "xml", "rst", "ini", "csv", "diff")
)
# Words by which a query asks for files of a role.
ASKING: dict[str, re.Pattern[str]] = {
    TEST: re.compile(
        r"\b(?:tests?|testing|tested|unit[- ]?tests?|specs?|fixtures?|mocks?|mocked|conftest"
        r"|testcase|test_\w+)\b",
        re.IGNORECASE,
    ),
    DOCS: re.compile(
        r"\b(?:docs?|documentation|documented|readme|changelog|release notes|markdown)\b",
        re.IGNORECASE,
    ),
    EXAMPLE: re.compile(
        r"\b(?:examples?|samples?|demos?|benchmarks?|benchmarking|tutorials?)\b", re.IGNORECASE
    ),
    VENDORED: re.compile(r"\b(?:vendor(?:ed)?|third[- ]party|bundled copy)\b", re.IGNORECASE),
    GENERATED: re.compile(r"\b(?:generated|codegen|protobuf|\w+_pb2)\b", re.IGNORECASE),
    STUB: re.compile(r"\b(?:stubs?|type declarations?|typings|\.d\.ts|\.pyi)\b", re.IGNORECASE),
}


class Located(Protocol):
    """A chunk with its file's path (a stored chunk, or only its file)."""

    @property
    def chunk_id(self) -> int: ...

    @property
    def path(self) -> str: ...


@functools.lru_cache(maxsize=16384)
def is_data(path: str) -> bool:
    """True when `path` is a file of data or markup (or of no known language), not code."""
    language = detect_language(path)
    return language is None or language in DATA_LANGUAGES


@functools.lru_cache(maxsize=16384)
def default_role(path: str) -> str | None:
    """The role of `path` (relative to its root) by the defaults alone; None for code.
    Remembered per path: a search by file reads the role of every candidate's file, and the
    same files come back query after query."""
    for role, pattern in DEFAULT_PATTERNS:
        if pattern.search(path) and not (role == DOCS and _NOT_DOCS.search(path)):
            return role
    return None


def asked(query: str) -> frozenset[str]:
    """The roles `query` asks for by name ("the tests of...", "an example of...")."""
    return frozenset(role for role, pattern in ASKING.items() if pattern.search(query))


def _spec(globs: Iterable[str]) -> pathspec.GitIgnoreSpec | None:
    globs = list(globs)
    return pathspec.GitIgnoreSpec.from_lines(globs) if globs else None


@dataclass(frozen=True)
class PathRoles:
    """A project's reading of its paths: the defaults, its own test and docs globs, and the
    globs it says are code whatever the defaults think."""

    code: pathspec.GitIgnoreSpec | None = None
    tests: pathspec.GitIgnoreSpec | None = None
    docs: pathspec.GitIgnoreSpec | None = None

    @staticmethod
    def of(project: Project) -> PathRoles:
        return PathRoles(_spec(project.code), _spec(project.tests), _spec(project.docs))

    def role(self, path: str) -> str | None:
        """The role of `path` (relative to its root); None for code."""
        if self.declared_code(path):
            return None
        if self.tests is not None and self.tests.match_file(path):
            return TEST
        if self.docs is not None and self.docs.match_file(path):
            return DOCS
        return default_role(path)

    def demoted_chunks(self, rows: Iterable[Located], query: str, data: bool = False) -> set[int]:
        """Of the chunks `rows`, those search ranks below code for `query` (and, with `data`,
        those of files of data or markup)."""
        rows = list(rows)
        paths = self.demoted({row.path for row in rows}, query, data)
        return {row.chunk_id for row in rows if row.path in paths}

    def demoted(self, paths: Iterable[str], query: str, data: bool = False) -> set[str]:
        """Of `paths`, those search ranks below code for `query`: a role the query does not
        ask for; with `data`, also files of data or markup (`is_data`) that the project does
        not say are code."""
        wanted = asked(query)

        def lower(path: str) -> bool:
            role = self.role(path)
            if role is not None:
                return role not in wanted
            return data and is_data(path) and not self.declared_code(path)

        return {p for p in paths if lower(p)}

    def declared_code(self, path: str) -> bool:
        """True when the project's own globs say `path` is code."""
        return self.code is not None and self.code.match_file(path)
