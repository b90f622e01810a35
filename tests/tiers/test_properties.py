"""Properties that hold for any text: tiers never outgrow the message, markers never leak."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langmem_tiers.tiers import (
    OfflineSummarizer,
    OfflineTierer,
    count_tokens,
    has_markers,
    parse_markers,
    strip_markers,
)

# Chat-like text: words, names, numbers, dates, punctuation, quotes, markers, odd unicode.
_PIECES = st.sampled_from(
    [
        "I", "I'm", "my", "name", "is", "Jordan", "Dr.", "J.K.", "Lee", "love", "hate", "we",
        "decided", "to", "will", "the", "deadline", "March", "1,", "2026", "$12,500", "85%",
        "3", "kids", "in", "Lisbon", "New", "York", "last", "week", "at", "4pm", "\"The",
        "Wind\"", "and", "but", ",", ".", "!", "?", "\n", "-", "Wow", "Thanks", "9-5", "2D",
        "[REQUEST_TIER:3:m1]", "[SEARCH_EPISODIC:", "]", "[", "é", "日本", "😀", "  ",
    ]
)  # fmt: skip
chat_text = st.lists(_PIECES, min_size=1, max_size=60).map(" ".join)
any_text = st.one_of(chat_text, st.text(min_size=1, max_size=300))

_TIERER = OfflineTierer()


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_tiers_never_cost_more_than_the_message(text: str) -> None:
    if not text.strip():
        return
    for message in (HumanMessage(text), AIMessage(text)):
        tiers = _TIERER.tier([message])[0]
        raw = count_tokens(" ".join(text.split()))
        assert 0 < count_tokens(tiers.tier1) <= raw
        assert 0 < count_tokens(tiers.tier2) <= raw


@settings(max_examples=100, deadline=None)
@given(st.lists(any_text, min_size=1, max_size=8))
def test_summaries_always_have_text(texts: list[str]) -> None:
    messages = [HumanMessage(t) for t in texts if t.strip()]
    if not messages:
        return
    summary = OfflineSummarizer().summarize(messages)
    assert summary.text
    assert len({c.lower() for c in summary.key_concepts}) == len(summary.key_concepts)


@settings(max_examples=300, deadline=None)
@given(any_text)
def test_parsed_answers_never_show_markers(text: str) -> None:
    answer = parse_markers(text)
    assert not has_markers(answer.text)
    assert answer.text == strip_markers(text)
    assert all(1 <= request.level <= 3 for request in answer.tier_requests)
