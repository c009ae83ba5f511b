"""The local embedder as the product runs it: CLI commands in their own processes never import
torch, identity alone never loads the model, the ONNX vectors match the torch path's on real
code, and `model export` rebuilds the shipped model from the bundled weights."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_fixtures import env, own_dsn

from chunkers.embedding import embedding_text
from chunkers.pipeline import chunk_file
from indexer.embed.local import LocalEmbedder
from indexer.embed.model_dir import MANIFEST_FILE, MODEL_FILE, bundled_model_dir, read_manifest

__all__ = ["own_dsn"]  # a fixture, imported for pytest

ROOT = Path(__file__).resolve().parent.parent

# Runs one CLI command in this process, then says which heavy modules it imported.
RUN_AND_REPORT = textwrap.dedent(
    """
    import sys
    from rag_server.cli import app
    code = 0
    try:
        app(sys.argv[1:], prog_name="code-rag")
    except SystemExit as exc:
        code = exc.code or 0
    heavy = ("torch", "sentence_transformers", "transformers", "onnxruntime")
    print("LOADED:" + ",".join(m for m in heavy if m in sys.modules))
    sys.exit(code)
    """
)


def cli(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, *args],
        cwd=cwd, env=env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("LOADED:")), "LOADED:")
    return done, {m for m in line.removeprefix("LOADED:").split(",") if m}


@pytest.mark.slow
def test_commands_never_import_torch_and_load_the_model_only_to_embed(
    tmp_path: Path, own_dsn: str
) -> None:
    src = tmp_path / "shop"
    src.mkdir()
    (src / "invoice.py").write_text(
        "class Invoice:\n    def total(self):\n        return sum(line.amount for line in "
        "self.lines)\n\n\ndef send_invoice_email(smtp, invoice):\n    smtp.send(invoice)\n",
        encoding="utf-8",
    )
    (tmp_path / "application.ini").write_text(
        f"[database]\ndsn = {own_dsn}\n[embedding]\nprovider = local\nthreads = 2\n",
        encoding="utf-8",
    )
    (tmp_path / "rag-projects.json").write_text(
        json.dumps({"projects": {"shop": {"roots": ["shop"]}}}), encoding="utf-8"
    )
    first, loaded = cli(tmp_path, "scan", "shop", "--yes")
    assert first.returncode == 0, first.stderr
    assert "torch" not in loaded and "onnxruntime" in loaded  # it embedded
    found, loaded = cli(tmp_path, "search", "shop", "email an invoice", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout[: found.stdout.rindex("LOADED:")])["hits"]
    assert hits and hits[0]["path"] == "invoice.py"
    assert "torch" not in loaded
    # Nothing changed: the identity comes from the manifest, the model is never loaded.
    again, loaded = cli(tmp_path, "scan", "shop", "--yes")
    assert again.returncode == 0, again.stderr
    assert not loaded, loaded
    for args in (["status", "shop"], ["scan", "shop", "--dry-run"]):
        done, loaded = cli(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert not loaded, (args, loaded)
    shown, _ = cli(tmp_path, "status", "shop", "--json")
    status = json.loads(shown.stdout[: shown.stdout.rindex("LOADED:")])["projects"][0]
    assert "code-minilm-l6-v2-r2-int8" in json.dumps(status)


def real_chunks(limit: int) -> list[str]:
    """Embedding texts of this checkout's own code, as the sweep makes them."""
    texts: list[str] = []
    for path in sorted((ROOT / "indexer").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for chunk in chunk_file(rel, path.read_bytes()).chunks:
            texts.append(embedding_text(chunk, rel))
    step = max(len(texts) // limit, 1)
    return texts[::step][:limit]


@pytest.mark.slow
def test_onnx_vectors_match_the_torch_path_on_real_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # The upgrade's promise: the int8 ONNX model gives nearly the vectors sentence-transformers
    # gives from the same weights (the bounds of the issue: mean cosine >= 0.99, min >= 0.98).
    # On chunks that fit one window: past it, we average windows where it would cut.
    pytest.importorskip("torch", reason="the torch path is in the dev install")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing may reach a model hub
    from sentence_transformers import SentenceTransformer

    from indexer.embed.export import BUNDLED_SOURCE, resolve_source

    reference = SentenceTransformer(
        str(resolve_source(BUNDLED_SOURCE)), device="cpu", local_files_only=True
    )
    fits = reference.max_seq_length
    texts = [t for t in real_chunks(96) if len(reference.tokenizer(t)["input_ids"]) <= fits][:48]
    assert len(texts) >= 24, len(texts)
    ours = np.asarray(LocalEmbedder("all-MiniLM-L6-v2").embed_documents(texts).require_all())
    theirs = reference.encode(texts, normalize_embeddings=True)
    cos = (ours * theirs).sum(axis=1)
    assert cos.mean() >= 0.99 and cos.min() >= 0.98, (cos.mean(), cos.min())


@pytest.mark.slow
def test_model_export_rebuilds_the_shipped_model(tmp_path: Path) -> None:
    # `./bld model export` of the bundled weights gives a working layout, byte for byte the
    # model that ships (so the shipped file can be reproduced and checked).
    pytest.importorskip("torch", reason="model export needs the export extra")
    dest = tmp_path / "minilm"
    done = subprocess.run(
        [sys.executable, "-m", "rag_server.cli", "model", "export", "all-MiniLM-L6-v2",
         str(dest), "--int8"],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "6 attention blocks fused" in done.stdout and "check: cosine" in done.stdout
    shipped = bundled_model_dir("all-MiniLM-L6-v2")
    assert (dest / MODEL_FILE).read_bytes() == (shipped / MODEL_FILE).read_bytes()
    assert read_manifest(dest) == read_manifest(shipped)
    vector = LocalEmbedder(str(dest)).embed_query("parse the config file")
    assert len(vector) == 384

    again = subprocess.run(
        [sys.executable, "-m", "rag_server.cli", "model", "export", "all-MiniLM-L6-v2", str(dest)],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 1 and "is not empty" in again.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "rag_server.cli", "model", "export", str(tmp_path / "nope"),
         str(tmp_path / "out")],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 1 and "no sentence-transformers model" in missing.stderr
    assert not (tmp_path / "out" / MANIFEST_FILE).exists()
