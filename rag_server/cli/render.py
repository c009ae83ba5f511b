"""What a person reads on a terminal: sweep progress, sweep reports and project status.

Progress is one line rewritten in place on a TTY, and a plain line every few seconds otherwise
(logs, CI), always on stderr so stdout stays for results.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from indexer.sweep import (
        EmbeddingWork,
        SweepProgress,
        SweepReport,
        VectorProgress,
        VectorReport,
    )

PLAIN_EVERY_SECONDS = 5.0


class _Progress:
    """One progress line: rewritten in place on a TTY, a plain line every few seconds (and
    the last one) otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.last_plain = 0.0
        self.width = 0

    def _update(self, text: str, last: bool) -> None:
        now = time.monotonic()
        if self.tty:
            self._line(text)
        elif now - self.last_plain >= PLAIN_EVERY_SECONDS or last:
            self.last_plain = now
            self._line(text, final=True)

    def done(self) -> None:
        self._clear()

    def _line(self, text: str, final: bool = False) -> None:
        if self.tty and not final:
            pad = max(self.width - len(text), 0)
            self.stream.write("\r" + text + " " * pad)
            self.width = len(text)
        else:
            self._clear()
            self.stream.write(text + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


class SweepPrinter(_Progress):
    """A sweep's progress: files done of all, files per second, chunks written."""

    def __call__(self, p: SweepProgress) -> None:
        if p.phase == "walk":
            self._line(f"{p.project}: {p.files_total:,} files to index", final=not self.tty)
            return
        if p.phase == "done":
            self._clear()
            return
        text = (
            f"{p.project}: {p.files_done:,}/{p.files_total:,} files  "
            f"{p.files_per_second:,.0f} files/s  {p.chunks_written:,} chunks"
        )
        self._update(text, last=p.files_done == p.files_total)


class VectorPrinter(_Progress):
    """Progress of the vectors a sweep left pending: done, left, rate, time left. In a stream
    of several projects, `place` says which (2/3) and `later` how many vectors the projects
    after it wait for: the time left for all of them is added at this project's rate."""

    def __init__(self, stream: TextIO | None = None, *, place: str = "", later: int = 0) -> None:
        super().__init__(stream)
        self.place = f" [{place}]" if place else ""
        self.later = later

    def __call__(self, p: VectorProgress) -> None:
        eta = p.eta_seconds
        left = "" if eta is None else f", about {_duration(eta)} left"
        if eta is not None and self.later:
            left += f" (all projects: about {_duration(eta + self.later / p.per_second)})"
        text = (
            f"{p.project}{self.place}: vectors {p.done:,} in, {p.pending:,} pending, "
            f"{p.per_second:,.1f}/s{left}"
        )
        self._update(text, last=not p.pending)


def _rows_progress(record: dict[str, Any] | None) -> str:
    """ ": 29,600 of 119,758 files read, 174 files/s, about 9 min left" for a sweep's rows."""
    if not record or not record.get("total"):
        return ""
    text = f": {record['done']:,} of {record['total']:,} files read"
    if record.get("per_second"):
        text += f", {record['per_second']:,.0f} files/s"
    if record.get("eta_seconds") is not None and record["done"] < record["total"]:
        text += f", about {_duration(record['eta_seconds'])} left"
    return text


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} bytes"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe_vectors(report: VectorReport) -> str:
    """One line for a finished run of the vectors a sweep left pending."""
    what = {
        "ok": "done",
        "partial": "done, some files failed",
        "stopped": "stopped",
        "failed": "failed",
    }.get(report.outcome, report.outcome)
    line = (
        f"{report.project}: vectors {what} — {report.chunks_embedded:,} chunks and "
        f"{report.definitions_embedded:,} definitions embedded, {report.reused:,} reused, "
        f"{report.files_failed:,} files failed, {report.pending:,} pending, "
        f"in {report.seconds:.1f} s"
    )
    return line + (f"\n  error: {report.error}" if report.error else "")


