"""The rows that cross layers: small frozen values, built by psycopg (`class_row`) or by the
sweep, never holding a connection. `store` reads and writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class FileRecord:
    repo: str
    path: str
    size: int
    mtime_ns: int
    sha256: str
    language: str | None


@dataclass(frozen=True, slots=True)
class ChunkRow:
    ordinal: int
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    content: str
    content_sha256: str
    embedding: Any  # a sequence of floats / numpy array, or None
    symbol_terms: str = ""
    path_terms: str = ""
    body_terms: str = ""


@dataclass(frozen=True, slots=True)
class SymbolRow:
    """One definition of a file as the sweep writes it; `chunk` is its chunk's ordinal. A
    definition no chunk speaks for (`chunkers.lone_definitions`) has a vector of its own, with
    its embedding-cache key; the others have neither."""

    ordinal: int
    chunk: int
    name: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    signature_line: int
    signature: str
    parent: str | None
    content_sha256: str | None = None
    embedding: Any = None


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """A definition as `find_symbol` returns it, with its file's repo, path and language."""

    name: str
    qualified_name: str
    kind: str
    language: str | None
    repo: str
    path: str
    start_line: int
    end_line: int
    signature: str
    chunk_id: int | None


@dataclass(frozen=True, slots=True)
class OutlineRow:
    """A definition of one file, in file order (a parent before its children)."""

    name: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    parent: str | None


@dataclass(frozen=True, slots=True)
class LineMatch:
    """One line of an indexed file that matched an exact-text search."""

    repo: str
    path: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class IndexedFile:
    id: int
    language: str | None


@dataclass(frozen=True, slots=True)
class FileState:
    id: int
    repo: str
    path: str
    size: int
    mtime_ns: int
    sha256: str
    chunk_count: int
    error: str | None


@dataclass(frozen=True, slots=True)
class ProjectSummary:
    name: str
    files: int
    chunks: int
    failed_files: int
    last_sweep_at: datetime | None
    schema_version: int


@dataclass(frozen=True, slots=True)
class RepoCounts:
    repo: str
    files: int
    chunks: int


@dataclass(frozen=True, slots=True)
class FileFailure:
    repo: str
    path: str
    error: str
    error_at: datetime | None


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as search and `get_chunk` read it back, with its file's repo, path, language."""

    chunk_id: int
    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    language: str | None
    content: str
    indexed_at: datetime | None = None  # when its file was last written to the index
    # Every definition whose signature is in this chunk (several when small ones were merged).
    symbols: list[str] = field(default_factory=list)


class Ranked(NamedTuple):
    """A ranker's candidate: the chunk, its score (cosine similarity or keyword score), and
    the file it is in (which search groups and demotes by, without reading the chunk)."""

    chunk_id: int
    score: float
    file_id: int
    path: str


@dataclass(frozen=True, slots=True)
class ChunkFile:
    """Which file a chunk is in: what search ranks files by before it reads any chunk."""

    chunk_id: int
    file_id: int
    path: str


@dataclass(frozen=True, slots=True)
class RangeBlock:
    """A block of a file's indexed text holding lines of a range asked for (`range_no`: the
    range's place among those asked, from 1)."""

    range_no: int
    start_line: int
    content: str


@dataclass(frozen=True, slots=True)
class DefinitionPiece:
    """A chunk that is one window of a definition split into several: the definition's lines
    and the chunk holding its signature (`head_id`)."""

    chunk_id: int
    head_id: int
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class TermStatsRow:
    """The planner's statistics of the keyword column: rows, common terms and their shares."""

    rows: float
    terms: list[str] | None
    freqs: list[float] | None


@dataclass(frozen=True, slots=True)
class SweepRecord:
    id: int
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    report: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PendingChunk:
    """A chunk written without its vector: what its embedding text is made of."""

    id: int
    content_sha256: str
    start_line: int
    end_line: int
    content: str
    symbol: str | None
    kind: str
    repo: str
    path: str
    language: str | None
    file_id: int


@dataclass(frozen=True, slots=True)
class FileChunk:
    """A chunk of a file as stored, for the parts of its file's vectors."""

    file_id: int
    id: int
    start_line: int
    end_line: int
    content: str
    symbol: str | None
    kind: str
    content_sha256: str


@dataclass(frozen=True, slots=True)
class FileDefinition:
    """A definition with a vector of its own as stored, for the parts of its file's vectors."""

    file_id: int
    id: int
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    content_sha256: str


@dataclass(frozen=True, slots=True)
class PendingDefinition:
    """A definition written without its own vector: its lines are read back from its file's
    exact-text blocks."""

    id: int
    content_sha256: str
    qualified_name: str
    kind: str
    start_line: int
    end_line: int
    file_id: int
    repo: str
    path: str
    language: str | None


@dataclass(frozen=True, slots=True)
class PendingCounts:
    """How many chunks and definitions wait for their vectors, of how many in all."""

    chunks: int = 0
    definitions: int = 0
    all_chunks: int = 0
    all_definitions: int = 0  # those that get a vector of their own

    @property
    def total(self) -> int:
        return self.chunks + self.definitions

    @property
    def ready_share(self) -> float:
        """The share of the index's vectors that are in (1.0 when nothing is pending; the
        totals are needed otherwise)."""
        every = self.all_chunks + self.all_definitions
        return 1.0 if not self.total or not every else round(1.0 - self.total / every, 4)


@dataclass(frozen=True, slots=True)
class AccessToken:
    """A token made for a project or a group, as kept: never the token, nor its digest."""

    name: str
    target: str  # a project or a group of the configuration it was made under
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """A process filling a project's vectors, as its row in `rag_worker` says (its last
    heartbeat, its counts in this project, its current run's rate)."""

    id: str
    role: str  # "worker" (`code-rag worker`) or "indexer" (a server's phase, `./bld scan`)
    host: str
    pid: int
    model: str  # the embedder's `EmbeddingModel.describe()`
    started_at: datetime
    last_seen: datetime
    state: str  # "embedding" or "idle"
    written: int  # vectors written (embedded or reused)
    embedded: int  # texts the model embedded
    per_second: float  # vectors written per second in its current run (0 when idle)


@dataclass(frozen=True, slots=True)
class WorkerBeat:
    """What a process filling a project's vectors says of itself in one heartbeat: who it is,
    its state, and the vectors written and texts embedded since its previous beat."""

    id: str
    role: str
    host: str
    pid: int
    model: str
    started_at: datetime
    state: str
    written: int = 0
    embedded: int = 0
    per_second: float = 0.0
