"""What a project is: a validated name, its roots (and whether each can be read now) and its
include/exclude globs, and the globs that say which of its folders are tests, docs or code.

A project name becomes a PostgreSQL schema name, so it is validated here, before any SQL can see
it: lowercase letters, digits and underscores, starting with a letter, at most 63 bytes, and never
a name PostgreSQL reserves (`pg_*`, `public`, `information_schema`).
"""

from __future__ import annotations

import os
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

# Why a root could not be walked. A missing, unreadable or suddenly empty root is *unavailable*
# (an unmounted disk, a dropped share, a worktree being recreated), never "now empty": the sweep
# keeps its rows until it is back, leaves the configuration, or a full re-index is asked for.
ROOT_MISSING = "the folder is missing"
ROOT_NOT_A_FOLDER = "the path is not a folder"
ROOT_EMPTY = "the folder is empty"


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


def root_problem(path: Path) -> str | None:
    """Why the root folder at `path` cannot be walked now, or None when it can."""
    try:
        with os.scandir(path) as entries:
            if next(entries, None) is None:
                return ROOT_EMPTY
    except FileNotFoundError:
        return ROOT_MISSING
    except NotADirectoryError:
        return ROOT_NOT_A_FOLDER
    except OSError as exc:
        return f"the folder cannot be read ({exc.strerror or exc})"
    return None


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
    # Globs of the project's own test and docs folders, beside the usual ones search knows,
    # and of paths that are code whatever their names suggest (indexer/search/roles.py).
    tests: tuple[str, ...] = field(default=())
    docs: tuple[str, ...] = field(default=())
    code: tuple[str, ...] = field(default=())

    def root(self, repo: str) -> Root | None:
        return next((r for r in self.roots if r.name == repo), None)

    def unavailable(self, repo: str) -> str | None:
        """Why the root labelled `repo` cannot be read now (None: it can, or it is not ours)."""
        root = self.root(repo)
        return root_problem(root.path) if root is not None else None
