"""Consolidation: a scope's episodic memories become semantic ones, idempotently.

1. Select the scope's active episodes not consolidated yet (no ``consolidated_into_id``,
   neither the column nor the value's key, which the consolidation graph writes).
2. Group them: by ``session_id``; episodes without one by time proximity (a new group
   after a gap longer than ``gap``). Long groups are cut into runs of ``max_group_size``.
3. Summarise each group (the engine's summariser: a chat model, or offline).
4. Store the summaries of several groups at once (:func:`write_groups_flow`: their
   texts embedded in one call, one transaction): check that no episode of a group was
   consolidated meanwhile (a concurrent run; that group is then skipped), store each
   summary as a semantic memory (``category = "episode_summary"``, ``key_concepts``,
   ``source_episodic_ids``, ``session_id``, ``source_message_ids`` of archived chat
   messages, first and last event times) with its first version, and mark every
   episode with ``consolidated_into_id``. Episodes stay active and searchable.

A run whose summariser fails stores the groups summarised before; the next run takes
the rest, and nothing is summarised twice.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> eps = [Episode("a", "hi", None, "user", t), Episode("b", "yo", None, "user",
    ...        t + timedelta(minutes=5)), Episode("c", "later", None, "user", t + timedelta(days=1))]
    >>> [[e.id for e in g] for g in group_episodes(eps, gap=timedelta(hours=1), max_size=50)]
    [['a', 'b'], ['c']]
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import PutOp

from langmem_tiers.long_term.engine.lifecycle import Change, change_flow, memories_flow
from langmem_tiers.long_term.engine.models import (
    CONSOLIDATED,
    CREATED,
    Memory,
    memory_from_snapshot,
)
from langmem_tiers.long_term.engine.versions import insert_versions_flow
from langmem_tiers.long_term.store.core import StoreCore, WriteNote
from langmem_tiers.long_term.store.events import snapshot_flow
from langmem_tiers.long_term.store.records import item_id
from langmem_tiers.sql.dialect import ITEMS
from langmem_tiers.sql.flow import Flow, Sql, Transaction
from langmem_tiers.tiers.base import Summary

__all__ = [
    "EPISODE_SUMMARY",
    "Episode",
    "GroupSummary",
    "episode_messages",
    "group_episodes",
    "unconsolidated_flow",
    "write_groups_flow",
]

EPISODE_SUMMARY = "episode_summary"
"""``category`` of the semantic memories consolidation writes."""

_AI_ACTORS = frozenset({"ai", "assistant", "agent", "bot", "system_ai"})


class Episode(NamedTuple):
    """What consolidation needs of an episodic memory."""

    id: str
    content: str
    session_id: str | None
    actor: str | None
    time: datetime
    message_id: str | None = None
    """The short-term memory message it archives, when it is one."""


def _unconsolidated_where(dialect: Any) -> tuple[str, list[Any]]:
    path_sql, path_params = dialect.json_extract(["consolidated_into_id"])
    return (
        "i.scope = ? AND i.kind = 'episodic' AND i.status = 'active'"
        f" AND i.consolidated_into_id IS NULL AND {path_sql} IS NULL",
        path_params,
    )


def unconsolidated_flow(core: StoreCore, scope_label: str) -> Flow[list[Episode]]:
    """The scope's episodes not consolidated yet, oldest first."""
    where, params = _unconsolidated_where(core.dialect)
    found = yield from memories_flow(core.dialect, where, [scope_label, *params])
    episodes = [
        Episode(
            m.id,
            m.content,
            m.session_id,
            m.actor,
            m.event_timestamp or m.created_at,
            _message_id(m.value),
        )
        for m in found
    ]
    episodes.sort(key=lambda e: (e.time, e.id))
    return episodes


def _message_id(value: dict[str, Any]) -> str | None:
    raw = value.get("message_id")
    return raw if isinstance(raw, str) and raw else None


def count_due_flow(core: StoreCore, threshold: int) -> Flow[list[tuple[str, int]]]:
    """Scopes (``scope`` column values) with at least ``threshold`` unconsolidated episodes."""
    path_sql, path_params = core.dialect.json_extract(["consolidated_into_id"])
    rows = yield Sql(
        f"SELECT i.scope, count(*) FROM {ITEMS} i WHERE i.kind = 'episodic'"
        " AND i.status = 'active' AND i.consolidated_into_id IS NULL"
        f" AND {path_sql} IS NULL GROUP BY i.scope HAVING count(*) >= ? ORDER BY i.scope",
        [*path_params, threshold],
    )
    return [(r[0], int(r[1])) for r in rows]


def count_unconsolidated_flow(core: StoreCore, scope_label: str) -> Flow[int]:
    """How many episodes of the scope wait for consolidation."""
    where, params = _unconsolidated_where(core.dialect)
    rows = yield Sql(f"SELECT count(*) FROM {ITEMS} i WHERE {where}", [scope_label, *params])
    return int(rows[0][0])


