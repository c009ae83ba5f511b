"""Query vectors computed once: a small LRU keyed by the embedder's identity and the query text.

Agents repeat queries (a retry, the same question under another filter); a query's vector
depends only on the model and the text, so a repeat skips the model. The server holds one cache
for its lifetime. The model runs outside the lock: different queries never wait on each other,
and two threads asking for the same new query at once may both embed it (same vector).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from indexer.embed import Embedder, EmbeddingModel

DEFAULT_QUERY_CACHE_SIZE = 512  # 512 x 384 floats: under 1 MiB


class QueryVectorCache:
    """The last `size` query vectors, least recently used dropped first."""

    def __init__(self, size: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if size < 1:
            raise ValueError("a query cache holds at least one vector")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[tuple[EmbeddingModel, str], tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def vector(self, embedder: Embedder, query: str) -> list[float]:
        """`embedder.embed_query(query)`, from the cache when this model embedded it lately."""
        key = (embedder.identity, query)
        with self._lock:
            found = self._vectors.get(key)
            if found is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return list(found)
            self.misses += 1
        vector = tuple(embedder.embed_query(query))
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return list(vector)

    def __len__(self) -> int:
        return len(self._vectors)
