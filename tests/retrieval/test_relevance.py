"""Absolute relevance: the lexical and dense sides on fixed scales, fused into [0, 1]."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langmem_tiers.long_term.store.search.relevance import (
    DEFAULT_COSINE_CURVE,
    absolute_relevance,
    dense_relevance,
    lexical_relevance,
)

keys = st.sampled_from("abcdefgh")
cosines = st.one_of(st.floats(-1.0, 1.0), st.sampled_from([0.35, -0.0, 1, 0]))
bm25_scores = st.one_of(st.floats(0.0, 80.0), st.sampled_from([0, 0.0, -1.0]))
curves = st.one_of(
    st.just(DEFAULT_COSINE_CURVE), st.tuples(st.floats(-1.0, 1.0), st.floats(1e-3, 2.0))
)


@given(
    st.dictionaries(keys, cosines),
    st.dictionaries(keys, bm25_scores),
    st.floats(-5.0, 50.0),
    st.floats(0.0, 10.0),
    curves,
)
def test_relevance_is_the_clamped_weighted_mean_of_both_sides(
    dense: dict[str, float],
    lexical: dict[str, float],
    mass: float,
    weight: float,
    curve: tuple[float, float],
) -> None:
    """Every key of either side, in [0, 1], bit for bit the mean of
    :func:`lexical_relevance` and ``weight`` x :func:`dense_relevance` (0 for a missing
    side), as the function writes them out inline for speed."""
    out = absolute_relevance(dense, lexical, idf_mass=mass, weight=weight, curve=curve)
    assert list(out) == list(dict.fromkeys([*dense, *lexical]))
    for key, value in out.items():
        lex = lexical_relevance(float(lexical.get(key, 0.0)), mass)
        den = dense_relevance(float(dense[key]), curve) if key in dense else 0.0
        assert value == min(1.0, max(0.0, (lex + weight * den) / (1.0 + weight)))
        assert type(value) is float
        assert 0.0 <= value <= 1.0


def test_a_lone_hit_scores_by_its_match_not_by_being_alone() -> None:
    """The scales are absolute: a close match alone scores high, a poor one alone low."""
    close = absolute_relevance({"m": 0.8}, {"m": 6.0}, idf_mass=3.0)
    poor = absolute_relevance({"m": 0.05}, {}, idf_mass=3.0)
    assert close["m"] > 0.8 > 0.2 > poor["m"]
