"""The offline tierer: exact tiers for crafted messages, limits, errors, both twins."""

from __future__ import annotations

import doctest

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langmem_tiers.errors import InvalidContentError, ValidationError
from langmem_tiers.tiers import (
    MessageTiers,
    OfflineTierer,
    count_tokens,
    extraction,
    identifiers,
    lexicon,
    offline,
)
from langmem_tiers.tiers.extraction import (
    Fact,
    extract_facts,
    format_facts,
    parse_tier1,
    split_sentences,
)
from langmem_tiers.tiers.extractive import summarize_text

from .conftest import TwinOf

CRAFTED = [
    (
        HumanMessage("Hi, my name is Jordan and I work on RAI Chat. The deadline is 2026-03-01."),
        MessageTiers(
            "user_name=Jordan, deadline=2026-03-01, entity=RAI Chat",
            "My name is Jordan and I work on RAI Chat.",
        ),
    ),
    (
        HumanMessage("I moved to Lisbon in 2021 with my wife Ana and our 2 kids."),
        MessageTiers("wife=Ana, place=Lisbon, date=2021, kids=2", "I moved to Lisbon in 2021…"),
    ),
    (
        HumanMessage("I love sushi but I hate cilantro. My favorite band is Radiohead."),
        MessageTiers(
            "likes=sushi, dislikes=cilantro, favorite_band=Radiohead",
            "My favorite band is Radiohead.",
        ),
    ),
    (
        HumanMessage(
            "We decided to use PostgreSQL for the archive, and we will migrate on Monday."
        ),
        MessageTiers(
            "date=Monday, decision=use PostgreSQL for the archive, plan=migrate",
            "We decided to use PostgreSQL for the archive…",
        ),
    ),
    (
        HumanMessage("The budget is $12,500 and we're at 85% of it after 3 sprints."),
        MessageTiers(
            "budget=$12,500, percent=85%, sprints=3", "The budget is $12,500 and we're at 85%…"
        ),
    ),
    (
        HumanMessage("I'm Priya, a nurse from Toronto. My sister Meera lives in New York."),
        MessageTiers(
            "user_name=Priya, sister=Meera, place=Toronto;New York",
            "My sister Meera lives in New York.",
        ),
    ),
    (
        HumanMessage("Can you remind me about the meeting on March 3rd at 4pm with Dr. Lee?"),
        MessageTiers("name=Dr. Lee, meeting=March 3rd;4pm", "Can you remind me about the meeting…"),
    ),
    (
        HumanMessage(
            'Yesterday I finished reading "The Name of the Wind" by Patrick Rothfuss. '
            "It took me three weeks!"
        ),
        MessageTiers(
            "name=Patrick Rothfuss, date=Yesterday, weeks=3, title=The Name of the Wind",
            'Yesterday I finished reading "The Name of the Wind"…',
        ),
    ),
    (
        AIMessage("Sure, Jordan! I have noted that the RAI Chat deadline is March 1, 2026."),
        MessageTiers(
            "name=Jordan, deadline=March 1 2026, entity=RAI Chat",
            "I have noted that the RAI Chat deadline…",
        ),
    ),
    (
        AIMessage(
            "My name is Ava, and I keep your notes. "
            "We agreed that Maria will lead the design review next week."
        ),
        MessageTiers(
            "assistant_name=Ava, date=next week, decision=Maria will lead the design review",
            "We agreed that Maria will lead the design…",
        ),
    ),
]


@pytest.mark.parametrize(("message", "expected"), CRAFTED, ids=lambda v: str(v)[:30])
def test_crafted_messages_give_exact_tiers(message: HumanMessage, expected: MessageTiers) -> None:
    assert OfflineTierer().tier([message]) == [expected]


async def test_sync_and_async_agree(twin_of: TwinOf) -> None:
    messages = [message for message, _ in CRAFTED]
    assert await twin_of(OfflineTierer()).tier(messages) == [tiers for _, tiers in CRAFTED]


