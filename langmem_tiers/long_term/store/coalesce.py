"""Concurrent async store calls run together: one ``abatch`` for the ops of one moment.

Thousands of concurrent ``aput``/``aget`` calls that each took a pooled connection would
wait for one another's connections and time out. :class:`OpQueue` instead queues each
call's op; the first call of a loop turn starts a drain that, once the callers of that
turn have queued theirs, runs them through ``abatch`` in chunks, one transaction at a
time. LangGraph's async stores batch the same way.

A chunk fails as a whole only for what concerns all of it (the database is down); when it
fails on one op's input (a bad value, an embedder that refuses one text), each op of the
chunk is run again on its own, so only the faulty call gets the error.

Example:
    >>> async def run(ops):
    ...     return [f"did {op}" for op in ops]
    >>> async def main():
    ...     queue = OpQueue(run)
    ...     return await asyncio.gather(*(queue.submit(n) for n in range(3)))
    >>> asyncio.run(main())
    ['did 0', 'did 1', 'did 2']
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langmem_tiers.errors import EmbeddingError, ValidationError

__all__ = ["MAX_CHUNK", "OpQueue"]

#: The most ops one drained ``abatch`` runs: a transaction of that many stays short.
MAX_CHUNK = 500

Runner = Callable[[list[Any]], Awaitable[Sequence[Any]]]

# Errors caused by one op's input: the others of its chunk deserve their own answer.
_PER_OP_ERRORS = (ValidationError, EmbeddingError)


class _Pending:
    __slots__ = ("draining", "items", "task")

    def __init__(self) -> None:
        self.items: deque[tuple[Any, asyncio.Future[Any]]] = deque()
        self.draining = False
        self.task: asyncio.Task[None] | None = None


class OpQueue:
    """Ops submitted concurrently on one event loop, drained into ``run`` in chunks."""

    def __init__(self, run: Runner, *, max_chunk: int = MAX_CHUNK) -> None:
        self._run = run
        self._max_chunk = max_chunk
        # One queue per loop: a sync store may be driven from several loops in turn.
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, op: Any) -> Any:
        """Queue ``op`` and return its result once its chunk has run."""
        loop = asyncio.get_running_loop()
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = _Pending()
        future: asyncio.Future[Any] = loop.create_future()
        pending.items.append((op, future))
        if not pending.draining:
            pending.draining = True
            pending.task = loop.create_task(self._drain(pending))
        return await future

    async def _drain(self, pending: _Pending) -> None:
        try:
            await asyncio.sleep(0)  # the other callers of this turn queue their ops first
            while pending.items:
                chunk: list[tuple[Any, asyncio.Future[Any]]] = []
                while pending.items and len(chunk) < self._max_chunk:
                    item = pending.items.popleft()
                    if not item[1].done():  # a cancelled caller wants nothing
                        chunk.append(item)
                if chunk:
                    await self._run_chunk(chunk)
        except BaseException as err:
            # Cancelled with the loop: nobody may wait forever on a queued op.
            _settle_error(list(pending.items), err)
            pending.items.clear()
            raise
        finally:
            pending.draining = False
            pending.task = None

    async def _run_chunk(self, chunk: list[tuple[Any, asyncio.Future[Any]]]) -> None:
        try:
            results = await self._run([op for op, _ in chunk])
        except _PER_OP_ERRORS as err:
            if len(chunk) == 1:
                _settle_error(chunk, err)
                return
            for item in chunk:
                await self._run_chunk([item])
            return
        except BaseException as err:
            _settle_error(chunk, err)
            if not isinstance(err, Exception):
                raise
            return
        for (_op, future), result in zip(chunk, results, strict=True):
            if not future.done():
                future.set_result(result)


def _settle_error(chunk: list[tuple[Any, asyncio.Future[Any]]], err: BaseException) -> None:
    for _op, future in chunk:
        if future.done():
            continue
        if isinstance(err, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(err)
