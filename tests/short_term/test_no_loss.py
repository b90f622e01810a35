"""Invariant 1: no message is lost, and consolidation is idempotent across failures and crashes."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore

from langmem_tiers.config import Settings
from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    EmbeddingError,
    InvalidContentError,
    ModelError,
)
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.short_term.log import InMemoryMessageLog, MessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import MovingWindow, ResetWindow, TokenBudget, WindowPolicy

from .conftest import LogFactory, TwinOf
from .fakes import FlakyLog, FlakyStore, ScriptedSummarizer, ScriptedTierer


def stm(policy: WindowPolicy, log: MessageLog, store: BaseStore, **kwargs: Any) -> ShortTermMemory:
    kwargs.setdefault("tierer", ScriptedTierer())
    kwargs.setdefault("summarizer", ScriptedSummarizer())
    return ShortTermMemory("s1", log=log, store=store, policy=policy, **kwargs)


def human(*texts: str) -> list[BaseMessage]:
    return [HumanMessage(t) for t in texts]


def semantic(store: BaseStore) -> list[Any]:
    return store.search(namespace_for("s1", "semantic"), limit=100)


async def snapshot(memory: Any) -> list[tuple[str, str, str | None, int]]:
    return [(r.id, r.text, r.tier1, r.required_tier_level) for r in await memory.records()]


async def fill(memory: Any, count: int) -> None:
    for i in range(1, count + 1):
        await memory.add_messages(human(f"message {i}"))


@pytest.mark.parametrize("failure", ["summariser", "store_put"])
async def test_a_failed_consolidation_leaves_stm_as_it_was_and_the_next_add_retries(
    twin_of: TwinOf, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    summarizer = ScriptedSummarizer(fail_times=1 if failure == "summariser" else 0)
    store = FlakyStore(fail_puts=1 if failure == "store_put" else 0)
    memory = twin_of(stm(MovingWindow(5), InMemoryMessageLog(), store, summarizer=summarizer))
    await fill(memory, 5)
    before = await snapshot(memory)
    with caplog.at_level(logging.WARNING):
        result = await memory.add_messages(human("message 6"))
    expected = ModelError if failure == "summariser" else EmbeddingError
    assert isinstance(result.error, expected)
    assert result.ids == ["m6"]
    assert result.consolidated == []
    after = await snapshot(memory)
    assert after[:5] == before
    assert [r[0] for r in after] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert semantic(store) == []
    assert "consolidation failed" in caplog.text

    result = await memory.add_messages(human("message 7"))
    assert result.error is None
    assert result.consolidated == ["m1", "m2", "m3", "m4", "m5"]
    assert [r[0] for r in await snapshot(memory)] == ["m6", "m7"]
    (summary,) = semantic(store)
    assert summary.value["source_message_ids"] == ["m1", "m2", "m3", "m4", "m5"]


async def test_crash_between_persist_and_remove_does_not_summarise_twice(twin_of: TwinOf) -> None:
    summarizer = ScriptedSummarizer()
    store = FlakyStore()
    log = FlakyLog(fail_removes=1)
    memory = twin_of(stm(MovingWindow(5), log, store, summarizer=summarizer))
    await fill(memory, 5)
    result = await memory.add_messages(human("message 6"))
    assert isinstance(result.error, BackendError)
    assert [r[0] for r in await snapshot(memory)] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert len(semantic(store)) == 1  # persisted, not yet removed
    assert summarizer.calls == 1

    result = await memory.add_messages(human("message 7"))
    assert result.error is None
    assert [r[0] for r in await snapshot(memory)] == ["m6", "m7"]
    assert summarizer.calls == 1  # the retry found the summary and did not re-summarise
    assert store.put_batches == 1
    (summary,) = semantic(store)
    assert summary.key == "summary:s1:m1-m5"


async def test_a_restarted_process_finishes_a_reset_that_grew_meanwhile(twin_of: TwinOf) -> None:
    summarizer = ScriptedSummarizer()
    store = FlakyStore()
    log = FlakyLog(fail_removes=1)
    first = twin_of(stm(ResetWindow(2), log, store, summarizer=summarizer))
    await first.add_messages(human("u1", "u2", "u3"))  # reset of m1-m3: persisted, not removed
    assert [r[0] for r in await snapshot(first)] == ["m1", "m2", "m3"]
    assert summarizer.calls == 1

    # A new engine (a new process) over the same log and store; more messages arrive.
    second = twin_of(stm(ResetWindow(2), log, store, summarizer=summarizer))
    result = await second.add_messages(human("u4"))
    assert result.error is None
    assert result.consolidated == ["m1", "m2", "m3"]
    assert [r[0] for r in await snapshot(second)] == ["m4"]
    assert summarizer.calls == 1
    (summary,) = semantic(store)
    assert summary.value["source_message_ids"] == ["m1", "m2", "m3"]


async def test_pruning_retries_write_each_episode_once(twin_of: TwinOf) -> None:
    store = FlakyStore(fail_puts=1)
    log = FlakyLog()
    memory = twin_of(stm(TokenBudget(30, 10, 2), log, store, token_counter=lambda t: 1))
    for i in range(1, 4):
        await memory.add_messages([HumanMessage(f"q{i}"), AIMessage(f"a{i}")])
    result = await memory.add_messages([HumanMessage("q4"), AIMessage("a4")])
    assert isinstance(result.error, EmbeddingError)
    assert len(await snapshot(memory)) == 8
    log.fail_removes = 1  # now the episodes are stored but the removal fails
    result = await memory.add_messages([HumanMessage("q5"), AIMessage("a5")])
    assert isinstance(result.error, BackendError)
    assert len(await snapshot(memory)) == 10
    result = await memory.add_messages([HumanMessage("q6"), AIMessage("a6")])
    assert result.error is None
    episodes = store.search(namespace_for("s1", "episodic"), limit=100)
    keys = [e.key for e in episodes]
    assert len(keys) == len(set(keys))
    kept = [r[0] for r in await snapshot(memory)]
    archived = {e.value["message_id"] for e in episodes}
    assert archived | set(kept) == {f"m{i}" for i in range(1, 13)}
    assert not archived & set(kept)


async def test_a_failing_log_refuses_the_add_and_stores_nothing(twin_of: TwinOf) -> None:
    log = FlakyLog()
    memory = twin_of(stm(MovingWindow(5), log, FlakyStore()))
    await memory.add_messages(human("kept"))
    log.fail_all = True
    with pytest.raises(BackendError):
        await memory.add_messages(human("refused"))
    log.fail_all = False
    assert [r[1] for r in await snapshot(memory)] == ["kept"]


async def test_tiering_failure_stores_raw_and_is_retried_later(twin_of: TwinOf) -> None:
    tierer = ScriptedTierer(fail_times=1)
    memory = twin_of(stm(MovingWindow(50), InMemoryMessageLog(), FlakyStore(), tierer=tierer))
    await memory.add_messages(human("first message here", "second one"))
    records = await memory.records()
    assert [(r.tier1, r.tier2) for r in records] == [(None, None), (None, None)]
    view = await memory.context()
    assert view[0].text == "first message here"  # raw until tiered: nothing hidden
    await memory.add_messages(human("third"))
    records = await memory.records()
    assert [r.tier1 for r in records] == ["words=first_message", "words=second_one", "words=third"]
    assert tierer.calls == 3


async def test_messages_left_untiered_are_retried_until_tiered_on_every_log(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    tierer = ScriptedTierer()
    memory = twin_of(stm(MovingWindow(50), make_log(), FlakyStore(), tierer=tierer))
    for text in ("one a", "two b", "three c"):
        await memory.add_messages(human(text))
    tierer.fail_times = 3  # m4, then m5 and the retry of m4
    await memory.add_messages(human("four d"))
    await memory.add_messages(human("five e"))
    assert [r.tier1 for r in await memory.records()] == [
        "words=one_a", "words=two_b", "words=three_c", None, None
    ]  # fmt: skip
    await memory.add_messages(human("six f"))
    assert [r.tier1 for r in await memory.records()] == [
        "words=one_a", "words=two_b", "words=three_c", "words=four_d", "words=five_e",
        "words=six_f",
    ]  # fmt: skip
    assert tierer.calls == 8


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (HumanMessage(""), r"messages\[1\]\.content is empty"),
        (HumanMessage("   "), r"messages\[1\]\.content is empty"),
        (HumanMessage("nul \x00 byte"), r"messages\[1\] contains NUL"),
        (HumanMessage("x" * 101), r"messages\[1\]\.content is 101 characters"),
        ("not a message", r"messages\[1\] must be a LangChain message"),
        (AIMessage("ok", additional_kwargs={"f": object()}), "not JSON-serialisable"),
    ],
)
async def test_bad_input_is_refused_whole_with_a_clear_error(
    twin_of: TwinOf, bad: Any, match: str
) -> None:
    memory = twin_of(
        stm(
            MovingWindow(5),
            InMemoryMessageLog(),
            FlakyStore(),
            settings=Settings(max_content_chars=100),
        )
    )
    with pytest.raises(InvalidContentError, match=match):
        await memory.add_messages([HumanMessage("fine"), bad, HumanMessage("fine too")])
    assert await memory.records() == []
    assert (await memory.add_messages(human("next"))).ids == ["m1"]


async def test_context_goes_on_without_long_term_memory_when_the_store_is_down(
    twin_of: TwinOf, caplog: pytest.LogCaptureFixture
) -> None:
    store = FlakyStore()
    memory = twin_of(stm(ResetWindow(1), InMemoryMessageLog(), store))
    await memory.add_messages(human("a", "b"))  # archived as a summary
    await memory.add_messages(human("c"))
    assert (await memory.context())[0].type == "system"
    store.down = True
    with caplog.at_level(logging.WARNING):
        view = await memory.context()
    assert [m.text for m in view] == ["c"]
    assert "long-term memory unavailable" in caplog.text


def test_a_policy_that_consolidates_needs_a_store_and_a_summariser() -> None:
    with pytest.raises(ConfigurationError, match="needs a store"):
        ShortTermMemory("s1", log=InMemoryMessageLog(), store=None, policy=MovingWindow(5))
    with pytest.raises(ConfigurationError, match="needs a summarizer"):
        ShortTermMemory("s1", log=InMemoryMessageLog(), store=FlakyStore(), policy=ResetWindow(5))
    # Archiving whole messages needs no summariser.
    ShortTermMemory("s1", log=InMemoryMessageLog(), store=FlakyStore(), policy=TokenBudget())
