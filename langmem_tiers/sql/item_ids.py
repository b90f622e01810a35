"""Item ids: one per (namespace, key), and the migration that rewrote the stored ones.

An item's id is derived from its namespace and key, so the same item always has the
same id on every backend. The derivation must be injective: two different (namespace,
key) pairs must never share an id, or a put of one silently overwrites the other. The
first scheme joined the labels with ``.`` and the key with ``\\x1f``, a character labels
and keys may contain, so ``(("a\\x1fb",), "c")`` and ``(("a",), "b\\x1fc")`` collided. The
current scheme hashes the JSON text of ``[labels, key]``, which spells every pair
differently.

Example:
    >>> item_id(("a\\x1fb",), "c") != item_id(("a",), "b\\x1fc")
    True
    >>> item_id(("agent", "semantic"), "k") == item_id(("agent", "semantic"), "k")
    True
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langmem_tiers.sql.flow import Flow, Sql, SqlMany

__all__ = ["ID_MAP", "item_id", "rekey_items_flow"]

_ITEM_ID_NAMESPACE = uuid.UUID("6f1c8a52-3b7e-4d3a-9a53-1f0e2d6c7b90")
_NAMESPACE_BYTES = _ITEM_ID_NAMESPACE.bytes
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# What ``_encode`` escapes in a string (it leaves every other character as it is).
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')

#: Old id -> new id of every item the id migration renamed. Kept after the migration, so
#: an index outside the database (Qdrant) can rename its points when it next starts.
ID_MAP = "lmt_id_renames"

# Rows of JSON columns rewritten per round trip of the migration.
_PAGE = 2000


def item_id(namespace: Sequence[str], key: str) -> str:
    """The id of the item at (namespace, key): a UUID, the same for the same pair.

    ``uuid.uuid5`` computed directly (the same text; tests compare the two): every put
    derives one, and two UUID objects per id cost more than the hash.
    """
    encoded = _id_text(list(namespace), key)
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + encoded.encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _id_text(labels: list[str], key: str) -> str:
    """The JSON text of ``[labels, key]`` that an id hashes, as ``_encode`` writes it.

    Strings with nothing to escape (no quote, backslash or control character: nearly
    every label and key) are written as they are, without the encoder's work.
    """
    if (
        labels
        and type(key) is str
        and all(type(label) is str for label in labels)
        and _ESCAPED.search(key) is None
        and _ESCAPED.search("".join(labels)) is None
    ):
        return '[["' + '","'.join(labels) + '"],"' + key + '"]'
    return _encode([labels, key])


def _new_id(prefix: str, key: str) -> str:
    # Stored prefixes are the labels joined by '.', which no label contains.
    return item_id(prefix.split("."), key)


def rekey_items_flow(
    dialect: Any, new_id: Callable[[str, str], str] = _new_id
) -> Flow[dict[str, str]]:
    """Give every stored item the id ``new_id(prefix, key)``; returns old -> new of those renamed.

    Every place an id is stored follows: the items and their ``consolidated_into_id``,
    terms, in-database vectors, versions, events' memory ids, and any JSON string equal to
    a renamed id (snapshots in events, links such as ``superseded_by`` or
    ``source_episodic_ids`` in values and metadata). Ids of hard-deleted items live on in
    events, which carry their namespace and key, so they are renamed too. Runs inside the
    migration's transaction; foreign keys are checked at its end.
    """
    rows = yield Sql(
        "SELECT id, prefix, key FROM lmt_items UNION SELECT memory_id, prefix, key FROM lmt_events"
    )
    renames = {old: new for old, prefix, key in rows if (new := new_id(prefix, key)) != old}
    if not renames:
        return renames
    for statement in dialect.defer_foreign_keys_sql():
        yield Sql(statement)
    yield Sql(
        f"CREATE TABLE IF NOT EXISTS {ID_MAP} (old_id TEXT PRIMARY KEY, new_id TEXT NOT NULL)"
    )
    yield Sql(f"DELETE FROM {ID_MAP}")
    yield SqlMany(f"INSERT INTO {ID_MAP} (old_id, new_id) VALUES (?, ?)", list(renames.items()))
    columns = [
        ("lmt_items", "id"),
        ("lmt_items", "consolidated_into_id"),
        ("lmt_terms", "item_id"),
        ("lmt_versions", "memory_id"),
        ("lmt_events", "memory_id"),
    ]
    has_vectors = yield Sql(dialect.table_exists_sql(), ["lmt_vectors"])
    if has_vectors and has_vectors[0][0]:
        columns.append(("lmt_vectors", "item_id"))
    for table, column in columns:
        yield Sql(
            f"UPDATE {table} SET {column} = (SELECT m.new_id FROM {ID_MAP} m"
            f" WHERE m.old_id = {table}.{column}) WHERE {column} IN (SELECT old_id FROM {ID_MAP})"
        )
    json_columns = [
        ("lmt_items", "id", ("value",)),
        ("lmt_versions", "memory_id, version", ("value",)),
        ("lmt_events", "seq", ("before", "after", "metadata")),
    ]
    for table, key_columns, values in json_columns:
        yield from _rewrite_json_flow(dialect, table, key_columns, values, renames)
    return renames


def _rewrite_json_flow(
    dialect: Any,
    table: str,
    key_columns: str,
    values: Sequence[str],
    renames: Mapping[str, str],
) -> Flow[None]:
    """Replace renamed ids inside the JSON ``values`` columns of every row of ``table``."""
    keys = [k.strip() for k in key_columns.split(",")]
    order = ", ".join(keys)
    last: list[Any] | None = None
    while True:
        after = ""
        params: list[Any] = []
        if last is not None:
            # Keyset paging: one comparison of the key tuple, written out for SQLite too.
            after = " WHERE " + _tuple_after(keys)
            params = _tuple_after_params(last)
        rows = yield Sql(
            f"SELECT {order}, {', '.join(values)} FROM {table}{after} ORDER BY {order} LIMIT ?",
            [*params, _PAGE],
        )
        if not rows:
            return
        changed: list[list[Any]] = []
        for row in rows:
            new_values: list[Any] = []
            dirty = False
            for raw in row[len(keys) :]:
                if raw is None:
                    new_values.append(None)
                    continue
                value = dialect.json_value(raw)
                renamed = _rename(value, renames)
                dirty = dirty or renamed != value
                new_values.append(renamed)
            if dirty:
                changed.append(
                    [
                        *(None if v is None else dialect.json_param(v) for v in new_values),
                        *row[: len(keys)],
                    ]
                )
        if changed:
            assignments = ", ".join(f"{v} = ?" for v in values)
            condition = " AND ".join(f"{k} = ?" for k in keys)
            yield SqlMany(f"UPDATE {table} SET {assignments} WHERE {condition}", changed)
        last = list(rows[-1][: len(keys)])


def _tuple_after(keys: Sequence[str]) -> str:
    if len(keys) == 1:
        return f"{keys[0]} > ?"
    first, second = keys
    return f"({first} > ? OR ({first} = ? AND {second} > ?))"


def _tuple_after_params(last: Sequence[Any]) -> list[Any]:
    if len(last) == 1:
        return [last[0]]
    return [last[0], last[0], last[1]]


def _rename(value: Any, renames: Mapping[str, str]) -> Any:
    """``value`` with every string (not key) equal to a renamed id replaced by its new id."""
    if isinstance(value, str):
        return renames.get(value, value)
    if isinstance(value, dict):
        return {k: _rename(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, renames) for v in value]
    return value
