"""What a report's files earn beyond their best chunk (`indexer/search/evidence.py`): the file
whose name the report's title writes, and the file many of whose chunks the report meets,
come up among the files a long query is answered with. Pure functions first, then search
over a real model-free index.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from indexer.search import search_code
from indexer.search.evidence import add_report_evidence, stem_words, title_words
from indexer.search.fusion import DEFAULT_RANKING
from tests.test_search import write
from tests.test_search_reading import model_free

OFF = replace(DEFAULT_RANKING, long_file_sum=0.0, long_title_path=0.0)


def test_a_title_names_its_words_in_their_forms() -> None:
    words = title_words("Zsh completion broken for `cp` when files are copied")
    assert {"zsh", "completion", "cp", "files", "file", "copied", "copy"} <= words
    assert "for" not in words and "when" not in words  # function words name nothing


def test_a_path_says_its_stem_unless_the_stem_says_nothing() -> None:
    assert stem_words("src/uu/cp/src/cp.rs") == ("cp",)
    assert stem_words("lib/fluent/system_config.rb") == ("system", "config")
    assert stem_words("spec/zip_spec.rb") == ("zip",)  # a spec of zip is named zip
    assert stem_words("pkg/find/find_test.go") == ("find",)
    assert stem_words("src/PhpSpreadsheet/Style/NumberFormat.php") == ("number", "format")
    # `mod.rs`, `index.ts` say nothing of what they hold.
    assert stem_words("crates/ruff_linter/src/rules/mod.rs") == ()
    assert stem_words("src/index.ts") == ()


def test_a_file_gains_its_summed_score_and_its_title_words_in_its_path() -> None:
    ranking = replace(OFF, long_file_sum=0.2, long_title_path=0.3)
    # Chunks 1-3 of file a (one strong, two weak), 4 of b, 5-6 of c (c/cp.rs).
    scores = {1: 0.9, 2: 0.2, 3: 0.2, 4: 0.8, 5: 0.5, 6: 0.1}
    file_of = {1: "a", 2: "a", 3: "a", 4: "b", 5: "c", 6: "c"}
    paths = {1: "lib/a.rs", 2: "lib/a.rs", 3: "lib/a.rs", 4: "lib/b.rs", 5: "src/cp.rs"}
    add_report_evidence(scores, file_of, paths, "completion broken for cp", ranking)
    most = 0.9 + 0.2 + 0.2
    assert scores[1] == pytest.approx(0.9 + 0.2)  # the most summed: the whole share
    assert scores[4] == pytest.approx(0.8 + 0.2 * 0.8 / most)
    assert scores[5] == pytest.approx(0.5 + 0.2 * 0.6 / most + 0.3)  # its stem named
    assert (scores[2], scores[3], scores[6]) == (0.2, 0.2, 0.1)  # a file's best chunk only
    # A file that counts for less for this query (data, markup, a test not asked for) earns
    # less by as much.
    again = {4: 0.8, 5: 0.5}
    add_report_evidence(again, file_of, paths, "completion broken for cp", ranking, {5})
    assert again[5] == pytest.approx(0.5 + DEFAULT_RANKING.demote * (0.2 * 0.5 / 0.8 + 0.3))
    # Off, nothing moves.
    before = {1: 0.9, 4: 0.8}
    add_report_evidence(before, file_of, paths, "completion broken for cp", OFF)
    assert before == {1: 0.9, 4: 0.8}


CP = """\
pub fn uu_app() -> Command {
    Command::new("cp")
        .about("Copy SOURCE to DEST")
        .arg(Arg::new("paths").num_args(1..))
}
"""
MV = """\
pub fn uu_app() -> Command {
    Command::new("mv")
        .about("Move SOURCE to DEST")
        .arg(Arg::new("paths").num_args(1..).value_hint(ValueHint::AnyPath))
}
"""
COMPLETIONS = """\
/// Writes the zsh completion of a utility: its flags, and its paths completed by the shell.
pub fn zsh_completion(app: &Command, out: &mut dyn Write) {
    generate(Zsh, app, "zsh completion", out);
}
"""
REPORT = """\
Zsh completion broken for `cp`

After installing, the zsh completion for the utility seems broken. When I type the
utility with a file and press Tab, zsh suggests only the flags, and I have to type the
target path without completion. This does not seem to be the case with `mv`, whose paths
complete, and I haven't found it anywhere else either: the flags complete, the paths do not.
Installed from the distribution's package, with the shell's own completion turned on.
"""


def test_the_file_a_title_names_comes_up_among_a_reports_files(
    database: Any, project_name: str, work_dir: Path
) -> None:
    root = work_dir / "src"
    write(root, "src/uu/cp/src/cp.rs", CP)
    write(root, "src/uu/mv/src/mv.rs", MV)
    write(root, "src/uucore/src/completion.rs", COMPLETIONS)
    for n in range(6):
        write(root, f"src/uu/tool{n}/src/tool{n}.rs", f"pub fn tool_{n}() -> u8 {{ {n} }}\n")
    project = model_free(database, project_name, root)
    assert len(REPORT) >= DEFAULT_RANKING.long_query_chars

    def paths(ranking: Any) -> list[str]:
        return [h.path for h in search_code(database, project, None, REPORT, ranking=ranking)]

    off, on = paths(OFF), paths(DEFAULT_RANKING)
    # The report's words are `mv`'s as much as `cp`'s; its title names `cp` (and the
    # completion, whose file leads either way).
    assert off == ["src/uucore/src/completion.rs", "src/uu/mv/src/mv.rs", "src/uu/cp/src/cp.rs"]
    assert on == ["src/uucore/src/completion.rs", "src/uu/cp/src/cp.rs", "src/uu/mv/src/mv.rs"]
