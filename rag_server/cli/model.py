"""`code-rag model`: local embedding models, exported from sentence-transformers to the ONNX
layout the local embedder runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rag_server.cli.common import user_errors

model_app = typer.Typer(
    help="Local embedding models: export a sentence-transformers model to ONNX.",
    no_args_is_help=True,
)


@model_app.command("export")
def model_export(
    source: Annotated[
        str,
        typer.Argument(
            help="A sentence-transformers model directory, or all-MiniLM-L6-v2 for the "
            "bundled weights."
        ),
    ],
    destination: Annotated[Path, typer.Argument(help="The folder to write (new or empty).")],
    int8: Annotated[
        bool, typer.Option("--int8", help="Quantise to int8: about 2x faster, 1/4 the size.")
    ] = False,
    name: Annotated[
        str | None,
        typer.Option(
            help="The model name indexes record (default: the source folder's name, "
            "plus -int8 with --int8)."
        ),
    ] = None,
    fuse: Annotated[
        bool, typer.Option("--fuse/--no-fuse", help="Fuse attention (BERT-like models).")
    ] = True,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty folder.")] = False,
) -> None:
    """Export a sentence-transformers model to the ONNX layout the local embedder runs
    (model.onnx, tokenizer.json, manifest.json), then check it against the source model.

    Needs torch (the `export` extra; in a checkout ./bld installs it for this command).
    Use the result with `model = DESTINATION` under [embedding] in application.ini.

    Example: code-rag model export all-MiniLM-L6-v2 /tmp/minilm-int8 --int8
    """
    with user_errors():
        from indexer.embed import export_model  # torch: only here, only now

        result = export_model(source, destination, int8=int8, name=name, fuse=fuse, force=force)
        m = result.manifest
        typer.echo(
            f"wrote {result.destination}: {m.name}, {m.dimension}-d, window {m.max_tokens} "
            f"tokens, {m.pooling} pooling, model.onnx {result.model_bytes / 1e6:.1f} MB, "
            f"{result.fused_attention} attention blocks fused"
        )
        typer.echo(
            f"check: cosine to the source model on sample texts: mean {result.cosine_mean:.4f}, "
            f"min {result.cosine_min:.4f}"
        )
        typer.echo(f"use it: set model = {result.destination} under [embedding] in application.ini")
