"""Memory as it was: replay from the event log, the timeline, and retrieval "as of" a time.

Every change of a memory appended an event with the memory's full snapshot after it
(see events.py), so the state of a scope at an instant is the last snapshot of each
memory at or before it, minus the memories a hard delete removed. Replay reads the
events alone; replayed to now it equals the live rows (access counts excepted: they
are usage statistics, not changes).

Retrieval "as of" a time ranks the memories replay gives for that time: active then,
and (semantic ones) inside their validity interval ``valid_from <= t < valid_until``.
Their relevance uses the store's vectors when a memory is unchanged since, and embeds
the text it had then otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.engine.lifecycle import memories_flow
from langmem_tiers.long_term.engine.models import (
    Event,
    Memory,
    ScoredMemory,
    memory_from_snapshot,
    scope_id,
    scored,
)
from langmem_tiers.long_term.store.core import StoreCore
from langmem_tiers.long_term.store.events import replay_snapshots
from langmem_tiers.long_term.store.records import texts_to_index, validate_value
from langmem_tiers.long_term.store.search import bm25 as lexical
from langmem_tiers.long_term.store.search.ranking import Candidate, rank
from langmem_tiers.long_term.store.search.relevance import absolute_relevance, idf_mass
from langmem_tiers.long_term.store.vectors import normalize
from langmem_tiers.sql.dialect import EVENTS, ITEMS, Dialect
from langmem_tiers.sql.flow import Flow, Sql

__all__ = ["as_of_flow", "live_state_flow", "replay_flow", "state_at_flow", "timeline_flow"]

_EVENT_COLUMNS = (
    "seq, at, type, scope, kind, memory_id, key, before, after, metadata, correlation_id, actor"
)


def _by_creation(memories: list[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (m.created_at, m.id))


def state_at_flow(dialect: Dialect, scope_label: str, at: datetime) -> Flow[list[Memory] | None]:
    """The scope's memories at ``at`` from its events; None before its first event."""
    rows = yield Sql(
        f"SELECT min(at) FROM {EVENTS} WHERE scope = ? AND kind IS NOT NULL", [scope_label]
    )
    first = dialect.ts_value(rows[0][0])
    if first is None or at < first:
        return None
    rows = yield Sql(
        f"SELECT memory_id, after, type FROM {EVENTS}"
        " WHERE scope = ? AND kind IS NOT NULL AND at <= ? ORDER BY seq",
        [scope_label, dialect.ts_param(at)],
    )
    state = replay_snapshots(
        (r[0], None if r[1] is None else dialect.json_value(r[1]), r[2]) for r in rows
    )
    return _by_creation([memory_from_snapshot(s) for s in state.values()])


def replay_flow(dialect: Dialect, scope_label: str, at: datetime) -> Flow[list[Memory]]:
    """The scope's memories as they were at ``at`` (ValidationError before the first event)."""
    state = yield from state_at_flow(dialect, scope_label, at)
    if state is None:
        raise ValidationError(
            f"at={at.isoformat()} is before this scope's first event (or the scope has no "
            "events); replay from a time after its first memory was written."
        )
    return state


def live_state_flow(dialect: Dialect, scope_label: str) -> Flow[list[Memory]]:
    """The scope's memories as the rows hold them now (what replay to now must equal)."""
    found = yield from memories_flow(dialect, "i.scope = ? AND i.kind IS NOT NULL", [scope_label])
    return _by_creation(found)


