"""Embedders: the interface the sweep and the search code against, and what they share.

An `Embedder` turns chunk texts into vectors (`embed_documents`, in input order, with a report of
requests, retries, halvings, truncations and refusals) and a search query into one vector
(`embed_query`). Its `identity` (provider, model, dimension, document/query prefixes) is what
`rag_meta` records: a project's index and its queries always share one identity, checked here by
`ensure_same_model`; `needs_reembed` tells the sweep when a model change means "re-embed all".
Vectors are plain `list[float]` (what pgvector and JSON take), never numpy arrays.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from indexer import truncate
from indexer.errors import EmbeddingRefused, InvalidArgument, ModelMismatch

PROVIDER_LOCAL = "local"
PROVIDER_OLLAMA = "ollama"
# No model at all: keyword, names and navigation only; nothing is embedded, no vector is read.
PROVIDER_NONE = "none"
PROVIDERS = (PROVIDER_LOCAL, PROVIDER_OLLAMA, PROVIDER_NONE)
# The shortest `document_tokens` cut: a header (path, language, name) and a signature.
MIN_DOCUMENT_TOKENS = 32
DEFAULT_PROVIDER = PROVIDER_LOCAL
# What the model reads of a file (`[embedding] chunk_vectors`): each chunk's text and again each
# definition no chunk speaks for (whole), or each line once (`indexer.sweep.parts`), a chunk's
# vector the mean of its parts' (parts) or the rest of its lines alone (rest, the default).
CHUNK_VECTORS_WHOLE = "whole"
CHUNK_VECTORS_PARTS = "parts"
# The same parts; a chunk holding such definitions is the rest of its lines alone (they have
# vectors of their own).
CHUNK_VECTORS_REST = "rest"
# As rest, and the rest of a chunk holding such definitions also holds each one's signature line
# (its name), so the chunk's vector knows what it holds.
CHUNK_VECTORS_OUTLINE = "outline"
CHUNK_VECTORS = (
    CHUNK_VECTORS_WHOLE,
    CHUNK_VECTORS_PARTS,
    CHUNK_VECTORS_REST,
    CHUNK_VECTORS_OUTLINE,
)
DEFAULT_CHUNK_VECTORS = CHUNK_VECTORS_REST
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"

# Prefixes some models were trained with (from their model cards). The key is the model's base
# name: "nomic-embed-text:v1.5" and "library/nomic-embed-text" both match "nomic-embed-text".
KNOWN_PREFIXES: Mapping[str, tuple[str, str]] = {
    "nomic-embed-text": ("search_document: ", "search_query: "),
    "mxbai-embed-large": ("", "Represent this sentence for searching relevant passages: "),
    "snowflake-arctic-embed": ("", "Represent this sentence for searching relevant passages: "),
}


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """Who made a project's vectors: recorded in `rag_meta`, compared before every use."""

    provider: str
    model: str
    dimension: int
    document_prefix: str = ""
    query_prefix: str = ""
    # Each document embedded from its first this many tokens (0: the whole text, in windows
    # where the model's are shorter): `[embedding] document_tokens`.
    document_tokens: int = 0
    # How a file's texts are cut for the model: `[embedding] chunk_vectors`. A record without
    # it is of an index read whole (`from_dict`), from before the setting.
    chunk_vectors: str = DEFAULT_CHUNK_VECTORS

    @property
    def index_key(self) -> tuple[str | int, ...]:
        """What the stored vectors depend on. The query prefix is not part of it: changing it
        changes future queries, not the index. Whole documents and whole chunks (the
        defaults) add nothing, so an index recorded before either setting existed keeps its
        key."""
        key = self._text_key
        if self.chunk_vectors != CHUNK_VECTORS_WHOLE:
            key = (*key, self.chunk_vectors)
        return key

    @property
    def _text_key(self) -> tuple[str | int, ...]:
        """What the vector of one text depends on."""
        key: tuple[str | int, ...] = (
            self.provider,
            self.model,
            self.dimension,
            self.document_prefix,
        )
        return (*key, self.document_tokens) if self.document_tokens else key

    @property
    def cache_key(self) -> str:
        """The key of this model's vectors in the embedding cache every project shares. How a
        file's texts are cut (`chunk_vectors`) is not part of it: a text's vector is the
        model's of that text either way, and a vector made of parts is keyed by them all
        (`indexer.sweep.parts.parts_hash`), which no single text's key equals; so an index cut
        the other way, or a project switching, finds every text both ways read."""
        return json.dumps(list(self._text_key))

    def describe(self) -> str:
        """For messages: "ollama nomic-embed-text:v1.5 (768-d)", and ", first 128 tokens of
        each text" where documents are cut."""
        cut = f", first {self.document_tokens} tokens of each text" if self.document_tokens else ""
        if self.chunk_vectors != DEFAULT_CHUNK_VECTORS:
            cut += f", chunk_vectors = {self.chunk_vectors}"
        return f"{self.provider} {self.model} ({self.dimension}-d{cut})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "dimension": self.dimension,
            "document_prefix": self.document_prefix,
            "query_prefix": self.query_prefix,
        }
        if self.document_tokens:
            data["document_tokens"] = self.document_tokens
        if self.chunk_vectors != CHUNK_VECTORS_WHOLE:
            data["chunk_vectors"] = self.chunk_vectors
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EmbeddingModel:
        """The inverse of `to_dict`; a record that cannot be one is refused, never guessed at."""
        try:
            provider, model, dimension = data["provider"], data["model"], data["dimension"]
        except (KeyError, TypeError) as exc:
            raise InvalidArgument(
                f"the recorded embedding model {data!r} lacks provider, model or dimension: "
                "re-embed the project with `code-rag scan <project> --full`"
            ) from exc
        ok = (
            isinstance(provider, str)
            and isinstance(model, str)
            and isinstance(dimension, int)
            and not isinstance(dimension, bool)
            and dimension > 0
        )
        if not ok:
            raise InvalidArgument(f"the recorded embedding model {data!r} is malformed")
        return cls(
            provider=provider,
            model=model,
            dimension=dimension,
            document_prefix=str(data.get("document_prefix") or ""),
            query_prefix=str(data.get("query_prefix") or ""),
            document_tokens=_document_tokens(data.get("document_tokens")),
            chunk_vectors=_chunk_vectors(data.get("chunk_vectors")),
        )


