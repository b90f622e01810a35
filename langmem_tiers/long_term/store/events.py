"""The event log: every change of a memory, written in the same transaction as the change.

An event has a sequence number, a time, a type, the memory's scope, kind, id, namespace
and key, the memory's snapshot before and after, metadata, a correlation id and an
actor. Snapshots hold every column a memory has, so replaying events alone rebuilds
memory as it was at any instant (see :func:`replay_snapshots`).

Who and why come from the caller's context:

    >>> with event_context(actor="consolidator", correlation_id="run-42"):
    ...     current_event_context()
    EventContext(actor='consolidator', correlation_id='run-42')
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NamedTuple

from langmem_tiers.sql.dialect import EVENTS, ITEMS, Dialect, compact_json
from langmem_tiers.sql.flow import Flow, InsertRows, Sql

__all__ = [
    "DEFAULT_ACTOR",
    "SNAPSHOT_COLUMNS",
    "EventContext",
    "EventRow",
    "created_events_request",
    "current_event_context",
    "event_context",
    "replay_snapshots",
    "snapshot_flow",
    "snapshot_request",
    "snapshots",
    "write_events_flow",
]

# Columns of a memory kept in an event's snapshot, in this order.
SNAPSHOT_COLUMNS: tuple[str, ...] = (
    "id",
    "prefix",
    "key",
    "scope",
    "kind",
    "value",
    "status",
    "confidence",
    "importance",
    "version",
    "valid_from",
    "valid_until",
    "event_at",
    "session_id",
    "actor",
    "action_type",
    "subject",
    "category",
    "proc_key",
    "reinforcement_count",
    "last_used_at",
    "consolidated_into_id",
    "created_at",
    "updated_at",
)

DEFAULT_ACTOR = "system"
"""The actor of an event when the caller's context names none (the seed's engine's default)."""

_EVENT_COLUMNS = (
    "at, type, scope, kind, memory_id, prefix, key, before, after, metadata, correlation_id, actor"
)


class EventContext(NamedTuple):
    """Who made a change, and which larger operation it belongs to."""

    actor: str | None
    correlation_id: str | None


_NO_CONTEXT = EventContext(None, None)
_CONTEXT: contextvars.ContextVar[EventContext] = contextvars.ContextVar(
    "langmem_tiers_event_context", default=_NO_CONTEXT
)


