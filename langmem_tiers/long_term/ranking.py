"""The hybrid score of long-term retrieval.

``score = w_sem*semantic + w_rec*recency + w_freq*frequency + w_conf*confidence``

* semantic: the query's relevance in [0, 1] (dense cosine fused with BM25, see fusion.py);
* recency: ``exp(-ln 2 * age_days / half_life_days)`` of the memory's time (its event time
  for episodic memories, otherwise its last update);
* frequency: ``log(1 + access_count) / log(1 + max_access)`` among the candidates;
* confidence: the memory's own confidence.

Example:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2025, 1, 31, tzinfo=timezone.utc)
    >>> fresh = Candidate("a", 0.8, datetime(2025, 1, 31, tzinfo=timezone.utc), 9, 1.0)
    >>> stale = Candidate("b", 0.8, datetime(2024, 1, 31, tzinfo=timezone.utc), 0, 0.5)
    >>> [r.id for r in rank([stale, fresh], RankingWeights(), 30.0, now)]
    ['a', 'b']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from langmem_tiers.config import RankingWeights

__all__ = ["Candidate", "Ranked", "ScoreComponents", "rank", "recency"]

_LN2 = math.log(2.0)


class Candidate(NamedTuple):
    """What ranking needs to know of one memory."""

    id: str
    relevance: float
    time: datetime
    access_count: int
    confidence: float


class ScoreComponents(NamedTuple):
    semantic: float
    recency: float
    frequency: float
    confidence: float


class Ranked(NamedTuple):
    id: str
    score: float
    components: ScoreComponents


def recency(time: datetime, now: datetime, half_life_days: float) -> float:
    """``exp(-ln 2 * age / half_life)``; a time in the future counts as now."""
    age_days = max(0.0, (now - time).total_seconds() / 86_400.0)
    return math.exp(-_LN2 * age_days / half_life_days)


def rank(
    candidates: Sequence[Candidate],
    weights: RankingWeights,
    half_life_days: float,
    now: datetime,
) -> list[Ranked]:
    """Score candidates and sort them best first (ties broken by id, so the order is stable)."""
    max_access = max((c.access_count for c in candidates), default=0)
    log_max = math.log1p(max_access)
    ranked: list[Ranked] = []
    for c in candidates:
        parts = ScoreComponents(
            semantic=min(1.0, max(0.0, c.relevance)),
            recency=recency(c.time, now, half_life_days),
            frequency=math.log1p(c.access_count) / log_max if log_max > 0 else 0.0,
            confidence=min(1.0, max(0.0, c.confidence)),
        )
        score = (
            weights.semantic * parts.semantic
            + weights.recency * parts.recency
            + weights.frequency * parts.frequency
            + weights.confidence * parts.confidence
        )
        ranked.append(Ranked(c.id, score, parts))
    ranked.sort(key=lambda r: (-r.score, r.id))
    return ranked
