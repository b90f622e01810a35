"""Short-term memory: message logs, window policies, consolidation, context, chat history."""

from __future__ import annotations

from langmem_tiers.short_term.context import ContextBuilder
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import InMemoryMessageLog, LogOp, MessageLog
from langmem_tiers.short_term.memory import AddResult, ShortTermMemory
from langmem_tiers.short_term.policies import (
    ConsolidationPlan,
    MovingWindow,
    ResetWindow,
    SlidingWindow,
    TokenBudget,
    WindowPolicy,
)
from langmem_tiers.short_term.presets import PRESETS, Preset, build_memory, get_preset
from langmem_tiers.short_term.records import MessageRecord

__all__ = [
    "PRESETS",
    "AddResult",
    "ConsolidationPlan",
    "ContextBuilder",
    "InMemoryMessageLog",
    "JsonlMessageLog",
    "LogOp",
    "MessageLog",
    "MessageRecord",
    "MovingWindow",
    "Preset",
    "ResetWindow",
    "ShortTermMemory",
    "SlidingWindow",
    "TieredChatMessageHistory",
    "TokenBudget",
    "WindowPolicy",
    "build_memory",
    "get_preset",
]
