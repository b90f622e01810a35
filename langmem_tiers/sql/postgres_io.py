"""PostgreSQL's I/O: the requests of :mod:`langmem_tiers.sql.flow` on psycopg connections
and pools, sync (:class:`PostgresIO`) and async (:class:`AsyncPostgresIO`), with COPY for
bulk inserts and psycopg's pipeline mode for runs of statements."""

from __future__ import annotations

import asyncio
import functools
import struct
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

from langchain_core.embeddings import Embeddings

from langmem_tiers.sql.backends import (
    ConnectionOwner,
    Pipelined,
    SharedIO,
    call_qdrant,
    insert_sql,
    is_pool,
)
from langmem_tiers.sql.flow import (
    BULK_MIN_ROWS,
    BinaryValue,
    Embed,
    Flow,
    InsertRows,
    Pipeline,
    QdrantCall,
    Sql,
    SqlMany,
    TakeCounters,
    arun,
    run,
)

__all__ = ["AsyncPostgresIO", "PostgresIO", "WriterTurns", "psycopg_query", "to_psycopg"]

T = TypeVar("T")


def _as_inserts(request: InsertRows) -> str | None:
    """The INSERT (``%s`` placeholders) to send ``request`` with instead of a COPY, or None."""
    if len(request.rows) >= BULK_MIN_ROWS:
        return None
    if any(type(v) is BinaryValue for row in request.rows for v in row):
        return None  # the engine's binary form: COPY (FORMAT BINARY) alone takes it
    return to_psycopg(insert_sql(request))


def _segments(
    requests: Sequence[Pipelined],
) -> Iterator[list[tuple[int, Pipelined]] | tuple[int, InsertRows]]:
    """``requests`` with their positions, in runs a pipeline carries, each COPY alone
    between them (psycopg's pipeline mode cannot carry one)."""
    run: list[tuple[int, Pipelined]] = []
    for position, request in enumerate(requests):
        if type(request) is InsertRows and _as_inserts(request) is None:
            if run:
                yield run
                run = []
            yield position, request
        else:
            run.append((position, request))
    if run:
        yield run


_TUPLES_OK = 2  # libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK)


def _returned_rows(cursor: Any) -> bool:
    """Whether the statement ``cursor`` ran returned rows (a SELECT, a RETURNING), so
    that it has some to fetch. Not ``cursor.description is not None``: that builds a
    column object per column at each call, and an add runs about ten statements."""
    result = cursor.pgresult
    return result is not None and result.status == _TUPLES_OK


def _copy_sql(request: InsertRows, *, binary: bool = False) -> str:
    """The COPY statement that loads the rows of ``request`` on PostgreSQL."""
    copy = f"COPY {request.table} ({', '.join(request.columns)}) FROM STDIN"
    return f"{copy} (FORMAT BINARY)" if binary else copy


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)
_NULL_FIELD = struct.pack("!i", -1)


def binary_copy_data(rows: Sequence[Sequence[Any]]) -> bytes | None:
    """The whole binary COPY stream of ``rows`` when it is worth one, else None.

    Only rows holding a :class:`~langmem_tiers.sql.flow.BinaryValue` qualify, and only
    when every other value is text or NULL, whose binary form is their UTF-8 bytes: other
    types would need the exact width of their column.
    """
    if not any(type(v) is BinaryValue for row in rows[:1] for v in row):
        return None
    parts = [_COPY_SIGNATURE]
    add = parts.append
    pack = struct.Struct("!i").pack
    for row in rows:
        add(struct.pack("!h", len(row)))
        for value in row:
            if value is None:
                add(_NULL_FIELD)
                continue
            if type(value) is str:
                data = value.encode("utf-8")
            elif type(value) is BinaryValue:
                data = value.data
            else:
                return None
            add(pack(len(data)))
            add(data)
    add(_COPY_TRAILER)
    return b"".join(parts)


@functools.lru_cache(maxsize=512)
def to_psycopg(text: str, lists: tuple[int, ...] = ()) -> str:
    """``?`` placeholders to psycopg's ``%s`` (literal ``%`` doubled); those at the
    positions ``lists`` to ``%b``, binary (see :func:`psycopg_query`).

    Example::

        >>> to_psycopg("SELECT ? || '%' WHERE id = ANY(?::text[])", (1,))
        "SELECT %s || '%%' WHERE id = ANY(%b::text[])"
    """
    text = text.replace("%", "%%")
    if not lists:
        return text.replace("?", "%s")
    parts = text.split("?")
    return "".join(
        part + ("" if n == len(parts) - 1 else "%b" if n in lists else "%s")
        for n, part in enumerate(parts)
    )


