"""Model bookkeeping and batching: pure functions the sweep and the search rely on."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.embed import DEFAULT_CHUNK_VECTORS, make_embedder
from indexer.embed.embedder import (
    EmbedBatchResult,
    EmbeddingModel,
    RefusedInput,
    cut_to_bytes,
    default_prefixes,
    ensure_same_model,
    needs_reembed,
    pack_batches,
    reembed_warning,
    shorten,
    utf8_len,
)
from indexer.errors import ConfigError, EmbeddingRefused, InvalidArgument, ModelMismatch

# Identities of indexes that read each chunk whole, as every index did before `chunk_vectors`
# existed: their records hold no `chunk_vectors` key.
NOMIC = EmbeddingModel(
    "ollama", "nomic-embed-text:v1.5", 768, "search_document: ", "search_query: ", 0, "whole"
)
MINILM = EmbeddingModel("local", "all-MiniLM-L6-v2", 384, chunk_vectors="whole")


def test_identity_round_trips_through_a_dict() -> None:
    # rag_meta stores the dict as JSON; reading it back must give the same identity.
    assert EmbeddingModel.from_dict(NOMIC.to_dict()) == NOMIC
    assert EmbeddingModel.from_dict(MINILM.to_dict()) == MINILM
    assert NOMIC.to_dict() == {
        "provider": "ollama",
        "model": "nomic-embed-text:v1.5",
        "dimension": 768,
        "document_prefix": "search_document: ",
        "query_prefix": "search_query: ",
    }


def test_identity_without_prefixes_reads_as_empty_prefixes() -> None:
    recorded = {"provider": "local", "model": "all-MiniLM-L6-v2", "dimension": 384}
    assert EmbeddingModel.from_dict(recorded) == MINILM


def test_the_default_way_of_reading_chunks_is_recorded_and_read_back() -> None:
    # The default is not whole, so a new index's record names it, and a record without the
    # key (an index from before the setting) still reads as whole, never as today's default.
    default = EmbeddingModel("local", "all-MiniLM-L6-v2", 384)
    assert default.chunk_vectors == DEFAULT_CHUNK_VECTORS != "whole"
    assert default.to_dict()["chunk_vectors"] == DEFAULT_CHUNK_VECTORS
    assert EmbeddingModel.from_dict(default.to_dict()) == default
    assert needs_reembed(MINILM, default) and default.index_key != MINILM.index_key
    assert default.cache_key == MINILM.cache_key  # one embedding cache for every way


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"provider": "local", "model": "m"},
        {"provider": "local", "model": "m", "dimension": "384"},
        {"provider": "local", "model": "m", "dimension": 0},
        {"provider": "local", "model": "m", "dimension": True},
        {"provider": 1, "model": "m", "dimension": 3},
    ],
)
def test_malformed_records_are_refused(record: dict[str, object]) -> None:
    with pytest.raises(InvalidArgument):
        EmbeddingModel.from_dict(record)


def test_same_model_passes_and_never_indexed_passes() -> None:
    ensure_same_model(NOMIC, NOMIC, "shop")
    ensure_same_model(None, NOMIC, "shop")
    assert not needs_reembed(None, NOMIC) and not needs_reembed(NOMIC, NOMIC)


def test_search_against_another_model_fails_with_both_names_and_the_fix() -> None:
    with pytest.raises(ModelMismatch) as caught:
        ensure_same_model(NOMIC, MINILM, "shop")
    message = str(caught.value)
    assert "ollama nomic-embed-text:v1.5 (768-d, chunk_vectors = whole)" in message
    assert "local all-MiniLM-L6-v2 (384-d, chunk_vectors = whole)" in message
    assert "run `code-rag scan shop --full` to re-embed" in message
    assert caught.value.code == "model_mismatch"


def test_a_changed_dimension_or_document_prefix_means_reembed() -> None:
    assert needs_reembed(NOMIC, dataclasses.replace(NOMIC, dimension=512))
    other_prefix = dataclasses.replace(NOMIC, document_prefix="")
    assert needs_reembed(NOMIC, other_prefix)
    with pytest.raises(ModelMismatch, match="document prefix 'search_document: '"):
        ensure_same_model(NOMIC, other_prefix, "shop")


def test_a_document_cut_is_part_of_the_index_and_whole_texts_keep_the_old_record() -> None:
    # [embedding] document_tokens: vectors of texts cut at 128 tokens are not those of whole
    # texts. An index recorded before the setting existed (no key) reads as whole texts and
    # keeps its key, so neither its vectors nor the embedding cache's are lost on an upgrade.
    lean = dataclasses.replace(MINILM, document_tokens=128)
    assert EmbeddingModel.from_dict(lean.to_dict()) == lean
    assert lean.to_dict()["document_tokens"] == 128 and "document_tokens" not in MINILM.to_dict()
    assert MINILM.index_key == ("local", "all-MiniLM-L6-v2", 384, "")
    assert MINILM.cache_key != lean.cache_key
    assert needs_reembed(MINILM, lean) and needs_reembed(lean, MINILM)
    with pytest.raises(ModelMismatch) as caught:
        ensure_same_model(lean, MINILM, "shop")
    message = str(caught.value)
    assert "first 128 tokens of each text" in message
    assert "set document_tokens = 128 back under [embedding]" in message
    for bad in (-1, "128", True):
        with pytest.raises(InvalidArgument, match="document_tokens"):
            EmbeddingModel.from_dict({**MINILM.to_dict(), "document_tokens": bad})


def test_a_changed_query_prefix_does_not_invalidate_the_index() -> None:
    # Stored vectors depend on the document side only.
    changed = dataclasses.replace(NOMIC, query_prefix="q: ")
    assert not needs_reembed(NOMIC, changed)
    ensure_same_model(NOMIC, changed, "shop")


def test_reembed_warning_names_both_models() -> None:
    text = reembed_warning(NOMIC, MINILM, "shop")
    assert "nomic-embed-text:v1.5" in text and "all-MiniLM-L6-v2" in text and "re-embedding" in text


def test_prefixes_per_model() -> None:
    assert default_prefixes("nomic-embed-text:v1.5") == ("search_document: ", "search_query: ")
    assert default_prefixes("library/nomic-embed-text") == ("search_document: ", "search_query: ")
    assert default_prefixes("all-minilm:l6-v2") == ("", "")


def test_unknown_provider_is_a_config_error() -> None:
    # The message lists every provider, the model-free one included.
    with pytest.raises(ConfigError, match="provider = local, provider = ollama or provider = none"):
        make_embedder("openai", None, None)


def test_no_embedder_is_made_for_the_model_free_provider() -> None:
    # provider = none has no embedder: asking the factory for one says what to pass instead.
    with pytest.raises(ConfigError, match="provider = none runs without a model"):
        make_embedder("none")


def test_require_all_names_refused_inputs() -> None:
    result = EmbedBatchResult(
        vectors=[[1.0], None], refused=(RefusedInput(1, "a.py:1-9 f", "NaN"),)
    )
    with pytest.raises(EmbeddingRefused, match=r"a\.py:1-9 f \(NaN\)"):
        result.require_all()
    assert EmbedBatchResult(vectors=[[1.0]]).require_all() == [[1.0]]


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=5000), max_size=200),
    max_inputs=st.integers(min_value=1, max_value=64),
    max_bytes=st.integers(min_value=5000, max_value=100_000),
)
def test_batches_cover_everything_in_order_within_budget(
    sizes: list[int], max_inputs: int, max_bytes: int
) -> None:
    batches = pack_batches(sizes, max_inputs, max_bytes)
    assert [i for batch in batches for i in batch] == list(range(len(sizes)))
    for batch in batches:
        assert 1 <= len(batch) <= max_inputs
        assert sum(sizes[i] for i in batch) <= max_bytes
    # Greedy: a batch closes only when the next input would not fit.
    for batch, following in itertools.pairwise(batches):
        total = sum(sizes[i] for i in batch)
        assert len(batch) == max_inputs or total + sizes[following[0]] > max_bytes


def test_an_input_larger_than_the_budget_goes_alone() -> None:
    assert pack_batches([10, 500, 10], 8, 100) == [range(0, 1), range(1, 2), range(2, 3)]


@given(st.text(max_size=400), st.integers(min_value=0, max_value=500))
def test_cut_to_bytes_is_a_head_within_the_budget(text: str, budget: int) -> None:
    cut = cut_to_bytes(text, budget)
    assert text.startswith(cut) and utf8_len(cut) <= max(budget, 0)
    if utf8_len(text) <= budget:
        assert cut == text


def test_cuts_prefer_line_ends() -> None:
    text = "line one\nline two\nline three is long\n"
    assert cut_to_bytes(text, 21) == "line one\nline two\n"  # a line end near the cut
    assert cut_to_bytes(text, 30) == "line one\nline two\nline three i"  # none near: hard cut
    assert shorten("x" * 100, 0.75) == "x" * 75


def test_an_index_of_the_retired_torch_model_asks_for_a_rescan_only() -> None:
    # The torch-built local model no longer ships: "set it back" would be advice nobody can take.
    old = EmbeddingModel("local", "all-MiniLM-L6-v2", 384)
    new = EmbeddingModel("local", "all-MiniLM-L6-v2-int8", 384)
    with pytest.raises(ModelMismatch) as caught:
        ensure_same_model(old, new, "shop")
    assert caught.value.message == (
        "project 'shop' was indexed with local all-MiniLM-L6-v2 (384-d), but the embedder is now "
        "local all-MiniLM-L6-v2-int8 (384-d): run `code-rag scan shop --full` to re-embed it"
    )
