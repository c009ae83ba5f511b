"""bench/train/dequantize.py reads an int8 export's weights back into the layout they came
from: checked on the bundled base model, whose float32 source weights are installed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench" / "train"))


def test_every_weight_comes_back_close_to_the_one_it_was_quantized_from() -> None:
    import dequantize
    from safetensors.numpy import load_file

    from indexer.embed import export
    from indexer.embed.model_dir import bundled_model_dir

    restored = dequantize.state_dict(bundled_model_dir("all-MiniLM-L6-v2") / "model.onnx")
    source = load_file(str(export.bundled_source_dir() / "model.safetensors"))
    source = {k.removeprefix("bert."): v for k, v in source.items()}
    wanted = {k for k in source if not k.startswith("pooler.") and "position_ids" not in k}
    assert wanted <= restored.keys()
    for name in sorted(wanted):
        original, back = source[name], restored[name]
        assert back.shape == original.shape, name
        # Each weight lands within one uint8 step of its tensor's range (the matrices are
        # quantized per channel, finer still); read back transposed or from another layer,
        # the errors would be as large as the weights themselves.
        step = float(original.max() - original.min()) / 255
        error = float(np.abs(back - original).max())
        assert error <= step * 1.01, (name, error, step)
