"""The eval corpus: a docstring -> function eval built from the standard library's own code.

`build_corpus` copies a fixed list of stdlib modules and packages (code no one here wrote, shipped
with the interpreter) into a folder with every docstring removed - module, class and function -
keeping every line number, and returns one query per documented function: the first paragraph
of its docstring, so the query text is not in the indexed corpus. The gold answer is the
function's file and line range (def line to last line; decorators excluded).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path

# Modules and packages of the stdlib, picked for well documented functions across many domains
# (numbers, dates, e-mail, HTTP, archives, logging, imports, networking, text). About 2,400
# documented functions in about 2,700 chunks once the docstrings are gone.
MODULES = (
    "importlib",
    "logging",
    "_pydecimal.py",
    "email",
    "http",
    "tarfile.py",
    "pydoc.py",
    "ipaddress.py",
    "inspect.py",
    "datetime.py",
    "imaplib.py",
    "pathlib.py",
    "statistics.py",
    "fractions.py",
    "calendar.py",
    "ftplib.py",
    "bdb.py",
    "threading.py",
    "difflib.py",
    "smtplib.py",
    "random.py",
    "codecs.py",
    "socketserver.py",
    "shutil.py",
    "wsgiref",
    "collections",
)
MIN_QUERY_WORDS = 3
MAX_QUERY_WORDS = 60


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    path: str  # relative to the corpus root
    symbol: str  # Class.method or function
    start_line: int  # the def line
    end_line: int
    split: str  # "tune" or "test"


def stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def source_files(stdlib: Path) -> list[tuple[Path, str]]:
    """(absolute file, corpus-relative path) for every .py file of MODULES, tests left out."""
    out: list[tuple[Path, str]] = []
    for name in MODULES:
        path = stdlib / name
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for f in files:
            rel = f.relative_to(stdlib).as_posix()
            if any(part in ("test", "tests") for part in Path(rel).parts):
                continue
            out.append((f, rel))
    return out


def _docstring_node(node: ast.AST) -> ast.Expr | None:
    if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    body = node.body
    if not body or not isinstance(body[0], ast.Expr):
        return None
    value = body[0].value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return body[0]
    return None


def strip_docstrings(source: bytes) -> bytes:
    """`source` with every docstring removed and every line kept where it was.

    A docstring that sits on lines of its own becomes blank lines; one that is the whole body,
    or shares a line with code, becomes `...` followed by the newlines it spanned.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: list[tuple[int, int, bytes]] = []
    for node in ast.walk(tree):
        doc = _docstring_node(node)
        if doc is None:
            continue
        assert doc.end_lineno is not None and doc.end_col_offset is not None
        begin = starts[doc.lineno - 1] + doc.col_offset
        end = starts[doc.end_lineno - 1] + doc.end_col_offset
        span = source[begin:end]
        newlines = span.count(b"\n")
        first_line = lines[doc.lineno - 1]
        own_lines = (
            not first_line[: doc.col_offset].strip()
            and not lines[doc.end_lineno - 1][doc.end_col_offset :].strip()
        )
        body = getattr(node, "body", [])
        if own_lines and len(body) > 1:
            # Blank the docstring's lines completely (indentation too).
            begin = starts[doc.lineno - 1]
            end = starts[doc.end_lineno - 1] + len(lines[doc.end_lineno - 1].rstrip(b"\r\n"))
            edits.append((begin, end, b"\n" * newlines))
        else:
            edits.append((begin, end, b"..." + b"\n" * newlines))
    out = source
    for begin, end, text in sorted(edits, reverse=True):
        out = out[:begin] + text + out[end:]
    return out


def _functions(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function and method, nested ones included."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((name, child))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def query_text(docstring: str) -> str | None:
    """The first paragraph of a docstring as one line, or None when it is too thin to ask."""
    first = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0]
    words = first.split()
    if len(words) < MIN_QUERY_WORDS or first.lstrip().startswith(">>>"):
        return None
    return " ".join(words[:MAX_QUERY_WORDS])


def _split(qid: str, tune_share: float) -> str:
    bucket = int(hashlib.sha256(qid.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "tune" if bucket < tune_share else "test"


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return  # keep its mtime: the sweep then skips it without reading
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def build_corpus(root: Path, tune_share: float = 0.4) -> tuple[list[Query], str]:
    """Write the docstring-free copy under `root`; return the queries and a corpus digest."""
    stdlib = stdlib_dir()
    queries: list[Query] = []
    digest = hashlib.sha256()
    kept: set[str] = set()
    for src, rel in source_files(stdlib):
        data = src.read_bytes()
        try:
            tree = ast.parse(data)
            stripped = strip_docstrings(data)
            after = ast.parse(stripped)
        except (SyntaxError, ValueError):
            continue
        before_fns = _functions(tree)
        after_fns = _functions(after)
        # (A body that was only a docstring now ends at its `...`: end lines may shrink.)
        if [(n, f.lineno) for n, f in before_fns] != [(n, f.lineno) for n, f in after_fns]:
            raise AssertionError(f"{rel}: removing docstrings moved a function")
        _write_if_changed(root / rel, stripped)
        kept.add(rel)
        digest.update(rel.encode() + b"\0" + hashlib.sha256(stripped).digest())
        for name, fn in before_fns:
            doc = ast.get_docstring(fn)
            text = query_text(doc) if doc else None
            if text is None:
                continue
            qid = f"{rel}::{name}"
            assert fn.end_lineno is not None
            queries.append(
                Query(qid, text, rel, name, fn.lineno, fn.end_lineno, _split(qid, tune_share))
            )
    for stale in [p for p in root.rglob("*.py") if p.relative_to(root).as_posix() not in kept]:
        stale.unlink()
    # A docstring shared by several functions (overrides, copies) has no single right answer.
    counts: dict[str, int] = {}
    for q in queries:
        counts[q.text.lower()] = counts.get(q.text.lower(), 0) + 1
    queries = [q for q in queries if counts[q.text.lower()] == 1]
    return queries, digest.hexdigest()


def save_queries(path: Path, queries: list[Query]) -> None:
    path.write_text("".join(json.dumps(asdict(q)) + "\n" for q in queries))


def clean(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
