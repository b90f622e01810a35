"""ChatMemory: the session service every conversation surface goes through.

The chat graph's nodes, the ``create_agent`` middleware, the agent nodes and the CLI's
``ingest`` load a turn's context, save its messages and facts, answer tier requests and
episodic searches, and consolidate through one object, for one store and one preset.
It serves every session: it holds the message log (the short-term memory of all
sessions), the store (long-term memory), the preset's window policy, the tierer and the
summariser, and answers these operations, each a flow (see
:mod:`~langmem_tiers.conversation.flows`) with a sync method and an ``a``-prefixed async twin:

=====================  ===================================================================
operation              does
=====================  ===================================================================
``load``               the session's tiered view (short-term memory) and ``user_context``:
                       the user's best distinct semantic and procedural memories for the
                       message, except those whose messages the view still shows
``request_tiers``      raises messages' tier levels (persisted), refuses unknown ids
``search_episodic``    hybrid-ranked search of the user's episodic memory (archived messages)
``save``               stores messages with tiers; the user's facts and preferences go to
                       long-term memory; says whether the window rule now wants to
                       consolidate (it does not consolidate itself)
``consolidate``        the preset's consolidation: long-term memory first, then removal
``save_turn``          ``save``, then ``consolidate`` when the window rule wants it
=====================  ===================================================================

Memories are written through :meth:`ChatMemory.writer`: the memory engine's write
pipeline with the package's store, so a fact that contradicts an older one supersedes it
(the old one is ``superseded``, with ``valid_until``, and leaves searches). Long-term
memory failures never stop a turn: ``load`` and ``save`` log them and report
them in ``errors``; short-term memory still gets the messages. Memories written:

- ``(user, "semantic")``, ``fact:<session>:<message id>``: the value of a fact
  (:func:`~langmem_tiers.short_term.archiving.fact_value`), ``{"content"`` (the message's
  fact sentences in the third person, see :mod:`~langmem_tiers.conversation.facts`),
  ``"facts"`` (its tier-1 facts), ``"category": "user_fact"``, ``"speaker"`` (``user``, or
  ``assistant`` for a plan it stated), ``"session_id"``, ``"source_message_ids"}``; with an
  engine, all of a turn's facts in one call of its write pipeline. Presets whose
  short-term memory already stores facts per user message (``dual``) keep theirs instead.
- ``(user, "procedural")``, ``preference:<key>:<value>``: ``{"content"`` (a sentence),
  ``"key"`` (``likes``, ``prefers``, ``favorite_color``...), ``"value"``,
  ``"reinforcement_count"`` (how many times the user said it), ``"source_session_ids"}``.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     memory = ChatMemory(store)
    ...     saved = memory.save("s1", "u1", [HumanMessage("I prefer tea over coffee."),
    ...                                       AIMessage("Noted.")])
    ...     later = memory.load("s2", "u1", "What should I drink?")
    >>> saved.ids, later.user_context
    (['m1', 'm2'], ['The user prefers tea.'])
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

from langmem_tiers.config import Settings
from langmem_tiers.conversation.facts import (
    PreferenceMemory,
    distinct_memories,
    extract_memories,
    preference_sentence,
)
from langmem_tiers.conversation.flows import Call, Flow, adrive, drive, twin
from langmem_tiers.errors import ConfigurationError, InvalidTierError, NotFoundError
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.short_term.archiving import fact_session_id, fact_write
from langmem_tiers.short_term.context import tier_metadata
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.memory import AddResult, ShortTermMemory
from langmem_tiers.short_term.policies import ConsolidationPlan, TokenCosts, WindowPolicy
from langmem_tiers.short_term.presets import Preset, build_policy, get_preset, open_log
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.short_term.writer import MemoryWriter, memory_writer
from langmem_tiers.tiers import OfflineSummarizer, OfflineTierer
from langmem_tiers.tiers.base import MessageTiers, Summarizer, Tierer
from langmem_tiers.tiers.tokens import TokenCounter

if TYPE_CHECKING:
    from langmem_tiers.long_term.engine.engine import MemoryEngine

__all__ = [
    "ChatMemory",
    "ConsolidationOutcome",
    "LoadedMemory",
    "SavedTurn",
    "SearchOutcome",
    "TierOutcome",
    "episode_line",
    "memory_line",
    "storable",
]

logger = logging.getLogger(__name__)

_QUERY_CHARS = 2_000  # a search query is the user's message, cut to this
_LINE_CHARS = 600  # one memory or search result shown to the model


class LoadedMemory(NamedTuple):
    """What ``load`` found."""

    context: list[BaseMessage]
    """The session's tiered view (short-term memory and this session's summaries)."""
    user_context: list[str]
    """The user's memories (from other sessions, or of this session's archived messages),
    best first."""
    errors: list[str]
    """Long-term memory failures (the view was still built)."""


class TierOutcome(NamedTuple):
    """What became of one tier request."""

    message_id: str
    level: int
    status: str
    """``raised``, ``refused`` (no such message in this session, or a bad level) or ``failed``."""
    detail: str


class SearchOutcome(NamedTuple):
    """What an episodic search found."""

    query: str
    lines: list[str]
    """``- [session/id] who: text`` lines, best first."""
    error: str | None
    """Why the search failed (None when it ran)."""


class SavedTurn(NamedTuple):
    """What ``save`` did."""

    ids: list[str]
    """Short-term memory ids of the saved messages, in order."""
    consolidation_due: bool
    """The preset's window rule wants a consolidation now."""
    errors: list[str]
    """Long-term memory failures (the messages are in short-term memory regardless)."""
    consolidated: tuple[str, ...] = ()
    """``save_turn``: the ids its consolidation moved to long-term memory."""


