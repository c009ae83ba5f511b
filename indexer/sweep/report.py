"""What a sweep reports: its progress while it runs, and its report when it ends.

The report is stored as JSON in `rag_sweep` and shown by `code-rag status`, the admin `status`
call and the `index_status` tool; the progress goes to a terminal on long sweeps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

MAX_FAILURES_REPORTED = 200


@dataclass(frozen=True, slots=True)
class SweepProgress:
    """Handed to the progress callback after the walk and after each committed batch."""

    project: str
    phase: str  # "walk", "index", "done"
    files_done: int
    files_total: int
    chunks_written: int
    elapsed: float

    @property
    def files_per_second(self) -> float:
        return self.files_done / self.elapsed if self.elapsed > 0 else 0.0


ProgressCallback = Callable[[SweepProgress], None]


@dataclass(frozen=True, slots=True)
class EmbeddingWork:
    """What the files a sweep wrote cost the model: the texts embedded for their chunks (each
    chunk, and each definition no chunk speaks for), and the tokens embedded against the tokens
    of their source. Vectors taken from a cache count for nothing."""

    chunks: int
    texts: int
    source_tokens: int
    tokens: int

    @property
    def texts_per_chunk(self) -> float:
        return self.texts / self.chunks if self.chunks else 0.0

    @property
    def tokens_per_source_token(self) -> float:
        return self.tokens / self.source_tokens if self.source_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "texts_per_chunk": round(self.texts_per_chunk, 3),
            "tokens_per_source_token": round(self.tokens_per_source_token, 3),
        }


@dataclass
class SweepReport:
    """What one sweep saw and did; stored as JSON in `rag_sweep` and shown by status."""

    project: str
    started_at: str = ""
    finished_at: str = ""
    outcome: str = "running"  # ok | partial (some files failed, a root unavailable) | failed
    error: str | None = None
    full: bool = False
    files_seen: int = 0
    files_unchanged: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    roots_unavailable: list[dict[str, str]] = field(default_factory=list)  # repo, path, reason
    chunks_written: int = 0
    chunks_embedded: int = 0
    definitions_embedded: int = 0  # definitions no chunk speaks for, embedded alone
    cache_hits: int = 0
    vectors_deferred: int = 0  # texts written without their vectors, embedded afterwards
    model_free: bool = False  # swept with no embedder: rows only, no vector wanted
    # The embedding work against the source: tokens of the text of the files written (counted
    # on a sample past the first few MB, scaled by characters), and of the texts embedded (by
    # the model's tokenizer where the embedder has it, else estimated: `indexer.embed.
    # count_tokens`); a sweep that leaves its vectors for later embeds none.
    source_tokens: int = 0
    tokens_embedded: int = 0
    # Of the characters written, how many had their tokens counted (a sample past the first
    # few MB: `indexer.sweep.write.Writer._count_source`), and those tokens.
    source_chars: int = 0
    source_sampled_chars: int = 0
    source_sampled_tokens: int = 0
    embed_requests: int = 0
    embed_retries: int = 0
    embed_truncated: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def add_time(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + seconds, 4)

    def fail_file(self, repo: str, path: str, reason: str) -> None:
        self.files_failed += 1
        if len(self.failures) < MAX_FAILURES_REPORTED:
            self.failures.append({"repo": repo, "path": path, "reason": reason})

    def embedding_work(self, later_texts: int = 0, later_tokens: int = 0) -> EmbeddingWork:
        """The sweep's embedding work, with what was embedded after its rows (`later_texts`
        texts of `later_tokens` tokens, `vectors.embed_pending`) when it left vectors for later."""
        return EmbeddingWork(
            self.chunks_written,
            self.chunks_embedded + self.definitions_embedded + later_texts,
            self.source_tokens,
            self.tokens_embedded + later_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["embedding_work"] = self.embedding_work().to_dict()
        return data
