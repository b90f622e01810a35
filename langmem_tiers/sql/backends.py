"""The I/O seam: how each backend executes the requests of a flow.

* :class:`SqliteIO`: one ``sqlite3`` connection guarded by a lock; transactions are
  ``BEGIN IMMEDIATE`` so concurrent writers queue instead of failing late. On a
  connection the store opened itself (:class:`SqliteFile`), read transactions run on a
  read-only companion connection to its file (:class:`SqliteReaders`), so reads do not
  wait for a write in progress.

A connection has one owner however many handles wrap it (the store's and a message log's
on ``store.conn``): the lock and the transaction depth live in a per-connection
:class:`ConnectionOwner`, so two wrappers can never interleave transactions on it.
* :class:`~langmem_tiers.sql.postgres_io.PostgresIO` /
  :class:`~langmem_tiers.sql.postgres_io.AsyncPostgresIO` (``postgres_io.py``): psycopg 3
  connections or pools; a transaction takes one connection for the whole flow. SQL is
  written with ``?`` and converted to psycopg's ``%s`` there.

Embedding and Qdrant requests are the same for every SQL engine and live in the mixins.
Database errors become :class:`~langmem_tiers.errors.BackendError` at the store's edge.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
import weakref
from abc import ABC, abstractmethod
from typing import Any, ClassVar, TypeVar

from langchain_core.embeddings import Embeddings

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.sql.flow import (
    Embed,
    Flow,
    InsertRows,
    Pipeline,
    QdrantCall,
    Sql,
    SqlMany,
    TakeCounters,
    run,
)

__all__ = [
    "WAL_CHECKPOINT_PAGES",
    "WRITER_CACHE_KIB",
    "ConnectionOwner",
    "Pipelined",
    "SharedIO",
    "SqliteFile",
    "SqliteIO",
    "SqliteReaders",
    "call_qdrant",
    "insert_sql",
    "is_local_qdrant",
    "is_pool",
    "loaded_classes",
]

T = TypeVar("T")


def insert_sql(request: InsertRows) -> str:
    """The one-row INSERT statement of ``request`` (``?`` placeholders)."""
    marks = ", ".join("?" for _ in request.columns)
    return f"INSERT INTO {request.table} ({', '.join(request.columns)}) VALUES ({marks})"


Pipelined = Sql | SqlMany | InsertRows | TakeCounters


def loaded_classes(module: str, *names: str) -> tuple[type, ...]:
    """The classes ``names`` of ``module`` if it is imported (none otherwise): an object of
    an optional backend's class exists only once its module is, and ``import langmem_tiers``
    must not import it."""
    found = sys.modules.get(module)
    return tuple(getattr(found, name) for name in names) if found is not None else ()


def is_pool(conn: Any) -> bool:
    """Whether ``conn`` is a psycopg_pool pool (a psycopg connection is not one)."""
    return isinstance(conn, loaded_classes("psycopg_pool", "ConnectionPool", "AsyncConnectionPool"))


def is_local_qdrant(client: Any) -> bool:
    """Whether ``client`` is a ``QdrantClient`` in local mode (an in-process index)."""
    local = loaded_classes("qdrant_client.local.qdrant_local", "QdrantLocal")
    return isinstance(getattr(client, "_client", None), local)


#: WAL pages written before SQLite copies them into the database (16 MB with 4 KB pages).
WAL_CHECKPOINT_PAGES = 4096

#: Page cache of a writing connection, in KiB (SQLite's default is 2 MiB). A batch of 500
#: puts dirties pages all over the items', terms' and vectors' indexes (their keys are
#: hashes); in 2 MiB they were spilled and read back within the transaction, in 64 MiB
#: they stay. Pages are taken as used. Readers keep the default: their searches measured
#: the same either way.
WRITER_CACHE_KIB = 65_536


class ConnectionOwner:
    """What every handle on one connection shares: its lock and its transaction depth.

    :meth:`of` answers the same owner for the same connection object while any handle
    holds it; the owner keeps the connection alive, so its ``id`` cannot be reused.
    """

    __slots__ = ("__weakref__", "_async_lock", "conn", "depth", "holder", "lock")

    _owners: ClassVar[weakref.WeakValueDictionary[int, ConnectionOwner]] = (
        weakref.WeakValueDictionary()
    )
    _owners_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.lock = threading.RLock()
        self.depth = 0  # SQLite transaction nesting, guarded by the lock
        self.holder = 0  # the thread inside the outermost SQLite transaction (0: none)
        self._async_lock: asyncio.Lock | None = None

    @classmethod
    def of(cls, conn: Any, setup: Any = None) -> ConnectionOwner:
        """The owner of ``conn``; ``setup(conn)`` runs once, when the first handle is made."""
        # sqlite3 connections cannot be weakly referenced: key by id, checked by identity.
        with cls._owners_lock:
            owner = cls._owners.get(id(conn))
            if owner is not None and owner.conn is conn:
                return owner
            owner = cls(conn)
            if setup is not None:
                setup(conn)
            cls._owners[id(conn)] = owner
            return owner

    @property
    def async_lock(self) -> asyncio.Lock:
        """The lock of a lone async connection (made on first use, inside a loop)."""
        if self._async_lock is None:
            self._async_lock = asyncio.Lock()
        return self._async_lock


# qdrant-client's local mode (an in-process index) is not safe to call from several
# threads at once: concurrent upserts fail with an IndexError. Its calls are serialised
# per client; a server client is called freely.
_LOCAL_QDRANT_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def call_qdrant(client: Any, request: QdrantCall) -> Any:
    method = getattr(client, request.method)
    if not is_local_qdrant(client):
        return method(**request.kwargs)
    with _LOCKS_GUARD:
        lock = _LOCAL_QDRANT_LOCKS.setdefault(client, threading.Lock())
    with lock:
        return method(**request.kwargs)


class SharedIO(ABC):
    def __init__(self, embeddings: Embeddings | None, qdrant: Any | None) -> None:
        self.embeddings = embeddings
        self.qdrant_client = qdrant

    @abstractmethod
    def sql(self, request: Sql) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def sql_many(self, request: SqlMany) -> None: ...

    @abstractmethod
    def insert_rows(self, request: InsertRows) -> None: ...

    def pipeline(self, request: Pipeline) -> list[Any]:
        # In process (or outside a transaction) there is no round trip to save.
        return [self._one(r) for r in request.requests]

    def _one(self, request: Pipelined) -> Any:
        if type(request) is Sql:
            return self.sql(request)
        if type(request) is SqlMany:
            return self.sql_many(request)
        if type(request) is TakeCounters:
            return self.take_counters(request)
        assert type(request) is InsertRows
        return self.insert_rows(request)

    def take_counters(self, request: TakeCounters) -> list[tuple[Any, ...]]:
        # Threads wait for the counters in the database's own queue.
        return self.sql(request.statement)

    def embed(self, request: Embed) -> list[list[float]]:
        if self.embeddings is None:
            raise RuntimeError("no embeddings configured")
        if request.query:
            return [self.embeddings.embed_query(t) for t in request.texts]
        return self.embeddings.embed_documents(list(request.texts))

    def qdrant(self, request: QdrantCall) -> Any:
        if self.qdrant_client is None:
            raise RuntimeError("no Qdrant client configured")
        return call_qdrant(self.qdrant_client, request)


#: Read-only connections a store's SQLite file keeps. One: a search's ranking runs in
#: Python and holds the GIL, so concurrent searches on one reader each were slower, not
#: faster, than searches taking turns.
SQLITE_READERS = 1


class SqliteReaders:
    """Read-only connections to one SQLite file, lent out one read transaction at a time.

    In WAL mode a reader sees the last commit and does not wait for the writer. On the
    store's one connection, every search waited for any write transaction in progress
    (a batch of puts, a consolidation). Connections are opened when first needed, up to
    ``size``; when all are lent, :meth:`lend` waits for one to be given back.

    Example:
        >>> import sqlite3, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
        >>> sqlite3.connect(path).execute("PRAGMA journal_mode = WAL").fetchone()
        ('wal',)
        >>> readers = SqliteReaders(path, size=1)
        >>> conn = readers.lend()
        >>> conn.execute("SELECT 1").fetchone()
        (1,)
        >>> readers.give_back(conn)
        >>> readers.close()
        >>> readers.lend() is None
        True
    """

    def __init__(self, path: str, size: int = SQLITE_READERS) -> None:
        self.path = path
        self.size = size
        self._idle: list[sqlite3.Connection] = []
        self._opened = 0
        self._closed = False
        self._lock = threading.Condition()

    def lend(self) -> sqlite3.Connection | None:
        """An idle reader, opened if none is and fewer than ``size`` are, or else the next
        one given back; None when there are no readers (``size`` 0, or closed)."""
        with self._lock:
            if self.size == 0:
                return None
            while not self._closed and not self._idle and self._opened >= self.size:
                self._lock.wait()
            if self._closed:
                return None
            if self._idle:
                return self._idle.pop()
            self._opened += 1
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            # A read transaction promised to write nothing; this makes the promise checked.
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA busy_timeout = 30000")
        except sqlite3.Error:
            with self._lock:
                self._opened -= 1
                self._lock.notify()
            raise
        return conn

    def give_back(self, conn: sqlite3.Connection) -> None:
        """Return a reader :meth:`lend` gave (closed if the readers were closed meanwhile)."""
        with self._lock:
            self._lock.notify()
            if not self._closed and not conn.in_transaction:
                self._idle.append(conn)
                return
            self._opened -= 1
        conn.close()

    def close(self) -> None:
        """Close the idle readers; readers lent now are closed when given back."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
        for conn in idle:
            conn.close()