def _document_tokens(value: Any) -> int:
    """A recorded `document_tokens`: absent is 0 (whole texts); anything but a count is refused."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"the recorded document_tokens {value!r} is not a count of tokens")
    return value


def _chunk_vectors(value: Any) -> str:
    """A recorded `chunk_vectors`: absent is whole; anything unknown is refused."""
    if value is None:
        return CHUNK_VECTORS_WHOLE
    if value not in CHUNK_VECTORS:
        raise InvalidArgument(f"the recorded chunk_vectors {value!r} is not one of {CHUNK_VECTORS}")
    return str(value)


def check_chunk_vectors(value: str) -> str:
    """`[embedding] chunk_vectors` as given: whole, parts or rest."""
    if value not in CHUNK_VECTORS:
        raise InvalidArgument(
            f"chunk_vectors = {value!r}: set whole (each chunk's text, and each definition no "
            "chunk speaks for again), parts (each line read once) or rest (each line read "
            "once, a chunk the rest of its lines alone)"
        )
    return value


def check_document_tokens(value: int) -> int:
    """`[embedding] document_tokens` as given: 0 (whole texts) or MIN_DOCUMENT_TOKENS or more."""
    if value < 0:
        raise InvalidArgument("document_tokens must be 0 (whole texts) or a count of tokens")
    if value and value < MIN_DOCUMENT_TOKENS:
        raise InvalidArgument(
            f"document_tokens = {value} leaves too little of a text to embed: set 0 (whole "
            f"texts) or at least {MIN_DOCUMENT_TOKENS}"
        )
    return value


@dataclass(frozen=True, slots=True)
class TruncatedInput:
    """An input embedded from a shortened text: the sweep counts these, a person reads them."""

    index: int
    label: str
    reason: str
    original_chars: int
    kept_chars: int


@dataclass(frozen=True, slots=True)
class RefusedInput:
    """An input the embedder refused even alone and shortened: it has no vector."""

    index: int
    label: str
    reason: str


@dataclass(frozen=True, slots=True)
class EmbedBatchResult:
    """Vectors in input order plus what it took to get them.

    `vectors[i]` is None only for an input listed in `refused`; neighbours of a refused input
    always have their vectors. `require_all()` is the strict view for callers that cannot store
    a chunk without a vector.
    """

    vectors: list[list[float] | None]
    requests: int = 0
    retries: int = 0
    halvings: int = 0
    truncated: tuple[TruncatedInput, ...] = ()
    refused: tuple[RefusedInput, ...] = ()
    split_inputs: int = 0  # local: inputs embedded as several windows and averaged
    seconds: float = 0.0
    # Tokens of the texts as given (no prefix, no special tokens) by the model's tokenizer,
    # where the embedder has it (local); None: the caller estimates them (`count_tokens`).
    tokens: int | None = None

    def require_all(self) -> list[list[float]]:
        """Every vector, or `EmbeddingRefused` naming the inputs that have none."""
        if self.refused:
            names = ", ".join(f"{r.label} ({r.reason})" for r in self.refused[:5])
            more = f" and {len(self.refused) - 5} more" if len(self.refused) > 5 else ""
            raise EmbeddingRefused(f"the embedder refused {names}{more}")
        return [v for v in self.vectors if v is not None]


@dataclass(slots=True)
class EmbedReport:
    """The mutable tally an embedder keeps during one call, frozen into `EmbedBatchResult`."""

    requests: int = 0
    retries: int = 0
    halvings: int = 0
    split_inputs: int = 0
    truncated: list[TruncatedInput] = field(default_factory=list)
    refused: list[RefusedInput] = field(default_factory=list)
    tokens: int | None = None

    def result(self, vectors: list[list[float] | None], seconds: float) -> EmbedBatchResult:
        return EmbedBatchResult(
            vectors=vectors,
            requests=self.requests,
            retries=self.retries,
            halvings=self.halvings,
            truncated=tuple(sorted(self.truncated, key=lambda t: t.index)),
            refused=tuple(sorted(self.refused, key=lambda r: r.index)),
            split_inputs=self.split_inputs,
            seconds=seconds,
            tokens=self.tokens,
        )


@runtime_checkable
class Embedder(Protocol):
    """What the sweep and the search use; `indexer.embed.factory.make_embedder` builds one."""

    @property
    def identity(self) -> EmbeddingModel:
        """Provider, model, discovered dimension and prefixes (may contact the service once)."""
        ...

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        """Vectors for chunk texts, in input order; labels name chunks in warnings."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """One vector for a search query, with the query prefix."""
        ...

    def close(self) -> None: ...


# --- tokens ---------------------------------------------------------------------------------

# Where the embedder cannot count its model's tokens (Ollama tokenizes on its side), they are
# estimated from characters: code runs at 1-2 characters per token, prose at about 4.
CHARS_PER_TOKEN = 3


def estimate_tokens(texts: Iterable[str]) -> int:
    """Tokens of `texts` estimated from their length (CHARS_PER_TOKEN characters a token)."""
    return sum(-(-len(text) // CHARS_PER_TOKEN) for text in texts)


def count_tokens(embedder: object, texts: Sequence[str]) -> int:
    """Tokens of `texts` (no prefix, no special tokens) by the embedder's own tokenizer where
    it has one (`count_tokens`: the local model), else `estimate_tokens`."""
    counter = getattr(embedder, "count_tokens", None)
    return int(counter(texts)) if callable(counter) else estimate_tokens(texts)


def tokens_embedded(result: EmbedBatchResult, embedder: object, texts: Sequence[str]) -> int:
    """Tokens of the `texts` an embedding call was given: its own count, or `count_tokens`."""
    return result.tokens if result.tokens is not None else count_tokens(embedder, texts)


# --- model bookkeeping ----------------------------------------------------------------------


def needs_reembed(recorded: EmbeddingModel | None, current: EmbeddingModel) -> bool:
    """True when a project's stored vectors were made by another model (or prefix, or
    dimension) than `current`: the sweep must then re-embed everything, never mix the two."""
    return recorded is not None and recorded.index_key != current.index_key


def mismatch_message(recorded: EmbeddingModel, current: EmbeddingModel, project: str) -> str:
    """What a person reads when a project's index and the configured embedder disagree."""
    if recorded.document_prefix != current.document_prefix and (
        recorded.provider,
        recorded.model,
        recorded.dimension,
    ) == (current.provider, current.model, current.dimension):
        what = (
            f"with document prefix {recorded.document_prefix!r}, "
            f"but the embedder now uses {current.document_prefix!r}"
        )
    else:
        what = f"with {recorded.describe()}, but the embedder is now {current.describe()}"
    rescan = (
        f"project {project!r} was indexed {what}: run `code-rag scan {project} --full` "
        "to re-embed it"
    )
    if recorded.provider == current.provider == PROVIDER_LOCAL and recorded.model != current.model:
        # Another local model may not be on this machine any more (bundled models change with
        # releases; an exported folder may be gone): re-embedding is the way that always works.
        return rescan
    if recorded.document_tokens != current.document_tokens and (
        recorded.provider,
        recorded.model,
        recorded.dimension,
        recorded.document_prefix,
    ) == (current.provider, current.model, current.dimension, current.document_prefix):
        return (
            f"{rescan}, or set document_tokens = {recorded.document_tokens} back under "
            "[embedding] in application.ini"
        )
    return (
        f"{rescan}, or set [embedding] back to provider = {recorded.provider}, "
        f"model = {recorded.model} in application.ini"
    )


