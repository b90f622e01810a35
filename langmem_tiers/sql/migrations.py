"""The shared migration runner: each component's append-only migrations, applied in order.

A :class:`Component` (the store's items, its events, the short-term message log, the API
keys...) lives with the code that owns its tables and declares its migrations literally, one
tuple per dialect: the SQL is written out, not built by the dialect, so a migration once
released never changes. :func:`migrate_flow` applies what a database is missing of the
components it is given and records each migration applied as a row (component, version) of
``lmt_schema_versions``, so it is idempotent and safe to run from several processes at once.

Releases before components kept one numbered list for everything, recorded in
``lmt_migrations``. Every migration carried over from that list keeps its number there
(:attr:`Migration.legacy`), and that number maps such a database onto the components:

- The first time the runner meets a database, it records the highest number
  ``lmt_migrations`` holds (0 for a database without it) as the row (``lmt_migrations``,
  that number). Each component then starts at its migrations numbered up to it, their
  rows dated as the old rows were: nothing is run again and nothing recorded is lost.
- Pending migrations that have an old number run in the order of those numbers, whichever
  component they belong to, so a database of any earlier release takes the path it always
  took; migrations added since run after them, in the order the components are given.
- ``lmt_migrations`` gets one row past the old list, so an earlier release refuses the
  database (its schema is newer than that release knows) instead of changing it.

Example:
    >>> from langmem_tiers.sql.database import Database, open_connection
    >>> notes = Component(
    ...     "notes",
    ...     sqlite=(Migration(("CREATE TABLE notes (id TEXT PRIMARY KEY)",)),),
    ...     postgres=(Migration(("CREATE TABLE notes (id TEXT PRIMARY KEY)",)),),
    ... )
    >>> db = Database(open_connection("sqlite:///:memory:"))
    >>> db.run(migrate_flow(db.dialect, [notes]))
    >>> db.run(migrate_flow(db.dialect, [notes]))  # idempotent
    >>> db.run(versions_flow(db.dialect))["notes"]
    1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from langmem_tiers.errors import MigrationError
from langmem_tiers.sql.dialect import Dialect, PostgresDialect
from langmem_tiers.sql.flow import Flow, Sql

__all__ = [
    "LEGACY_MIGRATIONS",
    "LEGACY_VERSIONS",
    "SCHEMA_VERSIONS",
    "Component",
    "Migration",
    "add_column_flow",
    "migrate_flow",
    "per_engine",
    "versions_flow",
]

#: The table of the applied migrations, one row per (component, version).
SCHEMA_VERSIONS = "lmt_schema_versions"
#: The one numbered list's table of releases before components (see the module docstring).
LEGACY_MIGRATIONS = "lmt_migrations"
#: How many migrations that list had: its last number.
LEGACY_VERSIONS = 33

T = TypeVar("T")

Step = str | Callable[[Dialect], Flow[Any]]
"""One step of a migration: a statement, or a flow for what SQL alone cannot do."""


class Migration(NamedTuple):
    """One migration of a component: its steps, run in one transaction with the others."""

    steps: tuple[Step, ...]
    #: Its number in the one list of releases before components (None for one added since).
    legacy: int | None = None


@dataclass(frozen=True)
class Component:
    """A part of the schema with its own version: its migrations per dialect, append-only.

    Never edit, remove or reorder a migration: add one at the end (with no ``legacy``).
    """

    name: str
    sqlite: tuple[Migration, ...]
    postgres: tuple[Migration, ...]

    def migrations(self, dialect: Dialect) -> tuple[Migration, ...]:
        """The migrations of ``dialect``'s engine."""
        return per_engine(dialect, sqlite=self.sqlite, postgres=self.postgres)


def per_engine(dialect: Dialect, *, sqlite: T, postgres: T) -> T:
    """Of what is declared once per engine, ``dialect``'s: the one place a schema
    declaration is chosen by engine (queries ask the dialect itself).

    Example:
        >>> from langmem_tiers.sql.dialect import PostgresDialect
        >>> per_engine(PostgresDialect(), sqlite="BLOB", postgres="vector")
        'vector'
    """
    return postgres if dialect.name == PostgresDialect.name else sqlite


