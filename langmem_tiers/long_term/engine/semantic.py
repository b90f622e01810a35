"""Semantic memories: near memories, writes per conflict resolution, versions.

A semantic memory is versioned in place: its id stays, ``version`` counts up, and
``lmt_versions`` keeps one row per version (content, value, confidence, why it changed,
and when it was the current version). :func:`write_semantic_flow` carries out a
:class:`~langmem_tiers.long_term.engine.conflicts.Resolution` in one transaction, after
checking that the memories it was decided on have not changed meanwhile
(:class:`~langmem_tiers.long_term.engine.lifecycle.StaleDecisionError` otherwise, and the engine decides again).

Links written (both ways):

* supersede: the new memory's ``supersedes`` lists the old ids; each old memory gets
  ``status = "superseded"``, ``superseded_by`` and ``valid_until`` (the new one's
  ``valid_from``);
* keep both: ``conflicts_with`` on each side (``id``, ``confidence``, ``explanation``);
* merge: the target's new version has ``merged_from`` (what was merged in, and when).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import PutOp

from langmem_tiers.errors import NotFoundError, ValidationError
from langmem_tiers.long_term.engine.conflicts import NearMemory, Resolution
from langmem_tiers.long_term.engine.lifecycle import (
    Change,
    StaleDecisionError,
    change_flow,
    memories_flow,
    scoped_memory_flow,
    with_status,
)
from langmem_tiers.long_term.engine.models import (
    CONFLICT_NOTED,
    CREATED,
    MERGED,
    SUMMARY_CATEGORIES,
    SUPERSEDED,
    UPDATED,
    Conflict,
    Memory,
    WriteResult,
)
from langmem_tiers.long_term.engine.relations import refreshed_value
from langmem_tiers.long_term.engine.versions import close_versions_flow, insert_version_flow
from langmem_tiers.long_term.store.core import StoreCore, WriteNote
from langmem_tiers.long_term.store.events import snapshot_flow
from langmem_tiers.long_term.store.records import (
    item_id,
    join_namespace,
    texts_to_index,
    validate_value,
)
from langmem_tiers.sql.dialect import ITEMS
from langmem_tiers.sql.flow import Flow, Sql, Transaction
from langmem_tiers.tiers.slots import read_claims, related

__all__ = [
    "NearCheck",
    "index_texts",
    "lock_names_flow",
    "near_flow",
    "revise_flow",
    "slot_related_flow",
    "update_semantic_flow",
    "write_semantic_flow",
]


def index_texts(
    core: StoreCore, namespace: tuple[str, ...], key: str, value: dict[str, Any]
) -> list[str]:
    """The texts the store will embed for this value (validated: bad input raises here)."""
    record = validate_value(namespace, key, value, max_chars=core.settings.max_content_chars)
    return [text for _, text in texts_to_index(record, core.fields)]


class NearCheck(NamedTuple):
    """What a decision saw: the near memories of a new fact, and how they were found.

    Inside the write's transaction, under the fact's subject lock, they are looked up
    again; a near memory the decision did not see makes it stale (written meanwhile by a
    concurrent writer, so the engine decides again and sees it).
    """

    vector: Sequence[float]
    subject: str | None
    k: int
    threshold: float
    seen: Collection[str]


def lock_names_flow(core: StoreCore, names: Sequence[str], *, shared: bool = False) -> Flow[None]:
    """Transaction locks on ``names`` where writers run concurrently (none on SQLite)."""
    statement = core.dialect.lock_keys_sql(shared=shared)
    if statement is not None and names:
        yield Sql(statement, [sorted(set(names))])


def lock_subject_flow(core: StoreCore, scope_label: str, subject: str | None) -> Flow[None]:
    """Serialise the facts of one (scope, subject); a fact without subject, the whole scope.

    A fact without subject is compared with every subject, so it takes the scope's lock
    exclusively; a fact with one takes it shared (facts of other subjects go on) and its
    subject's lock exclusively. The scope's lock is always taken first: no deadlock.
    """
    scope_name = json.dumps(["semantic", scope_label], ensure_ascii=False)
    yield from lock_names_flow(core, [scope_name], shared=subject is not None)
    if subject is not None:
        name = json.dumps(["semantic", scope_label, subject], ensure_ascii=False)
        yield from lock_names_flow(core, [name])


def near_flow(
    core: StoreCore,
    scope_label: str,
    vector: Sequence[float],
    *,
    subject: str | None,
    k: int,
    threshold: float,
) -> Flow[list[NearMemory]]:
    """Active semantic memories of the scope at least ``threshold`` similar, nearest first.

    With a subject, memories of another subject are left out (those without one stay).
    Summaries are records of what was said, not claims to check, and are left out too.
    """
    categories = sorted(SUMMARY_CATEGORIES)
    where = (
        "i.scope = ? AND i.kind = 'semantic' AND i.status = 'active'"
        f" AND (i.category IS NULL OR i.category NOT IN ({', '.join('?' for _ in categories)}))"
    )
    params: list[Any] = [scope_label, *categories]
    if subject is not None:
        where += " AND (i.subject = ? OR i.subject IS NULL)"
        params.append(subject)
    hits = yield from core.nearest_flow(
        vector, where, params, k, prefix=join_namespace((scope_label, "semantic"))
    )
    near = {i: s for i, s in hits.items() if s >= threshold}
    if not near:
        return []
    in_ids, params = core.dialect.in_list("i.id", list(near))
    found = yield from memories_flow(
        core.dialect,
        f"{in_ids} AND {core.dialect.not_indexed('i.scope')} = ?",
        [*params, scope_label],
    )
    return sorted(
        (NearMemory(m, near[m.id]) for m in found), key=lambda n: (-n.similarity, n.memory.id)
    )


SLOT_CANDIDATES = 200
"""How many of a scope's latest active semantic memories the relation slots look through."""