def psycopg_query(text: str, params: Sequence[Any]) -> str:
    """:func:`to_psycopg` of ``text`` with its list parameters sent binary.

    A list (an array: ids to lock, to read, to write events of) in the text format is
    quoted element by element in Python and parsed back by the server; in the binary
    format neither happens.
    """
    return to_psycopg(text, tuple(n for n, p in enumerate(params) if type(p) is list))


class _PgConnIO(SharedIO):
    """Requests on one connection already inside a transaction."""

    def __init__(self, conn: Any, embeddings: Embeddings | None, qdrant: Any | None) -> None:
        super().__init__(embeddings, qdrant)
        self.conn = conn

    def sql(self, request: Sql) -> list[tuple[Any, ...]]:
        # psycopg prepares a statement run prepare_threshold times (5 unless the connection
        # says otherwise; None never, as behind a pooler in transaction mode): a search's
        # statements are planned once per connection instead of per search (planning the
        # neighbours' statement took longer than running it).
        cur = self._execute(request)
        return cur.fetchall() if _returned_rows(cur) else []

    def _execute(self, request: Sql) -> Any:
        """Send ``request``; its cursor (its rows once answered, in pipeline mode too)."""
        return self.conn.execute(
            psycopg_query(request.text, request.params),
            list(request.params),
            binary=request.binary,
        )

    def sql_many(self, request: SqlMany) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(to_psycopg(request.text), [list(r) for r in request.rows])

    def insert_rows(self, request: InsertRows) -> None:
        # COPY streams every row in one statement: several times faster than a
        # pipelined INSERT per row, but for a few rows.
        inserts = _as_inserts(request)
        if inserts is not None:
            for row in request.rows:  # prepared, as any statement run often
                self.conn.execute(inserts, list(row))
            return
        data = binary_copy_data(request.rows)
        if data is not None:
            with self.conn.cursor() as cur, cur.copy(_copy_sql(request, binary=True)) as copy:
                copy.write(data)
            return
        with self.conn.cursor() as cur, cur.copy(_copy_sql(request)) as copy:
            for row in request.rows:
                copy.write_row(row)

    def pipeline(self, request: Pipeline) -> list[Any]:
        results: list[Any] = [None] * len(request.requests)
        sent: list[tuple[int, Any]] = []
        for segment in _segments(request.requests):
            if isinstance(segment, tuple):
                self.insert_rows(segment[1])
                continue
            with self.conn.pipeline():
                for position, one in segment:
                    cursor = self._send(one)
                    if cursor is not None:
                        sent.append((position, cursor))
        # The pipeline's end waited for every answer: the rows are here.
        for position, cursor in sent:
            results[position] = cursor.fetchall() if _returned_rows(cursor) else []
        return results

    def _send(self, request: Pipelined) -> Any:
        """Send ``request`` in pipeline mode; the cursor of a statement, else None."""
        if type(request) is TakeCounters:  # threads queue in the database's own lock
            request = request.statement
        if type(request) is Sql:
            return self._execute(request)
        if type(request) is SqlMany:
            self.sql_many(request)
        else:
            assert type(request) is InsertRows
            self.insert_rows(request)  # as INSERTs: _segments keeps a COPY out
        return None

    def transaction(self, flow: Flow[T], read_only: bool = False) -> T:
        # PostgreSQL readers never wait for writers: read_only changes nothing here.
        with self.conn.transaction():
            return run(flow, self)


