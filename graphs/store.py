"""LangGraph server entry point: the long-term memory store the graphs use.

``langgraph.json`` names it under ``"store"``, so Studio's memory view and the SDK's
``client.store.*`` calls read and write the same memories as the graphs (one store per
process and ``LANGMEM_TIERS_URL``; see :mod:`langmem_tiers.graph.studio`).
"""

from __future__ import annotations

from langmem_tiers.graph.studio import studio_store

store = studio_store()
