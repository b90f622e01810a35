"""The analyzer and the BM25 reference the store's SQL is tested against."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_tiers.long_term.store.search import bm25 as lexical
from langmem_tiers.long_term.store.search.bm25 import (
    analyze,
    analyze_query,
    bm25_scores,
    expand_query,
    query_weights,
    term_frequencies,
)


def test_analyze_lowercases_stems_and_drops_stop_words() -> None:
    assert analyze("The Paintings were PAINTED by painters") == ["paint", "paint", "painter"]


def test_analyze_keeps_numbers_whole() -> None:
    assert analyze("Born in 1987, she ran 3.5 km and paid 1,000 dollars") == [
        "born",
        "1987",
        "ran",
        "3.5",
        "km",
        "paid",
        "1000",
        "dollar",
    ]


def test_analyze_reduces_contractions_and_possessives() -> None:
    assert analyze("Caroline's dog didn't bark; we're fine") == ["carolin", "dog", "bark", "fine"]
    # Typographic apostrophes behave like ASCII ones.
    assert analyze("Caroline\u2019s dog") == analyze("Caroline's dog")


def test_analyze_folds_accents_and_case_on_latin_letters() -> None:
    assert analyze("Café CRÈME brûlée") == analyze("cafe creme brulee")
    assert analyze("STRASSE") == analyze("straße")


def test_analyze_keeps_other_scripts() -> None:
    assert analyze("Москва") == ["москва"]
    assert analyze("東京タワー") == ["東", "京", "タ", "ワ", "ー"]
    # Marks that are part of a non-Latin letter are not stripped.
    assert analyze("हिन्दी") == ["हिन्दी"]


def test_analyze_splits_on_punctuation_and_underscores() -> None:
    assert analyze("user_name=Jordan, project:RAI-Chat!") == [
        "user",
        "name",
        "jordan",
        "project",
        "rai",
        "chat",
    ]


def test_analyze_edge_cases() -> None:
    assert analyze("") == []
    assert analyze("   ...!?  ") == []
    assert analyze("the and of it") == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_text_is_split_as_by_the_full_token_pattern(text: str) -> None:
    # Two patterns, one result: the fast one for ASCII must find exactly the tokens of
    # the one that also knows combining marks and CJK, whatever the case.
    assert lexical._ASCII_TOKEN.findall(text) == lexical._TOKEN.findall(text)


def test_ascii_and_other_text_are_analysed_alike() -> None:
    # The same words with one non-ASCII character anywhere take the full pattern.
    assert (
        analyze("Rock'n'roll 3.5 hours, 1,000 steps_and_jumps")
        == analyze("Rock'n'roll 3.5 hours, 1,000 steps_and_jumps \u00e9")[:-1]
    )
    assert analyze("Caroline's") == analyze("Caroline\u2019s") == ["carolin"]


def test_analyze_is_deterministic() -> None:
    text = "Went hiking with friends in the mountains last weekend"
    assert analyze(text) == analyze(text)


def test_analyze_query_drops_question_framing_words_only_there() -> None:
    assert analyze_query("Do you remember what Jordan said about the RAI project?") == [
        "jordan",
        "rai",
        "project",
    ]
    assert "said" in analyze("Jordan said the project is late")


def test_term_frequencies_and_query_weights() -> None:
    assert term_frequencies(["a", "b", "a"]) == {"a": 2, "b": 1}
    assert term_frequencies([]) == {}
    assert query_weights(["x", "x", "y"]) == {"x": 2.0, "y": 1.0}
    assert query_weights({"x": 0.5, "y": 0.0}) == {"x": 0.5}


# A corpus small enough to compute by hand: N = 3, avgdl = (2 + 3 + 1) / 3 = 2.
DOCS = [["a", "b"], ["b", "c", "c"], ["d"]]


def test_bm25_matches_hand_computed_values() -> None:
    # term c: df = 1, idf = ln(1 + 2.5 / 1.5) = ln(8/3) = 0.980829;
    # doc 1: tf 2, dl 3, norm = 0.25 + 0.75 * 3 / 2 = 1.375 -> 0.980829 * 4.4 / 3.65
    assert bm25_scores(["c"], DOCS, k1=1.2, b=0.75) == pytest.approx([0.0, 1.182369, 0.0], abs=1e-6)
    # term b: df = 2, idf = ln(1.6) = 0.470004; doc 0 norm 1 -> 0.470004 * 2.2 / 2.2,
    # doc 1 norm 1.375 -> 0.470004 * 2.2 / 2.65
    assert bm25_scores(["b"], DOCS, k1=1.2, b=0.75) == pytest.approx(
        [0.470004, 0.390192, 0.0], abs=1e-6
    )


def test_bm25_sums_terms_and_honours_weights() -> None:
    single_b = bm25_scores(["b"], DOCS, k1=1.2, b=0.75)
    single_c = bm25_scores(["c"], DOCS, k1=1.2, b=0.75)
    both = bm25_scores(["b", "c"], DOCS, k1=1.2, b=0.75)
    assert both == pytest.approx([x + y for x, y in zip(single_b, single_c, strict=True)])
    doubled = bm25_scores({"b": 2.0}, DOCS, k1=1.2, b=0.75)
    assert doubled == pytest.approx([2 * x for x in single_b])
    assert bm25_scores(["b", "b"], DOCS, k1=1.2, b=0.75) == pytest.approx(doubled)


def test_bm25_b_zero_ignores_length_and_defaults_are_the_module_constants() -> None:
    assert bm25_scores(["b"], DOCS, k1=1.2, b=0.0)[0] == pytest.approx(
        bm25_scores(["b"], DOCS, k1=1.2, b=0.0)[1]
    )
    assert bm25_scores(["c"], DOCS) == bm25_scores(
        ["c"], DOCS, k1=lexical.BM25_K1, b=lexical.BM25_B
    )


def test_bm25_edge_cases() -> None:
    assert bm25_scores(["a"], []) == []
    assert bm25_scores([], DOCS) == [0.0, 0.0, 0.0]
    assert bm25_scores(["zzz"], DOCS) == [0.0, 0.0, 0.0]
    assert bm25_scores(["a"], [[], []]) == [0.0, 0.0]
    # A term in every document still scores above zero (the +1 inside the log).
    assert all(s > 0 for s in bm25_scores(["x"], [["x"], ["x", "y"]]))


def test_expand_query_adds_feedback_terms_and_keeps_query_weights() -> None:
    feedback = [{"hike": 2, "mountain": 1, "alp": 1}, {"hike": 1, "trail": 1}]
    out = expand_query(["hike"], feedback, [4.0, 2.0], n_terms=2, weight=0.5)
    assert out["hike"] == 1.0
    # mountain and alp tie on mass 0.25, trail has 0.5 * 0.5 = 0.25 too: ties by name.
    assert set(out) == {"hike", "alp", "mountain"}
    # The expansion gets weight / (1 - weight) of the query mass: 1.0 here.
    assert sum(v for t, v in out.items() if t != "hike") == pytest.approx(1.0)


def test_expand_query_idf_prefers_rare_terms() -> None:
    feedback = [{"love": 1, "pottery": 1}]
    df = {"love": 90, "pottery": 2}
    out = expand_query(["class"], feedback, [1.0], doc_frequencies=df, n_docs=100, n_terms=1)
    assert set(out) == {"class", "pottery"}
    no_idf = expand_query(["class"], feedback, [1.0], n_terms=2)
    assert no_idf["love"] == no_idf["pottery"]


def test_expand_query_without_feedback_returns_the_query() -> None:
    assert expand_query(["a", "a"], [], []) == {"a": 2.0}
    assert expand_query(["a"], [{"b": 1}], [0.0]) == {"a": 1.0}
    assert expand_query([], [{"b": 1}], [1.0]) == {}
    assert expand_query(["a"], [{"b": 1}], [1.0], weight=0.0) == {"a": 1.0}


def test_expanded_query_scores_documents_sharing_only_feedback_terms() -> None:
    docs = [analyze(t) for t in ("hiking in the alps", "the alps trip photos", "cooking pasta")]
    query = analyze_query("where did she go hiking")
    first = bm25_scores(query, docs)
    assert first[1] == 0.0
    top = [0]
    expanded = expand_query(
        query,
        [term_frequencies(docs[i]) for i in top],
        [first[i] for i in top],
    )
    second = bm25_scores(expanded, docs)
    assert second[1] > 0.0
    assert second[2] == 0.0
    assert math.isclose(max(second), second[0])


def test_c_stemmer_gives_the_pure_python_stems() -> None:
    """With PyStemmer installed, snowballstemmer hands out its C stemmer; stored terms
    must not depend on which one ran, or a store written with one misses under the other."""
    stemmer_module = pytest.importorskip("Stemmer")
    from snowballstemmer.english_stemmer import EnglishStemmer

    words = sorted(
        {
            token
            for text in (*_STEM_SAMPLES, lexical.__doc__ or "", lexical.analyze.__doc__ or "")
            for token in re.findall(r"[^\W\d_]+", text.lower())
        }
    )
    assert len(words) > 100
    pure = EnglishStemmer()
    c_stemmer = stemmer_module.Stemmer("english")
    assert [c_stemmer.stemWord(w) for w in words] == [pure.stemWord(w) for w in words]


_STEM_SAMPLES = (
    "running runner runs ran easily fairly generously happiness hopefulness conditional "
    "relational organization organizations organizing generalizations national nationality "
    "sensational traditional traditionally caresses ponies ties caress cats feed agreed "
    "plastered bled motoring sing conflated troubled sized hopping tanned falling hissing "
    "fizzed failing filing happy sky dying lying tying skis skies news innings outing canning "
    "proceed exceed succeed gently ugly early only singly painting paintings sunrises hiking "
    "Caroline's Melanie's photography adoption counselling counseling LGBTQ transgender "
    "volunteering mentorship camping pottery sculptures violins instruments bookshelves"
)
