"""The two forms of the hybrid score."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from langmem_tiers.config import RankingWeights, Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.ranking import Candidate, rank

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)


def _candidates() -> list[Candidate]:
    return [
        # Relevant, but old, never used and of middling confidence.
        Candidate("relevant", 0.9, NOW - timedelta(days=365), 0, 0.5),
        # Barely relevant, but fresh, used a lot and certain.
        Candidate("popular", 0.2, NOW, 50, 1.0),
    ]


def test_gated_ranking_never_lifts_an_irrelevant_memory_over_a_relevant_one() -> None:
    ranked = rank(_candidates(), RankingWeights(), 30.0, NOW, "gated")
    assert [r.id for r in ranked] == ["relevant", "popular"]
    top = ranked[0]
    c = top.components
    assert top.score == pytest.approx(
        c.semantic * (0.4 + 0.25 * c.recency + 0.15 * c.frequency + 0.2 * c.confidence)
    )


def test_linear_ranking_is_the_plain_weighted_sum() -> None:
    ranked = rank(_candidates(), RankingWeights(), 30.0, NOW, "linear")
    assert [r.id for r in ranked] == ["popular", "relevant"]
    for r in ranked:
        c = r.components
        assert r.score == pytest.approx(
            0.4 * c.semantic + 0.25 * c.recency + 0.15 * c.frequency + 0.2 * c.confidence
        )


def test_equal_relevance_is_decided_by_recency_frequency_confidence() -> None:
    fresh = Candidate("fresh", 0.6, NOW, 9, 1.0)
    stale = Candidate("stale", 0.6, NOW - timedelta(days=200), 0, 0.4)
    for mode in ("gated", "linear"):
        assert [r.id for r in rank([stale, fresh], RankingWeights(), 30.0, NOW, mode)] == [
            "fresh",
            "stale",
        ]


def test_ranking_mode_is_a_validated_setting() -> None:
    assert Settings.from_env(environ={}).ranking == "gated"
    assert Settings.from_env(environ={"LANGMEM_TIERS_RANKING": "linear"}).ranking == "linear"
    with pytest.raises(ConfigurationError, match="LANGMEM_TIERS_RANKING"):
        Settings.from_env(environ={"LANGMEM_TIERS_RANKING": "random"})
