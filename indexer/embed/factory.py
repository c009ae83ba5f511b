"""The embedders by provider name: `make_embedder` builds one from configuration values.

Each provider's module is imported only when that provider is asked for (the Ollama client and
the local model's runtime are not cheap to import), so nothing imports this module back.
"""

from __future__ import annotations

from typing import Any

from indexer.embed.embedder import DEFAULT_PROVIDER, PROVIDER_LOCAL, PROVIDER_OLLAMA, Embedder
from indexer.errors import ConfigError


def make_embedder(
    provider: str, model: str | None = None, host: str | None = None, **options: Any
) -> Embedder:
    """An embedder from config values: `provider` is "local" or "ollama"; `model` None means
    the provider's default (the bundled ONNX code-minilm-l6-v2 for local,
    nomic-embed-text:v1.5 for Ollama); `host` is used by Ollama only. `options` go to the
    embedder's constructor (prefixes, batch sizes, byte budgets, timeouts)."""
    name = (provider or DEFAULT_PROVIDER).strip().lower()
    if name == PROVIDER_OLLAMA:
        from indexer.embed.ollama import OllamaEmbedder

        return OllamaEmbedder(model=model, host=host, **options)
    if name == PROVIDER_LOCAL:
        from indexer.embed.local import LocalEmbedder

        return LocalEmbedder(model=model, **options)
    raise ConfigError(
        f"unknown embedding provider {provider!r}: set provider = local or provider = ollama "
        "under [embedding] in application.ini"
    )
