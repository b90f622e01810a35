"""LangGraph Studio entry point: episodic -> semantic consolidation of a scope.

Run it with ``{"scope": "<user id>"}`` (``"force": true`` below the threshold). The store
comes from ``LANGMEM_TIERS_URL`` (see :mod:`langmem_tiers.graph.studio`).
"""

from __future__ import annotations

from langmem_tiers.graph.studio import studio_consolidation_graph

graph = studio_consolidation_graph()
