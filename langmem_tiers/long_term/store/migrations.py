"""The long-term store's schema: items with their terms, vectors and events, and the
engine's records the store keeps (versions, entities), as components of
:mod:`langmem_tiers.sql.migrations`.

Every statement is written out per dialect and never changes once released: a new
migration goes at the end of its component's tuples. Numbers in ``legacy=`` are the
migrations' numbers in the one list of earlier releases (see the runner).

Example:
    >>> [c.name for c in STORE_SCHEMA]
    ['store', 'events', 'versions', 'scope_changes', 'entities']
    >>> STORE.sqlite[0].legacy, STORE.postgres[0].legacy
    (1, 1)
"""

from __future__ import annotations

from typing import Any

from langmem_tiers.long_term.store.search.migrations import SCOPE_CHANGES
from langmem_tiers.sql.dialect import Dialect
from langmem_tiers.sql.flow import Flow
from langmem_tiers.sql.item_ids import rekey_items_flow
from langmem_tiers.sql.migrations import Component, Migration, add_column_flow, per_engine

__all__ = [
    "ENTITIES",
    "EVENTS",
    "STORE",
    "STORE_SCHEMA",
    "VERSIONS",
    "vector_table_sql",
]


def _rekey_items(dialect: Dialect) -> Flow[Any]:
    # Item ids that cannot collide (sql/item_ids.py): every stored id is rewritten.
    return (yield from rekey_items_flow(dialect))


def _terms_column(dialect: Dialect) -> Flow[None]:
    # Each item's terms packed beside it (see bm25.pack_terms).
    yield from add_column_flow(dialect, "lmt_items", "terms", "TEXT")


# What each migration did and why is in the history of the module that built it before
# components (sql/migrations.py and sql/dialect.py); the statements are as they ran.

