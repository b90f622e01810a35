"""The write pipeline: how every memory the product writes is stored.

A write names a memory namespace (``(*scope, kind)``), a key and a value, as a
LangGraph ``PutOp`` does. Whatever surface it comes from (the chat graph, short-term
consolidation, ``ingest``, the HTTP API, an agent's middleware), it goes through the
same steps, each memory in one transaction:

1. **validate** the namespace, key and value completely before any I/O (any JSON object;
   structured ``content`` is rendered to text for indexing, see ``records.memory_text``);
   a semantic statement's relations ("I live in Berlin": ``user lives_in Berlin``) are
   kept in its value under ``relations`` (see ``relations.py``);
2. **duplicate check**: the same value at the same key again is returned, not stored
   (retries are idempotent); a semantic memory near-identical to an active one of the
   scope is returned instead of a copy;
3. **conflict check and strategy** (semantic memories): the scope's near memories are
   checked for contradictions and the strategy (``supersede`` by default) is applied,
   so a contradicted fact is superseded whichever way it arrived;
4. **version**: a new value at an existing key is a new version of that memory
   (semantic), or reinforces it (procedural); episodic memories are immutable;
5. **event**: every change writes its event in the same transaction.

The product's own writers call :meth:`MemoryEngine.write
<langmem_tiers.long_term.engine.engine.MemoryEngine.write>`. A raw ``BaseStore.put`` of a
memory namespace (LangMem's tools, an agent's ``store.put``) comes here too, once an engine
is built on the store (``MemoryEngine.put_many``, see ``store/memory_puts.py``), with
``raw=True``: it keeps LangGraph's upsert by key, so a new value at the key of an episode,
or of a memory that is no longer current, overwrites it there (with its event) instead of
being refused. The engine writes through ``StoreCore.batch_flow``, below the store's
``batch``, so none of these steps reaches the store's pipeline again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from langgraph.store.base import PutOp

from langmem_tiers.config import ConflictStrategy
from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.engine.conflicts import NearMemory, Resolution, resolve
from langmem_tiers.long_term.engine.contradiction import Statement
from langmem_tiers.long_term.engine.entities import record_entities_flow
from langmem_tiers.long_term.engine.lifecycle import StaleDecisionError, memories_flow
from langmem_tiers.long_term.engine.models import (
    CREATED,
    SUMMARY_CATEGORIES,
    Memory,
    WriteResult,
)
from langmem_tiers.long_term.engine.relations import value_with_relations
from langmem_tiers.long_term.engine.semantic import (
    NearCheck,
    index_texts,
    near_flow,
    revise_flow,
    slot_related_flow,
    write_semantic_flow,
)
from langmem_tiers.long_term.engine.steps import Combine, Db, Judge, Steps
from langmem_tiers.long_term.engine.validate import text as checked_text
from langmem_tiers.long_term.store.core import WriteNote
from langmem_tiers.long_term.store.records import (
    ItemRecord,
    validate_key,
    validate_namespace,
    validate_value,
)
from langmem_tiers.long_term.store.writes import validate_ttl

if TYPE_CHECKING:
    from langmem_tiers.long_term.engine.operations import Operations

__all__ = ["PreparedWrite", "names_steps", "prepare_writes", "semantic_steps", "write_steps"]

# Decisions retried when a memory they were based on changed, or a near one appeared,
# meanwhile. Concurrent first facts about one subject commit one per round, so this
# bounds how many such writers can race without one of them giving up.
_RETRIES = 10


class PreparedWrite(NamedTuple):
    """A validated write: its namespace, key and the record of its value; ``new_key``:
    the key was made for this write (a random UUID), so no memory holds it yet; ``ttl``:
    the minutes the memory at the key lives (None: it does not expire)."""

    namespace: tuple[str, ...]
    key: str
    record: ItemRecord
    new_key: bool = False
    ttl: float | None = None


def prepare_writes(
    ops: Operations, writes: Sequence[PutOp], *, new_keys: bool = False
) -> list[PreparedWrite]:
    """Validate every write before any I/O (a bad one stores nothing of the batch);
    ``new_keys``: the caller made every key for these writes (see :func:`write_steps`)."""
    out = []
    for n, op in enumerate(writes):
        if not isinstance(op, PutOp):
            raise ValidationError(
                f"writes[{n}] must be a PutOp(namespace, key, value), got {type(op).__name__}."
            )
        validate_namespace(op.namespace)
        key = uuid.uuid4().hex if op.key is None else validate_key(op.key)
        if op.value is None:
            raise ValidationError(
                f"writes[{n}] ({'/'.join(op.namespace)}/{key}) has no value; the write "
                "pipeline stores memories: forget one with MemoryEngine.forget."
            )
        record = validate_value(
            op.namespace, key, op.value, max_chars=ops.settings.max_content_chars
        )
        if record.kind is None:
            raise ValidationError(
                f"writes[{n}]: namespace {op.namespace!r} is not a memory namespace; it must "
                "end in 'episodic', 'semantic' or 'procedural' (store other documents "
                "with store.put)."
            )
        related = value_with_relations(record.value) if record.kind == "semantic" else None
        if related is not None:  # the relations its statement states (see ``relations``)
            record = validate_value(
                op.namespace, key, related, max_chars=ops.settings.max_content_chars
            )
        out.append(
            PreparedWrite(
                tuple(op.namespace), key, record, new_keys or op.key is None, validate_ttl(op.ttl)
            )
        )
    return out


def write_steps(
    ops: Operations,
    writes: Sequence[PutOp],
    strategy: ConflictStrategy | None = None,
    *,
    new_keys: bool = False,
    raw: bool = False,
) -> Steps[list[WriteResult]]:
    """Run writes through the pipeline; one :class:`WriteResult` per write, in order.

    Episodic writes of the batch share one transaction (they have no conflicts to
    check); each semantic and procedural write has its own. ``new_keys``: the caller
    made every key for these writes just now (random UUIDs), so an episode is not looked
    for before it is stored (as it is when a retry may bring a key again). ``raw``: the
    writes are a store's puts, whose key is written whatever it held (see the module).
    """
    prepared = prepare_writes(ops, writes, new_keys=new_keys)
    results: dict[int, WriteResult] = {}
    episodic = [(i, p) for i, p in enumerate(prepared) if p.record.kind == "episodic"]
    if episodic:
        stored = yield from _episodic_steps(ops, [p for _, p in episodic], raw=raw)
        results.update(zip((i for i, _ in episodic), stored, strict=True))
    for i, p in enumerate(prepared):
        if p.record.kind == "semantic":
            results[i] = yield from _semantic_at_key_steps(ops, p, strategy, raw=raw)
        elif p.record.kind == "procedural":
            results[i] = yield from _procedural_steps(ops, p)
    yield from names_steps(ops, list(results.values()))
    return [results[i] for i in range(len(prepared))]


# What a write stored anew (a duplicate, a refusal or a reinforcement stored nothing new).
_NAMES_RECORDED = frozenset({"created", "superseded", "kept_both", "merged", "updated"})


def names_steps(ops: Operations, results: Sequence[WriteResult | Memory]) -> Steps[None]:
    """Record the entities the memories written name, in their scopes (see ``entities``)."""
    written = [
        r if isinstance(r, Memory) else r.memory
        for r in results
        if isinstance(r, Memory) or r.action in _NAMES_RECORDED
    ]
    if written:
        yield Db(record_entities_flow(ops.core.dialect, written))


def _existing_steps(ops: Operations, ids: Sequence[str]) -> Steps[dict[str, Memory]]:
    if not ids:
        return {}
    in_ids, params = ops.core.dialect.in_list("i.id", ids)
    found: list[Memory] = yield Db(memories_flow(ops.core.dialect, in_ids, params))
    return {m.id: m for m in found}


def _holds(existing: Memory, record: ItemRecord) -> bool:
    """Whether the memory holds the value already (the engine adds links, like ``supersedes``)."""
    return all(existing.value.get(k) == v for k, v in record.value.items())


def _episodic_steps(
    ops: Operations, writes: Sequence[PreparedWrite], *, raw: bool = False
) -> Steps[list[WriteResult]]:
    """Immutable events: a key already stored is returned as it is (an idempotent retry);
    ``raw``: a new value at a stored key overwrites it, as a store's put does."""
    ids = [p.record.id for p in writes]
    before = yield from _existing_steps(ops, [p.record.id for p in writes if not p.new_key])
    fresh = {p.record.id: p for p in writes if p.record.id not in before}
    changed = {
        p.record.id: p
        for p in writes
        if raw and p.record.id in before and not _holds(before[p.record.id], p.record)
    }
    if fresh or changed:
        yield Db(
            ops.core.batch_flow(
                [
                    PutOp(p.namespace, p.key, p.record.value, ttl=p.ttl)
                    for p in (*fresh.values(), *changed.values())
                ],
                notes={i: WriteNote(CREATED) for i in fresh},
            )
        )
    after = yield from _existing_steps(ops, [*fresh, *changed])
    return [
        WriteResult("created", after[i])
        if i in fresh
        else WriteResult("updated", after[i], reason="written again at its key")
        if i in changed
        else WriteResult("duplicate", before[i], reason="this episode is stored already")
        for i in ids
    ]


