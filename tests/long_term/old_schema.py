"""The stores as they were while their terms were a table of their own.

Tests that build a database with an older schema, then open it with this package to see it
upgraded, write the old database with the writer of that time: these statements are what
it wrote terms with and read a search's postings from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pytest

from langmem_tiers.long_term.store.writes import StoreWriter
from langmem_tiers.sql.dialect import TERMS, Dialect, PostgresDialect, SqliteDialect
from langmem_tiers.sql.flow import Flow, Sql
from langmem_tiers.sql.item_ids import item_id

_INSERT_TERMS = {
    "sqlite": (
        f"INSERT INTO {TERMS} (item_id, term, tf)"
        " SELECT a.key, t.key, t.value FROM json_each(?) AS a, json_each(a.value) AS t"
        " ORDER BY 1, 2"
    ),
    "postgres": (
        f"INSERT INTO {TERMS} (item_id, term, tf)"
        " SELECT a.key, t.key, t.value::int"
        " FROM json_each(?::json) AS a, json_each_text(a.value) AS t ORDER BY 1, 2"
    ),
}


def _sqlite_scope_postings_sql(self: SqliteDialect, term_set: str) -> str:
    return (
        "SELECT t.item_id, t.term, t.tf, c.doc_len FROM c CROSS JOIN"
        f" {TERMS} t WHERE t.item_id = c.id AND +t.term IN {term_set}"
    )


def _postgres_scope_postings_sql(self: PostgresDialect, term_set: str) -> str:
    return (
        "SELECT t.item_id, t.term, t.tf, c.doc_len FROM c CROSS JOIN LATERAL"
        f" (SELECT t.item_id, t.term, t.tf FROM {TERMS} t WHERE t.item_id = c.id"
        f" OFFSET 0) t WHERE t.term IN {term_set}"
    )


def _with_terms_rows(write_flow: Callable[..., Flow[Any]]) -> Callable[..., Flow[Any]]:
    """``StoreWriter.write_flow`` that also writes each put's terms rows, as it did."""

    def written(
        self: StoreWriter,
        puts: Sequence[Any],
        rows: Sequence[Any],
        now: datetime,
        notes: Mapping[str, Any],
        **options: Any,
    ) -> Flow[Any]:
        own = yield from write_flow(self, puts, rows, now, notes, **options)
        dialect: Dialect = self.dialect
        in_ids, params = dialect.in_list("item_id", [item_id(p.namespace, p.key) for p in puts])
        yield Sql(f"DELETE FROM {TERMS} WHERE {in_ids}", params)
        terms = {p.record.id: p.terms for p in puts if p.record is not None and p.terms}
        if terms:
            yield Sql(_INSERT_TERMS[dialect.name], [json.dumps(terms)])
        return own

    return written


def write_terms_table(patch: pytest.MonkeyPatch) -> None:
    """Make stores write and read the terms table, as before the terms views."""
    patch.setattr(StoreWriter, "write_flow", _with_terms_rows(StoreWriter.write_flow))
    patch.setattr(SqliteDialect, "scope_postings_sql", _sqlite_scope_postings_sql)
    patch.setattr(PostgresDialect, "scope_postings_sql", _postgres_scope_postings_sql)
    for dialect in (SqliteDialect, PostgresDialect):
        patch.setattr(dialect, "postings_scope_columns", "i.id, i.doc_len")


def with_access_table(steps: list[Any], dialect: Dialect) -> list[Any]:
    """An older database's ``steps``, the last one also making the access counts' table.

    The code under test reads access counts only there; the rest of the old schema is what
    such a test upgrades. Versions are positions in the list, so the table joins the last
    step rather than adding one (its migration runs again at the end, changing nothing).
    """
    return [*steps[:-1], [*steps[-1], *dialect.item_access_migration()]]
