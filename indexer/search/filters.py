"""The filters every read tool shares — one root (`repo`), one language, a path glob — checked
once into a value. Statements take them as parameters, where a NULL disables its filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chunkers import KNOWN_LANGUAGES
from indexer.errors import InvalidArgument
from indexer.project import Project

MAX_GLOB_CHARS = 500


@dataclass(frozen=True, slots=True)
class Filters:
    repo: str | None = None
    language: str | None = None  # as stored: lower case
    path_re: str | None = None  # a POSIX regex over the repo-relative path

    @classmethod
    def checked(
        cls,
        project: Project,
        repo: str | None = None,
        language: str | None = None,
        path_glob: str | None = None,
    ) -> Filters:
        """The filters as given, each checked (InvalidArgument says what is wrong)."""
        if repo is not None:
            check_repo(project, repo)
        if path_glob is not None and (not path_glob.strip() or len(path_glob) > MAX_GLOB_CHARS):
            raise InvalidArgument("path_glob must be a non-empty glob such as 'src/**/*.py'")
        return cls(repo, check_language(language), glob_to_regex(path_glob) if path_glob else None)

    def params(self) -> dict[str, Any]:
        """The statements' filter parameters."""
        return {"repo": self.repo, "language": self.language, "path_re": self.path_re}


def check_repo(project: Project, repo: str) -> str:
    """`repo` when it names a root of `project`; otherwise the roots it could have named."""
    if project.root(repo) is None:
        names = ", ".join(r.name for r in project.roots)
        raise InvalidArgument(f"repo {repo!r} is not a root of this project: use one of {names}")
    return repo


def check_language(language: str | None) -> str | None:
    """A language filter as stored (lower case); an id no file can have is refused."""
    if language is None:
        return None
    name = language.strip().lower()
    if name not in KNOWN_LANGUAGES:
        near = sorted(k for k in KNOWN_LANGUAGES if k.startswith(name[:2]))[:8]
        hint = f" (close: {', '.join(near)})" if near else ""
        raise InvalidArgument(
            f"unknown language {language!r}{hint}: use an id such as python, typescript, "
            "javascript, go, rust, java, c, cpp, ruby, php"
        )
    return name


def glob_to_regex(glob: str) -> str:
    """A POSIX regex for a path glob: `**` spans folders, `*` and `?` stay within one.

    A glob without a slash matches the file name at any depth (`*.py`), as in .gitignore.
    """
    out = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch) if not ch.isalnum() else ch)
        i += 1
    body = "".join(out)
    return ("^(.*/)?" if "/" not in glob.rstrip("/") else "^") + body + "$"