def group_episodes(
    episodes: Sequence[Episode], *, gap: timedelta, max_size: int
) -> list[list[Episode]]:
    """Groups to summarise: per session, or by time proximity; oldest group first."""
    by_session: dict[str, list[Episode]] = {}
    loose: list[Episode] = []
    for episode in sorted(episodes, key=lambda e: (e.time, e.id)):
        if episode.session_id:
            by_session.setdefault(episode.session_id, []).append(episode)
        else:
            loose.append(episode)
    groups = list(by_session.values())
    current: list[Episode] = []
    for episode in loose:
        if current and episode.time - current[-1].time > gap:
            groups.append(current)
            current = []
        current.append(episode)
    if current:
        groups.append(current)
    runs = [g[i : i + max_size] for g in groups for i in range(0, len(g), max_size)]
    runs.sort(key=lambda g: (g[0].time, g[0].id))
    return runs


def episode_messages(group: Sequence[Episode]) -> list[BaseMessage]:
    """The episodes as chat messages for a summariser (who said it is kept)."""
    out: list[BaseMessage] = []
    for e in group:
        actor = (e.actor or "").strip()
        if actor.lower() in _AI_ACTORS:
            out.append(AIMessage(e.content))
        elif actor and actor.lower() not in ("user", "human"):
            out.append(HumanMessage(e.content, name=_message_name(actor)))
        else:
            out.append(HumanMessage(e.content))
    return out


def _message_name(actor: str) -> str:
    # Chat APIs accept names of letters, digits, '_' and '-' only.
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in actor)[:64] or "user"


def summary_value(group: Sequence[Episode], summary: Summary) -> dict[str, Any]:
    """The semantic memory of one group's summary."""
    sessions = sorted({e.session_id for e in group if e.session_id})
    value: dict[str, Any] = {
        "content": summary.text,
        "category": EPISODE_SUMMARY,
        "key_concepts": list(summary.key_concepts),
        "source_episodic_ids": [e.id for e in group],
        "first_event_at": group[0].time.isoformat(),
        "last_event_at": group[-1].time.isoformat(),
    }
    if len(sessions) == 1:
        value["session_id"] = sessions[0]
    messages = [e.message_id for e in group if e.message_id]
    if messages:  # archived chat messages: the context names the summary by them
        value["source_message_ids"] = messages
    return value


class GroupSummary(NamedTuple):
    """One group's summary, ready to store: the semantic memory's namespace, key and
    value, the vectors of its texts (by text), and the episodes it summarises."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    vectors: dict[str, list[float]]
    group: Sequence[Episode]


def write_groups_flow(
    core: StoreCore, summaries: Sequence[GroupSummary], *, at: datetime
) -> Flow[list[Memory | None]]:
    """Store the groups' summaries and mark their episodes, in one transaction; for each
    group its semantic memory, or None when a concurrent run consolidated one of its
    episodes meanwhile (that group alone is skipped)."""
    memories: list[Memory | None] = yield Transaction(_write_groups(core, summaries, at))
    return memories


def _write_groups(
    core: StoreCore, summaries: Sequence[GroupSummary], at: datetime
) -> Flow[list[Memory | None]]:
    d = core.dialect
    in_ids, ids_params = d.in_list("i.id", sorted({e.id for s in summaries for e in s.group}))
    path_sql, path_params = d.json_extract(["consolidated_into_id"])
    # Rows are locked in id order: two runs over overlapping episodes wait for each other
    # instead of each holding some the other needs.
    rows = yield Sql(
        f"SELECT i.id FROM {ITEMS} i WHERE {in_ids} AND i.status = 'active'"
        f" AND i.consolidated_into_id IS NULL AND {path_sql} IS NULL"
        f" ORDER BY i.id{d.for_update}",
        [*ids_params, *path_params],
    )
    waiting = {row[0] for row in rows}
    kept = [s for s in summaries if all(e.id in waiting for e in s.group)]
    if not kept:
        return [None] * len(summaries)
    summary_ids = [item_id(s.namespace, s.key) for s in kept]
    notes = {
        summary_id: WriteNote(
            CREATED, {"action": "consolidated", "source_episodic_ids": [e.id for e in s.group]}
        )
        for summary_id, s in zip(summary_ids, kept, strict=True)
    }
    yield from core.batch_flow(
        [PutOp(s.namespace, s.key, s.value) for s in kept],
        notes=notes,
        vectors={text: vector for s in kept for text, vector in s.vectors.items()},
        now=at,
    )
    snaps = yield from snapshot_flow(d, summary_ids)
    yield from insert_versions_flow(
        core, [snaps[i] for i in summary_ids], "consolidated from episodes", at
    )
    into = {
        e.id: summary_id for summary_id, s in zip(summary_ids, kept, strict=True) for e in s.group
    }
    in_episodes, episode_params = d.in_list("i.id", sorted(into))
    episodes = yield from memories_flow(d, in_episodes, episode_params)
    changes = [
        Change(
            e.id,
            CONSOLIDATED,
            value={**e.value, "consolidated_into_id": into[e.id]},
            columns={"consolidated_into_id": into[e.id]},
            metadata={"consolidated_into_id": into[e.id]},
        )
        for e in episodes
    ]
    yield from change_flow(d, changes, at=at, max_chars=core.settings.max_content_chars)
    written = {i: memory_from_snapshot(snaps[i]) for i in summary_ids}
    return [written.get(item_id(s.namespace, s.key)) for s in summaries]
