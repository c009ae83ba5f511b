"""The developer-questions eval: code-rag against the plain baseline on hand-written questions.

The corpus (sources.py) is indexed through the real sweep into its own project, one root per
library (the root's name is the library, so hits carry it as `repo`), in the embedded
PostgreSQL under `bench/.cache/questions` (gitignored), reused while the corpus and the model
are unchanged. The same files are windowed for the plain baseline (baseline.py). The questions
(questions.py) are validated before anything is scored. run.py calls `run`; it also runs alone:

    .venv/bin/python -m bench.eval.questions_eval                 # test split
    .venv/bin/python -m bench.eval.questions_eval --split tune
    .venv/bin/python -m bench.eval.questions_eval --ranks      # also each query's ranks
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.eval import sources
from bench.eval.baseline import PlainBaseline, corpus_windows, window_vectors
from bench.eval.compare import (
    CachedQueries,
    Gold,
    Scores,
    evaluate,
    group_table,
    paired,
    query_vectors,
    system_table,
)
from bench.eval.index import (
    chunker_config,
    ensure_index,
    model_suffix,
    open_database,
    prepare_dirs,
    rows_first_index,
    split_projects,
    whole_texts,
)
from bench.eval.questions import Question, ensure_valid
from bench.eval.whole_pass import ensure_index as ensure_pass_index
from indexer.embed import (
    Embedder,
    make_embedder,
)
from indexer.project import Project, Root
from indexer.search.fusion import DEFAULT_RANKING, Ranking
from indexer.sweep import SweepOptions


def project_for(
    libs: Sequence[sources.Library],
    root: Path,
    header: str,
    chunk_chars: int | None = None,
    embedder: Embedder | None = None,
) -> Project:
    name = f"questions_{header}" + (f"_c{chunk_chars}" if chunk_chars else "")
    name += model_suffix(embedder)
    return Project(name, tuple(Root(root / lib.name, lib.name) for lib in libs))


def golds_of(questions: Sequence[Question]) -> list[Gold]:
    return [
        Gold(
            q.qid,
            q.text,
            q.language,
            tuple((t.repo, t.path, t.start_line, t.end_line) for t in q.targets),
        )
        for q in questions
    ]


def run(
    model: Embedder,
    split: str = "test",
    limit: int = 0,
    ranking: Ranking = DEFAULT_RANKING,
    ef_search: int = 400,
    cache: Path = sources.CACHE,
    show_ranks: bool = False,
    chunk_chars: int | None = None,
    deep: list[dict[str, Any]] | None = None,
    projects: int = 1,
    rows_first: bool = False,
    whole_pass: str | None = None,
) -> None:
    """Index (or reuse), then print the system table, per language and per kind of question;
    with `projects` > 1, the libraries indexed as that many projects searched as one group;
    with `whole_pass` (a variant of `whole_pass.PASS_CHOICES`), an index of its own whose
    vectors are pooled from one pass of the model over each file."""
    questions = ensure_valid(cache=cache)
    libs, digest = sources.ensure_corpus(cache)
    root, _ = prepare_dirs(cache)
    files = [(lib.name, rel, root / lib.name / rel) for lib in libs for rel in lib.files]
    db = open_database(cache)
    try:
        project = project_for(libs, root, "chunker", chunk_chars, model)
        if whole_pass:
            project, manifest = ensure_pass_index(
                db,
                project,
                model,
                digest,
                cache,
                variant=whole_pass,
                options=SweepOptions(chunker=chunker_config(chunk_chars)),
                describe={"embedding_text": "chunker", "chunk_chars": chunk_chars},
            )
        else:
            manifest = ensure_index(db, project, model, digest, "chunker", chunk_chars, cache)
        searched = split_projects(db, project, projects)
        for part in searched if len(searched) > 1 else ():
            ensure_index(db, part, model, digest, "chunker", chunk_chars, cache)
        if rows_first:
            searched = [rows_first_index(db, project, model, chunk_chars)]
        windows = corpus_windows(files)
        plain = PlainBaseline(windows, window_vectors(whole_texts(model), windows, cache))
        vectors = query_vectors(model, (q.text for q in questions), cache)
        chosen = [q for q in questions if split in ("all", q.split)]
        if limit:
            chosen = chosen[:limit]
        golds = golds_of(chosen)
        print(
            f"\n# developer questions: {len(libs)} libraries, {manifest['files']} files, "
            f"{manifest['chunks']} code-rag chunks, {len(windows)} baseline windows; "
            f"{len(questions)} questions ({sum(q.split == 'tune' for q in questions)} tuning, "
            f"{sum(q.split == 'test' for q in questions)} test); model "
            f"{model.identity.describe()}"
            + (f"; searched as a group of {len(searched)} projects" if len(searched) > 1 else "")
            + ("; the index built rows first, vectors after" if rows_first else "")
            + (f"; vectors from one pass per file ({whole_pass})" if whole_pass else "")
        )
        cached = CachedQueries(model.identity, vectors)
        results = evaluate(db, searched, cached, plain, golds, ranking, ef_search, deep)
        print(f"\n## questions, {split} split, {len(golds)} queries, top_k 10\n")
        print(system_table(results))
        print("\n" + paired(results, "code-rag hybrid", "plain hybrid (RRF)"))
        print(f"\n## questions per language ({split} split)\n")
        print(group_table(results, [g.language for g in golds], "language"))
        print(f"\n## questions per kind ({split} split)\n")
        print(group_table(results, [q.kind for q in chosen], "kind"))
        if show_ranks:
            print(rank_table(results, chosen))
    finally:
        db.close()


def rank_table(results: dict[str, list[Scores]], chosen: Sequence[Question]) -> str:
    """Each query's rank in every system (- when not in the top 10), worst for code-rag first."""
    systems = list(results)
    lines = [
        "\n## ranks per query\n",
        "| id | kind | " + " | ".join(systems) + " | query |",
        "|---|---|" + "---:|" * len(systems) + "---|",
    ]

    def rank(system: str, i: int) -> int:
        r = results[system][i].ranks[0]
        return r if r is not None else 99

    order = sorted(range(len(chosen)), key=lambda i: (-rank("code-rag hybrid", i), chosen[i].qid))
    for i in order:
        cells = [str(r) if (r := rank(s, i)) != 99 else "-" for s in systems]
        lines.append(
            f"| {chosen[i].qid} | {chosen[i].kind} | {' | '.join(cells)} | {chosen[i].text} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("test", "tune", "all"), default="test")
    ap.add_argument("--limit", type=int, default=0, help="first N queries only")
    ap.add_argument("--ef-search", type=int, default=400)
    ap.add_argument("--cache", type=Path, default=sources.CACHE)
    ap.add_argument("--ranks", action="store_true", help="each query's rank in every system")
    ap.add_argument(
        "--projects", type=int, default=1, help="the libraries as this many projects, one group"
    )
    ap.add_argument("--model", default=None, help="a local model folder (default: the bundled)")
    args = ap.parse_args(argv)
    run(
        make_embedder("local", args.model),
        args.split,
        args.limit,
        ef_search=args.ef_search,
        cache=args.cache,
        show_ranks=args.ranks,
        projects=args.projects,
    )


if __name__ == "__main__":
    main()