class SqliteFile(sqlite3.Connection):
    """A connection the store opened, with :class:`SqliteReaders` of its file.

    ``sqlite3.connect(path, factory=SqliteFile)`` makes one; closing it closes its
    readers. ``":memory:"`` has none. A plain ``sqlite3.Connection`` passed by the
    caller has no readers either: the store reads and writes on it alone, as given.
    """

    readers: SqliteReaders

    def __init__(self, database: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(database, *args, **kwargs)
        # The file's absolute name, which a later change of directory cannot move; ""
        # for ":memory:" and temporary databases, which are private to one connection.
        (path,) = (row[2] for row in self.execute("PRAGMA database_list") if row[1] == "main")
        self.readers = SqliteReaders(path, size=SQLITE_READERS if path else 0)

    def close(self) -> None:
        self.readers.close()
        super().close()


class SqliteIO(SharedIO):
    """Blocking I/O on one SQLite connection (shared by threads, serialised by a lock)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        embeddings: Embeddings | None,
        qdrant: Any | None = None,
        *,
        reader: bool = False,
    ) -> None:
        super().__init__(embeddings, qdrant)
        self.conn = conn
        # Shared with every other handle on this connection; the pragmas run once, before
        # any handle can open a transaction (journal_mode cannot change inside one). A
        # reader was set up by SqliteReaders and is lent to one thread at a time.
        self.owner = ConnectionOwner.of(conn, None if reader else self.configure)
        self.lock = self.owner.lock
        self.readers = conn.readers if isinstance(conn, SqliteFile) else None

    @staticmethod
    def configure(conn: sqlite3.Connection) -> None:
        """Pragmas the store relies on: WAL for concurrent readers, FKs for cascades."""
        if conn.in_transaction:
            # Only the caller's own open transaction can be here (handles share owners).
            raise ConfigurationError(
                "conn is an sqlite3 connection inside an open transaction; commit or roll "
                "it back before passing it to a store or message log."
            )
        conn.isolation_level = None  # transactions are explicit
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "memory":
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # A batch of puts dirties pages all over the items' and vectors' indexes (item
            # ids are hashes): checkpointed every 1,000 pages (the default), nearly every
            # commit copied and synced them again, a fifth of a put's time at 30k items.
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")

    def sql(self, request: Sql) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.conn.execute(request.text, tuple(request.params)).fetchall()

    def sql_many(self, request: SqlMany) -> None:
        with self.lock:
            self.conn.executemany(request.text, [tuple(r) for r in request.rows])

    def insert_rows(self, request: InsertRows) -> None:
        # In process, a prepared statement run per row is already the bulk path.
        with self.lock:
            self.conn.executemany(insert_sql(request), [tuple(r) for r in request.rows])

    def transaction(self, flow: Flow[T], read_only: bool = False) -> T:
        """One transaction; a nested one is a savepoint, so flows compose.

        A writing one starts ``IMMEDIATE`` (writers queue on the busy timeout instead of
        failing on a lock upgrade); a read-only one is deferred, a snapshot that never
        takes the write lock. A read-only one that does not nest in this thread's own
        transaction runs on a lent reader when there are readers.
        """
        if read_only and self.readers is not None and self.owner.holder != threading.get_ident():
            reader = self.readers.lend()
            if reader is not None:
                try:
                    lent = SqliteIO(reader, self.embeddings, self.qdrant_client, reader=True)
                    return lent.transaction(flow, read_only=True)
                finally:
                    self.readers.give_back(reader)
        with self.lock:
            depth = self.owner.depth
            if depth == 0:
                self.owner.holder = threading.get_ident()
            begin, commit, rollback = (
                ("BEGIN" if read_only else "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
                if depth == 0
                else (f"SAVEPOINT sp{depth}", f"RELEASE sp{depth}", f"ROLLBACK TO sp{depth}")
            )
            self.conn.execute(begin)
            self.owner.depth += 1
            try:
                result = run(flow, self)
            except BaseException:
                self.conn.execute(rollback)
                if depth:
                    self.conn.execute(f"RELEASE sp{depth}")
                raise
            finally:
                self.owner.depth -= 1
                if depth == 0:
                    self.owner.holder = 0
            self.conn.execute(commit)
            return result
