"""The embedding work a first index reports: the texts embedded per chunk written, and the tokens
embedded per token of the indexed source. With the bundled model both token counts are its
tokenizer's, exact; with Ollama (which tokenizes on its side) both are estimated from
characters. Embedding inline or rows first, then `embed_pending`, reports the same work."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from ollama_standin import OllamaStandin, ollama_standin
from test_sweep_bulk import FIXTURES

import indexer.sweep.write
from chunkers import chunk_file, embedding_text, lone_definitions
from indexer.db import Database
from indexer.embed import DEFAULT_CHUNK_VECTORS, count_tokens, estimate_tokens, make_embedder
from indexer.project import Project, Root
from indexer.sweep import SweepOptions, sweep_project, walk_project
from indexer.sweep.parts import content_hash, file_keys
from indexer.sweep.vectors import embed_pending

__all__ = ["ollama_standin"]

INLINE = SweepOptions(files_per_commit=4, defer_vectors=False)
ROWS_FIRST = SweepOptions(files_per_commit=4, defer_vectors=True)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(FIXTURES, root)
    return root


@pytest.fixture(scope="module")
def local() -> Any:
    return make_embedder("local")


def expected(project: Project) -> tuple[list[str], list[str], int]:
    """The files' texts, every distinct text a first index embeds as `[embedding]
    chunk_vectors` has it by default (each chunk and each definition no chunk speaks for, or
    the parts they are made of; one text per cache key), and the chunks, as the sweep makes
    them."""
    sources: list[str] = []
    texts: dict[str, str] = {}
    chunks = 0
    for cand in walk_project(project).files:
        data = cand.absolute.read_bytes()
        result = chunk_file(cand.path, data)
        if not result.chunks:
            continue
        sources.append(data.decode("utf-8"))
        chunks += len(result.chunks)
        lone = [definition for _, definition in lone_definitions(result)]
        keys = file_keys(DEFAULT_CHUNK_VECTORS, result.chunks, lone, result.text)
        items = zip((*keys.chunks, *keys.definitions), (*result.chunks, *lone), strict=True)
        for key, item in items:
            for part in keys.parts.get(key, (item,)):
                texts.setdefault(content_hash(part), embedding_text(part, cand.path))
    return sources, list(texts.values()), chunks


def test_a_first_index_reports_its_texts_per_chunk_and_tokens_by_the_models_tokenizer(
    database: Database, project_name: str, corpus: Path, local: Any
) -> None:
    project = Project(project_name, (Root(corpus, "shop"),))
    sources, texts, chunks = expected(project)
    tokenizer = local.runtime.tokenizer
    source_tokens = sum(len(tokenizer.encode(s, add_special_tokens=False).ids) for s in sources)
    text_tokens = sum(len(tokenizer.encode(t, add_special_tokens=False).ids) for t in texts)

    report = sweep_project(database, project, local, INLINE)
    work = report.embedding_work()

    assert (work.chunks, work.texts) == (chunks, len(texts))
    assert work.source_tokens == source_tokens
    assert work.tokens == text_tokens
    assert work.texts_per_chunk == pytest.approx(len(texts) / chunks)
    assert work.tokens_per_source_token == pytest.approx(text_tokens / source_tokens)
    # More texts than chunks: definitions no chunk speaks for are embedded alone.
    assert work.texts_per_chunk > 1.0
    assert report.to_dict()["embedding_work"]["tokens"] == text_tokens


def test_rows_first_then_the_vectors_report_the_same_work_as_an_inline_sweep(
    database: Database, project_name: str, corpus: Path, local: Any
) -> None:
    project = Project(project_name, (Root(corpus, "shop"),))
    _, texts, _ = expected(project)

    report = sweep_project(database, project, local, ROWS_FIRST)
    assert report.tokens_embedded == 0 and report.vectors_deferred == len(texts)
    vectors = embed_pending(database, project, local)
    work = report.embedding_work(
        vectors.chunks_embedded + vectors.definitions_embedded, vectors.tokens_embedded
    )

    assert work.texts == len(texts)
    assert work.tokens == count_tokens(local, texts)
    assert work.source_tokens == report.source_tokens > 0


def test_a_document_cut_reports_the_tokens_it_embeds_and_a_change_of_cut_re_embeds(
    database: Database, project_name: str, corpus: Path, local: Any
) -> None:
    # [embedding] document_tokens = 32: each text's first 32 tokens are embedded and counted;
    # going back to whole texts re-embeds every text (vectors of two depths never mix).
    project = Project(project_name, (Root(corpus, "shop"),))
    _, texts, _ = expected(project)
    lengths = [count_tokens(local, [t]) for t in texts]
    lean = make_embedder("local", document_tokens=32)

    cut = sweep_project(database, project, lean, INLINE)
    assert cut.embedding_work().tokens == sum(min(n, 32) for n in lengths)
    assert cut.embedding_work().texts == len(texts) and max(lengths) > 32

    whole = sweep_project(database, project, local, INLINE)
    assert whole.embedding_work().texts == len(texts)
    assert whole.embedding_work().tokens == sum(lengths)


def test_past_its_first_characters_a_sweep_counts_the_sources_tokens_on_a_sample(
    database: Database,
    project_name: str,
    corpus: Path,
    local: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counting every token of a large tree costs more than indexing it: past the first
    # characters (a few MB; here 1,000) one file in 16 by path is counted and the rest scaled.
    monkeypatch.setattr(indexer.sweep.write, "SOURCE_SAMPLE_CHARS", 1000)
    monkeypatch.setattr(indexer.sweep.write, "SOURCE_SAMPLE_EVERY", 3)
    for i in range(60):  # files of one kind, so that a sample speaks for all of them
        (corpus / f"gen_{i:02d}.py").write_text(
            "".join(
                f"def handler_{i}_{n}(request):\n    return request.reply({n})\n" for n in range(8)
            ),
            encoding="utf-8",
        )
    project = Project(project_name, (Root(corpus, "shop"),))
    sources, _, _ = expected(project)
    exact = count_tokens(local, sources)

    report = sweep_project(database, project, local, ROWS_FIRST)

    assert report.source_chars == sum(map(len, sources))
    assert 1000 <= report.source_sampled_chars < report.source_chars
    assert report.source_sampled_tokens < exact
    assert report.source_tokens == pytest.approx(exact, rel=0.1)


def test_with_ollama_tokens_are_estimated_from_characters_on_both_sides(
    database: Database, project_name: str, corpus: Path, ollama_standin: OllamaStandin
) -> None:
    project = Project(project_name, (Root(corpus, "shop"),))
    sources, texts, _ = expected(project)
    embedder = make_embedder("ollama", "nomic-embed-text:v1.5", ollama_standin.url)

    work = sweep_project(database, project, embedder, INLINE).embedding_work()

    assert work.source_tokens == estimate_tokens(sources)
    assert work.tokens == estimate_tokens(texts)
    assert estimate_tokens(["abcd", "ab"]) == 2 + 1  # 3 characters a token, rounded up
