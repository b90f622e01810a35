"""The memory engine's operations, each written once as a generator of steps.

:class:`Operations` holds the configuration and the step generators that write and
read memories (episodic, semantic, procedural, retrieval); :class:`~langmem_tiers.
long_term.engine.upkeep.Upkeep` holds those of consolidation, lifecycle, events and
administration; the public :class:`~langmem_tiers.long_term.engine.engine.MemoryEngine` is
composed of both and drives each generator sync or async (see steps.py). Input is checked at the edge (validate.py), so nothing is
written when an argument is bad, and every operation runs in one event context: the
events it writes share a correlation id.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langgraph.store.base import PutOp, SearchOp

from langmem_tiers.config import ConflictStrategy, Settings
from langmem_tiers.errors import ConfigurationError, InvalidContentError, ValidationError
from langmem_tiers.long_term.engine import validate as check
from langmem_tiers.long_term.engine.conflicts import (
    LLMContradictionChecker,
    LLMMerger,
    Merger,
    OfflineMerger,
)
from langmem_tiers.long_term.engine.contradiction import (
    ContradictionChecker,
    RuleContradictionChecker,
)
from langmem_tiers.long_term.engine.entities import (
    Entity,
    EntityDetail,
    entities_flow,
    entity_flow,
)
from langmem_tiers.long_term.engine.lifecycle import (
    Change,
    change_flow,
    memories_flow,
    scoped_memory_flow,
)
from langmem_tiers.long_term.engine.models import (
    CREATED,
    REINFORCED,
    Memory,
    MemoryVersion,
    ScoredMemory,
    WriteResult,
    scored,
)
from langmem_tiers.long_term.engine.pipeline import (
    names_steps,
    prepare_writes,
    semantic_steps,
    write_steps,
)
from langmem_tiers.long_term.engine.relations import Relation, relations_flow
from langmem_tiers.long_term.engine.replay import as_of_flow
from langmem_tiers.long_term.engine.semantic import (
    index_texts,
    lock_names_flow,
    update_semantic_flow,
)
from langmem_tiers.long_term.engine.steps import (
    Db,
    Steps,
)
from langmem_tiers.long_term.engine.versions import versions_flow
from langmem_tiers.long_term.store.core import StoreCore, WriteNote
from langmem_tiers.long_term.store.records import STATUSES, item_id, memory_text
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.search.options import check_min_score, options_filter
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.sql.flow import Flow, Transaction
from langmem_tiers.tiers.base import Summarizer
from langmem_tiers.tiers.summarizer import LLMSummarizer, OfflineSummarizer

__all__ = ["Operations"]

T = TypeVar("T")


class Operations:
    """The engine's configuration and its writes and reads, as step generators.

    A part of :class:`~langmem_tiers.long_term.engine.engine.MemoryEngine`: episodic,
    semantic and procedural memory, versions and retrieval. :class:`~langmem_tiers.
    long_term.engine.upkeep.Upkeep` works on the memories it writes.
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
    ) -> None:
        if not isinstance(store, TieredMemoryStore):
            raise ConfigurationError(
                f"store must be a TieredMemoryStore, got {type(store).__name__}."
            )
        if not isinstance(consolidation_gap, timedelta) or consolidation_gap <= timedelta(0):
            raise ConfigurationError(
                f"consolidation_gap must be a positive timedelta, got {consolidation_gap!r}."
            )
        for name, number in (
            ("max_group_size", max_group_size),
            ("conflict_candidates", conflict_candidates),
        ):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ConfigurationError(f"{name} must be a whole number >= 1, got {number!r}.")
        for name, unit in (
            ("min_conflict_confidence", min_conflict_confidence),
            ("decay_min_change", decay_min_change),
        ):
            if isinstance(unit, bool) or not isinstance(unit, (int, float)) or not 0 <= unit <= 1:
                raise ConfigurationError(f"{name} must be a number in [0, 1], got {unit!r}.")
        self.store = store
        self.settings = settings or store.settings
        self.model = model
        self.checker = checker or (
            LLMContradictionChecker(model) if model is not None else RuleContradictionChecker()
        )
        self.summarizer = summarizer or (
            LLMSummarizer(model) if model is not None else OfflineSummarizer()
        )
        self.merger = merger or (LLMMerger(model) if model is not None else OfflineMerger())
        self.consolidation_gap = consolidation_gap
        self.max_group_size = max_group_size
        self.conflict_candidates = conflict_candidates
        self.min_conflict_confidence = float(min_conflict_confidence)
        self.decay_min_change = float(decay_min_change)
        self.auto_consolidate = auto_consolidate

    @property
    def core(self) -> Any:
        return self.store.core

    def now(self) -> datetime:
        now: datetime = self.core.dialect.now()
        return now

    def embed_steps(self, texts: Sequence[str]) -> Steps[dict[str, list[float]]]:
        unique = list(dict.fromkeys(texts))
        vectors = yield Db(self.core.embed_flow(unique))
        return dict(zip(unique, vectors, strict=True))

    def record_access(self, memories: Sequence[Memory]) -> None:
        if memories:
            self.core.access.record([m.id for m in memories], self.now())

    # -- episodic ------------------------------------------------------------------------
    def add_episodic_steps(
        self,
        scope: str,
        content: str,
        session_id: str | None,
        event_timestamp: datetime | str | None,
        actor: str | None,
        action_type: str | None,
        entities: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
    ) -> Steps[Memory]:
        check.label(scope)
        when = (
            self.now()
            if event_timestamp is None
            else check.time("event_timestamp", event_timestamp)
        )
        value: dict[str, Any] = {"content": check.text("content", content)}
        value["event_timestamp"] = when.isoformat()
        for name, raw in (
            ("session_id", session_id),
            ("actor", actor),
            ("action_type", action_type),
        ):
            if raw is not None:
                value[name] = check.text(name, raw)
        if entities is not None:
            value["entities"] = check.strings("entities", entities)
        if metadata is not None:
            value["metadata"] = check.mapping("metadata", metadata)
        namespace = namespace_for(scope, "episodic")
        (written,) = yield from write_steps(
            self, [PutOp(namespace, uuid.uuid4().hex, value)], new_keys=True
        )
        return written.memory

    # -- semantic ------------------------------------------------------------------------
    def add_semantic_steps(
        self,
        scope: str,
        content: str,
        subject: str | None,
        category: str | None,
        confidence: float,
        strategy: ConflictStrategy | None,
        source_episodic_ids: Sequence[str] | None,
        metadata: Mapping[str, Any] | None,
    ) -> Steps[WriteResult]:
        check.label(scope)
        chosen = check.strategy(strategy, self.settings.conflict_strategy)
        value: dict[str, Any] = {
            "content": check.text("content", content),
            "confidence": check.unit("confidence", confidence),
        }
        for name, raw in (("subject", subject), ("category", category)):
            if raw is not None:
                value[name] = check.text(name, raw)
        if source_episodic_ids is not None:
            value["source_episodic_ids"] = check.strings("source_episodic_ids", source_episodic_ids)
        if metadata is not None:
            value["metadata"] = check.mapping("metadata", metadata)
        namespace = namespace_for(scope, "semantic")
        (write,) = prepare_writes(self, [PutOp(namespace, uuid.uuid4().hex, value)])
        result = yield from semantic_steps(self, write, chosen)
        yield from names_steps(self, [result])
        return result

    def write_steps(
        self, writes: Sequence[PutOp], strategy: ConflictStrategy | None, *, raw: bool = False
    ) -> Steps[list[WriteResult]]:
        if strategy is not None:
            strategy = check.strategy(strategy, self.settings.conflict_strategy)
        return (yield from write_steps(self, writes, strategy, raw=raw))

    def update_semantic_steps(
        self,
        scope: str,
        memory_id: str,
        content: str,
        confidence: float | None,
        reason: str | None,
    ) -> Steps[Memory]:
        label = check.label(scope)
        check.memory_id(memory_id)
        check.text("content", content)
        if confidence is not None:
            check.unit("confidence", confidence)
        reason = check.optional_text("reason", reason)
        target: Memory = yield Db(
            scoped_memory_flow(self.core.dialect, label, memory_id, kinds=["semantic"])
        )
        new_value = {**target.value, "content": content}
        if confidence is not None:
            new_value["confidence"] = confidence
        vectors = yield from self.embed_steps(
            index_texts(self.core, target.namespace, target.key, new_value)
        )
        memory: Memory = yield Db(
            update_semantic_flow(
                self.core,
                scope_label=label,
                memory_id=memory_id,
                content=content,
                confidence=confidence,
                reason=reason,
                vectors=vectors,
                at=self.now(),
            )
        )
        yield from names_steps(self, [memory])
        return memory

    def evolution_steps(self, scope: str, memory_id: str) -> Steps[list[MemoryVersion]]:
        label = check.label(scope)
        versions: list[MemoryVersion] = yield Db(
            versions_flow(self.core, label, check.memory_id(memory_id))
        )
        return versions

    # -- procedural ----------------------------------------------------------------------
    def set_procedural_steps(
        self, scope: str, key: str, value: Any, content: str | None
    ) -> Steps[Memory]:
        label = check.label(scope)
        key = check.text("key", key)
        try:
            shown = json.dumps(value, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as err:
            raise InvalidContentError(
                f"value of procedural memory {key!r} must be JSON-serialisable ({err})."
            ) from err
        text = check.text("content", content) if content is not None else f"{key}: {shown}"
        stored = {"content": text, "key": key, "value": value}
        namespace = namespace_for(scope, "procedural")
        vectors = yield from self.embed_steps(index_texts(self.core, namespace, "_", stored))
        memory: Memory = yield Db(
            _in_transaction(self._set_procedural_flow(label, namespace, key, stored, vectors))
        )
        yield from names_steps(self, [memory])
        return memory

    def _set_procedural_flow(
        self,
        label: str,
        namespace: tuple[str, ...],
        key: str,
        stored: dict[str, Any],
        vectors: dict[str, list[float]],
    ) -> Flow[Memory]:
        # Two writers of a new key would both insert: serialise them per (scope, key).
        yield from lock_names_flow(self.core, [json.dumps(["procedural", label, key])])
        found = yield from self._procedural_flow(label, key, lock=True)
        memory, _ = yield from self._reinforce_flow(
            label, found, namespace, uuid.uuid4().hex, stored, vectors
        )
        return memory

    def _store_procedural_flow(
        self,
        label: str,
        namespace: tuple[str, ...],
        key: str,
        stored: dict[str, Any],
        vectors: dict[str, list[float]],
        *,
        where: tuple[str, list[Any]],
        ttl: float | None = None,
    ) -> Flow[tuple[Memory, bool]]:
        """In one transaction: reinforce the active procedural memory ``where`` finds, or
        store ``stored`` at ``key``; answers the memory and whether it was reinforced.
        ``ttl``: minutes a memory stored or rewritten lives (None: it does not expire)."""
        result: tuple[Memory, bool] = yield Transaction(
            self._find_and_reinforce_flow(label, namespace, key, stored, vectors, where, ttl)
        )
        return result

    def _find_and_reinforce_flow(
        self,
        label: str,
        namespace: tuple[str, ...],
        key: str,
        stored: dict[str, Any],
        vectors: dict[str, list[float]],
        where: tuple[str, list[Any]],
        ttl: float | None = None,
    ) -> Flow[tuple[Memory, bool]]:
        rows = yield from memories_flow(self.core.dialect, where[0], where[1], lock=True)
        found = [m for m in rows if m.kind == "procedural" and m.status == "active"]
        return (
            yield from self._reinforce_flow(
                label, found[0] if found else None, namespace, key, stored, vectors, ttl
            )
        )

    def _reinforce_flow(
        self,
        label: str,
        found: Memory | None,
        namespace: tuple[str, ...],
        new_key: str,
        stored: dict[str, Any],
        vectors: dict[str, list[float]],
        ttl: float | None = None,
    ) -> Flow[tuple[Memory, bool]]:
        core, d = self.core, self.core.dialect
        at = self.now()
        if found is None:
            new_id = item_id(namespace, new_key)
            note = WriteNote(CREATED, {}, {"reinforcement_count": 1, "last_used_at": at})
            yield from core.batch_flow(
                [PutOp(namespace, new_key, stored, ttl=ttl)],
                notes={new_id: note},
                vectors=vectors,
                now=at,
            )
            return (yield from scoped_memory_flow(d, label, new_id)), False
        count = found.reinforcement_count + 1
        columns = {"reinforcement_count": count, "last_used_at": at}
        meta = {"reinforcement_count": count}
        updated = {**found.value, **stored}
        if memory_text(found.value) == memory_text(stored):
            change = Change(found.id, REINFORCED, value=updated, columns=columns, metadata=meta)
            yield from change_flow(d, [change], at=at, max_chars=self.settings.max_content_chars)
        else:
            yield from core.batch_flow(
                [PutOp(found.namespace, found.key, updated, ttl=ttl)],
                notes={found.id: WriteNote(REINFORCED, meta, columns)},
                vectors=vectors,
                now=at,
            )
        return (yield from scoped_memory_flow(d, label, found.id)), True

    def _procedural_flow(self, label: str, key: str, *, lock: bool = False) -> Flow[Memory | None]:
        # The (scope, proc_key) index answers this, no search is involved; kind and status
        # are checked on the few rows it gives, so no other index looks more attractive.
        rows = yield from memories_flow(
            self.core.dialect, "i.scope = ? AND i.proc_key = ?", [label, key], lock=lock
        )
        found = [m for m in rows if m.kind == "procedural" and m.status == "active"]
        return found[0] if found else None

    def get_procedural_steps(self, scope: str, key: str) -> Steps[Memory | None]:
        label = check.label(scope)
        memory: Memory | None = yield Db(self._procedural_flow(label, check.text("key", key)))
        if memory is not None:
            self.record_access([memory])
        return memory

    # -- reading -------------------------------------------------------------------------
    def get_steps(self, scope: str, memory_id: str) -> Steps[Memory | None]:
        label = check.label(scope)
        found: list[Memory] = yield Db(
            memories_flow(
                self.core.dialect,
                "i.id = ? AND i.scope = ? AND i.kind IS NOT NULL",
                [check.memory_id(memory_id), label],
            )
        )
        self.record_access(found)
        return found[0] if found else None

    def memories_steps(
        self,
        scope: str,
        kinds: Sequence[str] | str | None,
        statuses: Sequence[str] | None,
        limit: int,
        offset: int,
    ) -> Steps[list[Memory]]:
        label = check.label(scope)
        wanted = check.kinds(kinds)
        where = f"i.scope = ? AND i.kind IN ({', '.join('?' for _ in wanted)})"
        params: list[Any] = [label, *wanted]
        if statuses is not None:
            chosen = [statuses] if isinstance(statuses, str) else list(statuses)
            bad = [s for s in chosen if s not in STATUSES]
            if not chosen or bad:
                raise ValidationError(
                    f"statuses must name some of {', '.join(STATUSES)}, got {statuses!r}."
                )
            where += f" AND i.status IN ({', '.join('?' for _ in chosen)})"
            params.extend(chosen)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError(f"offset must be a whole number >= 0, got {offset!r}.")
        # Both are validated whole numbers, so they can be part of the statement.
        order = f"i.created_at, i.id LIMIT {check.large_limit(limit)} OFFSET {offset}"
        found: list[Memory] = yield Db(memories_flow(self.core.dialect, where, params, order=order))
        return found

    def entities_steps(self, scope: str, limit: int, offset: int) -> Steps[list[Entity]]:
        label = check.label(scope)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError(f"offset must be a whole number >= 0, got {offset!r}.")
        found: list[Entity] = yield Db(
            entities_flow(self.core.dialect, label, limit=check.large_limit(limit), offset=offset)
        )
        return found

    def entity_steps(
        self, scope: str, name: str, as_of: datetime | str | None = None
    ) -> Steps[EntityDetail | None]:
        label = check.label(scope)
        wanted = check.text("name", name).strip()
        at = None if as_of is None else check.time("as_of", as_of)
        found: EntityDetail | None = yield Db(entity_flow(self.core.dialect, label, wanted, at=at))
        return found

    def relations_steps(
        self, scope: str, subject: str | None, as_of: datetime | str | None
    ) -> Steps[list[Relation]]:
        label = check.label(scope)
        who = None if subject is None else check.text("subject", subject).strip()
        at = None if as_of is None else check.time("as_of", as_of)
        found: list[Relation] = yield Db(
            relations_flow(self.core.dialect, label, at=at, subject=who)
        )
        return found

    def retrieve_steps(
        self,
        scope: str,
        query: str,
        kinds: Sequence[str] | str | None,
        limit: int,
        include_inactive: bool,
        as_of: datetime | str | None,
        min_score: float | None = None,
    ) -> Steps[list[ScoredMemory]]:
        label = check.label(scope)
        query = check.text("query", query)
        wanted, limit = check.kinds(kinds), check.limit(limit)
        floor = check_min_score(min_score)
        if as_of is not None:
            at = check.time("as_of", as_of)
            found: list[ScoredMemory] = yield Db(
                as_of_flow(
                    self.core,
                    label,
                    query,
                    at,
                    kinds=wanted,
                    include_inactive=include_inactive,
                    limit=limit,
                    min_score=floor,
                )
            )
            return found
        d = self.core.dialect
        # The namespace prefix selects the scope's items through the index that also
        # answers the search's other conditions; scope and kind only filter them.
        where = (
            f"{d.not_indexed('i.scope')} = ?"
            f" AND {d.not_indexed('i.kind')} IN ({', '.join('?' for _ in wanted)})"
        )
        params: list[Any] = [label, *wanted]
        # The search keeps active memories valid at ``clock`` (its ``now``) unless told
        # to take every status.
        clock = self.now()
        prefix = (label, wanted[0]) if len(wanted) == 1 else (label,)
        search = SearchOp(
            prefix,
            query=query,
            limit=limit,
            filter=options_filter(None, now=clock, min_score=floor),
        )
        hits: list[ScoredMemory] = yield Db(
            _found_memories_flow(
                self.core,
                search,
                label,
                statuses=None if include_inactive else ("active",),
                where=where,
                params=params,
            )
        )
        return hits


def _found_memories_flow(
    core: StoreCore,
    search: SearchOp,
    label: str,
    *,
    statuses: Sequence[str] | None,
    where: str,
    params: Sequence[Any],
) -> Flow[list[ScoredMemory]]:
    """A search's hits as memories with their scores.

    One flow, so one trip to the database's thread or connection: the memories' own
    read follows the search on the connection the search used.
    """
    items = yield from core.search_flow(search, statuses=statuses, where=where, params=params)
    ids = [item_id(it.namespace, it.key) for it in items]
    if not ids:
        return []
    d = core.dialect
    in_ids, id_params = d.in_list("i.id", ids)
    memories: list[Memory] = yield from _in_transaction(
        memories_flow(d, f"{in_ids} AND {d.not_indexed('i.scope')} = ?", [*id_params, label]),
        read_only=True,
    )
    by_id = {m.id: m for m in memories}
    return [
        scored(by_id[i], it.score or 0.0, getattr(it, "scores", {}))
        for i, it in zip(ids, items, strict=True)
        if i in by_id
    ]


def _in_transaction(flow: Flow[T], *, read_only: bool = False) -> Flow[T]:
    result: T = yield Transaction(flow, read_only=read_only)
    return result
