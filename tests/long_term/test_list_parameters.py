"""List parameters reach PostgreSQL as arrays in the binary format, with the same values.

Ids to lock, to read and to write events of go to the server as one array; the binary
format spares quoting each element in Python and parsing it back on the server.
"""

from __future__ import annotations

import psycopg
import pytest

from langmem_tiers.sql.flow import Sql
from langmem_tiers.sql.postgres_io import AsyncPostgresIO, PostgresIO, psycopg_query, to_psycopg


def test_list_parameters_take_binary_placeholders_and_the_rest_stay_text() -> None:
    text = "SELECT ? || '%' FROM t WHERE a = ANY(?::text[]) AND b = ? AND c = ANY(?::bigint[])"
    assert psycopg_query(text, ["x", ["a"], ("t",), [1]]) == (
        "SELECT %s || '%%' FROM t WHERE a = ANY(%b::text[]) AND b = %s AND c = ANY(%b::bigint[])"
    )
    assert psycopg_query(text, ["x", "a", "b", "c"]) == to_psycopg(text)


TRICKY = ["plain", "", None, 'quote " and \\ backslash', "{braces},commas", "ünïcødé ✓", "NULL"]


@pytest.mark.parametrize(
    ("sql", "value", "expected"),
    [
        ("SELECT ?::text[]", TRICKY, TRICKY),
        ("SELECT ?::text[]", [], []),
        ("SELECT ?::bigint[]", [1, None, 2**40], [1, None, 2**40]),
        ("SELECT ?::jsonb[]", ['{"a": 1}', "[]", '"s"'], [{"a": 1}, [], "s"]),
    ],
    ids=["text", "empty", "bigint", "jsonb"],
)
def test_a_list_parameter_round_trips(
    postgres_url: str, sql: str, value: list[object], expected: list[object]
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        io = PostgresIO(conn, None)
        assert io.sql(Sql(sql, [value])) == [(expected,)]


async def test_a_list_parameter_round_trips_through_the_async_driver(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        io = AsyncPostgresIO(conn, None)
        assert await io.sql(Sql("SELECT ?::text[], ?", [TRICKY, "x"])) == [(TRICKY, "x")]


def test_a_list_beside_text_parameters_selects_the_rows_it_names(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INT)")
        conn.execute("INSERT INTO t SELECT 'id-' || g, g FROM generate_series(1, 1000) g")
        io = PostgresIO(conn, None)
        wanted = [f"id-{n}" for n in range(1, 1001, 7)]
        rows = io.sql(
            Sql(
                "SELECT count(*), sum(n) FROM t WHERE id = ANY(?::text[]) AND id <> ? AND n > ?",
                [wanted, "id-1", 0],
            )
        )
        assert rows == [(len(wanted) - 1, sum(range(8, 1001, 7)))]
