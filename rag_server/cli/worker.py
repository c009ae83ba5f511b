"""`code-rag worker`: fill the pending vectors of projects in the database with this machine's
embedder, beside the indexer (the loop is `rag_server.worker`)."""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from rag_server.cli.common import ConfigOption, settings_from, user_errors
from rag_server.cli.render import VectorPrinter, describe_vectors

if TYPE_CHECKING:
    from indexer.sweep import VectorReport

# What a second Ctrl-C (or SIGTERM) exits with: the batch in flight is dropped, not written.
EXIT_INTERRUPTED = 130


def worker(
    targets: Annotated[
        list[str],
        typer.Argument(
            help="Projects in the database (one or several), or all.", show_default=False
        ),
    ],
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            "--exit-when-done",
            help="Exit once nothing is left pending, instead of waiting for more.",
        ),
    ] = False,
    threads: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="The local model's threads (default: [embedding] threads; 0: every core).",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=4096,
            help="Texts claimed, embedded and written per transaction (default 128).",
            show_default=False,
        ),
    ] = None,
    poll: Annotated[
        float,
        typer.Option(min=0.05, help="Seconds between looks for work when there is none."),
    ] = 5.0,  # rag_server.worker.POLL_S
    config: ConfigOption = None,
) -> None:
    """Fill the pending vectors of projects in the database with this machine's embedder,
    beside the indexer and any other workers, until stopped (Ctrl-C, SIGTERM: after the
    batch in flight).

    Point [database] dsn at the indexer's PostgreSQL and set the same [embedding] model as
    the index; no projects file or source tree is needed. A project indexed with another
    model is refused (alone: exit 1; among several: skipped, said once); one with no model
    recorded (model-free) is skipped. Each batch is claimed in a transaction held while it
    is embedded: a worker that dies loses that batch only, and others take it up. Exit
    codes: 0 stopped, or done with --once; 1 error; 130 stopped at once (a second signal).

    Example: code-rag worker all --threads 4
    """
    import dataclasses

    from indexer.db import Database
    from rag_server.config import make_settings_embedder
    from rag_server.worker import Worker

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # the second: at once, the batch in flight rolled back
        stop.set()
        typer.echo("worker: stopping after the batch in flight (again to stop at once)", err=True)

    with user_errors():
        settings = settings_from(config)
        if threads is not None:
            embedding = dataclasses.replace(settings.embedding, threads=threads)
            settings = dataclasses.replace(settings, embedding=embedding)
        embedder = make_settings_embedder(settings)
        if embedder is None:
            typer.echo(
                "error: worker: [embedding] provider = none has no model to embed with: "
                "set the provider and model the index records",
                err=True,
            )
            raise typer.Exit(1)
        printer = VectorPrinter()

        def on_run(report: VectorReport) -> None:
            printer.done()
            if report.written or report.files_failed:
                typer.echo(describe_vectors(report))

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            db = Database(
                settings.database.dsn, settings.data_dir, application_name="code-rag worker"
            )
            with db.open():
                loop = Worker(
                    db,
                    embedder,
                    targets,
                    batch=batch,
                    poll_s=poll,
                    once=once,
                    stop=stop,
                    say=typer.echo,
                    on_run=on_run,
                    progress=printer,
                )
                cores = getattr(embedder, "threads", None)  # the local model's
                typer.echo(
                    f"worker {loop.participant.id}: {embedder.identity.describe()}"
                    + (f", {cores} threads" if cores else "")
                    + f", batches of {loop.batch}; filling "
                    + ("every project in the database" if loop.every else ", ".join(loop.names))
                )
                summary = loop.run()
        except KeyboardInterrupt:
            printer.done()
            typer.echo("worker: stopped at once; the batch in flight stays pending", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            embedder.close()
        printer.done()
        projects = len(summary.projects)
        typer.echo(
            f"worker: {'done' if once and not stop.is_set() else 'stopped'}; "
            f"{summary.written:,} vectors written ({summary.embedded:,} embedded) in "
            f"{projects} project{'' if projects == 1 else 's'}"
        )