def describe_embedding_work(project: str, work: EmbeddingWork, *, exact: bool) -> str:
    """One line on what a sweep's files cost the model (`exact`: tokens by its tokenizer)."""
    how = "" if exact else ", estimated from characters"
    return (
        f"{project}: embedding work — {work.texts_per_chunk:.2f} texts embedded per chunk "
        f"({work.texts:,} for {work.chunks:,} chunks), {work.tokens_per_source_token:.2f} tokens "
        f"embedded per token of source ({work.tokens:,} of {work.source_tokens:,}{how})"
    )


def describe_report(report: SweepReport) -> str:
    """One line for a finished sweep."""
    total = report.seconds.get("total", 0.0)
    handled = report.files_changed + report.files_failed
    rate = f", {handled / total:,.0f} files/s" if total > 0 and handled else ""
    skipped = sum(report.skipped.values())
    unavailable = "".join(
        f"\n  root {r['repo']} unavailable ({r['reason']}): its files are kept"
        for r in report.roots_unavailable
    )
    vectors = (
        " (model-free: no vectors)"
        if report.model_free
        else f" ({report.chunks_embedded:,} embedded, {report.cache_hits:,} vectors from "
        f"cache), {report.definitions_embedded:,} definitions embedded alone"
    )
    return (
        f"{report.project}: {report.outcome} — {report.files_seen:,} files seen, "
        f"{report.files_changed:,} indexed, {report.files_unchanged:,} unchanged, "
        f"{report.files_deleted:,} deleted, {report.files_failed:,} failed, "
        f"{skipped:,} skipped; {report.chunks_written:,} chunks written{vectors}"
        + (
            f", {report.vectors_deferred:,} texts left to embed after the rows"
            if report.vectors_deferred
            else ""
        )
        + f" in {total:.1f} s{rate}{unavailable}"
    )


# What `up` says of a model-free configuration ([embedding] provider = none).
MODEL_FREE_LINE = (
    "embedding: none (model-free: search by keywords, exact names and verbatim identifiers; "
    "vectors off)"
)


def _when(value: str | None) -> str:
    return value.replace("T", " ").replace("+00:00", " UTC") if value else "never"


