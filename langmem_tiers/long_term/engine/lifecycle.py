"""Lifecycle of memories: status changes with their events, decay, forgetting, compression.

States: ``active`` (retrieved), ``superseded`` (replaced by a newer memory),
``decayed`` (importance fell below ``Settings.decay_threshold``; active and superseded
memories decay alike), ``deleted`` (soft
delete; a hard delete removes the row), ``compressed`` (replaced by a summary that
keeps the link). A status lives both in the value (``value["status"]``) and in its
column, and :func:`change_flow` keeps the two equal.

Decay: ``importance = importance0 * exp(-ln 2 * days_since_last_access / half_life)``,
where ``importance0`` is the value's ``importance`` (default 1) and the last access is
the latest of the last retrieval, the last use (procedural) and the last update.

Every change appends its event in the transaction of the change (:func:`change_flow`).

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 1, 31, tzinfo=timezone.utc)
    >>> round(decayed_importance(1.0, now - timedelta(days=30), now, 30.0), 3)
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import PutOp

from langmem_tiers.errors import ConflictError, NotFoundError
from langmem_tiers.long_term.engine.models import (
    COMPRESSED,
    CREATED,
    DECAYED,
    DELETED,
    FORGOTTEN,
    IMPORTANCE_DECAYED,
    MEMORY_COLUMNS,
    UPDATED,
    Memory,
    memory_from_row,
    memory_from_snapshot,
)
from langmem_tiers.long_term.store.core import StoreCore, WriteNote
from langmem_tiers.long_term.store.erasure import tombstone_memory_events_flow
from langmem_tiers.long_term.store.events import EventRow, snapshot_flow, write_events_flow
from langmem_tiers.long_term.store.records import item_id, split_namespace, validate_value
from langmem_tiers.long_term.store.writes import ColumnChange, change_columns_flow, unindex_flow
from langmem_tiers.sql.dialect import ITEMS, Dialect
from langmem_tiers.sql.flow import Flow, Sql, Transaction

__all__ = [
    "Change",
    "StaleDecisionError",
    "change_flow",
    "compress_flow",
    "decay_changes",
    "decay_flow",
    "decayed_importance",
    "hard_delete_flow",
    "last_access",
    "memories_flow",
    "scoped_memory_flow",
    "soft_delete_flow",
    "with_status",
]

_LN2 = math.log(2.0)
_DECAYING = frozenset({"active", "superseded"})  # the statuses a decay pass ages

# Columns a change may set besides those derived from the value: name -> is a timestamp.
_CHANGE_COLUMNS: dict[str, bool] = {
    "importance": False,
    "version": False,
    "reinforcement_count": False,
    "last_used_at": True,
    "consolidated_into_id": False,
}


class StaleDecisionError(ConflictError):
    """A memory a write was decided on changed before the write; decide again."""


class Change(NamedTuple):
    """One change of an existing memory, without new content to index.

    ``value`` (when given) replaces the stored value; its status, confidence and
    validity go to their columns. ``columns`` sets other columns (importance, version,
    reinforcement_count, last_used_at, consolidated_into_id). ``touch`` moves
    ``updated_at`` to now (a decay does not: it is not an update of the memory).
    """

    memory_id: str
    event_type: str
    value: dict[str, Any] | None = None
    columns: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    touch: bool = True


def memories_flow(
    dialect: Dialect,
    where: str,
    params: Sequence[Any],
    *,
    order: str = "i.created_at, i.id",
    lock: bool = False,
) -> Flow[list[Memory]]:
    """Memories matching ``where`` (trusted SQL on alias ``i``); ``lock`` locks their rows."""
    columns = ", ".join(MEMORY_COLUMNS)
    suffix = dialect.for_update if lock else ""
    rows = yield Sql(
        f"SELECT {columns} FROM {ITEMS} i WHERE {where} ORDER BY {order}{suffix}", params
    )
    return [memory_from_row(dialect, row) for row in rows]


def scoped_memory_flow(
    dialect: Dialect,
    scope_label: str,
    memory_id: str,
    *,
    kinds: Iterable[str] | None = None,
    lock: bool = False,
) -> Flow[Memory]:
    """The memory ``memory_id`` of the scope, or NotFoundError.

    An id of another scope is not found either: the error never tells that it exists.
    """
    where = "i.id = ? AND i.scope = ? AND i.kind IS NOT NULL"
    params: list[Any] = [memory_id, scope_label]
    wanted = list(kinds or ())
    if wanted:
        where += f" AND i.kind IN ({', '.join('?' for _ in wanted)})"
        params.extend(wanted)
    found = yield from memories_flow(dialect, where, params, lock=lock)
    if not found:
        what = " or ".join(wanted) + " memory" if wanted else "memory"
        raise NotFoundError(
            f"no {what} {memory_id!r} in this scope; check the id (memories of other scopes "
            "cannot be read or changed)."
        )
    return found[0]


def change_flow(
    dialect: Dialect, changes: Sequence[Change], *, at: datetime, max_chars: int
) -> Flow[dict[str, dict[str, Any]]]:
    """Apply changes and append their events (inside the caller's transaction).

    Returns the snapshots after the change, by id. A change of a memory that is not
    there any more raises NotFoundError (the transaction rolls back).
    """
    if not changes:
        return {}
    ids = list(dict.fromkeys(c.memory_id for c in changes))
    before = yield from snapshot_flow(dialect, ids)
    missing = [i for i in ids if i not in before]
    if missing:
        raise NotFoundError(f"memories {missing} are gone; nothing was changed.")
    updates: list[ColumnChange] = []
    for change in changes:
        old = before[change.memory_id]
        sets: dict[str, Any] = {}
        if change.value is not None:
            record = validate_value(
                split_namespace(old["prefix"]), old["key"], change.value, max_chars=max_chars
            )
            sets["value"] = dialect.json_param(record.value)
            sets["status"] = record.status
            sets["confidence"] = record.confidence
            sets["valid_from"] = dialect.ts_param(record.valid_from)
            sets["valid_until"] = dialect.ts_param(record.valid_until)
        for name, raw in (change.columns or {}).items():
            if name not in _CHANGE_COLUMNS:
                raise ValueError(f"a change cannot set column {name!r}")
            sets[name] = dialect.ts_param(raw) if _CHANGE_COLUMNS[name] else raw
        if change.touch:
            sets["updated_at"] = dialect.ts_param(at)
        updates.append(ColumnChange(change.memory_id, old["prefix"], sets))
    yield from change_columns_flow(dialect, updates)
    after = yield from snapshot_flow(dialect, ids)
    events = []
    for change in changes:
        old, new = before[change.memory_id], after[change.memory_id]
        events.append(
            EventRow(
                change.event_type,
                new["scope"],
                new["kind"],
                change.memory_id,
                new["prefix"],
                new["key"],
                old,
                new,
                dict(change.metadata or {}),
            )
        )
    yield from write_events_flow(dialect, events, at)
    return after


def with_status(value: Mapping[str, Any], status: str, **more: Any) -> dict[str, Any]:
    """A copy of ``value`` with another status (and more keys)."""
    out = dict(value)
    out["status"] = status
    out.update(more)
    return out


# -- decay ---------------------------------------------------------------------------------
def decayed_importance(
    base: float, last_access: datetime, now: datetime, half_life_days: float
) -> float:
    """``base * exp(-ln 2 * days / half_life)``; an access in the future counts as now."""
    days = max(0.0, (now - last_access).total_seconds() / 86_400.0)
    return base * math.exp(-_LN2 * days / half_life_days)


def _base_importance(memory: Memory) -> float:
    raw = memory.value.get("importance", 1.0)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0:
        return 1.0
    return float(raw)


def last_access(memory: Memory) -> datetime:
    """The latest of the last retrieval, the last use and the last update."""
    times = [memory.updated_at, memory.last_accessed_at, memory.last_used_at]
    return max(t for t in times if t is not None)


def decay_changes(
    memories: Iterable[Memory],
    now: datetime,
    *,
    half_life_days: float,
    threshold: float,
    min_change: float,
) -> list[Change]:
    """The changes a decay pass makes (pure).

    Active and superseded memories decay. One whose importance falls below ``threshold``
    becomes ``decayed`` (a superseded one keeps its ``superseded_by`` link); others get
    their new importance when it moved by at least ``min_change`` (so a pass run often
    does not write an event for every memory every time).
    """
    changes = []
    for memory in memories:
        # A superseded memory ages like any other: it leaves searches when replaced, and
        # leaves the store's working set (decayed, then compressible) when it fades.
        if memory.status not in _DECAYING:
            continue
        importance = decayed_importance(
            _base_importance(memory), last_access(memory), now, half_life_days
        )
        meta = {"importance_before": memory.importance, "importance": importance}
        if importance < threshold:
            changes.append(
                Change(
                    memory.id,
                    DECAYED,
                    value=with_status(memory.value, "decayed"),
                    columns={"importance": importance},
                    metadata={**meta, "threshold": threshold, "status_before": memory.status},
                    touch=False,
                )
            )
        elif abs(importance - memory.importance) >= min_change:
            changes.append(
                Change(
                    memory.id,
                    IMPORTANCE_DECAYED,
                    columns={"importance": importance},
                    metadata=meta,
                    touch=False,
                )
            )
    return changes


# -- flows of the engine's lifecycle operations ------------------------------------------
def decay_flow(
    core: StoreCore,
    scope_label: str,
    now: datetime,
    *,
    half_life_days: float,
    threshold: float,
    min_change: float,
) -> Flow[tuple[int, list[Change]]]:
    """Apply decay to the scope's active and superseded memories: ``(examined, changes)``."""
    yield from core.flush_flow()  # pending retrievals count as accesses
    result: tuple[int, list[Change]] = yield Transaction(
        _decay(core, scope_label, now, half_life_days, threshold, min_change)
    )
    return result


def _decay(
    core: StoreCore,
    scope_label: str,
    now: datetime,
    half_life_days: float,
    threshold: float,
    min_change: float,
) -> Flow[tuple[int, list[Change]]]:
    d = core.dialect
    found = yield from memories_flow(
        d,
        "i.scope = ? AND i.kind IS NOT NULL AND i.status IN ('active', 'superseded')",
        [scope_label],
        lock=True,
    )
    changes = decay_changes(
        found, now, half_life_days=half_life_days, threshold=threshold, min_change=min_change
    )
    yield from change_flow(d, changes, at=d.now(), max_chars=core.settings.max_content_chars)
    return len(found), changes


def soft_delete_flow(core: StoreCore, scope_label: str, memory_id: str) -> Flow[Memory]:
    """Status ``deleted`` (kept, with its history); a deleted memory stays as it is."""
    memory: Memory = yield Transaction(_soft_delete(core, scope_label, memory_id))
    return memory


def _soft_delete(core: StoreCore, scope_label: str, memory_id: str) -> Flow[Memory]:
    d = core.dialect
    memory = yield from scoped_memory_flow(d, scope_label, memory_id, lock=True)
    if memory.status == "deleted":
        return memory
    change = Change(
        memory.id,
        FORGOTTEN,
        value=with_status(memory.value, "deleted"),
        metadata={"status_before": memory.status},
    )
    yield from change_flow(d, [change], at=d.now(), max_chars=core.settings.max_content_chars)
    return (yield from scoped_memory_flow(d, scope_label, memory_id))


def hard_delete_flow(core: StoreCore, scope_label: str, memory_id: str) -> Flow[None]:
    """Remove the row, its terms, vectors and versions, and erase its events' content
    (content-free tombstones keep their sequence numbers, see ``store/erasure.py``).

    Episodes consolidated into the removed memory (a summary) lose that link in the same
    transaction, each with an event, so a later consolidation takes them again instead of
    skipping them for a summary that no longer exists; the delete's event lists them
    (``unlinked_episode_ids``).
    """
    yield Transaction(_hard_delete(core, scope_label, memory_id))


def _hard_delete(core: StoreCore, scope_label: str, memory_id: str) -> Flow[None]:
    d = core.dialect
    memory = yield from scoped_memory_flow(d, scope_label, memory_id, lock=True)
    episodes = yield from memories_flow(
        d, "i.scope = ? AND i.consolidated_into_id = ?", [scope_label, memory.id], lock=True
    )
    if episodes:
        changes = [
            Change(
                e.id,
                UPDATED,
                value={k: v for k, v in e.value.items() if k != "consolidated_into_id"},
                columns={"consolidated_into_id": None},
                metadata={"unlinked_from": memory.id, "reason": "summary deleted"},
            )
            for e in episodes
        ]
        yield from change_flow(d, changes, at=d.now(), max_chars=core.settings.max_content_chars)
    metadata: dict[str, Any] = {"hard": True, "status_before": memory.status}
    if episodes:
        metadata["unlinked_episode_ids"] = [e.id for e in episodes]
    note = WriteNote(DELETED, metadata)
    yield from core.batch_flow([PutOp(memory.namespace, memory.key, None)], notes={memory.id: note})
    # Erasure: the memory's events (the delete's too) keep their place, not its content.
    yield from tombstone_memory_events_flow(d, memory.id)


def compress_flow(
    core: StoreCore,
    *,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    targets: Sequence[Memory],
    vectors: dict[str, list[float]],
    reason: str,
) -> Flow[Memory]:
    """Store a summary of ``targets`` and mark them ``compressed`` (linked to it)."""
    memory: Memory = yield Transaction(
        _compress(core, namespace, key, value, targets, vectors, reason)
    )
    ids = [m.id for m in targets]
    if not core.index.in_database:
        yield from core.index.delete_flow(ids)  # after the commit, as for a delete
    return memory


def _compress(
    core: StoreCore,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    targets: Sequence[Memory],
    vectors: dict[str, list[float]],
    reason: str,
) -> Flow[Memory]:
    from langmem_tiers.long_term.engine.versions import (
        insert_version_flow,
    )  # it builds on this module

    d = core.dialect
    ids = [m.id for m in targets]
    in_ids, params = d.in_list("id", ids)
    rows = yield Sql(
        f"SELECT id, status, version FROM {ITEMS} WHERE {in_ids} ORDER BY id{d.for_update}",
        params,
    )
    now_state = {r[0]: (r[1], int(r[2])) for r in rows}
    for m in targets:
        if now_state.get(m.id) != (m.status, m.version):
            raise StaleDecisionError(
                f"memory {m.id} changed during compression; nothing was compressed."
            )
    at = d.now()
    summary_id = item_id(namespace, key)
    note = WriteNote(CREATED, {"action": "compressed", "source_memory_ids": ids})
    yield from core.batch_flow(
        [PutOp(namespace, key, value)], notes={summary_id: note}, vectors=vectors, now=at
    )
    snap = (yield from snapshot_flow(d, [summary_id]))[summary_id]
    yield from insert_version_flow(core, snap, reason, at)
    changes = [
        Change(
            m.id,
            COMPRESSED,
            value=with_status(m.value, "compressed", compressed_into=summary_id),
            metadata={"compressed_into": summary_id, "status_before": m.status},
        )
        for m in targets
    ]
    yield from change_flow(d, changes, at=at, max_chars=core.settings.max_content_chars)
    # Their rows stay (content, links, history); only the search index gives up the space.
    yield from unindex_flow(core.index, ids)
    return memory_from_snapshot(snap)
