"""Fusion of dense and lexical scores into relevance in [0, 1]."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from langmem_tiers.embeddings import OfflineEmbeddings
from langmem_tiers.long_term.fusion import DENSE_WEIGHT, dense_weight_for, fuse

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
