"""ShortTermMemory: one session's window over a message log, with tiers and consolidation.

The engine combines independent parts: a :class:`~langmem_tiers.short_term.log.MessageLog`
(where messages live), a :class:`~langmem_tiers.short_term.policies.WindowPolicy` (what is
kept), a LangGraph ``BaseStore`` (long-term memory, reached only through its API), a
tierer and a summariser, and a :class:`~langmem_tiers.short_term.context.ContextBuilder`
(the model's view). Every operation is a flow (see :mod:`~langmem_tiers.short_term.effects`)
run by the sync method or its ``a``-prefixed async twin.

Adding messages:

1. the batch is validated whole (nothing is stored if any message is bad);
2. tiers are made in one call (except for messages whose tiers the caller gave, e.g.
   written by the answer's own model call); if the tierer fails, the messages are stored
   with tier 3 only and tiering is retried on a later add;
3. the batch is appended and the window read back in one log round trip;
4. the policy's consolidations run: long-term memory first, then removal (see
   :mod:`~langmem_tiers.short_term.archiving`). A failure there leaves the window as
   it was, is logged and reported in :attr:`AddResult.error`, and is retried next add.

Markers such as ``[REQUEST_TIER:3:m1]`` in added messages are stored as text: only the
caller (the regenerate loop, reading model output) calls :meth:`ShortTermMemory.request_tier`.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langgraph.store.memory import InMemoryStore
    >>> from langmem_tiers.short_term.log import InMemoryMessageLog
    >>> from langmem_tiers.short_term.policies import SlidingWindow
    >>> stm = ShortTermMemory("s1", log=InMemoryMessageLog(), store=InMemoryStore(),
    ...                       policy=SlidingWindow(1), view="raw")
    >>> stm.add_messages([HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye")]).ids
    ['m1', 'm2', 'm3']
    >>> [m.content for m in stm.context()]
    ['hello', 'bye']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from operator import is_
from typing import Any, Literal, NamedTuple

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, SearchItem, SearchOp

from langmem_tiers.config import Settings
from langmem_tiers.errors import (
    ConfigurationError,
    InvalidContentError,
    ModelError,
    NotFoundError,
    ValidationError,
)
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.short_term.archiving import (
    FACT_CATEGORY,
    consolidate_flow,
    facts_flow,
    recover_flow,
)
from langmem_tiers.short_term.context import ContextBuilder
from langmem_tiers.short_term.effects import (
    Flow,
    LogCall,
    Runtime,
    StoreCall,
    TierCall,
    run_async,
    run_sync,
)
from langmem_tiers.short_term.log import (
    AppendOp,
    ClaimOp,
    ClearOp,
    MessageLog,
    ReadOp,
    ReleaseOp,
    SetTierLevelOp,
    UpdateTiersOp,
    new_lease_owner,
)
from langmem_tiers.short_term.policies import WindowPolicy
from langmem_tiers.short_term.records import (
    MessageDraft,
    MessageRecord,
    draft_from_message,
    parse_message_id,
    validate_level,
    validate_session_id,
)
from langmem_tiers.short_term.writer import MemoryWriter, memory_writer
from langmem_tiers.tiers.base import MessageTiers, Summarizer, Tierer
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = [
    "CONSOLIDATION_LEASE_SECONDS",
    "AddResult",
    "ConsolidationTarget",
    "ShortTermMemory",
    "ViewMode",
]

logger = logging.getLogger(__name__)

ConsolidationTarget = Literal["session", "user"]
"""``session``: memories of this session only; ``user``: the user's, across sessions."""
ViewMode = Literal["tiered", "raw"]
"""``tiered``: older messages may be shown tiered (``[m12|t1]``), as the settings'
``context_policy`` says; ``raw``: every message as it was added."""

_QUERY_CHARS = 2_000  # the search query is the latest user message, cut to this

CONSOLIDATION_LEASE_SECONDS = 120.0
"""How long a consolidation lease lasts unless renewed (it is renewed before each window).

Only an owner on another machine that dies holding it makes a session wait this long: a
dead owner on this machine is seen at once.
"""
_LEASE_TURNS = 8  # lease rounds per call; messages still left wait for the next add


