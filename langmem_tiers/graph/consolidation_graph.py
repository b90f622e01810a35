"""Consolidation: a scope's episodic memories become semantic ones, idempotently.

Archived messages (episodic memories, ``(scope, "episodic")``) pile up as short-term
memory prunes. :func:`consolidate_episodes` (and the graph of
:func:`build_consolidation_graph`, for a schedule or Studio) turns them into summaries:

1. ``select_episodes``: the scope's episodes not consolidated yet (no
   ``consolidated_into_id``), grouped by session, oldest first. Nothing happens below
   ``Settings.consolidation_threshold`` episodes unless ``force``. Summaries an interrupted
   run already stored (found by their ``source_episodic_ids``) are reused, never redone.
2. ``summarize_sessions``: each session's remaining episodes are summarised (offline or
   LLM summariser) and stored as one semantic memory, key
   ``episodes:<session>:<hash of the episode keys>``, value ``{"content", "key_concepts",
   "category": "episode_summary", "session_id", "source_episodic_ids",
   "source_message_ids", "first_event_at", "last_event_at"}``.
3. ``mark_consolidated``: each episode gets ``consolidated_into_id`` (the summary's key)
   and ``consolidated_at``; episodes stay searchable.

The summary is written before any episode is marked, so a failure anywhere loses nothing
and a rerun finishes the job without a second summary. A failing session is reported in
``errors`` and left for the next run; the others go on.

Example:
    >>> from langmem_tiers import TieredMemoryStore, namespace_for
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     for i, text in enumerate(["We fly to Oslo on Friday.", "Great, I booked it."]):
    ...         store.put(namespace_for("u1", "episodic"), f"episode:s1:m{i + 1}",
    ...                   {"content": text, "session_id": "s1", "message_id": f"m{i + 1}",
    ...                    "actor": "human" if i == 0 else "ai",
    ...                    "event_timestamp": f"2026-01-0{i + 1}T10:00:00+00:00"})
    ...     first = consolidate_episodes(store, "u1", force=True)
    ...     again = consolidate_episodes(store, "u1", force=True)
    ...     summary = store.get(namespace_for("u1", "semantic"), first.summaries[0])
    >>> first.marked, again.episodes, summary.value["source_message_ids"]
    (2, 0, ['m1', 'm2'])
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_tiers.config import Settings
from langmem_tiers.errors import InvalidNamespaceError
from langmem_tiers.graph.chat import node_runnable
from langmem_tiers.graph.flows import Call, Flow, adrive, drive, twin
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.tiers import OfflineSummarizer
from langmem_tiers.tiers.base import Summarizer, Summary

__all__ = [
    "SUMMARY_CATEGORY",
    "ConsolidationInput",
    "ConsolidationReport",
    "ConsolidationState",
    "EpisodeGroup",
    "aconsolidate_episodes",
    "build_consolidation_graph",
    "consolidate_episodes",
    "consolidation_key",
]

logger = logging.getLogger(__name__)

SUMMARY_CATEGORY = "episode_summary"
"""``category`` of the semantic memories consolidation writes."""

_PAGE = 100
_INDEX = ["content"]


class EpisodeGroup(TypedDict):
    """The episodes of one session and the summary they go into."""

    session_id: str
    episodes: list[dict[str, Any]]
    """``{"key", "value"}`` of each episode, oldest first."""
    summary_key: str
    status: str
    """``new`` (to summarise), ``existing`` (summarised by an earlier run), ``stored``
    (summarised now) or ``failed``."""


class ConsolidationInput(TypedDict, total=False):
    """What a run of the consolidation graph is given."""

    scope: str
    """The user or agent whose episodes are consolidated."""
    force: bool
    """Consolidate even below ``Settings.consolidation_threshold`` episodes."""


class ConsolidationState(ConsolidationInput, total=False):
    """The consolidation graph's state."""

    episodes: int
    """Unconsolidated episodes found."""
    groups: list[EpisodeGroup]
    summaries: list[str]
    """Keys of the semantic memories written by this run."""
    reused: list[str]
    """Keys of summaries an interrupted earlier run had written."""
    marked: int
    """Episodes marked consolidated."""
    skipped: str | None
    """Why nothing was done (None when something was)."""
    errors: list[str]