def slot_related_flow(
    core: StoreCore,
    scope_label: str,
    text: str,
    *,
    subject: str | None,
    seen: Collection[str],
    limit: int = SLOT_CANDIDATES,
) -> Flow[list[NearMemory]]:
    """Active semantic memories the relation slots tie to ``text`` that ``seen`` lacks.

    Embeddings miss that "The user moved to Munich." ends "The user lives in Berlin."
    (few shared words); the slots (:mod:`~langmem_tiers.tiers.slots`) do not.
    The scope's ``limit`` latest active memories (an index range, newest first) are read
    and those whose slot the new statement fills, or whose value it ends, are returned,
    with similarity 0 (they were not found by their vector; they are never duplicates).
    """
    new = read_claims(text)
    if not new.slots and not new.ended and not new.now:
        return []
    categories = sorted(SUMMARY_CATEGORIES)
    where = (
        "i.prefix = ? AND i.scope = ? AND i.kind = 'semantic' AND i.status = 'active'"
        f" AND (i.category IS NULL OR i.category NOT IN ({', '.join('?' for _ in categories)}))"
    )
    params: list[Any] = [join_namespace((scope_label, "semantic")), scope_label, *categories]
    if subject is not None:
        where += " AND (i.subject = ? OR i.subject IS NULL)"
        params.append(subject)
    latest = yield from memories_flow(
        core.dialect, where, params, order=f"i.updated_at DESC, i.id LIMIT {int(limit)}"
    )
    return [
        NearMemory(m, 0.0)
        for m in latest
        if m.id not in seen and related(new, read_claims(m.content))
    ]


# -- writes --------------------------------------------------------------------------------
def _check_unchanged_flow(core: StoreCore, memories: Sequence[Memory]) -> Flow[None]:
    if not memories:
        return
    ids = sorted({m.id for m in memories})
    in_ids, params = core.dialect.in_list("id", ids)
    rows = yield Sql(
        f"SELECT id, status, version FROM {ITEMS} WHERE {in_ids}"
        f" ORDER BY id{core.dialect.for_update}",  # locked in id order: no deadlock
        params,
    )
    now = {r[0]: (r[1], int(r[2])) for r in rows}
    for m in memories:
        if now.get(m.id) != ("active", m.version):
            raise StaleDecisionError(
                f"memory {m.id} changed while a new memory was checked against it; "
                "the write was retried and it kept changing. Try again."
            )


def _check_sources_flow(core: StoreCore, scope_label: str, ids: Sequence[str]) -> Flow[None]:
    if not ids:
        return
    in_ids, params = core.dialect.in_list("id", ids)
    rows = yield Sql(
        f"SELECT id FROM {ITEMS} WHERE {in_ids} AND scope = ? AND kind = 'episodic'",
        [*params, scope_label],
    )
    missing = sorted(set(ids) - {r[0] for r in rows})
    if missing:
        raise NotFoundError(
            f"source_episodic_ids {missing} are not episodic memories of this scope; "
            "pass ids returned by add_episodic for the same scope."
        )


def _link(conflict: Conflict) -> dict[str, Any]:
    return {
        "id": conflict.memory.id,
        "confidence": conflict.confidence,
        "explanation": conflict.explanation,
    }


def _summary(conflicts: Sequence[Conflict]) -> list[dict[str, Any]]:
    return [
        {**_link(c), "similarity": round(c.similarity, 6), "conflict": c.conflict}
        for c in conflicts
    ]


