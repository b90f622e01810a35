"""Graphs built from settings, for LangGraph Studio (``langgraph dev``) and deployments.

``graphs/`` at the repository root holds the entry points ``langgraph.json`` serves; they
call :func:`studio_chat_graph` and :func:`studio_consolidation_graph`, and
``graphs/store.py`` gives the server :func:`studio_store`, the very store the graphs use,
so Studio's memory view and the SDK's ``client.store`` calls see what the graphs wrote.
They read:

=================================  ===============================================  =============
variable                           what                                             default
=================================  ===============================================  =============
``LANGMEM_TIERS_URL``              the store (``sqlite:///path.db``,                the embedded
                                   ``postgresql://...``)                            SQLite file
``LANGMEM_TIERS_MODEL``            chat model provider string                       offline model
                                   (``openai:gpt-4o-mini``, or ``offline``)
``LANGMEM_TIERS_PRESET``           ``tiered``, ``moving_window``, ``reset``,        ``tiered``
                                   ``dual``
``LANGMEM_TIERS_CHAT_MODE``        ``markers`` or ``tools``                         ``markers``
=================================  ===============================================  =============

plus every other ``LANGMEM_TIERS_*`` setting (limits, weights). One store is opened per
process and URL and closed at exit. Short-term memory goes to the store's database (the
SQL message log) whatever the preset's log kind, except ``dual``, which keeps its JSONL
files: a server restarts (``langgraph dev`` reloads on every code change) and the
conversation must survive it.

Example:
    >>> import tempfile, pathlib
    >>> url = f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'studio.db'}"
    >>> graph = studio_chat_graph(environ={"LANGMEM_TIERS_URL": url})
    >>> out = graph.invoke({"messages": [("user", "My favorite color is green.")],
    ...                     "session_id": "s1"})
    >>> out["answer"]
    'Noted: favorite_color=green.'
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping
from contextlib import ExitStack
from typing import Any, NamedTuple

from langgraph.graph.state import CompiledStateGraph

from langmem_tiers.config import Settings
from langmem_tiers.conversation.session import ChatMemory
from langmem_tiers.graph.chat import ChatMode, build_tiered_chat_graph
from langmem_tiers.graph.consolidation_graph import build_consolidation_graph
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.presets import get_preset
from langmem_tiers.short_term.sql_log import SqlMessageLog

__all__ = [
    "StudioOptions",
    "studio_chat_graph",
    "studio_consolidation_graph",
    "studio_options",
    "studio_store",
]


class StudioOptions(NamedTuple):
    """What the Studio graphs are built from."""

    settings: Settings
    preset: str
    mode: ChatMode


def studio_options(environ: Mapping[str, str] | None = None) -> StudioOptions:
    """Settings, preset and chat mode from ``environ`` (``os.environ`` when None).

    Raises:
        ConfigurationError: an unknown preset or mode (the message names the variable).
    """
    settings = Settings.from_env(environ=environ)
    return StudioOptions(settings, settings.preset, settings.chat_mode)


_STACK = ExitStack()
_STORES: dict[str | None, TieredMemoryStore] = {}
_LOCK = threading.Lock()
atexit.register(_STACK.close)


def _store(settings: Settings) -> TieredMemoryStore:
    """One open store per URL for the process (a graph object outlives any ``with``)."""
    with _LOCK:
        store = _STORES.get(settings.url)
        if store is None:
            store = _STACK.enter_context(
                TieredMemoryStore.from_url(settings.url, settings=settings)
            )
            # Studio's memory view and the SDK's store calls write through the pipeline
            # from the start, as the graphs' own writes do.
            MemoryEngine(store, settings=settings)
            _STORES[settings.url] = store
        return store


def studio_store(environ: Mapping[str, str] | None = None) -> TieredMemoryStore:
    """The store of ``LANGMEM_TIERS_URL``: the same object the Studio graphs write to.

    ``langgraph.json`` names it as the server's store (``"store": {"path": ...}``).
    """
    return _store(studio_options(environ).settings)


def _log(store: TieredMemoryStore, preset: str) -> MessageLog | None:
    if get_preset(preset).log == "jsonl":
        return None  # the preset's own JSONL files in the data directory
    return SqlMessageLog(store.conn)


def studio_chat_graph(
    environ: Mapping[str, str] | None = None, *, model: Any = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The tiered chat graph on the configured store, model and preset.

    ``model`` overrides ``LANGMEM_TIERS_MODEL`` (a chat model or a provider string).
    """
    options = studio_options(environ)
    store = _store(options.settings)
    memory = ChatMemory(
        store,
        preset=options.preset,
        settings=options.settings,
        log=_log(store, options.preset),
    )
    chosen = model if model is not None else options.settings.model
    # The server refuses graphs compiled with a store; the nodes reach ours directly.
    return build_tiered_chat_graph(
        chosen,
        store=store,
        memory=memory,
        mode=options.mode,
        attach_store=False,
        name="tiered_chat",
    )


def studio_consolidation_graph(
    environ: Mapping[str, str] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The consolidation graph on the configured store (offline summariser)."""
    options = studio_options(environ)
    return build_consolidation_graph(
        _store(options.settings), settings=options.settings, attach_store=False
    )
