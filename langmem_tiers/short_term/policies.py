"""Window policies: which messages short-term memory keeps, reads and consolidates.

A policy only decides; it never touches a log or a store. Given the session's stored
records it answers a :class:`ConsolidationPlan` (what to write to long-term memory and
then remove) or ``None``, and which records the context reads.

======================  =========================================================================
policy                  behaviour
======================  =========================================================================
``MovingWindow(N)``     when more than N messages are kept, the oldest N are summarised (one
                        summary with key concepts) and removed: N+1 messages leave 1.
``ResetWindow(N)``      when more than N user messages are kept, all messages are summarised
                        into one paragraph and removed (the window is wiped).
``SlidingWindow(R)``    nothing is ever removed; the context reads the last R rounds (2R
                        messages).
``TokenBudget(L, B, K)``  when the tiered context is over L tokens, the oldest exchanges (a user
                        message and the replies up to the next one) are archived whole, one
                        episodic memory per message, until it is under L - B, keeping at least
                        K messages.
======================  =========================================================================

Example:
    >>> from langmem_tiers.short_term.records import MessageRecord
    >>> records = [MessageRecord(f"m{i}", i, "human", f"hi {i}", None, None) for i in range(1, 7)]
    >>> plan = MovingWindow(5).plan(records, lambda rs: [1] * len(rs))
    >>> [r.id for r in plan.records], plan.kind
    (['m1', 'm2', 'm3', 'm4', 'm5'], 'summary')
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.records import MessageRecord

__all__ = [
    "ConsolidationPlan",
    "MovingWindow",
    "ResetWindow",
    "SlidingWindow",
    "TokenBudget",
    "TokenCosts",
    "WindowPolicy",
    "split_exchanges",
]

TokenCosts = Callable[[Sequence[MessageRecord]], list[int]]
"""Tokens each record takes in the context, given the records the context holds."""


class ConsolidationPlan(NamedTuple):
    """What to move from short-term to long-term memory."""

    kind: Literal["summary", "episodes"]
    """``summary``: one semantic summary of all records; ``episodes``: one episodic memory each."""
    records: tuple[MessageRecord, ...]
    """The records covered (oldest first); they are removed once persisted."""
    style: Literal["window", "reset", "prune"]
    """Which policy made the plan (kept in the memory's value)."""


def _require_positive(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be a whole number >= {minimum}, got {value!r}.")
    return value


class WindowPolicy(ABC):
    """Decides what stays in short-term memory."""

    name: str = "policy"
    summarises: bool = False
    """Whether plans are summaries (a summariser is then needed)."""

    @property
    def read_limit(self) -> int | None:
        """How many of the newest records the context reads (None: all)."""
        return None

    @property
    def consolidates(self) -> bool:
        """Whether this policy ever moves records to long-term memory."""
        return True

    @abstractmethod
    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        """The next consolidation for these records (oldest first), or None."""


class MovingWindow(WindowPolicy):
    """Keep at most ``limit`` messages: past it, the oldest ``limit`` are summarised.

    >>> MovingWindow(5).plan([], lambda rs: []) is None
    True
    """

    name = "moving_window"
    summarises = True

    def __init__(self, limit: int = 5) -> None:
        self.limit = _require_positive("memory_window_limit", limit)

    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        if len(records) <= self.limit:
            return None
        return ConsolidationPlan("summary", tuple(records[: self.limit]), "window")


class ResetWindow(WindowPolicy):
    """Past ``limit`` user messages, summarise everything into one paragraph and wipe."""

    name = "reset"
    summarises = True

    def __init__(self, limit: int = 5) -> None:
        self.limit = _require_positive("short_term_memory_limit", limit)

    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        if sum(1 for r in records if r.role == "human") <= self.limit:
            return None
        return ConsolidationPlan("summary", tuple(records), "reset")


class SlidingWindow(WindowPolicy):
    """Keep everything; read the last ``rounds`` rounds (two messages a round)."""

    name = "sliding"

    def __init__(self, rounds: int = 10) -> None:
        self.rounds = _require_positive("sliding_window_rounds", rounds)

    @property
    def read_limit(self) -> int | None:
        return 2 * self.rounds

    @property
    def consolidates(self) -> bool:
        return False

    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        return None


def split_exchanges(records: Sequence[MessageRecord]) -> list[list[MessageRecord]]:
    """Group records into exchanges: a user message and everything up to the next one.

    Records before the first user message form an exchange of their own.

    >>> rs = [MessageRecord(f"m{i}", i, role, "x", None, None)
    ...       for i, role in enumerate(["ai", "human", "ai", "tool", "human"], start=1)]
    >>> [[r.id for r in ex] for ex in split_exchanges(rs)]
    [['m1'], ['m2', 'm3', 'm4'], ['m5']]
    """
    exchanges: list[list[MessageRecord]] = []
    for record in records:
        if not exchanges or record.role == "human":
            exchanges.append([record])
        else:
            exchanges[-1].append(record)
    return exchanges


class TokenBudget(WindowPolicy):
    """Archive the oldest exchanges whole when the tiered context is over ``limit`` tokens.

    Archiving goes on until the context is below ``limit - buffer``, and stops before it
    would leave fewer than ``min_kept`` messages.
    """

    name = "token_budget"

    def __init__(self, limit: int = 30_000, buffer: int = 5_000, min_kept: int = 5) -> None:
        self.limit = _require_positive("context_token_limit", limit)
        self.buffer = _require_positive("context_token_buffer", buffer, minimum=0)
        self.min_kept = _require_positive("min_messages_kept", min_kept)
        if self.buffer >= self.limit:
            raise ConfigurationError(
                f"context_token_buffer ({buffer}) must be smaller than context_token_limit "
                f"({limit})."
            )

    def plan(self, records: Sequence[MessageRecord], costs: TokenCosts) -> ConsolidationPlan | None:
        cost = costs(records)
        total = sum(cost)
        if total <= self.limit:
            return None
        by_id = dict(zip((r.id for r in records), cost, strict=True))
        target = self.limit - self.buffer
        kept = len(records)
        archived: list[MessageRecord] = []
        for exchange in split_exchanges(records):
            if total < target or kept - len(exchange) < self.min_kept:
                break
            archived.extend(exchange)
            kept -= len(exchange)
            total -= sum(by_id[r.id] for r in exchange)
        if not archived:
            return None
        return ConsolidationPlan("episodes", tuple(archived), "prune")
