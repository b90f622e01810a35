"""LangGraph Studio entry point: the tiered chat graph.

Configured by the environment (``LANGMEM_TIERS_URL``, ``LANGMEM_TIERS_MODEL``,
``LANGMEM_TIERS_PRESET``, ``LANGMEM_TIERS_CHAT_MODE``; see
:mod:`langmem_tiers.graph.studio`). With nothing set: the embedded store and the offline
model, so ``langgraph dev`` works with no network and no API key.
"""

from __future__ import annotations

from langmem_tiers.graph.studio import studio_chat_graph

graph = studio_chat_graph()
