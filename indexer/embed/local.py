"""The local embedder: an ONNX model run in this process by ONNX Runtime, fully offline.

The default model is code-minilm-l6-v2 (384-d: all-MiniLM-L6-v2 tuned on code, see
docs/model-card.md), exported to int8 and shipped inside this package (`indexer/embed/models/`,
with all-MiniLM-L6-v2 itself); any directory written by `code-rag model export` can be configured
instead (see `model_dir.py`). Nothing here imports torch: `onnxruntime`, `tokenizers` and numpy
are all it takes, and they are imported only when the model is first used. The identity comes
from the model's manifest, so a sweep with nothing to embed never loads the model.

Long inputs are handled deliberately, not by a silent cut at the model's window (256 word pieces
for MiniLM, about 1 KB of code): an input over the window is split into consecutive windows of
whole tokens, each embedded, and the window vectors averaged (weighted by their token counts)
and re-normalised, so the whole chunk counts. Past `max_windows` windows the rest is dropped and
the input reported as truncated.

Pieces are embedded one per run by default (`batch_size` 1). The int8 model computes its
activation scales over a whole batch, so in a batch a text's vector moved with its neighbours
(cosine 0.986-0.999 against the same text in another batch): the embedding cache, which reuses
a chunk's vector by its text, and every eval that re-indexes got vectors that depended on what
was embedded beside them. One piece per run makes a vector a function of its text alone (the
same as the query path's), at the same speed on 2 cores (docs/lab-log.md). A
larger `batch_size` still works: longest first, each batch padded to its own longest piece.

Queries never wait behind a sweep: documents and queries run on two ONNX Runtime sessions of the
same model (each created on first use), and a query takes no lock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexer.embed.embedder import (
    DEFAULT_CHUNK_VECTORS,
    PROVIDER_LOCAL,
    EmbedBatchResult,
    EmbeddingModel,
    EmbedReport,
    TruncatedInput,
    check_chunk_vectors,
    check_document_tokens,
    check_labels,
    label_for,
)
from indexer.embed.model_dir import (
    DEFAULT_LOCAL_MODEL,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelManifest,
    read_manifest,
    resolve_model_dir,
)
from indexer.errors import EmbedderUnavailable, InvalidArgument, ModelNotFound

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalEmbedder", "ModelRuntime", "default_threads"]

log = logging.getLogger("code_rag.embed.local")

DEFAULT_LOCAL_BATCH_SIZE = 1  # a vector depends on its text alone; as fast as 8 on 2 cores
DEFAULT_MAX_WINDOWS = 8  # 8 x 256 word pieces: about the context Ollama's nomic model gets
_WINDOW_MARGIN = 4  # a window re-tokenised alone may gain a piece or two at its edges
DOCUMENTS, QUERIES = "documents", "queries"

_runtimes: dict[tuple[Path, int], ModelRuntime] = {}
_runtimes_lock = threading.Lock()


def default_threads() -> int:
    """The machine's cores, as this process may use them: ONNX Runtime's intra-op threads."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)


