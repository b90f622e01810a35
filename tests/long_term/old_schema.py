"""Databases as earlier releases left them, for tests that open them with this package.

A release before components kept one numbered list of migrations, applied by a runner that
recorded each number as a row of ``lmt_migrations`` (:func:`legacy_migrate_flow` is that
runner, over the migrations every component carried over with their old numbers).
:func:`as_release` makes stores set up as the release with ``upto`` migrations did.

While the terms were a table of their own, such a release also wrote them there: these
statements are what it wrote terms with and read a search's postings from.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pytest

from langmem_tiers.errors import MigrationError
from langmem_tiers.long_term.store import writes
from langmem_tiers.long_term.store.migrations import STORE_SCHEMA
from langmem_tiers.long_term.store.writes import StoreWriter
from langmem_tiers.server.key_migrations import API_KEYS_SCHEMA
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.sql import dialect_base, postgres_dialect, tables
from langmem_tiers.sql import migrations as schema
from langmem_tiers.sql.dialect import TERMS, Dialect, PostgresDialect, SqliteDialect
from langmem_tiers.sql.flow import Flow, Sql
from langmem_tiers.sql.item_ids import item_id
from langmem_tiers.sql.migrations import LEGACY_MIGRATIONS, Component, Step

#: Every component an earlier release's one list created the tables of.
ALL_COMPONENTS: tuple[Component, ...] = (*STORE_SCHEMA, SHORT_TERM, API_KEYS_SCHEMA)
#: The old numbers of some migrations the upgrade tests start before or after.
TERMS_KEYED = 15  # the terms table keyed by (item_id, term)
PACKED_TERMS = 19  # each item's terms packed beside it
ITEM_ACCESS = 31  # the access counts in a table of their own


def legacy_steps(dialect: Dialect, number: int) -> list[Step]:
    """The steps of migration ``number`` of the one list, as that release ran them."""
    return [
        step
        for component in ALL_COMPONENTS
        for migration in component.migrations(dialect)
        if migration.legacy == number
        for step in migration.steps
    ]


def _run_steps(dialect: Dialect, steps: Sequence[Step]) -> Flow[None]:
    for step in steps:
        if callable(step):
            yield from step(dialect)
        else:
            yield Sql(step)


def legacy_migrate_flow(dialect: Dialect, upto: int, *, also: Sequence[int] = ()) -> Flow[None]:
    """``migrate_flow`` of the release whose list had ``upto`` migrations: the missing
    numbers in order, each recorded as a row (version, applied_at) of ``lmt_migrations``.

    ``also`` are later numbers run with the last one, unrecorded (tables the code under
    test reads that the rest of the old schema did not have yet).
    """
    if dialect.name == "postgres":
        yield Sql("SELECT pg_advisory_xact_lock(hashtext('langmem_tiers.migrations'))")
    yield Sql(
        f"CREATE TABLE IF NOT EXISTS {LEGACY_MIGRATIONS}"
        f" (version INTEGER PRIMARY KEY, applied_at {dialect.ts_type} NOT NULL)"
    )
    rows = yield Sql(f"SELECT max(version) FROM {LEGACY_MIGRATIONS}")
    current = int(rows[0][0] or 0)
    if current > upto:
        raise MigrationError(f"the database schema is at version {current}, newer ({upto})")
    for number in range(current + 1, upto + 1):
        yield from _run_steps(dialect, legacy_steps(dialect, number))
        if number == upto:
            for later in also:
                yield from _run_steps(dialect, legacy_steps(dialect, later))
        yield Sql(
            f"INSERT INTO {LEGACY_MIGRATIONS} (version, applied_at) VALUES (?, ?)",
            [number, dialect.ts_param(dialect.now())],
        )


def as_release(patch: pytest.MonkeyPatch, upto: int, *, also: Sequence[int] = ()) -> None:
    """Make every setup (stores, message logs, keys) migrate as the release with ``upto``
    migrations did (see :func:`legacy_migrate_flow`)."""

    def migrate(dialect: Dialect, components: Sequence[Component]) -> Flow[None]:
        return legacy_migrate_flow(dialect, upto, also=also)

    patch.setattr(schema, "migrate_flow", migrate)


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


def write_without_packed_terms(patch: pytest.MonkeyPatch) -> None:
    """Make stores write items without their packed terms, as before that column."""
    columns = tuple(c for c in tables.item_columns if c != "terms")
    for module in (dialect_base, postgres_dialect, writes):
        patch.setattr(module, "item_columns", columns)


def write_terms_table(patch: pytest.MonkeyPatch) -> None:
    """Make stores write and read the terms table, as before the terms views."""
    patch.setattr(StoreWriter, "write_flow", _with_terms_rows(StoreWriter.write_flow))
    patch.setattr(SqliteDialect, "scope_postings_sql", _sqlite_scope_postings_sql)
    patch.setattr(PostgresDialect, "scope_postings_sql", _postgres_scope_postings_sql)
    for dialect in (SqliteDialect, PostgresDialect):
        patch.setattr(dialect, "postings_scope_columns", "i.id, i.doc_len")
