"""Token counting: the default approximation, custom counters, message lists."""

from __future__ import annotations

import doctest

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from langmem_tiers.tiers import count_message_tokens, count_tokens, tokens


def test_default_counts_four_characters_per_token_rounded_up() -> None:
    assert count_tokens("") == 0
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2
    assert count_tokens("x" * 400) == 100


def test_custom_counter_replaces_the_default() -> None:
    assert count_tokens("one two three", counter=lambda text: len(text.split())) == 3


def test_message_count_defaults_to_langchain_approximation() -> None:
    messages = [HumanMessage("Where is the meeting?"), AIMessage("In room 4, at noon.")]
    assert count_message_tokens(messages) == count_tokens_approximately(messages)


def test_message_count_with_custom_counter_adds_role_and_overhead() -> None:
    messages = [HumanMessage("abcdefgh"), AIMessage("xy")]
    # text + role ("human", "ai") + 3 per message
    assert count_message_tokens(messages, counter=len) == (8 + 5 + 3) + (2 + 2 + 3)


def test_text_and_message_counts_agree_on_content() -> None:
    text = "The deadline for the report is the first of March."
    one = count_message_tokens([HumanMessage(text)])
    empty = count_message_tokens([HumanMessage("")])
    assert abs((one - empty) - count_tokens(text)) <= 1


def test_module_doctests() -> None:
    result = doctest.testmod(tokens)
    assert result.attempted > 0
    assert result.failed == 0
