"""The offline chat model: deterministic, extractive, asks for tiers and searches by its rules."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolCall, ToolMessage

from langmem_tiers.errors import ConfigurationError
from langmem_tiers.graph import (
    REQUEST_TIER_TOOL,
    SEARCH_EPISODIC_TOOL,
    OfflineChatModel,
    resolve_chat_model,
)
from langmem_tiers.graph.offline_model import OFFLINE_UNKNOWN
from langmem_tiers.graph.prompts import CHAT_SYSTEM_PROMPT, render_system_prompt

TIERED = HumanMessage("[m1|t1] user_name=Jordan, deadline=March 1 2026, entity=RAI Chat")
RAW = HumanMessage("[m1|t3] Hi, I am Jordan. The deadline for RAI Chat is March 1, 2026.")
QUESTION = HumanMessage("When is the RAI Chat deadline?")


def test_a_statement_is_acknowledged_with_its_facts() -> None:
    reply = OfflineChatModel().invoke([HumanMessage("My favorite color is green.")])
    assert reply.content == "Noted: favorite_color=green."
    assert OfflineChatModel().invoke([HumanMessage("ok")]).content == "Noted."


def test_raw_evidence_is_quoted() -> None:
    reply = OfflineChatModel().invoke([RAW, QUESTION])
    assert reply.content == "The deadline for RAI Chat is March 1, 2026."


def test_tier_one_evidence_asks_for_the_raw_message() -> None:
    reply = OfflineChatModel().invoke([TIERED, HumanMessage("[m2|t3] I like tea."), QUESTION])
    assert (
        reply.content
        == "user_name=Jordan, deadline=March 1 2026, entity=RAI Chat [REQUEST_TIER:3:m1]"
    )


def test_a_newer_tiered_message_is_asked_for_before_older_memory_is_quoted() -> None:
    memory = SystemMessage(
        "What you know about the user from earlier conversations:\n"
        "- The launch date is April 20, 2026."
    )
    moved = HumanMessage("[m7|t1] launch=April 20, date=May 4 2026")
    question = HumanMessage("When is the launch now?")
    reply = OfflineChatModel().invoke([memory, moved, question])
    assert str(reply.content).endswith("[REQUEST_TIER:3:m7]")
    # Shown in full, the conversation's own words answer a question about the latest state.
    raw = HumanMessage("[m7|t3] The launch moves from April 20 to May 4, 2026.")
    assert OfflineChatModel().invoke([memory, raw, question]).content == (
        "The launch moves from April 20 to May 4, 2026."
    )
    # Without "now" too, one time answers "when": the newest piece that names one.
    newest = OfflineChatModel().invoke([memory, raw, HumanMessage("When is the launch?")])
    assert newest.content == "The launch moves from April 20 to May 4, 2026."
    # A date in a clause about something else does not answer when the launch is.
    other = HumanMessage("[m8|t3] The launch moves because the audit is on April 8.")
    assert OfflineChatModel().invoke(
        [memory, raw, other, HumanMessage("When is the launch?")]
    ).content == ("The launch moves from April 20 to May 4, 2026.")


def test_a_refused_request_is_not_repeated() -> None:
    system = SystemMessage(
        render_system_prompt(
            CHAT_SYSTEM_PROMPT,
            notices=["Your request for message m1 was refused: it was archived."],
        )
    )
    reply = OfflineChatModel().invoke([system, TIERED, QUESTION])
    assert reply.content == "user_name=Jordan, deadline=March 1 2026, entity=RAI Chat"


def test_nothing_relevant_searches_then_gives_up() -> None:
    model = OfflineChatModel()
    question = HumanMessage("Where did I park the car?")
    assert model.invoke([RAW, question]).content == "[SEARCH_EPISODIC: Where did I park the car?]"
    searched = SystemMessage(
        render_system_prompt(CHAT_SYSTEM_PROMPT, notices=["Your search for 'car' found nothing."])
    )
    assert model.invoke([searched, RAW, question]).content == OFFLINE_UNKNOWN


def test_memory_and_search_lines_are_evidence_but_instructions_are_not() -> None:
    system = SystemMessage(
        render_system_prompt(
            CHAT_SYSTEM_PROMPT,
            user_context=["The user prefers tea."],
            search_results=["- [old/m3] user: We parked on level 2 of the garage."],
        )
    )
    model = OfflineChatModel()
    assert (
        model.invoke([system, HumanMessage("Do I prefer tea?")]).content == "The user prefers tea."
    )
    parked = model.invoke([system, HumanMessage("Where is the car parked?")]).content
    assert parked == "[old/m3] user: We parked on level 2 of the garage."
    # "tier" and "message" appear in the instructions only: nothing to quote.
    assert (
        model.invoke([system, HumanMessage("Which tier is a message?")]).content == OFFLINE_UNKNOWN
    )


def test_its_own_answers_are_not_evidence() -> None:
    reply = OfflineChatModel().invoke(
        [AIMessage("[m2|t3] The deadline is in April."), HumanMessage("When is the deadline?")]
    )
    assert reply.content == "[SEARCH_EPISODIC: When is the deadline?]"


def test_with_tools_bound_it_calls_them() -> None:
    model = OfflineChatModel().bind_tools([REQUEST_TIER_TOOL, SEARCH_EPISODIC_TOOL])
    asked = model.invoke([TIERED, QUESTION])
    assert isinstance(asked, AIMessage)
    assert asked.tool_calls == [
        ToolCall(
            name="request_tier",
            args={"message_id": "m1", "level": 3},
            id="call_tier_m1",
            type="tool_call",
        )
    ]
    # Once asked (the call is in the turn), it answers from what it has.
    answered = model.invoke(
        [
            TIERED,
            QUESTION,
            asked,
            ToolMessage("refused", tool_call_id="call_tier_m1", name="request_tier"),
        ]
    )
    assert answered.content == "user_name=Jordan, deadline=March 1 2026, entity=RAI Chat"
    search = model.invoke([HumanMessage("Where did I park?")])
    assert isinstance(search, AIMessage)
    assert search.tool_calls[0]["name"] == "search_episodic"
    assert search.tool_calls[0]["args"] == {"query": "Where did I park?"}
    found = model.invoke(
        [
            HumanMessage("Where did I park?"),
            search,
            ToolMessage(
                "- [s0/m9] user: I parked on level 2.",
                tool_call_id=str(search.tool_calls[0]["id"]),
                name="search_episodic",
            ),
        ]
    )
    assert found.content == "[s0/m9] user: I parked on level 2."


async def test_deterministic_and_async() -> None:
    model = OfflineChatModel()
    messages = [TIERED, HumanMessage("[m2|t3] I like tea."), QUESTION]
    replies = {model.invoke(messages).content for _ in range(3)}
    replies.add((await model.ainvoke(messages)).content)
    assert len(replies) == 1


def test_resolve_chat_model() -> None:
    own = OfflineChatModel(max_pieces=1)
    assert resolve_chat_model(own) is own
    assert isinstance(resolve_chat_model(None), OfflineChatModel)
    with pytest.raises(ConfigurationError, match="could not be created"):
        resolve_chat_model("no-such-provider:some-model")
    with pytest.raises(ConfigurationError, match="provider string"):
        resolve_chat_model(42)  # type: ignore[arg-type]
