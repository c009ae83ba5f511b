"""The file-level eval's reference row: semble's ranking with no model, on the same questions.

semble (https://github.com/MinishLab/semble) publishes the file-level benchmark the issues
quote, and its ranking over BM25 alone, with no model, is the best model-free stack it
reports there. This runs that stack, as semble 0.7.0 ships it, over this eval's libraries and
questions and scores it exactly as code-rag is scored (score.py), so the two are read on one
scale: each library indexed by semble's own walker, chunker and BM25 text, each question asked
in its library only (semble_side.py has the details).

semble lives in a virtual environment of its own (`bench/.cache/semble`, made on first use
with `pip install semble==0.7.0`, or `--python` for another), never in code-rag's: nothing of
it is a dependency of the product. Two rows: the files of semble's first 10 hits as it returns
them (a file's further chunks decayed, not removed), and its ranking read one hit per file,
as code-rag serves by default. Files semble does not index (its default is code, so docs, and
shell scripts with no extension, are out) are counted, and `--against` reads code-rag's
per-query JSON of the same split (`run.py` or `model_free.py --json`) and scores its systems
beside semble's twice: on every target, and on the targets semble indexes only (a question
with none of those left out), so a file semble never reads costs neither side.

    .venv/bin/python -m bench.eval.files.semble_row --split test     # tune, unseen, every
    .venv/bin/python -m bench.eval.files.model_free --split test --json bench/.cache/mf.json
    .venv/bin/python -m bench.eval.files.semble_row --split test --against bench/.cache/mf.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.eval.files import questions as questions_module
from bench.eval.files.corpus import CACHE
from bench.eval.files.questions import Question
from bench.eval.files.run import group_table, summary_table
from bench.eval.files.score import score

SEMBLE = "semble==0.7.0"
SIDE = Path(__file__).with_name("semble_side.py")
SYSTEMS = {
    "semble, no model (as returned)": "returned",
    "semble, no model, one hit per file": "by_file",
}
SPLITS = ("tune", "test", "unseen")


def semble_python(venv: Path) -> Path:
    """The interpreter of a virtual environment holding semble, made (or mended) on first use."""
    python = venv / "bin" / "python"
    has_semble = [str(python), "-c", "import semble"]
    if python.exists() and subprocess.run(has_semble, capture_output=True).returncode == 0:
        return python
    print(f"making {venv} with {SEMBLE} (once)", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SEMBLE], check=True)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(
            f"could not install {SEMBLE} into {venv} ({exc}): pip needs a package index; "
            "or pass --python an interpreter that has semble"
        ) from exc
    return python


def answers(python: Path, corpus: Path, chosen: Sequence[Question], work: Path) -> dict:
    request, out = work / "request.json", work / "answers.json"
    work.mkdir(parents=True, exist_ok=True)
    rows = [{"id": q.qid, "repo": q.repo, "text": q.text} for q in chosen]
    request.write_text(json.dumps({"corpus": str(corpus), "questions": rows}))
    subprocess.run([str(python), str(SIDE), str(request), str(out)], check=True)
    return json.loads(out.read_text())


def files_by_system(chosen: Sequence[Question], got: dict, against: dict | None) -> dict:
    """Each system's files per question, semble's and (from `against`) code-rag's."""
    out = {
        system: {q.qid: got["answers"][q.qid][key] for q in chosen}
        for system, key in SYSTEMS.items()
    }
    theirs = {row["id"]: row["systems"] for row in (against or {}).get("questions", [])}
    for system in next(iter(theirs.values()), {}):
        if system.startswith("code-rag"):
            out[system] = {q.qid: theirs[q.qid][system]["files"] for q in chosen}
    return out


def report(chosen: Sequence[Question], got: dict, split: str, against: dict | None) -> str:
    files = files_by_system(chosen, got, against)
    indexed = {repo: set(paths) for repo, paths in got["indexed"].items()}
    seen = {q.qid: [t for t in q.targets if t in indexed.get(q.repo, set())] for q in chosen}
    scored = [q for q in chosen if seen[q.qid]]
    every = {s: [score(f[q.qid], q.targets) for q in chosen] for s, f in files.items()}
    read = {s: [score(f[q.qid], seen[q.qid]) for q in scored] for s, f in files.items()}
    total = sum(len(q.targets) for q in chosen)
    missing = total - sum(len(seen[q.qid]) for q in chosen)
    return "\n\n".join(
        [
            f"## {split}: {len(chosen)} questions",
            summary_table(every),
            group_table(every, [q.kind for q in chosen], "kind"),
            group_table(every, [q.language for q in chosen], "language"),
            f"target files semble does not index: {missing} of {total}; on the targets it "
            f"indexes ({len(scored)} questions):",
            summary_table(read),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=(*SPLITS, "every"), default="test")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--python", type=Path, default=None, help="an interpreter with semble")
    ap.add_argument("--against", type=Path, default=None, help="code-rag's --json of the split")
    args = ap.parse_args(argv)
    questions, corpus = questions_module.ensure_valid(args.cache)
    python = args.python or semble_python(args.cache.parent / "semble")
    splits = SPLITS if args.split == "every" else (args.split,)
    chosen = [q for q in questions if q.split in splits]
    against = json.loads(args.against.read_text()) if args.against else None
    if against and args.split != against["split"]:
        ap.error(f"--against holds the {against['split']} split, not {args.split}")
    got = answers(python, corpus.root, chosen, args.cache / "semble")
    for split in splits:
        print(report([q for q in chosen if q.split == split], got, split, against) + "\n")


if __name__ == "__main__":
    main()
