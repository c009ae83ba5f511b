"""The whole pass, an index-side experiment of the evals: each file's text runs through the model
once, in consecutive windows of the model's length, and every chunk's and every lone
definition's vector is pooled from that pass (the mean of the outputs of the file's tokens
within its lines, special tokens left out, normalised), instead of one run of the model per
chunk and another per definition. The product does not index this way; the evals measure it.

Invariants: a token belongs to the one window it ran in, and counts in every item whose lines
hold it (items overlap: a definition lies inside its chunk); only the first window carries the
header (`File: path\\nLanguage: x\\n\\n`, on by default), whose tokens count in no item; a
window's batch holds windows of the same file only, so a vector is a function of its file's text
(the int8 model scales activations per batch). An eval's index of this kind is a project of its
own (name suffix `_pass`, `_pass_bare` without the header), swept model-free (rows only) and
filled here; its model is recorded as a sweep with the local embedder records it, so queries are
embedded and searched exactly as for the default index.

    .venv/bin/python -m bench.eval.run --whole-pass                 # docstrings and questions
    .venv/bin/python -m bench.eval.run --whole-pass bare            # no header in the pass
    .venv/bin/python -m bench.eval.files.run --whole-pass           # file-level, test split
    .venv/bin/python -m bench.eval.files.run --whole-pass --split unseen
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from indexer.db import Conn, Database, Schema, store
from indexer.embed import CHUNK_VECTORS_WHOLE, Embedder, make_embedder
from indexer.embed.local import DOCUMENTS, ModelRuntime, default_threads
from indexer.embed.model_dir import read_manifest, resolve_model_dir
from indexer.project import Project
from indexer.sweep import SweepOptions, SweepProgress, sweep_project
from indexer.sweep.workers import free_cores

# One window per run of the model, as the product's local embedder runs one piece per run: a
# larger batch (of one file's windows, padded to the longest) moves vectors slightly with the
# int8 model's per-batch activation scales, at no gain in speed on 2 cores (lab log).
DEFAULT_BATCH_SIZE = 1
FILES_PER_ROUND = 50  # files read, pooled and written per transaction

Span = tuple[int, int]  # 1-based inclusive (start_line, end_line)

FILES = "SELECT id, path, language FROM {schema}.rag_file ORDER BY id"
CHUNK_SPANS = "SELECT id, file_id, start_line, end_line FROM {schema}.rag_chunk ORDER BY id"
DEFINITION_SPANS = """
SELECT id, file_id, start_line, end_line FROM {schema}.rag_symbol
 WHERE content_sha256 IS NOT NULL
 ORDER BY id
"""
SET_CHUNK_EMBEDDING = "UPDATE {schema}.rag_chunk SET embedding = %(embedding)s WHERE id = %(id)s"
SET_DEFINITION_EMBEDDING = (
    "UPDATE {schema}.rag_symbol SET embedding = %(embedding)s WHERE id = %(id)s"
)


def header_for(path: str, language: str | None) -> str:
    """What the first window of a file's pass begins with: its path and language, as the
    product's chunk header names them (`chunkers.embedding_text`), without a symbol."""
    return f"File: {path.replace(chr(92), '/')}\nLanguage: {language or 'text'}\n\n"


@dataclass(frozen=True, slots=True)
class FilePass:
    """One file's pass: a vector per span (None where no token of the pass lies in it), the
    tokens run through the model (framing and header included) and the text's own tokens."""

    vectors: tuple[np.ndarray | None, ...]
    tokens: int
    source_tokens: int


@dataclass(frozen=True, slots=True)
class PassReport:
    """What `fill_project` did: files passed, vectors pooled and written (chunks and lone
    definitions), items left without one (no token in their lines), and the tokens run against
    the source's own."""

    files: int
    chunks: int
    definitions: int
    unpooled: int
    tokens: int
    source_tokens: int
    seconds: float

    @property
    def texts(self) -> int:
        return self.chunks + self.definitions

    @property
    def ratio(self) -> float:
        """Tokens run through the model per token of source."""
        return self.tokens / self.source_tokens if self.source_tokens else 0.0

    def describe(self) -> str:
        return (
            f"whole pass: {self.files:,} files, {self.texts:,} texts pooled ({self.chunks:,} "
            f"chunks, {self.definitions:,} lone definitions; {self.unpooled} without a token), "
            f"{self.tokens:,} tokens run through the model for {self.source_tokens:,} tokens of "
            f"source ({self.ratio:.3f} per source token), {self.seconds:.0f} s"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "texts_pooled": self.texts,
            "chunks": self.chunks,
            "definitions": self.definitions,
            "unpooled": self.unpooled,
            "tokens_run": self.tokens,
            "source_tokens": self.source_tokens,
            "tokens_per_source_token": round(self.ratio, 4),
            "seconds": round(self.seconds, 1),
        }


