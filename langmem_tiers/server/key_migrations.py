"""The HTTP server's API keys (:mod:`langmem_tiers.server.keys`), as a component of
:mod:`langmem_tiers.sql.migrations`: only a hash of each key is kept; a key is bound to one
scope, or is an admin key (scope NULL).

Example:
    >>> API_KEYS_SCHEMA.name, API_KEYS_SCHEMA.sqlite[0].legacy
    ('api_keys', 4)
"""

from __future__ import annotations

from langmem_tiers.sql.migrations import Component, Migration

__all__ = ["API_KEYS_SCHEMA"]

_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=4,
        steps=(
            """CREATE TABLE lmt_api_keys (
                id TEXT PRIMARY KEY,
                key_hash TEXT NOT NULL,
                scope TEXT,
                is_admin INTEGER NOT NULL DEFAULT 0,
                name TEXT,
                created_at TEXT NOT NULL,
                last_used_at TEXT,
                revoked_at TEXT
            )""",
            "CREATE INDEX lmt_api_keys_scope ON lmt_api_keys (scope)",
        ),
    ),
)

_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=4,
        steps=(
            """CREATE TABLE lmt_api_keys (
                id TEXT PRIMARY KEY,
                key_hash TEXT NOT NULL,
                scope TEXT,
                is_admin INTEGER NOT NULL DEFAULT 0,
                name TEXT,
                created_at TIMESTAMPTZ NOT NULL,
                last_used_at TIMESTAMPTZ,
                revoked_at TIMESTAMPTZ
            )""",
            "CREATE INDEX lmt_api_keys_scope ON lmt_api_keys (scope)",
        ),
    ),
)

#: The keys table.
API_KEYS_SCHEMA = Component("api_keys", sqlite=_SQLITE, postgres=_POSTGRES)
