"""The local embedder with the real bundled all-MiniLM-L6-v2 (loaded once for this module)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from indexer.embed import EmbeddingModel
from indexer.embed_local import DEFAULT_LOCAL_MODEL, LocalEmbedder, resolve_model_dir
from indexer.embedders import make_embedder
from indexer.errors import InvalidArgument, ModelNotFound

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


def test_identity_of_the_bundled_model(local: LocalEmbedder) -> None:
    assert local.identity == EmbeddingModel("local", DEFAULT_LOCAL_MODEL, 384, "", "")
    assert local.max_seq_length == 256
    # Loading never consults a hub.
    assert os.environ["HF_HUB_OFFLINE"] == "1"


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
    texts = [SNIPPETS["fib"], "", SNIPPETS["sort"]]
    batch = local.embed_documents(texts).require_all()
    for text, vector in zip(texts, batch, strict=True):
        assert math.isclose(math.fsum(x * x for x in vector), 1.0, rel_tol=1e-4)
        alone = local.embed_documents([text]).require_all()[0]
        assert cosine(alone, vector) > 0.9999


def test_long_inputs_are_windowed_and_past_the_windows_reported(local: LocalEmbedder) -> None:
    # Past the model's 256 word pieces the library would cut silently; we average windows so
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


def test_prefixes_are_applied(local: LocalEmbedder) -> None:
    prefixed = LocalEmbedder(document_prefix="passage: ", query_prefix="query: ")
    assert prefixed.identity.document_prefix == "passage: "
    plain = local.embed_documents(["x = 1"]).require_all()[0]
    assert prefixed.embed_documents(["x = 1"]).require_all()[0] != plain
    assert prefixed.embed_query("x = 1") != plain


def test_missing_model_directory_says_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match="set model under \\[embedding\\]"):
        LocalEmbedder(model=str(tmp_path / "nope"))


def test_bundled_model_directory_is_found() -> None:
    path = resolve_model_dir(None)
    assert (path / "model.safetensors").is_file() and resolve_model_dir(DEFAULT_LOCAL_MODEL) == path


def test_labels_must_match_texts(local: LocalEmbedder) -> None:
    with pytest.raises(InvalidArgument):
        local.embed_documents(["a", "b"], ["only one"])
    with pytest.raises(InvalidArgument):
        local.embed_documents("not a list")  # type: ignore[arg-type]