class ConsolidationReport(NamedTuple):
    """What :func:`consolidate_episodes` did."""

    scope: str
    episodes: int
    summaries: list[str]
    reused: list[str]
    marked: int
    errors: list[str]
    skipped: str | None


def consolidation_key(session_id: str, episode_keys: Sequence[str]) -> str:
    """The key of the summary of these episodes (the same set gives the same key).

    >>> consolidation_key("s1", ["episode:s1:m2", "episode:s1:m1"]) == consolidation_key(
    ...     "s1", ["episode:s1:m1", "episode:s1:m2"])
    True
    """
    digest = hashlib.sha256("\n".join(sorted(episode_keys)).encode()).hexdigest()[:16]
    return f"episodes:{session_id}:{digest}"


def _when(value: Mapping[str, Any]) -> str:
    return str(value.get("event_timestamp") or "")


def _as_message(value: Mapping[str, Any]) -> BaseMessage:
    content = str(value.get("content", ""))
    return AIMessage(content) if value.get("actor") == "ai" else HumanMessage(content)


def _pages(
    store: BaseStore, namespace: tuple[str, ...], limit: int, **search: Any
) -> Flow[list[Item]]:
    items: list[Item] = []
    for offset in range(0, max(limit, 1), _PAGE):  # bounded: at most limit items scanned
        ops = [SearchOp(namespace, limit=_PAGE, offset=offset, **search)]
        (page,) = yield Call(store.batch, store.abatch, (ops,))
        items.extend(page)
        if len(page) < _PAGE:
            break
    return items


def select_flow(
    store: BaseStore, scope: str, *, threshold: int, force: bool, max_episodes: int
) -> Flow[tuple[int, list[EpisodeGroup], str | None]]:
    """Unconsolidated episodes grouped by session, with earlier runs' summaries reused."""
    found = yield from _pages(store, namespace_for(scope, "episodic"), max_episodes)
    fresh = [item for item in found if not item.value.get("consolidated_into_id")]
    if not fresh:
        return 0, [], "no unconsolidated episodes"
    if len(fresh) < threshold and not force:
        return (
            len(fresh),
            [],
            f"{len(fresh)} unconsolidated episodes, below the threshold {threshold}",
        )
    by_session: dict[str, list[Item]] = {}
    for item in fresh:
        by_session.setdefault(str(item.value.get("session_id") or "unknown"), []).append(item)
    groups: list[EpisodeGroup] = []
    semantic = namespace_for(scope, "semantic")
    for session_id, items in sorted(by_session.items()):
        items.sort(key=lambda i: (_when(i.value), i.key))
        earlier = yield from _pages(
            store,
            semantic,
            max_episodes,
            filter={"category": SUMMARY_CATEGORY, "session_id": session_id},
        )
        owner: dict[str, str] = {}
        for summary in earlier:
            for key in summary.value.get("source_episodic_ids") or []:
                owner.setdefault(str(key), summary.key)
        reused: dict[str, list[Item]] = {}
        remaining: list[Item] = []
        for item in items:
            if item.key in owner:
                reused.setdefault(owner[item.key], []).append(item)
            else:
                remaining.append(item)
        for summary_key, covered in reused.items():
            groups.append(_group(session_id, covered, summary_key, "existing"))
        if remaining:
            key = consolidation_key(session_id, [i.key for i in remaining])
            (stored,) = yield Call(store.batch, store.abatch, ([GetOp(semantic, key)],))
            groups.append(
                _group(session_id, remaining, key, "new" if stored is None else "existing")
            )
    return len(fresh), groups, None


def _group(session_id: str, items: Sequence[Item], key: str, status: str) -> EpisodeGroup:
    return {
        "session_id": session_id,
        "episodes": [{"key": i.key, "value": dict(i.value)} for i in items],
        "summary_key": key,
        "status": status,
    }


