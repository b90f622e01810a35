"""Consolidation off the request path: :class:`BackgroundConsolidation`.

An episodic add that brings its scope to ``consolidation_threshold`` waiting episodes
consolidates them in the add, which then answers only when the summaries are written.
Under load one add in many waited that long (the p99 of ``POST /memory/episodic`` was a
consolidation). The server's engine instead hands the scope to a
task of the server's loop and answers at once; the episodes are stored either way, and
one consolidation at a time runs per scope, as in the add.

The task waits a moment (``delay``) before it reads the scope's episodes, so that adds
arriving together are consolidated together: a consolidation groups its episodes by
session, and under concurrent writers one started at once took a few episodes, a summary
of one or two each, where one started a moment later wrote far fewer summaries.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from langmem_tiers.errors import ConfigurationError

if TYPE_CHECKING:
    from langmem_tiers.long_term.engine.engine import MemoryEngine

__all__ = ["DEFAULT_DELAY", "BackgroundConsolidation"]

DEFAULT_DELAY = 0.5
"""Seconds a consolidation waits for more adds of its scope before it starts."""

logger = logging.getLogger(__name__)


class BackgroundConsolidation:
    """Runs the consolidations that episodic adds find due, as tasks of one event loop.

    :meth:`due` is the engine's ``consolidation_due``: until :meth:`start` it declines
    (the add consolidates as usual), afterwards it takes every scope, at most one
    consolidation running per scope (an add meanwhile leaves the scope to it; the next
    add over the threshold after it starts another). A scope's consolidation starts
    ``delay`` seconds after it was taken.

    Example:
        >>> import asyncio
        >>> from langmem_tiers import TieredMemoryStore
        >>> from langmem_tiers.long_term.engine.engine import MemoryEngine
        >>> async def main() -> int:
        ...     async with TieredMemoryStore.afrom_url("sqlite:///:memory:") as store:
        ...         background = BackgroundConsolidation(delay=0)
        ...         engine = MemoryEngine(store, consolidation_due=background.due)
        ...         background.start(engine)
        ...         for n in range(store.settings.consolidation_threshold):
        ...             await engine.aadd_episodic("alice", f"Alice mentioned topic {n}")
        ...         await background.stop(wait=True)
        ...         return len(await engine.amemories("alice", kinds="semantic"))
        >>> asyncio.run(main())
        1
    """

    def __init__(self, *, delay: float = DEFAULT_DELAY) -> None:
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not delay >= 0:
            raise ConfigurationError(f"delay must be a number of seconds >= 0, got {delay!r}.")
        self.delay = delay
        self._engine: MemoryEngine | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: dict[str, asyncio.Task[None]] = {}

    def start(self, engine: MemoryEngine) -> None:
        """Take due scopes from now on, consolidating them with ``engine`` on the running loop."""
        self._engine = engine
        self._loop = asyncio.get_running_loop()

    async def stop(self, *, wait: bool = False) -> None:
        """Take no more scopes; cancel the consolidations running (``wait``: let them finish).

        A cancelled consolidation leaves its episodes waiting: groups already summarised
        are written, the rest are consolidated by a later add or ``/memory/consolidate``.
        """
        self._loop = None
        tasks = list(self._running.values())
        if not wait:
            for task in tasks:
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def due(self, scope: str) -> bool:
        """Whether the scope was taken (called by the engine, from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return False
        try:
            running_here = asyncio.get_running_loop() is loop
        except RuntimeError:
            running_here = False
        if running_here:
            self._schedule(scope)
        else:
            loop.call_soon_threadsafe(self._schedule, scope)
        return True

    @property
    def running(self) -> frozenset[str]:
        """The scopes being consolidated now."""
        return frozenset(self._running)

    def _schedule(self, scope: str) -> None:
        if scope in self._running or self._engine is None or self._loop is None:
            return
        self._running[scope] = asyncio.create_task(self._run(self._engine, scope))

    async def _run(self, engine: MemoryEngine, scope: str) -> None:
        try:
            await asyncio.sleep(self.delay)
            await engine.aconsolidate(scope)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The episodes stay stored and unconsolidated: the next add over the threshold
            # (or /memory/consolidate) tries again.
            logger.exception("consolidating scope %r in the background failed", scope)
        finally:
            self._running.pop(scope, None)