_STORE_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=1,
        steps=(
            """CREATE TABLE lmt_items (
                id TEXT PRIMARY KEY,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                value TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                event_at TEXT,
                session_id TEXT,
                actor TEXT,
                action_type TEXT,
                subject TEXT,
                category TEXT,
                version INTEGER NOT NULL DEFAULT 1,
                valid_from TEXT,
                valid_until TEXT,
                proc_key TEXT,
                reinforcement_count INTEGER NOT NULL DEFAULT 0,
                last_used_at TEXT,
                confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                importance DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                access_count BIGINT NOT NULL DEFAULT 0,
                last_accessed_at TEXT,
                status TEXT NOT NULL DEFAULT 'active',
                consolidated_into_id TEXT,
                doc_len INTEGER NOT NULL DEFAULT 0,
                UNIQUE (prefix, key)
            )""",
            "CREATE INDEX lmt_items_prefix_updated ON lmt_items (prefix, updated_at)",
            "CREATE INDEX lmt_items_scope_kind ON lmt_items (scope, kind, status)",
            "CREATE INDEX lmt_items_session ON lmt_items (scope, session_id) WHERE session_id IS "
            "NOT NULL",
            "CREATE INDEX lmt_items_proc_key ON lmt_items (scope, proc_key) WHERE proc_key IS NOT "
            "NULL",
            """CREATE TABLE lmt_terms (
                term TEXT NOT NULL,
                item_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                tf INTEGER NOT NULL,
                PRIMARY KEY (term, item_id)
            )""",
            "CREATE INDEX lmt_terms_item ON lmt_terms (item_id)",
            "CREATE TABLE lmt_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ),
    ),
    Migration(
        legacy=5,
        steps=(
            "CREATE INDEX lmt_items_unconsolidated ON lmt_items (scope, kind) WHERE "
            "consolidated_into_id IS NULL",
        ),
    ),
    Migration(
        legacy=6,
        steps=(
            "CREATE INDEX lmt_terms_item_term ON lmt_terms (item_id, term, tf)",
            "DROP INDEX lmt_terms_item",
        ),
    ),
    Migration(
        legacy=10,
        steps=("DROP INDEX IF EXISTS lmt_vectors_hnsw",),
    ),
    Migration(
        legacy=11,
        steps=(
            "ALTER TABLE lmt_items ADD COLUMN expires_at TEXT",
            "ALTER TABLE lmt_items ADD COLUMN ttl_minutes DOUBLE PRECISION",
            "CREATE INDEX lmt_items_expires ON lmt_items (expires_at) WHERE expires_at IS NOT NULL",
        ),
    ),
    Migration(
        legacy=13,
        steps=(_rekey_items,),
    ),
    Migration(
        legacy=14,
        steps=(
            """CREATE VIEW long_term_memories AS
SELECT i.id AS id,
    i.scope AS scope,
    COALESCE(i.session_id, CASE WHEN json_type(i.value, '$.session_id') = 'text' THEN json_extract(i.value, '$.session_id') END) AS session_id,
    json_extract(i.value, '$.content') AS summary,
    json_extract(i.value, '$.key_concepts') AS key_concepts,
    json_extract(i.value, '$.source_message_ids[0]') AS first_message_id,
    json_extract(i.value, '$.source_message_ids[#-1]') AS last_message_id,
    json_array_length(i.value, '$.source_message_ids') AS message_count,
    json_extract(i.value, '$.first_message_at') AS first_message_at,
    json_extract(i.value, '$.last_message_at') AS last_message_at,
    i.category AS category,
    i.status AS status,
    i.created_at AS created_at,
    i.updated_at AS updated_at
FROM (SELECT id, scope, session_id, value, category, status, created_at, updated_at
    FROM lmt_items WHERE kind = 'semantic'
    AND category IN ('conversation_summary', 'episode_summary')) AS i""",
        ),
    ),
    Migration(
        legacy=15,
        steps=(
            "DROP TABLE IF EXISTS lmt_terms_by_item",
            """CREATE TABLE lmt_terms_by_item (
                item_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                term TEXT NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (item_id, term)
            ) WITHOUT ROWID""",
            "INSERT INTO lmt_terms_by_item (item_id, term, tf) SELECT item_id, term, tf FROM "
            "lmt_terms ORDER BY item_id, term",
            "DROP TABLE lmt_terms",
            "ALTER TABLE lmt_terms_by_item RENAME TO lmt_terms",
        ),
    ),
    Migration(
        legacy=17,
        steps=(
            "CREATE INDEX IF NOT EXISTS lmt_items_live ON lmt_items (prefix, status, id, "
            "valid_from, valid_until, expires_at, doc_len, scope, kind)",
        ),
    ),
    Migration(
        legacy=19,
        steps=(
            _terms_column,
            "UPDATE lmt_items SET terms = (SELECT group_concat(t.term || char(31) || t.tf, "
            "char(31)) FROM lmt_terms t WHERE t.item_id = lmt_items.id)",
        ),
    ),
    Migration(
        legacy=20,
        steps=(
            "DROP INDEX IF EXISTS lmt_items_prefix_updated",
            "DROP INDEX IF EXISTS lmt_items_unconsolidated",
        ),
    ),
    Migration(
        legacy=23,
        steps=(
            "DROP INDEX IF EXISTS lmt_items_live",
            "CREATE INDEX lmt_items_live ON lmt_items (prefix, status, id, valid_from, "
            "valid_until, expires_at, doc_len, scope, kind, event_at, created_at, terms)",
        ),
    ),
    Migration(
        legacy=24,
        steps=(
            "CREATE INDEX IF NOT EXISTS lmt_items_waiting_episodes ON lmt_items (scope, kind, "
            "status, consolidated_into_id) WHERE kind = 'episodic' AND consolidated_into_id IS "
            "NULL",
        ),
    ),
    Migration(
        legacy=28,
        steps=(
            "DROP TABLE IF EXISTS lmt_terms",
            "CREATE VIEW lmt_terms AS SELECT i.id AS item_id, t.value AS term, "
            "CAST(json_extract(('[\"' || replace(i.terms, char(31), '\",\"') || '\"]'), '$[' || "
            "(t.key + 1) || ']') AS INTEGER) AS tf FROM lmt_items i, json_each(('[\"' || "
            "replace(i.terms, char(31), '\",\"') || '\"]')) AS t WHERE t.key % 2 = 0",
            "CREATE TRIGGER lmt_terms_insert_ignored INSTEAD OF INSERT ON lmt_terms BEGIN SELECT "
            "1; END",
            "CREATE TRIGGER lmt_terms_update_ignored INSTEAD OF UPDATE ON lmt_terms BEGIN SELECT "
            "1; END",
            "CREATE TRIGGER lmt_terms_delete_ignored INSTEAD OF DELETE ON lmt_terms BEGIN SELECT "
            "1; END",
        ),
    ),
    Migration(
        legacy=31,
        steps=(
            "CREATE TABLE IF NOT EXISTS lmt_item_access (id TEXT PRIMARY KEY, access_count BIGINT "
            "NOT NULL, last_accessed_at TEXT) WITHOUT ROWID",
            "INSERT INTO lmt_item_access (id, access_count, last_accessed_at) SELECT id, "
            "access_count, last_accessed_at FROM lmt_items WHERE access_count > 0 OR "
            "last_accessed_at IS NOT NULL ON CONFLICT (id) DO NOTHING",
            "CREATE TRIGGER IF NOT EXISTS lmt_item_access_forget AFTER DELETE ON lmt_items BEGIN "
            "DELETE FROM lmt_item_access WHERE id = OLD.id; END",
        ),
    ),
)

