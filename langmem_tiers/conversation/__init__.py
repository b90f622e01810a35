"""The conversation service: one turn's memory, whichever surface runs the turn.

- :mod:`~langmem_tiers.conversation.session`: :class:`ChatMemory`, the session service:
  load a turn's context, save a turn (messages to short-term memory, facts and
  preferences to long-term memory), request a tier, search episodic memory, consolidate.
- :mod:`~langmem_tiers.conversation.facts`: what an exchange tells about the user (facts
  in the one value of :func:`~langmem_tiers.short_term.archiving.fact_value`,
  preferences), and which memories are distinct enough to show.
- :mod:`~langmem_tiers.conversation.regenerate`: the one bounded regenerate loop, for
  markers and for the equivalent tools.
- :mod:`~langmem_tiers.conversation.flows`: each operation written once as a flow, driven
  by a sync or an async loop.

The chat graph, the agent nodes and the middleware (:mod:`langmem_tiers.graph`) and the
CLI's ``ingest`` are adapters over this package; it imports none of them.
"""

from __future__ import annotations

from langmem_tiers.conversation.regenerate import FALLBACK_ANSWER, best_answer
from langmem_tiers.conversation.session import ChatMemory

__all__ = ["FALLBACK_ANSWER", "ChatMemory", "best_answer"]
