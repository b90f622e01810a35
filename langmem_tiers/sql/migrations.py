"""The schema's migrations: an append-only numbered list, applied by :func:`migrate_flow`.

Each entry brings the schema one version further; ``lmt_migrations`` records the versions
applied, so :func:`migrate_flow` is idempotent and safe to run from several processes at
once. What differs between SQLite and PostgreSQL (column types, view and index syntax) is
asked of the :class:`~langmem_tiers.sql.dialect.Dialect`.

Example:
    >>> from langmem_tiers.sql.dialect import SqliteDialect
    >>> len(migrations(SqliteDialect())) >= 1
    True
"""

from __future__ import annotations

from typing import Any

from langmem_tiers.errors import MigrationError
from langmem_tiers.sql.dialect import (
    API_KEYS,
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEMS,
    META,
    MIGRATIONS,
    SCOPE_CHANGES,
    STM_LEASES,
    STM_MESSAGES,
    STM_SESSIONS,
    TERMS,
    VECTORS,
    VERSIONS,
    Dialect,
    MigrationStep,
)
from langmem_tiers.sql.flow import Flow, Sql
from langmem_tiers.sql.item_ids import rekey_items_flow

__all__ = ["current_version_flow", "migrate_flow", "migrations"]


def migrations(dialect: Dialect) -> list[list[MigrationStep]]:
    """Append-only list of migrations; migration ``i`` brings the schema to version ``i+1``.

    A step is a statement, or a function of the dialect returning a flow (for data
    migrations that need Python).

    Never edit or reorder an entry: add a new one.
    """
    j, ts = dialect.json_type, dialect.ts_type
    return [
        [
            f"""CREATE TABLE {ITEMS} (
                id TEXT PRIMARY KEY,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                value {j} NOT NULL,
                created_at {ts} NOT NULL,
                updated_at {ts} NOT NULL,
                event_at {ts},
                session_id TEXT,
                actor TEXT,
                action_type TEXT,
                subject TEXT,
                category TEXT,
                version INTEGER NOT NULL DEFAULT 1,
                valid_from {ts},
                valid_until {ts},
                proc_key TEXT,
                reinforcement_count INTEGER NOT NULL DEFAULT 0,
                last_used_at {ts},
                confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                importance DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                access_count BIGINT NOT NULL DEFAULT 0,
                last_accessed_at {ts},
                status TEXT NOT NULL DEFAULT 'active',
                consolidated_into_id TEXT,
                doc_len INTEGER NOT NULL DEFAULT 0,
                UNIQUE (prefix, key)
            )""",
            f"CREATE INDEX {ITEMS}_prefix_updated ON {ITEMS} (prefix, updated_at)",
            f"CREATE INDEX {ITEMS}_scope_kind ON {ITEMS} (scope, kind, status)",
            f"CREATE INDEX {ITEMS}_session ON {ITEMS} (scope, session_id)"
            " WHERE session_id IS NOT NULL",
            f"CREATE INDEX {ITEMS}_proc_key ON {ITEMS} (scope, proc_key)"
            " WHERE proc_key IS NOT NULL",
            f"""CREATE TABLE {TERMS} (
                term TEXT NOT NULL,
                item_id TEXT NOT NULL REFERENCES {ITEMS} (id) ON DELETE CASCADE,
                tf INTEGER NOT NULL,
                PRIMARY KEY (term, item_id)
            )""",
            f"CREATE INDEX {TERMS}_item ON {TERMS} (item_id)",
            f"CREATE TABLE {META} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ],
        [
            # Short-term memory: the id counter per session and the messages with tiers.
            f"""CREATE TABLE {STM_SESSIONS} (
                session_id TEXT PRIMARY KEY,
                last_seq BIGINT NOT NULL DEFAULT 0
            )""",
            f"""CREATE TABLE {STM_MESSAGES} (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                role TEXT NOT NULL,
                content {j} NOT NULL,
                tier1 TEXT,
                tier2 TEXT,
                required_tier_level INTEGER NOT NULL DEFAULT 1,
                created_at TEXT NOT NULL,
                extra {j} NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
        ],
        [
            # The event log: one row per change of a memory, in the change's transaction.
            f"""CREATE TABLE {EVENTS} (
                seq {dialect.serial_key},
                at {ts} NOT NULL,
                type TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                memory_id TEXT NOT NULL,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                before {j},
                after {j},
                metadata {j} NOT NULL,
                correlation_id TEXT,
                actor TEXT
            )""",
            f"CREATE INDEX {EVENTS}_scope_seq ON {EVENTS} (scope, seq)",
            f"CREATE INDEX {EVENTS}_memory_seq ON {EVENTS} (memory_id, seq)",
        ],
        [
            # API keys of the HTTP server: only a hash of each key is kept. A key is
            # bound to one scope, or is an admin key (scope NULL).
            f"""CREATE TABLE {API_KEYS} (
                id TEXT PRIMARY KEY,
                key_hash TEXT NOT NULL,
                scope TEXT,
                is_admin INTEGER NOT NULL DEFAULT 0,
                name TEXT,
                created_at {ts} NOT NULL,
                last_used_at {ts},
                revoked_at {ts}
            )""",
            f"CREATE INDEX {API_KEYS}_scope ON {API_KEYS} (scope)",
        ],
        [
            # Versions of semantic memories (the memory engine): one row per version,
            # the content and value as they were, why it changed, and when it held.
            f"""CREATE TABLE {VERSIONS} (
                memory_id TEXT NOT NULL REFERENCES {ITEMS} (id) ON DELETE CASCADE,
                version INTEGER NOT NULL,
                scope TEXT NOT NULL,
                content TEXT NOT NULL,
                value {j} NOT NULL,
                confidence DOUBLE PRECISION NOT NULL,
                valid_from {ts},
                valid_until {ts},
                reason TEXT,
                created_at {ts} NOT NULL,
                PRIMARY KEY (memory_id, version)
            )""",
            f"CREATE INDEX {VERSIONS}_scope ON {VERSIONS} (scope, memory_id)",
            # Consolidation looks for a scope's episodes not consolidated yet.
            f"CREATE INDEX {ITEMS}_unconsolidated ON {ITEMS} (scope, kind)"
            " WHERE consolidated_into_id IS NULL",
        ],
        [
            # BM25 reads the terms of one scope's items: drive it from the items, with
            # an index that answers (item, term) -> tf without touching the table.
            f"CREATE INDEX {TERMS}_item_term ON {TERMS} (item_id, term, tf)",
            f"DROP INDEX {TERMS}_item",
        ],
        [
            # Short-term memory: one consolidation lease per session, so concurrent
            # writers summarise each overflowing window once (short_term/log.py ClaimOp).
            f"""CREATE TABLE {STM_LEASES} (
                session_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at DOUBLE PRECISION NOT NULL
            )""",
        ],
        [
            # Short-term memory: a session's count of changes other than appends, so a
            # log that caches the window reads only the rows appended since, unless
            # something was removed or changed (short_term/sql_log.py).
            f"ALTER TABLE {STM_SESSIONS} ADD COLUMN changes BIGINT NOT NULL DEFAULT 0",
        ],
        [
            # Short-term memory: the user a message's conversation is with (when the
            # caller said), so a user's sessions can be listed and exported.
            f"ALTER TABLE {STM_MESSAGES} ADD COLUMN user_id TEXT",
            f"CREATE INDEX {STM_MESSAGES}_user ON {STM_MESSAGES} (user_id, session_id, seq)"
            " WHERE user_id IS NOT NULL",
        ],
        [
            # No global approximate vector index: every insert paid for one HNSW graph
            # over all scopes, while a search reads one scope, which
            # an exact scan through the prefix index answers (see PgVectorIndex).
            f"DROP INDEX IF EXISTS {VECTORS}_hnsw",
        ],
        [
            # Time to live, as LangGraph's stores define it: an item with a TTL expires
            # ttl_minutes after it was written (or last read, with refresh on read);
            # reads skip expired items and the sweep deletes them.
            f"ALTER TABLE {ITEMS} ADD COLUMN expires_at {ts}",
            f"ALTER TABLE {ITEMS} ADD COLUMN ttl_minutes DOUBLE PRECISION",
            f"CREATE INDEX {ITEMS}_expires ON {ITEMS} (expires_at) WHERE expires_at IS NOT NULL",
        ],
        # Namespace prefixes are range-compared in byte order (under_namespace_sql).
        dialect.byte_order_migration(),
        # Item ids that cannot collide (sql/item_ids.py): every stored id is rewritten.
        [_rekey_items],
        # The seed's table of conversation summaries, as a read-only view of the items.
        [dialect.summaries_view_sql()],
        # The terms keyed by (item_id, term) alone, tf beside the key: every read goes
        # item first, and one B-tree instead of two halves the cost of writing terms.
        dialect.terms_key_migration(),
        # A change counter per namespace, for searches that keep a namespace's terms
        # and vectors in process (long_term/store/search/scope_cache.py).
        dialect.scope_change_migration(),
        # Which items of a namespace a search may return, read from one index alone.
        dialect.live_items_index_migration(),
        # PostgreSQL reads a search's postings by term (SQLite keeps namespaces in process).
        dialect.postings_index_migration(),
        # Each item's terms packed beside it, so a namespace's terms are read one row an item.
        [_packed_terms],
        [
            # Indexes every put paid for and no read needs. A namespace's range is read
            # through the live index, which leads with the prefix as this one did.
            f"DROP INDEX IF EXISTS {ITEMS}_prefix_updated",
            # Nearly every item is unconsolidated, so this partial index held them all; a
            # scope's waiting episodes are found through (scope, kind, status) as well.
            f"DROP INDEX IF EXISTS {ITEMS}_unconsolidated",
            # PostgreSQL: an item's terms go with it by a trigger, not a per-row key check.
            *dialect.terms_cascade_migration(),
        ],
        # The change counter per namespace where the dialect did not keep it before
        # (PostgreSQL), so searches there keep namespaces in process too.
        dialect.scope_change_upgrade_migration(),
        # Updates that may change a search's members counted per namespace, so a search
        # of an unchanged namespace reuses the members an earlier one read.
        dialect.membership_change_migration(),
        # What a search reads of a namespace it loads, from one index alone.
        dialect.namespace_load_index_migration(),
        [
            # A scope's episodes waiting for consolidation, counted at every add: an index
            # of those alone (fewer than the threshold, once consolidation runs), not of
            # every episode the scope ever had, nor of its semantic memories. Its columns
            # are the count's four equalities: SQLite, without statistics, takes the index
            # that matches the most of them, and (scope, kind, status) matches three.
            f"CREATE INDEX IF NOT EXISTS {ITEMS}_waiting_episodes"
            f" ON {ITEMS} (scope, kind, status, consolidated_into_id)"
            " WHERE kind = 'episodic' AND consolidated_into_id IS NULL",
        ],
        # Membership changes counted where they were not (PostgreSQL), so a warm search
        # there checks two counters instead of counting its members.
        dialect.membership_change_upgrade_migration(),
        # Every counted change logged with its item, so a search after a write reads the
        # items written, not the namespace again.
        dialect.change_log_migration(),
        # PostgreSQL: the terms read from the items' packed column, not written twice.
        dialect.terms_view_migration(),
        # SQLite: the same, unpacked by its JSON functions.
        dialect.json_terms_view_migration(),
        # PostgreSQL: the next time a namespace's members change at, read from one index.
        dialect.membership_times_index_migration(),
        # PostgreSQL: an update's changes counted once per statement, not per row.
        dialect.update_count_per_statement_migration(),
        # Access counts in a table of their own: counting a search's results no longer
        # rewrites the items' rows.
        dialect.item_access_migration(),
        [
            # The counters began at zero on a database that already held memories, and a
            # process that found a namespace's count at zero took it for empty (a put
            # there, then a search, saw only the put). Every namespace with items counts
            # them now: a count that moves makes every cache read the namespace again.
            f"INSERT INTO {SCOPE_CHANGES} (prefix, changes)"
            f" SELECT prefix, count(*) FROM {ITEMS} WHERE true GROUP BY prefix"
            " ON CONFLICT (prefix) DO UPDATE SET changes ="
            f" {SCOPE_CHANGES}.changes + excluded.changes",
        ],
        # -- entities (tables only added) ------------------------------------------------
        # The entities each scope's memories name, and the memories naming each one.
        [
            f"""CREATE TABLE IF NOT EXISTS {ENTITIES} (
                id TEXT PRIMARY KEY,
                scope TEXT NOT NULL,
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                aliases TEXT NOT NULL,
                stem TEXT NOT NULL,
                mentions BIGINT NOT NULL,
                first_seen {ts} NOT NULL,
                last_seen {ts} NOT NULL
            )""",
            f"CREATE INDEX IF NOT EXISTS {ENTITIES}_scope_stem ON {ENTITIES} (scope, stem)",
            f"CREATE INDEX IF NOT EXISTS {ENTITIES}_scope_mentions ON {ENTITIES} (scope, mentions)",
            f"""CREATE TABLE IF NOT EXISTS {ENTITY_MENTIONS} (
                entity_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                at {ts} NOT NULL,
                PRIMARY KEY (entity_id, memory_id)
            )""",
            f"CREATE INDEX IF NOT EXISTS {ENTITY_MENTIONS}_memory ON {ENTITY_MENTIONS} (memory_id)",
        ],
        # -- end of entities -------------------------------------------------------------
    ]


def _rekey_items(dialect: Dialect) -> Flow[Any]:
    return (yield from rekey_items_flow(dialect))


def _packed_terms(dialect: Dialect) -> Flow[None]:
    """The items' ``terms`` column (see ``bm25.pack_terms``), filled from the terms table."""
    rows = yield Sql(dialect.column_exists_sql(), [ITEMS, "terms"])
    if not rows[0][0]:
        yield Sql(f"ALTER TABLE {ITEMS} ADD COLUMN terms TEXT")
    yield Sql(f"UPDATE {ITEMS} SET terms = {dialect.packed_terms_sql(f'{ITEMS}.id')}")


def current_version_flow(dialect: Dialect) -> Flow[int]:
    """The schema version applied (0 for an empty database)."""
    yield Sql(dialect.create_migrations_table())
    rows = yield Sql(f"SELECT max(version) FROM {MIGRATIONS}")
    return int(rows[0][0] or 0)


def migrate_flow(dialect: Dialect) -> Flow[None]:
    """Apply the missing migrations, in order, each recorded with its version (idempotent).

    Runs inside one transaction; on PostgreSQL an advisory lock makes concurrent
    ``setup()`` calls wait for each other instead of racing.
    """
    lock = dialect.migration_lock_sql()
    if lock:
        yield Sql(lock)
    current = yield from current_version_flow(dialect)
    steps = migrations(dialect)
    if current > len(steps):
        raise MigrationError(
            f"the database schema is at version {current}, newer than this package knows "
            f"({len(steps)}); upgrade langmem-tiers."
        )
    for version, statements in enumerate(steps, start=1):
        if version <= current:
            continue
        for statement in statements:
            if callable(statement):
                # A step that needs Python (rewriting stored ids), not just SQL.
                yield from statement(dialect)
            else:
                yield Sql(statement)
        yield Sql(
            f"INSERT INTO {MIGRATIONS} (version, applied_at) VALUES (?, ?)",
            [version, dialect.ts_param(dialect.now())],
        )
