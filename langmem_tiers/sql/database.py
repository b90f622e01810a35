"""One database handle for everything that keeps rows: the store and the SQL message log.

:class:`Database` takes what the user gives (an ``sqlite3.Connection``, a psycopg
connection or pool, sync or async), picks the dialect and the I/O, runs flows with the
sync or async driver, maps driver errors to :class:`~langmem_tiers.errors.BackendError`,
with the backend :func:`backend_for` finds for the connection.
:func:`open_connection` opens a connection from a URL.

Example:
    >>> db = Database(open_connection("sqlite:///:memory:"))
    >>> db.dialect.name, db.is_async
    ('sqlite', False)
"""

from __future__ import annotations

import asyncio
import re
import select
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings

from langmem_tiers.config import default_data_dir
from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    InvalidStateError,
    LangmemTiersError,
    MissingDependencyError,
)
from langmem_tiers.sql.backends import SqliteFile, SqliteIO, loaded_classes
from langmem_tiers.sql.dialect import Dialect, PostgresDialect, SqliteDialect
from langmem_tiers.sql.flow import Flow, arun, arun_blocking, run
from langmem_tiers.sql.postgres_io import AsyncPostgresIO, PostgresIO

__all__ = [
    "Backend",
    "Database",
    "backend_for",
    "open_async_connection",
    "open_connection",
    "parse_url",
    "redact_url",
]

T = TypeVar("T")


class Backend(NamedTuple):
    """What a connection is: its dialect and the I/O that runs flows on it (one of the two
    set: blocking, or awaitable for async psycopg connections and pools)."""

    dialect: Dialect
    sync_io: Any
    async_io: Any


def backend_for(
    conn: Any, embeddings: Embeddings | None = None, qdrant: Any | None = None
) -> Backend:
    """The backend of ``conn``: an ``sqlite3.Connection``, or a psycopg connection or pool,
    sync or async (``embeddings`` and ``qdrant`` go to its I/O).

    Example:
        >>> backend = backend_for(sqlite3.connect(":memory:", isolation_level=None))
        >>> backend.dialect.name, backend.async_io is None
        ('sqlite', True)
    """
    if isinstance(conn, sqlite3.Connection):
        try:
            return Backend(SqliteDialect(), SqliteIO(conn, embeddings, qdrant), None)
        except sqlite3.Error as err:
            raise BackendError(
                f"the SQLite connection cannot be used for writing ({err}); open it on a "
                "file whose directory is writable."
            ) from err
    asynchronous = loaded_classes("psycopg", "AsyncConnection") + loaded_classes(
        "psycopg_pool", "AsyncConnectionPool"
    )
    if isinstance(conn, asynchronous):
        return Backend(PostgresDialect(), None, AsyncPostgresIO(conn, embeddings, qdrant))
    if isinstance(
        conn,
        loaded_classes("psycopg", "Connection") + loaded_classes("psycopg_pool", "ConnectionPool"),
    ):
        return Backend(PostgresDialect(), PostgresIO(conn, embeddings, qdrant), None)
    raise ConfigurationError(
        f"conn must be a sqlite3.Connection or a psycopg connection or pool, got "
        f"{type(conn).__name__}; or open one from a URL (from_url)."
    )


class Database:
    """A connection (or pool) with its dialect and its sync/async drivers."""

    def __init__(
        self, conn: Any, *, embeddings: Embeddings | None = None, qdrant: Any | None = None
    ) -> None:
        self.conn = conn
        self._loop: asyncio.AbstractEventLoop | None = None
        backend = backend_for(conn, embeddings, qdrant)
        self.dialect: Dialect = backend.dialect
        self.sync_io: Any = backend.sync_io
        self.async_io: Any = backend.async_io

    @property
    def is_async(self) -> bool:
        """Whether the connection is an async one (sync calls then go through its loop)."""
        return self.async_io is not None

    def run(self, flow: Flow[T]) -> T:
        """Drive a flow with blocking I/O."""
        if self.sync_io is None:
            return self._run_on_loop(flow)
        try:
            return run(flow, self.sync_io)
        except LangmemTiersError:
            raise
        except Exception as err:
            raise backend_error(err) from err

    async def arun(self, flow: Flow[T]) -> T:
        """Drive a flow with awaitable I/O (a worker thread for sync connections)."""
        try:
            if self.sync_io is not None:
                return await arun_blocking(flow, self.sync_io)
            self._loop = asyncio.get_running_loop()
            assert self.async_io is not None
            return await arun(flow, self.async_io)
        except LangmemTiersError:
            raise
        except Exception as err:
            raise backend_error(err) from err

    def on_own_loop(self) -> bool:
        """Whether the caller runs on the event loop this async connection belongs to.

        A store opened with an async connection but not used yet has no loop of its own:
        any running loop counts, since that is where its first await would run.
        """
        if not self.is_async:
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._loop is None or running is self._loop

    def _run_on_loop(self, flow: Flow[T]) -> T:
        if self.on_own_loop():
            raise InvalidStateError(
                "sync methods cannot run on the event loop of an async connection: they "
                "would wait for the loop they block. Use the async methods instead, e.g. "
                "`await store.aput(...)` for `store.put(...)`."
            )
        loop = self._loop
        if loop is None or not loop.is_running():
            raise ConfigurationError(
                "this was opened with an async connection; use the async methods "
                "(aput, asearch, ...) or open it with a sync connection."
            )
        return asyncio.run_coroutine_threadsafe(self.arun(flow), loop).result()


