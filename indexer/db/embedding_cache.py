"""The embedding cache every project shares: vectors by the model that made them and the
SHA-256 of the text, in the shared schema ("code-rag".embedding_cache). A sweep looks a text up
here before it embeds it, so the same code in two projects, or a project dropped and made
again, is embedded once. At most SHARED_CACHE_MAX_VECTORS are kept, least recently used first
out; a model no project records any more has its vectors dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from indexer.db import statements
from indexer.db.schema import Conn, Schema
from indexer.db.store import get_meta, list_projects

# At most this many vectors are kept; past it the least recently used go first.
SHARED_CACHE_MAX_VECTORS = 1_000_000


def shared_vectors(conn: Conn, model: str, hashes: Sequence[str]) -> dict[str, Any]:
    """The vectors `model` (an `EmbeddingModel.cache_key`) made of the texts of content hashes
    `hashes`, in any project; each found is marked used today."""
    if not hashes:
        return {}
    digests = [bytes.fromhex(h) for h in hashes]
    rows = conn.execute(statements.SHARED_LOOKUP, {"model": model, "digests": digests})
    found = {row[0]: row[1] for row in rows}
    if found:
        used = [bytes.fromhex(h) for h in found]
        conn.execute(statements.SHARED_TOUCH, {"model": model, "digests": used})
    return found


def share_vectors(conn: Conn, model: str, vectors: Mapping[str, Any]) -> None:
    """Keep `vectors` (by content hash) for every project using `model`."""
    if vectors:
        with conn.cursor() as cur:
            cur.executemany(
                statements.SHARED_PUT,
                [
                    {"model": model, "digest": bytes.fromhex(h), "embedding": v}
                    for h, v in vectors.items()
                ],
            )


def trim_shared_cache(conn: Conn, max_vectors: int = SHARED_CACHE_MAX_VECTORS) -> int:
    """Drop the least recently used vectors beyond `max_vectors`; return how many went."""
    row = conn.execute(statements.SHARED_COUNT).fetchone()
    over = (int(row[0]) if row else 0) - max_vectors
    if over <= 0:
        return 0
    return conn.execute(statements.SHARED_EVICT, {"n": over}).rowcount


def drop_shared_model(conn: Conn, model: str) -> int:
    """Drop every vector `model` made (no project uses it any more); return how many."""
    return conn.execute(statements.SHARED_DROP_MODEL, {"model": model}).rowcount


def models_in_use(conn: Conn) -> list[dict[str, Any]]:
    """The embedding model each project's index records (one entry per project)."""
    found = []
    for name in list_projects(conn):
        recorded = get_meta(conn, Schema(name), "embedding")
        if recorded is not None:
            found.append(recorded)
    return found