_STORE_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=1,
        steps=(
            """CREATE TABLE lmt_items (
                id TEXT PRIMARY KEY,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                value JSONB NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                event_at TIMESTAMPTZ,
                session_id TEXT,
                actor TEXT,
                action_type TEXT,
                subject TEXT,
                category TEXT,
                version INTEGER NOT NULL DEFAULT 1,
                valid_from TIMESTAMPTZ,
                valid_until TIMESTAMPTZ,
                proc_key TEXT,
                reinforcement_count INTEGER NOT NULL DEFAULT 0,
                last_used_at TIMESTAMPTZ,
                confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                importance DOUBLE PRECISION NOT NULL DEFAULT 1.0,
                access_count BIGINT NOT NULL DEFAULT 0,
                last_accessed_at TIMESTAMPTZ,
                status TEXT NOT NULL DEFAULT 'active',
                consolidated_into_id TEXT,
                doc_len INTEGER NOT NULL DEFAULT 0,
                UNIQUE (prefix, key)
            )""",
            "CREATE INDEX lmt_items_prefix_updated ON lmt_items (prefix, updated_at)",
            "CREATE INDEX lmt_items_scope_kind ON lmt_items (scope, kind, status)",
            "CREATE INDEX lmt_items_session ON lmt_items (scope, session_id) WHERE session_id IS "
            "NOT NULL",
            "CREATE INDEX lmt_items_proc_key ON lmt_items (scope, proc_key) WHERE proc_key IS NOT "
            "NULL",
            """CREATE TABLE lmt_terms (
                term TEXT NOT NULL,
                item_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                tf INTEGER NOT NULL,
                PRIMARY KEY (term, item_id)
            )""",
            "CREATE INDEX lmt_terms_item ON lmt_terms (item_id)",
            "CREATE TABLE lmt_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ),
    ),
    Migration(
        legacy=5,
        steps=(
            "CREATE INDEX lmt_items_unconsolidated ON lmt_items (scope, kind) WHERE "
            "consolidated_into_id IS NULL",
        ),
    ),
    Migration(
        legacy=6,
        steps=(
            "CREATE INDEX lmt_terms_item_term ON lmt_terms (item_id, term, tf)",
            "DROP INDEX lmt_terms_item",
        ),
    ),
    Migration(
        legacy=10,
        steps=("DROP INDEX IF EXISTS lmt_vectors_hnsw",),
    ),
    Migration(
        legacy=11,
        steps=(
            "ALTER TABLE lmt_items ADD COLUMN expires_at TIMESTAMPTZ",
            "ALTER TABLE lmt_items ADD COLUMN ttl_minutes DOUBLE PRECISION",
            "CREATE INDEX lmt_items_expires ON lmt_items (expires_at) WHERE expires_at IS NOT NULL",
        ),
    ),
    Migration(
        legacy=12,
        steps=(
            'ALTER TABLE lmt_items ALTER COLUMN prefix TYPE TEXT COLLATE "C"',
            "DO $$ BEGIN IF to_regclass('lmt_vectors') IS NOT NULL THEN ALTER TABLE lmt_vectors "
            'ALTER COLUMN prefix TYPE TEXT COLLATE "C"; END IF; END $$',
        ),
    ),
    Migration(
        legacy=13,
        steps=(_rekey_items,),
    ),
    Migration(
        legacy=14,
        steps=(
            """CREATE VIEW long_term_memories AS
SELECT i.id AS id,
    i.scope AS scope,
    COALESCE(i.session_id, CASE WHEN jsonb_typeof(i.value -> 'session_id') = 'string' THEN i.value ->> 'session_id' END) AS session_id,
    i.value ->> 'content' AS summary,
    i.value -> 'key_concepts' AS key_concepts,
    i.value -> 'source_message_ids' ->> 0 AS first_message_id,
    i.value -> 'source_message_ids' ->> (-1) AS last_message_id,
    CASE WHEN jsonb_typeof(i.value -> 'source_message_ids') = 'array' THEN jsonb_array_length(i.value -> 'source_message_ids') END AS message_count,
    i.value ->> 'first_message_at' AS first_message_at,
    i.value ->> 'last_message_at' AS last_message_at,
    i.category AS category,
    i.status AS status,
    i.created_at AS created_at,
    i.updated_at AS updated_at
FROM (SELECT id, scope, session_id, value, category, status, created_at, updated_at
    FROM lmt_items WHERE kind = 'semantic'
    AND category IN ('conversation_summary', 'episode_summary')) AS i""",
        ),
    ),
    Migration(
        legacy=15,
        steps=(
            "SET CONSTRAINTS ALL IMMEDIATE",
            "ALTER TABLE lmt_terms DROP CONSTRAINT IF EXISTS lmt_terms_pkey",
            "DROP INDEX IF EXISTS lmt_terms_item_term",
            "ALTER TABLE lmt_terms ADD CONSTRAINT lmt_terms_pkey PRIMARY KEY (item_id, term) "
            "INCLUDE (tf)",
        ),
    ),
    Migration(
        legacy=17,
        steps=(
            "CREATE INDEX IF NOT EXISTS lmt_items_live ON lmt_items (prefix, status, id, "
            "valid_from, valid_until, expires_at, doc_len, scope, kind)",
        ),
    ),
    Migration(
        legacy=18,
        steps=(
            "CREATE INDEX IF NOT EXISTS lmt_terms_term ON lmt_terms (term, item_id) INCLUDE (tf)",
        ),
    ),
    Migration(
        legacy=19,
        steps=(
            _terms_column,
            "UPDATE lmt_items SET terms = (SELECT string_agg(t.term || chr(31) || t.tf, "
            "chr(31)) FROM lmt_terms t WHERE t.item_id = lmt_items.id)",
        ),
    ),
    Migration(
        legacy=20,
        steps=(
            "DROP INDEX IF EXISTS lmt_items_prefix_updated",
            "DROP INDEX IF EXISTS lmt_items_unconsolidated",
            "DO $$ DECLARE c record; BEGIN FOR c IN SELECT conname FROM pg_constraint WHERE "
            "conrelid = 'lmt_terms'::regclass AND contype = 'f' LOOP EXECUTE format('ALTER TABLE "
            "lmt_terms DROP CONSTRAINT %I', c.conname); END LOOP; END $$",
            "CREATE OR REPLACE FUNCTION lmt_terms_of_deleted_items() RETURNS trigger LANGUAGE "
            "plpgsql SET search_path FROM CURRENT AS $$ BEGIN DELETE FROM lmt_terms t USING "
            "deleted d WHERE t.item_id = d.id; RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_terms_of_deleted_items ON lmt_items",
            "CREATE TRIGGER lmt_terms_of_deleted_items AFTER DELETE ON lmt_items REFERENCING OLD "
            "TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION lmt_terms_of_deleted_items()",
        ),
    ),
    Migration(
        legacy=24,
        steps=(
            "CREATE INDEX IF NOT EXISTS lmt_items_waiting_episodes ON lmt_items (scope, kind, "
            "status, consolidated_into_id) WHERE kind = 'episodic' AND consolidated_into_id IS "
            "NULL",
        ),
    ),
    Migration(
        legacy=27,
        steps=(
            "DROP TRIGGER IF EXISTS lmt_terms_of_deleted_items ON lmt_items",
            "DROP FUNCTION IF EXISTS lmt_terms_of_deleted_items()",
            "DROP TABLE IF EXISTS lmt_terms",
            "CREATE OR REPLACE FUNCTION lmt_term_rows(packed TEXT) RETURNS TABLE (term TEXT, tf "
            "INTEGER) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT s.a[2 * k - 1], s.a[2 * "
            "k]::integer FROM (SELECT string_to_array(packed, chr(31)) AS a OFFSET 0) AS s, "
            "generate_series(1, cardinality(s.a) / 2) AS k $$",
            "CREATE VIEW lmt_terms AS SELECT i.id AS item_id, t.term, t.tf FROM lmt_items i CROSS "
            "JOIN LATERAL lmt_term_rows(i.terms) AS t",
            "CREATE OR REPLACE FUNCTION lmt_terms_rows_ignored() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN RETURN NULL; END $$",
            "CREATE TRIGGER lmt_terms_rows_ignored INSTEAD OF INSERT OR UPDATE OR DELETE ON "
            "lmt_terms FOR EACH ROW EXECUTE FUNCTION lmt_terms_rows_ignored()",
        ),
    ),
    Migration(
        legacy=29,
        steps=(
            "DROP INDEX IF EXISTS lmt_items_live",
            "CREATE INDEX lmt_items_live ON lmt_items (prefix, status, id, valid_from, "
            "valid_until, expires_at, doc_len, scope, kind, event_at, created_at)",
        ),
    ),
    Migration(
        legacy=31,
        steps=(
            "CREATE TABLE IF NOT EXISTS lmt_item_access (id TEXT PRIMARY KEY, access_count BIGINT "
            "NOT NULL, last_accessed_at TIMESTAMPTZ)",
            "INSERT INTO lmt_item_access (id, access_count, last_accessed_at) SELECT id, "
            "access_count, last_accessed_at FROM lmt_items WHERE access_count > 0 OR "
            "last_accessed_at IS NOT NULL ON CONFLICT (id) DO NOTHING",
            "CREATE OR REPLACE FUNCTION lmt_item_access_forget() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path FROM CURRENT AS $$ BEGIN DELETE FROM lmt_item_access a USING gone g "
            "WHERE a.id = g.id; RETURN NULL; END $$",
            "DROP TRIGGER IF EXISTS lmt_item_access_forget ON lmt_items",
            "CREATE TRIGGER lmt_item_access_forget AFTER DELETE ON lmt_items REFERENCING OLD "
            "TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION lmt_item_access_forget()",
        ),
    ),
)

