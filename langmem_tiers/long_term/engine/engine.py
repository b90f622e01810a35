"""``MemoryEngine``: long-term memory over time, per agent or user.

On top of a :class:`~langmem_tiers.long_term.store.store.TieredMemoryStore`, the engine keeps
three kinds of memory per scope (an agent or a user id):

* **episodic**: immutable, time-stamped events (:meth:`MemoryEngine.add_episodic`),
  consolidated into semantic memories (:meth:`MemoryEngine.consolidate`);
* **semantic**: facts and summaries, checked for contradictions and duplicates before
  they are stored (:meth:`MemoryEngine.add_semantic`), versioned
  (:meth:`MemoryEngine.update_semantic`, :meth:`MemoryEngine.evolution`), with validity
  intervals;
* **procedural**: key -> value preferences with reinforcement
  (:meth:`MemoryEngine.set_procedural`, :meth:`MemoryEngine.get_procedural`).

Every memory goes through one write pipeline (:meth:`MemoryEngine.write`, used by the
product's own writers: the chat graph, short-term consolidation, ``ingest``, the HTTP API):
validate, duplicate check, conflict check and strategy, version, event. A raw
``store.put`` of a memory namespace (LangMem's tools) goes through it too: the first engine
built on a store installs itself as the store's ``put_pipeline`` (:meth:`MemoryEngine.put_many`).

Memories decay and move through ``active``, ``superseded``, ``decayed``, ``deleted`` and
``compressed``; every change appends an event in its own transaction, so
:meth:`MemoryEngine.replay` rebuilds a scope as it was at any instant. One scope never
reads, changes or replays another's memories, whatever ids it passes.

Every method has an async twin (``a`` + name) that shares all of its logic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import PutOp

from langmem_tiers.config import ConflictStrategy, Settings
from langmem_tiers.long_term.engine import validate as check
from langmem_tiers.long_term.engine.conflicts import Merger
from langmem_tiers.long_term.engine.consolidation import count_unconsolidated_flow
from langmem_tiers.long_term.engine.contradiction import ContradictionChecker
from langmem_tiers.long_term.engine.entities import Entity, EntityDetail
from langmem_tiers.long_term.engine.lifecycle import scoped_memory_flow
from langmem_tiers.long_term.engine.models import (
    CompressionResult,
    ConsolidationResult,
    DecayResult,
    Event,
    Memory,
    MemoryVersion,
    ScopeCount,
    ScoredMemory,
    WriteResult,
)
from langmem_tiers.long_term.engine.operations import Operations
from langmem_tiers.long_term.engine.relations import Relation
from langmem_tiers.long_term.engine.steps import Db, Services, Steps, adrive, drive
from langmem_tiers.long_term.engine.upkeep import Upkeep
from langmem_tiers.long_term.store.erasure import ErasureResult, erase_scope_flow
from langmem_tiers.long_term.store.events import event_context
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.tiers.base import Summarizer

__all__ = ["MemoryEngine"]

Time = datetime | str
T = TypeVar("T")


class MemoryEngine:
    """Episodic, semantic and procedural memory of agents and users, over time.

    Args:
        store: the store the memories live in.
        model: a chat model for contradiction checks, summaries and merges; ``None``
            uses the offline rules, summariser and merge.
        settings: thresholds and the default conflict strategy (the store's settings
            when ``None``).
        checker, summarizer, merger: replace the model-backed or offline helpers.
        consolidation_gap: episodes without a session further apart than this are
            consolidated separately.
        max_group_size: episodes summarised together at most.
        conflict_candidates: near memories checked for a contradiction.
        min_conflict_confidence: a contradiction counts from this confidence on.
        decay_min_change: a decay pass records an importance that moved at least this much.
        auto_consolidate: consolidate when ``add_episodic`` brings a scope to
            ``settings.consolidation_threshold`` unconsolidated episodes (one add at a
            time per scope: adds made meanwhile leave it to the one consolidating).
        consolidation_due: when set, such an add first offers the scope to it (called
            with the scope, from any thread); if it returns True it has taken the scope
            (a server consolidates it off the request path) and the add returns at once,
            else the add consolidates as without it.

    Example:
        >>> from langmem_tiers import TieredMemoryStore
        >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        ...     engine = MemoryEngine(store)
        ...     first = engine.add_semantic("alice", "Alice lives in Berlin", subject="Alice")
        ...     moved = engine.add_semantic("alice", "Alice lives in Paris", subject="Alice")
        ...     old = engine.get("alice", first.memory.id)
        ...     hits = engine.retrieve("alice", "where does Alice live?")
        >>> moved.action, old.status, [h.content for h in hits]
        ('superseded', 'superseded', ['Alice lives in Paris'])
    """

    def __init__(
        self,
        store: TieredMemoryStore,
        *,
        model: BaseChatModel | None = None,
        settings: Settings | None = None,
        checker: ContradictionChecker | None = None,
        summarizer: Summarizer | None = None,
        merger: Merger | None = None,
        consolidation_gap: timedelta = timedelta(hours=1),
        max_group_size: int = 50,
        conflict_candidates: int = 5,
        min_conflict_confidence: float = 0.5,
        decay_min_change: float = 0.01,
        auto_consolidate: bool = True,
        consolidation_due: Callable[[str], bool] | None = None,
    ) -> None:
        self._consolidation_due = consolidation_due
        self._ops = Operations(
            store,
            model=model,
            settings=settings,
            checker=checker,
            summarizer=summarizer,
            merger=merger,
            consolidation_gap=consolidation_gap,
            max_group_size=max_group_size,
            conflict_candidates=conflict_candidates,
            min_conflict_confidence=min_conflict_confidence,
            decay_min_change=decay_min_change,
            auto_consolidate=auto_consolidate,
        )
        self._upkeep = Upkeep(self._ops)
        self._services = Services(
            store.db, self._ops.checker, self._ops.summarizer, self._ops.merger
        )
        # The first engine built on a store takes its raw puts of memories (a later one,
        # built for one job, does not displace it); ``store.put_pipeline`` can be set.
        if store.put_pipeline is None:
            store.put_pipeline = self

    @property
    def store(self) -> TieredMemoryStore:
        """The store the memories live in."""
        return self._ops.store

    @property
    def settings(self) -> Settings:
        """Thresholds, weights and the default conflict strategy."""
        return self._ops.settings

    # -- driving -------------------------------------------------------------------------
    def _drive(self, steps: Steps[T]) -> T:
        with event_context():
            return drive(steps, self._services)

    async def _adrive(self, steps: Steps[T]) -> T:
        with event_context():
            return await adrive(steps, self._services)

    def add_episodic_steps(
        self,
        scope: str,
        content: str,
        session_id: str | None,
        event_timestamp: Time | None,
        actor: str | None,
        action_type: str | None,
        entities: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
    ) -> Steps[Memory]:
        """Store an episode, then consolidate its scope when enough episodes wait."""
        memory = yield from self._ops.add_episodic_steps(
            scope, content, session_id, event_timestamp, actor, action_type, entities, metadata
        )
        if not self._ops.auto_consolidate:
            return memory
        label = check.label(scope)
        waiting = yield Db(count_unconsolidated_flow(self._ops.core, label))
        if waiting < self.settings.consolidation_threshold:
            return memory
        if self._consolidation_due is not None and self._consolidation_due(scope):
            return memory
        if not (yield from self._upkeep.auto_consolidate_steps(scope, label)):
            return memory  # another add of this engine is consolidating the scope
        fresh: Memory = yield Db(scoped_memory_flow(self._ops.core.dialect, label, memory.id))
        return fresh

    # -- episodic ------------------------------------------------------------------------
    def add_episodic(
        self,
        scope: str,
        content: str,
        *,
        session_id: str | None = None,
        event_timestamp: Time | None = None,
        actor: str | None = None,
        action_type: str | None = None,
        entities: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Store an event (a message, an action); its time defaults to now."""
        return self._drive(
            self.add_episodic_steps(
                scope, content, session_id, event_timestamp, actor, action_type, entities, metadata
            )
        )

    async def aadd_episodic(
        self,
        scope: str,
        content: str,
        *,
        session_id: str | None = None,
        event_timestamp: Time | None = None,
        actor: str | None = None,
        action_type: str | None = None,
        entities: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Async twin of :meth:`add_episodic`."""
        return await self._adrive(
            self.add_episodic_steps(
                scope, content, session_id, event_timestamp, actor, action_type, entities, metadata
            )
        )

    # -- the write pipeline --------------------------------------------------------------
    def write(
        self,
        namespace: tuple[str, ...],
        key: str | None,
        value: Mapping[str, Any],
        *,
        strategy: ConflictStrategy | None = None,
    ) -> WriteResult:
        """Store a memory through the write pipeline (see ``pipeline.py``).

        ``namespace`` is a memory namespace (``namespace_for(scope, kind)``); ``key``
        ``None`` picks a fresh one; ``value`` is any JSON object with some text (its
        ``content``, which may be structured). The same value at the same key again is a
        ``duplicate`` (retries are idempotent); a new semantic memory is checked for
        duplicates and contradictions (``strategy``, default
        ``settings.conflict_strategy``); a new value at a semantic key is a new version
        (``updated``); a procedural key said again is ``reinforced``.

        Example:
            >>> from langmem_tiers import TieredMemoryStore, namespace_for
            >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
            ...     engine = MemoryEngine(store)
            ...     ns = namespace_for("u1", "semantic")
            ...     old = engine.write(ns, "f1", {"content": "The deadline is March 3"})
            ...     new = engine.write(ns, "f2", {"content": "The deadline moved to March 10"})
            ...     again = engine.write(ns, "f2", {"content": "The deadline moved to March 10"})
            ...     before = engine.get("u1", old.memory.id)
            >>> new.action, before.status, again.action
            ('superseded', 'superseded', 'duplicate')
        """
        return self.write_many([PutOp(namespace, key, value)], strategy=strategy)[0]  # type: ignore[arg-type]

    async def awrite(
        self,
        namespace: tuple[str, ...],
        key: str | None,
        value: Mapping[str, Any],
        *,
        strategy: ConflictStrategy | None = None,
    ) -> WriteResult:
        """Async twin of :meth:`write`."""
        written = await self.awrite_many(
            [PutOp(namespace, key, value)],  # type: ignore[arg-type]
            strategy=strategy,
        )
        return written[0]

    def write_many(
        self, writes: Sequence[PutOp], *, strategy: ConflictStrategy | None = None
    ) -> list[WriteResult]:
        """:meth:`write` for several ``PutOp`` (all validated before any is stored).

        Episodic memories of the batch are stored in one transaction; every semantic or
        procedural one in its own, so a failure leaves the earlier ones stored and a
        retry of the whole batch idempotent.
        """
        return self._drive(self._ops.write_steps(writes, strategy))

    async def awrite_many(
        self, writes: Sequence[PutOp], *, strategy: ConflictStrategy | None = None
    ) -> list[WriteResult]:
        """Async twin of :meth:`write_many`."""
        return await self._adrive(self._ops.write_steps(writes, strategy))

    def put_many(self, puts: Sequence[PutOp]) -> list[WriteResult]:
        """A store's raw puts of memories, through the pipeline (``store.put`` calls it).

        As :meth:`write_many`, but with LangGraph's upsert by key: a new value at the key
        of an episode, or of a memory no longer current, overwrites it there.

        Example:
            >>> from langmem_tiers import TieredMemoryStore, namespace_for
            >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
            ...     engine = MemoryEngine(store)
            ...     ns = namespace_for("u1", "semantic")
            ...     store.put(ns, "f1", {"content": "The deadline is March 3"})
            ...     store.put(ns, "f2", {"content": "The deadline moved to March 10"})
            ...     old = store.get(ns, "f1").value
            ...     hits = store.search(ns, query="When is the deadline?")
            >>> store.put_pipeline is engine, old["status"], [h.key for h in hits]
            (True, 'superseded', ['f2'])
        """
        return self._drive(self._ops.write_steps(puts, None, raw=True))

    async def aput_many(self, puts: Sequence[PutOp]) -> list[WriteResult]:
        """Async twin of :meth:`put_many`."""
        return await self._adrive(self._ops.write_steps(puts, None, raw=True))

    # -- semantic ------------------------------------------------------------------------
    def add_semantic(
        self,
        scope: str,
        content: str,
        *,
        subject: str | None = None,
        category: str | None = None,
        confidence: float = 1.0,
        strategy: ConflictStrategy | None = None,
        source_episodic_ids: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Store a fact, after checking the scope's near memories for contradictions.

        ``strategy`` (default ``settings.conflict_strategy``) decides what a contradiction
        does: ``supersede``, ``keep_both``, ``reject_new`` or ``merge``. A near duplicate
        (similarity >= ``settings.duplicate_similarity``, no contradiction) is returned
        instead of storing a copy. Summaries (``category`` ``conversation_summary``,
        ``episode_summary``, ``compressed_summary``) are always stored.
        """
        return self._drive(
            self._ops.add_semantic_steps(
                scope,
                content,
                subject,
                category,
                confidence,
                strategy,
                source_episodic_ids,
                metadata,
            )
        )

    async def aadd_semantic(
        self,
        scope: str,
        content: str,
        *,
        subject: str | None = None,
        category: str | None = None,
        confidence: float = 1.0,
        strategy: ConflictStrategy | None = None,
        source_episodic_ids: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Async twin of :meth:`add_semantic`."""
        return await self._adrive(
            self._ops.add_semantic_steps(
                scope,
                content,
                subject,
                category,
                confidence,
                strategy,
                source_episodic_ids,
                metadata,
            )
        )

    def update_semantic(
        self,
        scope: str,
        memory_id: str,
        content: str,
        *,
        confidence: float | None = None,
        reason: str | None = None,
    ) -> Memory:
        """A new version of an active semantic memory (the old ones are kept)."""
        return self._drive(
            self._ops.update_semantic_steps(scope, memory_id, content, confidence, reason)
        )

    async def aupdate_semantic(
        self,
        scope: str,
        memory_id: str,
        content: str,
        *,
        confidence: float | None = None,
        reason: str | None = None,
    ) -> Memory:
        """Async twin of :meth:`update_semantic`."""
        return await self._adrive(
            self._ops.update_semantic_steps(scope, memory_id, content, confidence, reason)
        )

    def evolution(self, scope: str, memory_id: str) -> list[MemoryVersion]:
        """Every version of a memory, oldest first."""
        return self._drive(self._ops.evolution_steps(scope, memory_id))

    async def aevolution(self, scope: str, memory_id: str) -> list[MemoryVersion]:
        """Async twin of :meth:`evolution`."""
        return await self._adrive(self._ops.evolution_steps(scope, memory_id))

    # -- procedural ----------------------------------------------------------------------
    def set_procedural(
        self, scope: str, key: str, value: Any, *, content: str | None = None
    ) -> Memory:
        """Set a preference; setting the same key again reinforces it (count + 1)."""
        return self._drive(self._ops.set_procedural_steps(scope, key, value, content))

    async def aset_procedural(
        self, scope: str, key: str, value: Any, *, content: str | None = None
    ) -> Memory:
        """Async twin of :meth:`set_procedural`."""
        return await self._adrive(self._ops.set_procedural_steps(scope, key, value, content))

    def get_procedural(self, scope: str, key: str) -> Memory | None:
        """The active preference ``key`` (an index lookup, not a search), or None."""
        return self._drive(self._ops.get_procedural_steps(scope, key))

    async def aget_procedural(self, scope: str, key: str) -> Memory | None:
        """Async twin of :meth:`get_procedural`."""
        return await self._adrive(self._ops.get_procedural_steps(scope, key))

    # -- reading -------------------------------------------------------------------------
    def get(self, scope: str, memory_id: str) -> Memory | None:
        """A memory of the scope in any status; None when there is none with this id here."""
        return self._drive(self._ops.get_steps(scope, memory_id))

    async def aget(self, scope: str, memory_id: str) -> Memory | None:
        """Async twin of :meth:`get`."""
        return await self._adrive(self._ops.get_steps(scope, memory_id))

    def memories(
        self,
        scope: str,
        *,
        kinds: Sequence[str] | str | None = None,
        statuses: Sequence[str] | str | None = ("active",),
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """The scope's memories, oldest first (``statuses=None``: every status)."""
        return self._drive(self._ops.memories_steps(scope, kinds, statuses, limit, offset))

    async def amemories(
        self,
        scope: str,
        *,
        kinds: Sequence[str] | str | None = None,
        statuses: Sequence[str] | str | None = ("active",),
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """Async twin of :meth:`memories`."""
        return await self._adrive(self._ops.memories_steps(scope, kinds, statuses, limit, offset))

    def entities(self, scope: str, *, limit: int = 100, offset: int = 0) -> list[Entity]:
        """The people, organisations, places and things the scope's memories name.

        Most mentioned first; each with its kind, aliases ("Mel" of "Melanie"), how many
        memories name it and when it was first and last named.
        """
        return self._drive(self._ops.entities_steps(scope, limit, offset))

    async def aentities(self, scope: str, *, limit: int = 100, offset: int = 0) -> list[Entity]:
        """Async twin of :meth:`entities`."""
        return await self._adrive(self._ops.entities_steps(scope, limit, offset))

    def entity(self, scope: str, name: str, *, as_of: Time | None = None) -> EntityDetail | None:
        """The entity ``name`` (or one of its aliases) names, with the memories naming it
        and the relations of those memories that hold now with it as subject or object.

        ``as_of`` (a datetime or ISO-8601 text): the entity as it was at that instant: the
        memories of then (as :meth:`replay` has them) that name it, its names, mention count
        and times from those alone, and the relations that held then (each with its
        ``valid_until`` as known now).

        None when the scope's memories name no such entity (at ``as_of``: named none yet).

        Example:
            >>> from langmem_tiers import TieredMemoryStore
            >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
            ...     engine = MemoryEngine(store)
            ...     _ = engine.add_semantic("jo", "My sister Anna lives in Porto.")
            ...     now = engine.entity("jo", "anna")
            ...     before = engine.entity("jo", "Anna", as_of="2001-01-01T00:00:00+00:00")
            >>> now.entity.name, len(now.memories), before
            ('Anna', 1, None)
        """
        return self._drive(self._ops.entity_steps(scope, name, as_of))

    async def aentity(
        self, scope: str, name: str, *, as_of: Time | None = None
    ) -> EntityDetail | None:
        """Async twin of :meth:`entity`."""
        return await self._adrive(self._ops.entity_steps(scope, name, as_of))

    def relations(
        self, scope: str, *, subject: str | None = None, as_of: Time | None = None
    ) -> list[Relation]:
        """The (subject, relation, object) facts of the scope as they held at ``as_of``.

        Read from the semantic memories whose statements fill a relation slot ("I live in
        Berlin." is ``user lives_in Berlin``; the speaker is ``user``). ``as_of=None``:
        now, from the active memories; a past instant: the memories valid then, rebuilt
        from the scope's events (so "I moved to Munich" ends the Berlin one at the move).
        Each with its memory id and validity interval, oldest first; ``subject`` keeps
        the relations of one subject (``"user"``, a name).
        """
        return self._drive(self._ops.relations_steps(scope, subject, as_of))

    async def arelations(
        self, scope: str, *, subject: str | None = None, as_of: Time | None = None
    ) -> list[Relation]:
        """Async twin of :meth:`relations`."""
        return await self._adrive(self._ops.relations_steps(scope, subject, as_of))

    def retrieve(
        self,
        scope: str,
        query: str,
        *,
        kinds: Sequence[str] | str | None = None,
        limit: int = 10,
        include_inactive: bool = False,
        as_of: Time | None = None,
        min_score: float | None = None,
    ) -> list[ScoredMemory]:
        """The memories best matching ``query`` by the hybrid score, best first.

        Only active memories inside their validity interval, unless ``include_inactive``.
        ``as_of`` ranks the memories the scope had at that time (from the event log).
        ``min_score`` keeps only memories whose relevance (the ``semantic`` component, an
        absolute value in [0, 1]) is at least this. Time expressions in the query
        ("yesterday", "in March") are resolved against the engine's clock.
        """
        return self._drive(
            self._ops.retrieve_steps(scope, query, kinds, limit, include_inactive, as_of, min_score)
        )

    async def aretrieve(
        self,
        scope: str,
        query: str,
        *,
        kinds: Sequence[str] | str | None = None,
        limit: int = 10,
        include_inactive: bool = False,
        as_of: Time | None = None,
        min_score: float | None = None,
    ) -> list[ScoredMemory]:
        """Async twin of :meth:`retrieve`."""
        return await self._adrive(
            self._ops.retrieve_steps(scope, query, kinds, limit, include_inactive, as_of, min_score)
        )

    # -- consolidation -------------------------------------------------------------------
    def consolidate(self, scope: str, *, progress: bool = False) -> ConsolidationResult:
        """Summarise the scope's unconsolidated episodes into semantic memories (idempotent)."""
        return self._drive(self._upkeep.consolidate_public_steps(scope, progress))

    async def aconsolidate(self, scope: str, *, progress: bool = False) -> ConsolidationResult:
        """Async twin of :meth:`consolidate`."""
        return await self._adrive(self._upkeep.consolidate_public_steps(scope, progress))

    def consolidate_due(self, *, progress: bool = False) -> list[ConsolidationResult]:
        """Consolidate every scope with at least ``consolidation_threshold`` waiting episodes."""
        return self._drive(self._upkeep.consolidate_due_steps(progress))

    async def aconsolidate_due(self, *, progress: bool = False) -> list[ConsolidationResult]:
        """Async twin of :meth:`consolidate_due`."""
        return await self._adrive(self._upkeep.consolidate_due_steps(progress))

    # -- lifecycle -----------------------------------------------------------------------
    def decay(self, scope: str, *, now: Time | None = None) -> DecayResult:
        """Decay the importance of the scope's active and superseded memories; weak ones
        become ``decayed``."""
        return self._drive(self._upkeep.decay_steps(scope, now))

    async def adecay(self, scope: str, *, now: Time | None = None) -> DecayResult:
        """Async twin of :meth:`decay`."""
        return await self._adrive(self._upkeep.decay_steps(scope, now))

    def forget(self, scope: str, memory_id: str, *, hard: bool = False) -> Memory | None:
        """Soft delete (status ``deleted``, returned) or, with ``hard``, remove it (None)."""
        return self._drive(self._upkeep.forget_steps(scope, memory_id, hard))

    async def aforget(self, scope: str, memory_id: str, *, hard: bool = False) -> Memory | None:
        """Async twin of :meth:`forget`."""
        return await self._adrive(self._upkeep.forget_steps(scope, memory_id, hard))

    def erase_scope(self, scope: str) -> ErasureResult:
        """Remove every trace of ``scope``: memories, versions, vectors (SQL and Qdrant),
        terms, access counts, short-term sessions, API keys, and the content of its events
        (content-free tombstones keep their sequence numbers). Idempotent: a re-run of an
        interrupted erasure finishes it (see ``long_term/store/erasure.py``)."""
        label = check.label(scope)
        with event_context():
            return self.store.db.run(erase_scope_flow(self.store.core, label, scope))

    async def aerase_scope(self, scope: str) -> ErasureResult:
        """Async twin of :meth:`erase_scope`."""
        label = check.label(scope)
        with event_context():
            return await self.store.db.arun(erase_scope_flow(self.store.core, label, scope))

    def compress(self, scope: str, memory_ids: Sequence[str] | None = None) -> CompressionResult:
        """Summarise memories (default: the scope's decayed ones) into one; they become
        ``compressed``, linked to the summary, and leave the search index."""
        return self._drive(self._upkeep.compress_steps(scope, memory_ids))

    async def acompress(
        self, scope: str, memory_ids: Sequence[str] | None = None
    ) -> CompressionResult:
        """Async twin of :meth:`compress`."""
        return await self._adrive(self._upkeep.compress_steps(scope, memory_ids))

    # -- events --------------------------------------------------------------------------
    def replay(self, scope: str, at: Time) -> list[Memory]:
        """The scope's memories as they were at ``at``, rebuilt from events alone."""
        return self._drive(self._upkeep.replay_steps(scope, at))

    async def areplay(self, scope: str, at: Time) -> list[Memory]:
        """Async twin of :meth:`replay`."""
        return await self._adrive(self._upkeep.replay_steps(scope, at))

    def state(self, scope: str) -> list[Memory]:
        """The scope's memories as stored now, every status (what replay to now equals)."""
        return self._drive(self._upkeep.state_steps(scope))

    async def astate(self, scope: str) -> list[Memory]:
        """Async twin of :meth:`state`."""
        return await self._adrive(self._upkeep.state_steps(scope))

    def timeline(
        self,
        scope: str,
        *,
        since: Time | None = None,
        until: Time | None = None,
        types: Sequence[str] | None = None,
        limit: int = 1000,
        memory_id: str | None = None,
    ) -> list[Event]:
        """The scope's events in order (of one memory with ``memory_id``)."""
        return self._drive(
            self._upkeep.timeline_steps(scope, since, until, types, limit, memory_id)
        )

    async def atimeline(
        self,
        scope: str,
        *,
        since: Time | None = None,
        until: Time | None = None,
        types: Sequence[str] | None = None,
        limit: int = 1000,
        memory_id: str | None = None,
    ) -> list[Event]:
        """Async twin of :meth:`timeline`."""
        return await self._adrive(
            self._upkeep.timeline_steps(scope, since, until, types, limit, memory_id)
        )

    # -- administration ------------------------------------------------------------------
    def stats(self, scope: str | None = None) -> dict[str, Any]:
        """Counts by kind and status, events and waiting episodes (of one scope or all)."""
        return self._drive(self._upkeep.stats_steps(scope))

    async def astats(self, scope: str | None = None) -> dict[str, Any]:
        """Async twin of :meth:`stats`."""
        return await self._adrive(self._upkeep.stats_steps(scope))

    def agents(self) -> list[ScopeCount]:
        """Every scope with memories, with counts by kind."""
        return self._drive(self._upkeep.agents_steps())

    async def aagents(self) -> list[ScopeCount]:
        """Async twin of :meth:`agents`."""
        return await self._adrive(self._upkeep.agents_steps())