@contextmanager
def event_context(
    *, actor: str | None = None, correlation_id: str | None = None
) -> Iterator[EventContext]:
    """Stamp the events of changes made inside the block with an actor and a correlation id.

    ``correlation_id=None`` inside a block that has none makes a new one.
    """
    outer = _CONTEXT.get()
    ctx = EventContext(
        actor if actor is not None else outer.actor,
        correlation_id or outer.correlation_id or uuid.uuid4().hex,
    )
    token = _CONTEXT.set(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.reset(token)


def current_event_context() -> EventContext:
    """The actor and correlation id of the current context."""
    return _CONTEXT.get()


class EventRow(NamedTuple):
    """One event to write."""

    type: str
    scope: str
    kind: str | None
    memory_id: str
    prefix: str
    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    metadata: dict[str, Any]


_VALUE_COLUMN = SNAPSHOT_COLUMNS.index("value")
_TIME_COLUMNS = tuple(
    i for i, name in enumerate(SNAPSHOT_COLUMNS) if name.endswith(("_at", "_from", "_until"))
)


def snapshot(
    dialect: Dialect, row: Sequence[Any], times: dict[Any, Any] | None = None
) -> dict[str, Any]:
    """A JSON-safe dict of a memory row selected as ``SNAPSHOT_COLUMNS``.

    ``times`` memoises timestamp conversions across the rows of one read: the rows of a
    batch share a few timestamps (its ``now`` above all).
    """
    values = list(row)
    values[_VALUE_COLUMN] = dialect.json_value(values[_VALUE_COLUMN])
    if times is None:
        times = {}
    for i in _TIME_COLUMNS:
        raw = values[i]
        if raw is None:
            continue
        # Equal datetimes in different zones spell differently: the zone is in the key.
        key = raw if type(raw) is str else (raw, getattr(raw, "tzinfo", None))
        shown = times.get(key)
        if shown is None:
            parsed = dialect.ts_value(raw)
            shown = times[key] = parsed.isoformat() if isinstance(parsed, datetime) else raw
        values[i] = shown
    return dict(zip(SNAPSHOT_COLUMNS, values, strict=True))


def snapshot_flow(dialect: Dialect, ids: Sequence[str]) -> Flow[dict[str, dict[str, Any]]]:
    """Current snapshots of the memories with these ids (missing ids are left out)."""
    if not ids:
        return {}
    return snapshots(dialect, (yield snapshot_request(dialect, ids)))


def snapshot_request(dialect: Dialect, ids: Sequence[str]) -> Sql:
    """The statement :func:`snapshot_flow` reads (``ids`` not empty); :func:`snapshots`
    turns its rows into the snapshots."""
    in_ids, params = dialect.in_list("id", ids)
    return Sql(f"SELECT {', '.join(SNAPSHOT_COLUMNS)} FROM {ITEMS} WHERE {in_ids}", params)


def snapshots(dialect: Dialect, rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """The snapshots of the rows of :func:`snapshot_request`, by memory id."""
    times: dict[Any, Any] = {}
    return {row[0]: snapshot(dialect, row, times) for row in rows}


def _who() -> tuple[str | None, str]:
    """The correlation id and the actor events written now are stamped with."""
    ctx = current_event_context()
    return ctx.correlation_id, ctx.actor if ctx.actor is not None else DEFAULT_ACTOR


def write_events_flow(dialect: Dialect, events: Iterable[EventRow], at: datetime) -> Flow[None]:
    """Append events (inside the caller's transaction)."""
    stamp = dialect.ts_param(at)
    correlation_id, actor = _who()
    rows = [
        (
            stamp,
            e.type,
            e.scope,
            e.kind,
            e.memory_id,
            e.prefix,
            e.key,
            None if e.before is None else dialect.json_param(e.before),
            None if e.after is None else dialect.json_param(e.after),
            dialect.json_param(e.metadata),
            correlation_id,
            actor,
        )
        for e in events
    ]
    if rows:
        # A plain insert (the sequence numbers come from the table): COPY on PostgreSQL.
        yield InsertRows(EVENTS, _EVENT_COLUMNS.split(", "), rows)


_FLOAT_COLUMNS = ("confidence", "importance")


def created_events_request(
    dialect: Dialect, created: Sequence[tuple[str, str, dict[str, Any]]], at: datetime
) -> Sql:
    """The statement appending the creation events ``(memory id, event type, metadata)``
    of items just written, in that order, their snapshots built by the database from the
    rows: reading the rows back and encoding their snapshots in Python is most of what a
    batch of new memories costs beyond its own rows."""
    statement = dialect.created_events_sql(
        SNAPSHOT_COLUMNS,
        times=[SNAPSHOT_COLUMNS[i] for i in _TIME_COLUMNS],
        floats=_FLOAT_COLUMNS,
    )
    ids = dialect.array_param([memory_id for memory_id, _, _ in created])
    return Sql(
        statement,
        [
            dialect.ts_param(at),
            *_who(),
            ids,
            dialect.array_param([event_type for _, event_type, _ in created]),
            # Most creations carry no metadata: its text needs no encoder.
            dialect.array_param(
                [compact_json(metadata) if metadata else "{}" for _, _, metadata in created]
            ),
            ids,
        ],
    )


def replay_snapshots(
    events: Iterable[tuple[str, Mapping[str, Any] | None, str]],
) -> dict[str, dict[str, Any]]:
    """Memories by id after applying ``(memory_id, after, type)`` events in order.

    An event whose ``after`` is None removed the memory (a hard delete).
    """
    state: dict[str, dict[str, Any]] = {}
    for memory_id, after, _type in events:
        if after is None:
            state.pop(memory_id, None)
        else:
            state[memory_id] = dict(after)
    return state
