"""Writes of the store: items, their terms and vectors, and one event per change.

A batch's puts and deletes are written in the caller's transaction: the items, then their
BM25 terms and (in-database) vectors, then the columns a :class:`WriteNote` sets, and last
one event per changed item with its before and after snapshots.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import numpy as np
from langgraph.store.base import PutOp

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.long_term.store.events import (
    EventRow,
    created_events_request,
    snapshot_flow,
    snapshot_request,
    snapshots,
    write_events_flow,
)
from langmem_tiers.long_term.store.records import (
    ItemRecord,
    item_id,
    join_namespace,
    texts_to_index,
    validate_key,
    validate_namespace,
    validate_value_json,
)
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.keys import extra_terms
from langmem_tiers.long_term.store.search.neighbours import NEIGHBOUR_KIND
from langmem_tiers.long_term.store.vectors import VectorIndex, VectorRow
from langmem_tiers.sql.dialect import (
    COUNTED_COLUMNS,
    ITEMS,
    SCOPE_CHANGES,
    VECTORS,
    Dialect,
    item_columns,
)
from langmem_tiers.sql.flow import Flow, InsertRows, Pipeline, Sql, SqlMany, TakeCounters

__all__ = [
    "ENGINE_COLUMNS",
    "ColumnChange",
    "OwnWrite",
    "PreparedPut",
    "StoreWriter",
    "WriteNote",
    "WrittenItem",
    "change_columns_flow",
    "lock_scope_changes_flow",
    "prepare_put",
    "unindex_flow",
    "validate_ttl",
]

# Memory columns a value does not carry, kept by the memory engine: name -> is a timestamp.
ENGINE_COLUMNS: dict[str, bool] = {
    "version": False,
    "reinforcement_count": False,
    "last_used_at": True,
    "consolidated_into_id": False,
}


class WriteNote(NamedTuple):
    """What a caller adds to the put of one item (see ``StoreCore.batch_flow``).

    ``event_type`` and ``metadata`` replace the event's defaults (``memory.created`` /
    ``memory.updated``, ``{}``); ``columns`` sets :data:`ENGINE_COLUMNS` in the same
    transaction, before the event's snapshot is taken.
    """

    event_type: str | None = None
    metadata: dict[str, Any] | None = None
    columns: dict[str, Any] | None = None


class PreparedPut(NamedTuple):
    """A validated put (``record`` None: a delete) with its texts to embed and its terms."""

    record: ItemRecord | None
    namespace: tuple[str, ...]
    key: str
    texts: list[tuple[str, str]]  # (field, text) to embed
    terms: dict[str, int]
    doc_len: int
    ttl: float | None = None  # minutes to live (None: no expiry)
    value_json: str | None = None  # the record's value as JSON text, when already encoded


class WrittenItem(NamedTuple):
    """An item as a write left it: what a read of its namespace finds of it."""

    length: int
    terms: Mapping[str, int]  # BM25 term frequencies
    packed_terms: str | None  # the same, packed as the items table keeps them
    episodic: bool  # of the kind that has neighbours
    vectors: np.ndarray  # unit float32 rows, one per indexed field (none: 0 rows)


class OwnWrite(NamedTuple):
    """What one write did to the namespaces it was asked to count: each namespace's change
    count just before its first change and just after its last, and what it left of each
    item it wrote there (None: deleted).

    Both counts are read inside the write's transaction while no other writer can count
    in those namespaces (PostgreSQL: the write holds their counters' locks; SQLite: write
    transactions are serial), so the changes between them are this write's alone. Once
    the transaction has committed, a process that held a namespace at the first count
    holds it at the second by taking in ``items`` (see ``ScopeCache.written``).
    """

    before: Mapping[str, int]
    after: Mapping[str, int]
    items: Mapping[str, Mapping[str, WrittenItem | None]]


def validate_ttl(ttl: Any) -> float | None:
    """``ttl`` (minutes) as a float, None for none; InvalidContentError when it is no TTL."""
    if ttl is None:
        return None
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float))
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise InvalidContentError(
            f"ttl must be a number of minutes > 0 (or None for no expiry), got {ttl!r}."
        )
    return float(ttl)


def prepare_put(op: PutOp, *, fields: Sequence[str] | None, max_chars: int) -> PreparedPut:
    """Validate ``op`` and analyse its text (pure: no I/O)."""
    namespace = tuple(op.namespace)
    # Not the public put's check: LangGraph reserves "langgraph" there only, and its
    # server writes under that namespace through batch.
    validate_namespace(namespace, reserved_ok=True)
    key = validate_key(op.key)
    if op.value is None:
        return PreparedPut(None, namespace, key, [], {}, 0)
    ttl = validate_ttl(op.ttl)
    record, value_json = validate_value_json(namespace, key, op.value, max_chars=max_chars)
    if op.index is False:
        return PreparedPut(record, namespace, key, [], {}, 0, ttl, value_json)
    texts = texts_to_index(record, list(op.index) if isinstance(op.index, list) else fields)
    terms = bm25.analyze(" ".join(text for _, text in texts))
    terms.extend(extra_terms(record))
    return PreparedPut(
        record, namespace, key, texts, bm25.term_frequencies(terms), len(terms), ttl, value_json
    )


def lock_scope_changes_flow(dialect: Dialect, prefixes: Iterable[str]) -> Flow[None]:
    """Take the change counters of ``prefixes`` (joined namespaces) that a write of several
    namespaces will count in, all in one order (see ``Dialect.lock_scope_changes_sql``)."""
    take = lock_scope_changes_request(dialect, prefixes)
    if take is not None:
        yield take


def lock_scope_changes_request(dialect: Dialect, prefixes: Iterable[str]) -> TakeCounters | None:
    """The request of :func:`lock_scope_changes_flow`; None when there is nothing to take."""
    wanted = sorted(set(prefixes))
    statement = dialect.lock_scope_changes_sql()
    if statement and wanted and dialect.counts_scope_changes:
        return TakeCounters(Sql(statement, [wanted]), tuple(wanted))
    return None


class ColumnChange(NamedTuple):
    """New values of some columns of one stored item (bound as the dialect binds them)."""

    item_id: str
    prefix: str  # the item's joined namespace
    columns: Mapping[str, Any]


def change_columns_flow(dialect: Dialect, changes: Sequence[ColumnChange]) -> Flow[None]:
    """Set columns of stored items (inside the caller's transaction; events are the
    caller's). Changes that a namespace's change counter counts (a new value) take their
    counters first, in one order, as every writer does; changes with the same columns go
    in one statement, the last change of an item winning."""
    yield from lock_scope_changes_flow(
        dialect, (c.prefix for c in changes if COUNTED_COLUMNS & c.columns.keys())
    )
    grouped: dict[tuple[str, ...], list[list[Any]]] = {}
    for change in changes:
        if change.columns:
            names = tuple(sorted(change.columns))
            grouped.setdefault(names, []).append(
                [*(change.columns[n] for n in names), change.item_id]
            )
    for names, rows in grouped.items():
        statement = dialect.update_items_sql(names)
        if statement is None:
            assignments = ", ".join(f"{n} = ?" for n in names)
            yield SqlMany(f"UPDATE {ITEMS} SET {assignments} WHERE id = ?", rows)
        else:
            last = list({row[-1]: row for row in rows}.values())
            yield Sql(statement, [list(column) for column in zip(*last, strict=True)])


def unindex_flow(index: VectorIndex, ids: Sequence[str]) -> Flow[None]:
    """Drop the terms, postings and in-database vectors of items whose rows stay (inside a
    transaction); vectors in an external index are dropped by the caller after the commit."""
    if not ids:
        return
    d = index.dialect
    in_ids, params = d.in_list("id", ids)
    if d.counts_scope_changes and d.lock_scope_changes_sql():
        # The new lengths are counted per namespace: their counters taken in one order first.
        rows = yield Sql(f"SELECT DISTINCT prefix FROM {ITEMS} WHERE {in_ids}", params)
        yield from lock_scope_changes_flow(d, (r[0] for r in rows))
    # The items' trigger removes their postings with their terms.
    yield Sql(f"UPDATE {ITEMS} SET doc_len = 0, terms = NULL WHERE {in_ids}", params)
    if index.in_database:
        in_items, params = d.in_list("item_id", ids)
        yield Sql(f"DELETE FROM {VECTORS} WHERE {in_items}", params)


def scope_counts_request(dialect: Dialect, namespaces: Sequence[str]) -> Sql:
    """The statement reading the change counts of ``namespaces`` (see :func:`scope_counts`)."""
    in_names, params = dialect.in_list("prefix", namespaces)
    return Sql(f"SELECT prefix, changes FROM {SCOPE_CHANGES} WHERE {in_names}", params)


def scope_counts(namespaces: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict[str, int]:
    """The change count of each of ``namespaces`` from the rows of
    :func:`scope_counts_request` (0 for one never counted)."""
    counts = dict.fromkeys(namespaces, 0)
    counts.update((prefix, int(changes)) for prefix, changes in rows)
    return counts


def _written_items(
    puts: Sequence[PreparedPut],
    rows: Sequence[VectorRow],
    packed: Mapping[str, str | None],
    namespaces: AbstractSet[str],
) -> dict[str, dict[str, WrittenItem | None]]:
    """What ``puts`` leave of their items in ``namespaces``: lengths, packed terms, and
    the vectors as the index stores them (normalised, float32)."""
    wanted = [r for r in rows if r.prefix in namespaces]
    matrix = np.stack([r.vector for r in wanted]).astype(np.float32) if wanted else None
    vectors: defaultdict[str, list[int]] = defaultdict(list)
    for position, r in enumerate(wanted):
        vectors[r.item_id].append(position)
    items: defaultdict[str, dict[str, WrittenItem | None]] = defaultdict(dict)
    for p in puts:
        name = join_namespace(p.namespace)
        if name not in namespaces:
            continue
        if p.record is None:
            items[name][item_id(p.namespace, p.key)] = None
            continue
        own = vectors.get(p.record.id)
        items[name][p.record.id] = WrittenItem(
            p.doc_len,
            p.terms,
            packed.get(p.record.id),
            p.record.kind == NEIGHBOUR_KIND,
            matrix[own] if own and matrix is not None else _NO_ROWS,
        )
    return dict(items)


_NO_ROWS = np.zeros((0, 0), dtype=np.float32)


def _event_of(
    notes: Mapping[str, WriteNote], memory_id: str, kind: str
) -> tuple[str, dict[str, Any]]:
    """The type and metadata of the event of a ``kind`` change (created, updated, deleted)
    of ``memory_id``: its note's, else ``memory.<kind>`` and none."""
    note = notes.get(memory_id, WriteNote())
    return note.event_type or f"memory.{kind}", dict(note.metadata or {})


class StoreWriter:
    """Writes prepared puts with their index rows and events, inside a transaction."""

    def __init__(self, dialect: Dialect, index: VectorIndex) -> None:
        self.dialect = dialect
        self.index = index

    def write_flow(
        self,
        puts: list[PreparedPut],
        rows: list[VectorRow],
        now: datetime,
        notes: Mapping[str, WriteNote],
        *,
        counted: Sequence[str] = (),
    ) -> Flow[OwnWrite | None]:
        """Write ``puts`` with their vector ``rows`` and events; with ``counted``
        (namespaces), also what the write did there (:class:`OwnWrite`)."""
        d = self.dialect
        all_ids = [p.record.id if p.record else item_id(p.namespace, p.key) for p in puts]
        before = yield from self._lock_and_read_flow(puts, all_ids)
        # What follows needs no answer before the last: sent in one pipeline, so the
        # counters every other writer of these namespaces waits for are held for one
        # round trip, not one a statement.
        batch: list[Sql | SqlMany | InsertRows] = []
        counts_before_at = len(batch)
        if counted:
            batch.append(scope_counts_request(d, counted))
        deletes = sorted({item_id(p.namespace, p.key) for p in puts if p.record is None})
        if deletes:
            batch.append(self._delete_request(deletes))
        upserts = [p for p in puts if p.record is not None]
        ids = [p.record.id for p in upserts if p.record is not None]
        packed = {p.record.id: bm25.pack_terms(p.terms) for p in upserts if p.record is not None}
        if upserts:
            batch.extend(self._upsert_requests(upserts, packed, before, rows, ids, now))
        batch.extend(self._note_requests(notes, ids))
        counts_after_at = len(batch)
        if counted:
            # Before the events: nothing after this statement changes an item.
            batch.append(scope_counts_request(d, counted))
        # Every event a creation (the common batch: new memories), where the database
        # builds their snapshots: the last statement of the pipeline.
        created = (
            None
            if before
            else created_events_request(d, [(i, *_event_of(notes, i, "created")) for i in ids], now)
        )
        if created is not None and ids:
            batch.append(created)
        results = (yield Pipeline(tuple(batch))) if batch else []
        own = None
        if counted:
            own = OwnWrite(
                scope_counts(counted, results[counts_before_at]),
                scope_counts(counted, results[counts_after_at]),
                _written_items(puts, rows, packed, set(counted)),
            )
        if created is not None:
            return own
        yield from self._events_flow(all_ids, before, ids, notes, now)
        return own

    def _lock_and_read_flow(
        self, puts: list[PreparedPut], all_ids: list[str]
    ) -> Flow[dict[str, dict[str, Any]]]:
        """Lock the items of ``all_ids``, read them (their snapshots before the write, by
        id), then take the counters of the puts' namespaces."""
        d = self.dialect
        # The items' locks, their rows, then the counters: one pipeline, run in that
        # order without a round trip between.
        first: list[Sql | TakeCounters] = []
        lock = d.lock_items_sql()
        if lock and all_ids:
            # Concurrent writers of one item take turns, so each event's "before" is the
            # previous event's "after" (READ COMMITTED alone lets both read the old row).
            first.append(Sql(lock, [sorted(set(all_ids))]))
        # The items' locks are enough to read them. Before the counters: every writer of
        # a namespace waits for its counter until the holder commits, so the holder
        # reads nothing under it that it can read before.
        read_at = len(first)
        if all_ids:
            first.append(snapshot_request(d, all_ids))
        # After the items' locks, as every writer takes them.
        take = lock_scope_changes_request(d, {join_namespace(p.namespace) for p in puts})
        if take is not None:
            first.append(take)
        answers = (yield Pipeline(tuple(first))) if first else []
        return snapshots(d, answers[read_at]) if all_ids else {}

    def _delete_request(self, deletes: list[str]) -> Sql:
        """The statement deleting the items of ``deletes`` (ids, sorted)."""
        # One statement, rows locked in id order: a statement per item fired the count
        # triggers per item, and PostgreSQL's counter row grew a version each time,
        # which every next one walked.
        d = self.dialect
        in_ids, params = d.in_list("id", deletes)
        return Sql(
            f"DELETE FROM {ITEMS} WHERE id IN (SELECT id FROM {ITEMS} WHERE {in_ids}"
            f" ORDER BY id{d.for_update})",
            params,
        )

    def _upsert_requests(
        self,
        upserts: list[PreparedPut],
        packed: Mapping[str, str | None],
        before: Mapping[str, Any],
        rows: list[VectorRow],
        ids: list[str],
        now: datetime,
    ) -> list[Sql | SqlMany | InsertRows]:
        """The statements writing the rows of ``upserts`` (items in ``before`` existed)
        and, in the database's index, their vector ``rows``."""
        d = self.dialect
        requests: list[Sql | SqlMany | InsertRows] = []
        # Items not there before are plain inserts (COPY on PostgreSQL): the item
        # locks above (or SQLite's write transaction) keep anyone else from adding them.
        fresh = [p for p in upserts if p.record is not None and p.record.id not in before]
        # In id order, as deletes above: rows locked in one order by every writer
        # cannot deadlock.
        known = sorted(
            (p for p in upserts if p.record is not None and p.record.id in before),
            key=lambda p: p.record.id if p.record is not None else "",
        )
        stamp = d.ts_param(now)
        if fresh:
            requests.append(
                InsertRows(
                    ITEMS, item_columns, [self._item_row(p, packed, now, stamp) for p in fresh]
                )
            )
        if known:
            item_rows = [self._item_row(p, packed, now, stamp) for p in known]
            arrays = d.upsert_items_arrays_sql()
            if arrays is None:
                requests.append(SqlMany(d.upsert_items_sql(), item_rows))
            else:
                requests.append(
                    Sql(arrays, [list(column) for column in zip(*item_rows, strict=True)])
                )
        # Vectors belong to their item (a foreign key): a new item has none, unless
        # another client deleted an item of that id where foreign keys are not
        # enforced (its vectors are cleared too, or the new ones would collide). Its
        # terms are the packed column of its row.
        if self.index.in_database:
            replaced = ids if d.orphans_possible else [i for i in ids if i in before]
            requests.extend(self.index.write_requests(rows, replaced))
        return requests

    def _note_requests(self, notes: Mapping[str, WriteNote], ids: list[str]) -> list[Sql]:
        """The statements setting the engine columns the ``notes`` of items ``ids`` set."""
        d = self.dialect
        requests: list[Sql] = []
        for note_id, note in notes.items():
            if note.columns and note_id in ids:
                names = sorted(note.columns)
                requests.append(
                    Sql(
                        f"UPDATE {ITEMS} SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                        [
                            *(
                                d.ts_param(note.columns[n])
                                if ENGINE_COLUMNS[n]
                                else note.columns[n]
                                for n in names
                            ),
                            note_id,
                        ],
                    )
                )
        return requests

    def _events_flow(
        self,
        all_ids: list[str],
        before: Mapping[str, dict[str, Any]],
        ids: list[str],
        notes: Mapping[str, WriteNote],
        now: datetime,
    ) -> Flow[None]:
        """Write the events of the write: each item's change from its snapshot ``before``
        to the one read now."""
        d = self.dialect
        after = yield from snapshot_flow(d, ids)
        events = []
        for memory_id in all_ids:
            old, new = before.get(memory_id), after.get(memory_id)
            if old is None and new is None:
                continue  # deleting what was not there changes nothing
            kind = "deleted" if new is None else "created" if old is None else "updated"
            base = new or old
            assert base is not None
            event_type, metadata = _event_of(notes, memory_id, kind)
            events.append(
                EventRow(
                    event_type,
                    base["scope"],
                    base["kind"],
                    memory_id,
                    base["prefix"],
                    base["key"],
                    old,
                    new,
                    metadata,
                )
            )
        yield from write_events_flow(d, events, now)

    def _item_row(
        self, p: PreparedPut, packed: Mapping[str, str | None], now: datetime, stamp: Any
    ) -> tuple[Any, ...]:
        """The item row of ``p`` written at ``now`` (``stamp``: its parameter; ``packed``:
        the packed terms of each item)."""
        d = self.dialect
        r = p.record
        assert r is not None
        values = {
            "id": r.id,
            "prefix": r.prefix,
            "key": r.key,
            "scope": r.scope,
            "kind": r.kind,
            "value": d.json_param(r.value)
            if p.value_json is None
            else d.json_text_param(p.value_json),
            "created_at": stamp,
            "updated_at": stamp,
            "event_at": d.ts_param(r.event_at),
            "session_id": r.session_id,
            "actor": r.actor,
            "action_type": r.action_type,
            "subject": r.subject,
            "category": r.category,
            "valid_from": d.ts_param(r.valid_from),
            "valid_until": d.ts_param(r.valid_until),
            "proc_key": r.proc_key,
            "confidence": r.confidence,
            "importance": r.importance,
            "status": r.status,
            "doc_len": p.doc_len,
            "terms": packed[r.id],
            "expires_at": d.ts_param(now + timedelta(minutes=p.ttl)) if p.ttl else None,
            "ttl_minutes": p.ttl,
        }
        return tuple(values[c] for c in item_columns)