def add_column_flow(dialect: Dialect, table: str, column: str, definition: str) -> Flow[None]:
    """Add ``column`` to ``table`` unless it is there (a migration run again after its
    record was lost must not fail)."""
    rows = yield Sql(dialect.column_exists_sql(), [table, column])
    if not rows[0][0]:
        yield Sql(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


def versions_flow(dialect: Dialect) -> Flow[dict[str, int]]:
    """The version of every component the database has (none for an empty database)."""
    exists = yield Sql(dialect.table_exists_sql(), [SCHEMA_VERSIONS])
    if not exists[0][0]:
        return {}
    rows = yield Sql(
        f"SELECT component, max(version) FROM {SCHEMA_VERSIONS}"
        f" WHERE component <> '{LEGACY_MIGRATIONS}' GROUP BY component"
    )
    return {str(name): int(version) for name, version in rows}


# Concurrent setups of one PostgreSQL database wait for each other (SQLite's write
# transaction is serial already).
_POSTGRES_LOCK = "SELECT pg_advisory_xact_lock(hashtext('langmem_tiers.migrations'))"


class _Pending(NamedTuple):
    order: tuple[float, int, int]
    component: str
    version: int
    migration: Migration


def migrate_flow(dialect: Dialect, components: Sequence[Component]) -> Flow[None]:
    """Apply the missing migrations of ``components``, each recorded with its version.

    Run it inside one transaction; on PostgreSQL an advisory lock makes concurrent setups
    wait for each other instead of racing.
    """
    lock = per_engine(dialect, sqlite=None, postgres=_POSTGRES_LOCK)
    if lock is not None:
        yield Sql(lock)
    legacy = yield from _legacy_level_flow(dialect)
    applied = yield from versions_flow(dialect)
    pending: list[_Pending] = []
    for position, component in enumerate(components):
        migrations = component.migrations(dialect)
        current = applied.get(component.name)
        if current is None:
            current = yield from _map_legacy_flow(dialect, component.name, migrations, legacy)
        if current > len(migrations):
            raise MigrationError(
                f"the database's {component.name!r} schema is at version {current}, newer "
                f"than this package knows ({len(migrations)}); upgrade langmem-tiers."
            )
        for version, migration in enumerate(migrations[current:], start=current + 1):
            first = float("inf") if migration.legacy is None else migration.legacy
            pending.append(_Pending((first, position, version), component.name, version, migration))
    for step in sorted(pending):
        for statement in step.migration.steps:
            if callable(statement):
                yield from statement(dialect)
            else:
                yield Sql(statement)
        yield from _record_flow(dialect, step.component, step.version, dialect.now())


def _record_flow(dialect: Dialect, component: str, version: int, at: Any) -> Flow[None]:
    yield Sql(
        f"INSERT INTO {SCHEMA_VERSIONS} (component, version, applied_at) VALUES (?, ?, ?)",
        [component, version, dialect.ts_param(at) if not isinstance(at, str) else at],
    )


def _legacy_level_flow(dialect: Dialect) -> Flow[int]:
    """The last number of the one list the database had when this runner first met it."""
    ts = dialect.ts_type
    yield Sql(
        f"CREATE TABLE IF NOT EXISTS {SCHEMA_VERSIONS} (component TEXT NOT NULL,"
        f" version INTEGER NOT NULL, applied_at {ts} NOT NULL, PRIMARY KEY (component, version))"
    )
    rows = yield Sql(
        f"SELECT version FROM {SCHEMA_VERSIONS} WHERE component = '{LEGACY_MIGRATIONS}'"
    )
    if rows:
        return int(rows[0][0])
    yield Sql(
        f"CREATE TABLE IF NOT EXISTS {LEGACY_MIGRATIONS}"
        f" (version INTEGER PRIMARY KEY, applied_at {ts} NOT NULL)"
    )
    found = yield Sql(f"SELECT max(version) FROM {LEGACY_MIGRATIONS}")
    level = int(found[0][0] or 0)
    now = dialect.now()
    yield from _record_flow(dialect, LEGACY_MIGRATIONS, level, now)
    # An earlier release reads the highest number and refuses one past its list.
    yield Sql(
        f"INSERT INTO {LEGACY_MIGRATIONS} (version, applied_at) VALUES (?, ?)"
        " ON CONFLICT (version) DO NOTHING",
        [LEGACY_VERSIONS + 1, dialect.ts_param(now)],
    )
    return level


def _map_legacy_flow(
    dialect: Dialect, name: str, migrations: Sequence[Migration], legacy: int
) -> Flow[int]:
    """Record the migrations of a component new to the runner that the one list applied."""
    done = [
        version
        for version, m in enumerate(migrations, start=1)
        if m.legacy is not None and m.legacy <= legacy
    ]
    if not done:
        return 0
    rows = yield Sql(f"SELECT version, applied_at FROM {LEGACY_MIGRATIONS}")
    when = {int(number): at for number, at in rows}
    for version in done:
        number = migrations[version - 1].legacy or 0
        yield from _record_flow(dialect, name, version, when.get(number) or dialect.now())
    return len(done)
