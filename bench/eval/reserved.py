"""The libraries reserved for evaluation, and the one rule that finds them in a name or a path.

`reserved.txt` in the shared folder beside the repository lists them (a PyPI distribution, an
npm package, a Debian source package or a repository name, one a line); the built-in copy below
is used as well, so a checkout without the shared folder still refuses them. A path holds a
name when one of its components is that name, or that component's stem (before the first dot),
or its part before the first hyphen (a versioned or vendored folder). Every corpus tool (the
training corpus, the questions eval, the file-level eval) applies this rule and no other copy.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[2]
# The shared folder sits beside the repository (`../shared`); a worktree one level deeper
# finds it two levels up.
RESERVED_FILES = (
    REPO.parent / "shared" / "reserved.txt",
    REPO.parent.parent / "shared" / "reserved.txt",
)
# A copy of reserved.txt, used when the shared file cannot be read (the file adds to it).
BUILTIN_RESERVED = frozenset(
    """
    attrs click flask httpx jinja2 requests rich werkzeug aiohttp fastapi starlette pydantic
    model2vec sympy pytest sphinx astropy pylint xarray seaborn cobra spf13-cobra gin
    gin-gonic-gin lodash rxjs express axios redux trpc zod vitest twig guzzle monolog
    laravel-framework rack sinatra rails railties jpype jpype1 gson commons-lang
    jackson-databind tokio serde axum octocode curl redis libuv abseil-cpp fmtlib nlohmann-json
    messagepack-csharp newtonsoft-json dapper ktor kotlinx-coroutines exposed cats circe http4s
    alamofire vapor snapkit phoenix plug ecto aeson pandoc xmonad telescope.nvim lazy.nvim
    mini.nvim zig zls zig-clap bats-core nvm bash-it
    """.split()  # noqa: SIM905
)


def read_names(path: Path) -> frozenset[str]:
    """The names a reserved.txt lists: one a line, lower-cased, `#` starts a comment."""
    names = set()
    for line in path.read_text().splitlines():
        name = line.split("#", 1)[0].strip().lower()
        if name:
            names.add(name)
    return frozenset(names)


@cache
def reserved_names() -> frozenset[str]:
    """The names reserved for evaluation: the shared list, and the built-in copy."""
    names = set(BUILTIN_RESERVED)
    for path in RESERVED_FILES:
        if path.is_file():
            names |= read_names(path)
            break
    return frozenset(names)


def forbidden_component(path: str, names: frozenset[str]) -> str | None:
    """The name of `names` that `path` holds as a component, a component's stem, or the part
    of a component before its first hyphen (a versioned or vendored folder), if any."""
    for part in PurePosixPath(path.lower()).parts:
        for candidate in (part, part.split(".", 1)[0], part.split("-", 1)[0]):
            if candidate in names:
                return candidate
    return None


def reserved_in_name(name: str) -> str | None:
    """The reserved name a library's or package's name holds: by the path rule, or as a run of
    its hyphen-separated words (`golang-github-spf13-cobra-dev` holds `spf13-cobra` and
    `cobra`), the way distributions name packages after the libraries they carry."""
    if (found := reserved_component(name)) is not None:
        return found
    names = reserved_names()
    for part in PurePosixPath(name.lower()).parts:
        words = part.split("-")
        for start in range(len(words)):
            for end in range(start + 1, len(words) + 1):
                if (candidate := "-".join(words[start:end])) in names:
                    return candidate
    return None


def reserved_component(path: str) -> str | None:
    """The reserved name `path` (a library's name, a package's, or a path in it) holds."""
    return forbidden_component(path, reserved_names())
