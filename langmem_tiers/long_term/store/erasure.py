"""Erasure: every trace of a scope, or of one memory, removed from the database and Qdrant.

An erasure is a write like any other: it runs in one transaction, takes the change
counters of the namespaces it empties (so a process's cached copy of a namespace is
brought up to date by its next search, see ``search/scope_cache.py``), and leaves the
event log's sequence numbers in place.

What a scope's erasure removes, in one transaction:

* its items (memories, and plain documents in namespaces under the scope's label), their
  versions, vectors (the SQL table; Qdrant's points after the commit), access counts and
  packed terms, and the change-log rows naming them;
* its short-term sessions (every message, the session row, its lease): the sessions with
  a message of the scope's user;
* the API keys bound to the scope;
* the people, places and things its memories named (entities and their mentions);
* the content of its events: each event becomes a tombstone of type ``memory.erased``
  that keeps its sequence number, time, scope and kind and nothing else (no memory id, key,
  snapshots, metadata, actor or correlation id).

A memory's erasure (``forget --hard``) does the same for one memory: its row, versions,
vectors and access count go with the hard delete, its mentions of entities go (and an entity
no other memory names), and its events (the delete's included) become tombstones in the
same transaction.

An interrupted erasure leaves the scope as it was (the transaction rolls back); after the
commit only Qdrant's points remain to delete, and a second run deletes them by the scope's
payload (its namespaces), so a re-run always finishes the work.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("dana", "semantic"), "f1", {"content": "Dana's number is 078-05-1120"})
    ...     done = store.db.run(erase_scope_flow(store.core, "dana", "dana"))
    ...     done.items, store.search(("dana",), query="number")
    (1, [])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from langmem_tiers.sql.dialect import (
    API_KEYS,
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEM_ACCESS,
    ITEM_CHANGES,
    ITEMS,
    STM_LEASES,
    STM_MESSAGES,
    STM_SESSIONS,
    VECTORS,
    VERSIONS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, QdrantCall, Sql, Transaction

__all__ = [
    "ERASED",
    "ERASED_EVENT",
    "ErasureResult",
    "erase_scope_flow",
    "tombstone_memory_events_flow",
]

#: What stands in a tombstone's memory id and key.
ERASED = "erased"
#: The type of a tombstone event.
ERASED_EVENT = "memory.erased"

# The content-free columns of a tombstone, set by one statement.
_TOMBSTONE_SET = (
    f"type = '{ERASED_EVENT}', memory_id = '{ERASED}', prefix = '{ERASED}', key = '{ERASED}',"
    " before = NULL, after = NULL, correlation_id = NULL, actor = NULL, metadata = ?"
)


class ErasureResult(NamedTuple):
    """What an erasure of a scope removed (counts of rows)."""

    scope: str
    items: int
    events: int
    sessions: int
    messages: int
    api_keys: int


def _tombstone_metadata(dialect: Dialect) -> Any:
    return dialect.json_param({ERASED: True})


def tombstone_memory_events_flow(dialect: Dialect, memory_id: str) -> Flow[int]:
    """Turn every event of ``memory_id`` into a tombstone and drop the change-log rows
    naming it (inside the caller's transaction); answers the events tombstoned."""
    rows = yield Sql(f"SELECT count(*) FROM {EVENTS} WHERE memory_id = ?", [memory_id])
    yield Sql(
        f"UPDATE {EVENTS} SET {_TOMBSTONE_SET} WHERE memory_id = ?",
        [_tombstone_metadata(dialect), memory_id],
    )
    # A cached namespace whose log misses rows reads the namespace again (scope_cache.py).
    yield Sql(f"DELETE FROM {ITEM_CHANGES} WHERE item_id = ?", [memory_id])
    # The entities it named: its mentions go, and an entity no other memory names with them.
    named = yield Sql(f"SELECT entity_id FROM {ENTITY_MENTIONS} WHERE memory_id = ?", [memory_id])
    yield Sql(f"DELETE FROM {ENTITY_MENTIONS} WHERE memory_id = ?", [memory_id])
    entity_ids = sorted(str(r[0]) for r in named)
    if entity_ids:
        in_ids, params = dialect.in_list("id", entity_ids)
        yield Sql(
            f"DELETE FROM {ENTITIES} WHERE {in_ids} AND NOT EXISTS"
            f" (SELECT 1 FROM {ENTITY_MENTIONS} m WHERE m.entity_id = {ENTITIES}.id)",
            params,
        )
        yield Sql(
            f"UPDATE {ENTITIES} SET mentions = (SELECT count(*) FROM {ENTITY_MENTIONS} m"
            f" WHERE m.entity_id = {ENTITIES}.id) WHERE {in_ids}",
            params,
        )
    return int(rows[0][0])


def erase_scope_flow(core: Any, scope_label: str, scope_id: str) -> Flow[ErasureResult]:
    """Erase every trace of a scope (``scope_label``: its ``scope`` column value,
    ``scope_id``: the id its users and keys name); see the module docstring.

    ``core`` is the store's ``StoreCore`` (its dialect and vector index).
    """
    index = core.index
    result: ErasureResult = yield Transaction(
        _erase(core.dialect, scope_label, scope_id, vectors_table=index.in_database)
    )
    if not index.in_database:
        # After the commit, as for a delete; by the scope's payload, so points of items a
        # crashed run already deleted from SQL are found too.
        from qdrant_client import models

        yield QdrantCall(
            "delete",
            {
                "collection_name": index.collection,
                "points_selector": models.FilterSelector(
                    filter=models.Filter(
                        must=[
                            models.FieldCondition(
                                key="prefixes", match=models.MatchValue(value=scope_label)
                            )
                        ]
                    )
                ),
            },
        )
    return result


def _erase(
    d: Dialect, scope_label: str, scope_id: str, *, vectors_table: bool
) -> Flow[ErasureResult]:
    from langmem_tiers.long_term.store.writes import lock_scope_changes_flow

    # The scope's memories, and plain documents in namespaces under its label.
    under, under_params = d.under_namespace_sql("prefix", scope_label)
    id_rows = yield Sql(f"SELECT id, prefix FROM {ITEMS} WHERE {under}", under_params)
    ids = sorted(str(r[0]) for r in id_rows)
    # The memory namespaces even where there is nothing yet, so no write can start one
    # while the erasure runs.
    kinds = (f"{scope_label}.{kind}" for kind in ("episodic", "procedural", "semantic"))
    prefixes = sorted({str(r[1]) for r in id_rows}.union(kinds))
    lock = d.lock_items_sql()
    if lock and ids:
        # As every writer does: the items' locks, then their namespaces' counters.
        yield Sql(lock, [ids])
    yield from lock_scope_changes_flow(d, prefixes)
    if lock:
        # Writers that held a counter before have committed: their items are read now, and
        # no other write of these namespaces commits before the erasure does.
        id_rows = yield Sql(f"SELECT id FROM {ITEMS} WHERE {under}", under_params)
        ids = sorted(str(r[0]) for r in id_rows)
    yield from _delete_ids(d, VERSIONS, "memory_id", ids)
    if vectors_table:
        yield from _delete_ids(d, VECTORS, "item_id", ids)
    yield from _delete_ids(d, ITEM_ACCESS, "id", ids)
    yield from _delete_ids(d, ITEMS, "id", ids)
    # Versions are keyed by the scope too (rows of memories deleted before).
    yield Sql(f"DELETE FROM {VERSIONS} WHERE scope = ?", [scope_label])
    # The people, places and things its memories named.
    yield Sql(f"DELETE FROM {ENTITY_MENTIONS} WHERE scope = ?", [scope_label])
    yield Sql(f"DELETE FROM {ENTITIES} WHERE scope = ?", [scope_label])
    # The change log rows the deletes just added, and older ones, name the items: gone.
    # A process holding a namespace sees its counter moved and too few rows, and reads
    # the namespace again (empty).
    for prefix in prefixes:
        yield Sql(f"DELETE FROM {ITEM_CHANGES} WHERE prefix = ?", [prefix])
    yield from _delete_ids(d, ITEM_CHANGES, "item_id", ids)
    # Its events by their namespace (a tombstone's is ERASED, so it is not counted again).
    counted = yield Sql(
        f"SELECT count(*) FROM {EVENTS} WHERE {under} AND type <> ?",
        [*under_params, ERASED_EVENT],
    )
    yield Sql(
        f"UPDATE {EVENTS} SET {_TOMBSTONE_SET} WHERE {under} AND type <> ?",
        [_tombstone_metadata(d), *under_params, ERASED_EVENT],
    )
    # The message log's and the server's tables are their components': a database that
    # never had a message log or a key has none to erase from.
    session_rows = []
    if (yield from _has_table(d, STM_MESSAGES)):
        session_rows = yield Sql(
            f"SELECT DISTINCT session_id FROM {STM_MESSAGES} WHERE user_id = ?", [scope_id]
        )
    sessions = sorted(str(r[0]) for r in session_rows)
    messages = 0
    if sessions:
        in_s, params = d.in_list("session_id", sessions)
        # The session rows first: an append in progress holds its session's row until it
        # commits, so the messages' delete after it sees every message appended.
        for table in (STM_SESSIONS, STM_LEASES):
            yield Sql(f"DELETE FROM {table} WHERE {in_s}", params)
        found = yield Sql(f"SELECT count(*) FROM {STM_MESSAGES} WHERE {in_s}", params)
        messages = int(found[0][0])
        yield Sql(f"DELETE FROM {STM_MESSAGES} WHERE {in_s}", params)
    keys = 0
    if (yield from _has_table(d, API_KEYS)):
        found = yield Sql(f"SELECT count(*) FROM {API_KEYS} WHERE scope = ?", [scope_id])
        keys = int(found[0][0])
        yield Sql(f"DELETE FROM {API_KEYS} WHERE scope = ?", [scope_id])
    return ErasureResult(scope_id, len(ids), int(counted[0][0]), len(sessions), messages, keys)


def _has_table(d: Dialect, table: str) -> Flow[bool]:
    rows = yield Sql(d.table_exists_sql(), [table])
    return bool(rows[0][0])


def _delete_ids(d: Dialect, table: str, column: str, ids: Sequence[str]) -> Flow[None]:
    for start in range(0, len(ids), 1000):
        in_ids, params = d.in_list(column, ids[start : start + 1000])
        yield Sql(f"DELETE FROM {table} WHERE {in_ids}", params)
