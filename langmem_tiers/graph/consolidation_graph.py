"""The consolidation graph: the engine's episodic -> semantic consolidation, as a LangGraph.

Archived messages (episodic memories, ``(scope, "episodic")``) pile up as short-term
memory prunes. There is one consolidation, the memory engine's
(:mod:`~langmem_tiers.long_term.engine.consolidation`, also behind ``langmem-tiers
consolidate`` and ``POST /memory/consolidate``): the scope's unconsolidated episodes are
grouped by session (or by time), each group summarised into one semantic memory
(``category`` ``episode_summary``, with ``source_episodic_ids`` and the archived
``source_message_ids``) and its episodes marked with ``consolidated_into_id`` in the same
transaction, so a run cut off anywhere loses nothing and a rerun never summarises twice.

:func:`consolidate_episodes` runs it once for a scope, honouring
``Settings.consolidation_threshold`` unless ``force``; :func:`build_consolidation_graph`
gives the same two steps as a graph (``select_episodes -> consolidate_episodes``) for a
schedule or LangGraph Studio.

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
    ...     summary = store.get(namespace_for("u1", "semantic"), first.keys[0])
    >>> first.marked, again.episodes, summary.value["source_message_ids"]
    (2, 0, ['m1', 'm2'])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from langmem_tiers.config import Settings
from langmem_tiers.conversation.flows import Flow, adrive, drive, twin
from langmem_tiers.errors import ConfigurationError, InvalidNamespaceError
from langmem_tiers.graph.chat import node_runnable
from langmem_tiers.long_term.engine.consolidation import EPISODE_SUMMARY
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.tiers.base import Summarizer

__all__ = [
    "SUMMARY_CATEGORY",
    "ConsolidationInput",
    "ConsolidationReport",
    "ConsolidationState",
    "aconsolidate_episodes",
    "build_consolidation_graph",
    "consolidate_episodes",
    "consolidation_engine",
]

logger = logging.getLogger(__name__)

SUMMARY_CATEGORY = EPISODE_SUMMARY
"""``category`` of the semantic memories consolidation writes."""


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
    groups: int
    """Groups summarised (one semantic memory each)."""
    summaries: list[str]
    """Ids of the semantic memories written by this run."""
    keys: list[str]
    """Their keys in ``(scope, "semantic")``."""
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
    """Ids of the semantic memories written."""
    keys: list[str]
    """Their keys in ``(scope, "semantic")``."""
    marked: int
    errors: list[str]
    skipped: str | None


def consolidation_engine(
    store: BaseStore | MemoryEngine,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
) -> MemoryEngine:
    """The memory engine that consolidates ``store`` (the engine itself when given one)."""
    if isinstance(store, MemoryEngine):
        return store
    require_store(store, where="build_consolidation_graph")
    if not isinstance(store, TieredMemoryStore):
        raise ConfigurationError(
            "consolidation runs on the memory engine, which needs the package's "
            f"TieredMemoryStore; got {type(store).__name__}. Open one with "
            "TieredMemoryStore.from_url(...)."
        )
    # Consolidation is asked for explicitly here: adding episodes does not trigger it.
    return MemoryEngine(store, summarizer=summarizer, settings=settings, auto_consolidate=False)


def _checked_scope(scope: object) -> str:
    if not isinstance(scope, str) or not scope.strip():
        raise InvalidNamespaceError(
            f"scope must be the user or agent id whose episodes to consolidate, got {scope!r}."
        )
    namespace_for(scope, "episodic")  # validates the id
    return scope


def _select_flow(
    engine: MemoryEngine, scope: str, *, threshold: int, force: bool
) -> Flow[tuple[int, str | None]]:
    """How many episodes wait, and why nothing is to be done (None: consolidate)."""
    stats = yield twin(engine, "stats", scope)
    waiting = int(stats["unconsolidated_episodes"])
    if not waiting:
        return 0, "no unconsolidated episodes"
    if waiting < threshold and not force:
        return waiting, f"{waiting} unconsolidated episodes, below the threshold {threshold}"
    return waiting, None


def _consolidate_flow(engine: MemoryEngine, scope: str, waiting: int) -> Flow[dict[str, Any]]:
    """The engine's consolidation; a failure is reported, the groups done before it stay."""
    try:
        result = yield twin(engine, "consolidate", scope)
    except Exception as err:  # the rest waits for the next run
        logger.warning("scope %s: consolidation failed: %r", scope, err)
        marked = 0
        try:  # groups stored before the failure are done: say how many episodes they took
            stats = yield twin(engine, "stats", scope)
            marked = max(0, waiting - int(stats["unconsolidated_episodes"]))
        except Exception as again:
            logger.warning("scope %s: counting what was consolidated failed: %r", scope, again)
        return {
            "groups": 0,
            "summaries": [],
            "keys": [],
            "marked": marked,
            "errors": [f"{type(err).__name__}: {err}"],
        }
    return {
        "groups": result.groups,
        "summaries": [m.id for m in result.memories],
        "keys": [m.key for m in result.memories],
        "marked": result.episodes,
        "errors": [],
    }