def ensure_same_model(
    recorded: EmbeddingModel | None, current: EmbeddingModel, project: str
) -> None:
    """Pass when a search may embed its query with `current`; raise `ModelMismatch` otherwise.

    A project never indexed (`recorded` None) passes: there is nothing to disagree with.
    """
    if needs_reembed(recorded, current):
        assert recorded is not None
        raise ModelMismatch(mismatch_message(recorded, current, project))


def reembed_warning(recorded: EmbeddingModel, current: EmbeddingModel, project: str) -> str:
    """The warning the sweep logs before it re-embeds a whole project after a model change."""
    return (
        f"project {project!r} was indexed with {recorded.describe()}; the embedder is now "
        f"{current.describe()}: re-embedding every chunk (old vectors are discarded, not mixed)"
    )


# --- helpers shared by the embedders ---------------------------------------------------------


def model_base_name(model: str) -> str:
    """ "library/nomic-embed-text:v1.5" -> "nomic-embed-text"."""
    return model.rsplit("/", 1)[-1].split(":", 1)[0].lower()


def default_prefixes(model: str) -> tuple[str, str]:
    """(document prefix, query prefix) a model was trained with, or ("", "")."""
    return KNOWN_PREFIXES.get(model_base_name(model), ("", ""))


def label_for(labels: Sequence[str] | None, index: int) -> str:
    if labels is not None and index < len(labels):
        return labels[index]
    return f"input {index}"


