"""Each window policy reproduces its seed system's counts exactly, on every log, sync and async."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import (
    MovingWindow,
    ResetWindow,
    SlidingWindow,
    TokenBudget,
    WindowPolicy,
)

from .conftest import LogFactory, TwinOf
from .fakes import ScriptedSummarizer, ScriptedTierer, make_store


def stm(
    policy: WindowPolicy,
    log: MessageLog,
    store: BaseStore,
    **kwargs: Any,
) -> ShortTermMemory:
    kwargs.setdefault("tierer", ScriptedTierer())
    kwargs.setdefault("summarizer", ScriptedSummarizer())
    return ShortTermMemory("s1", log=log, store=store, policy=policy, **kwargs)


def exchange(i: int) -> list[BaseMessage]:
    return [HumanMessage(f"question {i} about topic{i}"), AIMessage(f"answer {i} on topic{i}")]


def summaries(store: BaseStore, scope: str = "s1") -> list[Any]:
    items = store.search(namespace_for(scope, "semantic"), limit=100)
    return sorted(
        (i for i in items if i.value.get("category") == "conversation_summary"),
        key=lambda i: int(i.value["source_message_ids"][0][1:]),
    )


async def ids(memory: Any) -> list[str]:
    return [r.id for r in await memory.records()]


async def test_moving_window_n_plus_one_keeps_one(make_log: LogFactory, twin_of: TwinOf) -> None:
    store = make_store()
    memory = twin_of(stm(MovingWindow(5), make_log(), store))
    for i in range(1, 6):
        result = await memory.add_messages([HumanMessage(f"message {i}")])
        assert result.consolidated == []
    assert await ids(memory) == ["m1", "m2", "m3", "m4", "m5"]
    assert summaries(store) == []

    result = await memory.add_messages([HumanMessage("message 6")])
    assert result.consolidated == ["m1", "m2", "m3", "m4", "m5"]
    assert result.error is None
    assert await ids(memory) == ["m6"]
    (summary,) = summaries(store)
    assert summary.key == "summary:s1:m1-m5"
    assert summary.value["source_message_ids"] == ["m1", "m2", "m3", "m4", "m5"]
    assert summary.value["content"].startswith("Summary of 5 messages: message 1")
    assert summary.value["key_concepts"] == ["message"]
    assert summary.value["category"] == "conversation_summary"
    assert summary.value["session_id"] == "s1"

    for i in range(7, 12):
        await memory.add_messages([HumanMessage(f"message {i}")])
    assert await ids(memory) == ["m11"]
    assert [s.key for s in summaries(store)] == ["summary:s1:m1-m5", "summary:s1:m6-m10"]


async def test_moving_window_with_exchanges_and_big_batches(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    store = make_store()
    memory = twin_of(stm(MovingWindow(5), make_log(), store))
    await memory.add_messages(exchange(1) + exchange(2))
    assert len(await ids(memory)) == 4
    await memory.add_messages(exchange(3))  # 6 > 5: the oldest 5 go, 1 stays
    assert await ids(memory) == ["m6"]
    await memory.add_messages([m for i in range(4, 10) for m in exchange(i)])  # 13 held
    assert await ids(memory) == ["m16", "m17", "m18"]
    assert [s.key for s in summaries(store)] == [
        "summary:s1:m1-m5",
        "summary:s1:m6-m10",
        "summary:s1:m11-m15",
    ]


async def test_reset_summarises_everything_past_the_user_limit(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    store = make_store()
    memory = twin_of(stm(ResetWindow(5), make_log(), store))
    for i in range(1, 6):
        await memory.add_messages(exchange(i))
    assert len(await ids(memory)) == 10  # 5 user messages: at the limit, nothing happens
    result = await memory.add_messages(exchange(6))
    assert len(result.consolidated) == 12
    assert await ids(memory) == []
    (summary,) = summaries(store)
    assert summary.key == "summary:s1:m1-m12"
    assert summary.value["summary_style"] == "reset"
    assert summary.value["session_id"] == "s1"
    # The archived summary is the context of the next turn (the seed left this out).
    view = await memory.context()
    assert len(view) == 1
    assert view[0].type == "system"
    assert "[m1-m12] Summary of 12 messages" in view[0].text
    await memory.add_messages(exchange(7))
    assert await ids(memory) == ["m13", "m14"]


async def test_reset_counts_user_messages_not_replies(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    memory = twin_of(stm(ResetWindow(2), make_log(), make_store()))
    await memory.add_messages([HumanMessage("u1"), AIMessage("a"), AIMessage("b"), AIMessage("c")])
    await memory.add_messages([HumanMessage("u2")])
    assert len(await ids(memory)) == 5
    await memory.add_messages([HumanMessage("u3")])
    assert await ids(memory) == []


async def test_sliding_window_reads_the_last_rounds_and_deletes_nothing(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    store = make_store()
    memory = twin_of(stm(SlidingWindow(3), make_log(), store, view="raw"))
    for i in range(1, 11):
        result = await memory.add_messages(exchange(i))
        assert result.consolidated == []
    assert len(await ids(memory)) == 20
    view = await memory.context()
    assert [m.id for m in view] == [f"m{i}" for i in range(15, 21)]
    assert view[0].content == "question 8 about topic8"
    assert summaries(store) == []


async def test_token_budget_prunes_whole_exchanges_to_below_limit_minus_buffer(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    # Every message costs 5 tokens (1 for its text, 1 for its role, 3 of overhead), so
    # the limit of 30 holds 6 messages and pruning goes on until under 20.
    store = make_store()
    memory = twin_of(stm(TokenBudget(30, 10, 2), make_log(), store, token_counter=lambda text: 1))
    for i in range(1, 4):
        result = await memory.add_messages(exchange(i))
        assert result.consolidated == []
    assert len(await ids(memory)) == 6  # exactly at the limit: kept
    result = await memory.add_messages(exchange(4))
    assert result.consolidated == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert await ids(memory) == ["m7", "m8"]
    episodes = store.search(namespace_for("s1", "episodic"), limit=100)
    assert sorted(int(e.value["message_id"][1:]) for e in episodes) == [1, 2, 3, 4, 5, 6]
    m3 = next(e for e in episodes if e.key == "episode:s1:m3")
    assert m3.value == {
        "content": "question 2 about topic2",
        "session_id": "s1",
        "actor": "human",
        "message_id": "m3",
        "tier1": "words=question_2",
        "tier2": "said: question 2 about topic2",
        "event_timestamp": m3.value["event_timestamp"],
    }
    assert summaries(store) == []


async def test_token_budget_keeps_at_least_min_kept_messages(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    memory = twin_of(
        stm(TokenBudget(30, 10, 5), make_log(), make_store(), token_counter=lambda text: 1)
    )
    for i in range(1, 5):
        await memory.add_messages(exchange(i))
    # Removing a second exchange would leave 4 < 5 messages, so only the first goes.
    assert await ids(memory) == ["m3", "m4", "m5", "m6", "m7", "m8"]


async def test_token_budget_with_default_counter_keeps_context_within_limit(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    settings = Settings(context_token_limit=400, context_token_buffer=100, min_messages_kept=3)
    policy = TokenBudget(400, 100, 3)
    engine = stm(policy, make_log(), make_store(), settings=settings)
    memory = twin_of(engine)
    pruned_at: list[int] = []
    for i in range(1, 41):
        long_question = f"question {i}: " + "please remember this detail " * 3
        result = await memory.add_messages([HumanMessage(long_question), AIMessage(f"ok {i}")])
        records = await memory.records()
        total = sum(engine.builder.costs(records))
        assert total <= 400
        if result.consolidated:
            pruned_at.append(i)
            assert total < 300 or len(records) <= 5
            assert records[0].role == "human"  # whole exchanges left
    assert pruned_at
