"""Time as the index reports it: aware UTC datetimes, written as ISO 8601 to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None) -> str | None:
    """ "2026-11-22T23:09:42+00:00", or None for no moment."""
    return None if moment is None else moment.isoformat(timespec="seconds")


def now_iso() -> str:
    return now().isoformat(timespec="seconds")
