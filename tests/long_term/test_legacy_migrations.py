"""A database an earlier release migrated (one numbered list, recorded in ``lmt_migrations``)
upgrades in place onto the per-component versions: nothing is run again, nothing recorded
is lost, and the schema ends as a new database's does, from whichever release it came.

The earlier releases are built by their own runner's semantics (``old_schema``): the list's
numbers 1..n applied in order, each recorded as a row (version, applied_at).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from langmem_tiers.errors import MigrationError
from langmem_tiers.long_term.store.migrations import STORE_SCHEMA
from langmem_tiers.server.key_migrations import API_KEYS_SCHEMA
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.sql.database import Database, aclose, open_async_connection, open_connection
from langmem_tiers.sql.flow import Flow, Sql, Transaction
from langmem_tiers.sql.item_ids import ID_MAP
from langmem_tiers.sql.migrations import (
    LEGACY_MIGRATIONS,
    LEGACY_VERSIONS,
    SCHEMA_VERSIONS,
    Component,
    migrate_flow,
    versions_flow,
)

from .old_schema import ALL_COMPONENTS, legacy_migrate_flow

#: Releases a PostgreSQL database is upgraded from: the first, those just before and after
#: the migrations that rewrote data (ids 13, packed terms 19, counters 21 and 32), the last.
PG_RELEASES = [1, 4, 12, 13, 19, 20, 25, 29, 31, 33]
AT = "2026-01-01T00:00:00+00:00"


def _tx(flow: Flow[Any]) -> Flow[Any]:
    return (yield Transaction(flow))


def _rows(db: Database, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    def flow() -> Flow[Any]:
        return (yield Sql(sql, params or []))

    return [tuple(r) for r in db.run(_tx(flow()))]


def _migrate_as_users_do(db: Database) -> None:
    """A store's setup, then a message log's, then the server's keys (each on its own)."""
    for components in (STORE_SCHEMA, [SHORT_TERM], [API_KEYS_SCHEMA]):
        db.run(_tx(migrate_flow(db.dialect, components)))


def _schema(db: Database) -> set[tuple[Any, ...]]:
    """Every table, column, index, view, trigger, function and constraint of the database,
    with the schema's own name taken out (each database here has a schema of its own).

    Less what the id migration leaves only where it renamed items: the map of their ids
    (kept for vector indexes outside the database) and, on PostgreSQL, the foreign keys
    on the items made deferrable for the renames.
    """
    return {
        tuple(v.replace(" DEFERRABLE", "") if isinstance(v, str) else v for v in row)
        for row in _catalog(db)
        if not any(isinstance(v, str) and ID_MAP in v for v in row)
    }


def _catalog(db: Database) -> set[tuple[Any, ...]]:
    if db.dialect.name == "sqlite":
        return set(
            _rows(
                db,
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            )
        )
    here = _rows(db, "SELECT current_schema()")[0][0]
    queries = [
        "SELECT 'column', table_name, column_name, data_type, is_nullable, column_default,"
        " collation_name FROM information_schema.columns WHERE table_schema = current_schema()",
        "SELECT 'index', indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()",
        "SELECT 'view', viewname, definition FROM pg_views WHERE schemaname = current_schema()",
        "SELECT 'trigger', t.tgname, c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal"
        " AND c.relnamespace = current_schema()::regnamespace",
        "SELECT 'function', proname, prosrc FROM pg_proc"
        " WHERE pronamespace = current_schema()::regnamespace",
        "SELECT 'constraint', conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE connamespace = current_schema()::regnamespace",
    ]
    return {
        tuple(str(v).replace(f"{here}.", "S.") if isinstance(v, str) else v for v in row)
        for query in queries
        for row in _rows(db, query)
    }


def _fill(db: Database, release: int) -> None:
    """Rows a database of ``release`` may hold: an item, a session, an API key."""
    if release >= 1:
        _rows(
            db,
            "INSERT INTO lmt_items (id, prefix, key, scope, value, created_at, updated_at)"
            " VALUES ('first-id', 'agent', 'k', 'agent', '{\"content\": \"kept\"}', ?, ?)",
            [AT, AT],
        )
    if release >= 2:
        _rows(db, "INSERT INTO lmt_stm_sessions (session_id, last_seq) VALUES ('s1', 3)")
    if release >= 4:
        _rows(
            db,
            "INSERT INTO lmt_api_keys (id, key_hash, scope, created_at) VALUES ('k1', 'h', 'a', ?)",
            [AT],
        )


def _check_upgrade(db: Database, fresh: set[tuple[Any, ...]], release: int) -> None:
    d = db.dialect
    _fill(db, release)
    old_rows = {
        n: d.ts_value(at)
        for n, at in _rows(db, f"SELECT version, applied_at FROM {LEGACY_MIGRATIONS}")
    }
    assert sorted(old_rows) == list(range(1, release + 1))

    _migrate_as_users_do(db)  # fails at the first statement that runs again (CREATE TABLE...)

    assert _schema(db) == fresh, f"the upgrade from release {release} ended another schema"
    expected = {c.name: len(c.migrations(d)) for c in ALL_COMPONENTS}
    assert db.run(versions_flow(d)) == expected
    # Each migration the one list applied keeps the time it was applied at.
    for component in ALL_COMPONENTS:
        recorded = dict(
            _rows(
                db,
                f"SELECT version, applied_at FROM {SCHEMA_VERSIONS} WHERE component = ?",
                [component.name],
            )
        )
        for version, migration in enumerate(component.migrations(d), start=1):
            if migration.legacy is not None and migration.legacy <= release:
                assert d.ts_value(recorded[version]) == old_rows[migration.legacy]
    # The old rows stay, one past the old list makes an earlier release refuse the database.
    after = [n for (n,) in _rows(db, f"SELECT version FROM {LEGACY_MIGRATIONS} ORDER BY 1")]
    assert after == [*range(1, release + 1), LEGACY_VERSIONS + 1]
    with pytest.raises(MigrationError, match="newer"):
        db.run(_tx(legacy_migrate_flow(d, LEGACY_VERSIONS)))
    # What the database held is still there.
    assert _rows(db, "SELECT key, value FROM lmt_items")[0][0] == "k"
    assert _rows(db, "SELECT count(*) FROM lmt_scope_changes WHERE prefix = 'agent'") == [(1,)]
    if release >= 2:
        assert _rows(db, "SELECT last_seq FROM lmt_stm_sessions") == [(3,)]
    if release >= 4:
        assert _rows(db, "SELECT id FROM lmt_api_keys") == [("k1",)]
    # And setting up again changes nothing.
    _migrate_as_users_do(db)
    assert db.run(versions_flow(d)) == expected


