"""langmem_tiers: tiered short-term and long-term memory for LangChain and LangGraph.

Every public name is importable from here; each loads its module on first use, so
``import langmem_tiers`` is cheap and pulls in neither LangGraph nor an optional backend.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("user_1", "semantic"), "fact-1", {"content": "Jordan prefers tea"})
    ...     store.search(("user_1",), query="what does Jordan drink?")[0].value["content"]
    'Jordan prefers tea'
"""

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "RankingWeights": "langmem_tiers.config",
    "Settings": "langmem_tiers.config",
    "BackendError": "langmem_tiers.errors",
    "ConfigurationError": "langmem_tiers.errors",
    "ConflictError": "langmem_tiers.errors",
    "DimensionMismatchError": "langmem_tiers.errors",
    "EmbeddingError": "langmem_tiers.errors",
    "InvalidContentError": "langmem_tiers.errors",
    "InvalidFilterError": "langmem_tiers.errors",
    "InvalidNamespaceError": "langmem_tiers.errors",
    "InvalidTierError": "langmem_tiers.errors",
    "LangmemTiersError": "langmem_tiers.errors",
    "MigrationError": "langmem_tiers.errors",
    "MissingDependencyError": "langmem_tiers.errors",
    "ModelError": "langmem_tiers.errors",
    "NotFoundError": "langmem_tiers.errors",
    "ValidationError": "langmem_tiers.errors",
    "TieredMemoryStore": "langmem_tiers.long_term.store.store",
    "RankedItem": "langmem_tiers.long_term.store.search.query",
    "decode_label": "langmem_tiers.long_term.store.scope",
    "encode_label": "langmem_tiers.long_term.store.scope",
    "namespace_for": "langmem_tiers.long_term.store.scope",
    "event_context": "langmem_tiers.long_term.store.events",
    "MemoryEngine": "langmem_tiers.long_term.engine.engine",
    "ShortTermMemory": "langmem_tiers.short_term.memory",
    "TieredChatMessageHistory": "langmem_tiers.short_term.history",
    "InMemoryMessageLog": "langmem_tiers.short_term.log",
    "JsonlMessageLog": "langmem_tiers.short_term.jsonl_log",
    "SqlMessageLog": "langmem_tiers.short_term.sql_log",
    "PRESETS": "langmem_tiers.short_term.presets",
    "build_memory": "langmem_tiers.short_term.presets",
    "TieredMemoryMiddleware": "langmem_tiers.graph.middleware",
    "OfflineChatModel": "langmem_tiers.graph.offline_model",
    "build_tiered_chat_graph": "langmem_tiers.graph.chat",
    "build_consolidation_graph": "langmem_tiers.graph.consolidation_graph",
    "memory_save_node": "langmem_tiers.graph.agent",
    "memory_view_node": "langmem_tiers.graph.agent",
}

if _typing.TYPE_CHECKING:
    from langmem_tiers.config import RankingWeights, Settings
    from langmem_tiers.errors import (
        BackendError,
        ConfigurationError,
        ConflictError,
        DimensionMismatchError,
        EmbeddingError,
        InvalidContentError,
        InvalidFilterError,
        InvalidNamespaceError,
        InvalidTierError,
        LangmemTiersError,
        MigrationError,
        MissingDependencyError,
        ModelError,
        NotFoundError,
        ValidationError,
    )
    from langmem_tiers.graph.agent import memory_save_node, memory_view_node
    from langmem_tiers.graph.chat import build_tiered_chat_graph
    from langmem_tiers.graph.consolidation_graph import build_consolidation_graph
    from langmem_tiers.graph.middleware import TieredMemoryMiddleware
    from langmem_tiers.graph.offline_model import OfflineChatModel
    from langmem_tiers.long_term.engine.engine import MemoryEngine
    from langmem_tiers.long_term.store.events import event_context
    from langmem_tiers.long_term.store.scope import decode_label, encode_label, namespace_for
    from langmem_tiers.long_term.store.search.query import RankedItem
    from langmem_tiers.long_term.store.store import TieredMemoryStore
    from langmem_tiers.short_term.history import TieredChatMessageHistory
    from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
    from langmem_tiers.short_term.log import InMemoryMessageLog
    from langmem_tiers.short_term.memory import ShortTermMemory
    from langmem_tiers.short_term.presets import PRESETS, build_memory
    from langmem_tiers.short_term.sql_log import SqlMessageLog

__all__ = [
    "PRESETS",
    "BackendError",
    "ConfigurationError",
    "ConflictError",
    "DimensionMismatchError",
    "EmbeddingError",
    "InMemoryMessageLog",
    "InvalidContentError",
    "InvalidFilterError",
    "InvalidNamespaceError",
    "InvalidTierError",
    "JsonlMessageLog",
    "LangmemTiersError",
    "MemoryEngine",
    "MigrationError",
    "MissingDependencyError",
    "ModelError",
    "NotFoundError",
    "OfflineChatModel",
    "RankedItem",
    "RankingWeights",
    "Settings",
    "ShortTermMemory",
    "SqlMessageLog",
    "TieredChatMessageHistory",
    "TieredMemoryMiddleware",
    "TieredMemoryStore",
    "ValidationError",
    "__version__",
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


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'langmem_tiers' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