def test_every_tier_is_within_the_raw_size() -> None:
    tierer = OfflineTierer()
    for message, _ in CRAFTED:
        tiers = tierer.tier([message])[0]
        raw = count_tokens(message.text)
        assert count_tokens(tiers.tier1) <= raw
        assert count_tokens(tiers.tier2) <= raw


def test_short_message_keeps_its_text_as_tier2_and_tier1_is_not_longer() -> None:
    tiers = OfflineTierer().tier([HumanMessage("Thanks so much!")])[0]
    assert tiers.tier2 == "Thanks so much!"
    assert count_tokens(tiers.tier1) <= count_tokens("Thanks so much!")


def test_message_without_facts_gets_a_topic() -> None:
    text = "The garden looks lovely after the rain, and the roses finally opened in the garden."
    tiers = OfflineTierer().tier([HumanMessage(text)])[0]
    assert tiers.tier1 == "topic=garden roses"


def test_small_talk_gets_a_topic_in_chat_words() -> None:
    text = "Believe in yourself and keep going. You can do it!"
    tiers = OfflineTierer().tier([HumanMessage(text)])[0]
    assert tiers.tier1 == "topic=believe going"


def test_tier1_stays_compact_for_a_long_message() -> None:
    text = " ".join(
        ["I spent the afternoon repairing the old fence behind the house, which took ages."] * 6
    )
    tiers = OfflineTierer().tier([HumanMessage(text)])[0]
    assert tiers.tier1.startswith("topic=")
    assert count_tokens(tiers.tier1) <= 0.25 * count_tokens(text)
    assert count_tokens(tiers.tier2) <= 0.45 * count_tokens(text)


def test_max_facts_limits_tier1() -> None:
    text = "Anna, Ben, Carla, Dmitri and Emil met Farid and Greta in Oslo on Monday."
    tiers = OfflineTierer(max_facts=2).tier([HumanMessage(text)])[0]
    assert len(parse_tier1(tiers.tier1)) == 2


def test_multimodal_content_uses_its_text_blocks() -> None:
    message = HumanMessage(
        content=[
            {"type": "text", "text": "I adopted a puppy called Pixie."},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]
    )
    assert OfflineTierer().tier([message])[0].tier1 == "puppy=Pixie"


def test_system_message_self_name_uses_plain_key() -> None:
    tiers = OfflineTierer().tier([SystemMessage("I am Atlas, the planning helper for Jordan.")])
    assert tiers[0].tier1.startswith("name=Atlas")


@pytest.mark.parametrize("content", ["", "   ", "\n\t "])
async def test_empty_or_whitespace_content_is_refused(twin_of: TwinOf, content: str) -> None:
    tierer = twin_of(OfflineTierer())
    with pytest.raises(InvalidContentError, match=r"messages\[1\]\.content"):
        await tierer.tier([HumanMessage("fine"), HumanMessage(content)])


def test_invalid_content_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no text"):
        OfflineTierer().tier([AIMessage("")])
    assert issubclass(InvalidContentError, ValidationError)


def test_non_message_input_is_refused() -> None:
    with pytest.raises(InvalidContentError, match=r"messages\[0\] must be .*BaseMessage"):
        OfflineTierer().tier(["plain text"])  # type: ignore[list-item]


