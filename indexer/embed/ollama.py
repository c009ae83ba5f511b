"""The Ollama embedder: `/api/embed` through the `ollama` client, in byte-budgeted batches.

Invariants: one request never holds more than `batch_max_inputs` inputs or `batch_max_bytes`
bytes; no input is longer than the per-input cap (cut up front, with a warning naming the chunk);
a refused batch halves and each half is retried, recursively; an input refused alone is retried,
then shortened step by step, and reported, never dropped silently and never at its neighbours'
expense; vectors come back in input order. We always send `truncate: false` and shorten inputs
ourselves, so every truncation is ours and reported (Ollama 0.13.5-0.15.6 ignored `truncate`).
Connection errors, timeouts and 503s are retried with backoff, then raised as one clear error.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import ollama

from indexer.embed.embedder import (
    CHARS_PER_TOKEN,
    DEFAULT_CHUNK_VECTORS,
    DEFAULT_OLLAMA_HOST,
    PROVIDER_OLLAMA,
    EmbedBatchResult,
    EmbeddingModel,
    EmbedReport,
    RefusedInput,
    TruncatedInput,
    check_chunk_vectors,
    check_document_tokens,
    check_labels,
    cut_to_bytes,
    default_prefixes,
    estimate_tokens,
    label_for,
    pack_batches,
    shorten,
    utf8_len,
)
from indexer.errors import (
    EmbedderError,
    EmbedderUnavailable,
    EmbeddingRefused,
    InvalidArgument,
    ModelNotFound,
)

log = logging.getLogger("code_rag.embed.ollama")

DEFAULT_OLLAMA_MODEL = "nomic-embed-text:v1.5"
DEFAULT_BATCH_MAX_INPUTS = 32
DEFAULT_BATCH_MAX_BYTES = 64 * 1024
# Without a configured cap, an input may take this many bytes per token of the model's context:
# prose runs at ~4 characters per token, code at 1-2, so some dense code is still refused and
# then shortened; 3 keeps such refusals rare without cutting ordinary chunks.
DEFAULT_BYTES_PER_TOKEN = 3
FALLBACK_CONTEXT_TOKENS = 2048  # when /api/show does not say (nomic-embed-text's effective one)
DEFAULT_TIMEOUT_SECONDS = 120.0  # a first request may wait for the model to load
# A search waits for its query vector: shorter, and retried once, so a stalled Ollama turns
# into a clear error within about a minute instead of holding the agent for many.
DEFAULT_QUERY_TIMEOUT_SECONDS = 30.0
QUERY_RETRIES = 1
DEFAULT_CONNECT_TIMEOUT_SECONDS = 5.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_SECONDS = 0.5
SHORTEN_FACTOR = 0.75  # each retry of a refused input keeps this share of its characters
MAX_SHORTEN_STEPS = 8
MIN_SHORTENED_CHARS = 64
PROBE_TEXT = "ping"

_CONTEXT_WORDS = ("context length", "context window", "maximum context", "too long")

T = TypeVar("T")


class _Refused(Exception):
    """Ollama answered but would not embed this request (internal: triggers halving)."""

    def __init__(self, message: str, context: bool) -> None:
        super().__init__(message)
        self.message = message
        self.context = context  # the refusal is about length: retrying unchanged is pointless


@dataclass(slots=True)
class _Item:
    index: int
    label: str
    text: str
    body: str  # what is sent after the prefix: `text`, or a head of it
    reasons: list[str] = field(default_factory=list)


class OllamaEmbedder:
    """Embeds through an Ollama server; see the module docstring for the guarantees."""

    def __init__(
        self,
        model: str | None = None,
        host: str | None = None,
        *,
        document_prefix: str | None = None,
        query_prefix: str | None = None,
        batch_max_inputs: int = DEFAULT_BATCH_MAX_INPUTS,
        batch_max_bytes: int = DEFAULT_BATCH_MAX_BYTES,
        max_input_bytes: int | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        query_timeout_seconds: float = DEFAULT_QUERY_TIMEOUT_SECONDS,
        retries: int = DEFAULT_RETRIES,
        backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
        keep_alive: str | float | None = None,
        document_tokens: int = 0,
        chunk_vectors: str = DEFAULT_CHUNK_VECTORS,
    ) -> None:
        self.model = model or DEFAULT_OLLAMA_MODEL
        # Ollama tokenizes on its side: a document is cut at CHARS_PER_TOKEN characters a token.
        self.document_tokens = check_document_tokens(document_tokens)
        self.chunk_vectors = check_chunk_vectors(chunk_vectors)
        self.host = (host or DEFAULT_OLLAMA_HOST).rstrip("/")
        doc_default, query_default = default_prefixes(self.model)
        self.document_prefix = doc_default if document_prefix is None else document_prefix
        self.query_prefix = query_default if query_prefix is None else query_prefix
        if batch_max_inputs < 1 or batch_max_bytes < 256:
            raise InvalidArgument("an Ollama batch needs at least 1 input and 256 bytes")
        if max_input_bytes is not None and max_input_bytes < 64:
            raise InvalidArgument(f"max_input_bytes {max_input_bytes} is too small (min 64)")
        self.batch_max_inputs = batch_max_inputs
        self.batch_max_bytes = batch_max_bytes
        self._configured_cap = max_input_bytes
        self.max_input_bytes = min(max_input_bytes or batch_max_bytes, batch_max_bytes)
        self.timeout_seconds = timeout_seconds
        self.retries = max(retries, 0)
        self.backoff_seconds = max(backoff_seconds, 0.0)
        self.keep_alive = keep_alive
        self.context_tokens: int | None = None
        # trust_env=False: no proxy from the environment; the configured host is the only peer.
        self.query_timeout_seconds = min(query_timeout_seconds, timeout_seconds)
        self._client = self._make_client(timeout_seconds)
        self._query_client = self._make_client(self.query_timeout_seconds)
        self._identity: EmbeddingModel | None = None
        self._lock = threading.Lock()

    def _make_client(self, timeout: float) -> ollama.Client:
        # trust_env=False: no proxy from the environment; the configured host is the only peer.
        return ollama.Client(
            host=self.host,
            timeout=httpx.Timeout(timeout, connect=min(DEFAULT_CONNECT_TIMEOUT_SECONDS, timeout)),
            trust_env=False,
        )

    # --- identity ---------------------------------------------------------------------------

    @property
    def identity(self) -> EmbeddingModel:
        """Discovered once from `/api/show` (never an embedding call, so a sweep with nothing
        to embed makes none); a probe embedding only when the model does not state its size."""
        with self._lock:
            if self._identity is None:
                self._identity = self._discover()
            return self._identity

    def _discover(self) -> EmbeddingModel:
        show = self._with_retries(lambda: self._client.show(self.model), EmbedReport())
        info: dict[str, Any] = dict(show.modelinfo or {})
        capabilities = list(show.capabilities or [])
        if capabilities and "embedding" not in capabilities:
            raise EmbedderError(
                f"the Ollama model {self.model!r} cannot embed (its capabilities: "
                f"{', '.join(capabilities)}): set model = {DEFAULT_OLLAMA_MODEL} (or another "
                "embedding model) under [embedding] in application.ini"
            )
        arch = info.get("general.architecture")
        dimension = _positive_int(info.get(f"{arch}.embedding_length")) if arch else None
        self.context_tokens = _positive_int(info.get(f"{arch}.context_length")) if arch else None
        if self._configured_cap is None:
            tokens = self.context_tokens or FALLBACK_CONTEXT_TOKENS
            self.max_input_bytes = min(tokens * DEFAULT_BYTES_PER_TOKEN, self.batch_max_bytes)
        if dimension is None:
            dimension = len(self._request([PROBE_TEXT], EmbedReport())[0])
        return EmbeddingModel(
            provider=PROVIDER_OLLAMA,
            model=self.model,
            dimension=dimension,
            document_prefix=self.document_prefix,
            query_prefix=self.query_prefix,
            document_tokens=self.document_tokens,
            chunk_vectors=self.chunk_vectors,
        )

    # --- embedding --------------------------------------------------------------------------

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        check_labels(texts, labels)
        started = time.perf_counter()
        report = EmbedReport()
        if not texts:
            return report.result([], 0.0)
        self.identity  # noqa: B018  (discovers the dimension and the per-input cap)
        if self.document_tokens:  # the configured depth, not a truncation
            texts = [t[: self.document_tokens * CHARS_PER_TOKEN] for t in texts]
            report.tokens = estimate_tokens(texts)
        items = [self._item(i, label_for(labels, i), t) for i, t in enumerate(texts)]
        vectors: list[list[float] | None] = [None] * len(items)
        prefix_bytes = utf8_len(self.document_prefix)
        sizes = [prefix_bytes + utf8_len(item.body) for item in items]
        for batch in pack_batches(sizes, self.batch_max_inputs, self.batch_max_bytes):
            self._embed_span([items[i] for i in batch], self.document_prefix, vectors, report)
        refused = {r.index for r in report.refused}
        for item in items:
            if item.body != item.text and item.index not in refused:
                report.truncated.append(
                    TruncatedInput(
                        index=item.index,
                        label=item.label,
                        reason="; ".join(item.reasons),
                        original_chars=len(item.text),
                        kept_chars=len(item.body),
                    )
                )
        return report.result(vectors, time.perf_counter() - started)

    def embed_query(self, text: str) -> list[float]:
        """One request on the query client (short timeout, one retry). A query is short, so
        one cut to the per-input cap up front replaces the halving and shortening of documents."""
        self.identity  # noqa: B018
        item = self._item(0, "the search query", text, prefix=self.query_prefix)
        report = EmbedReport()

        def call() -> ollama.EmbedResponse:
            report.requests += 1
            return self._query_client.embed(
                model=self.model,
                input=[self.query_prefix + item.body],
                truncate=True,
                keep_alive=self.keep_alive,
            )

        try:
            response = self._with_retries(
                call, report, retries=QUERY_RETRIES, timeout=self.query_timeout_seconds
            )
        except _Refused as exc:
            raise EmbeddingRefused(
                f"Ollama at {self.host} refused the search query: {exc.message}"
            ) from None
        except ValueError as exc:
            raise EmbeddingRefused(
                f"Ollama at {self.host} sent an unreadable answer: {exc}"
            ) from None
        dimension = self._identity.dimension if self._identity else None
        problem, vectors = checked_vectors(response.embeddings, 1, dimension)
        if problem:
            raise EmbeddingRefused(f"Ollama at {self.host} refused the search query: {problem}")
        return vectors[0]

    def close(self) -> None:
        self._client.close()
        self._query_client.close()

    def _item(self, index: int, label: str, text: str, prefix: str | None = None) -> _Item:
        prefix = self.document_prefix if prefix is None else prefix
        item = _Item(index=index, label=label, text=text, body=text)
        room = self.max_input_bytes - utf8_len(prefix)
        if utf8_len(text) > room:
            item.body = cut_to_bytes(text, room)
            reason = f"over the per-input cap of {self.max_input_bytes} bytes"
            item.reasons.append(reason)
            log.warning(
                "embedding input %s is %d bytes, %s: embedding its first %d characters",
                label,
                utf8_len(text),
                reason,
                len(item.body),
            )
        return item

    def _embed_span(
        self,
        items: list[_Item],
        prefix: str,
        vectors: list[list[float] | None],
        report: EmbedReport,
    ) -> None:
        """Embed `items` in one request; on refusal, halve and recurse (single inputs go to
        `_embed_alone`). Writes each vector at its input's index, so order never depends on
        which requests failed."""
        try:
            got = self._request([prefix + it.body for it in items], report)
        except _Refused as exc:
            if len(items) == 1:
                self._embed_alone(items[0], prefix, exc, vectors, report)
                return
            report.halvings += 1
            mid = len(items) // 2
            log.debug("Ollama refused %d inputs (%s): halving", len(items), exc.message)
            self._embed_span(items[:mid], prefix, vectors, report)
            self._embed_span(items[mid:], prefix, vectors, report)
            return
        for item, vector in zip(items, got, strict=True):
            vectors[item.index] = vector

    def _embed_alone(
        self,
        item: _Item,
        prefix: str,
        refusal: _Refused,
        vectors: list[list[float] | None],
        report: EmbedReport,
    ) -> None:
        """One input Ollama refused: retry it as is (unless the refusal was about length),
        then shorter and shorter; if it is refused at every length, check that Ollama embeds
        anything at all (if not, the server is broken: raise) and report the input refused."""
        last = refusal
        if not refusal.context:
            report.retries += 1
            try:
                vectors[item.index] = self._request([prefix + item.body], report)[0]
                return
            except _Refused as exc:
                last = exc
        body = item.body
        for _ in range(MAX_SHORTEN_STEPS):
            shorter = shorten(body, SHORTEN_FACTOR)
            if len(shorter) < MIN_SHORTENED_CHARS:
                break
            body = shorter
            report.retries += 1
            try:
                vectors[item.index] = self._request([prefix + body], report)[0]
            except _Refused as exc:
                last = exc
                continue
            reason = f"refused by Ollama ({last.message}); embedded its first {len(body)} chars"
            item.reasons.append(reason)
            item.body = body
            log.warning("embedding input %s was %s", item.label, reason)
            return
        self._probe(last, report)
        report.refused.append(RefusedInput(item.index, item.label, last.message))
        log.warning(
            "Ollama refused embedding input %s even alone and shortened (%s): it has no vector",
            item.label,
            last.message,
        )

    def _probe(self, last: _Refused, report: EmbedReport) -> None:
        """Raise when Ollama refuses even a trivial input: the fault is the server's, and
        reporting every input as refused would hide it."""
        for _ in range(2):
            try:
                self._request([PROBE_TEXT], report)
                return
            except _Refused:
                continue
        raise EmbedderError(
            f"Ollama at {self.host} refuses every input, even a one-word one "
            f"({last.message}): check `ollama ps` and the Ollama server log"
        )

    def _request(self, texts: list[str], report: EmbedReport) -> list[list[float]]:
        """One `/api/embed` call (with transport retries), its answer checked: one finite
        vector of the model's dimension (once known) per input, or `_Refused`."""
        dimension = self._identity.dimension if self._identity else None

        def call() -> ollama.EmbedResponse:
            report.requests += 1
            return self._client.embed(
                model=self.model, input=texts, truncate=False, keep_alive=self.keep_alive
            )

        try:
            response = self._with_retries(call, report)
        except ValueError as exc:  # an unreadable body: JSON or schema (pydantic) errors
            raise _Refused(f"unreadable answer: {exc}", context=False) from exc
        problem, vectors = checked_vectors(response.embeddings, len(texts), dimension)
        if problem:
            raise _Refused(problem, context=False)
        return vectors

    def _with_retries(
        self,
        call: Callable[[], T],
        report: EmbedReport,
        *,
        retries: int | None = None,
        timeout: float | None = None,
    ) -> T:
        """`call()` with transport failures and 503s retried after 0.5 s, 1 s, 2 s ..., then
        raised as `EmbedderUnavailable`; other errors mapped by `_mapped_errors`."""
        delay = self.backoff_seconds
        detail = ""
        for attempt in range((self.retries if retries is None else retries) + 1):
            if attempt:
                report.retries += 1
                time.sleep(delay)
                delay *= 2
            try:
                with self._mapped_errors(timeout or self.timeout_seconds):
                    return call()
            except _Transient as exc:
                detail = str(exc)
                log.debug("Ollama at %s: %s (attempt %d)", self.host, detail, attempt + 1)
        raise EmbedderUnavailable(
            f"Ollama is not reachable at {self.host}: start it with `ollama serve`, or set "
            f"`provider = local` under [embedding] in application.ini ({detail})"
        )

    @contextmanager
    def _mapped_errors(self, timeout: float) -> Iterator[None]:
        """The one place where httpx / ollama errors become ours (or internal signals)."""
        try:
            yield
        except ollama.ResponseError as exc:
            status, text = exc.status_code, str(exc.error)
            lowered = text.lower()
            if status == 404 and "model" not in lowered:  # gin's "404 page not found"
                raise EmbedderUnavailable(
                    f"the server at {self.host} has no Ollama embedding API ({text}): upgrade "
                    "Ollama to 0.3 or later (`/api/embed`), or check the host under [embedding] "
                    "in application.ini"
                ) from None
            if status == 404 and "not found" in lowered:
                raise ModelNotFound(
                    f"Ollama at {self.host} does not have the model {self.model!r}: run "
                    f"`ollama pull {self.model}`, or set another model under [embedding] in "
                    f"application.ini (Ollama said: {text})"
                ) from None
            if status == 503:
                raise _Transient(f"busy: {text} (HTTP 503)") from None
            if status in (401, 403):
                raise EmbedderUnavailable(
                    f"Ollama at {self.host} refused access (HTTP {status}: {text}): check the "
                    "host under [embedding] in application.ini"
                ) from None
            context = status == 413 or any(w in lowered for w in _CONTEXT_WORDS)
            raise _Refused(f"{text} (HTTP {status})", context=context) from None
        except httpx.TimeoutException:
            raise _Transient(f"no answer within {timeout:g} s") from None
        except ConnectionError:  # the client's translation of httpx.ConnectError
            raise _Transient("connection refused") from None
        except httpx.TransportError as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}") from None


class _Transient(Exception):
    """A failure worth retrying unchanged after a pause: no connection, timeout, busy."""


def checked_vectors(
    vectors: Sequence[Sequence[float]], count: int, dimension: int | None
) -> tuple[str, list[list[float]]]:
    """("", the vectors as float lists), or (what is wrong, []): one finite vector of
    `dimension` values per input is the only acceptable answer."""
    if len(vectors) != count:
        return f"{len(vectors)} vectors for {count} inputs", []
    out: list[list[float]] = []
    for vector in vectors:
        values = [float(v) for v in vector]
        if dimension is not None and len(values) != dimension:
            return f"a {len(values)}-d vector, expected {dimension}", []
        if not all(map(math.isfinite, values)):
            return "a vector with NaN or Inf values", []
        out.append(values)
    return "", out


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0 and float(value).is_integer():
        return int(value)
    return None