def summarize_flow(
    store: BaseStore, summarizer: Summarizer, scope: str, groups: Sequence[EpisodeGroup]
) -> Flow[tuple[list[EpisodeGroup], list[str]]]:
    """Summarise and store each ``new`` group; answers the groups (status updated) and errors."""
    out: list[EpisodeGroup] = []
    errors: list[str] = []
    for group in groups:
        if group["status"] != "new":
            out.append(group)
            continue
        values = [e["value"] for e in group["episodes"]]
        try:
            summary = yield twin(summarizer, "summarize", [_as_message(v) for v in values])
            if not isinstance(summary, Summary) or not summary.text.strip():
                raise ValueError(f"the summariser returned {summary!r:.80}, not a Summary")
            value = {
                "content": summary.text.strip(),
                "key_concepts": [str(c) for c in summary.key_concepts],
                "category": SUMMARY_CATEGORY,
                "session_id": group["session_id"],
                "source_episodic_ids": [e["key"] for e in group["episodes"]],
                "source_message_ids": [
                    str(v.get("message_id")) for v in values if v.get("message_id")
                ],
                "first_event_at": _when(values[0]) or None,
                "last_event_at": _when(values[-1]) or None,
            }
            put = PutOp(namespace_for(scope, "semantic"), group["summary_key"], value, index=_INDEX)
            yield Call(store.batch, store.abatch, ([put],))
        except Exception as err:  # this session waits for the next run; the others go on
            logger.warning(
                "scope %s: consolidating session %s failed: %r", scope, group["session_id"], err
            )
            errors.append(f"session {group['session_id']}: {type(err).__name__}: {err}")
            out.append({**group, "status": "failed"})
        else:
            out.append({**group, "status": "stored"})
    return out, errors


def mark_flow(
    store: BaseStore, scope: str, groups: Sequence[EpisodeGroup]
) -> Flow[tuple[int, list[str]]]:
    """Mark the episodes of summarised groups; answers how many, and errors."""
    now = datetime.now(timezone.utc).isoformat()
    puts = [
        PutOp(
            namespace_for(scope, "episodic"),
            episode["key"],
            {
                **episode["value"],
                "consolidated_into_id": group["summary_key"],
                "consolidated_at": now,
            },
            index=_INDEX,
        )
        for group in groups
        if group["status"] in ("stored", "existing")
        for episode in group["episodes"]
    ]
    if not puts:
        return 0, []
    try:
        yield Call(store.batch, store.abatch, (puts,))
    except Exception as err:  # the summaries are stored: the next run only marks
        logger.warning("scope %s: marking episodes failed: %r", scope, err)
        return 0, [f"marking episodes: {type(err).__name__}: {err}"]
    return len(puts), []


def _report(
    scope: str,
    episodes: int,
    groups: Sequence[EpisodeGroup],
    marked: int,
    errors: list[str],
    skipped: str | None,
) -> ConsolidationReport:
    return ConsolidationReport(
        scope=scope,
        episodes=episodes,
        summaries=[g["summary_key"] for g in groups if g["status"] == "stored"],
        reused=list(dict.fromkeys(g["summary_key"] for g in groups if g["status"] == "existing")),
        marked=marked,
        errors=errors,
        skipped=skipped,
    )


def _consolidate_flow(
    store: BaseStore,
    scope: str,
    *,
    summarizer: Summarizer,
    threshold: int,
    force: bool,
    max_episodes: int,
) -> Flow[ConsolidationReport]:
    episodes, groups, skipped = yield from select_flow(
        store, scope, threshold=threshold, force=force, max_episodes=max_episodes
    )
    groups, errors = yield from summarize_flow(store, summarizer, scope, groups)
    marked, mark_errors = yield from mark_flow(store, scope, groups)
    return _report(scope, episodes, groups, marked, errors + mark_errors, skipped)


def _checked_scope(scope: object) -> str:
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidNamespaceError(
            f"scope must be the user or agent id whose episodes to consolidate, got {scope!r}."
        )
    namespace_for(scope, "episodic")  # validates the id
    return scope


