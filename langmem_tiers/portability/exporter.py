"""Export: a store's scopes as records of the JSON Lines format (``format.py``).

The export reads in pages (:data:`PAGE` rows a statement, by key), so it holds one page at
a time whatever the size of the database. Its plan is written once, as a generator that
yields a flow per page and receives the page's records (:func:`export_plan`); the sync
:func:`export_records` and the async :func:`aexport_records` only run those flows.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("ann", "semantic"), "f1", {"content": "Ann likes tea"})
    ...     records = list(export_records(store))
    >>> [r["type"] for r in records]
    ['header', 'scope', 'item', 'event', 'end']
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_tiers.long_term.store.scope import decode_label, encode_label
from langmem_tiers.portability.format import (
    ENTITY_FIELDS,
    EVENT_FIELDS,
    ITEM_FIELDS,
    ITEM_TIMES,
    MESSAGE_FIELDS,
    VERSION_FIELDS,
    header,
    iso,
)
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.sql.dialect import (
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEM_ACCESS,
    ITEMS,
    STM_MESSAGES,
    STM_SESSIONS,
    VECTORS,
    VERSIONS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, QdrantCall, Sql, Transaction
from langmem_tiers.sql.migrations import migrate_flow

__all__ = [
    "PAGE",
    "aexport_records",
    "embedder_name",
    "entity_records_flow",
    "export_plan",
    "export_records",
    "item_records_flow",
    "scopes_flow",
]

#: Rows read by one statement.
PAGE = 500

_ITEM_COLUMNS = [c for c in ITEM_FIELDS if c != "indexed"] + ["doc_len"]

Plan = Generator[Flow[list[dict[str, Any]]], list[dict[str, Any]], None]


def embedder_name(embeddings: Embeddings) -> str:
    """The name an export gives the embedder (its class, and its model when it says)."""
    kind = type(embeddings)
    name = f"{kind.__module__}.{kind.__qualname__}"
    model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    return f"{name}:{model}" if isinstance(model, str) and model else name


def scopes_flow(d: Dialect, scopes: Sequence[str] | None) -> Flow[list[str | None]]:
    """The ``scope`` column values to export: those of ``scopes`` (ids), or every scope
    with items, events or short-term sessions (None: the sessions of no user)."""
    if scopes is not None:
        return [encode_label(s) for s in dict.fromkeys(scopes)]
    rows = yield Sql(
        f"SELECT DISTINCT scope FROM {ITEMS} UNION SELECT DISTINCT scope FROM {EVENTS}"
    )
    labels = {str(r[0]) for r in rows}
    users = yield Sql(f"SELECT DISTINCT user_id FROM {STM_MESSAGES} WHERE user_id IS NOT NULL")
    labels.update(encode_label(str(r[0])) for r in users if r[0])
    unowned = yield Sql(
        f"SELECT 1 FROM {STM_SESSIONS} s WHERE NOT EXISTS (SELECT 1 FROM {STM_MESSAGES} m"
        " WHERE m.session_id = s.session_id AND m.user_id IS NOT NULL) LIMIT 1"
    )
    ordered: list[str | None] = [*sorted(labels)]
    return [*ordered, None] if unowned else ordered


def _time(d: Dialect, raw: Any) -> str | None:
    return iso(d.ts_value(raw))


def item_records_flow(
    core: Any, where: str, params: Sequence[Any], *, vectors: bool, limit: int | None = None
) -> Flow[list[dict[str, Any]]]:
    """Item records of the items matching ``where`` (on ``lmt_items``, ordered by id, at
    most ``limit``), with their access counts, versions and (``vectors``) embeddings."""
    d: Dialect = core.dialect
    rows = yield Sql(
        f"SELECT {', '.join(_ITEM_COLUMNS)} FROM {ITEMS} WHERE {where} ORDER BY id"
        + ("" if limit is None else f" LIMIT {int(limit)}"),
        params,
    )
    records: list[dict[str, Any]] = []
    for row in rows:
        raw = dict(zip(_ITEM_COLUMNS, row, strict=True))
        record: dict[str, Any] = {"type": "item"}
        for name in ITEM_FIELDS:
            if name == "indexed":
                record[name] = int(raw["doc_len"] or 0) > 0
            elif name in ITEM_TIMES:
                record[name] = _time(d, raw[name])
            elif name == "value":
                record[name] = d.json_value(raw[name])
            elif name in ("confidence", "importance", "ttl_minutes") and raw[name] is not None:
                record[name] = float(raw[name])
            elif name in ("version", "reinforcement_count"):
                record[name] = int(raw[name])
            else:
                record[name] = raw[name]
        record["access"] = {"count": 0, "last_at": None}
        record["versions"] = []
        records.append(record)
    if not records:
        return records
    by_id = {r["id"]: r for r in records}
    in_ids, id_params = d.in_list("id", list(by_id))
    access = yield Sql(
        f"SELECT id, access_count, last_accessed_at FROM {ITEM_ACCESS} WHERE {in_ids}", id_params
    )
    for item, count, last in access:
        by_id[item]["access"] = {"count": int(count), "last_at": _time(d, last)}
    in_mem, mem_params = d.in_list("memory_id", list(by_id))
    versions = yield Sql(
        f"SELECT memory_id, {', '.join(VERSION_FIELDS)} FROM {VERSIONS} WHERE {in_mem}"
        " ORDER BY memory_id, version",
        mem_params,
    )
    for memory_id, *values in versions:
        version = dict(zip(VERSION_FIELDS, values, strict=True))
        version["value"] = d.json_value(version["value"])
        version["confidence"] = float(version["confidence"])
        for name in ("valid_from", "valid_until", "created_at"):
            version[name] = _time(d, version[name])
        by_id[memory_id]["versions"].append(version)
    if vectors:
        found = yield from _vectors_flow(core, list(by_id))
        for item, fields in found.items():
            by_id[item]["vectors"] = fields
    return records


def _vectors_flow(core: Any, ids: list[str]) -> Flow[dict[str, dict[str, list[float]]]]:
    """The stored unit vectors of ``ids`` by item and field."""
    d: Dialect = core.dialect
    found: dict[str, dict[str, list[float]]] = {}
    if core.index.in_database:
        in_ids, params = d.in_list("item_id", ids)
        rows = yield Sql(
            f"SELECT item_id, field, {d.vector_bytes_sql('embedding')} FROM {VECTORS}"
            f" WHERE {in_ids} ORDER BY item_id, field",
            params,
            binary=True,
        )
        for item, field, blob in rows:
            vector = np.frombuffer(bytes(blob), dtype=d.vector_dtype).astype(np.float64)
            found.setdefault(item, {})[field] = vector.tolist()
        return found
    from qdrant_client import models

    offset = None
    while True:
        points, offset = yield QdrantCall(
            "scroll",
            {
                "collection_name": core.index.collection,
                "scroll_filter": models.Filter(
                    must=[models.FieldCondition(key="item_id", match=models.MatchAny(any=ids))]
                ),
                "limit": 1000,
                "offset": offset,
                "with_payload": ["item_id", "field"],
                "with_vectors": True,
            },
        )
        for p in points:
            found.setdefault(p.payload["item_id"], {})[p.payload["field"]] = [
                float(x) for x in p.vector
            ]
        if offset is None:
            return found


def _event_records_flow(d: Dialect, scope: str, after: int) -> Flow[list[dict[str, Any]]]:
    rows = yield Sql(
        f"SELECT {', '.join(EVENT_FIELDS)} FROM {EVENTS} WHERE scope = ? AND seq > ?"
        " ORDER BY seq LIMIT ?",
        [scope, after, PAGE],
    )
    return [event_record(d, row) for row in rows]


def event_record(d: Dialect, row: Sequence[Any]) -> dict[str, Any]:
    """The record of an event row (the columns of :data:`EVENT_FIELDS`)."""
    columns = dict(zip(EVENT_FIELDS, row, strict=True))
    columns["event_type"] = columns.pop("type")
    record: dict[str, Any] = {"type": "event", **columns}
    record["seq"] = int(record["seq"])
    record["at"] = _time(d, record["at"])
    for name in ("before", "after", "metadata"):
        record[name] = None if record[name] is None else d.json_value(record[name])
    return record


def entity_records_flow(
    d: Dialect, where: str, params: Sequence[Any], *, limit: int | None = None
) -> Flow[list[dict[str, Any]]]:
    """Entity records of the entities matching ``where`` (on ``lmt_entities``, ordered by
    id, at most ``limit``), each with the memories that mention it."""
    rows = yield Sql(
        f"SELECT {', '.join(ENTITY_FIELDS)} FROM {ENTITIES} WHERE {where} ORDER BY id"
        + ("" if limit is None else f" LIMIT {int(limit)}"),
        params,
    )
    records: list[dict[str, Any]] = []
    for row in rows:
        record: dict[str, Any] = {"type": "entity", **dict(zip(ENTITY_FIELDS, row, strict=True))}
        record["aliases"] = json.loads(record["aliases"] or "[]")  # a TEXT column
        record["mentions"] = int(record["mentions"])
        for name in ("first_seen", "last_seen"):
            record[name] = _time(d, record[name])
        record["mentioned_by"] = []
        records.append(record)
    if not records:
        return records
    by_id = {r["id"]: r for r in records}
    in_ids, id_params = d.in_list("entity_id", list(by_id))
    mentions = yield Sql(
        f"SELECT entity_id, memory_id, at FROM {ENTITY_MENTIONS} WHERE {in_ids}"
        " ORDER BY entity_id, at, memory_id",
        id_params,
    )
    for entity_id, memory_id, at in mentions:
        by_id[entity_id]["mentioned_by"].append({"memory_id": memory_id, "at": _time(d, at)})
    return records


def _sessions_condition(scope: str | None) -> tuple[str, list[Any]]:
    if scope is None:
        return (
            f"NOT EXISTS (SELECT 1 FROM {STM_MESSAGES} m WHERE m.session_id = s.session_id"
            " AND m.user_id IS NOT NULL)",
            [],
        )
    return (
        f"s.session_id IN (SELECT session_id FROM {STM_MESSAGES} WHERE user_id = ?)",
        [decode_label(scope)],
    )


def _session_records_flow(d: Dialect, scope: str | None, after: str) -> Flow[list[dict[str, Any]]]:
    where, params = _sessions_condition(scope)
    rows = yield Sql(
        f"SELECT s.session_id, s.last_seq, s.changes FROM {STM_SESSIONS} s"
        f" WHERE {where} AND s.session_id > ? ORDER BY s.session_id LIMIT ?",
        [*params, after, PAGE],
    )
    return [
        {"type": "session", "session_id": r[0], "last_seq": int(r[1]), "changes": int(r[2])}
        for r in rows
    ]


def message_record(d: Dialect, row: Sequence[Any]) -> dict[str, Any]:
    """The record of a short-term message row (the columns of :data:`MESSAGE_FIELDS`)."""
    record: dict[str, Any] = {"type": "message", **dict(zip(MESSAGE_FIELDS, row, strict=True))}
    record["seq"] = int(record["seq"])
    record["required_tier_level"] = int(record["required_tier_level"])
    record["content"] = d.json_value(record["content"])
    record["extra"] = d.json_value(record["extra"])
    return record


def _message_records_flow(d: Dialect, session: str, after: int) -> Flow[list[dict[str, Any]]]:
    rows = yield Sql(
        f"SELECT {', '.join(MESSAGE_FIELDS)} FROM {STM_MESSAGES} WHERE session_id = ?"
        " AND seq > ? ORDER BY seq LIMIT ?",
        [session, after, PAGE],
    )
    return [message_record(d, r) for r in rows]


def _constant(records: list[dict[str, Any]]) -> Flow[list[dict[str, Any]]]:
    return records
    yield  # pragma: no cover - makes this a generator


def export_plan(core: Any, scopes: Sequence[str] | None, *, vectors: bool = False) -> Plan:
    """The export as flows: each yielded flow answers the next records, which are sent back.

    ``core`` is the store's ``StoreCore``; ``scopes`` the scope ids (None: every scope).
    """
    d: Dialect = core.dialect
    answer = yield _scopes_records(d, scopes)
    labels: list[str | None] = answer[0]["scopes"]
    for label in labels:
        counts: Counter[str] = Counter()
        yield _constant([{"type": "scope", "scope": label}])
        if label is not None:
            after = ""
            while True:
                page = yield item_records_flow(
                    core, "scope = ? AND id > ?", [label, after], vectors=vectors, limit=PAGE
                )
                counts["item"] += len(page)
                if len(page) < PAGE:
                    break
                after = page[-1]["id"]
            seq = 0
            while True:
                page = yield _event_records_flow(d, label, seq)
                counts["event"] += len(page)
                if len(page) < PAGE:
                    break
                seq = page[-1]["seq"]
            after = ""
            while True:
                page = yield entity_records_flow(
                    d, "scope = ? AND id > ?", [label, after], limit=PAGE
                )
                counts["entity"] += len(page)
                if len(page) < PAGE:
                    break
                after = page[-1]["id"]
        session_after = ""
        while True:
            sessions = yield _session_records_flow(d, label, session_after)
            counts["session"] += len(sessions)
            for session in sessions:
                seq = 0
                while True:
                    page = yield _message_records_flow(d, session["session_id"], seq)
                    counts["message"] += len(page)
                    if len(page) < PAGE:
                        break
                    seq = page[-1]["seq"]
            if len(sessions) < PAGE:
                break
            session_after = sessions[-1]["session_id"]
        yield _constant([{"type": "end", "scope": label, "counts": dict(sorted(counts.items()))}])


def _scopes_records(d: Dialect, scopes: Sequence[str] | None) -> Flow[list[dict[str, Any]]]:
    # The sessions are the message log's, a component of their own: a database that never
    # had one gets its (empty) tables, so that every export reads the same tables.
    yield Transaction(migrate_flow(d, [SHORT_TERM]))
    labels = yield from scopes_flow(d, scopes)
    # Not a record of the file: the plan's own answer, taken off by the drivers.
    return [{"type": "_scopes", "scopes": labels}]


def _records(page: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in page if r["type"] != "_scopes"]


def export_records(
    store: Any, scopes: Sequence[str] | None = None, *, embeddings: bool = False
) -> Iterator[dict[str, Any]]:
    """The records of an export of ``store`` (a ``TieredMemoryStore``): the header, then
    each scope of ``scopes`` (ids; None: every scope). ``embeddings`` adds the vectors."""
    yield header(embedder_name(store.embeddings), store.core.dims, embeddings=embeddings)
    plan = export_plan(store.core, scopes, vectors=embeddings)
    try:
        flow = next(plan)
        while True:
            page = store.db.run(flow)
            yield from _records(page)
            flow = plan.send(page)
    except StopIteration:
        return
    finally:
        plan.close()


async def aexport_records(
    store: Any, scopes: Sequence[str] | None = None, *, embeddings: bool = False
) -> AsyncIterator[dict[str, Any]]:
    """Async twin of :func:`export_records`."""
    yield header(embedder_name(store.embeddings), store.core.dims, embeddings=embeddings)
    plan = export_plan(store.core, scopes, vectors=embeddings)
    try:
        flow = next(plan)
        while True:
            page = await store.db.arun(flow)
            for record in _records(page):
                yield record
            flow = plan.send(page)
    except StopIteration:
        return
    finally:
        plan.close()
