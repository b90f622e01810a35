"""A LangChain ``BaseChatMessageHistory`` over tiered short-term memory.

:class:`TieredChatMessageHistory` is a thin adapter: storage, tiers, consolidation and the
view all live in :class:`~langmem_tiers.short_term.memory.ShortTermMemory`.

- ``messages`` / ``aget_messages()`` give the model's view (long-term summaries, tiered
  older messages, raw recent ones). It is computed once per change and then served as is,
  so it never changes length during one chain run: ``RunnableWithMessageHistory`` reads it
  before and after the model and slices the new messages by its length.
- ``add_messages`` / ``aadd_messages`` store a batch in one log round trip.
- ``raw_messages()`` gives every stored message as added.

Keep one history object per session (or share a ``log`` and ``store``): the ``memory`` log
of the default presets lives in the object.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> history = TieredChatMessageHistory("s1", preset="moving_window")
    >>> history.add_messages([HumanMessage("I live in Lisbon."), AIMessage("Noted!")])
    >>> [m.id for m in history.messages]
    ['m1', 'm2']
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage
from langgraph.store.base import BaseStore

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.presets import Preset, build_memory
from langmem_tiers.tiers.base import Summarizer, Tierer
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = ["TieredChatMessageHistory"]


class TieredChatMessageHistory(BaseChatMessageHistory):
    """Chat message history backed by :class:`ShortTermMemory`.

    Args:
        session_id: the conversation.
        store: long-term memory (a LangGraph ``BaseStore``); the embedded default store when None.
        preset: ``tiered`` (default), ``moving_window``, ``reset``, ``dual`` or a ``Preset``.
        settings, log, directory, user_id, tierer, summarizer, token_counter: see
            :func:`~langmem_tiers.short_term.presets.build_memory`.
        memory: an engine to adapt instead of building one (the other arguments are then
            ignored).
    """

    def __init__(
        self,
        session_id: str,
        *,
        store: BaseStore | None = None,
        preset: str | Preset = "tiered",
        settings: Settings | None = None,
        log: MessageLog | None = None,
        directory: str | os.PathLike[str] | None = None,
        user_id: str | None = None,
        tierer: Tierer | None = None,
        summarizer: Summarizer | None = None,
        token_counter: TokenCounter | None = None,
        memory: ShortTermMemory | None = None,
    ) -> None:
        require_store(store, where="TieredChatMessageHistory", optional=True)
        self.memory = memory or build_memory(
            session_id,
            preset=preset,
            store=store,
            settings=settings,
            log=log,
            directory=directory,
            user_id=user_id,
            tierer=tierer,
            summarizer=summarizer,
            token_counter=token_counter,
        )
        self._view: tuple[int, list[BaseMessage]] | None = None

    @property
    def session_id(self) -> str:
        """The conversation this history belongs to."""
        return self.memory.session_id

    def _cached(self) -> list[BaseMessage] | None:
        if self._view is not None and self._view[0] == self.memory.version:
            return list(self._view[1])
        return None

    def _remember(self, version: int, view: list[BaseMessage]) -> list[BaseMessage]:
        self._view = (version, view)
        return list(view)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The model's view of the session (stable until the next change)."""
        cached = self._cached()
        if cached is not None:
            return cached
        version = self.memory.version
        return self._remember(version, self.memory.context())

    async def aget_messages(self) -> list[BaseMessage]:
        """Async twin of :attr:`messages`."""
        cached = self._cached()
        if cached is not None:
            return cached
        version = self.memory.version
        return self._remember(version, await self.memory.acontext())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages in one round trip (consolidating as the preset says)."""
        self.memory.add_messages(messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async twin of :meth:`add_messages`."""
        await self.memory.aadd_messages(messages)

    def clear(self) -> None:
        """Remove every message of the session's window (long-term memory is kept)."""
        self.memory.clear()

    async def aclear(self) -> None:
        """Async twin of :meth:`clear`."""
        await self.memory.aclear()

    def raw_messages(self) -> list[BaseMessage]:
        """Every stored message of the window as it was added."""
        return self.memory.raw_messages()

    async def araw_messages(self) -> list[BaseMessage]:
        """Async twin of :meth:`raw_messages`."""
        return await self.memory.araw_messages()
