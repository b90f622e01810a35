"""Summarisers: the offline extractive one and the LLM one over scripted fake models."""

from __future__ import annotations

import doctest
import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.tiers import LLMSummarizer, OfflineSummarizer, Summary, summarizer
from langmem_tiers.tiers.summarizer import (
    SUMMARY_STYLES,
    format_transcript,
    key_concepts,
    parse_summary_output,
)

from .conftest import ScriptedModelError, TwinOf, fake_model

CONVERSATION = [
    HumanMessage("Hi! I'm Jordan and I lead the RAI Chat project.", name="Jordan"),
    AIMessage("Nice to meet you, Jordan! How can I help with RAI Chat?"),
    HumanMessage("The deadline is March 1, 2026 and we have a budget of $12,000.", name="Jordan"),
    AIMessage("Noted. I will track the March 1, 2026 deadline and the $12,000 budget."),
    HumanMessage(
        "We decided to use PostgreSQL for the archive. I love how fast it is.", name="Jordan"
    ),
    AIMessage("Great choice. PostgreSQL will hold the archive."),
]

# The assistant's "I will track the March 1, 2026 deadline and the $12,000 budget." is
# left out: it confirms what the user just said (an echo), so the user's own words stay.
OFFLINE_TEXT = (
    "Jordan: I'm Jordan and I lead the RAI Chat project. "
    "The deadline is March 1, 2026 and we have a budget of $12,000. "
    "We decided to use PostgreSQL for the archive."
)
OFFLINE_CONCEPTS = [
    "Jordan",
    "RAI Chat",
    "deadline March 1 2026",
    "budget $12,000",
    "PostgreSQL",
    "decision: use PostgreSQL for the archive",
]


async def test_offline_summary_keeps_who_said_what(twin_of: TwinOf) -> None:
    summary = await twin_of(OfflineSummarizer()).summarize(CONVERSATION)
    assert summary == Summary(OFFLINE_TEXT, OFFLINE_CONCEPTS)


def test_offline_sentence_budget_adapts_and_can_be_fixed() -> None:
    assert OfflineSummarizer(max_sentences=1).summarize(CONVERSATION).text == (
        "Jordan: I'm Jordan and I lead the RAI Chat project."
    )
    # two messages: room for two sentences, but the assistant's reply only repeats the user
    assert OfflineSummarizer().summarize(CONVERSATION[:2]).text == (
        "Jordan: I'm Jordan and I lead the RAI Chat project."
    )


def test_offline_drops_near_repeats() -> None:
    messages = [
        HumanMessage("See you at the Lisbon office on Friday."),
        AIMessage("See you at the Lisbon office on Friday!"),
        HumanMessage("Bring the signed contract for Dana."),
    ]
    text = OfflineSummarizer(max_sentences=3).summarize(messages).text
    assert text == (
        "user: See you at the Lisbon office on Friday. Bring the signed contract for Dana."
    )


def test_offline_concepts_limit_and_order() -> None:
    concepts = OfflineSummarizer(max_concepts=3).summarize(CONVERSATION).key_concepts
    assert concepts == OFFLINE_CONCEPTS[:3]
    assert OfflineSummarizer(max_concepts=0).summarize(CONVERSATION).key_concepts == []


def test_key_concepts_rank_repeated_mentions_first() -> None:
    messages = [
        HumanMessage("I met Anna in Porto."),
        HumanMessage("Then Bruno joined us."),
        HumanMessage("Anna showed us around."),
    ]
    assert key_concepts(messages) == ["Anna", "Porto", "Bruno"]


def test_key_concepts_shown_alike_are_one() -> None:
    # The number 3 shows as the quantity "3 wind"; the quoted words "3 wind" are a concept too.
    assert key_concepts([HumanMessage('wind" 3 wind"')]) == ["3 wind"]


async def test_messages_without_text_are_skipped(twin_of: TwinOf) -> None:
    messages = [
        HumanMessage("What's the weather in Oslo?"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}]),
        ToolMessage("Sunny, 21 degrees.", tool_call_id="c1"),
    ]
    summary = await twin_of(OfflineSummarizer()).summarize(messages)
    assert summary.text == "user: What's the weather in Oslo? tool: Sunny, 21 degrees."


@pytest.mark.parametrize(
    ("messages", "match"),
    [([], "at least one message"), ([AIMessage(""), HumanMessage("  ")], "no text")],
)
async def test_nothing_to_summarise_is_refused(
    twin_of: TwinOf, messages: list[HumanMessage], match: str
) -> None:
    with pytest.raises(InvalidContentError, match=match):
        await twin_of(OfflineSummarizer()).summarize(messages)


