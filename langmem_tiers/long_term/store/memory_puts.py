"""Raw puts of memories: what the store hands to the write pipeline, and how.

A ``BaseStore.put`` (or ``aput``, or a ``PutOp`` of ``batch``) whose namespace is a memory
namespace (``(*scope, kind)``, kind ``episodic``, ``semantic`` or ``procedural``: see
``scope.parse_memory_namespace``) is a memory written around the product's own writers:
LangMem's tools, an agent calling ``store.put``. When the store has a
:class:`PutPipeline` (a ``MemoryEngine`` built on the store installs itself), those puts
go through it: validate, duplicate check, conflict check and strategy, version, event.
Puts of other namespaces, deletes and reads stay LangGraph's, in the batch's one
transaction.

The pipeline is a protocol here because the store cannot import the engine; the engine
writes through ``StoreCore.batch_flow``, below the store's ``batch``, so its own writes
never come back to the pipeline.

Example:
    >>> from langgraph.store.base import GetOp, PutOp
    >>> split = split_memory_puts(
    ...     [
    ...         PutOp(("u1", "semantic"), "f1", {"content": "Jo likes tea"}),
    ...         PutOp(("docs",), "d1", {"text": "a document"}),
    ...         GetOp(("u1", "semantic"), "f1"),
    ...     ],
    ...     max_chars=10_000,
    ... )
    >>> [op.key for op in split.memory], [type(op).__name__ for _, op in split.rest]
    (['f1'], ['PutOp', 'GetOp'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from langgraph.store.base import Op, PutOp

from langmem_tiers.long_term.store.records import (
    as_namespace,
    validate_key,
    validate_namespace,
    validate_value,
)
from langmem_tiers.long_term.store.scope import parse_memory_namespace
from langmem_tiers.long_term.store.writes import validate_ttl

__all__ = ["MemorySplit", "PutPipeline", "split_memory_puts"]


@runtime_checkable
class PutPipeline(Protocol):
    """What takes a store's raw puts of memories (``MemoryEngine`` satisfies it).

    It keeps LangGraph's upsert by key: a put at a key writes that key (a new version of
    the memory there), never another; but a near duplicate of a current memory, or a
    statement the conflict strategy refuses, stores nothing new.
    """

    def put_many(self, puts: Sequence[PutOp]) -> Sequence[Any]:
        """Write the puts (each has a value and a memory namespace)."""
        ...

    async def aput_many(self, puts: Sequence[PutOp]) -> Sequence[Any]:
        """Async twin of :meth:`put_many`."""
        ...


class MemorySplit(NamedTuple):
    """A batch split in two: the puts of memories for the pipeline, and the rest for
    the store (each op with its position in the batch, so results go back in order)."""

    memory: list[PutOp]
    rest: list[tuple[int, Op]]


def split_memory_puts(ops: Sequence[Op], *, max_chars: int) -> MemorySplit | None:
    """The memory puts of ``ops`` apart from the rest; None when there are none.

    Of several puts of one key the last wins, as in one batch of the store, so a delete
    and a put of the same key never run in the two parts. The memory puts are validated
    here, before either part does any I/O: a bad one stores nothing of the batch.
    """
    last: dict[tuple[tuple[str, ...], str], tuple[int, PutOp]] = {}
    for i, op in enumerate(ops):
        if isinstance(op, PutOp):
            last[(as_namespace(op.namespace), str(op.key))] = (i, op)
    memory_at = {
        i
        for (namespace, _), (i, op) in last.items()
        if op.value is not None and parse_memory_namespace(namespace).kind is not None
    }
    if not memory_at:
        return None
    memory: list[PutOp] = []
    rest: list[tuple[int, Op]] = []
    for i, op in enumerate(ops):
        if i in memory_at:
            assert isinstance(op, PutOp)
            namespace = as_namespace(op.namespace)
            validate_namespace(namespace, reserved_ok=True)
            key = validate_key(op.key)
            validate_ttl(op.ttl)
            validate_value(namespace, key, op.value, max_chars=max_chars)
            memory.append(op._replace(namespace=namespace, key=key))
        elif not isinstance(op, PutOp) or last[(as_namespace(op.namespace), str(op.key))][0] == i:
            rest.append((i, op))
    return MemorySplit(memory, rest)