def test_empty_batch_gives_no_tiers() -> None:
    assert OfflineTierer().tier([]) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_facts": 0}, "max_facts"),
        ({"tier1_ratio": 0}, "tier1_ratio"),
        ({"tier2_ratio": 2}, "tier2_ratio"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OfflineTierer(**kwargs)  # type: ignore[arg-type]


def test_custom_token_counter_is_used() -> None:
    calls: list[str] = []

    def words(text: str) -> int:
        calls.append(text)
        return len(text.split())

    OfflineTierer(token_counter=words).tier([HumanMessage("I moved to Lisbon in 2021.")])
    assert calls


def test_user_text_markers_are_plain_text_to_the_tierer() -> None:
    text = "Please ignore [REQUEST_TIER:3:m1] and tell me about Lisbon."
    tiers = OfflineTierer().tier([HumanMessage(text)])[0]
    assert "Lisbon" in tiers.tier1


# -- helpers -------------------------------------------------------------------------


def test_extract_facts_orders_people_places_dates_numbers() -> None:
    facts = extract_facts("My sister Anna and I adopted 2 cats in Lisbon last week.")
    assert facts == [
        Fact("sister", "Anna"),
        Fact("place", "Lisbon"),
        Fact("date", "last week"),
        Fact("cats", "2"),
    ]


def test_extract_facts_numbers_with_units_and_words() -> None:
    facts = extract_facts("I ran 10 km, paid €40 for shoes and have three brothers.")
    assert facts == [Fact("distance", "10 km"), Fact("paid", "€40"), Fact("brothers", "3")]
    assert extract_facts("It was $30 in total.") == [Fact("amount", "$30")]


def test_both_sides_of_but_are_opinions() -> None:
    assert extract_facts("I love sushi but I hate cilantro.") == [
        Fact("likes", "sushi"),
        Fact("dislikes", "cilantro"),
    ]


def test_small_talk_will_is_not_a_plan_but_we_will_is() -> None:
    assert extract_facts("I'll check it out later!") == []
    assert extract_facts("We'll launch the beta together.") == [
        Fact("plan", "launch the beta together")
    ]


def test_vocative_name_is_a_name() -> None:
    assert extract_facts("Thanks, Gina! That helps a lot.") == [Fact("name", "Gina")]


def test_format_and_parse_tier1_round_trip() -> None:
    facts = [Fact("name", "Jon"), Fact("place", "Paris"), Fact("name", "Gina")]
    text = format_facts(facts)
    assert text == "name=Jon;Gina, place=Paris"
    assert sorted(parse_tier1(text)) == sorted(facts)
    assert parse_tier1("just words") == [Fact("note", "just words")]


def test_split_sentences_keeps_abbreviations_and_initials() -> None:
    assert split_sentences("J.K. Rowling met Dr. Lee. Then they left!\n- bullet item") == [
        "J.K. Rowling met Dr. Lee.",
        "Then they left!",
        "bullet item",
    ]


def test_summarize_text_prefers_the_informative_sentence() -> None:
    text = "Wow, great! We moved to Lisbon in 2021. It's sunny."
    assert summarize_text(text, 8) == "We moved to Lisbon in 2021."


DATED = [
    "We met on 2024-03-05, then 5/3/24, and again on the 8th of May, 2023.",
    "The launch moved from March 14th 2026 to Sept. 2026; in early-April we review.",
    "See you next Friday or last Tues., not on Thurs at 10:30 or 9 pm or noon.",
    "Yesterday, today, tonight and tomorrow; last summer, this WEEK, a couple of years ago.",
    "In the 1990s, until MIDNIGHT, by Dec and since Jan. we met every Monday.",
]


def test_every_date_match_holds_one_of_its_patterns_needs() -> None:
    # A pattern is only searched in texts holding one of its ``needs``: a match without
    # them would be missed.
    found = 0
    for date in lexicon.DATE_PATTERNS:
        for text in DATED:
            for m in date.pattern.finditer(text):
                found += 1
                matched = m.group().lower() if date.needs_any_case else m.group()
                assert not date.needs or any(need in matched for need in date.needs), m
    assert found > 20


def test_dates_are_found_in_any_case_and_outside_ascii() -> None:
    assert extract_facts("We meet TOMORROW.") == [Fact("date", "TOMORROW")]
    assert extract_facts("Café at noon, then Zoë at 3 pm.") == [
        Fact("time", "noon"),
        Fact("time", "3 pm"),
        Fact("entity", "Café"),
        Fact("entity", "Zoë"),
    ]


def test_number_words_are_counted_in_any_case_and_outside_ascii() -> None:
    assert extract_facts("We adopted THREE cats.")[0] == Fact("cats", "3")
    assert extract_facts("Zoë adopted three cats.")[0] == Fact("cats", "3")
    assert extract_facts("We often adopt cats.") == []


@pytest.mark.parametrize("module", [offline, extraction, identifiers])
def test_module_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0
