"""The one check of a ``store=`` argument, shared by every place that accepts a store.

``TieredMemoryStore.from_url(...)`` is a context manager: passed as ``store=`` without
``with``, it is not a store, and used later it fails on every call. The check says so
when the object is handed over, not at the first consolidation.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> store = InMemoryStore()
    >>> require_store(store, where="ShortTermMemory") is store
    True
    >>> require_store("not a store", where="ShortTermMemory")
    Traceback (most recent call last):
    ...
    langmem_tiers.errors.ConfigurationError: ShortTermMemory: store= must be a LangGraph BaseStore (e.g. a TieredMemoryStore), got str 'not a store'.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore

from langmem_tiers.errors import ConfigurationError

__all__ = ["require_store"]


def require_store(store: Any, *, where: str, optional: bool = False) -> Any:
    """``store`` if it is a ``BaseStore`` (or None when ``optional``); else a ConfigurationError.

    The error names ``where`` the store was given and, for an un-entered context manager
    (``from_url``/``afrom_url`` without ``with``), how to enter it.
    """
    if isinstance(store, BaseStore) or (store is None and optional):
        return store
    if hasattr(store, "__enter__") or hasattr(store, "__aenter__"):
        opener = "async with" if not hasattr(store, "__enter__") else "with"
        raise ConfigurationError(
            f"{where}: store= got {type(store).__name__}, a context manager that opens a "
            f"store, not the store. Enter it and pass what it yields: `{opener} "
            f"TieredMemoryStore.from_url(url) as store: ...(store=store)` (afrom_url with "
            "`async with`, or `store = await TieredMemoryStore.afrom_url(url)`)."
        )
    raise ConfigurationError(
        f"{where}: store= must be a LangGraph BaseStore (e.g. a TieredMemoryStore), got "
        f"{type(store).__name__} {store!r}."[:400]
    )
