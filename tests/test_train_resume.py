"""A training run stopped and resumed gives the weights of one that ran straight through.

The real trainer (bench/train/train.py) on the real base model, on CPU with its deterministic
kernels, a few steps of a tiny pair file: one run straight through, one stopped after a step
and run again with the same command. The saved state holds the weights, the optimiser, the
schedule and the random generator (dropout), so the two weight files are the same bytes; a
state saved by a run with other arguments is refused, not mixed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.train import train


def pairs_file(folder: Path, count: int = 12) -> Path:
    lines = []
    for n in range(count):
        lines.append(
            json.dumps(
                {
                    "library": "lib",
                    "path": f"pkg/module_{n}.py",
                    "line": 1,
                    "query": f"Return the checksum of block number {n} of the archive.",
                    "document": f"def checksum_{n}(archive):\n    return crc32(archive.block({n}))",
                }
            )
        )
    path = folder / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(pairs: Path, out: Path, *extra: str) -> None:
    train.main(
        [
            "--pairs",
            str(pairs),
            "--out",
            str(out),
            "--batch",
            "4",
            "--epochs",
            "2",
            "--query-tokens",
            "16",
            "--doc-tokens",
            "32",
            "--threads",
            "1",
            "--checkpoint-every",
            "2",
            *extra,
        ]
    )


def test_a_run_stopped_and_resumed_gives_the_same_weights(tmp_path: Path) -> None:
    pairs = pairs_file(tmp_path)
    straight = tmp_path / "straight"
    run(pairs, straight)
    resumed = tmp_path / "resumed"
    run(pairs, resumed, "--stop-after", "3")
    state = resumed.with_name("resumed.partial.pt")
    assert state.exists()
    assert not resumed.exists()  # no model until the run ends
    run(pairs, resumed)

    a = json.loads((straight / "training.json").read_text())
    b = json.loads((resumed / "training.json").read_text())
    assert a["steps"] == b["steps"] == 6
    assert b["weights_sha256"] == a["weights_sha256"]
    assert b["loss_curve"] == a["loss_curve"]
    assert (a["runs"], b["runs"]) == (1, 2)
    assert not state.exists()  # spent once the model is written


def test_a_state_saved_with_other_arguments_is_refused(tmp_path: Path) -> None:
    pairs = pairs_file(tmp_path)
    out = tmp_path / "model"
    run(pairs, out, "--stop-after", "1")
    with pytest.raises(SystemExit, match=r"saved by a run with other lr"):
        run(pairs, out, "--lr", "1e-4")
    assert out.with_name("model.partial.pt").exists()  # kept for the run it belongs to
