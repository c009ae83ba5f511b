"""The embedding wing: the embedder interface and the model bookkeeping (`embedder`), the
local ONNX model (`local`), Ollama (`ollama`), the factory that picks one by provider name,
the model folder with its manifest, and the exporter (`code-rag model export`, the only place
torch is loaded). Providers are imported on demand: a process that never embeds never loads
ONNX Runtime.
"""

from indexer.embed.embedder import (
    CHUNK_VECTORS,
    CHUNK_VECTORS_OUTLINE,
    CHUNK_VECTORS_PARTS,
    CHUNK_VECTORS_REST,
    CHUNK_VECTORS_WHOLE,
    DEFAULT_CHUNK_VECTORS,
    DEFAULT_OLLAMA_HOST,
    DEFAULT_PROVIDER,
    MIN_DOCUMENT_TOKENS,
    PROVIDER_LOCAL,
    PROVIDER_NONE,
    PROVIDER_OLLAMA,
    PROVIDERS,
    EmbedBatchResult,
    Embedder,
    EmbeddingModel,
    count_tokens,
    ensure_same_model,
    estimate_tokens,
    needs_reembed,
    reembed_warning,
    tokens_embedded,
)
from indexer.embed.export import BUNDLED_SOURCE, export_model, resolve_source
from indexer.embed.factory import make_embedder

__all__ = [
    "BUNDLED_SOURCE",
    "CHUNK_VECTORS",
    "CHUNK_VECTORS_OUTLINE",
    "CHUNK_VECTORS_PARTS",
    "CHUNK_VECTORS_REST",
    "CHUNK_VECTORS_WHOLE",
    "DEFAULT_CHUNK_VECTORS",
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_PROVIDER",
    "MIN_DOCUMENT_TOKENS",
    "PROVIDERS",
    "PROVIDER_LOCAL",
    "PROVIDER_NONE",
    "PROVIDER_OLLAMA",
    "EmbedBatchResult",
    "Embedder",
    "EmbeddingModel",
    "count_tokens",
    "ensure_same_model",
    "estimate_tokens",
    "export_model",
    "make_embedder",
    "needs_reembed",
    "reembed_warning",
    "resolve_source",
    "tokens_embedded",
]
