"""The whole pass (bench/eval/whole_pass.py), an eval's index-side experiment: each file runs
through the real bundled model once, in consecutive windows framed by the special tokens, and a
span's vector is the mean of the outputs of exactly its lines' tokens, across windows; an index
swept model-free and filled so is complete (every chunk and lone definition a unit vector, the
model recorded as the local embedder's, its graphs built) and answers a vector search with the
default local embedder; the evals' index of it is a project of its own, reused while unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from cart_source import CART

from bench.eval.whole_pass import (
    PASS_BARE,
    WholePass,
    ensure_index,
    fill_project,
    header_for,
    pass_name,
)
from indexer.db import Database, Schema, store
from indexer.embed import make_embedder
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.sweep import SweepOptions, sweep_project

Conn = psycopg.Connection[Any]

# Long enough for three windows of 254 word pieces.
LONG = "\n".join(
    f"def scale_{i}(values, factor):\n"
    f"    # multiply each value by the factor, then add offset {i}\n"
    f"    return [v * factor + {i} for v in values]\n"
    for i in range(24)
)

GEOMETRY = '''import math


def circle_area(radius):
    """The area of a circle of this radius."""
    return math.pi * radius ** 2


def rectangle_perimeter(width, height):
    return 2 * (width + height)
'''
MAIL = '''import smtplib
from email.message import EmailMessage


def send_email(host, sender, recipient, subject, body):
    """Send a plain text email message through an SMTP server."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, recipient, subject
    message.set_content(body)
    with smtplib.SMTP(host) as server:
        server.send_message(message)
