"""Write store logic once, run it sync or async.

Store operations are generators ("flows") that *yield* I/O requests and receive their
results; they hold all the logic. A backend implements the few request types once with
blocking calls (:class:`SyncIO`) and once with ``await`` (:class:`AsyncIO`), and
:func:`run` / :func:`arun` drive any flow with either. So the sync and async APIs share
every line but the I/O itself, and cannot drift apart.

Example:
    >>> def double_count() -> Flow[int]:
    ...     rows = yield Sql("SELECT count(*) FROM t")
    ...     return 2 * rows[0][0]
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from langmem_tiers.effects import Handlers, adrive, adrive_offloaded, drive

__all__ = [
    "AsyncIO",
    "BinaryValue",
    "Embed",
    "Flow",
    "InsertRows",
    "Latch",
    "Pipeline",
    "QdrantCall",
    "Request",
    "Sql",
    "SqlMany",
    "SyncIO",
    "TakeCounters",
    "Transaction",
    "WaitFor",
    "arun",
    "arun_blocking",
    "blocking_handlers",
    "run",
]

T = TypeVar("T")


class Sql(NamedTuple):
    """Run one statement; the result is the list of rows (empty when it returns none)."""

    text: str
    params: Sequence[Any] = ()
    #: Results in the database's binary format where it has one (PostgreSQL): a bytes
    #: value arrives as it is, not spelled out in hex for the client to decode, and a
    #: time or a number is not parsed from its text.
    binary: bool = False


class SqlMany(NamedTuple):
    """Run one statement for many parameter rows (``executemany``); the result is None."""

    text: str
    rows: Sequence[Sequence[Any]]


BULK_MIN_ROWS = 4
"""Rows from which a backend loads :class:`InsertRows` in bulk; fewer go as INSERTs. On
PostgreSQL a COPY takes two round trips (the server answers its start before the rows
are sent) and an INSERT of a row one: what a single add holds its namespace's change
counter for, while every other writer of the namespace waits."""


class InsertRows(NamedTuple):
    """Insert many rows into one table; the result is None.

    Plain inserts only (no conflict clause), so a backend may use its bulk path (COPY on
    PostgreSQL, from :data:`BULK_MIN_ROWS` rows) instead of one statement per row. Values
    are bound as they are given.
    """

    table: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]


class BinaryValue(NamedTuple):
    """A value of :class:`InsertRows` already in the engine's binary wire form.

    PostgreSQL loads rows whose values are all text, NULL or binary values with a binary
    COPY: a vector is then sent as its floats, not as text for the server to parse.
    """

    data: bytes


class TakeCounters(NamedTuple):
    """Run ``statement``, which takes the change counters of the namespaces ``names``
    until the transaction ends; the result is its rows.

    A backend whose writers share an event loop lets them take turns first, in the order
    they asked, so that one namespace's writers are served in arrival order rather than
    as the database wakes its lock's waiters (see :class:`~langmem_tiers.sql.backends.WriterTurns`).
    """

    statement: Sql
    names: tuple[str, ...]


class Pipeline(NamedTuple):
    """Run ``requests`` in order without waiting for each one's answer; the result is the
    list of their results (rows for a :class:`Sql`, None for the others).

    For statements of which nothing before the last needs an answer: what a writer sends
    while it holds a namespace's change counter, which every other writer of the
    namespace waits for. On PostgreSQL they travel in one round trip (psycopg's pipeline
    mode; a COPY among them, which that mode cannot carry, goes between two); elsewhere
    they run one after another. A failing statement fails the request, and the
    statements after it do not run. A :class:`TakeCounters` among them takes its turn
    before the pipeline is sent: the statements before it run, and it follows them,
    without a round trip between.
    """

    requests: tuple[Sql | SqlMany | InsertRows | TakeCounters, ...]


class Embed(NamedTuple):
    """Embed texts; the result is one vector per text."""

    texts: Sequence[str]
    query: bool = False


class QdrantCall(NamedTuple):
    """Call a method of the Qdrant client with keyword arguments; the result is its return."""

    method: str
    kwargs: dict[str, Any]


class Transaction(NamedTuple):
    """Run a nested flow inside one database transaction; the result is the flow's return.

    The transaction commits when the flow returns and rolls back when it raises.
    ``read_only`` promises the flow writes nothing: SQLite then starts a deferred (read)
    transaction, so readers in other connections and processes do not queue behind it
    for the write lock, and PostgreSQL on an autocommit connection runs its statements
    without a transaction block (each reads its own snapshot, as in READ COMMITTED).
    """

    flow: Flow[Any]
    read_only: bool = False


class Latch:
    """A one-shot signal that threads wait for and event loops await alike.

    A flow cannot block on a lock or an event itself: the same flow runs in a thread
    (where blocking is how to wait) and on an event loop (where it would stall every
    other task). It yields :class:`WaitFor` instead, and the driver waits its own way.

    Example:
        >>> latch = Latch()
        >>> latch.wait(0.01)
        False
        >>> latch.open()
        >>> latch.wait(0.01), asyncio.run(latch.await_open(0.01))
        (True, True)
    """

    __slots__ = ("_event", "_guard", "_waiters")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._guard = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def open(self) -> None:
        """Let every waiter go, now and later (from any thread)."""
        with self._guard:
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    def wait(self, timeout: float) -> bool:
        """Block until the latch opens or ``timeout`` seconds pass; whether it opened."""
        return self._event.wait(timeout)

    async def await_open(self, timeout: float) -> bool:
        """Async twin of :meth:`wait`: the loop runs other tasks meanwhile."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._guard:
            if self._event.is_set():
                return True
            self._waiters.append((loop, future))
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:  # the builtin TimeoutError from Python 3.11
            with self._guard:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
            return False
        return True


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class WaitFor(NamedTuple):
    """Wait until ``latch`` opens, at most ``timeout`` seconds; the result is whether it
    opened. Nothing is held meanwhile but what the flow itself holds."""

    latch: Latch
    timeout: float