class PostgresIO(SharedIO):
    """Blocking I/O on a psycopg connection or pool."""

    def __init__(self, conn: Any, embeddings: Embeddings | None, qdrant: Any | None = None) -> None:
        super().__init__(embeddings, qdrant)
        self.conn = conn
        # A lone connection is used by one thread at a time, whichever handle wraps it.
        self._lock = ConnectionOwner.of(conn).lock

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if is_pool(self.conn):
            with self.conn.connection() as conn:
                yield conn
        else:
            with self._lock:
                yield self.conn

    def sql(self, request: Sql) -> list[tuple[Any, ...]]:
        with self._connection() as conn:
            io = _PgConnIO(conn, self.embeddings, self.qdrant_client)
            if conn.autocommit:
                return io.sql(request)
            # Outside autocommit a statement would open a transaction nobody commits (or
            # join the caller's): a transaction block of its own is ours to commit, and a
            # savepoint inside the caller's transaction, which stays the caller's to commit.
            with conn.transaction():
                return io.sql(request)

    def sql_many(self, request: SqlMany) -> None:
        with self._connection() as conn, conn.transaction():
            _PgConnIO(conn, self.embeddings, self.qdrant_client).sql_many(request)

    def insert_rows(self, request: InsertRows) -> None:
        with self._connection() as conn, conn.transaction():
            _PgConnIO(conn, self.embeddings, self.qdrant_client).insert_rows(request)

    def pipeline(self, request: Pipeline) -> list[Any]:
        with self._connection() as conn, conn.transaction():
            return _PgConnIO(conn, self.embeddings, self.qdrant_client).pipeline(request)

    def transaction(self, flow: Flow[T], read_only: bool = False) -> T:
        """One transaction on one connection; a read-only flow on an autocommit connection
        runs outside any transaction block, on that connection.

        In READ COMMITTED, PostgreSQL's default, each statement reads its own snapshot
        inside a block as well, and a read takes no lock a block would keep: the block
        would only cost two round trips (BEGIN, COMMIT), as many as a search's own
        statements. A connection the caller keeps outside autocommit gets a transaction
        (or a savepoint in the caller's) as before.
        """
        with self._connection() as conn:
            io = _PgConnIO(conn, self.embeddings, self.qdrant_client)
            if read_only and conn.autocommit:
                return run(flow, io)
            with conn.transaction():
                return run(flow, io)


TURN_WAIT_SECONDS = 1.0
"""How long a writer waits for its turn before it queues in the database's lock instead
(where a deadlock with a writer that holds other locks is detected; a turn never is)."""


TURN_DEPTH = 2
"""Writers of one namespace let through at once: the one holding its counter and the next,
already waiting in the database, so the counter passes on without a round trip."""


