"""The names of the tables, and the item columns the store writes.

The only identifiers built into SQL are these fixed names (and validated JSON paths). Each
table's schema is its component's (``*/migrations.py``, run by :mod:`langmem_tiers.sql.migrations`).
"""

from __future__ import annotations

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
    "item_columns",
]

ITEMS = "lmt_items"
TERMS = "lmt_terms"
#: What joins values packed into one text (:meth:`Dialect.packed_sql`): item ids are UUIDs,
#: and the analyzer's terms are letters, digits, marks and apostrophes, never a control
#: character.
PACKED_SEPARATOR = "\x1f"
#: PostgreSQL: the function that unpacks an item's packed terms into (term, tf) rows.
TERM_ROWS = "lmt_term_rows"
VECTORS = "lmt_vectors"
#: Each item's access count and last access, apart from its row (see
#: the store's migration with legacy=31); read through :data:`ACCESS_COUNT_SQL` and
#: :data:`LAST_ACCESSED_SQL`.
ITEM_ACCESS = "lmt_item_access"
#: The access count of the item of alias ``i`` (0 for one never returned by a search).
ACCESS_COUNT_SQL = f"coalesce((SELECT a.access_count FROM {ITEM_ACCESS} a WHERE a.id = i.id), 0)"
#: The last access of the item of alias ``i`` (NULL for one never returned by a search).
LAST_ACCESSED_SQL = f"(SELECT a.last_accessed_at FROM {ITEM_ACCESS} a WHERE a.id = i.id)"
META = "lmt_meta"
STM_SESSIONS = "lmt_stm_sessions"
STM_MESSAGES = "lmt_stm_messages"
STM_LEASES = "lmt_stm_leases"
EVENTS = "lmt_events"
API_KEYS = "lmt_api_keys"
VERSIONS = "lmt_versions"
SCOPE_CHANGES = "lmt_scope_changes"
#: PostgreSQL: one row per counted move not yet added to :data:`SCOPE_CHANGES` (see
#: ``long_term/store/search/migrations.py``).
SCOPE_MOVES = "lmt_scope_moves"
#: One row per counted change of an item: its namespace, the counter value the change
#: brought the namespace's count to, and the item (see ``long_term/store/search/migrations.py``).
ITEM_CHANGES = "lmt_item_changes"
#: The entities of each scope its memories name, and which memory names which (see
#: :mod:`langmem_tiers.long_term.engine.entities`).
ENTITIES = "lmt_entities"
ENTITY_MENTIONS = "lmt_entity_mentions"
#: A namespace's log keeps at least its last this many changes (and fewer than twice as
#: many): a cache further behind reads the namespace again.
CHANGES_KEPT = 1024
#: The item times a search compares with its instants (validity, existence, expiry).
MEMBERSHIP_TIMES = ("valid_from", "valid_until", "expires_at", "event_at", "created_at")

# Columns filled from a memory's value (see records.py), in insert order.
item_columns: tuple[str, ...] = (
    "id",
    "prefix",
    "key",
    "scope",
    "kind",
    "value",
    "created_at",
    "updated_at",
    "event_at",
    "session_id",
    "actor",
    "action_type",
    "subject",
    "category",
    "valid_from",
    "valid_until",
    "proc_key",
    "confidence",
    "importance",
    "status",
    "doc_len",
    "terms",
    "expires_at",
    "ttl_minutes",
)

# PostgreSQL's types of item_columns, for binding each as an array.
ITEM_COLUMN_TYPES: dict[str, str] = {
    **dict.fromkeys(item_columns, "text"),
    "value": "jsonb",
    **dict.fromkeys(
        ("created_at", "updated_at", "event_at", "valid_from", "valid_until", "expires_at"),
        "timestamptz",
    ),
    **dict.fromkeys(("confidence", "importance", "ttl_minutes"), "float8"),
    "doc_len": "int4",
}

# PostgreSQL's types of the columns a change of a stored memory sets (update_items_sql).
UPDATE_COLUMN_TYPES: dict[str, str] = {
    **ITEM_COLUMN_TYPES,
    "last_used_at": "timestamptz",
    "version": "int4",
    "reinforcement_count": "int4",
    "consolidated_into_id": "text",
}

#: The columns whose new value a namespace's change counter counts (so a writer setting
#: them takes the counters first, in one order).
COUNTED_COLUMNS = frozenset({"prefix", "value", "doc_len", "terms"})

# Columns an update must not overwrite: creation time and usage statistics.
KEEP_ON_UPDATE = {"id", "prefix", "key", "created_at"}
