"""The memory engine's operations, each written once as a generator of steps.

:class:`Operations` validates input at the edge (nothing is written when an argument is
bad) and holds one ``_<name>_steps`` generator per public operation; the public
:class:`~langmem_tiers.long_term.engine.MemoryEngine` drives each of them sync or async
(see steps.py). Every operation runs in one event context, so the events it writes
share a correlation id.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.base import PutOp, SearchOp
from tqdm import tqdm

from langmem_tiers.config import ConflictStrategy, Settings
from langmem_tiers.errors import (
    ConfigurationError,
    InvalidContentError,
    InvalidNamespaceError,
    ModelError,
    NotFoundError,
    ValidationError,
)
from langmem_tiers.long_term.conflicts import (
    ContradictionChecker,
    LLMContradictionChecker,
    LLMMerger,
    Merger,
    OfflineMerger,
    RuleContradictionChecker,
    Statement,
    resolve,
)
from langmem_tiers.long_term.consolidation import (
    count_due_flow,
    count_unconsolidated_flow,
    episode_messages,
    group_episodes,
    summary_value,
    unconsolidated_flow,
    write_group_flow,
)
from langmem_tiers.long_term.core import WriteNote
from langmem_tiers.long_term.dialect import EVENTS, ITEMS
from langmem_tiers.long_term.events import event_context
from langmem_tiers.long_term.flow import Flow, Sql, Transaction
from langmem_tiers.long_term.lifecycle import (
    Change,
    StaleDecisionError,
    change_flow,
    compress_flow,
    decay_flow,
    hard_delete_flow,
    memories_flow,
    scoped_memory_flow,
    soft_delete_flow,
)
from langmem_tiers.long_term.memory import (
    CREATED,
    EVENT_TYPES,
    REINFORCED,
    SUMMARY_CATEGORIES,
    CompressionResult,
    ConsolidationResult,
    DecayResult,
    Event,
    Memory,
    MemoryVersion,
    ScopeCount,
    ScoredMemory,
    WriteResult,
    scope_id,
    scored,
)
from langmem_tiers.long_term.records import STATUSES, item_id, parse_timestamp
from langmem_tiers.long_term.replay import (
    as_of_flow,
    live_state_flow,
    replay_flow,
    timeline_flow,
)
from langmem_tiers.long_term.scope import MEMORY_KINDS, encode_label, namespace_for
from langmem_tiers.long_term.semantic import (
    index_texts,
    near_flow,
    update_semantic_flow,
    write_semantic_flow,
)
from langmem_tiers.long_term.steps import (
    Combine,
    Db,
    Judge,
    Services,
    Steps,
    Summarize,
    adrive,
    drive,
)
from langmem_tiers.long_term.store import TieredMemoryStore
from langmem_tiers.long_term.versions import versions_flow
from langmem_tiers.tiers.base import Summarizer, Summary
from langmem_tiers.tiers.summarizer import LLMSummarizer, OfflineSummarizer

__all__ = ["Operations"]

T = TypeVar("T")

_RETRIES = 3  # decisions retried when a memory they were based on changed meanwhile
_MAX_LIMIT = 1000
_MAX_ID_CHARS = 256
COMPRESSED_SUMMARY = "compressed_summary"


# -- validation at the edge ----------------------------------------------------------------
def _label(scope: Any) -> str:
    if not isinstance(scope, str):
        raise InvalidNamespaceError(
            f"scope must be a string (an agent or user id), got {type(scope).__name__} {scope!r}."
        )
    return encode_label(scope)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidContentError(f"{name} must be a non-empty string, got {value!r}.")
    if "\x00" in value:
        raise InvalidContentError(f"{name} contains a NUL byte (\\x00); remove it.")
    return value


def _optional_text(name: str, value: Any) -> str | None:
    return None if value is None else _text(name, value)


def _memory_id(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_ID_CHARS or "\x00" in value:
        raise ValidationError(
            f"memory_id must be a memory's id (a non-empty string of at most {_MAX_ID_CHARS} "
            f"characters), got {value!r}."
        )
    return value


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValidationError(f"{name} must be a number in [0, 1], got {value!r}.")
    return float(value)


def _strategy(value: Any, default: ConflictStrategy) -> ConflictStrategy:
    if value is None:
        return default
    if value not in get_args(ConflictStrategy):
        raise ValidationError(
            f"strategy must be one of {', '.join(get_args(ConflictStrategy))}, got {value!r}."
        )
    return value  # type: ignore[no-any-return]


def _kinds(value: Any) -> list[str]:
    if value is None:
        return list(MEMORY_KINDS)
    kinds = [value] if isinstance(value, str) else list(value)
    bad = [k for k in kinds if k not in MEMORY_KINDS]
    if not kinds or bad:
        raise ValidationError(f"kinds must name some of {', '.join(MEMORY_KINDS)}, got {value!r}.")
    return sorted(set(kinds), key=MEMORY_KINDS.index)


def _limit(value: Any, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_LIMIT:
        raise ValidationError(f"{name} must be a whole number in 1..{_MAX_LIMIT}, got {value!r}.")
    return value


def _time(name: str, value: Any) -> datetime:
    return parse_timestamp(value, field=name)


def _strings(name: str, value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError(f"{name} must be a list of strings, got {value!r}.")
    for item in value:
        _text(f"{name} item", item)
    return list(value)


def _mapping(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{name} must be a dict, got {type(value).__name__} {value!r}.")
    return dict(value)


def _checked_summary(summary: Any) -> Summary:
    if not isinstance(summary, Summary) or not str(summary.text).strip():
        raise ModelError(f"the summariser returned {summary!r:.120}, not a non-empty Summary.")
    return Summary(summary.text.strip(), [str(c) for c in summary.key_concepts])


class Operations:
    """Configuration, validation and the step generators of the memory engine."""

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
        self._services = Services(store.db, self.checker, self.summarizer, self.merger)

    # -- driving -------------------------------------------------------------------------
    def _drive(self, steps: Steps[T]) -> T:
        with event_context():
            return drive(steps, self._services)

    async def _adrive(self, steps: Steps[T]) -> T:
        with event_context():
            return await adrive(steps, self._services)

    @property
    def _core(self) -> Any:
        return self.store.core

    def _now(self) -> datetime:
        now: datetime = self._core.dialect.now()
        return now

    def _embed_steps(self, texts: Sequence[str]) -> Steps[dict[str, list[float]]]:
        unique = list(dict.fromkeys(texts))
        vectors = yield Db(self._core.embed_flow(unique))
        return dict(zip(unique, vectors, strict=True))

    def _record_access(self, memories: Sequence[Memory]) -> None:
        if memories:
            self._core.access.record([m.id for m in memories], self._now())

    # -- episodic ------------------------------------------------------------------------
    def _add_episodic_steps(
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
        label = _label(scope)
        when = self._now() if event_timestamp is None else _time("event_timestamp", event_timestamp)
        value: dict[str, Any] = {"content": _text("content", content)}
        value["event_timestamp"] = when.isoformat()
        for name, raw in (
            ("session_id", session_id),
            ("actor", actor),
            ("action_type", action_type),
        ):
            if raw is not None:
                value[name] = _text(name, raw)
        if entities is not None:
            value["entities"] = _strings("entities", entities)
        if metadata is not None:
            value["metadata"] = _mapping("metadata", metadata)
        namespace, key = namespace_for(scope, "episodic"), uuid.uuid4().hex
        index_texts(self._core, namespace, key, value)  # validates before any write
        memory_id = item_id(namespace, key)
        yield Db(
            self._core.batch_flow(
                [PutOp(namespace, key, value)], notes={memory_id: WriteNote(CREATED)}
            )
        )
        if self.auto_consolidate:
            waiting = yield Db(count_unconsolidated_flow(self._core, label))
            if waiting >= self.settings.consolidation_threshold:
                yield from self._consolidate_steps(scope, label, progress=False)
        memory: Memory = yield Db(scoped_memory_flow(self._core.dialect, label, memory_id))
        return memory

    # -- semantic ------------------------------------------------------------------------
    def _add_semantic_steps(
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
        label = _label(scope)
        chosen = _strategy(strategy, self.settings.conflict_strategy)
        value: dict[str, Any] = {
            "content": _text("content", content),
            "confidence": _unit("confidence", confidence),
        }
        for name, raw in (("subject", subject), ("category", category)):
            if raw is not None:
                value[name] = _text(name, raw)
        if source_episodic_ids is not None:
            value["source_episodic_ids"] = _strings("source_episodic_ids", source_episodic_ids)
        if metadata is not None:
            value["metadata"] = _mapping("metadata", metadata)
        namespace, key = namespace_for(scope, "semantic"), uuid.uuid4().hex
        texts = index_texts(self._core, namespace, key, value)
        vectors = yield from self._embed_steps([*texts, content])
        probe = vectors[texts[0]] if texts else vectors[content]
        exempt = category in SUMMARY_CATEGORIES  # summaries are never refused or replaced
        for attempt in range(_RETRIES):
            near = []
            if not exempt:
                near = yield Db(
                    near_flow(
                        self._core,
                        label,
                        probe,
                        subject=subject,
                        k=self.conflict_candidates,
                        threshold=self.settings.conflict_similarity_threshold,
                    )
                )
            verdicts = []
            if near:
                existing = [Statement(n.memory.content, n.memory.subject) for n in near]
                verdicts = yield Judge(Statement(content, subject), existing)
            resolution = resolve(
                near,
                verdicts,
                strategy=chosen,
                duplicate_similarity=self.settings.duplicate_similarity,
                min_confidence=self.min_conflict_confidence,
            )
            merged_text, write_vectors = None, vectors
            if resolution.action == "merged":
                target = resolution.existing
                assert target is not None
                merged_text = _text("merged content", (yield Combine(target.content, content)))
                merged_value = {**target.value, "content": merged_text}
                merged_texts = index_texts(self._core, target.namespace, target.key, merged_value)
                more = yield from self._embed_steps(merged_texts)
                write_vectors = {**vectors, **more}
            try:
                result: WriteResult = yield Db(
                    write_semantic_flow(
                        self._core,
                        scope_label=label,
                        namespace=namespace,
                        key=key,
                        value=value,
                        resolution=resolution,
                        merged_text=merged_text,
                        vectors=write_vectors,
                        at=self._now(),
                    )
                )
            except StaleDecisionError:
                if attempt == _RETRIES - 1:
                    raise
                continue
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _update_semantic_steps(
        self,
        scope: str,
        memory_id: str,
        content: str,
        confidence: float | None,
        reason: str | None,
    ) -> Steps[Memory]:
        label = _label(scope)
        _memory_id(memory_id)
        _text("content", content)
        if confidence is not None:
            _unit("confidence", confidence)
        reason = _optional_text("reason", reason)
        target: Memory = yield Db(
            scoped_memory_flow(self._core.dialect, label, memory_id, kinds=["semantic"])
        )
        new_value = {**target.value, "content": content}
        if confidence is not None:
            new_value["confidence"] = confidence
        vectors = yield from self._embed_steps(
            index_texts(self._core, target.namespace, target.key, new_value)
        )
        memory: Memory = yield Db(
            update_semantic_flow(
                self._core,
                scope_label=label,
                memory_id=memory_id,
                content=content,
                confidence=confidence,
                reason=reason,
                vectors=vectors,
                at=self._now(),
            )
        )
        return memory

    def _evolution_steps(self, scope: str, memory_id: str) -> Steps[list[MemoryVersion]]:
        label = _label(scope)
        versions: list[MemoryVersion] = yield Db(
            versions_flow(self._core, label, _memory_id(memory_id))
        )
        return versions

    # -- procedural ----------------------------------------------------------------------
    def _set_procedural_steps(
        self, scope: str, key: str, value: Any, content: str | None
    ) -> Steps[Memory]:
        label = _label(scope)
        key = _text("key", key)
        try:
            shown = json.dumps(value, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError) as err:
            raise InvalidContentError(
                f"value of procedural memory {key!r} must be JSON-serialisable ({err})."
            ) from err
        text = _text("content", content) if content is not None else f"{key}: {shown}"
        stored = {"content": text, "key": key, "value": value}
        namespace = namespace_for(scope, "procedural")
        vectors = yield from self._embed_steps(index_texts(self._core, namespace, "_", stored))
        memory: Memory = yield Db(
            _in_transaction(self._set_procedural_flow(label, namespace, key, stored, vectors))
        )
        return memory

    def _set_procedural_flow(
        self,
        label: str,
        namespace: tuple[str, ...],
        key: str,
        stored: dict[str, Any],
        vectors: dict[str, list[float]],
    ) -> Flow[Memory]:
        core, d = self._core, self._core.dialect
        if d.name == "postgres":
            # Two writers of a new key would both insert: serialise them per (scope, key).
            yield Sql("SELECT pg_advisory_xact_lock(hashtext(?))", [f"{label}\x1f{key}"])
        found = yield from self._procedural_flow(label, key, lock=True)
        at = self._now()
        if found is None:
            new_key = uuid.uuid4().hex
            new_id = item_id(namespace, new_key)
            note = WriteNote(CREATED, {}, {"reinforcement_count": 1, "last_used_at": at})
            yield from core.batch_flow(
                [PutOp(namespace, new_key, stored)], notes={new_id: note}, vectors=vectors, now=at
            )
            return (yield from scoped_memory_flow(d, label, new_id))
        count = found.reinforcement_count + 1
        columns = {"reinforcement_count": count, "last_used_at": at}
        meta = {"reinforcement_count": count}
        updated = {**found.value, **stored}
        if found.content == stored["content"]:
            change = Change(found.id, REINFORCED, value=updated, columns=columns, metadata=meta)
            yield from change_flow(d, [change], at=at, max_chars=self.settings.max_content_chars)
        else:
            yield from core.batch_flow(
                [PutOp(found.namespace, found.key, updated)],
                notes={found.id: WriteNote(REINFORCED, meta, columns)},
                vectors=vectors,
                now=at,
            )
        return (yield from scoped_memory_flow(d, label, found.id))

    def _procedural_flow(self, label: str, key: str, *, lock: bool = False) -> Flow[Memory | None]:
        # The (scope, proc_key) index answers this, no search is involved; kind and status
        # are checked on the few rows it gives, so no other index looks more attractive.
        rows = yield from memories_flow(
            self._core.dialect, "i.scope = ? AND i.proc_key = ?", [label, key], lock=lock
        )
        found = [m for m in rows if m.kind == "procedural" and m.status == "active"]
        return found[0] if found else None

    def _get_procedural_steps(self, scope: str, key: str) -> Steps[Memory | None]:
        label = _label(scope)
        memory: Memory | None = yield Db(self._procedural_flow(label, _text("key", key)))
        if memory is not None:
            self._record_access([memory])
        return memory

    # -- reading -------------------------------------------------------------------------
    def _get_steps(self, scope: str, memory_id: str) -> Steps[Memory | None]:
        label = _label(scope)
        found: list[Memory] = yield Db(
            memories_flow(
                self._core.dialect,
                "i.id = ? AND i.scope = ? AND i.kind IS NOT NULL",
                [_memory_id(memory_id), label],
            )
        )
        self._record_access(found)
        return found[0] if found else None

    def _memories_steps(
        self,
        scope: str,
        kinds: Sequence[str] | str | None,
        statuses: Sequence[str] | None,
        limit: int,
        offset: int,
    ) -> Steps[list[Memory]]:
        label = _label(scope)
        wanted = _kinds(kinds)
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
        order = f"i.created_at, i.id LIMIT {_limit_large(limit)} OFFSET {offset}"
        found: list[Memory] = yield Db(
            memories_flow(self._core.dialect, where, params, order=order)
        )
        return found

    def _retrieve_steps(
        self,
        scope: str,
        query: str,
        kinds: Sequence[str] | str | None,
        limit: int,
        include_inactive: bool,
        as_of: datetime | str | None,
    ) -> Steps[list[ScoredMemory]]:
        label = _label(scope)
        query = _text("query", query)
        wanted, limit = _kinds(kinds), _limit(limit)
        if as_of is not None:
            at = _time("as_of", as_of)
            found: list[ScoredMemory] = yield Db(
                as_of_flow(
                    self._core,
                    label,
                    query,
                    at,
                    kinds=wanted,
                    include_inactive=include_inactive,
                    limit=limit,
                )
            )
            return found
        d = self._core.dialect
        where = f"i.scope = ? AND i.kind IN ({', '.join('?' for _ in wanted)})"
        params: list[Any] = [label, *wanted]
        if not include_inactive:
            now = d.ts_param(self._now())
            where += (
                " AND (i.valid_from IS NULL OR i.valid_from <= ?)"
                " AND (i.valid_until IS NULL OR i.valid_until > ?)"
            )
            params.extend([now, now])
        prefix = (label, wanted[0]) if len(wanted) == 1 else (label,)
        items = yield Db(
            self._core.search_flow(
                SearchOp(prefix, query=query, limit=limit),
                statuses=None if include_inactive else ("active",),
                where=where,
                params=params,
            )
        )
        ids = [item_id(it.namespace, it.key) for it in items]
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        memories: list[Memory] = yield Db(
            memories_flow(d, f"i.id IN ({marks}) AND i.scope = ?", [*ids, label])
        )
        by_id = {m.id: m for m in memories}
        return [
            scored(by_id[i], it.score or 0.0, getattr(it, "scores", {}))
            for i, it in zip(ids, items, strict=True)
            if i in by_id
        ]

    # -- consolidation -------------------------------------------------------------------
    def _consolidate_steps(
        self, scope: str, label: str, *, progress: bool
    ) -> Steps[ConsolidationResult]:
        episodes = yield Db(unconsolidated_flow(self._core, label))
        groups = group_episodes(episodes, gap=self.consolidation_gap, max_size=self.max_group_size)
        memories: list[Memory] = []
        done = skipped = 0
        bar = tqdm(groups, desc=f"consolidating {scope}", unit="group", disable=not progress)
        try:
            for group in bar:
                summary = _checked_summary((yield Summarize(episode_messages(group))))
                value = summary_value(group, summary)
                namespace, key = namespace_for(scope, "semantic"), uuid.uuid4().hex
                vectors = yield from self._embed_steps(
                    index_texts(self._core, namespace, key, value)
                )
                memory = yield Db(
                    write_group_flow(
                        self._core,
                        namespace=namespace,
                        key=key,
                        group=group,
                        value=value,
                        vectors=vectors,
                        at=self._now(),
                    )
                )
                if memory is None:
                    skipped += 1
                else:
                    memories.append(memory)
                    done += len(group)
        finally:
            bar.close()
        return ConsolidationResult(scope, len(groups), done, memories, skipped)

    def _consolidate_public_steps(self, scope: str, progress: bool) -> Steps[ConsolidationResult]:
        return (yield from self._consolidate_steps(scope, _label(scope), progress=progress))

    def _consolidate_due_steps(self, progress: bool) -> Steps[list[ConsolidationResult]]:
        due = yield Db(count_due_flow(self._core, self.settings.consolidation_threshold))
        results = []
        for column, _count in due:
            if "." in column:
                continue  # a nested namespace written through the store, not an engine scope
            scope = scope_id(column)
            results.append((yield from self._consolidate_steps(scope, column, progress=progress)))
        return results

    # -- lifecycle -----------------------------------------------------------------------
    def _decay_steps(self, scope: str, now: datetime | str | None) -> Steps[DecayResult]:
        label = _label(scope)
        at = self._now() if now is None else _time("now", now)
        examined, changes = yield Db(
            decay_flow(
                self._core,
                label,
                at,
                half_life_days=self.settings.decay_half_life_days,
                threshold=self.settings.decay_threshold,
                min_change=self.decay_min_change,
            )
        )
        decayed = [c.memory_id for c in changes if c.value is not None]
        return DecayResult(scope, at, examined, len(changes), decayed)

    def _forget_steps(self, scope: str, memory_id: str, hard: bool) -> Steps[Memory | None]:
        label = _label(scope)
        _memory_id(memory_id)
        if hard:
            yield Db(hard_delete_flow(self._core, label, memory_id))
            return None
        memory: Memory = yield Db(soft_delete_flow(self._core, label, memory_id))
        return memory

    def _compress_steps(
        self, scope: str, memory_ids: Sequence[str] | None
    ) -> Steps[CompressionResult]:
        label = _label(scope)
        d = self._core.dialect
        if memory_ids is None:
            targets: list[Memory] = yield Db(
                memories_flow(
                    d,
                    "i.scope = ? AND i.kind IN ('episodic', 'semantic') AND i.status = 'decayed'",
                    [label],
                )
            )
        else:
            ids = [_memory_id(i) for i in _strings("memory_ids", memory_ids)]
            marks = ", ".join("?" for _ in ids)
            targets = yield Db(
                memories_flow(
                    d, f"i.id IN ({marks}) AND i.scope = ? AND i.kind IS NOT NULL", [*ids, label]
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
        summary = _checked_summary((yield Summarize(messages)))
        value = {
            "content": summary.text,
            "category": COMPRESSED_SUMMARY,
            "key_concepts": list(summary.key_concepts),
            "source_memory_ids": [m.id for m in targets],
        }
        namespace, key = namespace_for(scope, "semantic"), uuid.uuid4().hex
        vectors = yield from self._embed_steps(index_texts(self._core, namespace, key, value))
        memory: Memory = yield Db(
            compress_flow(
                self._core,
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
    def _replay_steps(self, scope: str, at: datetime | str) -> Steps[list[Memory]]:
        label = _label(scope)
        found: list[Memory] = yield Db(replay_flow(self._core.dialect, label, _time("at", at)))
        return found

    def _state_steps(self, scope: str) -> Steps[list[Memory]]:
        label = _label(scope)
        found: list[Memory] = yield Db(live_state_flow(self._core.dialect, label))
        return found

    def _timeline_steps(
        self,
        scope: str,
        since: datetime | str | None,
        until: datetime | str | None,
        types: Sequence[str] | None,
        limit: int,
        memory_id: str | None,
    ) -> Steps[list[Event]]:
        label = _label(scope)
        start = None if since is None else _time("since", since)
        end = None if until is None else _time("until", until)
        if start is not None and end is not None and start > end:
            raise ValidationError(
                f"since ({start.isoformat()}) is after until ({end.isoformat()})."
            )
        chosen = None
        if types is not None:
            chosen = _strings("types", [types] if isinstance(types, str) else types)
            unknown = [t for t in chosen if t not in EVENT_TYPES]
            if unknown:
                raise ValidationError(
                    f"types {unknown} are not event types; known: {', '.join(EVENT_TYPES)}."
                )
        events: list[Event] = yield Db(
            timeline_flow(
                self._core.dialect,
                label,
                since=start,
                until=end,
                types=chosen,
                memory_id=None if memory_id is None else _memory_id(memory_id),
                limit=_limit_large(limit),
            )
        )
        return events

    # -- administration ------------------------------------------------------------------
    def _stats_steps(self, scope: str | None) -> Steps[dict[str, Any]]:
        label = None if scope is None else _label(scope)
        stats: dict[str, Any] = yield Db(_stats_flow(self._core, label))
        if scope is not None:
            stats["scope"] = scope
        return stats

    def _agents_steps(self) -> Steps[list[ScopeCount]]:
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


def _in_transaction(flow: Flow[T]) -> Flow[T]:
    result: T = yield Transaction(flow)
    return result


def _limit_large(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
        raise ValidationError(f"limit must be a whole number in 1..100000, got {value!r}.")
    return value


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
