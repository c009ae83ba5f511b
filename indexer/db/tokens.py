"""Access tokens made for a project or a group, kept as their SHA-256 digests in the shared
schema ("code-rag".access_token): each function runs one statement of `statements.py`. What a
token opens, and how one is made and checked, is the server's (`rag_server/access.py`).
"""

from __future__ import annotations

from indexer.db import statements
from indexer.db.rows import AccessToken
from indexer.db.schema import Conn, typed_rows


def add_token(conn: Conn, name: str, digest: bytes, target: str) -> AccessToken | None:
    """Keep a token by its digest under `name`; None (and nothing written) when the name is
    taken."""
    found = typed_rows(
        conn, AccessToken, statements.TOKEN_ADD, {"name": name, "digest": digest, "target": target}
    )
    return found[0] if found else None


def list_tokens(conn: Conn) -> list[AccessToken]:
    """Every token kept, oldest first."""
    return typed_rows(conn, AccessToken, statements.TOKEN_LIST)


def find_token(conn: Conn, digest: bytes) -> AccessToken | None:
    """The token whose digest is `digest` (one look-up in the unique index), or None."""
    found = typed_rows(conn, AccessToken, statements.TOKEN_FIND, {"digest": digest})
    return found[0] if found else None


def touch_token(conn: Conn, name: str) -> None:
    """Record that the token `name` was used now (to the minute)."""
    conn.execute(statements.TOKEN_TOUCH, {"name": name})


def revoke_token(conn: Conn, name: str) -> AccessToken | None:
    """Forget the token `name`; what it was, or None when there is no such token."""
    found = typed_rows(conn, AccessToken, statements.TOKEN_REVOKE, {"name": name})
    return found[0] if found else None
