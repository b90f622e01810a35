"""Records of the memory engine: memories, versions, events and the results of operations.

Every record is a frozen slotted dataclass with ``to_dict()`` (JSON-safe: times become
ISO-8601 strings), so the HTTP API and the command line can return it as is.

A :class:`Memory` is read from one row of the store (or rebuilt from an event's
snapshot by replay); ``value`` is the dict stored in the store, the other fields are
its columns.

Example:
    >>> from datetime import datetime, timezone
    >>> snap = {"id": "m1", "prefix": "alice.semantic", "key": "k1", "scope": "alice",
    ...         "kind": "semantic", "value": {"content": "Alice lives in Oslo"},
    ...         "status": "active", "created_at": "2026-01-02T10:00:00+00:00"}
    >>> memory = memory_from_snapshot(snap)
    >>> memory.scope, memory.content, memory.created_at.year
    ('alice', 'Alice lives in Oslo', 2026)
    >>> memory.to_dict()["created_at"]
    '2026-01-02T10:00:00+00:00'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from langmem_tiers.long_term.store.events import SNAPSHOT_COLUMNS, snapshot
from langmem_tiers.long_term.store.records import memory_text, parse_timestamp, split_namespace
from langmem_tiers.long_term.store.scope import decode_label
from langmem_tiers.sql.dialect import ACCESS_COUNT_SQL, LAST_ACCESSED_SQL, Dialect

__all__ = [
    "EVENT_TYPES",
    "MEMORY_COLUMNS",
    "SUMMARY_CATEGORIES",
    "CompressionResult",
    "Conflict",
    "ConsolidationResult",
    "DecayResult",
    "Event",
    "Memory",
    "MemoryVersion",
    "ScopeCount",
    "ScoredMemory",
    "WriteAction",
    "WriteResult",
    "memory_from_row",
    "memory_from_snapshot",
    "scope_id",
]

# -- event types -------------------------------------------------------------------------
CREATED = "memory.created"
UPDATED = "memory.updated"
DELETED = "memory.deleted"
SUPERSEDED = "memory.superseded"
MERGED = "memory.merged"
CONFLICT_NOTED = "memory.conflict_noted"
FORGOTTEN = "memory.forgotten"
DECAYED = "memory.decayed"
IMPORTANCE_DECAYED = "memory.importance_decayed"
CONSOLIDATED = "memory.consolidated"
COMPRESSED = "memory.compressed"
REINFORCED = "memory.reinforced"
ERASED = "memory.erased"

EVENT_TYPES: tuple[str, ...] = (
    CREATED,
    UPDATED,
    DELETED,
    SUPERSEDED,
    MERGED,
    CONFLICT_NOTED,
    FORGOTTEN,
    DECAYED,
    IMPORTANCE_DECAYED,
    CONSOLIDATED,
    COMPRESSED,
    REINFORCED,
    ERASED,
)
"""Every event type the store and the engine write (``memory.deleted`` is a hard delete;
``memory.erased`` is the content-free tombstone an erasure leaves of any event)."""

SUMMARY_CATEGORIES = frozenset({"conversation_summary", "episode_summary", "compressed_summary"})
"""Categories of summaries: records of what was said, never rejected, merged or superseded."""

# What is read for a Memory (expressions on alias ``i``): the snapshot columns, then the
# usage statistics.
MEMORY_COLUMNS: tuple[str, ...] = (
    *(f"i.{c}" for c in SNAPSHOT_COLUMNS),
    ACCESS_COUNT_SQL,
    LAST_ACCESSED_SQL,
)

WriteAction = Literal[
    "created",
    "duplicate",
    "superseded",
    "kept_both",
    "rejected",
    "merged",
    "updated",
    "reinforced",
]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _json_safe(value: Any) -> Any:
    # The exact types first: values are JSON already, mostly strings and numbers.
    if type(value) in _SCALARS:
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


class _Record:
    """``to_dict()`` for the dataclasses below."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-safe dict (times as ISO-8601 strings)."""
        return {name: _dump(getattr(self, name)) for name in _field_names(type(self))}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(record: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(record)
    if names is None:
        names = _FIELD_NAMES[record] = tuple(f.name for f in dataclasses.fields(record))
    return names


def _dump(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, _Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    return _json_safe(value)


def scope_id(scope_column: str) -> str:
    """The scope id (as the caller gave it) of a ``scope`` column value."""
    return decode_label(scope_column)


@dataclass(frozen=True, slots=True)
class Memory(_Record):
    """One memory of a scope: episodic, semantic or procedural.

    ``importance`` is the current (decayed) importance; the value's own ``importance``
    (default 1) is where decay starts from. Kind fields are ``None`` for other kinds.
    """

    id: str
    scope: str
    kind: str
    key: str
    namespace: tuple[str, ...]
    content: str
    value: dict[str, Any]
    status: str
    confidence: float
    importance: float
    version: int
    valid_from: datetime | None
    valid_until: datetime | None
    created_at: datetime
    updated_at: datetime
    access_count: int
    last_accessed_at: datetime | None
    session_id: str | None
    event_timestamp: datetime | None
    actor: str | None
    action_type: str | None
    subject: str | None
    category: str | None
    proc_key: str | None
    reinforcement_count: int
    last_used_at: datetime | None
    consolidated_into_id: str | None

    def state(self) -> dict[str, Any]:
        """What replay rebuilds: everything but the usage statistics (access counts)."""
        out = self.to_dict()
        out.pop("access_count")
        out.pop("last_accessed_at")
        return out


@dataclass(frozen=True, slots=True)
class ScoredMemory(Memory):
    """A retrieved memory with its hybrid score and the score's components.

    ``scores`` maps ``semantic``, ``recency``, ``frequency`` and ``confidence`` to [0, 1].
    """

    score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Conflict(_Record):
    """An existing memory near a new one, and what the contradiction check said."""

    memory: Memory
    similarity: float
    conflict: bool
    confidence: float
    explanation: str


@dataclass(frozen=True, slots=True)
class WriteResult(_Record):
    """What :meth:`MemoryEngine.add_semantic` did.

    ``action`` is ``created``, ``duplicate`` (an existing memory was returned, nothing
    stored), ``superseded`` (the new memory replaced contradicting ones), ``kept_both``,
    ``rejected`` (nothing stored; ``memory`` is the existing one, ``reason`` says why) or
    ``merged`` (``memory`` is the existing memory's new version). Writes by key
    (:meth:`MemoryEngine.write`) also answer ``updated`` (a new version of the memory
    at that key) and ``reinforced`` (a procedural memory said again). ``conflicts`` lists
    every near memory that was checked; ``changed`` the other memories the write changed.
    """

    action: WriteAction
    memory: Memory
    conflicts: list[Conflict] = field(default_factory=list)
    reason: str | None = None
    changed: list[Memory] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class MemoryVersion(_Record):
    """One version of a semantic memory: its content and value then, and why it changed.

    ``valid_from``/``valid_until`` say when this version was the memory's current one.
    """

    memory_id: str
    version: int
    content: str
    confidence: float
    valid_from: datetime | None
    valid_until: datetime | None
    reason: str | None
    value: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ConsolidationResult(_Record):
    """What one consolidation of a scope did: episodes summarised, memories written."""

    scope: str
    groups: int
    episodes: int
    memories: list[Memory] = field(default_factory=list)
    skipped: int = 0
    """Groups a concurrent run had consolidated already."""


@dataclass(frozen=True, slots=True)
class DecayResult(_Record):
    """What one decay pass over a scope did."""

    scope: str
    now: datetime
    examined: int
    updated: int
    decayed: list[str] = field(default_factory=list)
    """Ids of memories that went from ``active`` (or ``superseded``) to ``decayed``."""


@dataclass(frozen=True, slots=True)
class CompressionResult(_Record):
    """What one compression did: the summary written and the memories it replaced."""

    scope: str
    summary: Memory | None
    compressed: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Event(_Record):
    """One entry of the event log."""

    seq: int
    at: datetime
    type: str
    scope: str
    kind: str | None
    memory_id: str
    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    metadata: dict[str, Any]
    correlation_id: str | None
    actor: str | None


@dataclass(frozen=True, slots=True)
class ScopeCount(_Record):
    """A scope (agent or user) with its memories counted by kind (every status)."""

    scope: str
    episodic: int
    semantic: int
    procedural: int
    active: int
    total: int


def _time(raw: Any, name: str) -> datetime | None:
    if raw is None:
        return None
    # UTC whatever the session's time zone, so a memory read now equals its replay.
    return parse_timestamp(raw, field=name).astimezone(timezone.utc)


def _number(snap: Mapping[str, Any], name: str, default: float = 1.0) -> float:
    raw = snap.get(name)
    return default if raw is None else float(raw)


def memory_from_snapshot(
    snap: Mapping[str, Any], *, access_count: int = 0, last_accessed_at: Any = None
) -> Memory:
    """A Memory from a snapshot dict (``SNAPSHOT_COLUMNS``, as events keep them)."""
    value = dict(snap.get("value") or {})
    created = _time(snap.get("created_at"), "created_at")
    assert created is not None
    updated = _time(snap.get("updated_at"), "updated_at") or created
    return Memory(
        id=snap["id"],
        scope=scope_id(snap["scope"]),
        kind=snap["kind"],
        key=snap["key"],
        namespace=split_namespace(snap["prefix"]),
        content=memory_text(value),
        value=value,
        status=snap.get("status") or "active",
        confidence=_number(snap, "confidence"),
        importance=_number(snap, "importance"),
        version=int(snap.get("version") or 1),
        valid_from=_time(snap.get("valid_from"), "valid_from"),
        valid_until=_time(snap.get("valid_until"), "valid_until"),
        created_at=created,
        updated_at=updated,
        access_count=int(access_count or 0),
        last_accessed_at=_time(last_accessed_at, "last_accessed_at"),
        session_id=snap.get("session_id"),
        event_timestamp=_time(snap.get("event_at"), "event_at"),
        actor=snap.get("actor"),
        action_type=snap.get("action_type"),
        subject=snap.get("subject"),
        category=snap.get("category"),
        proc_key=snap.get("proc_key"),
        reinforcement_count=int(snap.get("reinforcement_count") or 0),
        last_used_at=_time(snap.get("last_used_at"), "last_used_at"),
        consolidated_into_id=snap.get("consolidated_into_id"),
    )


def memory_from_row(dialect: Dialect, row: Sequence[Any]) -> Memory:
    """A Memory from a row selected as ``MEMORY_COLUMNS``."""
    n = len(SNAPSHOT_COLUMNS)
    snap = snapshot(dialect, row[:n])
    return memory_from_snapshot(
        snap, access_count=row[n], last_accessed_at=dialect.ts_value(row[n + 1])
    )


def scored(memory: Memory, score: float, scores: Mapping[str, float]) -> ScoredMemory:
    """``memory`` with a score."""
    fields = {f.name: getattr(memory, f.name) for f in dataclasses.fields(Memory)}
    return ScoredMemory(**fields, score=float(score), scores=dict(scores))
