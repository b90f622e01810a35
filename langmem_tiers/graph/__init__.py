"""LangGraph adapters over the conversation service: the tiered chat graph, the consolidation
graph, memory nodes for your own agent and the ``create_agent`` middleware.

The session service itself (``ChatMemory``) and the regenerate loop live in
:mod:`langmem_tiers.conversation`.
"""

from __future__ import annotations

from langmem_tiers.graph.agent import memory_save_node, memory_view_node
from langmem_tiers.graph.chat import NODES, ChatMode, build_tiered_chat_graph
from langmem_tiers.graph.consolidation_graph import (
    ConsolidationReport,
    aconsolidate_episodes,
    build_consolidation_graph,
    consolidate_episodes,
)
from langmem_tiers.graph.middleware import TieredMemoryMiddleware
from langmem_tiers.graph.models import resolve_chat_model
from langmem_tiers.graph.offline_model import OfflineChatModel
from langmem_tiers.graph.prompts import (
    AGENT_MEMORY_PROMPT,
    CHAT_SYSTEM_PROMPT,
    MIDDLEWARE_MARKERS_PROMPT,
    MIDDLEWARE_TOOLS_PROMPT,
    REQUEST_TIER_TOOL,
    SEARCH_EPISODIC_TOOL,
    TOOLS_SYSTEM_PROMPT,
)
from langmem_tiers.graph.state import TieredChatInput, TieredChatState

__all__ = [
    "AGENT_MEMORY_PROMPT",
    "CHAT_SYSTEM_PROMPT",
    "MIDDLEWARE_MARKERS_PROMPT",
    "MIDDLEWARE_TOOLS_PROMPT",
    "NODES",
    "REQUEST_TIER_TOOL",
    "SEARCH_EPISODIC_TOOL",
    "TOOLS_SYSTEM_PROMPT",
    "ChatMode",
    "ConsolidationReport",
    "OfflineChatModel",
    "TieredChatInput",
    "TieredChatState",
    "TieredMemoryMiddleware",
    "aconsolidate_episodes",
    "build_consolidation_graph",
    "build_tiered_chat_graph",
    "consolidate_episodes",
    "memory_save_node",
    "memory_view_node",
    "resolve_chat_model",
]
