"""langmem_tiers: tiered short-term and long-term memory for LangChain and LangGraph.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("user_1", "semantic"), "fact-1", {"content": "Jordan prefers tea"})
    ...     store.search(("user_1",), query="what does Jordan drink?")[0].value["content"]
    'Jordan prefers tea'
"""

from langmem_tiers.config import RankingWeights, Settings
from langmem_tiers.graph import (
    OfflineChatModel,
    TieredMemoryMiddleware,
    build_consolidation_graph,
    build_tiered_chat_graph,
    memory_save_node,
    memory_view_node,
)
from langmem_tiers.long_term.store.core import RankedItem
from langmem_tiers.long_term.store.events import event_context
from langmem_tiers.long_term.store.scope import decode_label, encode_label, namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.presets import PRESETS, build_memory

__all__ = [
    "PRESETS",
    "OfflineChatModel",
    "RankedItem",
    "RankingWeights",
    "Settings",
    "ShortTermMemory",
    "TieredChatMessageHistory",
    "TieredMemoryMiddleware",
    "TieredMemoryStore",
    "build_consolidation_graph",
    "build_memory",
    "build_tiered_chat_graph",
    "decode_label",
    "encode_label",
    "event_context",
    "memory_save_node",
    "memory_view_node",
    "namespace_for",
]
