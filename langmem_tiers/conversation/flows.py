"""Node logic written once, as generators, and driven by a sync or an async loop.

A graph node that does I/O (the short-term memory, the store, the model) is written as
a generator that ``yield``s a :class:`Call` naming a sync method and its async twin, and
receives the result. :func:`drive` performs calls with the sync method, :func:`adrive`
awaits the async twin (both through :mod:`langmem_tiers.effects`), so ``invoke`` and
``ainvoke`` run the same logic. A call that raises is thrown back into the generator at
its ``yield``, where the flow decides.

Example:
    >>> import asyncio
    >>> class Box:
    ...     def get(self, key: str) -> str:
    ...         return f"sync {key}"
    ...     async def aget(self, key: str) -> str:
    ...         return f"async {key}"
    >>> def flow():
    ...     value = yield twin(Box(), "get", "k")
    ...     return value.upper()
    >>> drive(flow()), asyncio.run(adrive(flow()))
    ('SYNC K', 'ASYNC K')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, NamedTuple, TypeVar

from langmem_tiers import effects

__all__ = ["Call", "Flow", "adrive", "drive", "twin"]

T = TypeVar("T")


class Call(NamedTuple):
    """One I/O step: ``sync(*args, **kwargs)`` or ``await async_(*args, **kwargs)``."""

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] | None = None


Flow = Generator[Call, Any, T]
"""A flow that yields calls and returns ``T``."""


def twin(obj: Any, name: str, *args: Any, **kwargs: Any) -> Call:
    """The call of ``obj.<name>`` and its async twin ``obj.a<name>``."""
    return Call(getattr(obj, name), getattr(obj, "a" + name), args, kwargs)


def drive(flow: Flow[T]) -> T:
    """Run ``flow`` to its end with the sync methods; answers what it returns."""
    return effects.drive(flow, {Call: lambda c: c.sync(*c.args, **(c.kwargs or {}))})


async def adrive(flow: Flow[T]) -> T:
    """Async twin of :func:`drive`: the same flow, each call awaited."""
    return await effects.adrive(flow, {Call: lambda c: c.async_(*c.args, **(c.kwargs or {}))})
