"""What the inspector's pages show, read through the package's public APIs.

Every function here reads (async, on the store and engine the server runs) and answers
plain records; :mod:`~langmem_tiers.server.inspector.pages` draws them. Nothing here
writes memory, with one exception a reader should know: a search from the search box is
a real search, so, like any retrieval, it counts as a use of the memories it returns
(their ``frequency`` component).

- :func:`scope_overview`: counts by kind and status, and the last event's time.
- :func:`search`: the ranked results (``RankedItem.scores``) and what was left out and why.
- :func:`growth`: memories by kind over time, from the event log.
- :func:`session_view`: a session's messages (in the window and archived), and the
  context the model was given for a turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_tiers.config import ContextPolicy, Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.models import Memory
from langmem_tiers.long_term.store.records import parse_timestamp
from langmem_tiers.long_term.store.scope import encode_label, namespace_for
from langmem_tiers.long_term.store.search.query import RankedItem
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.context import ContextBuilder
from langmem_tiers.short_term.records import MessageRecord, parse_message_id
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.sql.item_ids import item_id
from langmem_tiers.tiers.tokens import count_message_tokens, count_tokens

__all__ = [
    "MEMORY_CAP",
    "LeftOut",
    "ScopeOverview",
    "SearchView",
    "SessionView",
    "TurnContext",
    "growth",
    "memory_id_of",
    "other_effects",
    "scope_overview",
    "search",
    "session_ids",
    "session_view",
    "turn_context",
]

MEMORY_CAP = 5_000
"""Most memories a listing reads (the page says when a scope holds more)."""

EVENT_CAP = 10_000
"""Most events the growth plot reads."""

_QUERY_CHARS = 2_000  # a context's memory search uses the turn's text, cut to this


def memory_id_of(item: RankedItem) -> str:
    """The engine's memory id of a store search result."""
    return item_id(item.namespace, item.key)


def other_effects(settings: Settings, score: float, scores: dict[str, float]) -> float | None:
    """The score over what its components give by the ranking's form and weights.

    1 when nothing else moved it; below 1 when the query named another author, asked
    *when* of a text that does not say, or a time window left the memory out (the
    ranking's multipliers). None when the components give 0 (nothing to compare with).
    Conversational neighbours act through ``semantic`` itself, so they do not show here.
    """
    w = settings.weights
    parts = (
        w.semantic * (1.0 if settings.ranking == "gated" else scores.get("semantic", 0.0))
        + w.recency * scores.get("recency", 0.0)
        + w.frequency * scores.get("frequency", 0.0)
        + w.confidence * scores.get("confidence", 0.0)
    )
    base = scores.get("semantic", 0.0) * parts if settings.ranking == "gated" else parts
    return score / base if base > 0 else None


@dataclass
class ScopeOverview:
    """One scope's counts by kind and status, and when its memory last changed."""

    scope: str
    counts: dict[str, dict[str, int]]
    total: int
    active: int
    events: int
    last_activity: datetime | None


async def scope_overview(engine: MemoryEngine, scope: str) -> ScopeOverview:
    """Counts (``stats``) and the time of the scope's last event."""
    stats = await engine.astats(scope)
    total = int(stats.get("total", 0))
    last: datetime | None = None
    if total:
        # Memories are listed oldest first: the newest one, then the events since it.
        newest = await engine.amemories(scope, statuses=None, limit=1, offset=total - 1)
        since = newest[0].created_at if newest else None
        events = await engine.atimeline(scope, since=since, limit=10_000)
        last = events[-1].at if events else since
    return ScopeOverview(
        scope,
        {k: dict(v) for k, v in stats.get("memories", {}).items()},
        total,
        int(stats.get("active", 0)),
        int(stats.get("events", 0)),
        last,
    )


@dataclass
class LeftOut:
    """A memory matching the query that the ranked results do not show, and why."""

    memory: Memory
    reason: str
    score: float
    scores: dict[str, float]


@dataclass
class SearchView:
    """A search's ranked results and the memories left out of them."""

    query: str
    min_score: float | None
    now: datetime | None
    results: list[RankedItem]
    left_out: list[LeftOut] = field(default_factory=list)