def _semantic_at_key_steps(
    ops: Operations, write: PreparedWrite, strategy: ConflictStrategy | None, *, raw: bool = False
) -> Steps[WriteResult]:
    record = write.record
    existing = (yield from _existing_steps(ops, [record.id])).get(record.id)
    if existing is not None:
        if _holds(existing, record):
            return WriteResult("duplicate", existing, reason="stored already at this key")
        if raw and existing.status != "active":
            # Only current memories get versions; a store's put still writes its key.
            put = PutOp(write.namespace, write.key, record.value, ttl=write.ttl)
            yield Db(ops.core.batch_flow([put]))
            found = yield from _existing_steps(ops, [record.id])
            return WriteResult("updated", found[record.id], reason="written again at its key")
        texts = index_texts(ops.core, write.namespace, write.key, record.value)
        vectors = yield from ops.embed_steps(texts)
        memory: Memory = yield Db(
            revise_flow(
                ops.core,
                scope_label=record.scope,
                memory_id=existing.id,
                value=record.value,
                reason="written again at its key",
                vectors=vectors,
                at=ops.now(),
                ttl=write.ttl,
            )
        )
        return WriteResult("updated", memory)
    chosen = strategy if strategy is not None else ops.settings.conflict_strategy
    return (yield from semantic_steps(ops, write, chosen))