class ModelRuntime:
    """One model directory loaded in this process: its tokenizer, and up to two inference
    sessions (documents, queries) created on first use. Shared by every embedder of the same
    directory and thread count."""

    def __init__(self, path: Path, manifest: ModelManifest, threads: int) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the local embedder needs onnxruntime and tokenizers ({exc}): reinstall "
                "code-rag (`pip install code-rag`; in a checkout `./bld --help` does), or set "
                "provider = ollama under [embedding] in application.ini"
            ) from exc
        self.path = path
        self.manifest = manifest
        self.threads = threads
        self._ort = onnxruntime
        try:
            tokenizer = Tokenizer.from_file(str(path / TOKENIZER_FILE))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise ModelNotFound(
                f"cannot read {path / TOKENIZER_FILE} ({exc}): re-export the model with "
                "`code-rag model export SRC DEST`"
            ) from exc
        # The tokenizer.json of a hub model may cut at 128 and pad to a fixed length: the window
        # and the padding are ours to choose. `tokenizer` counts and splits (no limit);
        # `framer` makes the model's input: special tokens, cut at the window, as
        # sentence-transformers does.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self._framer: Any = None
        self._framer_lock = threading.Lock()
        # How many special tokens frame a text ([CLS] … [SEP] for BERT).
        self.frame = len(tokenizer.encode("", add_special_tokens=True).ids)
        self._sessions: dict[str, Any] = {}
        self._sessions_lock = threading.Lock()
        self.documents_lock = threading.Lock()  # one document batch at a time per runtime

    @property
    def framer(self) -> Any:
        """The tokenizer that cuts at the window, made on first use: a second parse of the
        tokenizer (about 30 ms) that a query or a window-sized piece never needs."""
        with self._framer_lock:
            if self._framer is None:
                from tokenizers import Tokenizer

                framer = Tokenizer.from_str(self.tokenizer.to_str())
                framer.enable_truncation(self.manifest.max_tokens)
                self._framer = framer
            return self._framer

    def frame_texts(self, texts: list[str]) -> list[list[int]]:
        """The model's input ids for `texts`: special tokens around each, cut at the window.
        A text that fits comes out of the uncut tokenizer as the framer would make it (a cut
        changes nothing within the window); only a longer one goes to the framer."""
        limit = self.manifest.max_tokens
        ids = [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=True)]
        over = [i for i, piece in enumerate(ids) if len(piece) > limit]
        if over:
            cut = self.framer.encode_batch([texts[i] for i in over], add_special_tokens=True)
            for i, e in zip(over, cut, strict=True):
                ids[i] = e.ids
        return ids

    def session(self, kind: str) -> Any:
        """The inference session for `kind` (documents or queries), created on first use."""
        with self._sessions_lock:
            session = self._sessions.get(kind)
            if session is None:
                session = self._create_session()
                self._sessions[kind] = session
            return session

    def loaded(self, kind: str) -> bool:
        return kind in self._sessions

    def _create_session(self) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        # Idle pool threads sleep instead of spinning: two sessions (and PostgreSQL) share the
        # cores, and a spinning pool would take them from the other.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Activations of a large batch go back to the system after it, not into a kept arena.
        options.enable_cpu_mem_arena = False
        started = time.perf_counter()
        try:
            session = ort.InferenceSession(
                str(self.path / MODEL_FILE), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types are not importable stably
            raise ModelNotFound(
                f"cannot load {self.path / MODEL_FILE} ({exc}): re-export the model with "
                "`code-rag model export SRC DEST`"
            ) from exc
        names = {i.name for i in session.get_inputs()}
        if "input_ids" not in names:
            raise ModelNotFound(f"{self.path / MODEL_FILE} takes no input_ids: re-export it")
        log.info(
            "loaded local embedding model %s in %.2f s (%d threads)",
            self.path,
            time.perf_counter() - started,
            self.threads,
        )
        return session

    def run(self, texts: list[str], kind: str, batch_size: int) -> tuple[Any, int]:
        """Vectors (float32, one row per text, unit length when the model normalises) for texts
        within the window, and how many batches it took; longest first, each batch padded to
        its longest text."""
        import numpy as np

        m = self.manifest
        pieces = self.frame_texts(texts)
        out = np.empty((len(pieces), m.dimension), dtype=np.float32)
        order = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
        session = self.session(kind)
        wanted = {i.name for i in session.get_inputs()}
        batches = _batches(order, [len(p) for p in pieces], batch_size)
        for rows in batches:
            width = max(len(pieces[i]) for i in rows)
            ids = np.full((len(rows), width), m.pad_token_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, : len(pieces[i])] = pieces[i]
                mask[r, : len(pieces[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids * 0}
            feeds = {k: v for k, v in feeds.items() if k in wanted}
            if kind == DOCUMENTS:
                with self.documents_lock:
                    (hidden,) = session.run([m.output], feeds)
            else:
                (hidden,) = session.run([m.output], feeds)
            if m.pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if m.normalize:
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                pooled = pooled / np.maximum(norms, 1e-12)
            out[rows] = pooled
        return out, len(batches)


def _batches(order: list[int], lengths: list[int], size: int) -> list[list[int]]:
    """`order` (longest first) cut into batches of at most `size`; a batch also ends where
    the pieces get shorter than half its longest. Less padding is less work, and an int8
    model's per-batch activation scales then fit each piece better."""
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < size and 2 * lengths[i] >= lengths[batches[-1][0]]:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def load_runtime(path: Path, manifest: ModelManifest, threads: int) -> ModelRuntime:
    """The `ModelRuntime` for `path`, made on first use and kept for the process."""
    with _runtimes_lock:
        runtime = _runtimes.get((path, threads))
        if runtime is None:
            runtime = ModelRuntime(path, manifest, threads)
            _runtimes[(path, threads)] = runtime
        return runtime


class LocalEmbedder:
    """Embeds in-process with ONNX Runtime; see the module docstring."""

    def __init__(
        self,
        model: str | None = None,
        *,
        document_prefix: str | None = None,
        query_prefix: str | None = None,
        batch_size: int = DEFAULT_LOCAL_BATCH_SIZE,
        max_windows: int = DEFAULT_MAX_WINDOWS,
        document_tokens: int = 0,
        chunk_vectors: str = DEFAULT_CHUNK_VECTORS,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1 or max_windows < 1:
            raise InvalidArgument("batch_size and max_windows must be at least 1")
        if threads is not None and threads < 0:
            raise InvalidArgument("threads must be 0 (the machine's cores) or more")
        self.path = resolve_model_dir(model)
        self.manifest = read_manifest(self.path)
        self.model = self.manifest.name
        self.document_prefix = (
            self.manifest.document_prefix if document_prefix is None else document_prefix
        )
        self.query_prefix = self.manifest.query_prefix if query_prefix is None else query_prefix
        self.batch_size = batch_size
        self.max_windows = max_windows
        self.document_tokens = check_document_tokens(document_tokens)
        self.chunk_vectors = check_chunk_vectors(chunk_vectors)
        self.threads = threads or default_threads()
        self._runtime: ModelRuntime | None = None

    @property
    def identity(self) -> EmbeddingModel:
        """From the manifest: never loads the model."""
        return EmbeddingModel(
            provider=PROVIDER_LOCAL,
            model=self.model,
            dimension=self.manifest.dimension,
            document_prefix=self.document_prefix,
            query_prefix=self.query_prefix,
            document_tokens=self.document_tokens,
            chunk_vectors=self.chunk_vectors,
        )

    @property
    def max_seq_length(self) -> int:
        return self.manifest.max_tokens

    @property
    def runtime(self) -> ModelRuntime:
        if self._runtime is None:
            self._runtime = load_runtime(self.path, self.manifest, self.threads)
        return self._runtime

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        check_labels(texts, labels)
        started = time.perf_counter()
        report = EmbedReport()
        if not texts:
            return report.result([], 0.0)
        vectors = self._embed(
            list(texts), labels, self.document_prefix, DOCUMENTS, report, self.document_tokens
        )
        _release_freed_memory()
        return report.result(list(vectors), time.perf_counter() - started)

    def embed_query(self, text: str) -> list[float]:
        report = EmbedReport()
        return self._embed([text], ["the search query"], self.query_prefix, QUERIES, report)[0]

    def close(self) -> None:
        """Nothing to release: the model stays loaded for the process's other embedders."""

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens of `texts` by the model's tokenizer (no prefix, no special tokens)."""
        tokenizer = self.runtime.tokenizer
        encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)  # no offsets
        return sum(len(enc.ids) for enc in encode(list(texts), add_special_tokens=False))

    def pieces(self, texts: Sequence[str]) -> list[str]:
        """What the model runs for `texts` as documents: each text, or each window of a text
        longer than the model's, with the document prefix (one run each)."""
        return self._split(
            list(texts), None, self.document_prefix, EmbedReport(), self.document_tokens
        )[0]

    def _split(
        self,
        texts: list[str],
        labels: Sequence[str] | None,
        prefix: str,
        report: EmbedReport,
        cut: int = 0,
    ) -> tuple[list[str], list[int], list[float]]:
        """The pieces the model runs for `texts` (a text, or its consecutive windows of whole
        tokens), each with the text it belongs to and its weight in that text's vector. With
        `cut`, a text is its first `cut` tokens (the configured depth, not a truncation)."""
        rt = self.runtime
        prefix_tokens = len(rt.tokenizer.encode(prefix, add_special_tokens=False).ids)
        window = max(self.manifest.max_tokens - rt.frame - prefix_tokens - _WINDOW_MARGIN, 8)
        encoded = rt.tokenizer.encode_batch(texts, add_special_tokens=False)
        most = self.max_windows * window
        if cut:
            most = min(most, cut)
        report.tokens = (report.tokens or 0) + sum(min(len(enc.ids), most) for enc in encoded)
        pieces: list[str] = []
        owners: list[int] = []
        weights: list[float] = []
        for i, (text, enc) in enumerate(zip(texts, encoded, strict=True)):
            offsets = enc.offsets
            n = len(offsets)
            if cut and n > cut:
                text, n = text[: offsets[cut - 1][1]], cut
            if n <= window:
                pieces.append(prefix + text)
                owners.append(i)
                weights.append(1.0)
                continue
            report.split_inputs += 1
            starts = range(0, n, window)
            if len(starts) > self.max_windows:
                kept = offsets[self.max_windows * window - 1][1]
                report.truncated.append(
                    TruncatedInput(
                        index=i,
                        label=label_for(labels, i),
                        reason=f"longer than {self.max_windows} windows of {window} tokens",
                        original_chars=len(text),
                        kept_chars=kept,
                    )
                )
                log.warning(
                    "embedding input %s is %d tokens: embedding its first %d (%d windows)",
                    label_for(labels, i),
                    n,
                    self.max_windows * window,
                    self.max_windows,
                )
                starts = starts[: self.max_windows]
            for start in starts:
                end = min(start + window, n)
                pieces.append(prefix + text[offsets[start][0] : offsets[end - 1][1]])
                owners.append(i)
                weights.append(float(end - start))
        return pieces, owners, weights

    def _embed(
        self,
        texts: list[str],
        labels: Sequence[str] | None,
        prefix: str,
        kind: str,
        report: EmbedReport,
        cut: int = 0,
    ) -> list[list[float]]:
        import numpy as np

        rt = self.runtime
        pieces, owners, weights = self._split(texts, labels, prefix, report, cut)
        embedded, batches = rt.run(pieces, kind, self.batch_size)
        report.requests += batches
        if len(pieces) == len(texts):  # nothing was split: the vectors are the answer
            return [row.tolist() for row in embedded]
        sums = np.zeros((len(texts), embedded.shape[1]), dtype=np.float64)
        np.add.at(sums, np.asarray(owners), embedded * np.asarray(weights)[:, None])
        if self.manifest.normalize:
            sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        else:
            sums /= np.asarray(_totals(owners, weights, len(texts)))[:, None]
        return [row.tolist() for row in sums.astype(np.float32)]


def _release_freed_memory() -> None:
    """Hand the heap memory a document batch freed back to the system (glibc only).

    ONNX Runtime frees its activations after each run, but glibc keeps freed heap pages, so a
    long-running server that swept once would hold a sweep's peak for good. Allocating large
    buffers with mmap instead (M_MMAP_THRESHOLD) returns them at once but made embedding up
    to 2x slower here (fresh pages every run); one trim per call costs nothing measurable.
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def _totals(owners: list[int], weights: list[float], count: int) -> list[float]:
    totals = [0.0] * count
    for owner, weight in zip(owners, weights, strict=True):
        totals[owner] += weight
    return totals
