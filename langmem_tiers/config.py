"""Settings, read from arguments first, then the environment (and a ``.env`` file).

This is the one place that reads ``os.environ``. Every setting has a default, an
environment variable, and is validated when the settings are built, so a bad value is
a :class:`~langmem_tiers.errors.ConfigurationError` at start, not a surprise later.

Example:
    >>> from langmem_tiers.config import Settings
    >>> s = Settings.from_env(environ={"MEMORY_WINDOW_LIMIT": "7"})
    >>> s.memory_window_limit
    7
    >>> Settings.from_env(memory_window_limit=3, environ={"MEMORY_WINDOW_LIMIT": "7"}).memory_window_limit
    3
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from langmem_tiers.errors import ConfigurationError

__all__ = [
    "ENV_PREFIX",
    "ChatMode",
    "ConflictStrategy",
    "ContextPolicy",
    "PresetName",
    "RankingMode",
    "RankingWeights",
    "Settings",
    "default_data_dir",
]

ENV_PREFIX = "LANGMEM_TIERS_"

ConflictStrategy = Literal["supersede", "keep_both", "reject_new", "merge"]
PresetName = Literal["moving_window", "reset", "tiered", "dual"]
ChatMode = Literal["markers", "tools"]
RankingMode = Literal["gated", "linear"]
ContextPolicy = Literal["budget", "eager"]
"""How a tiered view picks each message's tier: ``budget`` keeps messages raw while the
view fits ``context_soft_budget`` and lowers the oldest only as needed; ``eager`` shows
every older message at its required tier (tier 1 unless the model asked for more)."""


class RankingWeights(NamedTuple):
    """Weights of the hybrid score; each in [0, 1], their sum 1 (within 1e-6).

    >>> RankingWeights().semantic
    0.4
    """

    semantic: float = 0.4
    recency: float = 0.25
    frequency: float = 0.15
    confidence: float = 0.2

    def validated(self, field_name: str = "weights") -> RankingWeights:
        """Return self, or raise ConfigurationError naming the bad component."""
        for name, value in zip(self._fields, self, strict=True):
            if not isinstance(value, (int, float)) or math.isnan(value) or not 0 <= value <= 1:
                raise ConfigurationError(
                    f"{field_name}.{name} must be a number in [0, 1], got {value!r}."
                )
        total = sum(self)
        if abs(total - 1.0) > 1e-6:
            raise ConfigurationError(
                f"{field_name} must sum to 1, got {total:.6g} from {tuple(self)!r}; "
                "scale them so they add up to 1."
            )
        return self

    @classmethod
    def parse(cls, text: str, field_name: str = "weights") -> RankingWeights:
        """Parse ``"0.4,0.25,0.15,0.2"`` (semantic, recency, frequency, confidence)."""
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 4:
            raise ConfigurationError(
                f"{field_name} needs four comma-separated numbers "
                f"(semantic,recency,frequency,confidence), got {text!r}."
            )
        try:
            values = [float(p) for p in parts]
        except ValueError as err:
            raise ConfigurationError(f"{field_name} must be numbers, got {text!r}.") from err
        return cls(*values).validated(field_name)


def default_data_dir() -> Path:
    """The user's data directory for the embedded default (created on first use)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("langmem-tiers", appauthor=False))