async def search(
    store: TieredMemoryStore,
    engine: MemoryEngine,
    scope: str,
    query: str,
    *,
    kind: str | None,
    limit: int,
    min_score: float | None,
    now: datetime | None = None,
) -> SearchView:
    """The store's ranked search of the scope, and what it left out.

    Left out, with the reason: memories the same query finds among every status
    (superseded, decayed, deleted, compressed), active ones outside their validity
    interval (expired, or not yet valid), and, with ``min_score``, results whose
    relevance is below it. ``now``: the reference time of the ranking (recency, validity;
    default: the current time).
    """
    prefix = namespace_for(scope, kind) if kind else (encode_label(scope),)  # type: ignore[arg-type]
    found = await store.asearch(prefix, query=query, limit=limit, min_score=min_score, now=now)
    results = [r for r in found if isinstance(r, RankedItem)]
    shown = {memory_id_of(r) for r in results}
    left: list[LeftOut] = []
    if min_score is not None:
        unfloored = await store.asearch(prefix, query=query, limit=limit, now=now)
        for item in unfloored:
            if not isinstance(item, RankedItem) or memory_id_of(item) in shown:
                continue
            memory = await engine.aget(scope, memory_id_of(item))
            relevance = item.scores.get("semantic", 0.0)
            if memory is not None and relevance < min_score:
                reason = f"below min_score: relevance {relevance:.3f} < {min_score:g}"
                left.append(LeftOut(memory, reason, float(item.score or 0.0), dict(item.scores)))
                shown.add(memory.id)
    wide = await engine.aretrieve(
        scope, query, kinds=kind, limit=limit, include_inactive=True, min_score=min_score
    )
    now = now or datetime.now(timezone.utc)
    for memory in wide:
        if memory.id in shown:
            continue
        if memory.status != "active":
            reason = f"status {memory.status}"
            superseded_by = memory.value.get("superseded_by")
            if superseded_by:
                reason += f" (by {superseded_by})"
        elif memory.valid_until is not None and memory.valid_until <= now:
            reason = f"expired: valid until {memory.valid_until.isoformat(timespec='seconds')}"
        elif memory.valid_from is not None and memory.valid_from > now:
            reason = f"not yet valid: valid from {memory.valid_from.isoformat(timespec='seconds')}"
        else:
            continue  # ranked below the page's limit: not left out, just further down
        left.append(LeftOut(memory, reason, memory.score, dict(memory.scores)))
        shown.add(memory.id)
    return SearchView(query, min_score, now, results, left)


async def growth(engine: MemoryEngine, scope: str) -> dict[str, list[tuple[float, float]]]:
    """Memories of each kind over time (created minus hard-deleted), from the event log."""
    events = await engine.atimeline(scope, limit=EVENT_CAP)
    counts: dict[str, int] = {}
    series: dict[str, list[tuple[float, float]]] = {}
    for event in events:
        kind = event.kind or "other"
        if event.type == "memory.created":
            counts[kind] = counts.get(kind, 0) + 1
        elif event.type == "memory.deleted":
            counts[kind] = counts.get(kind, 0) - 1
        else:
            continue
        series.setdefault(kind, []).append((event.at.timestamp(), float(counts[kind])))
    return dict(sorted(series.items()))


async def session_ids(store: TieredMemoryStore, engine: MemoryEngine, scope: str) -> list[str]:
    """The scope's sessions: those with messages in the window and those archived."""
    log = await _log(store)
    live = set(await log.asessions_of(scope))
    episodes = await engine.amemories(scope, kinds="episodic", statuses=None, limit=MEMORY_CAP)
    archived = {m.session_id for m in episodes if m.session_id}
    return sorted(live | archived)


async def _log(store: TieredMemoryStore) -> SqlMessageLog:
    if not store.db.is_async:
        return SqlMessageLog(store)  # migrates (once per database, idempotent)
    log = SqlMessageLog(store, setup=False)
    await log.asetup()  # the message tables, where no session was written yet
    return log


@dataclass
class MessageRow:
    """One message of a session: its three tiers with their token counts."""

    record: MessageRecord
    tokens: tuple[int, int, int]
    archived: Memory | None
    """The episodic memory it was archived to (then it left the window), or None."""


@dataclass
class TurnContext:
    """The context a model was given for one turn, and its size."""

    turn: str
    at: str
    messages: list[BaseMessage]
    tokens: int
    raw_tokens: int
    """Tokens of every message of the session up to the turn, raw (no memory)."""