def timeline_flow(
    dialect: Dialect,
    scope_label: str,
    *,
    since: datetime | None,
    until: datetime | None,
    types: Sequence[str] | None,
    memory_id: str | None,
    limit: int,
    memories_only: bool = True,
) -> Flow[list[Event]]:
    """The scope's events in order, filtered by time, type and memory.

    ``memories_only=False`` also gives the events of plain documents (a namespace not
    ending in a memory kind, whose ``scope`` column is the whole namespace).
    """
    where = ["scope = ?"] + (["kind IS NOT NULL"] if memories_only else [])
    params: list[Any] = [scope_label]
    if since is not None:
        where.append("at >= ?")
        params.append(dialect.ts_param(since))
    if until is not None:
        where.append("at <= ?")
        params.append(dialect.ts_param(until))
    if types:
        where.append(f"type IN ({', '.join('?' for _ in types)})")
        params.extend(types)
    if memory_id is not None:
        where.append("memory_id = ?")
        params.append(memory_id)
    rows = yield Sql(
        f"SELECT {_EVENT_COLUMNS} FROM {EVENTS} WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?",
        [*params, limit],
    )
    return [
        Event(
            seq=int(r[0]),
            at=dialect.ts_value(r[1]),  # type: ignore[arg-type]
            type=r[2],
            scope=scope_id(r[3]),
            kind=r[4],
            memory_id=r[5],
            key=r[6],
            before=None if r[7] is None else dialect.json_value(r[7]),
            after=None if r[8] is None else dialect.json_value(r[8]),
            metadata=dialect.json_value(r[9]) or {},
            correlation_id=r[10],
            actor=r[11],
        )
        for r in rows
    ]


def _valid_at(memory: Memory, at: datetime) -> bool:
    if memory.valid_from is not None and memory.valid_from > at:
        return False
    return memory.valid_until is None or memory.valid_until > at


def _index_text(core: StoreCore, memory: Memory) -> str:
    record = validate_value(
        memory.namespace, memory.key, memory.value, max_chars=core.settings.max_content_chars
    )
    return " ".join(text for _, text in texts_to_index(record, core.fields)) or memory.content


def as_of_flow(
    core: StoreCore,
    scope_label: str,
    query: str,
    at: datetime,
    *,
    kinds: Sequence[str],
    include_inactive: bool,
    limit: int,
    min_score: float | None = None,
) -> Flow[list[ScoredMemory]]:
    """The memories best matching ``query`` among those the scope had at ``at``.

    Relevance is the store's absolute one (``search/relevance.py``); ``min_score`` drops
    memories below it.
    """
    state = yield from state_at_flow(core.dialect, scope_label, at)
    if not state:
        return []
    pool = [
        m
        for m in state
        if m.kind in kinds and (include_inactive or (m.status == "active" and _valid_at(m, at)))
    ]
    if not pool:
        return []
    query_vector = normalize((yield from core.embed_flow([query], query=True))[0])
    ids = [m.id for m in pool]
    in_ids, params = core.dialect.in_list("id", ids)
    rows = yield Sql(
        f"SELECT id, value FROM {ITEMS} WHERE {in_ids} AND scope = ?", [*params, scope_label]
    )
    now_values = {r[0]: core.dialect.json_value(r[1]) for r in rows}
    unchanged = [m.id for m in pool if now_values.get(m.id) == m.value]
    dense = yield from core.index.score_flow(query_vector, unchanged)
    texts = {m.id: _index_text(core, m) for m in pool}
    redo = [m.id for m in pool if m.id not in dense]
    if redo:
        vectors = yield from core.embed_flow([texts[i] for i in redo])
        for memory_id, vector in zip(redo, vectors, strict=True):
            unit = normalize(vector)
            dense[memory_id] = math.fsum(a * b for a, b in zip(unit, query_vector, strict=True))
    weights = lexical.query_weights(lexical.analyze_query(query))
    docs = [lexical.analyze(texts[i]) for i in ids]
    bm25 = lexical.bm25_scores(weights, docs)
    lex = {i: s for i, s in zip(ids, bm25, strict=True) if s > 0}
    df = {t: sum(1 for doc in docs if t in doc) for t in weights}
    relevance = absolute_relevance(
        dense,
        lex,
        idf_mass=idf_mass(weights, df, len(docs)),
        weight=core.dense_weight,
        curve=core.search.cosine_curve,
    )
    candidates = [
        Candidate(
            id=m.id,
            relevance=relevance.get(m.id, 0.0),
            time=m.event_timestamp or m.updated_at,
            access_count=0,  # usage is not replayed
            confidence=m.confidence,
        )
        for m in pool
    ]
    settings = core.settings
    ranked = rank(
        candidates, settings.weights, settings.recency_half_life_days, at, settings.ranking
    )
    if min_score is not None:
        ranked = [r for r in ranked if r.components.semantic >= min_score]
    ranked = ranked[:limit]
    by_id = {m.id: m for m in pool}
    return [scored(by_id[r.id], r.score, r.components._asdict()) for r in ranked]
