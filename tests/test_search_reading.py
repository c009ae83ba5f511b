"""A long query (a bug report, a traceback, a log) is read as an engineer reads it: the
template around the report left out, the files its frames and paths name looked up and
lifted at the named line, tests and docs asked for by its title alone, data and markup files
below code. Pure reading first, then search over a real index (model-free and with vectors).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from indexer.db import Conn, Schema
from indexer.project import Project, Root
from indexer.search import search_code
from indexer.search.fusion import DEFAULT_RANKING, Ranking
from indexer.search.reading import (
    MAX_MENTIONS,
    Mention,
    best_tail,
    mentions,
    read_query,
    report_text,
    without_template,
)
from indexer.sweep import SweepOptions, sweep_project
from tests.ollama_standin import OllamaStandin, ollama_standin
from tests.test_search import stored_project, swept, unit, write

__all__ = ["ollama_standin"]

LONG = DEFAULT_RANKING  # reads a query of 400 characters or more as a report

REPORT = """\
### zip() fails when the path holds a parenthesis

<!-- Thanks for reporting! Please search the existing issues and read the docs first. -->

- [x] I read the [contribution guidelines](https://github.com/acme/shop/blob/main/CONTRIBUTING.md)
- [x] I searched for existing issues

### Describe the bug

Calling `zip(path: "./Build (1)/App.xcarchive")` raises an error since 2.190:

```
/Users/me/.gem/ruby/2.7.2/gems/shop-2.190.0/lib/shop/actions/zip.rb:6:in `run'
/Users/me/.gem/ruby/2.7.2/gems/shop-2.190.0/lib/shop/runner.rb:4:in `execute'
```

See https://example.com/some/page for the screenshot.
"""


def test_the_template_around_a_report_is_left_out_and_its_words_kept() -> None:
    text = report_text(without_template(REPORT))
    assert text.startswith("zip() fails when the path holds a parenthesis\n")
    for gone in ("Thanks for reporting", "I searched", "Describe the bug", "https://", "###"):
        assert gone not in text
    assert 'zip(path: "./Build (1)/App.xcarchive")' in text
    assert "lib/shop/actions/zip.rb:6" in text


def test_a_short_query_is_read_as_it_is() -> None:
    query = "where is the zip action's path escaped"
    reading = read_query(query, LONG)
    assert (reading.text, reading.asking, reading.mentions) == (query, query, ())
    assert not reading.demote_data
    assert reading.verbatim  # its identifiers are looked for verbatim
    # Off by the ranking: a report is read as it is too.
    off = read_query(REPORT, Ranking(long_query_chars=0))
    assert (off.text, off.mentions) == (REPORT, ())


def test_a_long_query_asks_by_its_title_and_names_its_frames() -> None:
    reading = read_query(REPORT, LONG)
    assert reading.asking == "### zip() fails when the path holds a parenthesis"
    assert reading.demote_data
    assert not reading.verbatim  # a report names identifiers in passing: none is lifted
    # The checklist's link to CONTRIBUTING.md went with the checklist, and it is markup.
    assert reading.mentions == (
        Mention("/Users/me/.gem/ruby/2.7.2/gems/shop-2.190.0/lib/shop/actions/zip.rb", 6),
        Mention("/Users/me/.gem/ruby/2.7.2/gems/shop-2.190.0/lib/shop/runner.rb", 4),
    )


def test_frames_paths_and_links_of_every_usual_shape_are_named() -> None:
    text = """\
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/shop/cart.py", line 88, in total
    at com.acme.shop.Cart.total(Cart.java:40)
thread 'main' panicked at src/main.rs:7:5:
goroutine 1 [running]:
main.main()
\t/home/ci/go/src/github.com/acme/shop/pkg/cart/cart.go:120 +0x1d
see https://github.com/acme/shop/blob/4f2a9c1/src/cart/total.ts#L31 and config.yml, README.md
again: /usr/lib/python3.11/site-packages/shop/cart.py:90
"""
    assert mentions(text) == (
        Mention("/usr/lib/python3.11/site-packages/shop/cart.py", 88),
        Mention("Cart.java", 40),
        Mention("src/main.rs", 7),
        Mention("/home/ci/go/src/github.com/acme/shop/pkg/cart/cart.go", 120),
        Mention("src/cart/total.ts", 31),
    )
    many = "\n".join(f"lib/m{n}.rb:{n}" for n in range(1, 40))
    assert len(mentions(many)) == MAX_MENTIONS
    assert mentions(many)[0] == Mention("lib/m1.rb", 1)


def test_a_mention_picks_the_files_sharing_the_longest_tail_of_its_path() -> None:
    paths = ["lib/shop/actions/zip.rb", "lib/shop/zip.rb", "spec/zip.rb", "zip.rb"]
    frame = Mention("/gems/shop-2.1/lib/shop/actions/zip.rb", 6)
    assert best_tail(frame, paths) == ["lib/shop/actions/zip.rb"]
    # A path whose folders are not the index's names only a file at the root by that name.
    assert best_tail(Mention("other/zip.rb"), paths) == ["zip.rb"]
    assert best_tail(Mention("other/zip.rb"), paths[:3]) == []
    # A name alone names every file so called, unless more than three are.
    assert best_tail(Mention("zip.rb"), paths[:3]) == paths[:3]
    assert best_tail(Mention("zip.rb"), paths) == []
    assert best_tail(Mention(".../shop/zip.rb"), paths) == ["lib/shop/zip.rb"]


# A project in which the report's words are in the docs and the issue template, and the code
# the traceback names shares few of them.
ZIP_ACTION = """\
module Shop
  class ZipAction
    # Zips the build product at the path; the path may hold a parenthesis.
    def run(params)
      archive = params.fetch(:path)
      system("zip -r #{archive}.zip #{archive}")
    end
  end
end
"""
RUNNER = """\
module Shop
  class Runner
    def execute(action, params)
      action.new.run(params)
    end
  end
end
"""
TEMPLATE = """\
# Bug report

Describe the bug. Calling zip with a path that holds a parenthesis raises an error?
Please search the existing issues and read the contribution guidelines first.
"""
GUIDE = """\
zip:
  description: zip a build product; the path may hold a parenthesis
  error: raises an error when zip fails
"""


def project_with_report_words(root: Path) -> None:
    write(root, "lib/shop/actions/zip.rb", ZIP_ACTION)
    write(root, "lib/shop/runner.rb", RUNNER)
    write(root, ".github/ISSUE_TEMPLATE/bug_report.md", TEMPLATE)
    write(root, "config/actions.yml", GUIDE)
    for n in range(8):
        write(
            root,
            f"lib/shop/util_{n}.rb",
            f"module Shop\n  def self.util_{n}\n    {n}\n  end\nend\n",
        )


def model_free(database: Any, name: str, root: Path) -> Project:
    project = Project(name, (Root(root, "app"),))
    sweep_project(database, project, None, SweepOptions())
    return project


def test_a_report_finds_the_file_its_traceback_names_at_the_named_line(
    database: Any, project_name: str, work_dir: Path
) -> None:
    root = work_dir / "src"
    project_with_report_words(root)
    project = model_free(database, project_name, root)
    as_it_is = search_code(database, project, None, REPORT, ranking=Ranking(long_query_chars=0))
    assert as_it_is[0].path == ".github/ISSUE_TEMPLATE/bug_report.md"  # the template's words
    read = search_code(database, project, None, REPORT, top_k=20, ranking=LONG)
    assert [h.path for h in read[:2]] == ["lib/shop/actions/zip.rb", "lib/shop/runner.rb"]
    assert read[0].start_line <= 6 <= read[0].end_line
    # Data and markup files come after the code.
    paths = [h.path for h in read]
    assert paths.index("config/actions.yml") > paths.index("lib/shop/runner.rb")
    assert paths.index(".github/ISSUE_TEMPLATE/bug_report.md") > paths.index("lib/shop/runner.rb")


def test_a_report_demotes_data_and_markup_and_asks_for_tests_by_its_title(
    database: Any, project_name: str, work_dir: Path, ollama_standin: OllamaStandin
) -> None:
    root = work_dir / "src"
    project_with_report_words(root)
    write(
        root,
        "spec/zip_spec.rb",
        "describe 'zip' do\n  it 'zips a path with a parenthesis' do\n  end\nend\n",
    )
    project, embedder = swept(database, project_name, root, ollama_standin)
    # No frame: the report's words alone, with a test named in passing in its body.
    body = (
        "zip fails when the path holds a parenthesis\n\n"
        + "Calling zip with a path that holds a parenthesis raises an error. " * 6
        + "\nThe specs do not cover it; the docs do not say.\n"
    )
    assert len(body) >= 400
    plain = search_code(database, project, embedder, body, ranking=Ranking(long_query_chars=0))
    read = search_code(database, project, embedder, body, ranking=LONG)
    # As it is, the body's "specs" and "docs" ask for every role and the template and the
    # configuration hold every word; read as a report, the code comes first.
    assert plain[0].path == ".github/ISSUE_TEMPLATE/bug_report.md"
    assert [h.path for h in plain].index("lib/shop/actions/zip.rb") > 2
    assert [h.path for h in read[:2]] == [
        "lib/shop/actions/zip.rb",
        ".github/ISSUE_TEMPLATE/bug_report.md",
    ]
    # The spec, not asked for, counts for less; named after the title's word, it earns some
    # of that (`evidence.py`) and comes before the configuration.
    assert [h.path for h in read[2:4]] == ["spec/zip_spec.rb", "config/actions.yml"]
    unnamed = replace(LONG, long_title_path=0.0)
    without = search_code(database, project, embedder, body, ranking=unnamed)
    assert [h.path for h in without[2:4]] == ["config/actions.yml", "spec/zip_spec.rb"]
    # A title that asks for the tests gets them first.
    asking = "the tests of zip with a parenthesis in the path\n\n" + body
    tests_first = search_code(database, project, embedder, asking, ranking=LONG)
    assert tests_first[0].path == "spec/zip_spec.rb"


def test_a_report_gets_every_hit_it_asks_for_when_that_many_files_hold_its_words(
    database: Any, conn: Conn, project_name: str
) -> None:
    # 60 files hold the report's common words, 2 its rare one. With a match budget the rare
    # word covers alone, the keyword side would find 2 files; asked for 20, it widens.
    rng = np.random.default_rng(5)
    files = {
        f"lib/m{i}.rb": [(1, 3, "flush the write buffer" + (" quokka" if i < 2 else ""), unit(rng))]
        for i in range(60)
    }
    project = stored_project(conn, project_name, files)
    conn.execute(Schema(project_name).sql("ANALYZE {schema}.rag_chunk"))
    conn.commit()
    report = (
        "quokka: flush loses the write buffer\n\n"
        + "When the buffer is flushed twice the second write is lost. " * 8
    )
    assert len(report) >= DEFAULT_RANKING.long_query_chars
    ranking = replace(DEFAULT_RANKING, match_rows=3)
    hits = search_code(database, project, None, report, top_k=20, ranking=ranking)
    assert len(hits) == 20
    assert {h.path for h in hits[:2]} == {"lib/m0.rb", "lib/m1.rb"}