@contextmanager
def _sqlite(path: str) -> Iterator[Database]:
    conn = open_connection(f"sqlite:///{path}")
    try:
        yield Database(conn)
    finally:
        conn.close()


@contextmanager
def _postgres(url: str) -> Iterator[Database]:
    pool = open_connection(url, pool_size=1)
    try:
        yield Database(pool)
    finally:
        pool.close()


def test_every_sqlite_release_upgrades_in_place(tmp_path: Any) -> None:
    with _sqlite(str(tmp_path / "fresh.db")) as fresh_db:
        _migrate_as_users_do(fresh_db)
        fresh = _schema(fresh_db)
    for release in range(1, LEGACY_VERSIONS + 1):
        with _sqlite(str(tmp_path / f"release-{release}.db")) as db:
            db.run(_tx(legacy_migrate_flow(db.dialect, release)))
            _check_upgrade(db, fresh, release)


@pytest.mark.parametrize("release", PG_RELEASES)
def test_postgres_releases_upgrade_in_place(
    release: int, postgres_schemas: Callable[[], str]
) -> None:
    with _postgres(postgres_schemas()) as fresh_db:
        _migrate_as_users_do(fresh_db)
        fresh = _schema(fresh_db)
    with _postgres(postgres_schemas()) as db:
        db.run(_tx(legacy_migrate_flow(db.dialect, release)))
        _check_upgrade(db, fresh, release)


def test_a_component_first_set_up_after_the_upgrade_starts_where_the_old_list_left_it(
    tmp_path: Any,
) -> None:
    with _sqlite(str(tmp_path / "old.db")) as db:
        db.run(_tx(legacy_migrate_flow(db.dialect, 8)))  # sessions have their change count
        db.run(_tx(migrate_flow(db.dialect, STORE_SCHEMA)))
        assert SHORT_TERM.name not in db.run(versions_flow(db.dialect))
        # A message log, days later: migrations 2, 7 and 8 are recorded, 9 runs.
        db.run(_tx(migrate_flow(db.dialect, [SHORT_TERM])))
        assert db.run(versions_flow(db.dialect))[SHORT_TERM.name] == len(SHORT_TERM.sqlite)
        assert _rows(
            db, "SELECT count(*) FROM pragma_table_info('lmt_stm_messages') WHERE name = 'user_id'"
        ) == [(1,)]


def test_a_new_database_is_refused_by_an_earlier_release_and_by_an_older_component(
    tmp_path: Any,
) -> None:
    conn = sqlite3.connect(tmp_path / "new.db", isolation_level=None)
    db = Database(conn)
    _migrate_as_users_do(db)
    with pytest.raises(MigrationError, match="newer"):
        db.run(_tx(legacy_migrate_flow(db.dialect, LEGACY_VERSIONS)))
    older = Component(SHORT_TERM.name, sqlite=SHORT_TERM.sqlite[:-1], postgres=())
    with pytest.raises(MigrationError, match="'short_term' schema is at version 4, newer"):
        db.run(_tx(migrate_flow(db.dialect, [older])))
    conn.close()


@contextmanager
def _opened(url: str) -> Iterator[Database]:
    if url.startswith("sqlite:///"):
        with _sqlite(url[len("sqlite:///") :]) as db:
            yield db
    else:
        with _postgres(url) as db:
            yield db


def _schema_at(url: str) -> set[tuple[Any, ...]]:
    with _opened(url) as db:
        return _schema(db)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_the_async_setup_upgrades_a_release_as_the_sync_one_does(
    backend: str, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    if backend == "postgres":
        schemas = request.getfixturevalue("postgres_schemas")
        urls = [schemas(), schemas()]
    else:
        urls = [f"sqlite:///{tmp_path}/sync.db", f"sqlite:///{tmp_path}/async.db"]
    with _opened(urls[0]) as db:
        db.run(_tx(legacy_migrate_flow(db.dialect, 20)))
        _migrate_as_users_do(db)
        expected = db.run(versions_flow(db.dialect))
    conn = await open_async_connection(urls[1], pool_size=1)
    try:
        db = Database(conn)
        await db.arun(_tx(legacy_migrate_flow(db.dialect, 20)))
        for components in (STORE_SCHEMA, [SHORT_TERM], [API_KEYS_SCHEMA]):
            await db.arun(_tx(migrate_flow(db.dialect, components)))
        assert await db.arun(versions_flow(db.dialect)) == expected
    finally:
        await aclose(conn)
    sync_schema, async_schema = await asyncio.gather(
        asyncio.to_thread(_schema_at, urls[0]), asyncio.to_thread(_schema_at, urls[1])
    )
    assert async_schema == sync_schema