def format_status(status: dict[str, Any]) -> list[str]:
    """`./bld status` text for one project, from `ProjectStatus.to_dict()` (or the server's)."""
    name = status["project"]
    lines = [name]
    if not status.get("indexed"):
        lines.append(f"  not indexed yet: run ./bld scan {name}")
    model = status.get("embedding")
    if status.get("vectors") == "off":
        model_text = "none (model-free: vectors off)"
    elif model:
        model_text = f"{model['provider']} {model['model']} ({model['dimension']}-d"
        cut = model.get("document_tokens")
        model_text += f", first {cut} tokens of each text" if cut else ""
        from indexer.embed import CHUNK_VECTORS_WHOLE, DEFAULT_CHUNK_VECTORS

        # A record without the setting is of an index read whole (from before it).
        read = model.get("chunk_vectors", CHUNK_VECTORS_WHOLE)
        model_text += f", chunk_vectors = {read})" if read != DEFAULT_CHUNK_VECTORS else ")"
    else:
        model_text = "none yet"
    lines.append(
        f"  files {status['files']:,}   chunks {status['chunks']:,}   "
        f"failed {status['failed_files']:,}   model {model_text}"
    )
    repos = status.get("repos", [])
    lines.append("  roots:")
    width = max((len(r["repo"]) for r in repos), default=4)
    for r in repos:
        counts = f"{r['files']:>8,} files {r['chunks']:>9,} chunks"
        lines.append(f"    {r['repo']:<{width}}  {counts}  {r['path']}")
        if r.get("available") is False:
            lines.append(f"    {'':<{width}}  unavailable: {r['problem']} (its files are kept)")
    last = status.get("last_sweep")
    if not last:
        lines.append("  last sweep: never")
    else:
        took = f"{last['seconds']:.1f} s" if last.get("seconds") is not None else "unfinished"
        detail = (
            f"{last['files_changed']:,} indexed, {last['files_deleted']:,} deleted, "
            f"{last['files_failed']:,} failed"
        )
        lines.append(
            f"  last sweep: {_when(last['started_at'])}, {took}, {last['outcome']} ({detail})"
        )
        if last.get("error"):
            lines.append(f"    error: {last['error']}")
        for warning in last.get("warnings") or ():
            lines.append(f"    warning: {warning}")
    if status.get("vectors") == "off":
        lines.append(
            "  vectors: off — model-free ([embedding] provider = none): search ranks by "
            "keywords and names; set provider = local or ollama to embed the index"
        )
        kept = status.get("kept_embedding")
        if kept:
            lines.append(
                f"    kept from before, unused: vectors of {kept['provider']} {kept['model']} "
                f"({kept['dimension']}-d)"
            )
    pending = status.get("vectors_pending") or 0
    if pending:
        ready = status.get("vectors_ready")
        share = f" ({ready:.0%} of the index has its vectors)" if ready is not None else ""
        lines.append(f"  vectors pending: {pending:,}{share}")
        if status.get("vectors_running"):
            rate = status.get("vectors_per_second")
            eta = status.get("vectors_eta_seconds")
            lines.append(
                "    being embedded now"
                + (f", {rate:,.1f}/s" if rate else "")
                + (f", about {_duration(eta)} left" if eta is not None else "")
            )
        elif "vectors_running" not in status:
            lines.append("    the running server embeds them; ./bld scan embeds them now")
        elif not status.get("vectors_queued"):
            lines.append("    not being embedded now: the next sweep (or ./bld scan) goes on")
    lines.extend(_workers(status))
    last_vectors = status.get("last_vectors_run")
    if last_vectors and last_vectors.get("error"):
        lines.append(f"  vectors: {last_vectors['error']}")
    if status.get("next_sweep_at"):
        lines.append(f"  next sweep: {_when(status['next_sweep_at'])}")
    if status.get("sweep_running"):
        lines.append("  a sweep is running now" + _rows_progress(status.get("rows_progress")))
    if status.get("disk_bytes"):
        lines.append(f"  on disk: {_size(status['disk_bytes'])}")
    if status.get("watching"):
        pending = status.get("pending_changes") or 0
        lines.append(
            f"  file events: followed ({pending:,} pending, last change applied "
            f"{_when(status.get('last_change_at'))})"
        )
    elif status.get("watch_error"):
        lines.append(f"  file events: {status['watch_error']}")
    failures = status.get("failures") or []
    if failures:
        lines.append(f"  failures ({status['failed_files']:,}):")
        for f in failures:
            lines.append(f"    {f['repo']}/{f['path']}: {f['error']}")
    return lines


def _workers(status: dict[str, Any]) -> list[str]:
    """The processes filling the project's vectors now (`code-rag worker`, a server's phase,
    a scan), with their rates added up, one line each."""
    workers = status.get("workers") or []
    if not workers:
        return []
    busy = sum(1 for w in workers if w.get("state") == "embedding")
    rate = status.get("workers_per_second")
    lines = [
        f"  workers: {len(workers)} live, {busy} embedding"
        + (f", together {rate:,.1f} vectors/s" if rate else "")
    ]
    for w in workers:
        doing = f"embedding, {w['per_second']:,.1f}/s" if w["state"] == "embedding" else "idle"
        lines.append(
            f"    {w['host']} pid {w['pid']} ({w['role']}, {w['model']}): {doing}; "
            f"{w['written']:,} vectors written since {_when(w['started_at'])}, last seen "
            f"{_when(w['last_seen'])}"
        )
    return lines
