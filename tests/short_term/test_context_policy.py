"""The context policy: raw while the view fits, the oldest lowered first, never dearer than raw.

The ``budget`` policy is the default; the seed's ``eager`` view is a setting. Whatever the
policy, the view's system part explains tiered lines exactly when it shows some.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.context import (
    TIER_NOTE,
    ContextBuilder,
    is_tiered_line,
    memory_text,
)
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.log import InMemoryMessageLog
from langmem_tiers.short_term.presets import build_memory
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers.tokens import count_message_tokens

from .fakes import ScriptedTierer, make_store


def record(number: int, required: int = 1) -> MessageRecord:
    """A long message whose tier 2 and tier 1 are each much cheaper than the one before."""
    role = "human" if number % 2 else "ai"
    text = f"Message {number} " + "talks about the launch plan in great detail " * 6
    return MessageRecord(
        f"m{number}",
        number,
        role,
        text.strip(),
        f"topic=launch_{number}",
        f"Message {number} is about the launch plan.",
        required_tier_level=required,
    )


def tiers_of(view: list[BaseMessage]) -> tuple[int, ...]:
    return tuple(m.response_metadata["langmem_tiers"]["tier"] for m in view if m.type != "system")


def raw_tokens(records: list[MessageRecord]) -> int:
    return count_message_tokens([r.to_message() for r in records])


def sweep(records: list[MessageRecord], **kwargs: Any) -> list[list[BaseMessage]]:
    """The view at every soft budget from the raw cost down to 1 token."""
    top = raw_tokens(records)
    return [
        ContextBuilder(soft_budget=soft, **kwargs).build(records, []) for soft in range(top, 0, -1)
    ]


def test_a_short_session_is_shown_exactly_as_it_was_added() -> None:
    records = [record(i) for i in range(1, 7)]
    view = ContextBuilder().build(records, [])  # a 30,000-token budget
    assert [m.content for m in view] == [r.content for r in records]
    assert [m.id for m in view] == [r.id for r in records]
    assert not any(is_tiered_line(m) for m in view)
    assert count_message_tokens(view) == raw_tokens(records)


def states(views: list[list[BaseMessage]]) -> list[tuple[int, ...]]:
    seen: list[tuple[int, ...]] = []
    for view in views:
        if not seen or seen[-1] != tiers_of(view):
            seen.append(tiers_of(view))
    return seen


def test_the_oldest_is_lowered_first_raw_then_tier2_then_tier1() -> None:
    records = [record(i) for i in range(1, 7)]
    # Without the note's cost every step shows: m1 to t2, m1 to t1, then m2, and so on;
    # the two newest stay raw.
    order = [
        (3, 3, 3, 3, 3, 3),
        (2, 3, 3, 3, 3, 3),
        (1, 3, 3, 3, 3, 3),
        (1, 2, 3, 3, 3, 3),
        (1, 1, 3, 3, 3, 3),
        (1, 1, 2, 3, 3, 3),
        (1, 1, 1, 3, 3, 3),
        (1, 1, 1, 2, 3, 3),
        (1, 1, 1, 1, 3, 3),
    ]
    assert states(sweep(records, tier_note=None)) == order
    # With it, a tiered view must first save more than the note costs: the same order,
    # with the first small steps taken together.
    noted = states(sweep(records))
    assert noted[0] == order[0]
    assert noted[-1] == order[-1]
    assert [order.index(s) for s in noted] == sorted(order.index(s) for s in noted)


def test_the_view_never_costs_more_than_the_raw_messages() -> None:
    long = [record(i) for i in range(1, 9)]
    # Short messages whose labelled tiers cost as much as the text itself.
    short = [
        MessageRecord(f"m{i}", i, "human", f"ok {i}", f"a={i}", f"ok {i}") for i in range(1, 9)
    ]
    for records in (long, short):
        raw = raw_tokens(records)
        for view in sweep(records):
            assert count_message_tokens(view) <= raw
    # Lowering the short ones saves nothing, so they stay raw and nothing is explained.
    for view in sweep(short):
        assert [m.content for m in view] == [r.content for r in short]


def test_the_soft_budget_is_met_when_lowering_can_meet_it() -> None:
    records = [record(i) for i in range(1, 9)]
    floor = ContextBuilder(policy="eager").build(records, [])
    for view, soft in zip(sweep(records), range(raw_tokens(records), 0, -1), strict=True):
        if soft >= count_message_tokens(floor):
            assert count_message_tokens(view) <= soft


def test_tier_upgrades_the_model_asked_for_are_kept() -> None:
    records = [record(1, required=3), record(2, required=2), *(record(i) for i in range(3, 7))]
    view = ContextBuilder(soft_budget=1).build(records, [])
    assert tiers_of(view) == (3, 2, 1, 1, 3, 3)
    assert view[1].content == records[0].content  # raw, unlabelled, as asked
    assert view[2].content == f"[m2|t2] {records[1].tier2}"


def test_the_note_is_there_exactly_when_tiered_lines_are_shown() -> None:
    records = [record(i) for i in range(1, 7)]
    for view in sweep(records):
        tiered = any(is_tiered_line(m) for m in view)
        explained = view[0].type == "system" and view[0].text.startswith(TIER_NOTE)
        assert tiered == explained
        if tiered:  # tiered lines are labelled with their id and tier; raw ones are not
            assert all(m.text.startswith(f"[{m.id}|t") == is_tiered_line(m) for m in view[1:])


def test_the_note_comes_before_the_memories_and_graphs_can_leave_it_out() -> None:
    now = datetime.now(timezone.utc)
    summary = Item(
        value={"content": "Earlier: the team chose Lisbon.", "source_message_ids": ["m0"]},
        key="sum-1",
        namespace=("s", "semantic"),
        created_at=now,
        updated_at=now,
    )
    records = [record(i) for i in range(1, 7)]
    short = ContextBuilder().build(records, [summary])
    assert short[0].type == "system"
    assert TIER_NOTE not in short[0].text
    lowered = ContextBuilder(soft_budget=1).build(records, [summary])
    assert lowered[0].text.startswith(TIER_NOTE)
    assert memory_text(lowered[0]) == memory_text(short[0]) == short[0].text
    assert "- [m0] Earlier: the team chose Lisbon." in memory_text(lowered[0])


def test_the_eager_view_shows_every_older_message_at_its_tier() -> None:
    records = [record(i) for i in range(1, 7)]
    view = ContextBuilder(policy="eager").build(records, [])
    assert view[0].text == TIER_NOTE
    assert tiers_of(view) == (1, 1, 1, 1, 3, 3)
    assert view[-1].content == f"[m6|t3] {records[-1].content}"  # every message labelled
    with pytest.raises(ConfigurationError, match="policy must be one of budget, eager"):
        ContextBuilder(policy="lazy")  # type: ignore[arg-type]


PLEASE = "Please book a room for the whole team on Friday."
SIX = [
    HumanMessage("Hi, I am Jordan and I run the RAI Chat project."),
    AIMessage("Hello Jordan, how can I help?"),
    HumanMessage(PLEASE),
    AIMessage("I will book it."),
    HumanMessage("Thanks, and remind me on Thursday."),
    AIMessage("Sure."),
]


@pytest.mark.parametrize(
    ("environ", "third"),
    [
        ({}, PLEASE),
        ({"LANGMEM_TIERS_CONTEXT_POLICY": "eager"}, "[m3|t1] date=Friday, entity=Please"),
    ],
)
def test_the_product_default_is_the_budget_policy_and_eager_a_setting(
    environ: dict[str, str], third: str
) -> None:
    settings = Settings.from_env(environ=environ)
    stm = build_memory("six", store=InMemoryStore(), settings=settings, log=InMemoryMessageLog())
    stm.add_messages(SIX)
    view = [m for m in stm.context() if m.type != "system"]
    assert view[2].content == third


def test_the_history_explains_tiers_only_when_it_shows_them() -> None:
    history = TieredChatMessageHistory(
        "h1",
        store=make_store(),
        log=InMemoryMessageLog(),
        settings=Settings(context_soft_budget=150),
        tierer=ScriptedTierer(),
    )
    history.add_messages([HumanMessage("Short hello."), AIMessage("Hi.")])
    assert [m.type for m in history.messages] == ["human", "ai"]  # raw: nothing to explain
    for i in range(1, 7):
        history.add_messages([HumanMessage(record(i).text), AIMessage(f"Noted {i}.")])
    note, *view = history.messages
    assert note.type == "system"
    assert note.text == TIER_NOTE
    # The long user messages are lowered, the oldest first, the newest kept raw; the short
    # ones would cost as much tiered, so they stay as they were.
    assert [is_tiered_line(m) for m in view if m.type == "human"] == [False, *[True] * 5, False]
    assert not any(is_tiered_line(m) for m in view if m.type == "ai")
    assert count_message_tokens([note, *view]) < count_message_tokens(history.raw_messages())


def test_window_costs_follow_the_window_as_it_grows_and_changes() -> None:
    builder = ContextBuilder(recent_raw=2)
    records = [record(n) for n in range(1, 9)]

    def fresh(window: list[MessageRecord]) -> list[int]:
        return ContextBuilder(recent_raw=2).costs(window)

    assert builder.costs(records[:6]) == fresh(records[:6])
    grown = builder.costs(records)  # m5 and m6 are no longer among the recent two
    assert grown == fresh(records)
    raised = [records[0].replace(required_tier_level=3), *records[1:]]
    assert builder.costs(raised) == fresh(raised)
    assert builder.costs(raised)[0] > grown[0]
    assert builder.costs(records[3:]) == fresh(records[3:])