def check_labels(texts: Sequence[str], labels: Sequence[str] | None) -> None:
    if isinstance(texts, str):
        raise InvalidArgument("embed_documents takes a sequence of texts, not one string")
    if labels is not None and len(labels) != len(texts):
        raise InvalidArgument(f"{len(labels)} labels for {len(texts)} texts")


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_to_bytes(text: str, max_bytes: int) -> str:
    """The longest head of `text` within `max_bytes` of UTF-8, ended at a line break when one
    is near (a chunk of code reads better cut between lines than inside one)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return truncate.at_line(data[: max(max_bytes, 0)].decode("utf-8", errors="ignore"))


def shorten(text: str, factor: float) -> str:
    """`text` cut to about `factor` of its characters (at a line break when one is near)."""
    keep = int(len(text) * factor)
    if keep >= len(text):
        keep = len(text) - 1
    return truncate.at_line(text[: max(keep, 0)])


def pack_batches(sizes: Sequence[int], max_inputs: int, max_bytes: int) -> list[range]:
    """Consecutive index ranges covering `sizes` in order, each at most `max_inputs` long and
    at most `max_bytes` in total. An input larger than `max_bytes` goes alone (callers cut
    inputs to a per-input cap no larger than `max_bytes` first, so that does not happen)."""
    if max_inputs < 1 or max_bytes < 1:
        raise InvalidArgument("a batch must allow at least one input and one byte")
    batches: list[range] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        count = i - start
        if count and (count >= max_inputs or total + size > max_bytes):
            batches.append(range(start, i))
            start, total = i, 0
        total += size
    if start < len(sizes):
        batches.append(range(start, len(sizes)))
    return batches