#: Items, their terms (a view of each item's packed terms now), the meta table (the vector
#: dimensions), access counts, the view of conversation summaries, and the indexes.
STORE = Component("store", sqlite=_STORE_SQLITE, postgres=_STORE_POSTGRES)

_EVENTS_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=3,
        steps=(
            """CREATE TABLE lmt_events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                at TEXT NOT NULL,
                type TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                memory_id TEXT NOT NULL,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                before TEXT,
                after TEXT,
                metadata TEXT NOT NULL,
                correlation_id TEXT,
                actor TEXT
            )""",
            "CREATE INDEX lmt_events_scope_seq ON lmt_events (scope, seq)",
            "CREATE INDEX lmt_events_memory_seq ON lmt_events (memory_id, seq)",
        ),
    ),
)

_EVENTS_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=3,
        steps=(
            """CREATE TABLE lmt_events (
                seq BIGSERIAL PRIMARY KEY,
                at TIMESTAMPTZ NOT NULL,
                type TEXT NOT NULL,
                scope TEXT NOT NULL,
                kind TEXT,
                memory_id TEXT NOT NULL,
                prefix TEXT NOT NULL,
                key TEXT NOT NULL,
                before JSONB,
                after JSONB,
                metadata JSONB NOT NULL,
                correlation_id TEXT,
                actor TEXT
            )""",
            "CREATE INDEX lmt_events_scope_seq ON lmt_events (scope, seq)",
            "CREATE INDEX lmt_events_memory_seq ON lmt_events (memory_id, seq)",
        ),
    ),
)