def _read_flow(core: StoreCore, ids: Sequence[str]) -> Flow[list[Memory]]:
    if not ids:
        return []
    in_ids, params = core.dialect.in_list("i.id", ids)
    found = yield from memories_flow(core.dialect, in_ids, params)
    order = {i: n for n, i in enumerate(ids)}
    return sorted(found, key=lambda m: order[m.id])


def write_semantic_flow(
    core: StoreCore,
    *,
    scope_label: str,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    resolution: Resolution,
    merged_text: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
    check: NearCheck | None = None,
    ttl: float | None = None,
) -> Flow[WriteResult]:
    """Carry out a resolution in one transaction (StaleDecisionError when its basis changed).

    With ``check``, the transaction first locks the fact's subject and looks for near
    memories the decision did not see (two first facts about one subject would otherwise
    both be written, each unaware of the other). ``ttl``: minutes the new memory lives.
    """
    result: WriteResult = yield Transaction(
        _write_semantic(
            core,
            scope_label,
            namespace,
            key,
            value,
            resolution,
            merged_text,
            vectors,
            at,
            check,
            ttl,
        )
    )
    return result


def _recheck_flow(core: StoreCore, scope_label: str, check: NearCheck) -> Flow[None]:
    yield from lock_subject_flow(core, scope_label, check.subject)
    fresh = yield from near_flow(
        core,
        scope_label,
        check.vector,
        subject=check.subject,
        k=check.k,
        threshold=check.threshold,
    )
    unseen = sorted(n.memory.id for n in fresh if n.memory.id not in check.seen)
    if unseen:
        raise StaleDecisionError(
            f"memories {unseen} near this one were written while it was checked; "
            "the write was retried and they kept appearing. Try again."
        )


def _write_semantic(
    core: StoreCore,
    scope_label: str,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    resolution: Resolution,
    merged_text: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
    check: NearCheck | None,
    ttl: float | None,
) -> Flow[WriteResult]:
    d, max_chars = core.dialect, core.settings.max_content_chars
    if check is not None:
        yield from _recheck_flow(core, scope_label, check)
    action, contradicted = resolution.action, resolution.contradicted
    basis = [c.memory for c in contradicted]
    if resolution.existing is not None:
        basis.append(resolution.existing)
    yield from _check_unchanged_flow(core, basis)
    yield from _check_sources_flow(core, scope_label, value.get("source_episodic_ids") or [])
    if action in ("duplicate", "rejected"):
        assert resolution.existing is not None
        return WriteResult(action, resolution.existing, resolution.conflicts, resolution.reason)
    metadata = {"action": action, "conflicts": _summary(resolution.conflicts)}
    stamp = at.isoformat()
    others = contradicted
    if action == "merged":
        assert merged_text is not None
        new_id, reason = yield from _merge_flow(
            core, resolution, value, merged_text, vectors, at, metadata
        )
        others = contradicted[1:]
    else:
        new_id = item_id(namespace, key)
        fresh = dict(value)
        if action == "superseded":
            fresh["supersedes"] = [c.memory.id for c in contradicted]
            fresh.setdefault("valid_from", stamp)
        elif action == "kept_both":
            fresh["conflicts_with"] = [_link(c) for c in contradicted]
        yield from core.batch_flow(
            [PutOp(namespace, key, fresh, ttl=ttl)],
            notes={new_id: WriteNote(CREATED, metadata)},
            vectors=vectors,
            now=at,
        )
        reason = "created"
    snap = (yield from snapshot_flow(d, [new_id]))[new_id]
    yield from insert_version_flow(core, snap, reason, at)
    changes = _contradicted_changes(action, others, new_id, stamp)
    yield from change_flow(d, changes, at=at, max_chars=max_chars)
    if action != "kept_both":
        yield from close_versions_flow(core, [c.memory.id for c in others], at)
    memory, *changed = yield from _read_flow(core, [new_id, *(c.memory.id for c in others)])
    return WriteResult(action, memory, resolution.conflicts, None, changed)