@dataclass
class SessionView:
    """A session: its messages, what was archived, summaries made of it, and the builder."""

    session_id: str
    rows: list[MessageRow]
    summaries: list[Memory]
    builder: ContextBuilder
    settings: Settings


def _record_of(episode: Memory) -> MessageRecord | None:
    value = episode.value
    try:
        seq = parse_message_id(value.get("message_id"))
    except ValueError:
        return None
    created = value.get("event_timestamp") or episode.created_at.isoformat()
    return MessageRecord(
        id=str(value["message_id"]),
        seq=seq,
        role=str(value.get("actor") or "human"),
        content=str(value.get("content", "")),
        tier1=value.get("tier1"),
        tier2=value.get("tier2"),
        created_at=str(created),
    )


def _tokens(record: MessageRecord) -> tuple[int, int, int]:
    return (
        count_tokens(record.tier1 or ""),
        count_tokens(record.tier2 or ""),
        count_tokens(record.text),
    )


async def session_view(
    store: TieredMemoryStore,
    engine: MemoryEngine,
    scope: str,
    session_id: str,
    *,
    budget: int | None = None,
    soft_budget: int | None = None,
    policy: ContextPolicy | None = None,
) -> SessionView | None:
    """The session's messages, in the window and archived; None when the scope has none.

    A message in the window belongs to the scope when its ``user_id`` is the scope (or
    the session id is, for a per-session scope); archived messages are the scope's
    episodic memories of the session.
    """
    log = await _log(store)
    live = [r for r in await log.aread(session_id) if r.user_id == scope or session_id == scope]
    episodes = [
        m
        for m in await engine.amemories(scope, kinds="episodic", statuses=None, limit=MEMORY_CAP)
        if m.session_id == session_id
    ]
    if not live and not episodes:
        return None
    rows: dict[int, MessageRow] = {r.seq: MessageRow(r, _tokens(r), None) for r in live}
    for episode in episodes:
        record = _record_of(episode)
        if record is not None and record.seq not in rows:
            rows[record.seq] = MessageRow(record, _tokens(record), episode)
    semantic = await engine.amemories(scope, kinds="semantic", statuses=None, limit=MEMORY_CAP)
    summaries = [
        m
        for m in semantic
        if m.value.get("session_id") == session_id and "summary" in (m.category or "")
    ]
    settings = store.settings
    builder = ContextBuilder(
        budget=budget or settings.context_token_limit,
        soft_budget=soft_budget or (None if budget else settings.soft_budget),
        policy=policy or settings.context_policy,
    )
    return SessionView(session_id, [rows[k] for k in sorted(rows)], summaries, builder, settings)


def _time(text: str) -> datetime:
    return parse_timestamp(text, field="created_at").astimezone(timezone.utc)


async def turn_context(
    store: TieredMemoryStore,
    view: SessionView,
    scope: str,
    turn: str,
    *,
    with_memories: bool = True,
) -> TurnContext | None:
    """The context the model was given for ``turn`` (a message id), rebuilt.

    The window then: the session's messages up to the turn, less those archived before
    the reply to it was stored (the next message's time; now for the last one). Tier
    levels are the messages' current ones (an archived message's is 1). The memories are
    the scope's semantic memories that a search for the turn's text found as of that
    time (``as_of``), as the short-term memory's own search does.
    """
    index = next((i for i, row in enumerate(view.rows) if row.record.id == turn), None)
    if index is None:
        return None
    rows = view.rows
    following = rows[index + 1].record.created_at if index + 1 < len(rows) else None
    cutoff = _time(following) if following else datetime.now(timezone.utc)
    window = [
        row.record
        for row in rows[: index + 1]
        if row.archived is None or row.archived.created_at > cutoff
    ]
    memories: Sequence[Any] = []
    text = rows[index].record.text[:_QUERY_CHARS].strip()
    if with_memories and text:
        memories = await store.asearch(
            namespace_for(scope, "semantic"),
            query=text,
            limit=view.settings.user_context_k,
            as_of=cutoff + timedelta(microseconds=1),
        )
    messages = view.builder.build(window, memories)
    raw = [row.record.to_message() for row in rows[: index + 1]]
    return TurnContext(
        turn,
        rows[index].record.created_at,
        messages,
        count_message_tokens(messages),
        count_message_tokens(raw),
    )