class WholePass:
    """A local model folder loaded for whole passes: its tokenizer (no cut, no padding), its
    inference session (the product's `ModelRuntime`: same options and threads) and the special
    tokens that frame each window."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
    ) -> None:
        # None: the bundled model (`bundled_model_dir`); a bundled model's name, or a folder.
        path = resolve_model_dir(None if model_dir is None else str(model_dir))
        self.manifest = read_manifest(path)
        if self.manifest.pooling != "mean":
            raise ValueError(
                f"{path}: pooling {self.manifest.pooling!r}; a whole pass pools token outputs "
                "by their mean, which a model trained to pool otherwise was not made for"
            )
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.runtime = ModelRuntime(path, self.manifest, threads or default_threads())
        self.tokenizer = self.runtime.tokenizer
        probe = self.tokenizer.encode("a", add_special_tokens=True)
        own = [i for i, special in enumerate(probe.special_tokens_mask) if not special]
        self.lead: list[int] = list(probe.ids[: own[0]])
        self.trail: list[int] = list(probe.ids[own[-1] + 1 :])
        self.window = self.manifest.max_tokens - len(self.lead) - len(self.trail)

    def count_tokens(self, text: str) -> int:
        """The tokens of `text` (no special tokens)."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def pool(self, text: str, spans: Sequence[Span], header: str = "") -> FilePass:
        """`text` (with `header` before it, in its first window) through the model once, and
        for each span of its lines the normalised mean of the outputs of the tokens in it."""
        full = header + text
        enc = self.tokenizer.encode(full, add_special_tokens=False)
        ids = np.asarray(enc.ids, dtype=np.int64)
        offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
        source_tokens = int((offsets[:, 0] >= len(header)).sum())
        if not source_tokens:
            return FilePass((None,) * len(spans), 0, 0)
        lo, hi = _token_ranges(offsets, _char_ranges(text, spans, len(header)))
        counts = np.maximum(hi - lo, 0)
        sums = np.zeros((len(spans), self.manifest.dimension), dtype=np.float64)
        tokens = 0
        for start, outputs in self._windows(ids):
            tokens += len(outputs) + len(self.lead) + len(self.trail)
            a = np.clip(lo - start, 0, len(outputs))
            b = np.clip(hi - start, 0, len(outputs))
            inside = np.nonzero(b > a)[0]
            if not len(inside):
                continue
            # Prefix sums: each span's tokens of this window summed in one subtraction.
            running = np.zeros((len(outputs) + 1, outputs.shape[1]), dtype=np.float64)
            np.cumsum(outputs, axis=0, dtype=np.float64, out=running[1:])
            sums[inside] += running[b[inside]] - running[a[inside]]
        vectors: list[np.ndarray | None] = []
        for total, count in zip(sums, counts, strict=True):
            if not count:
                vectors.append(None)
                continue
            mean = total / count
            vectors.append((mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32))
        return FilePass(tuple(vectors), tokens, source_tokens)

    def token_outputs(self, text: str, header: str = "") -> tuple[np.ndarray, np.ndarray, int]:
        """Every token of `header + text` with its output from the pass: character offsets
        (n x 2, into `header + text`), outputs (n x dimension), and the tokens run. Holds the
        whole file's outputs at once: for checking `pool`, not for indexing."""
        enc = self.tokenizer.encode(header + text, add_special_tokens=False)
        ids = np.asarray(enc.ids, dtype=np.int64)
        offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
        outputs = np.zeros((len(ids), self.manifest.dimension), dtype=np.float32)
        tokens = 0
        for start, window in self._windows(ids):
            outputs[start : start + len(window)] = window
            tokens += len(window) + len(self.lead) + len(self.trail)
        return offsets, outputs, tokens

    def _windows(self, ids: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """`ids` cut into consecutive windows, each framed by the special tokens and run
        (`batch_size` windows a run, padded to the longest): each window's first token's
        position, and its own tokens' outputs (framing and padding left out)."""
        m = self.manifest
        session = self.runtime.session(DOCUMENTS)
        wanted = {i.name for i in session.get_inputs()}
        starts = list(range(0, len(ids), self.window))
        for at in range(0, len(starts), self.batch_size):
            batch = starts[at : at + self.batch_size]
            pieces = [[*self.lead, *ids[s : s + self.window].tolist(), *self.trail] for s in batch]
            width = max(len(p) for p in pieces)
            input_ids = np.full((len(pieces), width), m.pad_token_id, dtype=np.int64)
            mask = np.zeros((len(pieces), width), dtype=np.int64)
            for r, piece in enumerate(pieces):
                input_ids[r, : len(piece)] = piece
                mask[r, : len(piece)] = 1
            feeds = {
                "input_ids": input_ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(input_ids),
            }
            (hidden,) = session.run([m.output], {k: v for k, v in feeds.items() if k in wanted})
            for r, s in enumerate(batch):
                own = len(pieces[r]) - len(self.lead) - len(self.trail)
                yield s, np.asarray(hidden[r, len(self.lead) : len(self.lead) + own])


def _char_ranges(text: str, spans: Sequence[Span], shift: int) -> np.ndarray:
    """Each span's characters (start, end), from its first line's start to its last line's
    end (the newline left out), shifted by `shift`; an empty range for a span past the text."""
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    ends = [s - 1 for s in starts[1:]] + [len(text)]
    out = np.zeros((len(spans), 2), dtype=np.int64)
    for k, (first, last) in enumerate(spans):
        first, last = max(first, 1), min(last, len(starts))
        if first <= last:
            out[k] = (starts[first - 1] + shift, ends[last - 1] + shift)
    return out


def _token_ranges(offsets: np.ndarray, chars: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each character range (start, end), the tokens [lo, hi) that overlap it. Token
    offsets run forward through the text, so the tokens of a range are consecutive."""
    if len(offsets) > 1 and (np.diff(offsets[:, 0]) < 0).any():
        raise ValueError("the tokenizer's offsets do not run forward through the text")
    ends = np.maximum.accumulate(offsets[:, 1])
    lo = np.searchsorted(ends, chars[:, 0], side="right")
    hi = np.searchsorted(offsets[:, 0], chars[:, 1], side="left")
    empty = chars[:, 0] >= chars[:, 1]
    return lo, np.where(empty, lo, hi)


def pool_spans(
    text: str,
    spans: Sequence[Span],
    model_dir: str | Path | None = None,
    header: str = "",
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> FilePass:
    """One file's pass (`WholePass.pool`) with the model in `model_dir` (default: the bundled
    one), loaded for this call."""
    return WholePass(model_dir, batch_size).pool(text, spans, header)


def fill_project(
    db: Database,
    project_name: str,
    model_dir: str | Path | None = None,
    *,
    header: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    out: Any = None,
) -> PassReport:
    """Every chunk's and lone definition's vector of a project, pooled from its file's pass:
    the model recorded as a sweep with the local embedder records it (columns typed, identity
    in the meta), every vector written (those there replaced), then the HNSW indexes built as
    the vectors phase builds them after a first index. Prints its report (to `out`, default
    stdout) and returns it."""
    started = time.perf_counter()
    schema = Schema(project_name)
    passer = WholePass(model_dir, batch_size)
    identity = make_embedder(
        "local", str(passer.runtime.path), chunk_vectors=CHUNK_VECTORS_WHOLE
    ).identity
    chunks = definitions = unpooled = tokens = source_tokens = passed = 0
    with db.connection() as conn:
        store.set_embedding_dimension(conn, schema, identity.dimension)
        store.set_meta(conn, schema, "embedding", identity.to_dict())
        store.drop_vector_indexes(conn, schema)  # every vector is written again: no graph yet
        conn.commit()
        files = conn.execute(schema.sql(FILES)).fetchall()
        chunk_spans = _spans_by_file(conn, schema, CHUNK_SPANS)
        definition_spans = _spans_by_file(conn, schema, DEFINITION_SPANS)
        conn.rollback()
        for at in range(0, len(files), FILES_PER_ROUND):
            batch = files[at : at + FILES_PER_ROUND]
            lines = store.file_lines(conn, schema, [f[0] for f in batch])
            chunk_rows: list[dict[str, Any]] = []
            definition_rows: list[dict[str, Any]] = []
            for file_id, path, language in batch:
                items = chunk_spans.get(file_id, []) + definition_spans.get(file_id, [])
                if not items or file_id not in lines:
                    unpooled += len(items)
                    continue
                done = passer.pool(
                    "\n".join(lines[file_id]),
                    [span for _, span in items],
                    header_for(path, language) if header else "",
                )
                passed += 1
                tokens += done.tokens
                source_tokens += done.source_tokens
                split = len(chunk_spans.get(file_id, []))
                for k, ((item_id, _), vector) in enumerate(zip(items, done.vectors, strict=True)):
                    if vector is None:
                        unpooled += 1
                        continue
                    rows = chunk_rows if k < split else definition_rows
                    rows.append({"id": item_id, "embedding": vector})
            with conn.transaction(), conn.cursor() as cur:
                for statement, rows in (
                    (SET_CHUNK_EMBEDDING, chunk_rows),
                    (SET_DEFINITION_EMBEDDING, definition_rows),
                ):
                    if rows:
                        cur.executemany(schema.sql(statement), rows)
            conn.commit()
            chunks += len(chunk_rows)
            definitions += len(definition_rows)
            print(
                f"\r  whole pass: {min(at + FILES_PER_ROUND, len(files))}/{len(files)} files, "
                f"{chunks + definitions} vectors, {time.perf_counter() - started:.0f} s",
                end="",
                file=sys.stderr,
                flush=True,
            )
        print(file=sys.stderr)
        rows_in_all = store.chunk_count(conn, schema)
        memory = store.index_build_memory(rows_in_all, identity.dimension)
        store.build_vector_indexes(conn, schema, memory, max(0, free_cores() - 1))
        conn.commit()
        store.analyze_chunks(conn, schema)
        conn.commit()
    report = PassReport(
        passed,
        chunks,
        definitions,
        unpooled,
        tokens,
        source_tokens,
        time.perf_counter() - started,
    )
    print(report.describe(), file=out or sys.stdout)
    return report


def _spans_by_file(conn: Conn, schema: Schema, statement: str) -> dict[int, list[tuple[int, Span]]]:
    found: dict[int, list[tuple[int, Span]]] = {}
    for item_id, file_id, start, end in conn.execute(schema.sql(statement)):
        found.setdefault(file_id, []).append((item_id, (start, end)))
    return found


# `--whole-pass` in the evals: with the header in each file's first window (the default), or
# without it.
PASS_HEADER, PASS_BARE = "header", "bare"
PASS_CHOICES = (PASS_HEADER, PASS_BARE)


def pass_name(name: str, variant: str = PASS_HEADER) -> str:
    """The name of the whole pass's index beside the default index `name`."""
    return f"{name}_pass" if variant == PASS_HEADER else f"{name}_pass_{variant}"


def ensure_index(
    db: Database,
    project: Project,
    embedder: Embedder,
    corpus: str,
    cache: Path,
    *,
    variant: str = PASS_HEADER,
    options: SweepOptions | None = None,
    describe: dict[str, Any] | None = None,
) -> tuple[Project, dict[str, Any]]:
    """The whole pass's index over the roots of `project` (an eval's default index), and its
    manifest: a project of its own (`pass_name`, so the default index is never touched), swept
    model-free (rows only; an unchanged corpus is a walk), then filled by `fill_project` with
    `embedder`'s model (the local embedder of whole texts the eval embeds its queries with),
    unless its manifest (`cache/manifest-<name>.json`) says the same corpus (digest `corpus`),
    model and variant were filled and no row waits for its vector. `describe`: what else the
    manifest records of the index (the chunk size), matched too."""
    if variant not in PASS_CHOICES:
        raise ValueError(f"whole pass variant {variant!r}: expected one of {PASS_CHOICES}")
    model_dir = getattr(embedder, "path", None)
    filling = make_embedder(
        "local", None if model_dir is None else str(model_dir), chunk_vectors=CHUNK_VECTORS_WHOLE
    )
    if model_dir is None or filling.identity != embedder.identity:
        raise SystemExit(
            "the whole pass pools from the local model's pass over whole files: "
            f"{embedder.identity.describe()} is not that model as it embeds whole texts"
        )
    project = replace(project, name=pass_name(project.name, variant))
    path = cache / f"manifest-{project.name}.json"
    wanted = {
        "corpus": corpus,
        "model": embedder.identity.to_dict(),
        "whole_pass": {"header": variant == PASS_HEADER, "batch_size": DEFAULT_BATCH_SIZE},
        **(describe or {}),
    }
    old = json.loads(path.read_text()) if path.is_file() else {}
    print(f"index {project.name}: sweeping model-free ...", file=sys.stderr)
    started = time.perf_counter()
    report = sweep_project(db, project, None, options or SweepOptions(), progress=_progress)
    swept = time.perf_counter() - started
    print(file=sys.stderr)
    if report.files_failed:
        raise SystemExit(
            f"the eval index has {report.files_failed} failed files: {report.failures}"
        )
    schema = Schema(project.name)
    with db.connection() as conn:
        pending = store.pending_counts(conn, schema).total
        chunks = store.chunk_count(conn, schema)
        conn.rollback()
    if {k: old.get(k) for k in wanted} == wanted and not pending:
        print(f"index {project.name}: reusing its whole pass", file=sys.stderr)
        return project, {**old, "chunks": chunks}
    filled = fill_project(db, project.name, model_dir, header=variant == PASS_HEADER)
    manifest = {
        **wanted,
        "files": report.files_seen,
        "chunks": chunks,
        "skipped": report.skipped,
        "pass": filled.to_dict(),
        "sweep_seconds": round(swept, 1),
    }
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return project, manifest


def _progress(p: SweepProgress) -> None:
    if p.phase == "index" and p.files_total:
        print(
            f"\r  rows: {p.files_done}/{p.files_total} files, {p.chunks_written} chunks, "
            f"{p.elapsed:.0f} s",
            end="",
            file=sys.stderr,
            flush=True,
        )
