"""The SQL dialects: parameter adapters and the query builders of SQLite and PostgreSQL.

SQL is written once with ``?`` placeholders; the PostgreSQL executor turns them into
``%s``. The two dialects differ in column types, JSON access, parameter adaptation and the
statements that let concurrent writers share a database, which live in the small
:class:`SqliteDialect` / :class:`PostgresDialect`. Values are always bound parameters; the
only identifiers built into SQL are the fixed table names (:mod:`langmem_tiers.sql.tables`,
re-exported here) and validated JSON paths (:mod:`langmem_tiers.sql.json_paths`). The
schema is not here: each component declares its migrations (:mod:`langmem_tiers.sql.migrations`).
"""

from __future__ import annotations

from langmem_tiers.sql.dialect_base import Dialect, compact_json
from langmem_tiers.sql.postgres_dialect import PostgresDialect
from langmem_tiers.sql.sqlite_dialect import SqliteDialect
from langmem_tiers.sql.tables import (
    ACCESS_COUNT_SQL,
    API_KEYS,
    CHANGES_KEPT,
    COUNTED_COLUMNS,
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEM_ACCESS,
    ITEM_CHANGES,
    ITEM_COLUMN_TYPES,
    ITEMS,
    KEEP_ON_UPDATE,
    LAST_ACCESSED_SQL,
    MEMBERSHIP_TIMES,
    META,
    PACKED_SEPARATOR,
    SCOPE_CHANGES,
    SCOPE_MOVES,
    STM_LEASES,
    STM_MESSAGES,
    STM_SESSIONS,
    TERM_ROWS,
    TERMS,
    UPDATE_COLUMN_TYPES,
    VECTORS,
    VERSIONS,
    item_columns,
)

__all__ = [
    "ACCESS_COUNT_SQL",
    "API_KEYS",
    "CHANGES_KEPT",
    "COUNTED_COLUMNS",
    "ENTITIES",
    "ENTITY_MENTIONS",
    "EVENTS",
    "ITEMS",
    "ITEM_ACCESS",
    "ITEM_CHANGES",
    "ITEM_COLUMN_TYPES",
    "KEEP_ON_UPDATE",
    "LAST_ACCESSED_SQL",
    "MEMBERSHIP_TIMES",
    "META",
    "PACKED_SEPARATOR",
    "SCOPE_CHANGES",
    "SCOPE_MOVES",
    "STM_LEASES",
    "STM_MESSAGES",
    "STM_SESSIONS",
    "TERMS",
    "TERM_ROWS",
    "UPDATE_COLUMN_TYPES",
    "VECTORS",
    "VERSIONS",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "compact_json",
    "item_columns",
]
