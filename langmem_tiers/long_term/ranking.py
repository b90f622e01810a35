"""The hybrid score of long-term retrieval.

Two forms, chosen by ``Settings.ranking``:

* ``gated`` (the default): ``score = semantic * (w_sem + w_rec*recency + w_freq*frequency +
  w_conf*confidence)``. Recency, frequency and confidence decide between memories of similar
  relevance, but cannot lift an irrelevant memory over a relevant one.
* ``linear``: ``score = w_sem*semantic + w_rec*recency + w_freq*frequency + w_conf*confidence``.

Why gated: every search counts as an access of what it returns, so under the linear form
memories that were returned often keep being returned, relevant or not. On LoCoMo (1,536
questions, 150 per conversation) the linear form lost 0.03 recall@10 with the offline
embedder and 0.08 with MiniLM against ranking by relevance alone; the gated form keeps all
but 0.005 / 0.015 of it (``benchmarks/locomo_store.py``).

Components, each in [0, 1]:

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

from langmem_tiers.config import RankingMode, RankingWeights

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
    mode: RankingMode = "gated",
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
        context = (
            weights.recency * parts.recency
            + weights.frequency * parts.frequency
            + weights.confidence * parts.confidence
        )
        if mode == "gated":
            score = parts.semantic * (weights.semantic + context)
        else:
            score = weights.semantic * parts.semantic + context
        ranked.append(Ranked(c.id, score, parts))
    ranked.sort(key=lambda r: (-r.score, r.id))
    return ranked
