"""Multi-step flows written once, driven by a sync or an async loop.

Short-term memory's operations (add, consolidate, build the context) are generators that
``yield`` the I/O they need as an effect and receive its result; they never call a log, a
store or a model themselves. :func:`run_sync` performs effects with the sync APIs and
:func:`run_async` with the async twins, so the logic between the I/O exists exactly once.
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
from langgraph.store.base import BaseStore, Op

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.log import LogOp, MessageLog
from langmem_tiers.tiers.base import Summarizer, Tierer

__all__ = [
    "Effect",
    "Flow",
    "LogCall",
    "Runtime",
    "StoreCall",
    "SummarizeCall",
    "TierCall",
    "run_async",
    "run_sync",
]

T = TypeVar("T")


class LogCall(NamedTuple):
    """Run log operations in one batch; the flow receives their results."""

    ops: tuple[LogOp, ...]


class StoreCall(NamedTuple):
    """Run store operations in one batch (``BaseStore.batch``); receives their results."""

    ops: tuple[Op, ...]


class TierCall(NamedTuple):
    """Make tiers 1 and 2 of messages; receives a list of ``MessageTiers``."""

    messages: tuple[BaseMessage, ...]


class SummarizeCall(NamedTuple):
    """Summarise messages; receives a ``Summary``."""

    messages: tuple[BaseMessage, ...]


Effect = LogCall | StoreCall | TierCall | SummarizeCall
"""Any I/O a flow can ask for."""

Flow = Generator[Effect, Any, T]
"""A flow that yields effects and returns ``T``."""


class Runtime(NamedTuple):
    """What effects are performed with."""

    log: MessageLog
    store: BaseStore | None
    tierer: Tierer | None
    summarizer: Summarizer | None


def _missing(what: str) -> ConfigurationError:
    return ConfigurationError(f"this operation needs a {what}, and none was configured.")


def _perform(effect: Effect, runtime: Runtime) -> Any:
    if isinstance(effect, LogCall):
        return runtime.log.batch(effect.ops)
    if isinstance(effect, StoreCall):
        if runtime.store is None:
            raise _missing("store")
        return runtime.store.batch(effect.ops)
    if isinstance(effect, TierCall):
        if runtime.tierer is None:
            raise _missing("tierer")
        return runtime.tierer.tier(effect.messages)
    if runtime.summarizer is None:
        raise _missing("summarizer")
    return runtime.summarizer.summarize(effect.messages)


async def _aperform(effect: Effect, runtime: Runtime) -> Any:
    if isinstance(effect, LogCall):
        return await runtime.log.abatch(effect.ops)
    if isinstance(effect, StoreCall):
        if runtime.store is None:
            raise _missing("store")
        return await runtime.store.abatch(effect.ops)
    if isinstance(effect, TierCall):
        if runtime.tierer is None:
            raise _missing("tierer")
        return await runtime.tierer.atier(effect.messages)
    if runtime.summarizer is None:
        raise _missing("summarizer")
    return await runtime.summarizer.asummarize(effect.messages)


def run_sync(flow: Flow[T], runtime: Runtime) -> T:
    """Drive ``flow`` to its end with the sync APIs; answers what it returns."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result, error = _perform(effect, runtime), None
        except Exception as err:  # handed to the flow, which decides
            result, error = None, err


async def run_async(flow: Flow[T], runtime: Runtime) -> T:
    """Async twin of :func:`run_sync`: the same flow, effects awaited."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(result)
        except StopIteration as stop:
            value: T = stop.value
            return value
        try:
            result, error = await _aperform(effect, runtime), None
        except Exception as err:  # handed to the flow, which decides
            result, error = None, err