#: The event log: one row per change of a memory, in the change's transaction.
EVENTS = Component("events", sqlite=_EVENTS_SQLITE, postgres=_EVENTS_POSTGRES)

_VERSIONS_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=5,
        steps=(
            """CREATE TABLE lmt_versions (
                memory_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                version INTEGER NOT NULL,
                scope TEXT NOT NULL,
                content TEXT NOT NULL,
                value TEXT NOT NULL,
                confidence DOUBLE PRECISION NOT NULL,
                valid_from TEXT,
                valid_until TEXT,
                reason TEXT,
                created_at TEXT NOT NULL,
                PRIMARY KEY (memory_id, version)
            )""",
            "CREATE INDEX lmt_versions_scope ON lmt_versions (scope, memory_id)",
        ),
    ),
)

_VERSIONS_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=5,
        steps=(
            """CREATE TABLE lmt_versions (
                memory_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                version INTEGER NOT NULL,
                scope TEXT NOT NULL,
                content TEXT NOT NULL,
                value JSONB NOT NULL,
                confidence DOUBLE PRECISION NOT NULL,
                valid_from TIMESTAMPTZ,
                valid_until TIMESTAMPTZ,
                reason TEXT,
                created_at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (memory_id, version)
            )""",
            "CREATE INDEX lmt_versions_scope ON lmt_versions (scope, memory_id)",
        ),
    ),
)