def _env(name: str, *aliases: str) -> dict[str, Any]:
    return {"env": (ENV_PREFIX + name, *aliases)}


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting of the package, with its default and environment variable.

    Environment variables are ``LANGMEM_TIERS_<NAME>`` (upper case); the seed names
    ``MEMORY_WINDOW_LIMIT``, ``SHORT_TERM_MEMORY_LIMIT`` and ``MEM0_ENABLED`` are read too.
    """

    # -- where things live --------------------------------------------------------
    url: str | None = field(default=None, metadata=_env("URL"))
    """Store URL: ``None`` for the embedded default, ``sqlite:///path.db``, ``postgresql://...``."""
    qdrant_location: str | None = field(default=None, metadata=_env("QDRANT"))
    """Qdrant for vectors: a server URL, a local path, or ``:memory:``."""
    model: str | None = field(default=None, metadata=_env("MODEL"))
    """Chat model as a provider string (``openai:gpt-4o-mini``); ``None`` means offline."""
    embeddings: str | None = field(default=None, metadata=_env("EMBEDDINGS"))
    """Embeddings as a provider string; ``None`` means the offline deterministic embedder."""

    preset: PresetName = field(default="tiered", metadata=_env("PRESET"))
    """Short-term memory preset: ``moving_window``, ``reset``, ``tiered`` or ``dual``."""
    chat_mode: ChatMode = field(default="markers", metadata=_env("CHAT_MODE"))
    """How the chat graph's model asks for more context: ``markers`` or ``tools``."""
    one_call: bool = field(default=False, metadata=_env("ONE_CALL"))
    """Chat graph: the answer's model call also writes tier 1 and tier 2 of the user message
    and of the answer, so a turn without requests costs one model call (no tierer call)."""

    # -- retrieval ----------------------------------------------------------------
    weights: RankingWeights = field(default_factory=RankingWeights, metadata=_env("WEIGHTS"))
    """Hybrid score weights (semantic, recency, frequency, confidence)."""
    ranking: RankingMode = field(default="gated", metadata=_env("RANKING"))
    """``gated``: relevance times the weighted components; ``linear``: their weighted sum."""
    recency_half_life_days: float = field(default=30.0, metadata=_env("RECENCY_HALF_LIFE_DAYS"))
    """Half-life of the recency component, in days."""
    candidate_multiplier: int = field(default=3, metadata=_env("CANDIDATE_MULTIPLIER"))
    """Candidates fetched from each index per result asked for (top k x this)."""
    neighbour_weight: float = field(default=0.7, metadata=_env("NEIGHBOUR_WEIGHT"))
    """How far an episodic memory moves towards the relevance of a memory written up to two
    places before or after it in the same conversation (0: neighbours are ignored; 1: as far
    as it)."""

    # -- limits -------------------------------------------------------------------
    max_content_chars: int = field(default=1_000_000, metadata=_env("MAX_CONTENT_CHARS"))
    """Largest message or memory text accepted; larger input is refused, not cut."""
    scope_cache_items: int = field(default=200_000, metadata=_env("SCOPE_CACHE_ITEMS"))
    """Memories whose terms and vectors a store keeps in process over all the namespaces it
    searched or wrote (about 0.8 KB an item plus 4 bytes a vector dimension): a search of a
    namespace held there reads one short statement, one of a namespace not held loads it
    (evicting the least recently used). 0 keeps none: every search reads the database."""

    # -- servers (HTTP API and MCP over HTTP) -------------------------------------
    mcp_answer_chars: int = field(default=100_000, metadata=_env("MCP_ANSWER_CHARS"))
    """Most characters of memory text (contents and values) one MCP answer carries, shared
    by its memories; a longer one is cut, with a note saying how to read the rest
    (``read_memory``, which pages it in pieces this long). Kept well under the 1 MiB an MCP
    client takes in one message, whatever the characters' encoded size."""
    server_header_timeout: float = field(default=10.0, metadata=_env("SERVER_HEADER_TIMEOUT"))
    """Seconds a client of the HTTP servers may take to send a request's line and headers
    (and its body) before the connection is closed."""
    server_keepalive_timeout: float = field(default=5.0, metadata=_env("SERVER_KEEPALIVE_TIMEOUT"))
    """Seconds an idle keep-alive connection of the HTTP servers stays open."""
    server_max_connections: int = field(default=200, metadata=_env("SERVER_MAX_CONNECTIONS"))
    """Connections the HTTP servers serve at once; more are answered 503 and closed."""

    # -- short-term memory --------------------------------------------------------
    memory_window_limit: int = field(
        default=5, metadata=_env("MEMORY_WINDOW_LIMIT", "MEMORY_WINDOW_LIMIT")
    )
    """``moving_window``: messages kept before the oldest N are consolidated (N+1 rule)."""
    short_term_memory_limit: int = field(
        default=5, metadata=_env("SHORT_TERM_MEMORY_LIMIT", "SHORT_TERM_MEMORY_LIMIT")
    )
    """``reset``: user messages allowed before the whole window is summarised and wiped."""
    sliding_window_rounds: int = field(default=10, metadata=_env("SLIDING_WINDOW_ROUNDS"))
    """``dual``: rounds (user + assistant) read from the JSONL file."""
    context_token_limit: int = field(default=30_000, metadata=_env("CONTEXT_TOKEN_LIMIT"))
    """``tiered``: token budget of the contextual memory."""
    context_token_buffer: int = field(default=5_000, metadata=_env("CONTEXT_TOKEN_BUFFER"))
    """``tiered``: pruning brings the context this far below the limit."""
    min_messages_kept: int = field(default=5, metadata=_env("MIN_MESSAGES_KEPT"))
    """``tiered``: pruning never leaves fewer messages than this."""
    context_policy: ContextPolicy = field(default="budget", metadata=_env("CONTEXT_POLICY"))
    """Tiered views: ``budget`` (raw until the soft budget needs the oldest lowered) or
    ``eager`` (the seed's view: every older message at tier 1 unless upgraded)."""
    context_soft_budget: int | None = field(default=None, metadata=_env("CONTEXT_SOFT_BUDGET"))
    """``budget`` policy: tokens the view may take before its oldest messages are lowered;
    ``None``: ``context_token_limit`` (lowered only when the raw view would not fit). Set it
    lower to trade detail for tokens sooner."""
    max_regenerations: int = field(default=2, metadata=_env("MAX_REGENERATIONS"))
    """Bound of the REQUEST_TIER / SEARCH_EPISODIC regenerate loop."""
    user_context_k: int = field(default=5, metadata=_env("USER_CONTEXT_K"))
    """Long-term memories given to the model as ``user_context``."""
    ltm_enabled: bool = field(default=True, metadata=_env("LTM_ENABLED", "MEM0_ENABLED"))
    """``dual``: whether user facts go to, and ``user_context`` comes from, long-term memory.

    Off, the conversation keeps only its short-term window (the seed's ``MEM0_ENABLED=false``);
    presets that move messages into long-term memory refuse to run without it.
    """

    # -- long-term memory engine --------------------------------------------------
    conflict_similarity_threshold: float = field(
        default=0.3, metadata=_env("CONFLICT_SIMILARITY_THRESHOLD")
    )
    """Memories at least this similar are checked for contradictions."""
    duplicate_similarity: float = field(default=0.98, metadata=_env("DUPLICATE_SIMILARITY"))
    """At or above this similarity, with no contradiction, a new memory is a duplicate."""
    conflict_strategy: ConflictStrategy = field(
        default="supersede", metadata=_env("CONFLICT_STRATEGY")
    )
    """Default resolution: ``supersede``, ``keep_both``, ``reject_new`` or ``merge``."""
    consolidation_threshold: int = field(default=20, metadata=_env("CONSOLIDATION_THRESHOLD"))
    """Unconsolidated episodes of a scope that trigger consolidation."""
    decay_half_life_days: float = field(default=30.0, metadata=_env("DECAY_HALF_LIFE_DAYS"))
    """Half-life of importance since last access."""
    decay_threshold: float = field(default=0.1, metadata=_env("DECAY_THRESHOLD"))
    """Memories whose importance falls below this become ``decayed``."""

    def __post_init__(self) -> None:
        self.weights.validated("weights")
        positive_ints = (
            "candidate_multiplier",
            "max_content_chars",
            "memory_window_limit",
            "short_term_memory_limit",
            "sliding_window_rounds",
            "context_token_limit",
            "min_messages_kept",
            "user_context_k",
            "consolidation_threshold",
            "mcp_answer_chars",
            "server_max_connections",
        )
        for name in positive_ints:
            _require_int(name, getattr(self, name), minimum=1)
        _require_int("context_token_buffer", self.context_token_buffer, minimum=0)
        _require_int("max_regenerations", self.max_regenerations, minimum=0)
        _require_int("scope_cache_items", self.scope_cache_items, minimum=0)
        if self.context_soft_budget is not None:
            _require_int("context_soft_budget", self.context_soft_budget, minimum=1)
            if self.context_soft_budget > self.context_token_limit:
                raise ConfigurationError(
                    f"context_soft_budget ({self.context_soft_budget}) must not exceed "
                    f"context_token_limit ({self.context_token_limit}); lower it or leave it "
                    "unset (then it is context_token_limit)."
                )
        if not isinstance(self.one_call, bool):
            raise ConfigurationError(f"one_call must be true or false, got {self.one_call!r}.")
        if self.context_token_buffer >= self.context_token_limit:
            raise ConfigurationError(
                f"context_token_buffer ({self.context_token_buffer}) must be smaller than "
                f"context_token_limit ({self.context_token_limit})."
            )
        for name in (
            "recency_half_life_days",
            "decay_half_life_days",
            "server_header_timeout",
            "server_keepalive_timeout",
        ):
            _require_float(name, getattr(self, name), low=0.0, low_open=True)
        for name in (
            "conflict_similarity_threshold",
            "duplicate_similarity",
            "decay_threshold",
            "neighbour_weight",
        ):
            _require_float(name, getattr(self, name), low=0.0, high=1.0)
        if not isinstance(self.ltm_enabled, bool):
            raise ConfigurationError(
                f"ltm_enabled must be true or false, got {self.ltm_enabled!r}."
            )
        for name, allowed in (
            ("preset", PresetName),
            ("chat_mode", ChatMode),
            ("ranking", RankingMode),
            ("context_policy", ContextPolicy),
        ):
            if getattr(self, name) not in get_args(allowed):
                raise ConfigurationError(
                    f"{name} must be one of {', '.join(get_args(allowed))}; "
                    f"got {getattr(self, name)!r}."
                )
        if self.conflict_strategy not in get_args(ConflictStrategy):
            raise ConfigurationError(
                f"conflict_strategy must be one of {', '.join(get_args(ConflictStrategy))}; "
                f"got {self.conflict_strategy!r}."
            )

    @classmethod
    def from_env(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        dotenv: str | Path | None = ".env",
        **overrides: Any,
    ) -> Settings:
        """Build settings: keyword arguments win over the environment, which wins over defaults.

        Args:
            environ: the environment to read (``os.environ`` when ``None``).
            dotenv: a ``.env`` file read into the environment (existing variables win);
                ``None`` to skip it. Only used when ``environ`` is ``None``.
            **overrides: settings by field name.

        Raises:
            ConfigurationError: a value is invalid or a keyword is not a setting.
        """
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise ConfigurationError(
                f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}."
            )
        if environ is None:
            environ = dict(os.environ)
            if dotenv is not None and Path(dotenv).is_file():
                from dotenv import dotenv_values

                for name, value in dotenv_values(dotenv).items():
                    if value is not None:
                        environ.setdefault(name, value)
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for name, f in known.items():
            if name in overrides:
                value = overrides[name]
                if name == "weights" and isinstance(value, (tuple, list)):
                    values[name] = RankingWeights(*value)
                else:
                    values[name] = value
                continue
            for var in f.metadata["env"]:
                if var in environ and environ[var].strip() != "":
                    values[name] = _parse(name, var, environ[var], f.type)
                    sources[name] = var
                    break
        try:
            return cls(**values)
        except ConfigurationError as err:
            # Name the environment variable the bad value came from.
            name = str(err).split(" ", 1)[0].split(".", 1)[0]
            if name in sources:
                raise ConfigurationError(f"{sources[name]}: {err}") from err
            raise

    @property
    def soft_budget(self) -> int:
        """The ``budget`` policy's soft budget, with its default worked out.

        >>> Settings(context_token_limit=600, context_token_buffer=200).soft_budget
        600
        """
        if self.context_soft_budget is not None:
            return self.context_soft_budget
        return self.context_token_limit

    def replace(self, **changes: Any) -> Settings:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _parse(name: str, var: str, raw: str, type_name: Any) -> Any:
    text = raw.strip()
    type_text = str(type_name)
    expected = {
        "int": "a whole number",
        "int | None": "a whole number",
        "float": "a number",
        "bool": "true or false",
    }.get(type_text, type_text)
    try:
        if name == "weights":
            return RankingWeights.parse(text, var)
        if type_text == "int":
            return int(text)
        if type_text == "float":
            return float(text)
        if type_text == "bool":
            return _parse_bool(var, name, raw)
        if type_text == "int | None":
            return int(text)
    except ConfigurationError:
        raise
    except ValueError as err:
        raise ConfigurationError(
            f"{var} must be {expected} (setting {name}), got {raw!r}."
        ) from err
    return text


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse_bool(var: str, name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ConfigurationError(
        f"{var} must be true or false (setting {name}; also 1/0, yes/no, on/off), got {raw!r}."
    )


def _require_int(name: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}.")


def _require_float(
    name: str,
    value: Any,
    *,
    low: float,
    high: float | None = None,
    low_open: bool = False,
) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        ok = value > low if low_open else value >= low
        if high is not None:
            ok = ok and value <= high
    if not ok:
        bound = f"> {low}" if low_open else f">= {low}"
        if high is not None:
            bound += f" and <= {high}"
        raise ConfigurationError(f"{name} must be a number {bound}, got {value!r}.")
