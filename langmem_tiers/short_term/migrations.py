"""The SQL message log's schema (:mod:`langmem_tiers.short_term.sql_log`), as a component
of :mod:`langmem_tiers.sql.migrations`: sessions with their id counters, messages with
their tiers, consolidation leases.

Statements are written out per dialect, as they ran; ``legacy=`` numbers are the
migrations' numbers in the one list of earlier releases.

Example:
    >>> SHORT_TERM.name, len(SHORT_TERM.sqlite)
    ('short_term', 4)
"""

from __future__ import annotations

from langmem_tiers.sql.migrations import Component, Migration

__all__ = ["SHORT_TERM"]

_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=2,
        steps=(
            """CREATE TABLE lmt_stm_sessions (
                session_id TEXT PRIMARY KEY,
                last_seq BIGINT NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE lmt_stm_messages (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                tier1 TEXT,
                tier2 TEXT,
                required_tier_level INTEGER NOT NULL DEFAULT 1,
                created_at TEXT NOT NULL,
                extra TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
        ),
    ),
    Migration(
        legacy=7,
        steps=(
            """CREATE TABLE lmt_stm_leases (
                session_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL
            )""",
        ),
    ),
    Migration(
        legacy=8,
        steps=("ALTER TABLE lmt_stm_sessions ADD COLUMN changes BIGINT NOT NULL DEFAULT 0",),
    ),
    Migration(
        legacy=9,
        steps=(
            "ALTER TABLE lmt_stm_messages ADD COLUMN user_id TEXT",
            "CREATE INDEX lmt_stm_messages_user ON lmt_stm_messages (user_id, session_id, seq) "
            "WHERE user_id IS NOT NULL",
        ),
    ),
)

_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=2,
        steps=(
            """CREATE TABLE lmt_stm_sessions (
                session_id TEXT PRIMARY KEY,
                last_seq BIGINT NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE lmt_stm_messages (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                role TEXT NOT NULL,
                content JSONB NOT NULL,
                tier1 TEXT,
                tier2 TEXT,
                required_tier_level INTEGER NOT NULL DEFAULT 1,
                created_at TEXT NOT NULL,
                extra JSONB NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
        ),
    ),
    Migration(
        legacy=7,
        steps=(
            """CREATE TABLE lmt_stm_leases (
                session_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL
            )""",
        ),
    ),
    Migration(
        legacy=8,
        steps=("ALTER TABLE lmt_stm_sessions ADD COLUMN changes BIGINT NOT NULL DEFAULT 0",),
    ),
    Migration(
        legacy=9,
        steps=(
            "ALTER TABLE lmt_stm_messages ADD COLUMN user_id TEXT",
            "CREATE INDEX lmt_stm_messages_user ON lmt_stm_messages (user_id, session_id, seq) "
            "WHERE user_id IS NOT NULL",
        ),
    ),
)

#: Sessions (the id counter and a count of changes other than appends), messages (with the
#: user a conversation is with, when the caller said) and one consolidation lease a session.
SHORT_TERM = Component("short_term", sqlite=_SQLITE, postgres=_POSTGRES)
