"""Upkeep of memory: consolidation, decay and lifecycle, events and administration.

:class:`Upkeep` holds, beside the engine's :class:`~langmem_tiers.long_term.engine.operations.
Operations`, the step generators of the operations that maintain memory rather than write it: turning
episodes into semantic memories, decay, forgetting and compression, replay and the
timeline, and the counts an administrator asks for.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from tqdm import tqdm

from langmem_tiers.errors import NotFoundError, ValidationError
from langmem_tiers.long_term.engine import validate as check
from langmem_tiers.long_term.engine.consolidation import (
    GroupSummary,
    count_due_flow,
    episode_messages,
    group_episodes,
    summary_value,
    unconsolidated_flow,
    write_groups_flow,
)
from langmem_tiers.long_term.engine.lifecycle import (
    compress_flow,
    decay_flow,
    hard_delete_flow,
    memories_flow,
    soft_delete_flow,
)
from langmem_tiers.long_term.engine.models import (
    EVENT_TYPES,
    CompressionResult,
    ConsolidationResult,
    DecayResult,
    Event,
    Memory,
    ScopeCount,
    scope_id,
)
from langmem_tiers.long_term.engine.operations import Operations
from langmem_tiers.long_term.engine.replay import live_state_flow, replay_flow, timeline_flow
from langmem_tiers.long_term.engine.semantic import index_texts
from langmem_tiers.long_term.engine.steps import Db, Steps, Summarize
from langmem_tiers.long_term.store.scope import MEMORY_KINDS, namespace_for
from langmem_tiers.sql.dialect import EVENTS, ITEMS
from langmem_tiers.sql.flow import Flow, Sql

__all__ = ["COMPRESSED_SUMMARY", "Upkeep"]

COMPRESSED_SUMMARY = "compressed_summary"
"""``category`` of the summaries compression writes."""

CONSOLIDATION_WRITE_GROUPS = 16
"""Summaries a consolidation embeds in one call and stores in one transaction, at most.