'''
FILES = {"shop/cart.py": CART, "geometry.py": GEOMETRY, "mail.py": MAIL}

VECTORS = """
SELECT 'chunk', embedding FROM {schema}.rag_chunk
UNION ALL
SELECT 'definition', embedding FROM {schema}.rag_symbol WHERE content_sha256 IS NOT NULL
"""


@pytest.fixture(scope="module")
def passer() -> WholePass:
    return WholePass()


def as_array(value: Any) -> np.ndarray:
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, np.float32)


def line_chars(text: str, first: int, last: int) -> tuple[int, int]:
    """The characters of lines first..last (1-based), the last newline left out."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: first - 1])
    end = sum(len(line) + 1 for line in lines[:last]) - 1
    return start, end


def line_of(text: str, char: int) -> int:
    return text.count("\n", 0, char) + 1


def test_spans_pool_exactly_their_lines_tokens_across_windows(passer: WholePass) -> None:
    offsets, outputs, run = passer.token_outputs(LONG)
    n = len(offsets)
    window = passer.window
    assert window == passer.manifest.max_tokens - 2 and n > 2 * window
    # Every token runs once, each window framed by [CLS] ... [SEP].
    assert run == n + 2 * math.ceil(n / window)
    ids = passer.tokenizer.encode(LONG, add_special_tokens=False).ids
    cls, sep = (passer.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]"))
    framed = np.asarray([[cls, *ids[window : 2 * window], sep]], np.int64)
    session = passer.runtime.session("documents")
    names = {i.name for i in session.get_inputs()}
    feeds = {
        "input_ids": framed,
        "attention_mask": np.ones_like(framed),
        "token_type_ids": np.zeros_like(framed),
    }
    (alone,) = session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in names})
    # The second window is the model's output for that window alone, framing left out.
    assert np.allclose(outputs[window : 2 * window], alone[0, 1:-1], atol=1e-6)

    crossing = line_of(LONG, int(offsets[window][0]))
    last = LONG.count("\n") + 1
    spans = [(1, 3), (crossing - 1, crossing + 1), (crossing + 4, last), (1, last), (4, 4)]
    spans.append((last + 5, last + 9))  # past the text
    pooled = passer.pool(LONG, spans)
    assert pooled.tokens == run and pooled.source_tokens == n
    for span, vector in zip(spans, pooled.vectors, strict=True):
        start, end = line_chars(LONG, *span) if span[0] <= last else (0, 0)
        mine = (offsets[:, 0] >= start) & (offsets[:, 1] <= end) & (end > start)
        if not mine.any():
            assert vector is None, span  # a blank line, or lines past the text
            continue
        if span[0] == crossing - 1:
            held = np.nonzero(mine)[0]
            assert held.min() < window <= held.max()  # the span crosses into the next window
        mean = outputs[mine].mean(axis=0)
        assert vector is not None
        assert np.allclose(vector, mean / np.linalg.norm(mean), atol=1e-5), span
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_the_header_opens_the_first_window_and_counts_in_no_span(passer: WholePass) -> None:
    header = header_for("pkg/scale.py", "python")
    assert header == "File: pkg/scale.py\nLanguage: python\n\n"
    n = passer.count_tokens(LONG)
    both = passer.count_tokens(header + LONG)
    pooled = passer.pool(LONG, [(1, 3)], header)
    assert pooled.source_tokens == n
    assert pooled.tokens == both + 2 * math.ceil(both / passer.window)
    offsets, outputs, _ = passer.token_outputs(LONG, header)
    start, end = line_chars(LONG, 1, 3)
    mine = (offsets[:, 0] >= start + len(header)) & (offsets[:, 1] <= end + len(header))
    mean = outputs[mine].mean(axis=0)
    assert np.allclose(pooled.vectors[0], mean / np.linalg.norm(mean), atol=1e-5)


def write_tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_model_free_index_filled_by_the_pass_is_complete_and_searchable(
    database: Database, conn: Conn, project_name: str, tmp_path: Path, passer: WholePass
) -> None:
    project = Project(project_name, (Root(write_tree(tmp_path / "code"), "code"),))
    swept = sweep_project(database, project, None, SweepOptions())
    assert swept.outcome == "ok" and swept.chunks_embedded == 0
    report = fill_project(database, project_name, None)
    schema = Schema(project_name)
    rows = conn.execute(schema.sql(VECTORS)).fetchall()
    kinds = [kind for kind, _ in rows]
    assert kinds.count("definition") > 0  # Cart's methods share a chunk: lone definitions
    assert (report.files, report.chunks, report.definitions, report.unpooled) == (
        len(FILES),
        kinds.count("chunk"),
        kinds.count("definition"),
        0,
    )
    for kind, vector in rows:
        assert vector is not None, kind
        assert abs(float(np.linalg.norm(as_array(vector))) - 1.0) < 1e-4, kind
    source = sum(passer.count_tokens(text) for text in FILES.values())
    assert report.source_tokens == source
    assert source < report.tokens <= source + len(FILES) * (2 + 16)  # framing and header
    local = make_embedder("local", chunk_vectors="whole")  # the whole texts it pools
    assert store.get_meta(conn, schema, "embedding") == local.identity.to_dict()
    assert store.pending_counts(conn, schema).total == 0
    assert not store.vector_indexes_missing(conn, schema)
    conn.rollback()
    for query, path, name in (
        ("compute the area of a circle given its radius", "geometry.py", "circle_area"),
        ("send an email message via an SMTP server", "mail.py", "send_email"),
    ):
        hits = search_code(database, project, local, query, mode="vector", by_file=False)
        assert hits and hits[0].path == path, (query, [(h.path, h.symbol) for h in hits])
        line = line_of(FILES[path], FILES[path].index(f"def {name}("))
        assert hits[0].start_line <= line <= hits[0].end_line


def test_the_evals_index_of_the_pass_is_its_own_project_reused_while_unchanged(
    database: Database, conn: Conn, project_name: str, tmp_path: Path
) -> None:
    root = write_tree(tmp_path / "code")
    cache = tmp_path / "cache"
    cache.mkdir()
    default = Project(project_name, (Root(root, "code"),))
    local = make_embedder("local", chunk_vectors="whole")  # the whole texts it pools
    bare = pass_name(project_name, PASS_BARE)
    try:
        project, manifest = ensure_index(database, default, local, "digest-1", cache)
        assert project.name == pass_name(project_name) == f"{project_name}_pass"
        assert not store.project_exists(conn, Schema(project_name))  # the default untouched
        written = json.loads((cache / f"manifest-{project.name}.json").read_text())
        assert written == manifest and manifest["pass"]["files"] == len(FILES)
        assert manifest["whole_pass"]["header"] is True
        # Unchanged: reused, nothing run through the model again.
        again, reused = ensure_index(database, default, local, "digest-1", cache)
        assert again == project and reused == manifest
        # A changed file is swept model-free, and the pass fills the project again.
        (root / "mail.py").write_text(MAIL.replace("plain text", "short"))
        _, refilled = ensure_index(database, default, local, "digest-2", cache)
        assert refilled["corpus"] == "digest-2"
        assert store.pending_counts(conn, Schema(project.name)).total == 0
        other, _ = ensure_index(database, default, local, "digest-2", cache, variant=PASS_BARE)
        assert other.name == bare and bare != project.name
    finally:
        conn.rollback()
        for name in (pass_name(project_name), bare):
            if store.project_exists(conn, Schema(name)):
                store.drop_project(conn, Schema(name))
        conn.commit()