Request = (
    Sql
    | SqlMany
    | InsertRows
    | Pipeline
    | TakeCounters
    | Embed
    | QdrantCall
    | Transaction
    | WaitFor
)
Flow = Generator[Request, Any, T]


class SyncIO(Protocol):
    """Blocking implementation of the requests."""

    def sql(self, request: Sql) -> list[tuple[Any, ...]]: ...
    def sql_many(self, request: SqlMany) -> None: ...
    def insert_rows(self, request: InsertRows) -> None: ...
    def pipeline(self, request: Pipeline) -> list[Any]: ...
    def take_counters(self, request: TakeCounters) -> list[tuple[Any, ...]]: ...
    def embed(self, request: Embed) -> list[list[float]]: ...
    def qdrant(self, request: QdrantCall) -> Any: ...
    def transaction(self, flow: Flow[T], read_only: bool = False) -> T: ...


class AsyncIO(Protocol):
    """Awaitable implementation of the requests."""

    async def sql(self, request: Sql) -> list[tuple[Any, ...]]: ...
    async def sql_many(self, request: SqlMany) -> None: ...
    async def insert_rows(self, request: InsertRows) -> None: ...
    async def pipeline(self, request: Pipeline) -> list[Any]: ...
    async def take_counters(self, request: TakeCounters) -> list[tuple[Any, ...]]: ...
    async def embed(self, request: Embed) -> list[list[float]]: ...
    async def qdrant(self, request: QdrantCall) -> Any: ...
    async def transaction(self, flow: Flow[T], read_only: bool = False) -> T: ...


def blocking_handlers(io: SyncIO) -> Handlers:
    """The handler table answering every request with ``io``'s blocking calls."""
    return {
        Sql: io.sql,
        SqlMany: io.sql_many,
        InsertRows: io.insert_rows,
        Pipeline: io.pipeline,
        TakeCounters: io.take_counters,
        Embed: io.embed,
        QdrantCall: io.qdrant,
        Transaction: lambda request: io.transaction(request.flow, request.read_only),
        WaitFor: lambda request: request.latch.wait(request.timeout),
    }


def run(flow: Flow[T], io: SyncIO) -> T:
    """Drive a flow to its end with blocking I/O."""
    return drive(flow, blocking_handlers(io))


async def arun_blocking(flow: Flow[T], io: SyncIO) -> T:
    """Drive a flow to its end from async code with blocking I/O (sqlite3, sync psycopg):
    in a worker thread, as every flow whose I/O blocks is driven from async code
    (:func:`~langmem_tiers.effects.adrive_offloaded`), so a cancellation reaches the
    flow at its next request, not after its end."""
    return await adrive_offloaded(flow, blocking_handlers(io), {})


async def arun(flow: Flow[T], io: AsyncIO) -> T:
    """Drive a flow to its end with awaitable I/O."""
    return await adrive(
        flow,
        {
            Sql: io.sql,
            SqlMany: io.sql_many,
            InsertRows: io.insert_rows,
            Pipeline: io.pipeline,
            TakeCounters: io.take_counters,
            Embed: io.embed,
            QdrantCall: io.qdrant,
            Transaction: lambda request: io.transaction(request.flow, request.read_only),
            WaitFor: lambda request: request.latch.await_open(request.timeout),
        },
    )
