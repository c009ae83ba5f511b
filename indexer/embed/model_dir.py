"""An ONNX model directory: the layout the local embedder runs, and where a configured model is.

A model directory holds `model.onnx` (the transformer, token ids in, token vectors out),
`tokenizer.json` (a `tokenizers` tokenizer, without truncation or padding: the embedder windows
and pads itself) and `manifest.json` (`ModelManifest`: name, dimension, window, pooling,
normalisation, prefixes). `code-rag model export` writes one from a sentence-transformers model;
the default, code-minilm-l6-v2 (all-MiniLM-L6-v2 tuned on code, int8), ships inside this
package under `indexer/embed/models/`, beside all-MiniLM-L6-v2 (int8) itself.

Reading a manifest is cheap and needs neither onnxruntime nor numpy: a model's identity is
known without loading it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from indexer.errors import ModelNotFound

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1  # the layout this code reads; a newer one is refused, never guessed at
POOLINGS = ("mean", "cls")
DEFAULT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_OUTPUT = "last_hidden_state"

BUNDLED_MODELS = Path(__file__).resolve().parent / "models"
DEFAULT_LOCAL_MODEL = "code-minilm-l6-v2"


@dataclass(frozen=True, slots=True)
class ModelManifest:
    """What the embedder needs to know about a model before (and without) loading it.

    `name` is what `rag_meta` records as the model: two exports that can give different vectors
    (another source, another quantisation) must have different names, so an index is re-embedded
    rather than mixed.
    """

    name: str
    dimension: int
    max_tokens: int  # the window, special tokens included (256 for MiniLM)
    pooling: str = "mean"
    normalize: bool = True
    document_prefix: str = ""
    query_prefix: str = ""
    pad_token_id: int = 0
    inputs: tuple[str, ...] = DEFAULT_INPUTS
    output: str = DEFAULT_OUTPUT
    version: int = MANIFEST_VERSION
    # Provenance, for people: source model and its weights' sha256, exporter versions, options.
    source: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["inputs"] = list(self.inputs)
        data["source"] = dict(self.source)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> ModelManifest:
        """The inverse of `to_dict`; a manifest that cannot be one is refused with its path."""

        def bad(what: str) -> ModelNotFound:
            return ModelNotFound(
                f"{where} is not a usable model manifest ({what}): re-export the model with "
                "`code-rag model export SRC DEST`"
            )

        if not isinstance(data, Mapping):
            raise bad("expected a JSON object")
        version = data.get("version", MANIFEST_VERSION)
        if version != MANIFEST_VERSION:
            raise bad(f"layout version {version!r}, this code-rag reads {MANIFEST_VERSION}")
        try:
            manifest = cls(
                name=str(data["name"]),
                dimension=int(data["dimension"]),
                max_tokens=int(data["max_tokens"]),
                pooling=str(data.get("pooling", "mean")),
                normalize=bool(data.get("normalize", True)),
                document_prefix=str(data.get("document_prefix") or ""),
                query_prefix=str(data.get("query_prefix") or ""),
                pad_token_id=int(data.get("pad_token_id", 0)),
                inputs=tuple(str(n) for n in data.get("inputs", DEFAULT_INPUTS)),
                output=str(data.get("output", DEFAULT_OUTPUT)),
                source=dict(data.get("source") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise bad(f"missing or malformed {exc}") from None
        if not manifest.name or manifest.dimension < 1 or manifest.max_tokens < 8:
            raise bad("name, dimension or max_tokens out of range")
        if manifest.pooling not in POOLINGS:
            raise bad(f"pooling {manifest.pooling!r}, expected one of {', '.join(POOLINGS)}")
        if "input_ids" not in manifest.inputs:
            raise bad("its inputs lack input_ids")
        return manifest

    def write(self, directory: Path) -> Path:
        path = directory / MANIFEST_FILE
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path


def read_manifest(directory: Path) -> ModelManifest:
    path = directory / MANIFEST_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelNotFound(
            f"cannot read {path} ({exc}): re-export the model with `code-rag model export SRC DEST`"
        ) from None
    return ModelManifest.from_dict(data, str(path))


def bundled_model_dir(name: str = DEFAULT_LOCAL_MODEL) -> Path:
    return BUNDLED_MODELS / name


def is_sentence_transformers_dir(path: Path) -> bool:
    return (path / "modules.json").is_file() or (path / "config.json").is_file()


def resolve_model_dir(model: str | None) -> Path:
    """The ONNX model directory for a configured `model`: None, "" or a bundled model's name
    (directory or manifest name, e.g. "all-MiniLM-L6-v2") mean that bundled model; anything else
    is a path to a directory written by `code-rag model export`. Only files are checked here."""
    if model in (None, ""):
        path = bundled_model_dir()
    elif (BUNDLED_MODELS / str(model)).is_dir():
        path = BUNDLED_MODELS / str(model)
    else:
        path = _bundled_by_manifest_name(str(model)) or Path(str(model)).expanduser()
    missing = [f for f in (MANIFEST_FILE, MODEL_FILE, TOKENIZER_FILE) if not (path / f).is_file()]
    if not missing:
        return path
    if is_sentence_transformers_dir(path):
        raise ModelNotFound(
            f"{str(path)!r} is a sentence-transformers model, which the local embedder no longer "
            f"runs directly: export it with `code-rag model export {path} DEST` and set "
            "model = DEST under [embedding] in application.ini"
        )
    raise ModelNotFound(
        f"no ONNX model in {str(path)!r} (missing {', '.join(missing)}): set model under "
        "[embedding] in application.ini to a directory written by `code-rag model export`, or "
        f"leave it empty for the bundled {DEFAULT_LOCAL_MODEL}"
    )


def _bundled_by_manifest_name(name: str) -> Path | None:
    if not BUNDLED_MODELS.is_dir():
        return None
    for directory in sorted(BUNDLED_MODELS.iterdir()):
        manifest = directory / MANIFEST_FILE
        if manifest.is_file():
            try:
                if json.loads(manifest.read_text(encoding="utf-8")).get("name") == name:
                    return directory
            except (OSError, ValueError):
                continue
    return None