def _merge_flow(
    core: StoreCore,
    resolution: Resolution,
    value: dict[str, Any],
    merged_text: str,
    vectors: dict[str, list[float]],
    at: datetime,
    metadata: dict[str, Any],
) -> Flow[tuple[str, str]]:
    """Write the merged text as the next version of the merge target, recording what was
    merged into it; answers the target's id and the version's reason."""
    target = resolution.existing
    assert target is not None
    top = resolution.contradicted[0]
    merged = dict(target.value)
    merged["content"] = merged_text
    merged["confidence"] = value.get("confidence", target.confidence)
    merged["merged_from"] = [
        *(target.value.get("merged_from") or []),
        {"content": value.get("content"), "at": at.isoformat(), "explanation": top.explanation},
    ]
    merged = refreshed_value(target.value, merged)
    yield from close_versions_flow(core, [target.id], at)
    note = WriteNote(
        MERGED, {**metadata, "merged": value.get("content")}, {"version": target.version + 1}
    )
    yield from core.batch_flow(
        [PutOp(target.namespace, target.key, merged)],
        notes={target.id: note},
        vectors=vectors,
        now=at,
    )
    return target.id, f"merged: {top.explanation}"


def _contradicted_changes(
    action: str, others: Sequence[Conflict], new_id: str, stamp: str
) -> list[Change]:
    """What the new memory does to the others it contradicts: notes the conflict on each
    (kept both), or marks each superseded by it."""
    changes: list[Change] = []
    for c in others:
        old = c.memory
        if action == "kept_both":
            link = {"id": new_id, "confidence": c.confidence, "explanation": c.explanation}
            marked = dict(old.value)
            marked["conflicts_with"] = [*(old.value.get("conflicts_with") or []), link]
            changes.append(Change(old.id, CONFLICT_NOTED, value=marked, metadata=link))
        else:
            gone = with_status(old.value, "superseded", superseded_by=new_id, valid_until=stamp)
            meta = {"superseded_by": new_id, **_link(c)}
            changes.append(Change(old.id, SUPERSEDED, value=gone, metadata=meta))
    return changes


def update_semantic_flow(
    core: StoreCore,
    *,
    scope_label: str,
    memory_id: str,
    content: str,
    confidence: float | None,
    reason: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
) -> Flow[Memory]:
    """A new version of an active semantic memory of the scope, in one transaction."""
    memory: Memory = yield Transaction(
        _update(core, scope_label, memory_id, content, confidence, reason, vectors, at)
    )
    return memory


def _update(
    core: StoreCore,
    scope_label: str,
    memory_id: str,
    content: str,
    confidence: float | None,
    reason: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
) -> Flow[Memory]:
    target = yield from _active_semantic_flow(core, scope_label, memory_id)
    value = dict(target.value)
    value["content"] = content
    if confidence is not None:
        value["confidence"] = confidence
    value = refreshed_value(target.value, value)
    return (yield from _new_version_flow(core, target, value, reason, vectors, at))


def revise_flow(
    core: StoreCore,
    *,
    scope_label: str,
    memory_id: str,
    value: dict[str, Any],
    reason: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
    ttl: float | None = None,
) -> Flow[Memory]:
    """A new version of an active semantic memory with a whole new value, in one
    transaction; ``ttl``: minutes it lives from now (None: it does not expire)."""
    memory: Memory = yield Transaction(
        _revise(core, scope_label, memory_id, value, reason, vectors, at, ttl)
    )
    return memory


def _revise(
    core: StoreCore,
    scope_label: str,
    memory_id: str,
    value: dict[str, Any],
    reason: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
    ttl: float | None,
) -> Flow[Memory]:
    target = yield from _active_semantic_flow(core, scope_label, memory_id)
    return (yield from _new_version_flow(core, target, value, reason, vectors, at, ttl))


def _active_semantic_flow(core: StoreCore, scope_label: str, memory_id: str) -> Flow[Memory]:
    """The semantic memory to give a new version, locked; a ValidationError unless active."""
    target = yield from scoped_memory_flow(
        core.dialect, scope_label, memory_id, kinds=["semantic"], lock=True
    )
    if target.status != "active":
        where = target.value.get("superseded_by")
        hint = f"; write to {where}, which superseded it" if where else ""
        raise ValidationError(
            f"memory {memory_id} (key {target.key!r}) is {target.status}; only active "
            f"memories get new versions{hint}."
        )
    return target


def _new_version_flow(
    core: StoreCore,
    target: Memory,
    value: dict[str, Any],
    reason: str | None,
    vectors: dict[str, list[float]],
    at: datetime,
    ttl: float | None = None,
) -> Flow[Memory]:
    version = target.version + 1
    yield from close_versions_flow(core, [target.id], at)
    note = WriteNote(UPDATED, {"reason": reason, "version": version}, {"version": version})
    yield from core.batch_flow(
        [PutOp(target.namespace, target.key, value, ttl=ttl)],
        notes={target.id: note},
        vectors=vectors,
        now=at,
    )
    snap = (yield from snapshot_flow(core.dialect, [target.id]))[target.id]
    yield from insert_version_flow(core, snap, reason or "updated", at)
    return (yield from _read_flow(core, [target.id]))[0]
