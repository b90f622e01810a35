"""Fusion of dense and lexical scores into relevance in [0, 1]."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_tiers.embeddings import OfflineEmbeddings
from langmem_tiers.long_term.store.search.fusion import (
    DENSE_WEIGHT,
    dense_weight_for,
    fuse,
    smooth_neighbours,
)

scores = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
bm25 = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
keys = st.sampled_from("abcdefgh")


@given(st.dictionaries(keys, scores), st.dictionaries(keys, bm25), st.floats(0, 5))
def test_relevance_is_in_unit_interval_for_every_key_of_the_union(
    dense: dict[str, float], lexical: dict[str, float], weight: float
) -> None:
    out = fuse(dense, lexical, weight=weight)
    assert set(out) == set(dense) | set(lexical)
    assert all(0.0 <= v <= 1.0 for v in out.values())


@given(
    st.dictionaries(keys, scores, min_size=1),
    st.dictionaries(keys, bm25),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_raising_a_dense_score_never_lowers_that_relevance(
    dense: dict[str, float], lexical: dict[str, float], bump: float
) -> None:
    key = sorted(dense)[0]
    before = fuse(dense, lexical)[key]
    after = fuse({**dense, key: dense[key] + bump}, lexical)[key]
    assert after >= before - 1e-12


@given(
    st.dictionaries(keys, scores),
    st.dictionaries(keys, bm25, min_size=1),
    st.floats(min_value=0.0, max_value=10.0),
)
def test_raising_a_lexical_score_never_lowers_that_relevance(
    dense: dict[str, float], lexical: dict[str, float], bump: float
) -> None:
    key = sorted(lexical)[0]
    before = fuse(dense, lexical)[key]
    after = fuse(dense, {**lexical, key: lexical[key] + bump})[key]
    assert after >= before - 1e-12


def test_missing_lexical_key_counts_as_zero() -> None:
    dense = {"a": 0.5, "b": 0.3, "c": 0.1}
    assert fuse(dense, {"a": 2.0}) == fuse(dense, {"a": 2.0, "b": 0.0, "c": 0.0})


def test_missing_dense_key_gets_the_lowest_dense_score() -> None:
    lexical = {"a": 1.0, "b": 3.0, "c": 2.0}
    assert fuse({"a": 0.9, "b": 0.2}, lexical) == fuse({"a": 0.9, "b": 0.2, "c": 0.2}, lexical)


def test_empty_and_flat_inputs() -> None:
    assert fuse({}, {}) == {}
    assert fuse({"a": 0.7}, {}) == {"a": 0.5}
    assert fuse({}, {"a": 3.0, "b": 3.0}) == {"a": 0.5, "b": 0.5}
    # A flat dense side leaves the lexical order.
    out = fuse({"a": 0.4, "b": 0.4, "c": 0.4}, {"a": 1.0, "b": 5.0})
    assert out["b"] > out["a"] > out["c"]


def test_ties_get_equal_relevance() -> None:
    out = fuse({"a": 0.6, "b": 0.6, "c": 0.1}, {"a": 2.0, "b": 2.0})
    assert out["a"] == out["b"]
    assert out["a"] > out["c"]


def test_weight_moves_between_lexical_and_dense_order() -> None:
    dense = {"a": 0.9, "b": 0.1, "c": 0.5}
    lexical = {"a": 0.5, "b": 9.0, "c": 0.4}
    lex_only = fuse(dense, lexical, weight=0.0)
    assert max(lex_only, key=lex_only.__getitem__) == "b"
    dense_heavy = fuse(dense, lexical, weight=50.0)
    assert max(dense_heavy, key=dense_heavy.__getitem__) == "a"


def test_both_signals_beat_one() -> None:
    # 'both' is second on each side but first overall: the point of fusing.
    dense = {"dense_top": 0.80, "both": 0.75, "lex_top": 0.20, "none": 0.10}
    lexical = {"dense_top": 0.5, "both": 6.0, "lex_top": 7.0}
    out = fuse(dense, lexical, weight=1.0)
    assert max(out, key=out.__getitem__) == "both"


def test_dense_weight_for_embedders() -> None:
    assert dense_weight_for(OfflineEmbeddings()) == OfflineEmbeddings.fusion_dense_weight
    assert OfflineEmbeddings.fusion_dense_weight < DENSE_WEIGHT
    assert dense_weight_for(object()) == DENSE_WEIGHT

    class Declares:
        fusion_dense_weight = 0.5

    class Broken:
        fusion_dense_weight = "high"

    assert dense_weight_for(Declares()) == 0.5
    assert dense_weight_for(Broken()) == DENSE_WEIGHT


def test_smooth_neighbours_lifts_the_neighbour_of_a_strong_match() -> None:
    rel = {"question": 0.9, "answer": 0.3, "unrelated": 0.35, "far": 0.1}
    neighbours = {"question": ["answer"], "answer": ["question", "far"], "far": ["answer"]}
    out = smooth_neighbours(rel, neighbours, weight=0.5)
    assert out["answer"] == pytest.approx(0.3 + 0.5 * 0.6)
    assert out["answer"] > out["unrelated"]
    # The best match and items with no more relevant neighbour keep their relevance.
    assert out["question"] == 0.9
    assert out["unrelated"] == 0.35
    assert out["far"] == pytest.approx(0.1 + 0.5 * (0.3 - 0.1))


def test_smooth_neighbours_edge_cases() -> None:
    assert smooth_neighbours({}, {}) == {}
    rel = {"a": 0.2, "b": 0.8}
    assert smooth_neighbours(rel, {}) == rel
    assert smooth_neighbours(rel, {"a": ["b"]}, weight=0.0) == rel
    # A neighbour that is not a candidate counts as 0, so it lifts nothing.
    assert smooth_neighbours(rel, {"a": ["zzz"]}) == rel
    with pytest.raises(ValueError, match="weight"):
        smooth_neighbours(rel, {}, weight=1.5)


@given(
    st.dictionaries(keys, st.floats(0.0, 1.0), min_size=1),
    st.dictionaries(keys, st.lists(keys, max_size=2)),
    st.floats(0.0, 1.0),
)
def test_smooth_neighbours_stays_in_range_never_lowers_and_never_passes_the_lifter(
    rel: dict[str, float], neighbours: dict[str, list[str]], weight: float
) -> None:
    out = smooth_neighbours(rel, neighbours, weight=weight)
    assert set(out) == set(rel)
    for key, value in out.items():
        assert 0.0 <= value <= 1.0
        assert value >= rel[key]
        best = max([rel.get(n, 0.0) for n in neighbours.get(key, [])] + [rel[key]])
        assert value <= best + 1e-12
