"""The local embedder with the real shipped ONNX all-MiniLM-L6-v2 (on real ONNX Runtime)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from indexer.embed import EmbeddingModel, make_embedder
from indexer.embed.local import DEFAULT_LOCAL_MODEL, DOCUMENTS, QUERIES, LocalEmbedder
from indexer.embed.model_dir import (
    MANIFEST_FILE,
    bundled_model_dir,
    read_manifest,
    resolve_model_dir,
)
from indexer.errors import InvalidArgument, ModelNotFound

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_NAME = "code-minilm-l6-v2-r2-int8"
BASE_NAME = "all-MiniLM-L6-v2-int8"

SNIPPETS = {
    "config": (
        "def load_settings(path):\n"
        "    with open(path, encoding='utf-8') as handle:\n"
        "        return json.load(handle)\n"
    ),
    "fib": (
        "def fibonacci(n):\n"
        "    a, b = 0, 1\n"
        "    for _ in range(n):\n"
        "        a, b = b, a + b\n"
        "    return a\n"
    ),
    "email": (
        "def send_invoice_email(smtp, invoice, recipient):\n"
        "    message = EmailMessage()\n"
        "    message['To'] = recipient\n"
        "    message['Subject'] = f'Invoice {invoice.number}'\n"
        "    smtp.send_message(message)\n"
    ),
    "sort": (
        "def sort_users_by_age(users):\n    return sorted(users, key=lambda user: user.age)\n"
    ),
}


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    made = make_embedder("local", None, "http://ignored:1")
    assert isinstance(made, LocalEmbedder)
    return made


def test_identity_of_the_shipped_model(local: LocalEmbedder) -> None:
    # The default's name differs from every earlier default ("all-MiniLM-L6-v2" of the torch
    # embedder, "all-MiniLM-L6-v2-int8", "code-minilm-l6-v2-int8" trained on the earlier
    # corpus): an index they built is re-embedded after the upgrade, never mixed with these
    # vectors.
    assert local.identity == EmbeddingModel("local", BUNDLED_NAME, 384, "", "")
    assert local.max_seq_length == 256
    assert LocalEmbedder(DEFAULT_LOCAL_MODEL).path == local.path == bundled_model_dir()
    assert LocalEmbedder(BUNDLED_NAME).path == local.path
    # The untuned model still ships, by either of its names.
    base = LocalEmbedder("all-MiniLM-L6-v2")
    assert base.identity == EmbeddingModel("local", BASE_NAME, 384, "", "")
    assert LocalEmbedder(BASE_NAME).path == base.path != local.path


def test_shipped_models_are_complete_and_documented() -> None:
    base = bundled_model_dir("all-MiniLM-L6-v2")
    assert read_manifest(base).source["weights_sha256"].startswith("53aa5117")
    readme = (base / "README.md").read_text(encoding="utf-8")
    assert "./bld model export all-MiniLM-L6-v2" in readme and "53aa5117" in readme
    # The default is the tuned model: its manifest, its training record and its card agree
    # on the weights it was exported from, and name the base model and the licence. It was
    # trained on the clean corpus (no library reserved for evaluation): the record names its
    # pairs and the card the corpus digest.
    tuned = bundled_model_dir()
    weights = read_manifest(tuned).source["weights_sha256"]
    record = json.loads((tuned / "training.json").read_text(encoding="utf-8"))
    assert record["weights_sha256"] == weights and record["base_sha256"].startswith("53aa5117")
    assert record["pairs_sha256"].startswith("d9f71fa16addf868")
    card = (ROOT / "docs" / "model-card.md").read_text(encoding="utf-8")
    assert weights[:16] in card and "all-MiniLM-L6-v2" in card and "Apache" in card
    assert "36fe729c82c6d02c" in card and "d9f71fa16addf868" in card
    assert "bench.train.train" in (tuned / "README.md").read_text(encoding="utf-8")
    for directory in (base, tuned):
        assert "Apache License" in (directory / "LICENSE").read_text(encoding="utf-8")
        assert (directory / "model.onnx").stat().st_size < 30_000_000  # int8: about 23 MB


def test_query_ranks_its_matching_snippet_first(local: LocalEmbedder) -> None:
    # The point of the product: a query finds the code that does what it says.
    names = list(SNIPPETS)
    result = local.embed_documents([SNIPPETS[n] for n in names], names)
    vectors = result.require_all()
    queries = {
        "read the configuration from a json file": "config",
        "email an invoice to a customer": "email",
        "order people by their age": "sort",
    }
    for query, want in queries.items():
        q = local.embed_query(query)
        scores = {n: cosine(q, v) for n, v in zip(names, vectors, strict=True)}
        assert max(scores, key=scores.__getitem__) == want, (query, scores)
        others = [s for n, s in scores.items() if n != want]
        assert scores[want] > max(others) + 0.05


def test_vectors_are_normalised_and_in_input_order(local: LocalEmbedder) -> None:
    texts = [SNIPPETS["fib"], "", SNIPPETS["sort"], SNIPPETS["email"], SNIPPETS["config"]]
    batch = local.embed_documents(texts).require_all()
    alone = [local.embed_documents([text]).require_all()[0] for text in texts]
    for i, vector in enumerate(batch):
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-4)
        # One piece per run: a text's vector is the same whatever is embedded beside it.
        assert vector == alone[i], texts[i]


def test_a_vector_depends_on_its_text_alone(local: LocalEmbedder) -> None:
    # int8 activations are scaled over a whole batch: in batches, a text's vector moved with
    # its neighbours, so the content-hash cache and re-built indexes disagreed with themselves.
    names = ["fib", "sort", "email", "config"]
    first = local.embed_documents([SNIPPETS[n] for n in names]).require_all()
    other = local.embed_documents([SNIPPETS["config"] * 3, SNIPPETS["fib"]]).require_all()
    assert other[1] == first[0]
    batched = LocalEmbedder(batch_size=4).embed_documents([SNIPPETS[n] for n in names])
    # A larger batch is still allowed, and close: the default is what guarantees equality.
    for vector, alone in zip(batched.require_all(), first, strict=True):
        assert cosine(vector, alone) > 0.98


def test_long_inputs_are_windowed_and_past_the_windows_reported(local: LocalEmbedder) -> None:
    # Past the model's 256 word pieces a plain call would cut silently; we average windows so
    # the tail counts, and report what lies beyond max_windows.
    head = SNIPPETS["config"] * 12  # ~420 word pieces: two windows
    tail = SNIPPETS["email"] * 12
    whole = local.embed_documents([head + tail], ["mix.py:1-90 mixed"])
    assert whole.split_inputs == 1 and not whole.truncated
    just_head = local.embed_documents([head]).require_all()[0]
    email_q = local.embed_query("email an invoice to a customer")
    assert cosine(email_q, whole.require_all()[0]) > cosine(email_q, just_head) + 0.05

    two = LocalEmbedder(max_windows=2)  # shares the loaded model
    cut = two.embed_documents([head + tail + tail], ["mix.py:1-140 mixed"])
    (truncated,) = cut.truncated
    assert truncated.label == "mix.py:1-140 mixed" and "2 windows" in truncated.reason
    assert 0 < truncated.kept_chars < len(head + tail + tail)


def test_a_document_cut_embeds_its_first_tokens_and_is_part_of_the_identity(
    local: LocalEmbedder,
) -> None:
    # [embedding] document_tokens: each document is its first N tokens, embedded as that text
    # alone would be; a shorter text is untouched; queries are never cut; the index records it.
    long = SNIPPETS["config"] * 12 + SNIPPETS["email"] * 12
    short = SNIPPETS["email"]
    lean = LocalEmbedder(document_tokens=64)  # shares the loaded model
    tokens = local.runtime.tokenizer.encode(long, add_special_tokens=False)
    head = long[: tokens.offsets[63][1]]
    made = lean.embed_documents([long, short], ["long.py:1-90", "short.py:1-3"])
    assert made.tokens == 64 + local.count_tokens([short])
    assert not made.truncated and not made.split_inputs  # a chosen depth, not a loss
    alone = local.embed_documents([head, short]).require_all()
    assert [cosine(a, b) for a, b in zip(made.require_all(), alone, strict=True)] == [
        pytest.approx(1.0, abs=1e-6)
    ] * 2
    assert lean.pieces([long]) == [head]
    assert lean.embed_query(long) == local.embed_query(long)
    assert lean.identity.document_tokens == 64 and local.identity.document_tokens == 0
    assert lean.identity.index_key != local.identity.index_key
    assert "first 64 tokens" in lean.identity.describe()
    with pytest.raises(InvalidArgument, match="at least 32"):
        LocalEmbedder(document_tokens=8)


def test_the_pieces_the_model_runs_cover_each_text_within_its_window(
    local: LocalEmbedder,
) -> None:
    # What the model runs (and what the bare-model benchmark gives it): a short text whole,
    # a long one as consecutive windows that together hold all of it, each within the window.
    short = SNIPPETS["email"]
    long = SNIPPETS["config"] * 12 + SNIPPETS["email"] * 12
    pieces = local.pieces([short, long])
    assert pieces[0] == short and len(pieces) > 2
    framer = local.runtime.framer
    lengths = [len(framer.encode(p, add_special_tokens=True).ids) for p in pieces[1:]]
    assert all(n <= local.max_seq_length for n in lengths)
    rest = long
    for piece in pieces[1:]:  # in order, nothing skipped but the spaces between windows
        at = rest.index(piece)
        assert not rest[:at].strip()
        rest = rest[at + len(piece) :]
    assert not rest.strip()


def test_the_model_input_is_framed_as_the_cutting_tokenizer_frames_it(
    local: LocalEmbedder,
) -> None:
    # A text within the window is framed by the uncut tokenizer (a one-shot search builds no
    # second one), a longer one by the framer that cuts at the window: the ids are the
    # framer's either way, at, just over and far over the window.
    runtime = local.runtime
    window = local.max_seq_length
    texts = [
        SNIPPETS["email"],
        "x " * (window - 2),  # with [CLS] and [SEP]: the window exactly
        "x " * (window - 1),
        SNIPPETS["config"] * 12,
        "",
    ]
    framed = runtime.frame_texts(texts)
    cut = [e.ids for e in runtime.framer.encode_batch(texts, add_special_tokens=True)]
    assert framed == cut
    assert [len(ids) for ids in framed[1:4]] == [window, window, window]


def test_prefixes_are_applied(local: LocalEmbedder) -> None:
    prefixed = LocalEmbedder(document_prefix="passage: ", query_prefix="query: ")
    assert prefixed.identity.document_prefix == "passage: "
    plain = local.embed_documents(["x = 1"]).require_all()[0]
    assert prefixed.embed_documents(["x = 1"]).require_all()[0] != plain
    assert prefixed.embed_query("x = 1") != plain


def test_missing_model_directory_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match=r"set model under \[embedding\]"):
        LocalEmbedder(model=str(tmp_path / "nope"))


def test_sentence_transformers_directory_says_to_export_it(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ModelNotFound, match=re.escape("export it with `code-rag model export")):
        LocalEmbedder(model=str(tmp_path))


def test_broken_manifest_or_model_says_to_re_export(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(bundled_model_dir(), broken)
    (broken / MANIFEST_FILE).write_text('{"name": "x"}', encoding="utf-8")
    with pytest.raises(
        ModelNotFound, match=re.escape("re-export the model with `code-rag model export")
    ):
        LocalEmbedder(model=str(broken))
    manifest = json.loads((bundled_model_dir() / MANIFEST_FILE).read_text(encoding="utf-8"))
    (broken / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")
    (broken / "model.onnx").write_bytes(b"not a model")
    embedder = LocalEmbedder(model=str(broken))  # identity needs only the manifest
    assert embedder.identity.dimension == 384
    with pytest.raises(ModelNotFound, match=r"cannot load .*model\.onnx.*re-export"):
        embedder.embed_query("x")


def test_resolve_names_the_bundled_model() -> None:
    assert resolve_model_dir(None) == resolve_model_dir(DEFAULT_LOCAL_MODEL) == bundled_model_dir()


def test_labels_must_match_texts(local: LocalEmbedder) -> None:
    with pytest.raises(InvalidArgument):
        local.embed_documents(["a", "b"], ["only one"])
    with pytest.raises(InvalidArgument):
        local.embed_documents("not a list")  # type: ignore[arg-type]


class HeldSession:
    """An inference session whose runs stop at a gate once started: a document batch held in
    the middle of its inference, for as long as a test needs."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.running = threading.Event()  # a run has started
        self.gate = threading.Event()  # the test lets it go on
        self.left = threading.Event()  # a run got past the gate (or gave up waiting)

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def run(self, *args: Any) -> Any:
        self.running.set()
        opened = self.gate.wait(60)
        self.left.set()
        assert opened, "the test never opened the gate"
        return self.session.run(*args)