def test_bad_offline_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_sentences"):
        OfflineSummarizer(max_sentences=0)
    with pytest.raises(ValueError, match="max_concepts"):
        OfflineSummarizer(max_concepts=-1)


# -- the LLM summariser --------------------------------------------------------------

WELL_FORMED = (
    "SUMMARY: Jordan leads RAI Chat, due March 1, 2026, with a $12,000 budget; "
    "the archive will use PostgreSQL.\n"
    "KEY_CONCEPTS: Jordan; RAI Chat; deadline 2026-03-01; budget $12,000; PostgreSQL"
)


async def test_llm_summary_is_parsed_exactly(twin_of: TwinOf) -> None:
    model = fake_model(WELL_FORMED)
    summary = await twin_of(LLMSummarizer(model)).summarize(CONVERSATION)
    assert summary == Summary(
        "Jordan leads RAI Chat, due March 1, 2026, with a $12,000 budget; "
        "the archive will use PostgreSQL.",
        ["Jordan", "RAI Chat", "deadline 2026-03-01", "budget $12,000", "PostgreSQL"],
    )
    system, user = model.prompts[0]
    assert SUMMARY_STYLES["summary"] in str(system.content)
    assert user.content == "Conversation:\n" + format_transcript(CONVERSATION)


async def test_paragraph_style_asks_for_one_paragraph(twin_of: TwinOf) -> None:
    model = fake_model(WELL_FORMED)
    await twin_of(LLMSummarizer(model, style="paragraph")).summarize(CONVERSATION)
    assert SUMMARY_STYLES["paragraph"] in str(model.prompts[0][0].content)


async def test_llm_missing_concepts_come_from_the_messages(
    twin_of: TwinOf, caplog: pytest.LogCaptureFixture
) -> None:
    model = fake_model("SUMMARY: Jordan plans RAI Chat.")
    with caplog.at_level(logging.WARNING, logger=summarizer.__name__):
        summary = await twin_of(LLMSummarizer(model)).summarize(CONVERSATION)
    assert summary == Summary("Jordan plans RAI Chat.", key_concepts(CONVERSATION))
    assert "no KEY_CONCEPTS" in caplog.text


async def test_llm_malformed_output_falls_back_to_offline(
    twin_of: TwinOf, caplog: pytest.LogCaptureFixture
) -> None:
    model = fake_model("Sorry, I can't summarise that.")
    with caplog.at_level(logging.WARNING, logger=summarizer.__name__):
        summary = await twin_of(LLMSummarizer(model)).summarize(CONVERSATION)
    assert summary == OfflineSummarizer().summarize(CONVERSATION)
    assert "no SUMMARY line" in caplog.text


async def test_llm_exception_falls_back_to_offline(
    twin_of: TwinOf, caplog: pytest.LogCaptureFixture
) -> None:
    model = fake_model(ScriptedModelError("quota exceeded"))
    with caplog.at_level(logging.WARNING, logger=summarizer.__name__):
        summary = await twin_of(LLMSummarizer(model)).summarize(CONVERSATION)
    assert summary == OfflineSummarizer().summarize(CONVERSATION)
    assert "ScriptedModelError: quota exceeded" in caplog.text


async def test_llm_refuses_empty_input_before_calling_the_model(twin_of: TwinOf) -> None:
    model = fake_model(WELL_FORMED)
    with pytest.raises(InvalidContentError):
        await twin_of(LLMSummarizer(model)).summarize([])
    assert model.prompts == []


def test_llm_concepts_are_capped() -> None:
    summary = LLMSummarizer(fake_model(WELL_FORMED), max_concepts=2).summarize(CONVERSATION)
    assert summary.key_concepts == ["Jordan", "RAI Chat"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"style": "haiku"}, "style"), ({"user_prompt": "no placeholder"}, "transcript")],
)
def test_bad_llm_settings_are_refused(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LLMSummarizer(fake_model(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("SUMMARY: A.\nKEY_CONCEPTS: x, y, X", ("A.", ["x", "y"])),
        ("**Summary:** Two\nlines.\n**Key concepts:** a; b", ("Two lines.", ["a", "b"])),
        ("summary: only", ("only", None)),
        ("SUMMARY:   \nKEY_CONCEPTS: a", None),
        ("nothing useful", None),
    ],
)
def test_summary_output_parser(output: str, expected: tuple[str, list[str] | None] | None) -> None:
    assert parse_summary_output(output) == expected


def test_module_doctests() -> None:
    result = doctest.testmod(summarizer)
    assert result.attempted > 0
    assert result.failed == 0