def _run_flow(
    engine: MemoryEngine, scope: str, *, threshold: int, force: bool
) -> Flow[ConsolidationReport]:
    episodes, skipped = yield from _select_flow(engine, scope, threshold=threshold, force=force)
    done: dict[str, Any] = {"summaries": [], "keys": [], "marked": 0, "errors": []}
    if skipped is None:
        done = yield from _consolidate_flow(engine, scope, episodes)
    return ConsolidationReport(
        scope, episodes, done["summaries"], done["keys"], done["marked"], done["errors"], skipped
    )


def consolidate_episodes(
    store: BaseStore | MemoryEngine,
    scope: str,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    force: bool = False,
) -> ConsolidationReport:
    """Consolidate a scope's episodic memories into semantic ones (idempotent).

    Args:
        store: long-term memory (the package's store), or a memory engine on it.
        scope: the user or agent id.
        summarizer: the engine's default (offline, or its model's) when ``None``.
        settings: ``consolidation_threshold``; the store's settings when ``None``.
        force: run below the threshold.
    """
    engine = consolidation_engine(store, summarizer=summarizer, settings=settings)
    threshold = engine.settings.consolidation_threshold
    return drive(_run_flow(engine, _checked_scope(scope), threshold=threshold, force=force))


async def aconsolidate_episodes(
    store: BaseStore | MemoryEngine,
    scope: str,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    force: bool = False,
) -> ConsolidationReport:
    """Async twin of :func:`consolidate_episodes`."""
    engine = consolidation_engine(store, summarizer=summarizer, settings=settings)
    threshold = engine.settings.consolidation_threshold
    return await adrive(_run_flow(engine, _checked_scope(scope), threshold=threshold, force=force))


def build_consolidation_graph(
    store: BaseStore | MemoryEngine,
    *,
    summarizer: Summarizer | None = None,
    settings: Settings | None = None,
    checkpointer: Any = None,
    attach_store: bool = True,
    name: str = "consolidation",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The consolidation graph: ``select_episodes -> consolidate_episodes``.

    Run it on a schedule with ``{"scope": user_id}`` (``"force": True`` to ignore the
    threshold); it ends after ``select_episodes`` when there is nothing to do. Both nodes
    are the memory engine's (the one consolidation of the package). ``attach_store=False``
    compiles it without the store (a LangGraph API server brings its own); the nodes use
    ``store`` either way.
    """
    engine = consolidation_engine(store, summarizer=summarizer, settings=settings)
    threshold = engine.settings.consolidation_threshold

    def select(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        scope = _checked_scope(state.get("scope"))
        episodes, skipped = yield from _select_flow(
            engine, scope, threshold=threshold, force=bool(state.get("force"))
        )
        return {
            "episodes": episodes,
            "skipped": skipped,
            "groups": 0,
            "summaries": [],
            "keys": [],
            "marked": 0,
            "errors": [],
        }

    def consolidate(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        scope = _checked_scope(state.get("scope"))
        return (yield from _consolidate_flow(engine, scope, int(state.get("episodes") or 0)))

    def after_select(state: Mapping[str, Any]) -> str:
        return END if state.get("skipped") else "consolidate_episodes"

    builder = StateGraph(ConsolidationState, input_schema=ConsolidationInput)
    builder.add_node("select_episodes", node_runnable("select_episodes", select))
    builder.add_node("consolidate_episodes", node_runnable("consolidate_episodes", consolidate))
    builder.add_edge(START, "select_episodes")
    builder.add_conditional_edges("select_episodes", after_select, ["consolidate_episodes", END])
    builder.add_edge("consolidate_episodes", END)
    return builder.compile(
        checkpointer=checkpointer, store=engine.store if attach_store else None, name=name
    )
