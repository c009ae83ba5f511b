"""What changing `[embedding] chunk_vectors` embeds again, with the embedding cache every
project shares holding every text the earlier way read.

An index records how its files were read, so a change indexes each project again; a text's
vector is the model's of that text whichever way it was cut, so the cache supplies every text
both ways read and only the others go through the model. For each folder of `--corpus` (one
project each, as `./bld scan all` indexes them), this chunks every file as the sweep does and
counts, by the bundled model's tokenizer: the texts and tokens each way embeds from nothing,
and those the new way embeds when the cache holds the old way's. Nothing is timed; the counts
are exact.

    .venv/bin/python -m bench.switch_work --corpus bench/.cache/scan8 --old whole --new rest
"""

from __future__ import annotations

import argparse
from pathlib import Path

from chunkers import chunk_file, embedding_text, lone_definitions
from indexer.embed import CHUNK_VECTORS, DEFAULT_CHUNK_VECTORS, make_embedder
from indexer.project import Project, Root
from indexer.sweep import walk_project
from indexer.sweep.parts import content_hash, file_keys


def texts_of(project: Project, mode: str) -> tuple[dict[str, str], list[str]]:
    """Every distinct text a first index of `project` embeds in `mode` (by its cache key), and
    the files' sources."""
    texts: dict[str, str] = {}
    sources: list[str] = []
    for cand in walk_project(project).files:
        data = cand.absolute.read_bytes()
        result = chunk_file(cand.path, data)
        if not result.chunks:
            continue
        sources.append(data.decode("utf-8", errors="replace"))
        lone = [definition for _, definition in lone_definitions(result)]
        keys = file_keys(mode, result.chunks, lone, result.text)
        items = zip((*keys.chunks, *keys.definitions), (*result.chunks, *lone), strict=True)
        for key, item in items:
            for part in keys.parts.get(key, (item,)):
                texts.setdefault(content_hash(part), embedding_text(part, cand.path))
    return texts, sources


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="one project per folder")
    parser.add_argument("--old", choices=CHUNK_VECTORS, default="whole")
    parser.add_argument("--new", choices=CHUNK_VECTORS, default=DEFAULT_CHUNK_VECTORS)
    args = parser.parse_args(argv)
    tokenizer = make_embedder("local").runtime.tokenizer  # type: ignore[attr-defined]

    def tokens(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    folders = sorted(d for d in args.corpus.iterdir() if d.is_dir())
    old: dict[str, str] = {}
    new: dict[str, str] = {}
    source_tokens = 0
    for folder in folders:
        project = Project(folder.name.replace("-", "_").lower(), (Root(folder, folder.name),))
        old_texts, sources = texts_of(project, args.old)
        new_texts, _ = texts_of(project, args.new)
        old.update(old_texts)
        new.update(new_texts)
        source_tokens += sum(map(tokens, sources))
    again = {key: text for key, text in new.items() if key not in old}
    print(f"{len(folders)} projects, {source_tokens:,} tokens of source")
    print("| | texts | tokens | per token of source |")
    print("|---|---:|---:|---:|")
    for label, texts in (
        (f"{args.old}, from nothing", old),
        (f"{args.new}, from nothing", new),
        (f"{args.new}, the cache holding {args.old}'s", again),
    ):
        count = sum(map(tokens, texts.values()))
        print(f"| {label} | {len(texts):,} | {count:,} | {count / source_tokens:.2f} |")


if __name__ == "__main__":
    main()
