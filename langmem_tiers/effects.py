"""The one driver of generator flows, sync and async.

Logic that does I/O is written once, as a generator that ``yield``s a request (a small
named tuple saying what it needs) and receives its result. :func:`drive` answers each
request with a blocking handler and :func:`adrive` with an awaitable one, chosen from a
table by the request's type, so the sync and async APIs share every line but the I/O.
Where the I/O blocks (sqlite3, sync psycopg), :func:`adrive_offloaded` answers the
blocking requests in a worker thread, a run of them per hop. Each layer brings its own
requests and tables: SQL statements and embeddings (``sql/flow.py``), short-term
memory's log, store, tierer and summariser calls (``short_term/effects.py``), the
engine's database and model steps (``long_term/engine/steps.py``) and the conversation's calls
(``conversation/flows.py``).

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

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any, TypeVar

__all__ = ["AsyncHandlers", "Handlers", "adrive", "adrive_offloaded", "drive"]

T = TypeVar("T")

Handlers = Mapping[type, Callable[[Any], Any]]
"""Request type -> the blocking function that answers it."""

AsyncHandlers = Mapping[type, Callable[[Any], Awaitable[Any]]]
"""Request type -> the coroutine function that answers it."""


def _find_handler(handlers: Mapping[type, Any], request: object) -> Any:
    handler = handlers.get(type(request))
    if handler is None:
        for kind, candidate in handlers.items():
            if isinstance(request, kind):
                return candidate
    return handler


def _no_handler(request: object) -> TypeError:
    return TypeError(f"no handler for flow request {request!r}")


def _handler(handlers: Mapping[type, Any], request: object) -> Any:
    handler = _find_handler(handlers, request)
    if handler is None:
        raise _no_handler(request)
    return handler


def drive(flow: Generator[Any, Any, T], handlers: Handlers) -> T:
    """Run ``flow`` to its end, answering each request with its blocking handler."""
    try:
        finished, value = _advance(flow, handlers, None, None)
        if not finished:
            raise _no_handler(value)
        returned: T = value
        return returned
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
            result, error = await _answer(_handler(handlers, request), request)
    finally:
        flow.close()


async def _answer(
    handler: Callable[[Any], Awaitable[Any]], request: object
) -> tuple[Any, BaseException | None]:
    """The awaited handler's (result, None), or (None, what it raised) for the flow."""
    try:
        return await handler(request), None
    except BaseException as err:  # cancellation too: the flow may clean up
        return None, err


def _advance(
    flow: Generator[Any, Any, Any],
    blocking: Handlers,
    result: Any,
    error: BaseException | None,
    cancelled: threading.Event | None = None,
) -> tuple[bool, Any]:
    """Resume ``flow`` and answer its ``blocking`` requests until it returns (True, its
    value), asks for something else or is cancelled (False, the request unanswered)."""
    while True:
        try:
            request = flow.throw(error) if error is not None else flow.send(result)
        except StopIteration as stop:  # a future cannot carry StopIteration: a value
            return True, stop.value
        handler = _find_handler(blocking, request)
        if handler is None or (cancelled is not None and cancelled.is_set()):
            return False, request
        try:
            result, error = handler(request), None
        except BaseException as err:  # the flow decides what a failure means
            result, error = None, err


async def _outcome(run: asyncio.Future[tuple[bool, Any]]) -> tuple[bool, Any]:
    """The run's result once its thread has left the flow, whatever else is cancelled."""
    while not run.done():
        try:
            await asyncio.shield(run)
        except asyncio.CancelledError:
            continue
    return run.result()


async def adrive_offloaded(
    flow: Generator[Any, Any, T], blocking: Handlers, awaited: AsyncHandlers
) -> T:
    """Async twin of :func:`drive` for flows whose I/O blocks (sqlite3, sync psycopg).

    :func:`adrive` with handlers that each hop to a worker thread pays a round trip
    between the event loop and a thread per request: measured on the memory engine over
    SQLite, an episodic add's hops cost more than the add's own work. Here a worker
    thread resumes the flow itself and answers its ``blocking``
    requests in a row, so a run of them costs one hop; a request of ``awaited`` (a model
    call, say) is awaited on the loop, where it holds no thread, and the next run goes
    back to a thread.

    Cancellation waits for the request in progress (a thread cannot stop in the middle
    of a transaction), then is thrown into the flow at its next request, as in
    :func:`adrive`.

    Example:
        >>> import asyncio, threading
        >>> from typing import NamedTuple
        >>> class Read(NamedTuple):
        ...     key: str
        >>> class Ask(NamedTuple):
        ...     question: str
        >>> def flow():
        ...     a = yield Read("a")
        ...     b = yield Read("b")
        ...     answer = yield Ask("why?")
        ...     return a, b, answer
        >>> def read(r):
        ...     return r.key, threading.current_thread() is threading.main_thread()
        >>> async def ask(r):
        ...     return "because", threading.current_thread() is threading.main_thread()
        >>> asyncio.run(adrive_offloaded(flow(), {Read: read}, {Ask: ask}))
        (('a', False), ('b', False), ('because', True))
    """
    loop = asyncio.get_running_loop()
    result: Any = None
    error: BaseException | None = None
    try:
        while True:
            stop = threading.Event()
            run = loop.run_in_executor(
                None, contextvars.copy_context().run, _advance, flow, blocking, result, error, stop
            )
            try:
                finished, value = await asyncio.shield(run)
            except asyncio.CancelledError as cancelled:
                stop.set()
                finished, value = await _outcome(run)
                if finished:
                    raise
                result, error = None, cancelled
                continue
            if finished:
                returned: T = value
                return returned
            result, error = await _answer(_handler(awaited, value), value)
    finally:
        flow.close()
