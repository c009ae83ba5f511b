"""Who looks at the pages: a signed session cookie, the forms' CSRF tokens, and the rate limit
on signing in.

Signing in takes the server token or a token made by `code-rag token add`. The cookie that follows
holds no token: only who signed in ("server", or the SHA-256 digest a made token is kept by),
a CSRF value and an expiry, signed with HMAC-SHA256 under a key derived from the server token
(every server sharing that token, replicas included, reads it; a new server token signs every
session out). A made token's digest is looked up on every request, so a revoke counts at the
next page, as it does at the next MCP call. Nothing is written anywhere: a read replica serves
the pages as they are.

Every form that changes state carries a CSRF value: the session's, or before signing in the
one of a short-lived cookie of its own (double submit). Both cookies are HttpOnly and
SameSite=Strict. Sign-in refusals are one answer whatever the reason, throttling included.
"""

from __future__ import annotations

import base64
import binascii
import collections
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass

import psycopg

from indexer.db import Database, tokens
from indexer.errors import RagError
from rag_server import access
from rag_server.config import Settings

log = logging.getLogger("code_rag.web")

SESSION_COOKIE = "code_rag_session"
CSRF_COOKIE = "code_rag_csrf"
COOKIE_PATH = "/web"
SESSION_SECONDS = 8 * 3600  # a working day; signing in again takes one paste
CSRF_SECONDS = 3600  # the sign-in form's own value
CSRF_FIELD = "csrf"
SERVER = "server"
# Sign-in attempts that fail, per client address, within the window; beyond it every attempt
# is refused (the same answer as a wrong token) until the oldest failure leaves the window.
MAX_FAILURES = 10
FAILURE_WINDOW_S = 60.0
_KEY_CONTEXT = b"code-rag web session v1"


def session_key(server_token: str) -> bytes:
    """The key sessions are signed with: derived from the server token, never stored."""
    return hmac.new(server_token.encode(), _KEY_CONTEXT, hashlib.sha256).digest()


def new_csrf() -> str:
    return secrets.token_urlsafe(24)


def same(a: str | None, b: str | None) -> bool:
    """Two secrets compared in constant time; an absent or empty one never matches."""
    return bool(a) and bool(b) and hmac.compare_digest(str(a).encode(), str(b).encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Session:
    """What a session cookie says: who signed in (SERVER or a token digest in hex), the CSRF
    value of its forms, and when it ends (Unix seconds)."""

    who: str
    csrf: str
    expires: int

    def seal(self, key: bytes) -> str:
        payload = _b64(json.dumps({"w": self.who, "c": self.csrf, "e": self.expires}).encode())
        signature = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
        return f"{payload}.{signature}"

    @classmethod
    def start(cls, who: str, now: float | None = None) -> Session:
        at = time.time() if now is None else now
        return cls(who, new_csrf(), int(at) + SESSION_SECONDS)

    @classmethod
    def open(cls, sealed: str | None, key: bytes, now: float | None = None) -> Session | None:
        """The session `sealed` holds when its signature is good and it has not expired."""
        if not sealed or sealed.count(".") != 1 or len(sealed) > 1024:
            return None
        payload, signature = sealed.split(".")
        expected = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        try:
            data = json.loads(_unb64(payload))
            session = cls(str(data["w"]), str(data["c"]), int(data["e"]))
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        return session if session.expires > (time.time() if now is None else now) else None


@dataclass(frozen=True)
class Viewer:
    """Who is signed in: the server token (`target` None: everything), or a made token (its
    name and target)."""

    session: Session
    name: str | None = None
    target: str | None = None

    @property
    def is_server(self) -> bool:
        return self.target is None

    def describe(self, settings: Settings) -> str:
        if self.is_server:
            return "the server token (every project and group)"
        assert self.target is not None
        return f"token {self.name}: {access.describe_target(settings, self.target)}"

    def opens(self, settings: Settings, endpoint: str) -> bool:
        """Whether the pages of `endpoint` are this viewer's, as the MCP endpoint's would be."""
        if self.target is None:
            members = settings.members(endpoint)
            return members is not None and all(m in settings.projects for m in members)
        return access.covers(settings, self.target, endpoint)

    def endpoints(self, settings: Settings) -> list[str]:
        """The projects and groups this viewer sees, in the configuration's order."""
        if self.target is None:
            return [n for n in (*settings.projects, *settings.groups) if self.opens(settings, n)]
        return access.endpoints_opened(settings, self.target)


def viewer_of(session: Session | None, db: Database) -> Viewer | None:
    """The viewer a session stands for now: a made token must still exist (a revoke counts at
    once). A token table that cannot be read signs such a session out (the log says why); a
    server-token session needs no look-up. Blocking: run it off the event loop."""
    if session is None:
        return None
    if session.who == SERVER:
        return Viewer(session)
    try:
        digest = bytes.fromhex(session.who)
    except ValueError:
        return None
    try:
        with db.reading("checking a session", access.CHECK_TIMEOUT_MS) as conn:
            holder = tokens.find_token(conn, digest)
    except (RagError, psycopg.Error) as exc:
        log.warning("a page session was refused, unchecked: %s", getattr(exc, "message", exc))
        return None
    if holder is None:
        return None
    return Viewer(session, holder.name, holder.target)


def sign_in(given: str, server_token: str, db: Database, settings: Settings) -> str | None:
    """Who `given` is: SERVER, a made token's digest (hex) when its target is configured, or
    None. Blocking: run it off the event loop."""
    if given and hmac.compare_digest(given.encode(), server_token.encode()):
        return SERVER  # compared in constant time, as the guard compares it
    if not given or len(given) > 256:
        return None
    try:
        holder = access.token_holder(db, given)
    except RagError as exc:
        log.warning("a sign-in with a token other than the server's was refused: %s", exc.message)
        return None
    if holder is None or settings.members(holder.target) is None:
        return None
    return access.token_digest(given).hex()


class SignInLimiter:
    """At most MAX_FAILURES failed sign-ins per client address within FAILURE_WINDOW_S; the
    caller refuses every attempt while `blocked` says so, with the answer a wrong token gets."""

    def __init__(
        self, max_failures: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._lock = threading.Lock()
        self._failures: dict[str, collections.deque[float]] = {}

    def _recent(self, client: str, at: float) -> collections.deque[float]:
        seen = self._failures.setdefault(client, collections.deque())
        while seen and at - seen[0] >= self.window_s:
            seen.popleft()
        return seen

    def blocked(self, client: str) -> bool:
        with self._lock:
            return len(self._recent(client, time.monotonic())) >= self.max_failures

    def failed(self, client: str) -> None:
        with self._lock:
            at = time.monotonic()
            self._recent(client, at).append(at)
            if len(self._failures) > 10_000:  # many addresses: keep those with recent failures
                for name in [c for c, s in self._failures.items() if not self._recent(c, at)]:
                    del self._failures[name]