#: Versions of semantic memories (the engine's): the store deletes them with their items.
VERSIONS = Component("versions", sqlite=_VERSIONS_SQLITE, postgres=_VERSIONS_POSTGRES)

_ENTITIES_SQLITE: tuple[Migration, ...] = (
    Migration(
        legacy=33,
        steps=(
            """CREATE TABLE IF NOT EXISTS lmt_entities (
                id TEXT PRIMARY KEY,
                scope TEXT NOT NULL,
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                aliases TEXT NOT NULL,
                stem TEXT NOT NULL,
                mentions BIGINT NOT NULL,
                first_seen TEXT NOT NULL,
                last_seen TEXT NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS lmt_entities_scope_stem ON lmt_entities (scope, stem)",
            "CREATE INDEX IF NOT EXISTS lmt_entities_scope_mentions ON lmt_entities (scope, "
            "mentions)",
            """CREATE TABLE IF NOT EXISTS lmt_entity_mentions (
                entity_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                at TEXT NOT NULL,
                PRIMARY KEY (entity_id, memory_id)
            )""",
            "CREATE INDEX IF NOT EXISTS lmt_entity_mentions_memory ON lmt_entity_mentions "
            "(memory_id)",
        ),
    ),
)

_ENTITIES_POSTGRES: tuple[Migration, ...] = (
    Migration(
        legacy=33,
        steps=(
            """CREATE TABLE IF NOT EXISTS lmt_entities (
                id TEXT PRIMARY KEY,
                scope TEXT NOT NULL,
                name TEXT NOT NULL,
                kind TEXT NOT NULL,
                aliases TEXT NOT NULL,
                stem TEXT NOT NULL,
                mentions BIGINT NOT NULL,
                first_seen TIMESTAMPTZ NOT NULL,
                last_seen TIMESTAMPTZ NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS lmt_entities_scope_stem ON lmt_entities (scope, stem)",
            "CREATE INDEX IF NOT EXISTS lmt_entities_scope_mentions ON lmt_entities (scope, "
            "mentions)",
            """CREATE TABLE IF NOT EXISTS lmt_entity_mentions (
                entity_id TEXT NOT NULL,
                memory_id TEXT NOT NULL,
                scope TEXT NOT NULL,
                at TIMESTAMPTZ NOT NULL,
                PRIMARY KEY (entity_id, memory_id)
            )""",
            "CREATE INDEX IF NOT EXISTS lmt_entity_mentions_memory ON lmt_entity_mentions "
            "(memory_id)",
        ),
    ),
)

#: The entities each scope's memories name (the engine's), erased and exported with them.
ENTITIES = Component("entities", sqlite=_ENTITIES_SQLITE, postgres=_ENTITIES_POSTGRES)

#: What ``setup()`` of a store applies, in the order new migrations run in.
STORE_SCHEMA = (STORE, EVENTS, VERSIONS, SCOPE_CHANGES, ENTITIES)


def vector_table_sql(dialect: Dialect, dims: int) -> list[str]:
    """The vector table for ``dims``-dimensional vectors: created once the embedder's
    dimensions are known (recorded in ``lmt_meta``), so not a numbered migration.

    Example:
        >>> from langmem_tiers.sql.dialect import SqliteDialect
        >>> vector_table_sql(SqliteDialect(), 8)[1]
        'CREATE INDEX lmt_vectors_prefix ON lmt_vectors (prefix)'
    """
    return per_engine(
        dialect,
        sqlite=[
            """CREATE TABLE lmt_vectors (
                item_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                field TEXT NOT NULL,
                prefix TEXT NOT NULL,
                embedding BLOB NOT NULL,
                PRIMARY KEY (item_id, field)
            )""",
            "CREATE INDEX lmt_vectors_prefix ON lmt_vectors (prefix)",
        ],
        postgres=[
            f"""CREATE TABLE lmt_vectors (
                item_id TEXT NOT NULL REFERENCES lmt_items (id) ON DELETE CASCADE,
                field TEXT NOT NULL,
                prefix TEXT COLLATE "C" NOT NULL,
                embedding vector({int(dims)}) NOT NULL,
                PRIMARY KEY (item_id, field)
            )""",
            "CREATE INDEX lmt_vectors_prefix ON lmt_vectors (prefix)",
        ],
    )
