"""A :class:`Pipeline` runs its statements in order and answers each; on PostgreSQL they
travel in one round trip (a COPY among them between two). A write sends its items' locks,
their rows and the take of its namespace's change counter as one pipeline, and what it
does under the counter as another.

Round trips are read off libpq's protocol trace: a round trip is a turn of the
conversation from the client's messages to the server's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from langmem_tiers.sql.backends import SqliteIO
from langmem_tiers.sql.flow import (
    BULK_MIN_ROWS,
    Flow,
    InsertRows,
    Pipeline,
    Sql,
    SqlMany,
    Transaction,
    arun,
    run,
)
from langmem_tiers.sql.postgres_io import AsyncPostgresIO, PostgresIO

SCHEMA = "CREATE TABLE t (id TEXT PRIMARY KEY, n INT NOT NULL)"


def _requests(first: int) -> tuple[Sql | SqlMany | InsertRows, ...]:
    """A row, a COPY's worth of rows, a count, two more rows and the sum, from ``first``."""
    many = [(f"id-{first + k}", first + k) for k in range(1, BULK_MIN_ROWS + 1)]
    return (
        InsertRows("t", ("id", "n"), [(f"id-{first}", first)]),
        InsertRows("t", ("id", "n"), many),
        Sql("SELECT count(*) FROM t"),
        SqlMany("INSERT INTO t (id, n) VALUES (?, ?)", [("x-1", 1), ("x-2", 2)]),
        Sql("SELECT sum(n) FROM t WHERE id LIKE 'x-%'"),
    )


def _expected() -> list[Any]:
    return [None, None, [(1 + BULK_MIN_ROWS,)], None, [(3,)]]


def _in_transaction(requests: tuple[Sql | SqlMany | InsertRows, ...]) -> Flow[Any]:
    def inner() -> Flow[Any]:
        return (yield Pipeline(requests))

    def outer() -> Flow[Any]:
        return (yield Transaction(inner()))

    return outer()


@contextmanager
def _sqlite() -> Iterator[SqliteIO]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    io = SqliteIO(conn, None)
    conn.execute(SCHEMA)
    try:
        yield io
    finally:
        conn.close()


def _count(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])


def test_a_pipeline_answers_each_statement_in_order_on_sqlite() -> None:
    with _sqlite() as io:
        assert run(_in_transaction(_requests(10)), io) == _expected()
        assert _count(io.conn) == 1 + BULK_MIN_ROWS + 2


def test_a_pipeline_answers_each_statement_in_order_on_postgres(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(SCHEMA)
        io = PostgresIO(conn, None)
        assert run(_in_transaction(_requests(10)), io) == _expected()
        # Outside a transaction too: the pipeline is one of its own.
        conn.execute("DELETE FROM t")
        assert io.pipeline(Pipeline(_requests(10))) == _expected()
        assert _count(conn) == 1 + BULK_MIN_ROWS + 2


async def test_a_pipeline_answers_each_statement_in_order_through_the_async_driver(
    postgres_url: str,
) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(SCHEMA)
        io = AsyncPostgresIO(conn, None)
        assert await arun(_in_transaction(_requests(10)), io) == _expected()
        await conn.execute("DELETE FROM t")
        assert await io.pipeline(Pipeline(_requests(10))) == _expected()


def _failing(first: int) -> tuple[Sql | SqlMany | InsertRows, ...]:
    # The third statement breaks the primary key; the fourth would insert a row.
    return (
        InsertRows("t", ("id", "n"), [(f"id-{first}", first)]),
        Sql("SELECT count(*) FROM t"),
        InsertRows("t", ("id", "n"), [(f"id-{first}", first)]),
        InsertRows("t", ("id", "n"), [("after", 0)]),
    )


@pytest.mark.parametrize("driver", ["sqlite", "postgres", "postgres-async"])
def test_a_failing_statement_fails_the_pipeline_and_its_transaction_stores_nothing(
    driver: str, request: pytest.FixtureRequest
) -> None:
    if driver == "sqlite":
        with _sqlite() as io:
            with pytest.raises(sqlite3.IntegrityError):
                run(_in_transaction(_failing(1)), io)
            assert _count(io.conn) == 0
        return
    url = request.getfixturevalue("postgres_url")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SCHEMA)
        if driver == "postgres":
            with pytest.raises(psycopg.errors.UniqueViolation):
                run(_in_transaction(_failing(1)), PostgresIO(conn, None))
        else:
            import asyncio

            async def attempt() -> None:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True) as aconn:
                    await arun(_in_transaction(_failing(1)), AsyncPostgresIO(aconn, None))

            with pytest.raises(psycopg.errors.UniqueViolation):
                asyncio.run(attempt())
        assert _count(conn) == 0
        # The connection is usable again, and so is the pipeline.
        assert run(_in_transaction(_requests(20)), PostgresIO(conn, None)) == _expected()
