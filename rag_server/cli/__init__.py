"""The `code-rag` command line (`./bld` in a checkout): a thin Typer shell over the functions
the server uses.

Each command parses its options, calls into the packages, prints one clear line on a known
error (`RagError`, through `common.user_errors`) and exits non-zero. Tracebacks are for bugs,
never for user mistakes. A command imports what it uses inside its function, so it pays for no
web framework, HTTP client or sweep it does not run (tests/test_cli_imports.py). This face
assembles the commands, in the order `--help` lists them:

    index.py        scan, status, reindex
    search.py       search
    navigation.py   symbols, outline, grep, refs
    serve.py        init, serve, up
    develop.py      test, check
    db.py, model.py the `db` and `model` command groups
    tokens.py       the `token` command group: tokens for one project or one group
    worker.py       worker: fills pending vectors beside the indexer, here or elsewhere
    common.py       the shared options, opening the database, our errors as one line
    render.py       what a person reads on a terminal: progress, reports, status
    admin_client.py the calls to the running server's admin endpoint
"""

from __future__ import annotations

import gc
import logging

import typer

from rag_server.cli import develop, index, navigation, search, serve, worker
from rag_server.cli.db import db_app
from rag_server.cli.model import model_app
from rag_server.cli.tokens import token_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="code-rag",
    help="code-rag: local code search for coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(db_app, name="db")
app.add_typer(model_app, name="model")
app.add_typer(token_app, name="token")

for command in (
    index.scan,
    index.status,
    index.reindex,
    search.search,
    navigation.symbols,
    navigation.outline,
    navigation.grep,
    navigation.refs,
    serve.init,
    worker.worker,
):
    app.command()(command)
app.command(context_settings=develop.PASS_THROUGH)(develop.test)
app.command()(develop.check)
app.command()(serve.serve)
app.command()(serve.up)


def main() -> None:
    # The collector's full passes walk every object the imports made (modules, classes,
    # functions: they live as long as the process), and at exit it walks them all again to
    # free them: a sixth to a fifth of a one-shot command's processor time. Frozen, they are
    # never walked and go with the process; what the command made is frozen on the way out.
    gc.freeze()
    # The pool narrates connections it discards (a server that went away); the command's own
    # `error:` line says what happened and what to do.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        app(prog_name="code-rag")
    finally:
        gc.freeze()
