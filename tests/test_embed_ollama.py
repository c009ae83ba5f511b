"""The Ollama embedder against the stand-in: budgets, halving, refusals, errors people read."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ollama_standin import (
    LEGACY_CONTEXT_ERROR,
    OllamaStandin,
    StandinModel,
    count_tokens,
    standin_vector,
    unreachable_url,
)

from indexer.embed import make_embedder
from indexer.embed.embedder import EmbeddingModel, utf8_len
from indexer.embed.ollama import OllamaEmbedder
from indexer.errors import EmbedderError, EmbedderUnavailable, EmbeddingRefused, ModelNotFound

DOC = "search_document: "


def embedder(server: OllamaStandin, model: str | None = None, **options: object) -> OllamaEmbedder:
    options.setdefault("backoff_seconds", 0.0)
    made = make_embedder("ollama", model, server.url, **options)
    assert isinstance(made, OllamaEmbedder)
    return made


def expected(text: str, prefix: str = DOC, dimension: int = 768) -> list[float]:
    return standin_vector(prefix + text, dimension)


def code_chunk(i: int, lines: int = 6) -> str:
    body = "\n".join(f"    total_{i} += item_{j}.price * {j}  # line {j}" for j in range(lines))
    return f"def compute_{i}(items):\n    total_{i} = 0\n{body}\n    return total_{i}\n"


@pytest.fixture
def server() -> Iterator[OllamaStandin]:
    with OllamaStandin() as running:
        yield running


@pytest.fixture(scope="module")
def module_server() -> Iterator[OllamaStandin]:
    # One server for the property tests (hypothesis re-runs the body, not the fixture).
    with OllamaStandin() as running:
        yield running


def test_identity_discovered_from_show_without_embedding(server: OllamaStandin) -> None:
    # The dimension comes from /api/show, so a sweep with nothing to embed makes zero embed calls.
    e = embedder(server)
    assert e.identity == EmbeddingModel(
        provider="ollama",
        model="nomic-embed-text:v1.5",
        dimension=768,
        document_prefix="search_document: ",
        query_prefix="search_query: ",
    )
    assert server.show_requests == 1 and server.embedding_calls == 0
    e.identity  # noqa: B018  (cached: no second /api/show)
    assert server.show_requests == 1
    e.close()


def test_prefixes_are_configurable_and_sent(server: OllamaStandin) -> None:
    e = embedder(server, document_prefix="doc: ", query_prefix="q: ")
    e.embed_documents(["alpha"])
    assert e.embed_query("beta") == standin_vector("q: beta", 768)
    assert server.batches == [["doc: alpha"], ["q: beta"]]
    assert e.identity.document_prefix == "doc: " and e.identity.query_prefix == "q: "


def test_a_document_cut_sends_each_documents_head_and_never_cuts_a_query(
    server: OllamaStandin,
) -> None:
    # [embedding] document_tokens with Ollama, which tokenizes on its side: a document is its
    # first N x 3 characters (code runs at 1-2 characters a token, so at most about N tokens),
    # a chosen depth, not a truncation; the identity records it.
    e = embedder(server, document_tokens=40)
    long, short = code_chunk(1, lines=30), "def f(): pass"
    result = e.embed_documents([long, short])
    assert server.batches == [[DOC + long[:120], DOC + short]]
    assert result.vectors == [expected(long[:120]), expected(short)]
    assert not result.truncated and result.tokens == 40 + 5
    query = "how is the total of the items computed " * 4
    assert e.embed_query(query) == standin_vector("search_query: " + query, 768)
    assert e.identity.document_tokens == 40 and embedder(server).identity.document_tokens == 0


def test_unknown_model_gets_no_prefixes() -> None:
    with OllamaStandin([StandinModel(name="all-minilm", dimension=384, family="bert")]) as s:
        e = embedder(s, model="all-minilm")
        assert e.identity.dimension == 384 and e.identity.document_prefix == ""
        e.embed_documents(["x"])
        assert s.batches == [["x"]]


def test_batches_respect_input_count_and_byte_budget(server: OllamaStandin) -> None:
    # No request may exceed the byte budget or the input count; order is kept across batches.
    texts = [code_chunk(i, lines=(i * 7) % 40 + 1) for i in range(120)]
    e = embedder(server, batch_max_inputs=16, batch_max_bytes=8 * 1024)
    result = e.embed_documents(texts)
    assert result.vectors == [expected(t) for t in texts]
    assert result.requests == len(server.batches) > 120 // 16
    for batch in server.batches:
        assert len(batch) <= 16
        assert sum(utf8_len(t) for t in batch) <= 8 * 1024
    assert [t for batch in server.batches for t in batch] == [DOC + t for t in texts]
    assert result.halvings == 0 and result.retries == 0 and not result.truncated


def test_input_over_the_cap_is_cut_up_front_with_a_warning(
    server: OllamaStandin, caplog: pytest.LogCaptureFixture
) -> None:
    long_text = "".join(code_chunk(i) for i in range(40))  # ~14 KB
    e = embedder(server, max_input_bytes=4000)
    with caplog.at_level(logging.WARNING, logger="code_rag.embed"):
        result = e.embed_documents(["short", long_text], ["a.py:1-2 a", "big.py:1-400 Big"])
    (cut,) = result.truncated
    assert cut.index == 1 and cut.label == "big.py:1-400 Big" and "per-input cap" in cut.reason
    sent = server.batches[0][1]
    assert utf8_len(sent) <= 4000 and long_text.startswith(sent[len(DOC) :])
    assert sent.endswith("\n")  # cut between lines, not inside one
    assert result.vectors[1] == expected(long_text[: cut.kept_chars])
    assert "big.py:1-400 Big" in caplog.text
    assert result.requests == 1  # cut before sending: no refusal round-trip


def test_cap_defaults_to_three_bytes_per_context_token() -> None:
    with OllamaStandin([StandinModel(name="small-embed", context_length=512)]) as s:
        e = embedder(s, model="small-embed")
        e.identity  # noqa: B018
        assert e.max_input_bytes == 512 * 3


@pytest.mark.parametrize("error", [None, LEGACY_CONTEXT_ERROR, (413, "request too long")])
def test_dense_input_over_context_is_shortened_and_neighbours_kept(
    server: OllamaStandin, error: tuple[int, str] | None
) -> None:
    # Code can run at 1-2 chars per token: a chunk under the byte cap can still overflow the
    # context. The client matches Ollama's words (any status), shortens that input alone, and
    # keeps every neighbour's vector intact.
    if error is not None:
        server.context_error = error
    server.max_tokens = 300
    dense = "x=(a[1]+b[2])*c;" * 60  # ~960 chars, ~600 tokens
    texts = [code_chunk(i, 2) for i in range(7)] + [dense] + [code_chunk(i, 2) for i in range(8)]
    result = embedder(server).embed_documents(texts)
    (cut,) = result.truncated
    assert cut.index == 7 and "refused by Ollama" in cut.reason
    assert count_tokens(DOC + dense[: cut.kept_chars]) <= 300
    for i, text in enumerate(texts):
        want = expected(dense[: cut.kept_chars]) if i == 7 else expected(text)
        assert result.vectors[i] == want
    assert result.halvings >= 4 and not result.refused


def test_truncate_true_ignored_by_server_is_handled(server: OllamaStandin) -> None:
    # ollama#14186 (0.13.5-0.15.6): the server refuses even when asked to truncate; we never
    # rely on it anyway (we send truncate: false and shorten ourselves).
    server.ignore_truncate = True
    server.max_tokens = 100
    result = embedder(server).embed_documents(["a b c " * 80, "ok"])
    assert [t.index for t in result.truncated] == [0] and all(result.vectors)


def test_poison_input_loses_none_of_its_neighbours(
    server: OllamaStandin, caplog: pytest.LogCaptureFixture
) -> None:
    server.poison = {"POISON"}
    texts = [code_chunk(i, 3) for i in range(20)]
    texts[13] = "# POISON at the top\n" + code_chunk(99, 3)
    labels = [f"src/m.py:{i * 10}-{i * 10 + 9} f{i}" for i in range(20)]
    with caplog.at_level(logging.WARNING, logger="code_rag.embed"):
        result = embedder(server).embed_documents(texts, labels)
    (refused,) = result.refused
    assert refused.index == 13 and refused.label == labels[13]
    assert "NaN" in refused.reason
    assert result.vectors[13] is None
    assert [v for i, v in enumerate(result.vectors) if i != 13] == [
        expected(t) for i, t in enumerate(texts) if i != 13
    ]
    assert labels[13] in caplog.text and not result.truncated
    with pytest.raises(EmbeddingRefused, match=r"src/m\.py:130-139 f13"):
        result.require_all()


def test_poison_at_the_end_of_a_long_input_is_rescued_by_shortening(
    server: OllamaStandin,
) -> None:
    server.poison = {"POISON"}
    text = code_chunk(1, 30) + "# POISON\n"
    result = embedder(server).embed_documents(["before", text, "after"])
    (cut,) = result.truncated
    assert cut.index == 1 and "POISON" not in text[: cut.kept_chars]
    assert result.vectors[1] == expected(text[: cut.kept_chars]) and not result.refused


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=70),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    rate=st.floats(min_value=0.0, max_value=0.5),
    batch=st.integers(min_value=1, max_value=40),
)
def test_halving_converges_and_keeps_order_under_random_failures(
    module_server: OllamaStandin, n: int, seed: int, rate: float, batch: int
) -> None:
    # Requests fail at random places (never twice in a row, as a flaky runner would): every
    # input still gets exactly its own vector, in order, and nothing is truncated or refused.
    rng = random.Random(seed)
    failing: set[int] = set()
    for number in range(1, 20 * n + 50):
        if number - 1 not in failing and rng.random() < rate:
            failing.add(number)
    module_server.reset_switches()
    module_server.reset_counters()
    module_server.fail_requests = failing
    texts = [f"chunk {i}: " + "word " * rng.randint(0, 60) for i in range(n)]
    e = embedder(module_server, batch_max_inputs=batch)
    result = e.embed_documents(texts)
    e.close()
    assert result.vectors == [expected(t) for t in texts]
    assert not result.refused and not result.truncated
    assert result.requests == module_server.embed_requests
    assert module_server.embedded_inputs >= n


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=50),
    poisoned=st.sets(st.integers(min_value=0, max_value=49), max_size=6),
)
def test_any_set_of_poison_inputs_spares_every_other_input(
    module_server: OllamaStandin, n: int, poisoned: set[int]
) -> None:
    module_server.reset_switches()
    module_server.reset_counters()
    module_server.poison = {"POISON"}
    bad = {i for i in poisoned if i < n}
    texts = [f"chunk {i} " + ("POISON" if i in bad else "fine") for i in range(n)]
    e = embedder(module_server)
    result = e.embed_documents(texts)
    e.close()
    assert {r.index for r in result.refused} == bad
    for i, text in enumerate(texts):
        assert result.vectors[i] == (None if i in bad else expected(text))


def test_server_refusing_everything_is_an_error_not_a_list_of_refusals(
    server: OllamaStandin,
) -> None:
    server.fail_all = (500, "llama runner process has terminated: signal: killed")
    e = embedder(server)
    with pytest.raises(EmbedderError, match=r"refuses every input.*signal: killed"):
        e.embed_documents([code_chunk(i) for i in range(32)])
    assert server.embed_requests < 40  # gives up fast, not 32 x retries


def test_every_kth_request_failing_still_completes(server: OllamaStandin) -> None:
    server.fail_every = 3
    texts = [code_chunk(i, 2) for i in range(50)]
    result = embedder(server, batch_max_inputs=8).embed_documents(texts)
    assert result.vectors == [expected(t) for t in texts]
    assert result.halvings > 0 and result.requests == server.embed_requests


def test_unreachable_host_message() -> None:
    url = unreachable_url()
    e = make_embedder("ollama", None, url, retries=2, backoff_seconds=0.0)
    with pytest.raises(EmbedderUnavailable) as caught:
        e.embed_documents(["x"])
    assert str(caught.value).startswith(
        f"Ollama is not reachable at {url}: start it with `ollama serve`, or set `provider = local`"
    )


def test_timeouts_are_retried_then_reported_as_unreachable(
    server: OllamaStandin,
) -> None:
    e = embedder(server, timeout_seconds=0.3, retries=1)
    e.identity  # noqa: B018
    server.delay_seconds = 1.0
    with pytest.raises(EmbedderUnavailable, match=r"not reachable at .*no answer within 0\.3 s"):
        e.embed_query("slow")
    assert server.embed_requests == 2  # one try + one retry


def test_slow_answers_within_the_timeout_are_fine(server: OllamaStandin) -> None:
    server.delay_seconds = 0.2
    assert embedder(server, timeout_seconds=5).embed_query("q") == expected("q", "search_query: ")


def test_busy_server_is_retried(server: OllamaStandin) -> None:
    server.fail_requests = {1, 2}
    server.fail_error = (
        503,
        "server busy, please try again.  maximum pending requests exceeded",
    )
    result = embedder(server).embed_documents(["a", "b"])
    assert all(result.vectors) and result.retries == 2 and result.halvings == 0


def test_missing_model_message(server: OllamaStandin) -> None:
    e = embedder(server, model="nomic-embed-text:v9")
    with pytest.raises(ModelNotFound, match=r"run `ollama pull nomic-embed-text:v9`"):
        e.embed_documents(["x"])


def test_missing_model_on_embed_says_pull(server: OllamaStandin) -> None:
    # The model disappears after discovery (`ollama rm`): /api/embed's own 404 text.
    e = embedder(server)
    e.identity  # noqa: B018
    server.models.clear()
    with pytest.raises(ModelNotFound, match=r"`ollama pull nomic-embed-text:v1\.5`") as caught:
        e.embed_query("x")
    assert 'model "nomic-embed-text:v1.5" not found, try pulling it first' in str(caught.value)


def test_a_server_without_the_embed_api_is_not_mistaken_for_a_missing_model(
    server: OllamaStandin,
) -> None:
    # Ollama before 0.3 (or another server at that address) answers gin's plain 404 page.
    e = make_embedder("ollama", None, f"{server.url}/elsewhere", backoff_seconds=0.0)
    with pytest.raises(EmbedderUnavailable, match=r"has no Ollama embedding API.*upgrade Ollama"):
        e.embed_query("x")


def test_non_embedding_model_is_refused_up_front() -> None:
    chat = StandinModel(name="llama3.2", family="llama", capabilities=("completion", "tools"))
    with OllamaStandin([chat]) as s, pytest.raises(EmbedderError, match="cannot embed"):
        embedder(s, model="llama3.2").identity  # noqa: B018


def test_empty_input_makes_no_request(server: OllamaStandin) -> None:
    result = embedder(server).embed_documents([])
    assert result.vectors == [] and server.embedding_calls == 0


def test_query_over_the_context_is_shortened(server: OllamaStandin) -> None:
    server.max_tokens = 50
    vector = embedder(server).embed_query("find " * 200)
    assert len(vector) == 768


def test_standin_speaks_ollamas_shapes(server: OllamaStandin) -> None:
    # The stand-in itself, through the real client: what the embedder relies on.
    import ollama

    client = ollama.Client(host=server.url)
    assert client.list().models[0].model == "nomic-embed-text:v1.5"
    info = client.show("nomic-embed-text:v1.5").modelinfo or {}
    assert info["nomic-bert.embedding_length"] == 768
    assert info["nomic-bert.context_length"] == 2048
    response = client.embed(model="nomic-embed-text:v1.5", input=["a", "b"])
    assert len(response.embeddings) == 2 and response.prompt_eval_count == 2
    server.max_tokens = 1
    with pytest.raises(ollama.ResponseError) as caught:
        client.embed(model="nomic-embed-text:v1.5", input=["a b c"], truncate=False)
    assert caught.value.status_code == 400
    assert caught.value.error == "the input length exceeds the context length"
    # truncate defaults to true in Ollama: the input is cut, not refused.
    assert len(client.embed(model="nomic-embed-text:v1.5", input=["a b c"]).embeddings) == 1
    with pytest.raises(ollama.ResponseError) as missing:
        client.embed(model="x", input="a")
    assert missing.value.status_code == 404
    assert missing.value.error == 'model "x" not found, try pulling it first'
    assert server.tags_requests == 1 and server.show_requests == 1


def test_a_stalled_ollama_fails_a_query_within_the_query_timeout(
    server: OllamaStandin,
) -> None:
    # Documents may wait minutes for a model to load; a search must not: its query has a
    # timeout of its own and one retry, then a clear error.
    embedder = OllamaEmbedder(
        host=server.url, timeout_seconds=60, query_timeout_seconds=0.5, backoff_seconds=0
    )
    embedder.identity  # noqa: B018  (discovered before the stall)
    server.delay_seconds = 2.0
    with pytest.raises(EmbedderUnavailable, match=r"no answer within 0.5 s"):
        embedder.embed_query("where are invoices numbered")
    assert server.embed_requests == 2  # the first try and one retry
    server.delay_seconds = 0.0
    assert len(embedder.embed_query("where are invoices numbered")) == 768
    embedder.close()
