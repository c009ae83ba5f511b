"""An embedder whose query vector the test chooses, for tests that write their own vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from indexer.embed import EmbedBatchResult, EmbeddingModel

DIM = 16


class FixedEmbedder:
    """Vectors chosen by the test: `embed_query` returns `query_vector`."""

    identity = EmbeddingModel("test", "fixed", DIM)

    def __init__(self, query_vector: np.ndarray) -> None:
        self.query_vector = query_vector

    def embed_documents(self, texts: Any, labels: Any = None) -> EmbedBatchResult:
        raise AssertionError("not used")

    def embed_query(self, text: str) -> list[float]:
        return [float(v) for v in self.query_vector]

    def close(self) -> None:
        pass