class ConsolidationOutcome(NamedTuple):
    """What ``consolidate`` did."""

    consolidated: list[str]
    """Ids moved from the window to long-term memory."""
    error: str | None
    """Why it failed (the window is as it was; the next turn retries)."""


class _DeferredWindow(WindowPolicy):
    """The preset's window with its consolidation left to ``consolidate``."""

    def __init__(self, inner: WindowPolicy) -> None:
        self.inner = inner
        self.name = inner.name
        self.summarises = inner.summarises

    @property
    def read_limit(self) -> int | None:
        return self.inner.read_limit

    @property
    def consolidates(self) -> bool:
        return False

    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        return None


def _score(item: Item) -> float:
    score = getattr(item, "score", None)
    return float(score) if isinstance(score, (int, float)) else 0.0


def _cut(text: str, limit: int = _LINE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def memory_line(item: Item) -> str:
    """How a semantic or procedural memory is shown in ``user_context``.

    >>> from datetime import datetime, timezone
    >>> now = datetime.now(timezone.utc)
    >>> memory_line(Item(value={"content": "The user likes jazz.", "reinforcement_count": 3},
    ...                  key="k", namespace=("u1", "procedural"), created_at=now, updated_at=now))
    'The user likes jazz. (said 3 times)'
    """
    line = _cut(str(item.value.get("content", "")))
    count = item.value.get("reinforcement_count")
    if isinstance(count, int) and count > 1:
        line += f" (said {count} times)"
    return line


def episode_line(item: Item) -> str:
    """How an archived message found by a search is shown: ``- [session/id] who: text``."""
    value = item.value
    where = f"{value.get('session_id', '?')}/{value.get('message_id', item.key)}"
    who = {"human": "user", "ai": "assistant"}.get(str(value.get("actor")), "message")
    return f"- [{where}] {who}: {_cut(str(value.get('content', '')))}"


def storable(message: BaseMessage) -> bool:
    """Whether short-term memory keeps ``message``: it has text or tool calls.

    >>> from langchain_core.messages import AIMessage
    >>> storable(AIMessage("")), storable(AIMessage("Noted."))
    (False, True)
    """
    return bool(message.text.strip()) or bool(getattr(message, "tool_calls", None))


def _from_session(item: Item, session_id: str) -> bool:
    return fact_session_id(item.value) == session_id


def _in_view(item: Item, session_id: str, window: set[str]) -> bool:
    """Whether the session's view already has what ``item`` says: a memory of this session
    whose messages are still in the window (at any tier). Once they were archived, the
    memory is what is left of them in the prompt, so it may be shown."""
    if not _from_session(item, session_id):
        return False
    value = item.value
    metadata = value.get("metadata")
    ids = value.get("source_message_ids")
    if not ids and isinstance(metadata, dict):
        ids = metadata.get("source_message_ids")
    if not isinstance(ids, list) or not ids:
        return True
    return any(str(i) in window for i in ids)


def _window_ids(context: Sequence[BaseMessage]) -> set[str]:
    return {
        str(tier_metadata(m)["message_id"]) for m in context if "message_id" in tier_metadata(m)
    }


def _view_memory_keys(context: Sequence[BaseMessage]) -> set[str]:
    keys: set[str] = set()
    for message in context:
        if message.type == "system":
            keys.update(str(k) for k in tier_metadata(message).get("memories", []))
    return keys


class ChatMemory:
    """Short-term and long-term memory of many chat sessions: the session service.

    Args:
        store: long-term memory (any LangGraph ``BaseStore``; the package's
            ``TieredMemoryStore`` ranks searches by the hybrid score). ``None``: the store
            the graph was compiled with, found at run time with ``get_store()``.
        preset: ``tiered`` (default), ``moving_window``, ``reset``, ``dual`` or a ``Preset``.
        settings: limits (``max_regenerations``, ``user_context_k``...); from the
            environment when ``None``.
        log: the message log of every session (default: the preset's kind; an ``sql`` log
            shares the store's connection when the store has one).
        directory: where a ``jsonl`` log keeps its files.
        tierer / summarizer: default to the offline ones.
        token_counter: counts a text's tokens for the view's budget.
        recent_raw: the newest messages always shown raw.
        engine: when given, the user's facts and preferences are written through its
            pipeline (duplicates skipped, contradictions resolved, versions and events
            kept) instead of plain store puts. It must run on the same store.
    """

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        preset: str | Preset = "tiered",
        settings: Settings | None = None,
        log: MessageLog | None = None,
        directory: str | None = None,
        tierer: Tierer | None = None,
        summarizer: Summarizer | None = None,
        token_counter: TokenCounter | None = None,
        recent_raw: int = 2,
        engine: MemoryEngine | None = None,
    ) -> None:
        self.preset = get_preset(preset)
        self.engine = engine
        self.settings = settings if settings is not None else Settings.from_env()
        self._store: BaseStore | None = require_store(store, where="ChatMemory", optional=True)
        self.log = log if log is not None else self._default_log(directory)
        self.policy = build_policy(self.preset.window, self.settings)
        self.tierer = tierer if tierer is not None else OfflineTierer()
        self.summarizer = summarizer if summarizer is not None else OfflineSummarizer()
        self.token_counter = token_counter
        self.recent_raw = recent_raw
        self._writer: tuple[BaseStore, MemoryWriter] | None = None

    def _default_log(self, directory: str | None) -> MessageLog:
        conn = getattr(self._store, "conn", None)
        if self.preset.log == "sql" and conn is not None:
            # Messages go to the store's own database, on its connection.
            return SqlMessageLog(conn)
        return open_log(self.preset.log, self.settings, directory=directory)

    # -- parts ---------------------------------------------------------------------------

    @property
    def consolidates(self) -> bool:
        """Whether the preset ever moves messages to long-term memory."""
        return self.policy.consolidates

    def store(self) -> BaseStore:
        """The store given, or the one the running graph was compiled with."""
        if self._store is not None:
            return self._store
        try:
            from langgraph.config import get_store

            found: BaseStore | None = get_store()
        except RuntimeError:
            found = None
        if found is None:
            raise ConfigurationError(
                "ChatMemory has no store: pass store=TieredMemoryStore.from_url(...) (or any "
                "BaseStore), or compile the graph with store=... and run the node inside it."
            )
        return found

    def writer(self) -> MemoryWriter:
        """How memories are written: the engine's write pipeline for the package's store.

        Every memory the graph writes (the user's facts and preferences, summaries and
        archived messages) goes through it, so a fact that contradicts an older one
        supersedes it.
        """
        store = self.store()
        if self._writer is None or self._writer[0] is not store:
            self._writer = (store, memory_writer(store))
        return self._writer[1]

    def memory(self, session_id: str, user_id: str | None = None) -> ShortTermMemory:
        """The short-term memory of a session (cheap: the log holds the messages)."""
        return self._memory(session_id, user_id, deferred=False)

    def _memory(self, session_id: str, user_id: str | None, *, deferred: bool) -> ShortTermMemory:
        return ShortTermMemory(
            session_id,
            log=self.log,
            store=self.store(),
            policy=_DeferredWindow(self.policy) if deferred else self.policy,
            tierer=self.tierer,
            summarizer=self.summarizer,
            settings=self.settings,
            user_id=user_id,
            target=self.preset.target,
            view=self.preset.view,
            token_counter=self.token_counter,
            recent_raw=self.recent_raw,
            writer=self.writer(),
        )

    # -- flows -----------------------------------------------------------------------------

    def load_flow(self, session_id: str, user_id: str | None, query: str) -> Flow[LoadedMemory]:
        """The session's view and the user's context for ``query``."""
        stm = self._memory(session_id, user_id, deferred=False)
        context: list[BaseMessage] = yield twin(stm, "context")
        errors: list[str] = []
        user_context: list[str] = []
        store = self.store()
        limit = self.settings.user_context_k
        # A NUL byte the user typed is no reason to recall nothing: it is not searched for.
        text = query[:_QUERY_CHARS].replace("\x00", " ").strip() or None
        ops = [
            # Over-fetch semantic memories: this session's own are dropped below.
            SearchOp(namespace_for(stm.scope, "semantic"), query=text, limit=3 * limit),
            SearchOp(namespace_for(stm.scope, "procedural"), query=text, limit=limit),
        ]
        try:
            semantic, procedural = yield Call(store.batch, store.abatch, (ops,))
        except Exception as err:  # graceful degradation: answer without long-term memory
            logger.warning("session %s: loading the user's memories failed: %r", session_id, err)
            errors.append(
                f"load_memory: long-term memory unavailable ({type(err).__name__}: {err}); "
                "answering without user_context"
            )
        else:
            shown = _view_memory_keys(context)
            window = _window_ids(context)
            candidates = [
                item
                for item in [*semantic, *procedural]
                if item.key not in shown and not _in_view(item, session_id, window)
            ]
            candidates.sort(key=_score, reverse=True)  # stable: the store's order on ties
            # Five slots, five different things: a memory a better one already says
            # (a preference stored as a fact and as a preference) is skipped.
            user_context = [memory_line(item) for item in distinct_memories(candidates, limit)]
        return LoadedMemory(context, user_context, errors)

    def request_tiers_flow(
        self, session_id: str, user_id: str | None, requests: Sequence[tuple[int, str]]
    ) -> Flow[tuple[list[TierOutcome], list[BaseMessage]]]:
        """Raise each ``(level, message_id)``; answers the outcomes and the new view."""
        stm = self._memory(session_id, user_id, deferred=False)
        outcomes: list[TierOutcome] = []
        for level, message_id in requests:
            try:
                record = yield twin(stm, "request_tier", message_id, level)
            except (NotFoundError, InvalidTierError) as err:
                logger.warning("session %s: refused tier request: %s", session_id, err)
                outcomes.append(TierOutcome(message_id, level, "refused", str(err)))
            except Exception as err:
                logger.warning("session %s: tier request failed: %r", session_id, err)
                outcomes.append(
                    TierOutcome(message_id, level, "failed", f"{type(err).__name__}: {err}")
                )
            else:
                tier = record.required_tier_level
                shown = "its full text" if tier >= 3 else "its summary"
                detail = f"{message_id} is now shown at tier {tier} ({shown})."
                outcomes.append(TierOutcome(message_id, level, "raised", detail))
        context: list[BaseMessage] = yield twin(stm, "context")
        return outcomes, context

    def search_flow(
        self, session_id: str, user_id: str | None, query: str, limit: int | None = None
    ) -> Flow[SearchOutcome]:
        """The user's archived messages for ``query``, hybrid-ranked by the store."""
        scope = user_id if user_id is not None else session_id
        store = self.store()
        op = SearchOp(
            namespace_for(scope, "episodic"),
            query=query[:_QUERY_CHARS],
            limit=limit if limit is not None else self.settings.user_context_k,
        )
        try:
            (items,) = yield Call(store.batch, store.abatch, ([op],))
        except Exception as err:
            logger.warning("session %s: episodic search failed: %r", session_id, err)
            return SearchOutcome(query, [], f"{type(err).__name__}: {err}")
        return SearchOutcome(query, [episode_line(item) for item in items], None)

    def save_flow(
        self,
        session_id: str,
        user_id: str | None,
        messages: Sequence[BaseMessage],
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> Flow[SavedTurn]:
        """Store ``messages`` in short-term memory and the user's facts in long-term memory.

        ``tiers``: tiers already made for the messages (``None`` entries are tiered by the
        tierer), e.g. written by the answer's own model call.
        """
        stm = self._memory(session_id, user_id, deferred=True)
        # One pass: the add answers the stored messages and the window it read with them.
        added: AddResult = yield twin(stm, "add_messages", list(messages), tiers=tiers)
        errors: list[str] = []
        try:
            yield from self._remember_flow(added.added, session_id=session_id, scope=stm.scope)
        except Exception as err:  # graceful degradation: the messages are in STM already
            logger.warning("session %s: storing the user's memories failed: %r", session_id, err)
            errors.append(
                f"save: long-term memory unavailable ({type(err).__name__}: {err}); the "
                "messages are in short-term memory, the user's facts were not stored"
            )
        due = self.policy.consolidates and (
            self.policy.plan(added.window, stm.builder.costs) is not None
        )
        return SavedTurn(list(added.ids), due, errors)

    def consolidate_flow(self, session_id: str, user_id: str | None) -> Flow[ConsolidationOutcome]:
        """Run the preset's consolidation (no loss: persisted before removed)."""
        stm = self._memory(session_id, user_id, deferred=False)
        result = yield twin(stm, "consolidate")
        error = None if result.error is None else f"{type(result.error).__name__}: {result.error}"
        return ConsolidationOutcome(list(result.consolidated), error)

    def save_turn_flow(
        self, session_id: str, user_id: str | None, messages: Sequence[BaseMessage]
    ) -> Flow[SavedTurn]:
        """``save``, then the preset's consolidation when its window rule wants one.

        ``consolidation_due`` of the answer says whether one ran; a failed one is listed in
        ``errors`` (the window is kept and the next turn retries).
        """
        saved = yield from self.save_flow(session_id, user_id, messages)
        if not saved.consolidation_due:
            return saved
        done = yield from self.consolidate_flow(session_id, user_id)
        errors = list(saved.errors)
        if done.error is not None:
            errors.append(f"consolidate: {done.error} (the window was kept; next turn retries)")
        return SavedTurn(saved.ids, True, errors, tuple(done.consolidated))

    def _remember_flow(
        self, records: Sequence[MessageRecord], *, session_id: str, scope: str
    ) -> Flow[None]:
        # The dual preset's short-term memory stores facts per user message itself.
        found = extract_memories(records, facts=self.preset.target != "user")
        if not found.facts and not found.preferences:
            return None
        facts = [
            fact_write(
                scope,
                session_id,
                fact.message_ids,
                fact.content,
                facts=fact.facts,
                speaker=fact.speaker,
            )
            for fact in found.facts
        ]
        if self.engine is not None:
            yield from self._remember_with_engine(facts, found.preferences, scope=scope)
        else:
            yield from self._remember_with_puts(
                facts, found.preferences, session_id=session_id, scope=scope
            )
        return None

    def _remember_with_engine(
        self, facts: list[PutOp], preferences: Sequence[PreferenceMemory], *, scope: str
    ) -> Flow[None]:
        """Through the engine's write pipeline: duplicates, conflicts, versions, events."""
        engine = self.engine
        assert engine is not None
        if facts:
            yield Call(engine.write_many, engine.awrite_many, (facts,))
        for preference in preferences:
            # One call per mention: the engine counts each as a reinforcement.
            for _ in preference.message_ids:
                yield Call(
                    engine.set_procedural,
                    engine.aset_procedural,
                    (scope, preference.memory_key, preference.value),
                    {"content": preference_sentence(preference.key, preference.value)},
                )
        return None

    def _remember_with_puts(
        self,
        facts: list[PutOp],
        preferences: Sequence[PreferenceMemory],
        *,
        session_id: str,
        scope: str,
    ) -> Flow[None]:
        """Through the store's ``batch`` (any ``BaseStore``)."""
        store = self.store()
        puts = list(facts)
        namespace = namespace_for(scope, "procedural")
        keys = [p.memory_key for p in preferences]
        existing: list[Any] = []
        if keys:
            existing = yield Call(store.batch, store.abatch, ([GetOp(namespace, k) for k in keys],))
        for preference, item in zip(preferences, existing, strict=True):
            old = item.value if isinstance(item, Item) else {}
            count = int(old.get("reinforcement_count", 0)) + len(preference.message_ids)
            sessions = [s for s in old.get("source_session_ids", []) if s != session_id]
            puts.append(
                PutOp(
                    namespace,
                    preference.memory_key,
                    {
                        "content": preference_sentence(preference.key, preference.value),
                        "key": preference.key,
                        "value": preference.value,
                        "reinforcement_count": count,
                        "source_session_ids": [*sessions, session_id],
                    },
                    index=["content"],
                )
            )
        writer = self.writer()
        yield Call(writer.write_many, writer.awrite_many, (puts,))
        return None

    # -- sync and async methods ------------------------------------------------------------

    def load(self, session_id: str, user_id: str | None, query: str) -> LoadedMemory:
        """The session's tiered view and ``user_context`` for ``query``."""
        return drive(self.load_flow(session_id, user_id, query))

    async def aload(self, session_id: str, user_id: str | None, query: str) -> LoadedMemory:
        """Async twin of :meth:`load`."""
        return await adrive(self.load_flow(session_id, user_id, query))

    def request_tiers(
        self, session_id: str, user_id: str | None, requests: Sequence[tuple[int, str]]
    ) -> tuple[list[TierOutcome], list[BaseMessage]]:
        """Raise tier levels (``(level, message_id)`` pairs); answers outcomes and the view."""
        return drive(self.request_tiers_flow(session_id, user_id, requests))

    async def arequest_tiers(
        self, session_id: str, user_id: str | None, requests: Sequence[tuple[int, str]]
    ) -> tuple[list[TierOutcome], list[BaseMessage]]:
        """Async twin of :meth:`request_tiers`."""
        return await adrive(self.request_tiers_flow(session_id, user_id, requests))

    def search_episodic(
        self, session_id: str, user_id: str | None, query: str, limit: int | None = None
    ) -> SearchOutcome:
        """The user's archived messages for ``query``, best first."""
        return drive(self.search_flow(session_id, user_id, query, limit))

    async def asearch_episodic(
        self, session_id: str, user_id: str | None, query: str, limit: int | None = None
    ) -> SearchOutcome:
        """Async twin of :meth:`search_episodic`."""
        return await adrive(self.search_flow(session_id, user_id, query, limit))

    def save(
        self,
        session_id: str,
        user_id: str | None,
        messages: Sequence[BaseMessage],
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> SavedTurn:
        """Store messages (short-term) and the user's facts and preferences (long-term)."""
        return drive(self.save_flow(session_id, user_id, messages, tiers))

    async def asave(
        self,
        session_id: str,
        user_id: str | None,
        messages: Sequence[BaseMessage],
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> SavedTurn:
        """Async twin of :meth:`save`."""
        return await adrive(self.save_flow(session_id, user_id, messages, tiers))

    def save_turn(
        self, session_id: str, user_id: str | None, messages: Sequence[BaseMessage]
    ) -> SavedTurn:
        """Store a turn's messages and facts, and consolidate when the window rule wants it."""
        return drive(self.save_turn_flow(session_id, user_id, messages))

    async def asave_turn(
        self, session_id: str, user_id: str | None, messages: Sequence[BaseMessage]
    ) -> SavedTurn:
        """Async twin of :meth:`save_turn`."""
        return await adrive(self.save_turn_flow(session_id, user_id, messages))

    def consolidate(self, session_id: str, user_id: str | None) -> ConsolidationOutcome:
        """Run the preset's consolidation for a session."""
        return drive(self.consolidate_flow(session_id, user_id))

    async def aconsolidate(self, session_id: str, user_id: str | None) -> ConsolidationOutcome:
        """Async twin of :meth:`consolidate`."""
        return await adrive(self.consolidate_flow(session_id, user_id))
