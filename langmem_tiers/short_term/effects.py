"""Multi-step flows written once, driven by a sync or an async loop.

Short-term memory's operations (add, consolidate, build the context) are generators that
``yield`` the I/O they need as an effect and receive its result; they never call a log, a
store or a model themselves. :func:`run_sync` performs effects with the sync APIs and
:func:`run_async` with the async twins (through :mod:`langmem_tiers.effects`), so the logic between the I/O exists exactly once.
A failed effect is thrown back into the flow at its ``yield``, where the flow can handle it.

Example:
    >>> from langmem_tiers.short_term.log import InMemoryMessageLog, NextIdOp
    >>> def flow():
    ...     (next_id,) = yield LogCall((NextIdOp("s1"),))
    ...     return f"next is {next_id}"
    >>> run_sync(flow(), Runtime(InMemoryMessageLog(), None, None, None))
    'next is m1'
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore, Op, PutOp

from langmem_tiers.effects import adrive, drive
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.log import LogOp, MessageLog
from langmem_tiers.short_term.writer import MemoryWriter, StorePuts
from langmem_tiers.tiers.base import Summarizer, Tierer

__all__ = [
    "Effect",
    "Flow",
    "LogCall",
    "Runtime",
    "StoreCall",
    "SummarizeCall",
    "TierCall",
    "WriteCall",
    "run_async",
    "run_sync",
]

T = TypeVar("T")
_T = TypeVar("_T")


class LogCall(NamedTuple):
    """Run log operations in one batch; the flow receives their results."""

    ops: tuple[LogOp, ...]


class StoreCall(NamedTuple):
    """Run store operations in one batch (``BaseStore.batch``); receives their results."""

    ops: tuple[Op, ...]


class WriteCall(NamedTuple):
    """Write memories through the runtime's :class:`~langmem_tiers.short_term.writer.MemoryWriter`
    (the engine's pipeline); receives one result per write."""

    ops: tuple[PutOp, ...]


class TierCall(NamedTuple):
    """Make tiers 1 and 2 of messages; receives a list of ``MessageTiers``."""

    messages: tuple[BaseMessage, ...]


class SummarizeCall(NamedTuple):
    """Summarise messages; receives a ``Summary``."""

    messages: tuple[BaseMessage, ...]


Effect = LogCall | StoreCall | WriteCall | TierCall | SummarizeCall
"""Any I/O a flow can ask for."""

Flow = Generator[Effect, Any, T]
"""A flow that yields effects and returns ``T``."""


class Runtime(NamedTuple):
    """What effects are performed with."""

    log: MessageLog
    store: BaseStore | None
    tierer: Tierer | None
    summarizer: Summarizer | None
    writer: MemoryWriter | None = None
    """Where memories are written (``None``: puts into ``store``)."""


def _missing(what: str) -> ConfigurationError:
    return ConfigurationError(f"this operation needs a {what}, and none was configured.")


def _needs(what: str, value: _T | None) -> _T:
    if value is None:
        raise _missing(what)
    return value


def _write(runtime: Runtime) -> MemoryWriter:
    # Without a writer (a runtime built by hand), memories are plain puts into the store.
    return (
        runtime.writer if runtime.writer is not None else StorePuts(_needs("store", runtime.store))
    )


def run_sync(flow: Flow[T], runtime: Runtime) -> T:
    """Drive ``flow`` to its end with the sync APIs; answers what it returns."""
    return drive(
        flow,
        {
            LogCall: lambda e: runtime.log.batch(e.ops),
            StoreCall: lambda e: _needs("store", runtime.store).batch(e.ops),
            WriteCall: lambda e: _write(runtime).write_many(e.ops),
            TierCall: lambda e: _needs("tierer", runtime.tierer).tier(e.messages),
            SummarizeCall: lambda e: _needs("summarizer", runtime.summarizer).summarize(e.messages),
        },
    )


async def run_async(flow: Flow[T], runtime: Runtime) -> T:
    """Async twin of :func:`run_sync`: the same flow, effects awaited."""
    return await adrive(
        flow,
        {
            LogCall: lambda e: runtime.log.abatch(e.ops),
            StoreCall: lambda e: _needs("store", runtime.store).abatch(e.ops),
            WriteCall: lambda e: _write(runtime).awrite_many(e.ops),
            TierCall: lambda e: _needs("tierer", runtime.tierer).atier(e.messages),
            SummarizeCall: lambda e: _needs("summarizer", runtime.summarizer).asummarize(
                e.messages
            ),
        },
    )
