"""The packages' faces hold: a wing (a subpackage whose `__init__` is its face) is used from
outside only through what its face exports in `__all__`, and bench/ has no import circle.

Read from the source with `ast`, so an import inside a function or under TYPE_CHECKING counts
as much as one at the top. (After httpx's tests/test_exported_members.py.)
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent
PRODUCT = ("chunkers", "indexer", "rag_server")
WINGS = (
    "indexer.db",
    "indexer.embed",
    "indexer.search",
    "indexer.sweep",
    "rag_server.tools",
    "rag_server.cli",
    "chunkers",
)


def modules(package: str) -> Iterator[tuple[str, Path]]:
    """Every module of `package` by its dotted name (a package by its own name); folders whose
    names start with a dot (bench/.cache: fetched corpora, not our code) are not modules."""
    for path in sorted((CHECKOUT / package).rglob("*.py")):
        parts = path.relative_to(CHECKOUT).with_suffix("").parts
        if any(part.startswith(".") for part in parts):
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(name: str, path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name imported from it or None) for every import in the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                yield node.lineno, base, alias.name


def wing_of(module: str) -> str | None:
    return next((w for w in WINGS if module == w or module.startswith(w + ".")), None)


@pytest.mark.parametrize("wing", WINGS)
def test_every_name_a_face_exports_is_there(wing: str) -> None:
    face = importlib.import_module(wing)
    assert face.__all__, wing
    assert [n for n in face.__all__ if not hasattr(face, n)] == []


def reached_into(name: str, path: Path, exported: dict[str, set[str]]) -> list[str]:
    """The imports of module `name` that reach into another wing: a name its face does not
    export, or a module of the wing its face does not export as a module."""
    own = wing_of(name)
    reached = []
    for line, module, imported in imports(name, path):
        wing = wing_of(module)
        if wing is None or wing == own:
            continue
        if module == wing:
            private = imported is not None and imported not in exported[wing]
        else:
            private = module[len(wing) + 1 :].split(".")[0] not in exported[wing]
        if private:
            reached.append(f"{name}:{line}: {module}" + (f" {imported}" if imported else ""))
    return reached


def faces() -> dict[str, set[str]]:
    return {w: set(importlib.import_module(w).__all__) for w in WINGS}


def test_no_wing_is_reached_into_from_outside() -> None:
    exported = faces()
    reached = [
        problem
        for package in PRODUCT
        for name, path in modules(package)
        for problem in reached_into(name, path, exported)
    ]
    assert reached == []


def test_a_private_import_is_caught_and_a_face_import_is_not(tmp_path: Path) -> None:
    # The rule on the shapes it must catch and those it must let through.
    module = tmp_path / "render.py"
    module.write_text(
        "from indexer.sweep.vectors import VectorReport\n"  # a module the face keeps private
        "from indexer.sweep import sweep_project\n"  # the face
        "from indexer.db import store\n"  # a module the face exports
        "from indexer.search import fusion\n"  # a module the face does not export
        "import chunkers.grammars\n"
        "from indexer.status import project_status\n",  # no wing
        encoding="utf-8",
    )
    assert reached_into("rag_server.cli.render", module, faces()) == [
        "rag_server.cli.render:1: indexer.sweep.vectors VectorReport",
        "rag_server.cli.render:4: indexer.search fusion",
        "rag_server.cli.render:5: chunkers.grammars",
    ]
    # Inside a wing, its own modules are its own business.
    assert reached_into("indexer.sweep.run", module, faces())[:1] == [
        "indexer.sweep.run:4: indexer.search fusion"
    ]


def test_bench_has_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    names = dict(modules("bench"))
    for name, path in names.items():
        graph[name] = set()
        for _, module, imported in imports(name, path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in names else module
            if target in names and target != name:
                graph[name].add(target)
    circles = []
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        if node in trail:
            circles.append(" -> ".join([*trail[trail.index(node) :], node]))
            return
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, [*trail, node])
        done.add(node)

    for start in sorted(graph):
        visit(start, [])
    assert circles == []
