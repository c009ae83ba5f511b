"""The walk: git's ignore semantics, the project's globs, default skips, size cap, symlinks."""

from __future__ import annotations

import os
from pathlib import Path

from indexer.project import Project, Root
from indexer.sweep.walk import Candidate, Walker, WalkOptions, walk_project


def make(root: Path, *paths: str, text: str = "x = 1\n") -> None:
    for rel in paths:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def indexed(root: Path, **kw: object) -> list[str]:
    opts = kw.pop("options", WalkOptions())
    project = Project("p", (Root(root, "r"),), **kw)  # type: ignore[arg-type]
    return sorted(c.path for c in walk_project(project, opts).files)  # type: ignore[arg-type]


def test_nested_gitignores_negation_anchoring_and_directories(tmp_path: Path) -> None:
    make(
        tmp_path,
        "app.py", "debug.log", "keep.log", "todo.txt", "sub/todo.txt",
        "logs/a.py", "sub/logs/b.py", "sub/x.tmp", "sub/inner/x.tmp", "sub/inner/y.tmp",
        "generated/a.py",
    )  # fmt: skip
    (tmp_path / ".gitignore").write_text(
        "*.log\n!keep.log\n/todo.txt\nlogs/\ngenerated\n", encoding="utf-8"
    )
    (tmp_path / "sub" / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
    (tmp_path / "sub" / "inner").mkdir(exist_ok=True)
    (tmp_path / "sub" / "inner" / ".gitignore").write_text("!y.tmp\n", encoding="utf-8")
    assert indexed(tmp_path) == [
        ".gitignore",
        "app.py",
        "keep.log",  # negated in the same file
        "sub/.gitignore",
        "sub/inner/.gitignore",
        "sub/inner/y.tmp",  # re-included by a deeper file
        "sub/todo.txt",  # /todo.txt is anchored to the root
    ]


def test_nothing_inside_an_ignored_folder_is_reincluded(tmp_path: Path) -> None:
    make(tmp_path, "build_out/keep.py", "build_out/other.py")
    (tmp_path / ".gitignore").write_text("build_out/\n!build_out/keep.py\n", encoding="utf-8")
    assert indexed(tmp_path) == [".gitignore"]


def test_git_info_exclude_is_honoured(tmp_path: Path) -> None:
    make(tmp_path, "a.py", "scratch.py")
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n", encoding="utf-8")
    assert indexed(tmp_path) == ["a.py"]


def test_project_include_and_exclude_globs(tmp_path: Path) -> None:
    make(tmp_path, "src/a.py", "src/gen/b.py", "src/c.js", "docs/d.md")
    assert indexed(tmp_path, include=("src/**",), exclude=("**/gen/**", "*.js")) == ["src/a.py"]


def test_default_skips_secrets_and_size_cap(tmp_path: Path) -> None:
    make(
        tmp_path,
        "a.py", "node_modules/x/index.js", ".venv/lib/y.py", "target/z.rs", "pkg.egg-info/PKG",
        ".env", ".env.local", "certs/server.pem", "tls.key", "id_rsa", "id_ed25519.pub",
        "credentials.json", "store.p12",
    )  # fmt: skip
    make(tmp_path, "big.py", text="x" * 2000)
    result = walk_project(Project("p", (Root(tmp_path, "r"),)), WalkOptions(max_file_bytes=1000))
    assert [c.path for c in result.files] == ["a.py"]
    assert result.skipped_by_reason() == {
        "secret file": 8,
        "in a skipped folder": 4,
        "over the size cap": 1,
    }


def test_python_environments_are_skipped_by_content_and_env_sources_kept(tmp_path: Path) -> None:
    make(
        tmp_path,
        "src/uu/env/src/env.rs", "lib/venv/__init__.py",   # sources named env and venv
        "env/pyvenv.cfg", "env/lib/site.py",               # a virtual environment
        "py311/pyvenv.cfg", "py311/lib/x.py",              # one of any name
        "conda/conda-meta/history", "conda/lib/y.py",      # a conda environment
    )  # fmt: skip
    assert indexed(tmp_path) == ["lib/venv/__init__.py", "src/uu/env/src/env.rs"]
    walker = Walker(Project("p", (Root(tmp_path, "r"),)))
    events = list(walker.walk_paths(Root(tmp_path, "r"), ["env/lib/site.py", "src/uu/env"]))
    assert [(type(e).__name__, e.path) for e in events] == [
        ("Skipped", "env/"),
        ("Candidate", "src/uu/env/src/env.rs"),
    ]


def test_skip_lists_are_configurable(tmp_path: Path) -> None:
    make(tmp_path, "build/gen.py", "vendor/lib.py")
    assert indexed(tmp_path, options=WalkOptions(skip_dirs=("vendor",))) == ["build/gen.py"]


def test_symlinks_inside_the_root_are_kept_outside_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root, "real.py")
    make(tmp_path, "outside.py")
    os.symlink(root / "real.py", root / "alias.py")
    os.symlink(tmp_path / "outside.py", root / "out.py")
    os.symlink(tmp_path, root / "up")  # a folder link leading out (and into a cycle)
    os.symlink(root / "missing.py", root / "dangling.py")
    result = walk_project(Project("p", (Root(root, "r"),)))
    assert sorted(c.path for c in result.files) == ["alias.py", "real.py"]
    assert result.skipped_by_reason() == {
        "symlink leading out of the root": 2,
        "broken symlink": 1,
    }


def test_a_path_alone_is_judged_as_the_walk_judges_it(tmp_path: Path) -> None:
    # File events name single paths; each must get the walk's own verdict (kept, or skipped
    # with the same reason), whatever folder rule or gitignore decides it.
    make(
        tmp_path,
        "app.py", "debug.log", "keep.log", "todo.txt", "sub/todo.txt", "logs/a.py",
        "sub/logs/b.py", "sub/x.tmp", "sub/inner/x.tmp", "sub/inner/y.tmp", "generated/a.py",
        "node_modules/pkg/index.js", ".env", "src/deep/er/mod.py", "empty.py",
    )  # fmt: skip
    (tmp_path / "empty.py").write_text("", encoding="utf-8")
    (tmp_path / ".gitignore").write_text(
        "*.log\n!keep.log\n/todo.txt\nlogs/\ngenerated\n", encoding="utf-8"
    )
    (tmp_path / "sub" / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
    (tmp_path / "sub" / "inner" / ".gitignore").write_text("!y.tmp\n", encoding="utf-8")
    os.symlink("/etc/passwd", tmp_path / "out.py")
    root = Root(tmp_path, "r")
    walker = Walker(Project("p", (root,)))
    walked = walker.walk()
    verdicts = {c.path: "indexed" for c in walked.files}
    verdicts.update({s.path: s.reason for s in walked.skipped})
    for rel in sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")):
        if (tmp_path / rel).is_dir() and not (tmp_path / rel).is_symlink():
            continue
        [alone] = list(walker.walk_paths(root, [rel]))
        got = "indexed" if isinstance(alone, Candidate) else alone.reason
        # A file inside a skipped folder is reported by that folder's path in a walk.
        folder = next((f for f in verdicts if f.endswith("/") and rel.startswith(f)), None)
        assert got == verdicts[folder or rel], rel
    # A folder named by an event brings in what is under it; a deleted path brings nothing.
    assert sorted(c.path for c in walker.walk_paths(root, ["sub"]) if isinstance(c, Candidate)) == [
        "sub/.gitignore", "sub/inner/.gitignore", "sub/inner/y.tmp", "sub/todo.txt",
    ]  # fmt: skip
    assert list(walker.walk_paths(root, ["gone.py"])) == []
