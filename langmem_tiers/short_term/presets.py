"""Presets: named combinations of the independent short-term memory settings.

A preset is not a code path: it names a window policy, a log backend, a consolidation
target and a context view, and :func:`build_memory` assembles one
:class:`~langmem_tiers.short_term.memory.ShortTermMemory` from them. Limits come from
:class:`~langmem_tiers.config.Settings`.

=================  =============  =======  ========  ======  =================================
preset             window         log      target    view    behaviour of the seed system
=================  =============  =======  ========  ======  =================================
``moving_window``  moving_window  memory   session   raw     N+1 messages: oldest N summarised
``reset``          reset          memory   session   raw     N+1 user messages: all summarised
``tiered``         token_budget   sql      session   tiered  over the budget: oldest exchanges
                                                             archived as episodes
``dual``           sliding        jsonl    user      raw     last R rounds read, nothing
                                                             deleted, user facts across sessions
=================  =============  =======  ========  ======  =================================

A ``tiered`` view shows messages as the settings' context policy says
(``Settings.context_policy``, ``LANGMEM_TIERS_CONTEXT_POLICY``):

- ``budget`` (the default): messages stay raw while the view fits the soft budget
  (``context_soft_budget``, by default ``context_token_limit``); past
  it the oldest are lowered (raw -> tier 2 -> tier 1) only as far as needed, and the view
  never costs more than the raw messages. A new user pays for tiers only when they save.
- ``eager``: the seed's tiered document: every older message at tier 1 (or the tier the
  model asked for), the newest two raw, whatever the budget. Set it to reproduce the seed.

Pruning (what leaves the window for episodic memory) is the same under both: it is planned
over each message's cheapest form, so the policy changes what the model sees, not what is
kept. A ``raw`` view shows every message as it was added.

Example:
    >>> from langmem_tiers.config import Settings
    >>> stm = build_memory("s1", preset="moving_window", settings=Settings(memory_window_limit=3))
    >>> type(stm.policy).__name__, stm.policy.limit, type(stm.log).__name__
    ('MovingWindow', 3, 'InMemoryMessageLog')
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, replace
from typing import Literal, get_args

from langgraph.store.base import BaseStore

from langmem_tiers.config import Settings, default_data_dir
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import InMemoryMessageLog, MessageLog
from langmem_tiers.short_term.memory import ConsolidationTarget, ShortTermMemory, ViewMode
from langmem_tiers.short_term.policies import (
    MovingWindow,
    ResetWindow,
    SlidingWindow,
    TokenBudget,
    WindowPolicy,
)
from langmem_tiers.tiers.base import Summarizer, Tierer
from langmem_tiers.tiers.offline import OfflineTierer
from langmem_tiers.tiers.summarizer import OfflineSummarizer
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = [
    "PRESETS",
    "LogKind",
    "Preset",
    "WindowKind",
    "build_memory",
    "build_policy",
    "get_preset",
    "open_log",
]

WindowKind = Literal["moving_window", "reset", "sliding", "token_budget"]
LogKind = Literal["memory", "jsonl", "sql"]

# The SQL log lives in its own module (optional database drivers); it provides
# ``open_message_log(settings) -> MessageLog``.
_SQL_LOG_MODULE = "langmem_tiers.short_term.sql_log"


@dataclass(frozen=True, slots=True)
class Preset:
    """One combination of the short-term memory settings."""

    name: str
    window: WindowKind
    """Which :class:`~langmem_tiers.short_term.policies.WindowPolicy`."""
    log: LogKind
    """Where messages are stored."""
    target: ConsolidationTarget
    """Whose long-term memory: this session's, or the user's across sessions."""
    view: ViewMode
    """How the context shows messages."""

    def with_changes(self, **changes: str) -> Preset:
        """A copy with some settings changed (checked), e.g. ``log="jsonl"``."""
        return _checked(replace(self, **changes))  # type: ignore[arg-type]


def _checked(preset: Preset) -> Preset:
    for name, kind in (
        ("window", WindowKind),
        ("log", LogKind),
        ("target", ConsolidationTarget),
        ("view", ViewMode),
    ):
        value = getattr(preset, name)
        if value not in get_args(kind):
            raise ConfigurationError(
                f"preset {preset.name!r}: {name} must be one of {', '.join(get_args(kind))}, "
                f"got {value!r}."
            )
    return preset


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("moving_window", "moving_window", "memory", "session", "raw"),
        Preset("reset", "reset", "memory", "session", "raw"),
        Preset("tiered", "token_budget", "sql", "session", "tiered"),
        Preset("dual", "sliding", "jsonl", "user", "raw"),
    )
}
"""The presets by name."""


def get_preset(preset: str | Preset) -> Preset:
    """A preset by name (or the preset itself, checked).

    >>> get_preset("dual").log
    'jsonl'
    """
    if isinstance(preset, Preset):
        return _checked(preset)
    found = PRESETS.get(preset) if isinstance(preset, str) else None
    if found is None:
        raise ConfigurationError(
            f"preset must be one of {', '.join(PRESETS)} (or a Preset), got {preset!r}."
        )
    return found


def build_policy(window: WindowKind, settings: Settings) -> WindowPolicy:
    """The window policy of a kind, with its limits from ``settings``."""
    if window == "moving_window":
        return MovingWindow(settings.memory_window_limit)
    if window == "reset":
        return ResetWindow(settings.short_term_memory_limit)
    if window == "sliding":
        return SlidingWindow(settings.sliding_window_rounds)
    if window == "token_budget":
        return TokenBudget(
            settings.context_token_limit,
            settings.context_token_buffer,
            settings.min_messages_kept,
        )
    raise ConfigurationError(f"unknown window policy {window!r}.")


def open_log(
    kind: LogKind, settings: Settings, *, directory: str | os.PathLike[str] | None = None
) -> MessageLog:
    """A message log of a kind. ``jsonl`` files go to ``directory`` (default: the data dir)."""
    if kind == "memory":
        return InMemoryMessageLog()
    if kind == "jsonl":
        where = directory if directory is not None else default_data_dir() / "sessions"
        return JsonlMessageLog(where)
    if kind == "sql":
        try:
            module = importlib.import_module(_SQL_LOG_MODULE)
        except ModuleNotFoundError as err:
            if err.name != _SQL_LOG_MODULE:
                raise
            raise ConfigurationError(
                "the 'sql' message log is not available in this version; use 'memory' or 'jsonl'."
            ) from err
        log: MessageLog = module.open_message_log(settings)
        return log
    raise ConfigurationError(f"unknown log kind {kind!r}; use memory, jsonl or sql.")


_DEFAULT_STORES: dict[str, BaseStore] = {}
_DEFAULT_STORES_LOCK = threading.Lock()


def default_store(settings: Settings) -> BaseStore:
    """The process-wide store on ``settings.url`` (the embedded SQLite file when None).

    Opened once per URL and shared by every memory built without a store of its own.
    """
    from langmem_tiers.long_term.store.store import TieredMemoryStore
    from langmem_tiers.sql.database import open_connection, parse_url

    where = "".join(parse_url(settings.url))  # the file the default resolves to, today
    with _DEFAULT_STORES_LOCK:
        store = _DEFAULT_STORES.get(where)
        if store is None:
            store = TieredMemoryStore(open_connection(settings.url), settings=settings)
            store.setup()
            _DEFAULT_STORES[where] = store
        return store


def build_memory(
    session_id: str,
    *,
    preset: str | Preset = "tiered",
    store: BaseStore | None = None,
    settings: Settings | None = None,
    log: MessageLog | None = None,
    directory: str | os.PathLike[str] | None = None,
    user_id: str | None = None,
    tierer: Tierer | None = None,
    summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None,
) -> ShortTermMemory:
    """A :class:`ShortTermMemory` configured by a preset.

    Args:
        session_id: the conversation.
        preset: a name from :data:`PRESETS` or a :class:`Preset`.
        store: long-term memory; the embedded default store on ``settings.url`` when ``None``.
            With ``settings.ltm_enabled`` false there is none (only the ``dual`` preset,
            which never moves messages out of its window, runs so).
        settings: limits; ``Settings.from_env()`` when ``None``.
        log: a log to use instead of the preset's kind (share one across sessions).
        directory: where a ``jsonl`` log keeps its files.
        user_id: the scope of long-term memory (the ``dual`` preset reads it across
            sessions), also stored with each message so ``log.sessions_of`` finds them.
        tierer / summarizer: default to the offline ones.
        token_counter: counts a text's tokens.
    """
    chosen = get_preset(preset)
    settings = settings if settings is not None else Settings.from_env()
    store = require_store(store, where="build_memory", optional=True)
    policy = build_policy(chosen.window, settings)
    if not settings.ltm_enabled:
        if policy.consolidates:
            raise ConfigurationError(
                f"ltm_enabled is false, but the {chosen.name} preset moves messages from the "
                "window into long-term memory; enable it (LANGMEM_TIERS_LTM_ENABLED=true) or "
                "use the dual preset, whose window keeps everything."
            )
        store = None  # no user facts stored, no user_context read: the window alone
    elif store is None:
        store = default_store(settings)
    if log is None:
        if chosen.log == "sql" and getattr(store, "conn", None) is not None:
            # Messages go to the store's own database: its Database object, so the store
            # and every session's log share one owner of the connection.
            from langmem_tiers.short_term.sql_log import SqlMessageLog

            log = SqlMessageLog(store)
        else:
            log = open_log(chosen.log, settings, directory=directory)
    return ShortTermMemory(
        session_id,
        log=log,
        store=store,
        policy=policy,
        tierer=tierer if tierer is not None else OfflineTierer(),
        summarizer=summarizer if summarizer is not None else OfflineSummarizer(),
        settings=settings,
        user_id=user_id,
        target=chosen.target,
        view=chosen.view,
        token_counter=token_counter,
    )
