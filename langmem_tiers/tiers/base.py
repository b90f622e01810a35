"""The interfaces of tier generation and summarisation.

A message is kept in three tiers: tier 1 is ``key=value`` facts, tier 2 a one- or
two-sentence summary, tier 3 the raw text (the message itself, never rewritten).
A :class:`Tierer` makes tiers 1 and 2; a :class:`Summarizer` turns many messages into
one summary with key concepts (what consolidation stores in long-term memory).

Both have an offline, deterministic implementation and one over any LangChain chat
model; the model-backed one falls back to the offline one when the model fails.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import IntEnum
from typing import NamedTuple

from langchain_core.messages import BaseMessage

__all__ = ["MessageTiers", "Summarizer", "Summary", "TierLevel", "Tierer"]


class TierLevel(IntEnum):
    """How much of a message the model sees."""

    FACTS = 1
    SUMMARY = 2
    RAW = 3


class MessageTiers(NamedTuple):
    """Tier 1 and tier 2 of one message (tier 3 is the message's own content)."""

    tier1: str
    """``key=value`` facts joined by ``", "``, e.g. ``user_name=Jordan, project=RAI Chat``."""
    tier2: str
    """One or two sentences."""


class Summary(NamedTuple):
    """What consolidation writes to long-term memory for a run of messages."""

    text: str
    """The summary: a few sentences, or one paragraph."""
    key_concepts: list[str]
    """Names, places, dates, numbers, topics and decisions the messages mention."""


class Tierer(ABC):
    """Makes tier 1 and tier 2 for messages, in one batch."""

    name: str = "tierer"

    @abstractmethod
    def tier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        """Tiers for each message, in order."""

    async def atier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        """Async twin of :meth:`tier` (a thread by default; model tierers override it)."""
        return await asyncio.to_thread(self.tier, messages)


class Summarizer(ABC):
    """Summarises a run of messages into a :class:`Summary`."""

    name: str = "summarizer"

    @abstractmethod
    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        """One summary of all the messages, in their order."""

    async def asummarize(self, messages: Sequence[BaseMessage]) -> Summary:
        """Async twin of :meth:`summarize` (a thread by default)."""
        return await asyncio.to_thread(self.summarize, messages)
