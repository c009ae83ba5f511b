"""semble's model-free ranking over the file-level eval's libraries, run inside semble's venv.

Not imported by code-rag: `semble_row.py` runs this file with the interpreter of a virtual
environment that holds `semble` (and nothing of code-rag's), handing it a request (the corpus
folder and each question's id, library and text) and reading back each question's files.
It uses the standard library and semble only.

Each library is indexed the way `semble` indexes a folder (its file walker and its default
content, code; its tree-sitter chunker; its BM25 text, which adds the file stem twice and the
last three folder names), and each question is ranked by semble's search with the model left
out: BM25 over the library, its scores as reciprocal ranks, then its whole ranking stack (a
file's further matching chunks, a name the query writes, file stems sharing the query's
words, penalties for tests, examples and compat folders, one file's repeated chunks decayed).
That is the row semble's authors publish as "BM25 with semble's ranking, no model".

    python semble_side.py REQUEST.json OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from semble.chunking import chunk_source
from semble.index.bm25 import BM25
from semble.index.file_walker import walk_files
from semble.index.files import detect_language, get_extensions, read_file_text
from semble.index.sparse import enrich_for_bm25
from semble.index.types import make_chunk_id
from semble.ranking import apply_query_boost, boost_multi_chunk_files, rerank_topk
from semble.search import _rrf_scores, _search_bm25
from semble.tokens import tokenize
from semble.types import Chunk, ContentType

K = 10
CANDIDATES = 5 * K  # semble's over-fetch: five times the hits asked for
DEEP = 200  # ranked chunks read to list files one hit each


def index_library(root: Path) -> tuple[BM25, list[Chunk]]:
    bm25, chunks, ids = BM25.empty(), [], []
    for path in walk_files(root, get_extensions([ContentType.CODE])):
        rel = path.relative_to(root).as_posix()
        source = read_file_text(path)
        for slot, chunk in enumerate(chunk_source(source, rel, detect_language(path))):
            ids.append(make_chunk_id(rel, slot))
            bm25.add_document(ids[-1], tokenize(enrich_for_bm25(chunk)))
            chunks.append(chunk)
    bm25.set_doc_order(ids)
    return bm25, chunks


def ask(bm25: BM25, chunks: list[Chunk], text: str) -> tuple[list[str], list[str]]:
    """The files of semble's first K hits as returned, and its ranking's files one hit each."""
    hits = _search_bm25(text, bm25, chunks, CANDIDATES, None)
    scores = {c: s for c, s in _rrf_scores({h.chunk: h.score for h in hits}).items() if s}
    boost_multi_chunk_files(scores)
    scores = apply_query_boost(scores, text, chunks)
    returned = [c.file_path for c, _ in rerank_topk(scores, K, penalise_paths=True)]
    by_file: list[str] = []
    for chunk, _ in rerank_topk(scores, DEEP, penalise_paths=True):
        if chunk.file_path not in by_file:
            by_file.append(chunk.file_path)
    return returned, by_file[:K]


def main(request_path: str, out_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    root = Path(request["corpus"])
    answers: dict[str, dict[str, list[str]]] = {}
    indexed: dict[str, list[str]] = {}
    for repo in sorted({q["repo"] for q in request["questions"]}):
        bm25, chunks = index_library(root / repo)
        indexed[repo] = sorted({c.file_path for c in chunks})
        print(
            f"  semble: {repo}, {len(indexed[repo])} files, {len(chunks)} chunks", file=sys.stderr
        )
        for q in request["questions"]:
            if q["repo"] == repo:
                returned, by_file = ask(bm25, chunks, q["text"])
                answers[q["id"]] = {"returned": returned, "by_file": by_file}
    Path(out_path).write_text(json.dumps({"answers": answers, "indexed": indexed}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