def _rounds_limit(rounds: object) -> int | None:
    """Messages to read for ``rounds`` rounds (None: the policy decides)."""
    if rounds is None:
        return None
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValidationError(
            f"rounds must be a whole number >= 1, got {rounds!r}; pass how many recent "
            "rounds (a user message and its answer) to read, or leave it out."
        )
    return 2 * rounds


def _is_message_id(value: str) -> bool:
    try:
        parse_message_id(value)
    except NotFoundError:
        return False
    return True


class AddResult(NamedTuple):
    """What an add did."""

    ids: list[str]
    """Ids given to the added messages, in order."""
    consolidated: list[str]
    """Ids moved from the window to long-term memory by this add."""
    error: Exception | None
    """Why a consolidation failed (the window is as it was; the next add retries)."""
    added: tuple[MessageRecord, ...] = ()
    """The added messages as stored, with their tiers, in order."""
    window: tuple[MessageRecord, ...] = ()
    """The window as the add read it, the added messages included, before any
    consolidation the add made (what the policy planned over)."""


class ShortTermMemory:
    """The short-term memory of one session.

    Args:
        session_id: the conversation; message ids ``m1, m2...`` are unique within it.
        log: where messages are stored.
        store: long-term memory (any LangGraph ``BaseStore``).
        policy: the window policy.
        tierer: makes tiers 1 and 2 (``None``: messages are kept raw only).
        summarizer: summarises consolidated messages (needed by summarising policies).
        settings: limits, ``user_context_k`` and the context policy (``context_policy``,
            ``context_soft_budget``); the defaults when ``None``.
        user_id: the user the conversation is with: the scope of long-term memories
            (default: the session id), and stored with every message added, so the
            log lists and exports the user's sessions (``log.sessions_of(user_id)``).
        target: ``session`` or ``user`` (facts extracted per exchange, read across sessions).
        view: ``tiered`` or ``raw``.
        token_counter: counts tokens of a text (default: four characters a token).
        recent_raw: the newest messages always shown raw.
        writer: where memories are written; default ``memory_writer(store)`` (see
            :mod:`~langmem_tiers.short_term.writer`): the engine's write pipeline for the
            package's store, plain puts for another ``BaseStore``.
    """

    def __init__(
        self,
        session_id: str,
        *,
        log: MessageLog,
        store: BaseStore | None,
        policy: WindowPolicy,
        tierer: Tierer | None = None,
        summarizer: Summarizer | None = None,
        settings: Settings | None = None,
        user_id: str | None = None,
        target: ConsolidationTarget = "session",
        view: ViewMode = "tiered",
        token_counter: TokenCounter | None = None,
        recent_raw: int = 2,
        writer: MemoryWriter | None = None,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        self.user_id = None if user_id is None else validate_session_id(user_id, "user_id")
        if target not in ("session", "user"):
            raise ConfigurationError(f"target must be 'session' or 'user', got {target!r}.")
        if view not in ("tiered", "raw"):
            raise ConfigurationError(f"view must be 'tiered' or 'raw', got {view!r}.")
        store = require_store(store, where="ShortTermMemory", optional=True)
        if policy.consolidates and store is None:
            raise ConfigurationError(
                f"the {policy.name} policy moves messages to long-term memory, so it needs a "
                "store; pass store=InMemoryStore() or the package's store."
            )
        if policy.summarises and summarizer is None:
            raise ConfigurationError(
                f"the {policy.name} policy summarises messages, so it needs a summarizer; "
                "pass summarizer=OfflineSummarizer() or a model-backed one."
            )
        self.log = log
        self.store = store
        self.policy = policy
        self.tierer = tierer
        self.summarizer = summarizer
        self.settings = settings if settings is not None else Settings()
        self.target: ConsolidationTarget = target
        self.view: ViewMode = view
        self.scope = self.user_id if self.user_id is not None else self.session_id
        self.builder = ContextBuilder(
            token_counter=token_counter,
            budget=self.settings.context_token_limit,
            recent_raw=recent_raw,
            tiered=view == "tiered",
            policy=self.settings.context_policy,
            soft_budget=self.settings.soft_budget,
        )
        self.version = 0
        """Bumped by every change made through this object (the history caches its view by it)."""
        # A consolidation may have been persisted and not removed by an earlier process:
        # probe once before the first consolidation, and again after any failure.
        self._needs_recovery = True
        self._tiered_head: tuple[MessageRecord, ...] = ()
        """The window's leading records last seen tiered (see :meth:`_untiered`)."""
        if writer is None and store is not None:
            writer = memory_writer(store)
        self.writer = writer
        self._runtime = Runtime(log, store, tierer, summarizer, writer)

    # -- public API -------------------------------------------------------------------

    def add_messages(
        self,
        messages: Sequence[BaseMessage],
        *,
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> AddResult:
        """Store messages (one log round trip), then consolidate as the policy says.

        Args:
            messages: the messages, oldest first.
            tiers: tiers already made for them (one entry per message; ``None`` for a
                message the tierer should tier). Messages with given tiers are not sent
                to the tierer.

        Raises:
            InvalidContentError: a message or given tier is invalid; nothing was stored.
            BackendError: the log failed; nothing was acknowledged.
        """
        drafts = self._drafts(messages, tiers)
        return run_sync(self._add_flow(drafts), self._runtime)

    async def aadd_messages(
        self,
        messages: Sequence[BaseMessage],
        *,
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> AddResult:
        """Async twin of :meth:`add_messages`."""
        drafts = self._drafts(messages, tiers)
        return await run_async(self._add_flow(drafts), self._runtime)

    def context(self, *, rounds: int | None = None) -> list[BaseMessage]:
        """The model's view (see :mod:`~langmem_tiers.short_term.context`).

        Args:
            rounds: read only the last ``rounds`` rounds (a user message and its answer:
                two messages a round) of the window, for this call; by default the
                policy's own (the ``dual`` preset's ``sliding_window_rounds``).

        Raises:
            ValidationError: ``rounds`` is not a whole number >= 1.

        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from langmem_tiers.short_term.log import InMemoryMessageLog
        >>> from langmem_tiers.short_term.policies import SlidingWindow
        >>> stm = ShortTermMemory("s1", log=InMemoryMessageLog(), store=None,
        ...                       policy=SlidingWindow(10), view="raw")
        >>> _ = stm.add_messages([HumanMessage("q1"), AIMessage("a1"),
        ...                       HumanMessage("q2"), AIMessage("a2")])
        >>> [m.content for m in stm.context(rounds=1)]
        ['q2', 'a2']
        """
        return run_sync(self._context_flow(_rounds_limit(rounds)), self._runtime)

    async def acontext(self, *, rounds: int | None = None) -> list[BaseMessage]:
        """Async twin of :meth:`context`."""
        return await run_async(self._context_flow(_rounds_limit(rounds)), self._runtime)

    def records(self) -> list[MessageRecord]:
        """Every stored message of the session with its tiers, oldest first."""
        return run_sync(self._records_flow(), self._runtime)

    async def arecords(self) -> list[MessageRecord]:
        """Async twin of :meth:`records`."""
        return await run_async(self._records_flow(), self._runtime)

    def raw_messages(self) -> list[BaseMessage]:
        """Every stored message as it was added (ids set), oldest first."""
        return [r.to_message() for r in self.records()]

    async def araw_messages(self) -> list[BaseMessage]:
        """Async twin of :meth:`raw_messages`."""
        return [r.to_message() for r in await self.arecords()]

    def request_tier(self, message_id: str, level: int) -> MessageRecord:
        """Show ``message_id`` at ``level`` or richer from now on (never lowers).

        Raises:
            InvalidTierError: ``level`` is not 1, 2 or 3.
            NotFoundError: no such message in this session's window (never added here,
                of another session, or already archived).
        """
        return run_sync(self._request_tier_flow(message_id, level), self._runtime)

    async def arequest_tier(self, message_id: str, level: int) -> MessageRecord:
        """Async twin of :meth:`request_tier`."""
        return await run_async(self._request_tier_flow(message_id, level), self._runtime)

    def consolidate(self) -> AddResult:
        """Run the policy's consolidations now (also done by every add)."""
        return run_sync(self._consolidate_now_flow(), self._runtime)

    async def aconsolidate(self) -> AddResult:
        """Async twin of :meth:`consolidate`."""
        return await run_async(self._consolidate_now_flow(), self._runtime)

    def search_archive(self, query: str, *, limit: int = 5) -> list[SearchItem]:
        """Archived messages (episodic memories) of this session or user, best first."""
        return run_sync(self._search_flow(query, limit), self._runtime)

    async def asearch_archive(self, query: str, *, limit: int = 5) -> list[SearchItem]:
        """Async twin of :meth:`search_archive`."""
        return await run_async(self._search_flow(query, limit), self._runtime)

    def clear(self) -> list[str]:
        """Remove every message of the window (long-term memory is kept); answers the ids."""
        return run_sync(self._clear_flow(), self._runtime)

    async def aclear(self) -> list[str]:
        """Async twin of :meth:`clear`."""
        return await run_async(self._clear_flow(), self._runtime)

    # -- validation (pure, before any I/O) ----------------------------------------------

    def _drafts(
        self,
        messages: Sequence[BaseMessage],
        tiers: Sequence[MessageTiers | None] | None = None,
    ) -> list[MessageDraft]:
        if isinstance(messages, BaseMessage):
            messages = [messages]
        limit = self.settings.max_content_chars
        drafts = [
            draft_from_message(m, index=i, max_chars=limit)._replace(user_id=self.user_id)
            for i, m in enumerate(messages)
        ]
        if tiers is None:
            return drafts
        if isinstance(tiers, MessageTiers) or len(tiers) != len(drafts):
            raise InvalidContentError(
                f"tiers must have one entry (MessageTiers or None) per message: got "
                f"{tiers!r:.120} for {len(drafts)} messages."
            )
        for index, given in enumerate(tiers):
            if given is None:
                continue
            if not isinstance(given, MessageTiers) or not all(
                isinstance(t, str) and "\x00" not in t and len(t) <= limit for t in given
            ):
                raise InvalidContentError(
                    f"tiers[{index}] must be MessageTiers of two texts without NUL bytes, "
                    f"got {given!r:.120}; pass None to let the tierer make them."
                )
            drafts[index] = drafts[index]._replace(tier1=given.tier1, tier2=given.tier2)
        return drafts

    # -- flows ----------------------------------------------------------------------------

    def _tier_flow(self, messages: Sequence[BaseMessage]) -> Flow[list[MessageTiers] | None]:
        """Tiers for ``messages``, or None when there is no tierer or it failed."""
        if self.tierer is None or not messages:
            return None
        # A message with no text (an AI turn that only calls tools) is always shown raw:
        # it has nothing to tier, and must not make the rest of the batch fail.
        texted = [i for i, m in enumerate(messages) if m.text.strip()]
        out = [MessageTiers("", "")] * len(messages)
        if not texted:
            return out
        try:
            tiers = yield TierCall(tuple(messages[i] for i in texted))
            if not isinstance(tiers, list) or len(tiers) != len(texted):
                raise ModelError(
                    f"the tierer returned {len(tiers) if isinstance(tiers, list) else tiers!r} "
                    f"results for {len(texted)} messages."
                )
            for i, t in zip(texted, tiers, strict=True):
                if not isinstance(t.tier1, str) or not isinstance(t.tier2, str):
                    raise ModelError(f"the tierer returned {t!r:.120}, not two strings.")
                out[i] = MessageTiers(t.tier1, t.tier2)
            return out
        except Exception as err:
            logger.warning(
                "session %s: tiering failed (%s); messages kept raw, tiering retried later",
                self.session_id,
                err,
            )
            return None

    def _window_read(self) -> ReadOp:
        limit = None if self.policy.consolidates else self.policy.read_limit
        return ReadOp(self.session_id, limit)

    def _add_flow(self, drafts: list[MessageDraft]) -> Flow[AddResult]:
        if not drafts:
            return AddResult([], [], None)
        untiered = [i for i, d in enumerate(drafts) if d.tier1 is None]
        tiers = yield from self._tier_flow([drafts[i].to_message() for i in untiered])
        if tiers is not None:
            for i, t in zip(untiered, tiers, strict=True):
                drafts[i] = drafts[i]._replace(tier1=t.tier1, tier2=t.tier2)
        added, records = yield LogCall(
            (AppendOp(self.session_id, tuple(drafts)), self._window_read())
        )
        self.version += 1
        added_ids = {r.id for r in added}
        pending = [r for r in self._untiered(records) if r.id not in added_ids]
        retiered: list[MessageRecord] = []
        if pending:
            retiered, records = yield from self._retier_flow(pending, records)
        if self.target == "user" and self.store is not None:
            fresh = [r for r in records if r.id in added_ids] + retiered
            try:
                yield from facts_flow(fresh, session_id=self.session_id, scope=self.scope)
            except Exception as err:  # long-term memory down: the conversation goes on
                logger.warning("session %s: storing user facts failed: %s", self.session_id, err)
        window = tuple(records)
        consolidated, error = yield from self._consolidation_flow(records)
        return AddResult([r.id for r in added], consolidated, error, tuple(added), window)

    def _untiered(self, records: list[MessageRecord]) -> list[MessageRecord]:
        """The records of the window whose tiering failed (to retry).

        Records are immutable and a log answers the same objects for unchanged rows, so
        the leading records found tiered by the last add are not looked at again.
        """
        checked = self._tiered_head
        start = len(checked)
        if start > len(records) or not all(map(is_, checked, records)):
            start = 0
        pending: list[MessageRecord] = []
        end = len(records)
        for index in range(start, len(records)):
            if not records[index].tiered:
                end = min(end, index)
                pending.append(records[index])
        self._tiered_head = tuple(records[:end])
        return pending

    def _retier_flow(
        self, pending: list[MessageRecord], records: list[MessageRecord]
    ) -> Flow[tuple[list[MessageRecord], list[MessageRecord]]]:
        """Retry tiering of messages stored raw only; answers (retiered, window)."""
        tiers = yield from self._tier_flow([r.to_message() for r in pending])
        if tiers is None:
            return [], records
        updates = tuple((r.id, t) for r, t in zip(pending, tiers, strict=True))
        try:
            yield LogCall((UpdateTiersOp(self.session_id, updates),))
        except Exception as err:
            logger.warning("session %s: saving retried tiers failed: %s", self.session_id, err)
            return [], records
        new = dict(updates)
        records = [
            r.replace(tier1=new[r.id].tier1, tier2=new[r.id].tier2) if r.id in new else r
            for r in records
        ]
        return [r for r in records if r.id in new], records

    def _consolidation_flow(
        self, records: list[MessageRecord]
    ) -> Flow[tuple[list[str], Exception | None]]:
        """Consolidate what the policy asks for, holding the session's lease.

        ``records`` is the window as this caller saw it; when it asks for nothing (and no
        earlier failure needs finishing), no lease is taken, so a plain add costs nothing
        more. Otherwise the lease decides who consolidates: a caller that cannot take it
        leaves the work to the holder, which reads the window again after releasing, so
        messages added meanwhile are never left overflowing.
        """
        if not self.policy.consolidates:
            return [], None
        done: list[str] = []
        try:
            if self._needs_recovery:
                # Safe without the lease: it only removes messages a stored summary covers.
                done = yield from self._recover_flow(records)
                records = [r for r in records if r.id not in set(done)]
            if self.policy.plan(records, self.builder.costs) is None:
                return done, None
            owner = new_lease_owner()
            for _ in range(_LEASE_TURNS):
                # The window is read in the claim's batch: what the holder plans over is
                # what was there when it took the lease.
                taken, records = yield LogCall(
                    (
                        ClaimOp(self.session_id, owner, CONSOLIDATION_LEASE_SECONDS),
                        ReadOp(self.session_id, None),
                    )
                )
                if not taken:
                    break  # the holder consolidates, and reads again after it releases
                error: Exception | None = None
                try:
                    done.extend((yield from self._consolidate_window_flow(owner, records)))
                except Exception as err:
                    error = err
                yield from self._release_flow(owner)
                if error is not None:
                    raise error
                (records,) = yield LogCall((ReadOp(self.session_id, None),))
                if self.policy.plan(records, self.builder.costs) is None:
                    break
        except Exception as err:
            self._needs_recovery = True
            logger.warning(
                "session %s: consolidation failed, the window is kept as it was and the next "
                "add retries: %r",
                self.session_id,
                err,
            )
            return done, err
        return done, None

    def _consolidate_window_flow(self, owner: str, records: list[MessageRecord]) -> Flow[list[str]]:
        """With the lease held: run the policy's plans over the window ``records``."""
        done: list[str] = []
        for turn in range(len(records) + 1):  # each plan removes at least one record
            plan = self.policy.plan(records, self.builder.costs)
            if plan is None:
                break
            if turn:  # a summariser may be slow: keep the lease for the next window
                (kept,) = yield LogCall(
                    (ClaimOp(self.session_id, owner, CONSOLIDATION_LEASE_SECONDS),)
                )
                if not kept:
                    break
            yield from consolidate_flow(plan, session_id=self.session_id, scope=self.scope)
            self.version += 1
            covered = {r.id for r in plan.records}
            done.extend(r.id for r in plan.records)
            records = [r for r in records if r.id not in covered]
        return done

    def _recover_flow(self, records: list[MessageRecord]) -> Flow[list[str]]:
        recovered = yield from recover_flow(records, session_id=self.session_id, scope=self.scope)
        if recovered:
            logger.info(
                "session %s: finished an interrupted consolidation of %s",
                self.session_id,
                recovered,
            )
            self.version += 1
        self._needs_recovery = False
        return recovered

    def _release_flow(self, owner: str) -> Flow[None]:
        try:
            yield LogCall((ReleaseOp(self.session_id, owner),))
        except Exception as err:  # it expires on its own; the work itself is done
            logger.warning(
                "session %s: releasing the consolidation lease failed (it expires in %ss): %s",
                self.session_id,
                CONSOLIDATION_LEASE_SECONDS,
                err,
            )

    def _consolidate_now_flow(self) -> Flow[AddResult]:
        (records,) = yield LogCall((ReadOp(self.session_id, None),))
        consolidated, error = yield from self._consolidation_flow(records)
        return AddResult([], consolidated, error)

    def _records_flow(self) -> Flow[list[MessageRecord]]:
        (records,) = yield LogCall((ReadOp(self.session_id, None),))
        return list(records)

    def _memory_search(self, records: Sequence[MessageRecord]) -> SearchOp:
        query = next((r.text for r in reversed(records) if r.role == "human"), "")
        session_filter: dict[str, Any] | None = None
        if self.target == "session":
            # This session's summaries, not the facts of its messages: the window shows
            # those messages, and once they leave it their facts are the user's memories.
            session_filter = {"session_id": self.session_id, "category": {"$ne": FACT_CATEGORY}}
        return SearchOp(
            namespace_for(self.scope, "semantic"),
            filter=session_filter,
            limit=self.settings.user_context_k,
            query=query[:_QUERY_CHARS] or None,
        )

    def _context_flow(self, last: int | None = None) -> Flow[list[BaseMessage]]:
        limit = last if last is not None else self.policy.read_limit
        (records,) = yield LogCall((ReadOp(self.session_id, limit),))
        memories: list[Any] = []
        if self.store is not None:
            try:
                (memories,) = yield StoreCall((self._memory_search(records),))
            except Exception as err:  # graceful degradation: answer without long-term memory
                logger.warning(
                    "session %s: long-term memory unavailable, context built without it: %s",
                    self.session_id,
                    err,
                )
                memories = []
        return self.builder.build(records, memories)

    def _request_tier_flow(self, message_id: str, level: int) -> Flow[MessageRecord]:
        checked = validate_level(level)
        record = None
        if isinstance(message_id, str) and _is_message_id(message_id):
            (record,) = yield LogCall((SetTierLevelOp(self.session_id, message_id, checked),))
        if not isinstance(record, MessageRecord):
            logger.warning(
                "session %s: refused a tier request for %r, which is not in its window",
                self.session_id,
                message_id,
            )
            raise NotFoundError(
                f"message_id {message_id!r} is not in the window of session "
                f"{self.session_id!r}: it was never added to this session or was archived. "
                "Use an id shown in the context (like 'm12'), or search the archive."
            )
        self.version += 1
        return record

    def _search_flow(self, query: str, limit: int) -> Flow[list[SearchItem]]:
        session_filter = {"session_id": self.session_id} if self.target == "session" else None
        op = SearchOp(
            namespace_for(self.scope, "episodic"), filter=session_filter, limit=limit, query=query
        )
        (items,) = yield StoreCall((op,))
        return list(items)

    def _clear_flow(self) -> Flow[list[str]]:
        (removed,) = yield LogCall((ClearOp(self.session_id),))
        self.version += 1
        return list(removed)