Offline, storing each group alone cost more than summarising it: 8 groups of 5 episodes
took 129 SQL statements in 8 transactions, and 17 in one stored together."""

CONSOLIDATION_WRITE_EPISODES = 50
"""Episodes whose summaries are stored in one transaction, about: each is changed and
logged there, while the scope's other writers wait for it (SQLite's write lock,
PostgreSQL's change counter of the episodes' namespace)."""

CONSOLIDATION_WRITE_SECONDS = 1.0
"""Summaries waiting this long are stored without waiting for more: with a chat model
(a second or so a group) each is stored soon after its call, so a run that dies loses
little paid work."""


class Upkeep:
    """Consolidation, lifecycle, events and administration, as step generators.

    A part of :class:`~langmem_tiers.long_term.engine.engine.MemoryEngine`; it works
    with the configuration and the clock of the engine's :class:`Operations`.
    """

    def __init__(self, ops: Operations) -> None:
        self.ops = ops
        # Scopes an add of this engine is consolidating: adds made meanwhile (threads,
        # tasks) leave the scope to it instead of summarising the same episodes again.
        self._consolidating: set[str] = set()
        self._consolidating_lock = threading.Lock()

    def auto_consolidate_steps(self, scope: str, label: str) -> Steps[bool]:
        """Consolidate the scope for an add that brought it to the threshold, unless an
        add of this engine is already doing so (then nothing: its episodes, and the next
        add's, are consolidated by that one or the next add over the threshold). Whether
        this add consolidated.

        Without it, eight concurrent adds meeting the threshold each read the same
        episodes and summarised every group (with a model: eight calls a group), all but
        one write then skipped.
        """
        with self._consolidating_lock:
            if label in self._consolidating:
                return False
            self._consolidating.add(label)
        try:
            yield from self.consolidate_steps(scope, label, progress=False)
        finally:
            with self._consolidating_lock:
                self._consolidating.discard(label)
        return True

    # -- consolidation -------------------------------------------------------------------
    def consolidate_steps(
        self, scope: str, label: str, *, progress: bool
    ) -> Steps[ConsolidationResult]:
        episodes = yield Db(unconsolidated_flow(self.ops.core, label))
        groups = group_episodes(
            episodes, gap=self.ops.consolidation_gap, max_size=self.ops.max_group_size
        )
        written: list[Memory | None] = []
        pending: list[tuple[GroupSummary, list[str]]] = []
        pending_since = 0.0
        bar = tqdm(groups, desc=f"consolidating {scope}", unit="group", disable=not progress)
        try:
            for group in bar:
                namespace, key = namespace_for(scope, "semantic"), uuid.uuid4().hex
                try:
                    summary = check.checked_summary((yield Summarize(episode_messages(group))))
                    value = summary_value(group, summary)
                    texts = index_texts(self.ops.core, namespace, key, value)
                except BaseException:
                    # The groups summarised so far are kept: no model call is wasted.
                    written += yield from self._write_summaries(pending)
                    raise
                if not pending:
                    pending_since = time.monotonic()
                pending.append((GroupSummary(namespace, key, value, {}, group), texts))
                if (
                    len(pending) >= CONSOLIDATION_WRITE_GROUPS
                    or sum(len(s.group) for s, _ in pending) >= CONSOLIDATION_WRITE_EPISODES
                    or time.monotonic() - pending_since >= CONSOLIDATION_WRITE_SECONDS
                ):
                    written += yield from self._write_summaries(pending)
                    pending = []
            written += yield from self._write_summaries(pending)
        finally:
            bar.close()
        memories = [m for m in written if m is not None]
        done = sum(len(g) for g, m in zip(groups, written, strict=True) if m is not None)
        return ConsolidationResult(scope, len(groups), done, memories, written.count(None))

    def _write_summaries(
        self, summaries: list[tuple[GroupSummary, list[str]]]
    ) -> Steps[list[Memory | None]]:
        """Embed the summaries' texts (the second of each pair) in one call and store the
        summaries in one transaction."""
        if not summaries:
            return []
        vectors = yield from self.ops.embed_steps([t for _, texts in summaries for t in texts])
        memories: list[Memory | None] = yield Db(
            write_groups_flow(
                self.ops.core,
                [s._replace(vectors={t: vectors[t] for t in texts}) for s, texts in summaries],
                at=self.ops.now(),
            )
        )
        return memories

    def consolidate_public_steps(self, scope: str, progress: bool) -> Steps[ConsolidationResult]:
        return (yield from self.consolidate_steps(scope, check.label(scope), progress=progress))

    def consolidate_due_steps(self, progress: bool) -> Steps[list[ConsolidationResult]]:
        due = yield Db(count_due_flow(self.ops.core, self.ops.settings.consolidation_threshold))
        results = []
        for column, _count in due:
            if "." in column:
                continue  # a nested namespace written through the store, not an engine scope
            scope = scope_id(column)
            results.append((yield from self.consolidate_steps(scope, column, progress=progress)))
        return results

    # -- lifecycle -----------------------------------------------------------------------
    def decay_steps(self, scope: str, now: datetime | str | None) -> Steps[DecayResult]:
        label = check.label(scope)
        at = self.ops.now() if now is None else check.time("now", now)
        examined, changes = yield Db(
            decay_flow(
                self.ops.core,
                label,
                at,
                half_life_days=self.ops.settings.decay_half_life_days,
                threshold=self.ops.settings.decay_threshold,
                min_change=self.ops.decay_min_change,
            )
        )
        decayed = [c.memory_id for c in changes if c.value is not None]
        return DecayResult(scope, at, examined, len(changes), decayed)

    def forget_steps(self, scope: str, memory_id: str, hard: bool) -> Steps[Memory | None]:
        label = check.label(scope)
        check.memory_id(memory_id)
        if hard:
            yield Db(hard_delete_flow(self.ops.core, label, memory_id))
            return None
        memory: Memory = yield Db(soft_delete_flow(self.ops.core, label, memory_id))
        return memory

    def compress_steps(
        self, scope: str, memory_ids: Sequence[str] | None
    ) -> Steps[CompressionResult]:
        label = check.label(scope)
        d = self.ops.core.dialect
        if memory_ids is None:
            targets: list[Memory] = yield Db(
                memories_flow(
                    d,
                    "i.scope = ? AND i.kind IN ('episodic', 'semantic') AND i.status = 'decayed'",
                    [label],
                )
            )
        else:
            ids = [check.memory_id(i) for i in check.strings("memory_ids", memory_ids)]
            in_ids, params = d.in_list("i.id", ids)
            targets = yield Db(
                memories_flow(
                    d,
                    f"{in_ids} AND {d.not_indexed('i.scope')} = ? AND i.kind IS NOT NULL",
                    [*params, label],
                )
            )
            missing = sorted(set(ids) - {m.id for m in targets})
            if missing:
                raise NotFoundError(f"no memories {missing} in this scope; nothing was compressed.")
            bad = [m.id for m in targets if m.status not in ("active", "decayed")]
            if bad:
                raise ValidationError(
                    f"memories {bad} are not active or decayed; only those can be compressed."
                )
        if not targets:
            return CompressionResult(scope, None, [])
        messages: list[BaseMessage] = [HumanMessage(m.content) for m in targets]
        summary = check.checked_summary((yield Summarize(messages)))
        value = {
            "content": summary.text,
            "category": COMPRESSED_SUMMARY,
            "key_concepts": list(summary.key_concepts),
            "source_memory_ids": [m.id for m in targets],
        }
        namespace, key = namespace_for(scope, "semantic"), uuid.uuid4().hex
        vectors = yield from self.ops.embed_steps(index_texts(self.ops.core, namespace, key, value))
        memory: Memory = yield Db(
            compress_flow(
                self.ops.core,
                namespace=namespace,
                key=key,
                value=value,
                targets=targets,
                vectors=vectors,
                reason=f"compressed {len(targets)} memories",
            )
        )
        return CompressionResult(scope, memory, [m.id for m in targets])

    # -- events --------------------------------------------------------------------------
    def replay_steps(self, scope: str, at: datetime | str) -> Steps[list[Memory]]:
        label = check.label(scope)
        found: list[Memory] = yield Db(
            replay_flow(self.ops.core.dialect, label, check.time("at", at))
        )
        return found

    def state_steps(self, scope: str) -> Steps[list[Memory]]:
        label = check.label(scope)
        found: list[Memory] = yield Db(live_state_flow(self.ops.core.dialect, label))
        return found

    def timeline_steps(
        self,
        scope: str,
        since: datetime | str | None,
        until: datetime | str | None,
        types: Sequence[str] | None,
        limit: int,
        memory_id: str | None,
    ) -> Steps[list[Event]]:
        label = check.label(scope)
        start = None if since is None else check.time("since", since)
        end = None if until is None else check.time("until", until)
        if start is not None and end is not None and start > end:
            raise ValidationError(
                f"since ({start.isoformat()}) is after until ({end.isoformat()})."
            )
        chosen = None
        if types is not None:
            chosen = check.strings("types", [types] if isinstance(types, str) else types)
            unknown = [t for t in chosen if t not in EVENT_TYPES]
            if unknown:
                raise ValidationError(
                    f"types {unknown} are not event types; known: {', '.join(EVENT_TYPES)}."
                )
        events: list[Event] = yield Db(
            timeline_flow(
                self.ops.core.dialect,
                label,
                since=start,
                until=end,
                types=chosen,
                memory_id=None if memory_id is None else check.memory_id(memory_id),
                limit=check.large_limit(limit),
            )
        )
        return events

    # -- administration ------------------------------------------------------------------
    def stats_steps(self, scope: str | None) -> Steps[dict[str, Any]]:
        label = None if scope is None else check.label(scope)
        stats: dict[str, Any] = yield Db(_stats_flow(self.ops.core, label))
        if scope is not None:
            stats["scope"] = scope
        return stats

    def agents_steps(self) -> Steps[list[ScopeCount]]:
        rows = yield Db(
            _rows_flow(
                f"SELECT scope, kind, status, count(*) FROM {ITEMS} WHERE kind IS NOT NULL"
                " GROUP BY scope, kind, status ORDER BY scope"
            )
        )
        counts: dict[str, dict[str, int]] = {}
        for column, kind, status, n in rows:
            if "." in column:
                continue  # a nested namespace written through the store, not an engine scope
            entry = counts.setdefault(column, {"active": 0, "total": 0})
            entry[kind] = entry.get(kind, 0) + int(n)
            entry["total"] += int(n)
            if status == "active":
                entry["active"] += int(n)
        return [
            ScopeCount(
                scope=scope_id(column),
                episodic=c.get("episodic", 0),
                semantic=c.get("semantic", 0),
                procedural=c.get("procedural", 0),
                active=c["active"],
                total=c["total"],
            )
            for column, c in counts.items()
        ]


def _rows_flow(text: str, params: Sequence[Any] = ()) -> Flow[list[tuple[Any, ...]]]:
    rows: list[tuple[Any, ...]] = yield Sql(text, params)
    return rows


def _stats_flow(core: Any, label: str | None) -> Flow[dict[str, Any]]:
    where, params = (
        ("scope = ? AND kind IS NOT NULL", [label]) if label else ("kind IS NOT NULL", [])
    )
    rows = yield Sql(
        f"SELECT kind, status, count(*) FROM {ITEMS} WHERE {where} GROUP BY kind, status", params
    )
    memories: dict[str, dict[str, int]] = {k: {} for k in MEMORY_KINDS}
    for kind, status, n in rows:
        memories.setdefault(kind, {})[status] = int(n)
    total = sum(n for by_status in memories.values() for n in by_status.values())
    active = sum(by_status.get("active", 0) for by_status in memories.values())
    events = yield Sql(f"SELECT count(*) FROM {EVENTS} WHERE {where}", params)
    waiting = yield Sql(
        f"SELECT count(*) FROM {ITEMS} WHERE {where} AND kind = 'episodic'"
        " AND status = 'active' AND consolidated_into_id IS NULL",
        params,
    )
    out: dict[str, Any] = {
        "memories": memories,
        "total": total,
        "active": active,
        "events": int(events[0][0]),
        "unconsolidated_episodes": int(waiting[0][0]),
    }
    if label is None:
        scopes = yield Sql(f"SELECT count(DISTINCT scope) FROM {ITEMS} WHERE kind IS NOT NULL")
        out["scopes"] = int(scopes[0][0])
    return out
