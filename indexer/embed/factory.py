"""The embedders by provider name: `make_embedder` builds one from configuration values.

Each provider's module is imported only when that provider is asked for (the Ollama client and
the local model's runtime are not cheap to import), so nothing imports this module back.
"""

from __future__ import annotations

from typing import Any

from indexer.embed.embedder import (
    DEFAULT_PROVIDER,
    PROVIDER_LOCAL,
    PROVIDER_NONE,
    PROVIDER_OLLAMA,
    Embedder,
)
from indexer.errors import ConfigError


def make_embedder(
    provider: str, model: str | None = None, host: str | None = None, **options: Any
) -> Embedder:
    """An embedder from config values: `provider` is "local" or "ollama"; `model` None means
    the provider's default (the bundled ONNX code-minilm-l6-v2 for local,
    nomic-embed-text:v1.5 for Ollama); `host` is used by Ollama only. `options` go to the
    embedder's constructor (prefixes, batch sizes, byte budgets, timeouts). Provider "none"
    (model-free) has no embedder: its callers pass None where an embedder goes."""
    name = (provider or DEFAULT_PROVIDER).strip().lower()
    if name == PROVIDER_OLLAMA:
        from indexer.embed.ollama import OllamaEmbedder

        return OllamaEmbedder(model=model, host=host, **options)
    if name == PROVIDER_LOCAL:
        from indexer.embed.local import LocalEmbedder

        return LocalEmbedder(model=model, **options)
    if name == PROVIDER_NONE:
        raise ConfigError(
            "provider = none runs without a model, so there is no embedder to make: "
            "pass None where the embedder goes (keyword, names and navigation only)"
        )
    raise ConfigError(
        f"unknown embedding provider {provider!r}: set provider = local, provider = ollama "
        "or provider = none (no model: keyword and names only) under [embedding] in "
        "application.ini"
    )