def semantic_steps(
    ops: Operations, write: PreparedWrite, strategy: ConflictStrategy
) -> Steps[WriteResult]:
    """A new semantic memory: duplicate and conflict checks, the strategy, its first version."""
    core, record = ops.core, write.record
    text = record.text
    texts = index_texts(core, write.namespace, write.key, record.value)
    vectors = yield from ops.embed_steps([*texts, text])
    probe = vectors[texts[0]] if texts else vectors[text]
    exempt = record.category in SUMMARY_CATEGORIES  # summaries are never refused or replaced
    for attempt in range(_RETRIES):
        near = [] if exempt else (yield from _near_steps(ops, record, probe))
        verdicts = []
        if near:
            existing = [Statement(n.memory.content, n.memory.subject) for n in near]
            verdicts = yield Judge(Statement(text, record.subject), existing)
        resolution = resolve(
            near,
            verdicts,
            strategy=strategy,
            duplicate_similarity=ops.settings.duplicate_similarity,
            min_confidence=ops.min_conflict_confidence,
        )
        merged_text, write_vectors = None, vectors
        if resolution.action == "merged":
            merged_text, write_vectors = yield from _merged_steps(ops, resolution, text, vectors)
        try:
            result: WriteResult = yield Db(
                write_semantic_flow(
                    core,
                    scope_label=record.scope,
                    namespace=write.namespace,
                    key=write.key,
                    value=record.value,
                    resolution=resolution,
                    merged_text=merged_text,
                    vectors=write_vectors,
                    at=ops.now(),
                    ttl=write.ttl,
                    check=None
                    if exempt
                    else NearCheck(
                        probe,
                        record.subject,
                        ops.conflict_candidates,
                        ops.settings.conflict_similarity_threshold,
                        frozenset(n.memory.id for n in near),
                    ),
                )
            )
        except StaleDecisionError:
            if attempt == _RETRIES - 1:
                raise
            continue
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _near_steps(ops: Operations, record: ItemRecord, probe: list[float]) -> Steps[list[NearMemory]]:
    """The stored memories a new one may repeat or contradict: near by vector, and those
    the relation slots tie to it however far their vectors."""
    near: list[NearMemory] = yield Db(
        near_flow(
            ops.core,
            record.scope,
            probe,
            subject=record.subject,
            k=ops.conflict_candidates,
            threshold=ops.settings.conflict_similarity_threshold,
        )
    )
    near += yield Db(
        slot_related_flow(
            ops.core,
            record.scope,
            record.text,
            subject=record.subject,
            seen={n.memory.id for n in near},
        )
    )
    return near


def _merged_steps(
    ops: Operations, resolution: Resolution, text: str, vectors: dict[str, list[float]]
) -> Steps[tuple[str, dict[str, list[float]]]]:
    """The merge target's text combined with the new one, and the vectors to write it with."""
    target = resolution.existing
    assert target is not None
    merged_text = checked_text("merged content", (yield Combine(target.content, text)))
    merged_value = {**target.value, "content": merged_text}
    merged_texts = index_texts(ops.core, target.namespace, target.key, merged_value)
    more = yield from ops.embed_steps(merged_texts)
    return merged_text, {**vectors, **more}


def _procedural_steps(ops: Operations, write: PreparedWrite) -> Steps[WriteResult]:
    """A preference at its key: created, or reinforced when it is there already."""
    record = write.record
    vectors = yield from ops.embed_steps(
        index_texts(ops.core, write.namespace, write.key, record.value)
    )
    memory, reinforced = yield Db(
        ops._store_procedural_flow(
            record.scope,
            write.namespace,
            write.key,
            dict(record.value),
            vectors,
            where=("i.id = ?", [record.id]),
            ttl=write.ttl,
        )
    )
    return WriteResult("reinforced" if reinforced else "created", memory)
