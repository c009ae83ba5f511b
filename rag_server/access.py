"""Who may call which endpoint: the tokens made for a project or a group, and what each opens.

A token made by `code-rag token add <project|group>` is kept only as its SHA-256 digest, in the
shared schema ("code-rag".access_token, `indexer.db.tokens`), and looked up by that digest on
every request: an add or a revoke counts at the next request of every server on the database,
with nothing cached to go stale. Such a token opens the MCP endpoints whose projects all lie
within its target's projects, both resolved against the configuration of the moment (a target
no longer configured opens nothing), and never the admin endpoint. No web framework here: the
CLI makes, lists and revokes tokens with this module alone; `auth.py` is the server's glue.

Why a plain SHA-256 and no salt or slow KDF: a token is 32 random bytes, so no dictionary or
precomputed table covers it and guessing one from its digest means searching 2**256 values; a
salt or a KDF only slows the guessing of secrets people choose. The bare digest is also what
makes the check one look-up in a unique index.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
from collections.abc import Iterator
from datetime import timedelta

import psycopg

from indexer.clock import now
from indexer.db import AccessToken, Conn, Database, tokens
from indexer.errors import (
    DatabaseError,
    InvalidArgument,
    ProjectNotFound,
    TokenNameTaken,
    TokenNotFound,
)
from rag_server.config import Settings

log = logging.getLogger("code_rag.auth")

TOKEN_BYTES = 32  # secrets.token_urlsafe: 43 characters, 256 random bits
TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_DEFAULT_NAMES = 1000  # <target>, <target>-2, ... <target>-1000
# A request waits at most this long for its token's row; a stuck database refuses instead.
CHECK_TIMEOUT_MS = 5_000
TOUCH_EVERY = timedelta(minutes=1)  # last use is kept to the minute


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


# --- which endpoints a token opens -----------------------------------------------------------


def covers(settings: Settings, target: str, endpoint: str) -> bool:
    """Whether a token made for `target` opens the MCP endpoint `endpoint`: both are configured
    and every project the endpoint serves is one of the target's."""
    granted = settings.members(target)
    wanted = settings.members(endpoint)
    return granted is not None and wanted is not None and set(wanted) <= set(granted)


def endpoints_opened(settings: Settings, target: str) -> list[str]:
    """The endpoints a token made for `target` opens now: the target first, then the projects
    and the groups it covers, in the configuration's order."""
    opened = [
        name for name in (*settings.projects, *settings.groups) if covers(settings, target, name)
    ]
    return sorted(opened, key=lambda name: name != target)


def describe_target(settings: Settings, target: str) -> str:
    if target in settings.projects:
        return f"project {target}"
    if target in settings.groups:
        return f"group {target} ({', '.join(settings.groups[target])})"
    return f"{target} (no longer configured: opens nothing)"


def check_target(settings: Settings, target: str) -> None:
    """Refuse a target that is neither a project nor a group of the configuration."""
    if settings.members(target) is None:
        projects = ", ".join(sorted(settings.projects)) or "none"
        groups = ", ".join(sorted(settings.groups)) or "none"
        raise ProjectNotFound(
            f"unknown project or group {target!r}: {settings.projects_path} configures the "
            f"projects {projects} and the groups {groups}; a token is made for one of those"
        )


# --- the table ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _token_table(db: Database, what: str, timeout_ms: int | None = None) -> Iterator[Conn]:
    """A connection for the token table, committed at the end; its absence said plainly."""
    reading = db.reading(what) if timeout_ms is None else db.reading(what, timeout_ms)
    with reading as conn:
        try:
            yield conn
        except psycopg.errors.UndefinedTable:
            raise DatabaseError(
                f'{what}: the table "code-rag".access_token is missing, and this database user '
                "may not create it: run any code-rag command once as a user that may (the "
                "database's owner), or use the server token"
            ) from None


def _default_names(target: str) -> Iterator[str]:
    yield target
    for n in range(2, MAX_DEFAULT_NAMES + 1):
        yield f"{target}-{n}"


def add_token(
    db: Database, settings: Settings, target: str, name: str | None = None
) -> tuple[AccessToken, str]:
    """Make a token for the project or group `target` and keep its digest under `name` (by
    default the target's name, made unique with -2, -3, ...); return it with the token, which
    exists nowhere else from then on."""
    check_target(settings, target)
    if name is not None and not TOKEN_NAME.fullmatch(name):
        raise InvalidArgument(
            f"token name {name!r} is not valid: use up to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or a digit"
        )
    token = new_token()
    digest = token_digest(token)
    with _token_table(db, "keeping the new token") as conn:
        for candidate in [name] if name is not None else _default_names(target):
            kept = tokens.add_token(conn, candidate, digest, target)
            if kept is not None:
                return kept, token
    if name is not None:
        raise TokenNameTaken(
            f"a token is named {name!r} already: choose another --name, or revoke that one "
            f"first (code-rag token revoke {name})"
        )
    raise TokenNameTaken(
        f"the names {target} to {target}-{MAX_DEFAULT_NAMES} are all taken: choose one with --name"
    )


def list_tokens(db: Database) -> list[AccessToken]:
    with _token_table(db, "reading the tokens") as conn:
        return tokens.list_tokens(conn)


def revoke_token(db: Database, name: str) -> AccessToken:
    """Forget the token `name`: from the next request on, it opens nothing."""
    with _token_table(db, "revoking the token") as conn:
        gone = tokens.revoke_token(conn, name)
    if gone is None:
        raise TokenNotFound(f"no token is named {name!r}: code-rag token list shows their names")
    return gone


def token_holder(db: Database, token: str) -> AccessToken | None:
    """The kept token that `token` is, or None; its use is recorded (at most once a minute)."""
    with _token_table(db, "checking a token", CHECK_TIMEOUT_MS) as conn:
        found = tokens.find_token(conn, token_digest(token))
        if found is not None and (
            found.last_used_at is None or now() - found.last_used_at >= TOUCH_EVERY
        ):
            try:
                with conn.transaction():
                    tokens.touch_token(conn, found.name)
            except psycopg.Error as exc:  # a note only: the token is good all the same
                log.info("the last use of token %r was not recorded: %s", found.name, exc)
    return found
