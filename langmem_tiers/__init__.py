"""langmem_tiers: tiered short-term and long-term memory for LangChain and LangGraph.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("user_1", "semantic"), "fact-1", {"content": "Jordan prefers tea"})
    ...     store.search(("user_1",), query="what does Jordan drink?")[0].value["content"]
    'Jordan prefers tea'
"""

from langmem_tiers.config import RankingWeights, Settings
from langmem_tiers.long_term.core import RankedItem
from langmem_tiers.long_term.scope import decode_label, encode_label, namespace_for
from langmem_tiers.long_term.store import TieredMemoryStore

__all__ = [
    "RankedItem",
    "RankingWeights",
    "Settings",
    "TieredMemoryStore",
    "decode_label",
    "encode_label",
    "namespace_for",
]
