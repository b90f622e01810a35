"""The two forms of the hybrid score."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_tiers.config import RankingWeights, Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.store.search.ranking import (
    FREQUENCY_HALF_COUNT,
    Candidate,
    frequency,
    rank,
    recency,
)

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


def test_frequency_is_the_memorys_own_count_saturating_at_half_count() -> None:
    assert frequency(0) == 0.0
    assert frequency(FREQUENCY_HALF_COUNT) == pytest.approx(0.5)
    counts = [0, 1, 2, 10, 100, 1_000, 10**9]
    values = [frequency(n) for n in counts]
    assert values == sorted(values)
    assert len(set(values)) == len(values)
    assert all(0.0 <= v < 1.0 for v in values)


def test_frequency_does_not_depend_on_the_other_candidates() -> None:
    alone = rank([Candidate("a", 0.5, NOW, 3, 1.0)], RankingWeights(), 30.0, NOW)
    beside_popular = rank(
        [Candidate("a", 0.5, NOW, 3, 1.0), Candidate("b", 0.1, NOW, 5_000, 1.0)],
        RankingWeights(),
        30.0,
        NOW,
    )
    a = next(r for r in beside_popular if r.id == "a")
    assert a.components.frequency == alone[0].components.frequency


def test_a_few_accesses_do_not_overturn_a_clear_relevance_gap() -> None:
    # Every search counts what it returns as accessed: a memory returned by a few earlier
    # searches must not pass a more relevant one that none returned.
    returned_before = Candidate("returned-before", 0.80, NOW, 3, 1.0)
    more_relevant = Candidate("more-relevant", 0.85, NOW, 0, 1.0)
    ranked = rank([returned_before, more_relevant], RankingWeights(), 30.0, NOW)
    assert [r.id for r in ranked] == ["more-relevant", "returned-before"]


def test_one_access_breaks_a_relevance_tie() -> None:
    used = Candidate("used", 0.7, NOW, 1, 1.0)
    unused = Candidate("unused", 0.7, NOW, 0, 1.0)
    assert [r.id for r in rank([unused, used], RankingWeights(), 30.0, NOW)] == [
        "used",
        "unused",
    ]


_unit_ish = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 1, 0, True, False, 2]),
)


@given(
    relevance=_unit_ish,
    confidence=_unit_ish,
    age=st.floats(min_value=-1e9, max_value=1e10, allow_nan=False),
    access_count=st.integers(min_value=-5, max_value=10**9),
    half_life=st.floats(min_value=0.01, max_value=1e5),
    mode=st.sampled_from(["gated", "linear"]),
)
def test_components_are_exactly_the_clamped_inputs_recency_and_frequency(
    relevance: float,
    confidence: float,
    age: float,
    access_count: int,
    half_life: float,
    mode: str,
) -> None:
    """rank() writes the components out inline for speed: bit for bit (and type for
    type) what ``min(1, max(0, x))``, :func:`recency` and :func:`frequency` give."""
    when = NOW - timedelta(seconds=age)
    weights = RankingWeights()
    [ranked] = rank(
        [Candidate("m", relevance, when, access_count, confidence)], weights, half_life, NOW, mode
    )  # type: ignore[arg-type]
    expected = (
        min(1.0, max(0.0, relevance)),
        recency(when, NOW, half_life),
        frequency(access_count),
        min(1.0, max(0.0, confidence)),
    )
    assert tuple(ranked.components) == expected
    assert [type(x) for x in ranked.components] == [type(x) for x in expected]
    sem, rec, freq, conf = expected
    context = weights.recency * rec + weights.frequency * freq + weights.confidence * conf
    score = (
        sem * (weights.semantic + context) if mode == "gated" else weights.semantic * sem + context
    )
    assert ranked.score == score