def consolidate_episodes(
    store: BaseStore,
    scope: str,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    force: bool = False,
    max_episodes: int = 5_000,
) -> ConsolidationReport:
    """Consolidate a scope's episodic memories into semantic ones (idempotent).

    Args:
        store: long-term memory.
        scope: the user or agent id.
        summarizer: default :class:`~langmem_tiers.tiers.OfflineSummarizer`.
        settings: ``consolidation_threshold``; the defaults when ``None``.
        force: run below the threshold.
        max_episodes: most episodes scanned in one run (the rest wait for the next).
    """
    settings = settings if settings is not None else Settings()
    return drive(
        _consolidate_flow(
            store,
            _checked_scope(scope),
            summarizer=summarizer if summarizer is not None else OfflineSummarizer(),
            threshold=settings.consolidation_threshold,
            force=force,
            max_episodes=max_episodes,
        )
    )


async def aconsolidate_episodes(
    store: BaseStore,
    scope: str,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    force: bool = False,
    max_episodes: int = 5_000,
) -> ConsolidationReport:
    """Async twin of :func:`consolidate_episodes`."""
    settings = settings if settings is not None else Settings()
    return await adrive(
        _consolidate_flow(
            store,
            _checked_scope(scope),
            summarizer=summarizer if summarizer is not None else OfflineSummarizer(),
            threshold=settings.consolidation_threshold,
            force=force,
            max_episodes=max_episodes,
        )
    )


def build_consolidation_graph(
    store: BaseStore,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    max_episodes: int = 5_000,
    checkpointer: Any = None,
    attach_store: bool = True,
    name: str = "consolidation",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The consolidation graph: ``select_episodes -> summarize_sessions -> mark_consolidated``.

    Run it on a schedule with ``{"scope": user_id}`` (``"force": True`` to ignore the
    threshold); it ends after ``select_episodes`` when there is nothing to do.
    ``attach_store=False`` compiles it without the store (a LangGraph API server brings
    its own); the nodes use ``store`` either way.
    """
    require_store(store, where="build_consolidation_graph")
    settings = settings if settings is not None else Settings()
    chosen = summarizer if summarizer is not None else OfflineSummarizer()

    def select(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        scope = _checked_scope(state.get("scope"))
        episodes, groups, skipped = yield from select_flow(
            store,
            scope,
            threshold=settings.consolidation_threshold,
            force=bool(state.get("force")),
            max_episodes=max_episodes,
        )
        return {
            "episodes": episodes,
            "groups": groups,
            "skipped": skipped,
            "summaries": [],
            "reused": [],
            "marked": 0,
            "errors": [],
        }

    def summarize(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        scope = _checked_scope(state.get("scope"))
        groups, errors = yield from summarize_flow(store, chosen, scope, state.get("groups") or [])
        return {"groups": groups, "errors": [*(state.get("errors") or []), *errors]}

    def mark(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        scope = _checked_scope(state.get("scope"))
        groups = state.get("groups") or []
        marked, errors = yield from mark_flow(store, scope, groups)
        report = _report(scope, int(state.get("episodes") or 0), groups, marked, [], None)
        return {
            "marked": marked,
            "summaries": report.summaries,
            "reused": report.reused,
            "errors": [*(state.get("errors") or []), *errors],
        }

    def after_select(state: Mapping[str, Any]) -> str:
        return "summarize_sessions" if state.get("groups") else END

    builder = StateGraph(ConsolidationState, input_schema=ConsolidationInput)
    builder.add_node("select_episodes", node_runnable("select_episodes", select))
    builder.add_node("summarize_sessions", node_runnable("summarize_sessions", summarize))
    builder.add_node("mark_consolidated", node_runnable("mark_consolidated", mark))
    builder.add_edge(START, "select_episodes")
    builder.add_conditional_edges("select_episodes", after_select, ["summarize_sessions", END])
    builder.add_edge("summarize_sessions", "mark_consolidated")
    builder.add_edge("mark_consolidated", END)
    return builder.compile(
        checkpointer=checkpointer, store=store if attach_store else None, name=name
    )
