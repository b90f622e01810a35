"""The hybrid score of long-term retrieval.

Two forms, chosen by ``Settings.ranking``:

* ``gated`` (the default): ``score = semantic * (w_sem + w_rec*recency + w_freq*frequency +
  w_conf*confidence)``. Recency, frequency and confidence decide between memories of similar
  relevance, but cannot lift an irrelevant memory over a relevant one.
* ``linear``: ``score = w_sem*semantic + w_rec*recency + w_freq*frequency + w_conf*confidence``.

Why gated: every search counts as an access of what it returns, so under the linear form
memories that were returned often keep being returned, relevant or not. On LoCoMo the
linear form lost recall@10 with both embedders against ranking by relevance alone; the
gated form, with the saturating frequency below, is as good as it on both
(``benchmarks/locomo_store.py``).

Components, each in [0, 1]:

* semantic: the query's relevance in [0, 1] (dense cosine fused with BM25, see fusion.py);
* recency: ``exp(-ln 2 * age_days / half_life_days)`` of the memory's time (its event time
  for episodic memories, otherwise its last update);
* frequency: ``n / (n + FREQUENCY_HALF_COUNT)`` of the memory's access count ``n`` (see
  :func:`frequency`);
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
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from langmem_tiers.config import RankingMode, RankingWeights

__all__ = [
    "FREQUENCY_HALF_COUNT",
    "Candidate",
    "Ranked",
    "ScoreComponents",
    "boost_reachable",
    "frequency",
    "rank",
    "recency",
]

_LN2 = math.log(2.0)

#: Access count at which the frequency component reaches one half. Accesses include every
#: search that returned the memory, so a count grows with how often a memory *matches*, not
#: only with how often it is used: small counts are noise and must stay small. On LoCoMo's
#: tuning conversations with MiniLM, recall@10 was lowest with the former
#: ``log(1 + n) / log(1 + max n)`` over the candidates and rose with the half count towards
#: that with no access counts at all; 100 is where the feedback loop costs next to nothing
#: while a memory read a hundred times still gets a visible share.
FREQUENCY_HALF_COUNT = 100


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


def frequency(access_count: int) -> float:
    """``n / (n + FREQUENCY_HALF_COUNT)``: in [0, 1), rising with the memory's own count.

    Why absolute and saturating: the former ``log(1 + n) / log(1 + max n)`` over the
    candidates gave a memory returned once the full component whenever no candidate had
    been returned more often, so after the first few searches a difference of one or two
    accesses was worth the component's whole weight and, in the gated form, reordered
    memories of clearly different relevance (recall@10 fell on LoCoMo with MiniLM). A memory's
    frequency now depends only on its own count, and only a memory that has been accessed
    as often as :data:`FREQUENCY_HALF_COUNT` gets half the component; it still breaks ties
    between memories of equal relevance after a single access.

    Example::

        >>> frequency(0), frequency(100), frequency(1) > frequency(0)
        (0.0, 0.5, True)
    """
    n = max(0, access_count)
    return n / (n + FREQUENCY_HALF_COUNT)


def rank(
    candidates: Sequence[Candidate],
    weights: RankingWeights,
    half_life_days: float,
    now: datetime,
    mode: RankingMode = "gated",
) -> list[Ranked]:
    """Score candidates and sort them best first (ties broken by id, so the order is stable)."""
    w_semantic, w_recency = weights.semantic, weights.recency
    w_frequency, w_confidence = weights.frequency, weights.confidence
    gated = mode == "gated"
    exp = math.exp
    ranked: list[Ranked] = []
    # recency(), frequency() and the clamps written out, the same arithmetic in the same
    # order (the same scores to the last bit): a call apiece cost a search of fifty
    # candidates a tenth of its ranking.
    for c in candidates:
        semantic = c.relevance
        semantic = 1.0 if semantic >= 1.0 else semantic if semantic > 0.0 else 0.0
        confidence = c.confidence
        confidence = 1.0 if confidence >= 1.0 else confidence if confidence > 0.0 else 0.0
        age_days = (now - c.time).total_seconds() / 86_400.0
        fresh = exp(-_LN2 * (age_days if age_days > 0.0 else 0.0) / half_life_days)
        count = c.access_count if c.access_count > 0 else 0
        used = count / (count + FREQUENCY_HALF_COUNT)
        context = w_recency * fresh + w_frequency * used + w_confidence * confidence
        score = semantic * (w_semantic + context) if gated else w_semantic * semantic + context
        ranked.append(Ranked(c.id, score, ScoreComponents(semantic, fresh, used, confidence)))
    ranked.sort(key=lambda r: (-r.score, r.id))
    return ranked


def boost_reachable(
    ranked: Sequence[Ranked],
    want: int,
    most_lost: float,
    boosts_of: Callable[[Sequence[Ranked]], Mapping[str, float]],
) -> list[Ranked]:
    """``ranked`` (best first) with the score multipliers ``boosts_of`` gives (in
    ``[1 - most_lost, 1]``; empty: none) applied; its first ``want`` are exact.

    Only the candidates that could still reach the first ``want`` are given to
    ``boosts_of``, so what it reads of each (a value, a text) is read for few: one whose
    score is below ``1 - most_lost`` of the ``want``-th cannot pass any of the first
    ``want``, which keep at least that much.
    """
    if want <= 0 or len(ranked) < 2:
        return list(ranked)
    bar = ranked[min(want, len(ranked)) - 1].score * (1.0 - most_lost)
    reach = next((n for n, r in enumerate(ranked) if r.score < bar), len(ranked))
    boosts = boosts_of(ranked[:reach])
    if not boosts:
        return list(ranked)
    moved = sorted(
        (r._replace(score=r.score * boosts[r.id]) for r in ranked[:reach]),
        key=lambda r: (-r.score, r.id),
    )
    return moved + list(ranked[reach:])
