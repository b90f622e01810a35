"""The marker language: parsing, tolerance, refusals, tidying, formatting."""

from __future__ import annotations

import doctest
import logging

import pytest

from langmem_tiers.errors import InvalidTierError
from langmem_tiers.tiers import TierLevel, markers
from langmem_tiers.tiers.markers import (
    MAX_MARKERS,
    ParsedAnswer,
    TierRequest,
    episodic_search_marker,
    has_markers,
    parse_markers,
    strip_markers,
    tier_request_marker,
)


def test_both_markers_are_parsed_and_removed() -> None:
    answer = parse_markers(
        "I need more context. [REQUEST_TIER:3:m12] [SEARCH_EPISODIC: what did we decide]"
    )
    assert answer == ParsedAnswer(
        "I need more context.",
        [TierRequest(TierLevel.RAW, "m12")],
        ["what did we decide"],
    )
    assert answer.has_requests


def test_plain_answer_has_no_requests() -> None:
    answer = parse_markers("The deadline is March 1.")
    assert answer == ParsedAnswer("The deadline is March 1.", [], [])
    assert not answer.has_requests


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        ("[request_tier: 3 : m12]", TierRequest(TierLevel.RAW, "m12")),
        ("[ REQUEST_TIER:2:M7 ]", TierRequest(TierLevel.SUMMARY, "m7")),
        ("[Request Tier:1:m3]", TierRequest(TierLevel.FACTS, "m3")),
        ("[REQUEST-TIER:t2:m4]", TierRequest(TierLevel.SUMMARY, "m4")),
        ("[REQUEST_TIER:raw:m5]", TierRequest(TierLevel.RAW, "m5")),
        ("[REQUEST_TIER:3:msg-2024.01_a]", TierRequest(TierLevel.RAW, "msg-2024.01_a")),
    ],
)
def test_spacing_case_and_level_variants_are_tolerated(marker: str, expected: TierRequest) -> None:
    assert parse_markers(f"x {marker} y").tier_requests == [expected]


@pytest.mark.parametrize(
    "marker",
    ["[REQUEST_TIER:0:m1]", "[REQUEST_TIER:4:m1]", "[REQUEST_TIER:-1:m1]", "[REQUEST_TIER:x:m1]"],
)
def test_invalid_levels_are_logged_ignored_and_removed(
    marker: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=markers.__name__):
        answer = parse_markers(f"Here. {marker}")
    assert answer == ParsedAnswer("Here.", [], [])
    assert "tier level must be 1" in caplog.text


@pytest.mark.parametrize(
    "marker", ["[REQUEST_TIER:3:]", "[REQUEST_TIER:3:m 1]", "[REQUEST_TIER:3:*]"]
)
def test_invalid_ids_are_ignored(marker: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=markers.__name__):
        assert parse_markers(marker) == ParsedAnswer("", [], [])
    assert "not an id" in caplog.text


def test_malformed_marker_is_removed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=markers.__name__):
        answer = parse_markers("Okay [REQUEST_TIER:3] then.")
    assert answer == ParsedAnswer("Okay then.", [], [])
    assert "malformed" in caplog.text


def test_empty_query_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=markers.__name__):
        assert parse_markers("A [SEARCH_EPISODIC:   ] B") == ParsedAnswer("A B", [], [])
    assert "empty" in caplog.text


def test_long_query_is_cut_at_a_word_boundary() -> None:
    query = "word " * 200
    answer = parse_markers(f"[SEARCH_EPISODIC: {query}]", max_query_chars=23)
    assert answer.episodic_searches == ["word word word word"]


def test_duplicates_are_kept_once_in_order() -> None:
    answer = parse_markers(
        "[REQUEST_TIER:3:m2] [REQUEST_TIER:3:M2] [REQUEST_TIER:2:m2] "
        "[SEARCH_EPISODIC: venue] [search_episodic:venue]"
    )
    assert answer.tier_requests == [
        TierRequest(TierLevel.RAW, "m2"),
        TierRequest(TierLevel.SUMMARY, "m2"),
    ]
    assert answer.episodic_searches == ["venue"]


def test_number_of_requests_is_capped(caplog: pytest.LogCaptureFixture) -> None:
    text = " ".join(f"[REQUEST_TIER:3:m{i}]" for i in range(MAX_MARKERS + 5))
    with caplog.at_level(logging.WARNING, logger=markers.__name__):
        answer = parse_markers(text)
    assert len(answer.tier_requests) == MAX_MARKERS
    assert answer.text == ""
    assert "more than" in caplog.text


def test_truncated_markers_at_the_end_still_count() -> None:
    assert parse_markers("Checking [REQUEST_TIER:3:m9").tier_requests == [
        TierRequest(TierLevel.RAW, "m9")
    ]
    answer = parse_markers("Checking\n[SEARCH_EPISODIC: the budget")
    assert answer == ParsedAnswer("Checking", [], ["the budget"])


def test_unclosed_tier_marker_inside_prose_does_not_eat_the_sentence() -> None:
    text = "See [REQUEST_TIER:3:m1 for details, as I said."
    assert parse_markers(text) == ParsedAnswer(text, [], [])


def test_whitespace_is_tidied_only_where_markers_were() -> None:
    text = (
        "Line one  keeps  its spaces.\n\n[REQUEST_TIER:3:m1]\n"
        "    indented code\nEnd [SEARCH_EPISODIC: x] ."
    )
    assert parse_markers(text).text == "Line one  keeps  its spaces.\n\n    indented code\nEnd."


def test_strip_markers_removes_valid_and_invalid_markers() -> None:
    assert strip_markers("A [REQUEST_TIER:3:m1] B [REQUEST_TIER:7:m1] C [SEARCH_EPISODIC: q]") == (
        "A B C"
    )


def test_has_markers() -> None:
    assert has_markers("see [search_episodic: trip]")
    assert not has_markers("[REQUEST] and [TIER:3] are not markers")


def test_marker_builders_round_trip() -> None:
    text = f"{tier_request_marker(2, 'm4')} {episodic_search_marker(' the [old] plan ')}"
    assert text == "[REQUEST_TIER:2:m4] [SEARCH_EPISODIC: the (old) plan]"
    assert parse_markers(text) == ParsedAnswer(
        "", [TierRequest(TierLevel.SUMMARY, "m4")], ["the (old) plan"]
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tier_request_marker(4, "m1"), "tier level"),
        (lambda: tier_request_marker(3, "bad id"), "message_id"),
        (lambda: episodic_search_marker("   "), "query"),
    ],
)
def test_marker_builders_refuse_bad_input(call: object, match: str) -> None:
    with pytest.raises(InvalidTierError, match=match):
        call()  # type: ignore[operator]


def test_bad_query_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_query_chars"):
        parse_markers("x", max_query_chars=0)


def test_module_doctests() -> None:
    result = doctest.testmod(markers)
    assert result.attempted > 0
    assert result.failed == 0
