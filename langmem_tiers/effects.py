"""The one driver of generator flows, sync and async.

Logic that does I/O is written once, as a generator that ``yield``s a request (a small
named tuple saying what it needs) and receives its result. :func:`drive` answers each
request with a blocking handler and :func:`adrive` with an awaitable one, chosen from a
table by the request's type, so the sync and async APIs share every line but the I/O.
Each layer brings its own requests and tables: SQL statements and embeddings
(``sql/flow.py``), short-term memory's log, store, tierer and summariser calls
(``short_term/effects.py``), the engine's database and model steps
(``long_term/engine/steps.py``) and the graphs' calls (``graph/flows.py``).

One exception policy for all of them: whatever a handler raises, cancellation included,
is thrown into the flow at its ``yield``, where the flow may handle it (roll back, fall
back, retry) or let it propagate; and the generator is closed in ``finally``, so its own
``finally`` blocks run even when the caller stops waiting.

Example:
    >>> import asyncio
    >>> from typing import NamedTuple
    >>> class Double(NamedTuple):
    ...     n: int
    >>> def flow():
    ...     try:
    ...         x = yield Double(21)
    ...         y = yield Double(-1)
    ...     except ValueError as err:
    ...         return f"handled: {err}"
    ...     return x + y
    >>> def double(r):
    ...     if r.n < 0:
    ...         raise ValueError("negative")
    ...     return 2 * r.n
    >>> async def adouble(r):
    ...     return double(r)
    >>> drive(flow(), {Double: double}), asyncio.run(adrive(flow(), {Double: adouble}))
    ('handled: negative', 'handled: negative')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, TypeVar

__all__ = ["AsyncHandlers", "Handlers", "adrive", "drive"]

T = TypeVar("T")

Handlers = Mapping[type, Callable[[Any], Any]]
"""Request type -> the blocking function that answers it."""

AsyncHandlers = Mapping[type, Callable[[Any], Awaitable[Any]]]
"""Request type -> the coroutine function that answers it."""


def _handler(handlers: Mapping[type, Any], request: object) -> Any:
    handler = handlers.get(type(request))
    if handler is None:
        for kind, candidate in handlers.items():
            if isinstance(request, kind):
                return candidate
        raise TypeError(f"no handler for flow request {request!r}")
    return handler


def drive(flow: Generator[Any, Any, T], handlers: Handlers) -> T:
    """Run ``flow`` to its end, answering each request with its blocking handler."""
    result: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                request = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                value: T = stop.value
                return value
            handler = _handler(handlers, request)
            try:
                result, error = handler(request), None
            except BaseException as err:  # the flow decides what a failure means
                result, error = None, err
    finally:
        flow.close()


async def adrive(flow: Generator[Any, Any, T], handlers: AsyncHandlers) -> T:
    """Async twin of :func:`drive`: the same flow, each request awaited."""
    result: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                request = flow.throw(error) if error is not None else flow.send(result)
            except StopIteration as stop:
                value: T = stop.value
                return value
            handler = _handler(handlers, request)
            try:
                result, error = await handler(request), None
            except BaseException as err:  # cancellation too: the flow may clean up
                result, error = None, err
    finally:
        flow.close()