class WriterTurns:
    """The writers of each namespace on one event loop, served in the order they came.

    Writers of one namespace take turns at its change counter (a row lock). PostgreSQL
    wakes every waiter of a row lock when it is released and the first to run takes it,
    so under load some writer loses several times running and waits far longer than the
    rest; a first-come queue in front of the lock makes every wait a little longer and
    none of them that long. Turns are a queue only: the
    counters themselves are still the database's, taken after the turn, so writers of
    other processes and threads are as safe as before, and a writer that waited
    :data:`TURN_WAIT_SECONDS` for its turn goes to the database's queue without it.

    Example:
        >>> async def two_writers() -> list[str]:
        ...     turns, order = WriterTurns(depth=1), []
        ...     first = await turns.take(["agent.episodic"])
        ...     async def second() -> None:
        ...         held = await turns.take(["agent.episodic"])
        ...         order.append("second")
        ...         turns.give_back(held)
        ...     waiting = asyncio.ensure_future(second())
        ...     await asyncio.sleep(0)
        ...     order.append("first")
        ...     turns.give_back(first)
        ...     await waiting
        ...     return order
        >>> asyncio.run(two_writers())
        ['first', 'second']
    """

    def __init__(self, *, wait: float = TURN_WAIT_SECONDS, depth: int = TURN_DEPTH) -> None:
        self.wait = wait
        self.depth = depth
        self._queues: dict[str, asyncio.Semaphore] = {}
        self._users: dict[str, int] = {}

    async def take(self, names: Sequence[str]) -> list[str]:
        """Wait for the turn of each namespace (in one order, as the counters are taken);
        the names whose turn was taken (those not taken within :attr:`wait` are left to
        the database)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        held: list[str] = []
        for name in sorted(set(names)):
            queue = self._queues.get(name)
            if queue is None:
                queue = self._queues[name] = asyncio.Semaphore(self.depth)
            self._users[name] = self._users.get(name, 0) + 1
            try:
                taken = await _acquire(queue, deadline - loop.time())
            except BaseException:
                self._leave(name)
                self.give_back(held)
                raise
            if not taken:
                self._leave(name)
                break
            held.append(name)
        return held

    def give_back(self, names: Sequence[str]) -> None:
        """End the turns :meth:`take` gave."""
        for name in reversed(names):
            self._queues[name].release()
            self._leave(name)

    def _leave(self, name: str) -> None:
        left = self._users[name] - 1
        if left:
            self._users[name] = left
        else:  # nobody holds or waits for it: a namespace written once costs nothing
            del self._users[name]
            del self._queues[name]


async def _acquire(queue: asyncio.Semaphore, timeout: float) -> bool:
    """Whether a place in ``queue`` was taken within ``timeout`` seconds.

    Not ``asyncio.wait_for``: on Python 3.11 it can lose an acquisition that completes
    as the timeout fires, and the place would stay taken for good.
    """
    if timeout <= 0:
        return False
    waiter = asyncio.ensure_future(queue.acquire())
    try:
        done, _ = await asyncio.wait({waiter}, timeout=timeout)
    except BaseException:
        if waiter.done() and not waiter.cancelled():
            queue.release()  # taken just as this was cancelled: nobody else will
        else:
            waiter.cancel()  # it raises where it waits and never takes the place
        raise
    if done:
        return True
    waiter.cancel()
    return False


class _AsyncShared(ABC):
    def __init__(self, embeddings: Embeddings | None, qdrant: Any | None) -> None:
        self.embeddings = embeddings
        self.qdrant_client = qdrant

    @abstractmethod
    async def sql(self, request: Sql) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def sql_many(self, request: SqlMany) -> None: ...

    @abstractmethod
    async def insert_rows(self, request: InsertRows) -> None: ...

    async def pipeline(self, request: Pipeline) -> list[Any]:
        # Outside a transaction: each in turn (see AsyncPostgresIO.pipeline).
        return [await self._one(r) for r in request.requests]

    async def _one(self, request: Pipelined) -> Any:
        if type(request) is Sql:
            return await self.sql(request)
        if type(request) is SqlMany:
            return await self.sql_many(request)
        if type(request) is TakeCounters:
            return await self.take_counters(request)
        assert type(request) is InsertRows
        return await self.insert_rows(request)

    async def take_counters(self, request: TakeCounters) -> list[tuple[Any, ...]]:
        # Outside a transaction there is nothing to hold a turn for.
        return await self.sql(request.statement)

    async def embed(self, request: Embed) -> list[list[float]]:
        if self.embeddings is None:
            raise RuntimeError("no embeddings configured")
        if request.query:
            return list(
                await asyncio.gather(*(self.embeddings.aembed_query(t) for t in request.texts))
            )
        return await self.embeddings.aembed_documents(list(request.texts))

    async def qdrant(self, request: QdrantCall) -> Any:
        if self.qdrant_client is None:
            raise RuntimeError("no Qdrant client configured")
        method = getattr(self.qdrant_client, request.method)
        if asyncio.iscoroutinefunction(method):
            return await method(**request.kwargs)
        # A sync client (qdrant-client's local mode is one): keep the loop free.
        return await asyncio.to_thread(call_qdrant, self.qdrant_client, request)


class _AsyncPgConnIO(_AsyncShared):
    def __init__(
        self,
        conn: Any,
        embeddings: Embeddings | None,
        qdrant: Any | None,
        turns: WriterTurns | None = None,
    ) -> None:
        super().__init__(embeddings, qdrant)
        self.conn = conn
        self.turns = turns
        self.held: list[str] = []
        self.asked = False

    async def take_counters(self, request: TakeCounters) -> list[tuple[Any, ...]]:
        await self._take_turn(request)
        return await self.sql(request.statement)

    async def _take_turn(self, request: TakeCounters) -> None:
        # Only a transaction's first take waits for turns: one holding counters already
        # would wait in Python for writers the database may need it to let go of.
        if self.turns is not None and not self.asked:
            self.asked = True
            self.held = await self.turns.take(request.names)

    def end_turns(self) -> None:
        """Let the next writers of the namespaces this transaction took turns in go."""
        if self.turns is not None:
            self.turns.give_back(self.held)
        self.held = []
        self.asked = False

    async def sql(self, request: Sql) -> list[tuple[Any, ...]]:
        # Prepared as the sync twin's (see _PgConnIO.sql).
        cur = await self._execute(request)
        return await cur.fetchall() if _returned_rows(cur) else []

    async def _execute(self, request: Sql) -> Any:
        return await self.conn.execute(
            psycopg_query(request.text, request.params),
            list(request.params),
            binary=request.binary,
        )

    async def sql_many(self, request: SqlMany) -> None:
        async with self.conn.cursor() as cur:
            await cur.executemany(to_psycopg(request.text), [list(r) for r in request.rows])

    async def insert_rows(self, request: InsertRows) -> None:
        inserts = _as_inserts(request)
        if inserts is not None:
            for row in request.rows:  # prepared, as any statement run often
                await self.conn.execute(inserts, list(row))
            return
        data = binary_copy_data(request.rows)
        if data is not None:
            async with (
                self.conn.cursor() as cur,
                cur.copy(_copy_sql(request, binary=True)) as copy,
            ):
                await copy.write(data)
            return
        async with self.conn.cursor() as cur, cur.copy(_copy_sql(request)) as copy:
            for row in request.rows:
                await copy.write_row(row)

    async def pipeline(self, request: Pipeline) -> list[Any]:
        # As the sync twin's (see _PgConnIO.pipeline), a take's turn first.
        for one in request.requests:
            if type(one) is TakeCounters:
                await self._take_turn(one)
        results: list[Any] = [None] * len(request.requests)
        sent: list[tuple[int, Any]] = []
        for segment in _segments(request.requests):
            if isinstance(segment, tuple):
                await self.insert_rows(segment[1])
                continue
            async with self.conn.pipeline():
                for position, one in segment:
                    cursor = await self._send(one)
                    if cursor is not None:
                        sent.append((position, cursor))
        for position, cursor in sent:
            results[position] = await cursor.fetchall() if _returned_rows(cursor) else []
        return results

    async def _send(self, request: Pipelined) -> Any:
        if type(request) is TakeCounters:  # its turn was taken (see pipeline)
            request = request.statement
        if type(request) is Sql:
            return await self._execute(request)
        if type(request) is SqlMany:
            await self.sql_many(request)
        else:
            assert type(request) is InsertRows
            await self.insert_rows(request)
        return None

    async def transaction(self, flow: Flow[T], read_only: bool = False) -> T:
        async with self.conn.transaction():
            return await arun(flow, self)


class AsyncPostgresIO(_AsyncShared):
    """Awaitable I/O on a psycopg async connection or async pool."""

    def __init__(self, conn: Any, embeddings: Embeddings | None, qdrant: Any | None = None) -> None:
        super().__init__(embeddings, qdrant)
        self.conn = conn
        self._owner = ConnectionOwner.of(conn)
        self._turns = WriterTurns()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        if is_pool(self.conn):
            async with self.conn.connection() as conn:
                yield conn
        else:
            async with self._owner.async_lock:
                yield self.conn

    async def sql(self, request: Sql) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            io = _AsyncPgConnIO(conn, self.embeddings, self.qdrant_client)
            if conn.autocommit:
                return await io.sql(request)
            async with conn.transaction():  # see PostgresIO.sql
                return await io.sql(request)

    async def sql_many(self, request: SqlMany) -> None:
        async with self._connection() as conn, conn.transaction():
            await _AsyncPgConnIO(conn, self.embeddings, self.qdrant_client).sql_many(request)

    async def insert_rows(self, request: InsertRows) -> None:
        async with self._connection() as conn, conn.transaction():
            await _AsyncPgConnIO(conn, self.embeddings, self.qdrant_client).insert_rows(request)

    async def pipeline(self, request: Pipeline) -> list[Any]:
        async with self._connection() as conn, conn.transaction():
            return await _AsyncPgConnIO(conn, self.embeddings, self.qdrant_client).pipeline(request)

    async def transaction(self, flow: Flow[T], read_only: bool = False) -> T:
        async with self._connection() as conn:
            io = _AsyncPgConnIO(conn, self.embeddings, self.qdrant_client, self._turns)
            if read_only and conn.autocommit:  # see PostgresIO.transaction
                return await arun(flow, io)
            try:
                async with conn.transaction():
                    return await arun(flow, io)
            finally:
                io.end_turns()  # after the commit (or rollback) gave the counters back
