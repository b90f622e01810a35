"""How short-term memory writes long-term memories: a small interface the engine implements.

Short-term memory persists summaries, archived messages and a user's facts. With the
package's store these go through the memory engine's write pipeline (validation,
duplicate and conflict checks, versions, events), so a fact that contradicts an older one
supersedes it however it arrived. Short-term memory only knows :class:`MemoryWriter`:
:class:`~langmem_tiers.long_term.engine.engine.MemoryEngine` satisfies it, and
:func:`memory_writer` picks the engine for a
:class:`~langmem_tiers.long_term.store.store.TieredMemoryStore`, or LangGraph's plain
upsert (:class:`StorePuts`) for any other ``BaseStore`` (which has no engine).

Example:
    >>> from langgraph.store.base import PutOp
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> writer = memory_writer(store)
    >>> type(writer).__name__
    'StorePuts'
    >>> _ = writer.write_many([PutOp(("u1", "semantic"), "k", {"content": "Jo likes tea"})])
    >>> store.get(("u1", "semantic"), "k").value
    {'content': 'Jo likes tea'}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, PutOp

__all__ = ["MemoryWriter", "StorePuts", "memory_writer"]


@runtime_checkable
class MemoryWriter(Protocol):
    """Writes memories (``PutOp`` of memory namespaces) as one step of a flow.

    Answers one result per write (the engine's ``WriteResult``; ``None`` from a plain
    store). A failure raises, and the caller keeps what it would have removed.
    """

    def write_many(self, writes: Sequence[PutOp]) -> Sequence[Any]:
        """Store the writes."""
        ...

    async def awrite_many(self, writes: Sequence[PutOp]) -> Sequence[Any]:
        """Async twin of :meth:`write_many`."""
        ...


class StorePuts:
    """The writer of a ``BaseStore`` without an engine: LangGraph's upsert, one batch."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    def write_many(self, writes: Sequence[PutOp]) -> list[Any]:
        """Put every write in one ``batch``."""
        self.store.batch(list(writes))
        return [None] * len(writes)

    async def awrite_many(self, writes: Sequence[PutOp]) -> list[Any]:
        """Async twin of :meth:`write_many`."""
        await self.store.abatch(list(writes))
        return [None] * len(writes)


def memory_writer(store: BaseStore) -> MemoryWriter:
    """The write pipeline of the package's store (a memory engine), else plain puts.

    Only the package's own store class gets an engine: a wrapper around it (a store
    that adds behaviour to ``batch``) is written through, as any ``BaseStore``.
    """
    from langmem_tiers.long_term.store.store import TieredMemoryStore

    if type(store) is TieredMemoryStore:
        # Imported here: the engine is the long-term side's, chosen when a store is given.
        from langmem_tiers.long_term.engine.engine import MemoryEngine

        return MemoryEngine(store)
    return StorePuts(store)
