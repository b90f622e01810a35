"""Time to live, as LangGraph's stores define it: the config check and the background sweeper.

An item put with ``ttl=minutes`` (or the config's ``default_ttl``) expires that long after
it was written, or after it was last read when reads refresh it. Reads never return
expired items; :class:`TTLSweeper` deletes them periodically, from a thread (a sync
store) or from a task on the store's event loop (a store opened with an async
connection, started from that loop).

Example:
    >>> check_ttl_config({"default_ttl": 60, "refresh_on_read": False})
    {'default_ttl': 60, 'refresh_on_read': False}
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from langgraph.store.base import TTLConfig

from langmem_tiers.errors import ConfigurationError

__all__ = ["DEFAULT_SWEEP_MINUTES", "SweeperFuture", "TTLSweeper", "check_ttl_config"]

logger = logging.getLogger(__name__)

#: How often the sweeper runs when neither the call nor the config says (LangGraph's default).
DEFAULT_SWEEP_MINUTES = 5.0

_KEYS = {"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"}


def _minutes(value: Any, name: str) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigurationError(f"ttl[{name!r}] must be a number of minutes > 0, got {value!r}.")


def check_ttl_config(ttl: TTLConfig | None) -> TTLConfig | None:
    """``ttl`` checked: known keys, positive minutes, a bool ``refresh_on_read``.

    ``omit_expired`` is accepted and has no effect: this store never returns expired
    items, whatever a sweep has done.
    """
    if ttl is None:
        return None
    if not isinstance(ttl, dict):
        raise ConfigurationError(
            f"ttl must be a dict like TTLConfig, e.g. {{'default_ttl': 60}}, got {ttl!r}."
        )
    unknown = set(ttl) - _KEYS
    if unknown:
        raise ConfigurationError(f"ttl has unknown key(s) {sorted(unknown)}; use {sorted(_KEYS)}.")
    _minutes(ttl.get("default_ttl"), "default_ttl")
    _minutes(ttl.get("sweep_interval_minutes"), "sweep_interval_minutes")
    refresh = ttl.get("refresh_on_read", True)
    if not isinstance(refresh, bool):
        raise ConfigurationError(f"ttl['refresh_on_read'] must be True or False, got {refresh!r}.")
    return ttl


class SweeperFuture(concurrent.futures.Future[None]):
    """The future of a running sweeper: done when it stops.

    It may also be awaited, which gives the future itself at once: code written for
    LangGraph's async stores (``await store.start_ttl_sweeper()``) runs unchanged, and
    code written for its sync stores keeps a ``concurrent.futures.Future``.
    """

    def __await__(self) -> Generator[Any, None, SweeperFuture]:
        return self
        yield  # pragma: no cover - makes this a generator


class Answer(int):
    """A count or a flag already known that may also be awaited for itself.

    What ``stop_ttl_sweeper`` returns (a flag) and what ``sweep_ttl`` returns when it ran
    at once, so ``await store.sweep_ttl()`` and ``await store.stop_ttl_sweeper()`` (as
    LangGraph's async stores are called) work on every store.
    """

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, int]:
        return int(self)
        yield  # pragma: no cover - makes this a generator

    def __repr__(self) -> str:
        return repr(int(self))


def _settle(done: concurrent.futures.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


class TTLSweeper:
    """Runs a sweep every few minutes until stopped; at most one at a time per store.

    ``on_loop()`` tells whether the caller is on the event loop of an async store: the
    sweeper is then a task of that loop calling ``asweep``, otherwise a daemon thread
    calling ``sweep``. A failed sweep is logged and retried at the next interval.
    """

    def __init__(
        self,
        sweep: Callable[[], int],
        asweep: Callable[[], Awaitable[int]],
        on_loop: Callable[[], bool],
    ) -> None:
        self._sweep = sweep
        self._asweep = asweep
        self._on_loop = on_loop
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        self._done: SweeperFuture | None = None

    @property
    def running(self) -> bool:
        """Whether a sweeper thread or task is running."""
        return self._done is not None and not self._done.done()

    def start(self, interval_minutes: float) -> SweeperFuture:
        """Start sweeping every ``interval_minutes``; the future completes when it stops."""
        _minutes(interval_minutes, "sweep_interval_minutes")
        if self.running:
            assert self._done is not None
            return self._done
        self._stop.clear()
        done = SweeperFuture()
        self._done = done
        seconds = float(interval_minutes) * 60
        if self._on_loop():
            task = asyncio.get_running_loop().create_task(self._arun(seconds))
            task.set_name("langmem_tiers-ttl-sweeper")
            task.add_done_callback(lambda _t: _settle(done))
            self._task = task
        else:
            thread = threading.Thread(
                target=self._run, args=(seconds, done), daemon=True, name="langmem_tiers-ttl"
            )
            self._thread = thread
            thread.start()
        return done

    def stop(self, timeout: float | None = None) -> bool:
        """Stop sweeping; True once stopped (or not running), False if ``timeout`` passed first.

        Called on the sweeper task's own loop, the task is cancelled and this returns
        True without waiting: the loop finishes it at its next turn.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
            self._thread = None
        if self._task is not None:
            task, self._task = self._task, None
            loop = task.get_loop()
            try:
                on_its_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                on_its_loop = False
            if on_its_loop or loop.is_closed():
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)
                if self._done is not None:
                    try:
                        self._done.result(timeout)
                    except concurrent.futures.TimeoutError:
                        return False
        return True

    def _run(self, seconds: float, done: concurrent.futures.Future[None]) -> None:
        try:
            while not self._stop.wait(seconds):
                try:
                    swept = self._sweep()
                except Exception:
                    logger.exception("TTL sweep failed; retrying in %.0f s", seconds)
                else:
                    if swept:
                        logger.info("TTL sweep deleted %d expired item(s)", swept)
        finally:
            done.set_result(None)

    async def _arun(self, seconds: float) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(seconds)
            if self._stop.is_set():
                return
            try:
                swept = await self._asweep()
            except Exception:
                logger.exception("TTL sweep failed; retrying in %.0f s", seconds)
            else:
                if swept:
                    logger.info("TTL sweep deleted %d expired item(s)", swept)
