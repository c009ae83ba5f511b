"""Exact text in blocks of whole lines: grep and find_references return every matching line
once, with its number in the file, wherever it falls in a block (first line, last line, a file
of many blocks, a line longer than a block), for CRLF and lone-CR files, a file without a final
newline and one that is not valid UTF-8; a changed file leaves no stale block behind; and an
index made before the blocks existed (m003: one row per file) fills them on its next sweep
without embedding anything again.

What each search must return is computed from the files' bytes with Python's own line
splitting, not with the product's block logic.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from index_rows import execute, file_chunks
from ollama_standin import OllamaStandin, ollama_standin

from indexer.db import Database, Schema, migrations, store
from indexer.db import blocks as text_blocks
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import MAX_RESULTS, find_references, find_symbol, grep
from indexer.sweep import SweepOptions, sweep_project

__all__ = ["ollama_standin"]

Conn = psycopg.Connection[Any]
REPO = "t"


def long_file() -> str:
    """Many blocks' worth of lines of uneven length, each with its own token `L<n>`, the word
    `needle`, and one line longer than a block."""
    lines = []
    for n in range(1, 801):
        pad = "x" * ((n * 37) % 150)
        lines.append(f'L{n:04d} = "needle {pad} end"')
    lines[399] = f'L0400 = "needle {"y" * 5000} end"'
    lines[9] = "def needle():"  # a definition: not a reference to itself
    lines[10] = "    " + lines[10]
    return "\n".join(lines) + "\n"


FILES: dict[str, bytes] = {
    "long.py": long_file().encode(),
    "crlf.txt": b"alpha\r\nbeta needle\r\n\r\ngamma needle\r\n",
    "lone_cr.txt": b"one\rtwo needle\rthree\r",
    "no_final_newline.py": b"a = 1\nb = needle",
    "latin1.txt": b"caf\xe9 au lait\nneedle here\n\xff\xfe needle\n",
    "empty.txt": b"",
    # Cyrillic letters stand for blanks and punctuation in the spelled text a literal is
    # searched in: "и в" spelled is "иав", which line 1 holds as written.
    "cyrillic.txt": "иав\nи в\n".encode(),
    "specials.txt": b"100% sure\\thing\n100_ sure\n",
}


def editor_lines(data: bytes) -> list[str]:
    """Lines as an editor numbers them: UTF-8 with bad bytes replaced, CRLF / CR / LF ends."""
    return data.decode("utf-8", "replace").splitlines()


def lines_where(test: Any) -> list[tuple[str, int, str]]:
    return [
        (path, n, text)
        for path, data in sorted(FILES.items())
        for n, text in enumerate(editor_lines(data), 1)
        if test(text)
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / REPO
    root.mkdir()
    for path, data in FILES.items():
        (root / path).write_bytes(data)
    return root


@pytest.fixture
def project(tree: Path, project_name: str) -> Project:
    return Project(project_name, (Root(tree, REPO),))


@pytest.fixture
def embedder(ollama_standin: OllamaStandin) -> Any:
    emb = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)
    yield emb
    emb.close()


def sweep(database: Database, project: Project, embedder: Any) -> None:
    report = sweep_project(database, project, embedder, SweepOptions())
    assert report.outcome == "ok", report


def found(result: Any) -> list[tuple[str, int, str]]:
    assert result.complete is True
    return [(m.path, m.line, m.text) for m in result.matches]


def blocks(conn: Conn, project: str, path: str) -> list[tuple[int, str]]:
    rows = conn.execute(
        psycopg.sql.SQL(
            "SELECT b.start_line, b.content, b.spelled FROM {s}.rag_text_block b"
            " JOIN {s}.rag_file f ON f.id = b.file_id"
            " WHERE f.path = %(path)s ORDER BY b.start_line"
        ).format(s=psycopg.sql.Identifier(project)),
        {"path": path},
    ).fetchall()
    conn.rollback()
    # Spelled line for line, each blank or punctuation character as two letters.
    plain = set("".join(char for char, _ in text_blocks.SPELLING))
    assert all(len(r[2]) == len(r[1]) + sum(c in plain for c in r[1]) for r in rows)
    assert all(r[2].count("\n") == r[1].count("\n") for r in rows)
    return [(int(r[0]), str(r[1])) for r in rows]


def test_blocks_hold_each_line_once_in_order(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    sweep(database, project, embedder)
    for path, data in FILES.items():
        stored = blocks(conn, project.name, path)
        lines = editor_lines(data)
        # Put together in order, the blocks are the file's lines, each exactly once.
        assert [line for _, text in stored for line in text.split("\n")] == lines, path
        assert [start for start, _ in stored] == sorted({start for start, _ in stored})
        starts = [start for start, _ in stored] + [len(lines) + 1]
        for i, (start, text) in enumerate(stored):
            assert starts[i + 1] == start + text.count("\n") + 1, path
            # A block over the size is a single line that could not be split.
            assert len(text) <= text_blocks.TEXT_BLOCK_CHARS or "\n" not in text
    assert len(blocks(conn, project.name, "long.py")) > 10
    assert blocks(conn, project.name, "empty.txt") == []


def test_grep_finds_each_line_once_at_block_edges(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    sweep(database, project, embedder)
    lines = editor_lines(FILES["long.py"])
    # The first and the last line of every block, found by their own token, at their number.
    for start, text in blocks(conn, project.name, "long.py"):
        for n in (start, start + text.count("\n")):
            token = lines[n - 1].split()[0]
            result = grep(database, project, token)
            assert [(m.path, m.line) for m in result.matches] == [("long.py", n)], token
    result = grep(database, project, "needle", max_results=MAX_RESULTS)
    expected = lines_where(lambda line: "needle" in line)
    assert [(p, n) for p, n, _ in found(result)] == [(p, n) for p, n, _ in expected]
    short = [m for m in found(result) if len(m[2]) < 300]
    assert short == [m for m in expected if len(m[2]) < 300]
    # `^` and `$` are a line's edges in every block, not the block's.
    pattern = r'^L0\d\d0 = "needle x* end"$'
    result = grep(database, project, pattern, regex=True, max_results=MAX_RESULTS)
    assert found(result) == lines_where(lambda line: re.search(pattern, line) is not None)
    assert len(found(result)) == 78  # not line 10 (a definition) nor 400 (its y's)


def test_line_ends_a_missing_final_newline_and_bad_bytes(
    database: Database, project: Project, embedder: Any
) -> None:
    sweep(database, project, embedder)
    short = [p for p in FILES if p != "long.py"]
    result = grep(database, project, "needle", path_glob="*.txt")
    assert found(result) == [
        m for m in lines_where(lambda line: "needle" in line) if m[0].endswith(".txt")
    ]
    assert ("latin1.txt", 3, "\ufffd\ufffd needle") in found(result)
    assert ("crlf.txt", 4, "gamma needle") in found(result)
    assert ("lone_cr.txt", 2, "two needle") in found(result)
    result = grep(database, project, "B = NEEDLE", case_sensitive=False)
    assert found(result) == [("no_final_newline.py", 2, "b = needle")]
    assert found(grep(database, project, "и в")) == [("cyrillic.txt", 2, "и в")]
    assert found(grep(database, project, "иав")) == [("cyrillic.txt", 1, "иав")]
    assert found(grep(database, project, "И В", case_sensitive=False)) == [
        ("cyrillic.txt", 2, "и в")
    ]
    # Punctuation, LIKE's own wildcards and its escape are plain characters.
    literal = '= "needle x end"'
    assert found(grep(database, project, literal)) == lines_where(lambda line: literal in line)
    assert len(found(grep(database, project, literal))) == 5
    assert found(grep(database, project, "0% s")) == [("specials.txt", 1, "100% sure\\thing")]
    assert found(grep(database, project, "0_ s")) == [("specials.txt", 2, "100_ sure")]
    assert found(grep(database, project, "e\\t")) == [("specials.txt", 1, "100% sure\\thing")]
    # An empty line matches `^$` where the file has one, and nowhere past a file's end.
    result = grep(database, project, "^$", regex=True, max_results=MAX_RESULTS)
    assert [(p, n) for p, n, _ in found(result) if p in short] == [("crlf.txt", 3)]


def test_find_references_across_blocks(database: Database, project: Project, embedder: Any) -> None:
    sweep(database, project, embedder)
    word = re.compile(r"(?<![\w$])needle(?![\w$])")
    expected = [
        (p, n)
        for p, n, text in lines_where(lambda line: word.search(line) is not None)
        if (p, n) != ("long.py", 10)  # its definition
    ]
    result = find_references(database, project, "needle", max_results=MAX_RESULTS)
    assert [(m.path, m.line) for m in result.matches] == expected
    assert result.complete is True
    capped = find_references(database, project, "needle", max_results=7)
    assert len(capped.matches) == 7 and capped.complete is False


def test_a_changed_file_leaves_no_stale_block(
    database: Database, conn: Conn, project: Project, tree: Path, embedder: Any
) -> None:
    sweep(database, project, embedder)
    shorter = "\n".join(editor_lines(FILES["long.py"])[:100]) + "\nL9999 needle\n"
    (tree / "long.py").write_text(shorter)
    sweep(database, project, embedder)
    assert [(m.path, m.line) for m in grep(database, project, "L0700").matches] == []
    assert [(m.path, m.line) for m in grep(database, project, "L9999").matches] == [
        ("long.py", 101)
    ]
    assert [line for _, t in blocks(conn, project.name, "long.py") for line in t.split("\n")] == (
        shorter.splitlines()
    )
    (tree / "long.py").unlink()
    sweep(database, project, embedder)
    assert blocks(conn, project.name, "long.py") == []


def test_an_index_from_before_the_blocks_fills_them_without_re_embedding(
    database: Database,
    conn: Conn,
    project: Project,
    embedder: Any,
    ollama_standin: OllamaStandin,
) -> None:
    # Stage an index as the previous release left it (through m003): each file's text in one
    # row of rag_file_text, a GIN trigram index on rag_symbol's names, no text blocks and no
    # table of distinct names.
    sweep(database, project, embedder)
    chunks_before = file_chunks(conn, project.name, REPO, "long.py")
    execute(conn, project.name, "DROP TABLE {schema}.rag_text_block")
    execute(conn, project.name, "DROP TABLE {schema}.rag_name")
    execute(conn, project.name, "DROP FUNCTION {schema}.rag_name_add CASCADE")
    execute(conn, project.name, "DROP FUNCTION {schema}.rag_name_drop CASCADE")
    for step in [*migrations.M003_FILE_TEXT, migrations.M002_SYMBOLS[3]]:
        execute(conn, project.name, step)
    execute(
        conn,
        project.name,
        "INSERT INTO {schema}.rag_file_text (file_id, content)"
        " SELECT id, 'stale text' FROM {schema}.rag_file",
    )
    execute(
        conn, project.name, "DELETE FROM {schema}.rag_migration WHERE name = 'm004_text_blocks'"
    )
    conn.commit()
    ollama_standin.reset_counters()

    sweep(database, project, embedder)
    assert ollama_standin.embedding_calls == 0
    assert file_chunks(conn, project.name, REPO, "long.py") == chunks_before
    tables = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = %(s)s ORDER BY 1", {"s": project.name}
    ).fetchall()
    assert ("rag_file_text",) not in tables and ("rag_text_block",) in tables
    names = conn.execute(
        psycopg.sql.SQL("SELECT name FROM {}.rag_name ORDER BY name").format(
            psycopg.sql.Identifier(project.name)
        )
    ).fetchall()
    assert [n for (n,) in names] == ["needle"]  # the one definition of the staged files
    conn.rollback()
    result = grep(database, project, "needle", max_results=MAX_RESULTS)
    assert [(p, n) for p, n, _ in found(result)] == [
        (p, n) for p, n, _ in lines_where(lambda line: "needle" in line)
    ]
    assert [s.name for s in find_symbol(database, project, "neddle", match="fuzzy").symbols] == [
        "needle"
    ]


def test_blocks_spelled_by_an_earlier_release_are_spelled_again(
    database: Database, conn: Conn, project: Project, embedder: Any
) -> None:
    # Stage the spelling of the previous release (m004: one Cyrillic letter per blank or
    # punctuation character, and a second trigram index on the plain text).
    sweep(database, project, embedder)
    cyrillic = "".join(chr(0x430 + i) for i in range(34))
    conn.execute(
        Schema(project.name).sql(
            "UPDATE {schema}.rag_text_block SET spelled = translate(content, %(a)s, %(b)s)",
        ),
        {"a": "".join(char for char, _ in text_blocks.SPELLING), "b": cyrillic},
    )
    execute(conn, project.name, migrations.M004_TEXT_BLOCKS[1])
    execute(
        conn, project.name, "DELETE FROM {schema}.rag_migration WHERE name = 'm005_ascii_spelling'"
    )
    conn.commit()

    assert store.ensure_project(conn, Schema(project.name)) == ["m005_ascii_spelling"]
    conn.commit()
    stored = conn.execute(
        Schema(project.name).sql("SELECT content, spelled FROM {schema}.rag_text_block")
    ).fetchall()
    assert stored and all(spelled == text_blocks.spelled(content) for content, spelled in stored)
    assert any(spelled != content for content, spelled in stored)
    indexes = {
        name
        for (name,) in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (project.name,)
        )
    }
    assert "rag_text_block_spelled_trgm" in indexes and "rag_text_block_trgm" not in indexes
    conn.rollback()
    result = grep(database, project, "needle(", max_results=MAX_RESULTS)
    assert found(result) == lines_where(lambda line: "needle(" in line) != []