def backend_error(err: Exception) -> Exception:
    """Driver errors become BackendError; programming errors stay what they are."""
    db_error = isinstance(err, sqlite3.Error) or type(err).__module__.startswith(
        ("psycopg", "qdrant_client", "grpc", "httpx", "httpcore")
    )
    if isinstance(err, (ValueError, TypeError, LookupError)) and not db_error:
        return err
    hint = _hint(err)
    return BackendError(
        f"the database failed: {type(err).__name__}: {err}" + (f"\nHint: {hint}" if hint else "")
    )


# A PostgreSQL URL with its own search_path (`?options=-c%20search_path%3Dmyschema`) fails
# in two ways before the first table exists; each gets what to do.
_SEARCH_PATH_EXAMPLE = "?options=-c%20search_path%3Dmyschema,public"


def _hint(err: Exception) -> str | None:
    """What to do about a database error a user's setup causes, or None."""
    state = getattr(err, "sqlstate", None)
    text = str(err)
    if state == "3F000" and "no schema has been selected" in text:
        return (
            "the search_path of the connection names no schema that exists. Create the "
            "schema first (CREATE SCHEMA myschema;) or fix the URL's search_path, e.g. "
            f"{_SEARCH_PATH_EXAMPLE}."
        )
    if state == "42704" and 'type "vector" does not exist' in text:
        return (
            "pgvector's vector type is not on the search_path: it lives in the schema the "
            "extension was created in (usually public). Keep that schema on the path after "
            f"your own, e.g. {_SEARCH_PATH_EXAMPLE}; or, if pgvector is not installed, run "
            "CREATE EXTENSION vector; as a superuser."
        )
    return None


# -- opening from a URL --------------------------------------------------------------------


# libpq's key=value form ("host=db dbname=app"), which psycopg takes as well as URLs.
_CONNINFO = re.compile(r"^\s*\w+\s*=")


def parse_url(url: str | None) -> tuple[str, str]:
    """``("sqlite", path)`` or ``("postgres", url)``; ``None`` is the embedded default file."""
    if url is None:
        directory = default_data_dir()
        directory.mkdir(parents=True, exist_ok=True)
        return "sqlite", str(directory / "memory.db")
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise ConfigurationError(
                f"url {url!r} names no file; use sqlite:///path/to/memory.db or sqlite:///:memory:."
            )
        return "sqlite", path
    scheme = urlsplit(url).scheme
    if scheme in ("postgresql", "postgres") or _CONNINFO.match(url):
        return "postgres", url
    raise ConfigurationError(
        f"url {url!r} has an unknown scheme {scheme!r}; use sqlite:///path.db, "
        "postgresql://user@host:5432/db, or leave it out for the embedded default."
    )


# A search's nested-loop plan is costed above PostgreSQL's jit_above_cost, and compiling
# it took longer than running the statement (EXPLAIN ANALYZE). Connections the store opens
# from a URL turn JIT off; a pool you pass keeps your settings.
_SESSION_SETUP = "SET jit = off"


def _configure_postgres(conn: Any) -> None:
    conn.execute(_SESSION_SETUP)


async def _aconfigure_postgres(conn: Any) -> None:
    await conn.execute(_SESSION_SETUP)


def _has_news(conn: Any) -> bool:
    """Whether an idle pooled connection may be unusable: closed, or its socket has bytes to
    read. A healthy idle PostgreSQL session sends nothing (the store never LISTENs); a server
    that ends it (shutdown, ``pg_terminate_backend``, idle timeout) sends its reason, then
    closes, both of which make the socket readable."""
    if conn.closed:
        return True
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except Exception:  # any failure to look means: check it for real
        return True
    return bool(readable)


