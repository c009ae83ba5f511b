"""What a project is: a validated name, its roots and its include/exclude globs.

A project name becomes a PostgreSQL schema name, so it is validated here, before any SQL can see
it: lowercase letters, digits and underscores, starting with a letter, at most 63 bytes, and never
a name PostgreSQL reserves (`pg_*`, `public`, `information_schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from indexer.errors import InvalidProjectName

PROJECT_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
RESERVED_NAMES = frozenset({"public", "information_schema"})
NAME_RULE = (
    "lowercase letters, digits and underscores, starting with a letter, at most 63 characters, "
    "not `public`, `information_schema` or `pg_*`"
)


def project_name_problem(name: object) -> str | None:
    """Why `name` cannot be a project name, or None when it can."""
    if not isinstance(name, str):
        return f"a project name must be a string, got {type(name).__name__}"
    if not PROJECT_NAME_RE.fullmatch(name):
        return f"{name!r} is not a valid project name: use {NAME_RULE}"
    if name in RESERVED_NAMES or name.startswith("pg_"):
        return f"{name!r} is reserved by PostgreSQL: choose another project name"
    return None


def validate_project_name(name: object) -> str:
    """Return `name` unchanged if it may name a project schema, else raise InvalidProjectName."""
    problem = project_name_problem(name)
    if problem:
        raise InvalidProjectName(problem)
    assert isinstance(name, str)
    return name


@dataclass(frozen=True)
class Root:
    """One directory of a project; `name` labels its files (the `repo` of every row)."""

    path: Path
    name: str


@dataclass(frozen=True)
class Project:
    name: str
    roots: tuple[Root, ...]
    include: tuple[str, ...] = field(default=())
    exclude: tuple[str, ...] = field(default=())

    def root(self, repo: str) -> Root | None:
        return next((r for r in self.roots if r.name == repo), None)
