"""The operator CLI through real subprocesses: scan's reconcile prompt (its safety above all),
status, search, init. Each test gets its own database, so `scan all` sees only its schemas."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from cli_fixtures import bld, bld_tty, own_dsn, workspace
from ollama_standin import OllamaStandin, ollama_standin

from indexer.db import Schema, store

__all__ = ["ollama_standin", "own_dsn", "workspace"]


def make_schemas(dsn: str) -> None:
    """Two orphans (one with rows), and a foreign schema that is not ours."""
    with psycopg.connect(dsn) as conn:
        store.ensure_project(conn, Schema("old_app"))
        store.set_embedding_dimension(conn, Schema("old_app"), 3)
        record = store.FileRecord("r", "a.py", 1, 1, "sha", "python")
        row = store.ChunkRow(0, 1, 1, None, "block", "x = 1", "h", [1.0, 0.0, 0.0])
        store.upsert_file(conn, Schema("old_app"), record, [row])
        store.ensure_project(conn, Schema("old_lib"))
        conn.execute("CREATE SCHEMA billing_reports")
        conn.execute("CREATE TABLE billing_reports.totals (x int)")


def schemas(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' "
            "AND nspname NOT IN ('public', 'information_schema')"
        ).fetchall()
    return {r[0] for r in rows}


def test_no_terminal_refuses_to_drop_and_names_yes(workspace: Path, own_dsn: str) -> None:
    make_schemas(own_dsn)
    result = bld(workspace, "scan", "all")
    assert result.returncode == 4
    assert "drop schema `old_app`: 1 files, 1 chunks, last swept never" in result.stdout
    assert "drop schema `old_lib`: 0 files, 0 chunks" in result.stdout
    assert "re-run with --yes" in result.stderr
    assert "billing_reports" not in result.stdout  # a foreign schema is never offered
    assert {"old_app", "old_lib", "billing_reports", "shop"} <= schemas(own_dsn)
    assert "shop: ok" in result.stdout  # the sweep itself still ran


@pytest.mark.parametrize("answer", ["n", "", "no", "yes please"])
def test_anything_but_yes_drops_nothing(workspace: Path, own_dsn: str, answer: str) -> None:
    make_schemas(own_dsn)
    code, screen = bld_tty(workspace, answer, "scan", "shop")
    assert "Proceed? [y/N]" in screen
    assert "Nothing dropped." in screen
    assert code == 4
    assert {"old_app", "old_lib", "billing_reports"} <= schemas(own_dsn)


def test_yes_at_the_prompt_drops_exactly_the_planned_schemas(workspace: Path, own_dsn: str) -> None:
    make_schemas(own_dsn)
    before = schemas(own_dsn)
    code, screen = bld_tty(workspace, "y", "scan", "all")
    assert code == 0, screen
    assert "dropped schema `old_app`" in screen and "dropped schema `old_lib`" in screen
    assert schemas(own_dsn) == (before - {"old_app", "old_lib"}) | {"shop"}
    assert "billing_reports" in schemas(own_dsn)


def test_yes_flag_drops_without_a_terminal(workspace: Path, own_dsn: str) -> None:
    make_schemas(own_dsn)
    result = bld(workspace, "scan", "all", "--yes")
    assert result.returncode == 0, result.stderr
    assert {"old_app", "old_lib"}.isdisjoint(schemas(own_dsn))
    assert "billing_reports" in schemas(own_dsn)


def test_status_and_search_read_well(workspace: Path) -> None:
    assert bld(workspace, "scan", "shop").returncode == 0
    status = bld(workspace, "status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0] == "shop"
    assert lines[1].startswith("  files 2   chunks ")
    assert lines[1].endswith("model ollama nomic-embed-text:v1.5 (768-d)")
    assert lines[2] == "  roots:"
    assert lines[3].split()[:5] == ["shop", "2", "files", lines[3].split()[3], "chunks"]
    assert lines[4].startswith("  last sweep: ")
    assert lines[4].endswith(", ok (2 indexed, 0 deleted, 0 failed)")

    data = json.loads(bld(workspace, "status", "shop", "--json").stdout)
    [project] = data["projects"]
    assert (project["project"], project["files"], project["indexed"]) == ("shop", 2, True)

    result = bld(workspace, "search", "shop", "slugify", "--top-k", "3")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0].split()
    assert first[0] == "shop/util.py:1-2" and first[1] == "slugify"
    hits = json.loads(bld(workspace, "search", "shop", "Invoice total", "--json").stdout)["hits"]
    assert {"chunk_id", "repo", "path", "absolute_path", "start_line", "end_line", "symbol",
            "score", "snippet", "also"} <= set(hits[0])  # fmt: skip
    by_file = bld(workspace, "search", "shop", "Invoice total", "--by-file", "--json")
    files = [h["path"] for h in json.loads(by_file.stdout)["hits"]]
    assert len(files) == len(set(files)) and set(files) <= {"billing/invoice.py", "util.py"}


def test_a_document_cut_is_shown_by_status_and_changing_it_indexes_again(
    workspace: Path, ollama_standin: OllamaStandin
) -> None:
    # [embedding] document_tokens = 40: the status names the cut; going back to whole texts
    # indexes the project again, with a warning that says why, and the status follows.
    ini = workspace / "application.ini"
    whole = ini.read_text(encoding="utf-8")
    ini.write_text(whole + "document_tokens = 40\n", encoding="utf-8")
    assert bld(workspace, "scan", "shop").returncode == 0
    assert (
        bld(workspace, "status")
        .stdout.splitlines()[1]
        .endswith("model ollama nomic-embed-text:v1.5 (768-d, first 40 tokens of each text)")
    )
    assert (
        max(len(t) for batch in ollama_standin.batches for t in batch)
        <= len("search_document: ") + 40 * 3
    )
    ini.write_text(whole, encoding="utf-8")
    again = bld(workspace, "scan", "shop")
    assert again.returncode == 0, again.stderr
    assert "re-embedding every chunk" in again.stdout + again.stderr
    assert (
        bld(workspace, "status")
        .stdout.splitlines()[1]
        .endswith("model ollama nomic-embed-text:v1.5 (768-d)")
    )


def test_known_errors_are_one_line_without_traceback(workspace: Path) -> None:
    result = bld(workspace, "scan", "nosuch")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"error: unknown project 'nosuch': {workspace / 'rag-projects.json'} configures shop; "
        "add it there, or use `all`"
    ]
    result = bld(workspace, "status", "--server")
    assert result.returncode == 1
    assert "no code-rag server answers at http://127.0.0.1:17080/rag-admin" in result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_lists_and_counts_without_writing(workspace: Path, own_dsn: str) -> None:
    (workspace / "shop" / ".env").write_text("SECRET=1\n", encoding="utf-8")
    result = bld(workspace, "scan", "shop", "--dry-run")
    assert result.returncode == 0
    assert "  + shop/util.py" in result.stdout
    assert "  - shop/.env  (secret file)" in result.stdout
    assert result.stdout.splitlines()[-1] == "shop: 2 to index; skipped: 1 secret file"
    assert "shop" not in schemas(own_dsn)


def test_init_writes_once_and_never_overwrites_without_force(tmp_path: Path) -> None:
    first = bld(tmp_path, "init")
    assert first.returncode == 0
    assert first.stdout.splitlines()[:3] == [
        f"wrote {tmp_path / 'application.ini'}",
        f"wrote {tmp_path / 'rag-projects.json'}",
        f"wrote {tmp_path / '.data' / 'token'}",
    ]
    ini = (tmp_path / "application.ini").read_text()
    token_file = tmp_path / ".data" / "token"
    token = token_file.read_text()
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert token.strip() not in ini  # the secret stays out of the ini
    again = bld(tmp_path, "init")
    assert again.returncode == 1
    assert "already exist: keep them, or run `code-rag init --force`" in again.stderr
    assert (tmp_path / "application.ini").read_text() == ini
    assert token_file.read_text() == token
    forced = bld(tmp_path, "init", "--force")
    assert forced.returncode == 0
    assert token_file.read_text() != token  # a fresh token


def test_every_command_has_help_with_an_example(tmp_path: Path) -> None:
    for command in ("scan", "status", "search", "reindex", "init"):
        result = bld(tmp_path, command, "--help")
        assert result.returncode == 0
        assert "Example: code-rag " + command in result.stdout.replace("\n", " "), command


def test_full_scan_rereads_every_file_and_embeds_only_new_text(
    workspace: Path, ollama_standin: OllamaStandin
) -> None:
    assert bld(workspace, "scan", "shop").returncode == 0
    ollama_standin.reset_counters()
    again = bld(workspace, "scan", "shop")
    assert ", 0 indexed, 2 unchanged," in again.stdout
    assert ollama_standin.embedding_calls == 0
    full = bld(workspace, "scan", "shop", "--full")
    assert full.returncode == 0, full.stderr
    assert ", 2 indexed, 0 unchanged," in full.stdout
    # Every vector comes back from the embedding cache every project shares.
    assert ollama_standin.embedding_calls == 0
    assert "embedded, 0 vectors from cache" not in full.stdout


def test_search_reads_a_group_as_one(workspace: Path) -> None:
    tools = workspace / "tools"
    tools.mkdir()
    (tools / "ledger.py").write_text(
        "def post_invoice_total(total):\n    return round(total, 2)\n", encoding="utf-8"
    )
    document = {
        "projects": {"shop": {"roots": ["shop"]}, "tools": {"roots": ["tools"]}},
        "groups": {"all_code": ["shop", "tools"]},
    }
    (workspace / "rag-projects.json").write_text(json.dumps(document), encoding="utf-8")
    assert bld(workspace, "scan", "all").returncode == 0
    found = bld(workspace, "search", "all_code", "invoice total", "--top-k", "5")
    assert found.returncode == 0, found.stderr
    places = [line.split()[0] for line in found.stdout.splitlines() if not line.startswith(" ")]
    # Each hit says its project; both projects answer.
    assert {p.split(":", 1)[0] for p in places} == {"shop", "tools"}
    assert "tools:tools/ledger.py:1-2" in places
    data = json.loads(bld(workspace, "search", "all_code", "post_invoice_total", "--json").stdout)
    assert (data["hits"][0]["project"], data["hits"][0]["path"]) == ("tools", "ledger.py")
    unknown = bld(workspace, "search", "nothing", "x")
    assert unknown.returncode == 1
    assert "unknown project or group 'nothing'" in unknown.stderr
    assert "the groups all_code" in unknown.stderr