def _pool_check(pool_cls: Any) -> Any:
    """The pool's check on checkout: its own round trip only for a connection that may be
    unusable, so a healthy one costs a local poll of its socket instead of a statement."""

    def check(conn: Any) -> None:
        if _has_news(conn):
            pool_cls.check_connection(conn)

    return check


def _async_pool_check(pool_cls: Any) -> Any:
    """Async twin of :func:`_pool_check`."""

    async def check(conn: Any) -> None:
        if _has_news(conn):
            await pool_cls.check_connection(conn)

    return check


def open_connection(url: str | None, *, pool_size: int = 4) -> Any:
    """A blocking connection for ``url``: an sqlite3 connection or a psycopg pool (owned by the caller)."""
    kind, target = parse_url(url)
    if kind == "sqlite":
        return _open_sqlite(target)
    pool_cls = _psycopg_pool("ConnectionPool")
    _probe(target)
    return pool_cls(
        target,
        min_size=1,
        max_size=pool_size,
        kwargs={"autocommit": True},
        open=True,
        check=_pool_check(pool_cls),
        configure=_configure_postgres,
    )


async def open_async_connection(url: str | None, *, pool_size: int = 4) -> Any:
    """Async twin of :func:`open_connection`: PostgreSQL gets an async pool."""
    kind, target = parse_url(url)
    if kind == "sqlite":
        return await asyncio.to_thread(_open_sqlite, target)
    pool_cls = _psycopg_pool("AsyncConnectionPool")
    await _aprobe(target)
    pool = pool_cls(
        target,
        min_size=1,
        max_size=pool_size,
        kwargs={"autocommit": True},
        open=False,
        check=_async_pool_check(pool_cls),
        configure=_aconfigure_postgres,
    )
    await pool.open()
    return pool


async def aclose(resource: Any) -> None:
    """Close a sync or async resource."""
    result = resource.close()
    if asyncio.iscoroutine(result):
        await result


# Seconds to wait for the server when the URL does not say (libpq's own default is forever).
PROBE_TIMEOUT = 5


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``.

    Example:
        >>> redact_url("postgresql://bob:s3cret@db:5432/app")
        'postgresql://bob:***@db:5432/app'
    """
    if _CONNINFO.match(url):
        return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _connect_kwargs(url: str) -> dict[str, Any]:
    return {} if "connect_timeout=" in url else {"connect_timeout": PROBE_TIMEOUT}


def _unreachable(url: str, err: Exception) -> BackendError:
    reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return BackendError(
        f"cannot connect to PostgreSQL at {redact_url(url)}: {reason}. Check the URL's host, "
        "port, user, password and database name, that the server is running, and that the "
        "database exists (create it with `createdb NAME` or CREATE DATABASE)."
    )


def _probe(url: str) -> None:
    """Open and close one connection, so a wrong URL fails now with the server's reason.

    A pool only logs why its connections fail and reports a timeout when its wait ends.
    """
    import psycopg

    try:
        psycopg.connect(url, autocommit=True, **_connect_kwargs(url)).close()
    except psycopg.Error as err:
        raise _unreachable(url, err) from err


async def _aprobe(url: str) -> None:
    """Async twin of :func:`_probe`."""
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True, **_connect_kwargs(url))
    except psycopg.Error as err:
        raise _unreachable(url, err) from err
    await conn.close()


def _open_sqlite(path: str) -> sqlite3.Connection:
    """A configured connection to the SQLite file ``path``; a clear error when it cannot be."""
    if path != ":memory:":
        target = Path(path).expanduser()
        if target.is_dir():
            raise ConfigurationError(
                f"the SQLite path {path!r} is a directory; name a file, e.g. "
                f"sqlite:///{target / 'memory.db'}."
            )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigurationError(
                f"cannot create the directory {str(target.parent)!r} of the SQLite file "
                f"{path!r} ({err.strerror or err}); a part of it may be a file. Choose a path "
                "whose parent is, or can be made, a writable directory."
            ) from err
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, factory=SqliteFile
        )
        # The first statements write (WAL mode): a file that cannot be created or
        # written fails here rather than at the first put.
        SqliteIO.configure(conn)
    except sqlite3.Error as err:
        if conn is not None:
            conn.close()
        raise BackendError(
            f"cannot open the SQLite database {path!r} for writing ({err}); check that the "
            "file and its directory exist and are writable (a read-only file system cannot "
            "hold it), or choose another path."
        ) from err
    return conn


def _psycopg_pool(name: str) -> Any:
    try:
        import psycopg_pool
    except ImportError as err:
        raise MissingDependencyError("The PostgreSQL backend", "postgres", "psycopg-pool") from err
    return getattr(psycopg_pool, name)