def test_a_query_does_not_wait_for_a_document_batch(
    local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A query while a sweep embeds a batch runs on its own session and takes no lock the batch
    # holds (the torch embedder held one lock for both): with the batch stopped in the middle
    # of its inference, the query is answered and the batch is still running.
    runtime = local.runtime
    held = HeldSession(runtime.session(DOCUMENTS))
    session = runtime.session
    monkeypatch.setattr(
        runtime, "session", lambda kind: held if kind == DOCUMENTS else session(kind)
    )
    batch = threading.Thread(target=local.embed_documents, args=([SNIPPETS["email"]] * 4,))
    batch.start()
    try:
        assert held.running.wait(60), "the document batch never reached its inference"
        vector = local.embed_query("send an email")
        assert len(vector) == 384
        assert not held.left.is_set(), "the query waited for the document batch"
        assert runtime.loaded(QUERIES)
    finally:
        held.gate.set()
        batch.join(60)
    assert not batch.is_alive()


IDENTITY_ONLY = textwrap.dedent(
    """
    import sys
    from indexer.embed import make_embedder
    embedder = make_embedder("local")
    print(embedder.identity.model, embedder.identity.dimension)
    assert "onnxruntime" not in sys.modules, "identity loaded onnxruntime"
    assert "tokenizers" not in sys.modules, "identity loaded tokenizers"
    assert "torch" not in sys.modules
    """
)


def test_identity_comes_from_the_manifest_without_loading() -> None:
    # `status`, `scan --dry-run` and a sweep with nothing to embed need the identity only:
    # reading it must not load ONNX Runtime (nor torch), which costs time and memory.
    done = subprocess.run(
        [sys.executable, "-c", IDENTITY_ONLY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [BUNDLED_NAME, "384"]
