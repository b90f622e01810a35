"""Versions of semantic memories, kept in ``lmt_versions``.

A semantic memory is versioned in place: its id stays, its ``version`` column counts
up, and each version has a row with its content, value and confidence, why it came to
be, and when it was the memory's current version (``valid_from`` to ``valid_until``;
the fact's own validity is in the value). Rows go with the memory on a hard delete.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langmem_tiers.long_term.engine.lifecycle import scoped_memory_flow
from langmem_tiers.long_term.engine.models import MemoryVersion, memory_from_snapshot
from langmem_tiers.long_term.store.core import StoreCore
from langmem_tiers.long_term.store.events import snapshot_flow
from langmem_tiers.long_term.store.records import memory_text
from langmem_tiers.sql.dialect import VERSIONS
from langmem_tiers.sql.flow import Flow, Sql, SqlMany

__all__ = [
    "close_versions_flow",
    "insert_version_flow",
    "insert_versions_flow",
    "versions_flow",
]

_VERSION_COLUMNS = (
    "memory_id, version, content, confidence, valid_from, valid_until, reason, value, created_at"
)


def insert_version_flow(
    core: StoreCore, snap: dict[str, Any], reason: str, at: datetime
) -> Flow[None]:
    """Record ``snap`` (a memory's snapshot) as its current version, from ``at``."""
    yield from insert_versions_flow(core, [snap], reason, at)


def insert_versions_flow(
    core: StoreCore, snaps: Sequence[dict[str, Any]], reason: str, at: datetime
) -> Flow[None]:
    """:func:`insert_version_flow` of several memories, in one :class:`SqlMany`."""
    if not snaps:
        return
    d = core.dialect
    stamp = d.ts_param(at)
    yield SqlMany(
        f"INSERT INTO {VERSIONS} (memory_id, version, scope, content, value, confidence,"
        " valid_from, valid_until, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                snap["id"],
                int(snap["version"]),
                snap["scope"],
                memory_text(snap["value"]),
                d.json_param(snap["value"]),
                float(snap["confidence"]),
                stamp,
                None,
                reason,
                stamp,
            ]
            for snap in snaps
        ],
    )


def close_versions_flow(core: StoreCore, ids: Sequence[str], at: datetime) -> Flow[None]:
    """The current version of each memory stops being current at ``at``."""
    if not ids:
        return
    d = core.dialect
    for memory_id in ids:
        rows = yield Sql(f"SELECT count(*) FROM {VERSIONS} WHERE memory_id = ?", [memory_id])
        if not rows[0][0]:
            # Written before it had versions (by the store, not the engine): record the
            # version it has now, so the history starts where the memory did.
            before = yield from snapshot_flow(d, [memory_id])
            snap = before[memory_id]
            created = memory_from_snapshot(snap).created_at
            yield from insert_version_flow(core, snap, "first recorded version", created)
    in_ids, params = d.in_list("memory_id", ids)
    yield Sql(
        f"UPDATE {VERSIONS} SET valid_until = ? WHERE {in_ids} AND valid_until IS NULL",
        [d.ts_param(at), *params],
    )


def versions_flow(core: StoreCore, scope_label: str, memory_id: str) -> Flow[list[MemoryVersion]]:
    """Every version of a memory of the scope, oldest first (NotFoundError otherwise)."""
    d = core.dialect
    memory = yield from scoped_memory_flow(d, scope_label, memory_id)
    rows = yield Sql(
        f"SELECT {_VERSION_COLUMNS} FROM {VERSIONS} WHERE memory_id = ? AND scope = ?"
        " ORDER BY version",
        [memory_id, scope_label],
    )
    versions = [
        MemoryVersion(
            memory_id=r[0],
            version=int(r[1]),
            content=r[2],
            confidence=float(r[3]),
            valid_from=d.ts_value(r[4]),
            valid_until=d.ts_value(r[5]),
            reason=r[6],
            value=d.json_value(r[7]),
            created_at=d.ts_value(r[8]),  # type: ignore[arg-type]
        )
        for r in rows
    ]
    if not versions or versions[-1].version != memory.version:
        # Not written through the engine (or changed by the store since): the memory as
        # it is now is its latest version.
        versions.append(
            MemoryVersion(
                memory_id=memory.id,
                version=memory.version,
                content=memory.content,
                confidence=memory.confidence,
                valid_from=memory.updated_at,
                valid_until=None,
                reason=None,
                value=memory.value,
                created_at=memory.updated_at,
            )
        )
    return versions
