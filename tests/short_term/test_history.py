"""TieredChatMessageHistory under RunnableWithMessageHistory, for every preset, sync and async."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError, InvalidNamespaceError
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.log import InMemoryMessageLog, LogOp, MessageLog
from langmem_tiers.short_term.presets import PRESETS, build_memory, get_preset
from langmem_tiers.tiers.tokens import count_message_tokens

from .fakes import ScriptedSummarizer, make_store

TURNS = 200
SETTINGS = Settings(
    memory_window_limit=5,
    short_term_memory_limit=5,
    sliding_window_rounds=3,
    context_token_limit=700,
    context_token_buffer=200,
    min_messages_kept=4,
)


def user_text(turn: int) -> str:
    return (
        f"Turn {turn}: my item number {turn} is a widget coloured shade{turn} for project P{turn}."
    )


def reply_text(turn: int) -> str:
    return f"Reply {turn}: noted that item {turn} is shade{turn}."


def run_chain(
    history: TieredChatMessageHistory, mode: str, prompts: list[list[BaseMessage]]
) -> RunnableWithMessageHistory:
    replies = iter([AIMessage(reply_text(t)) for t in range(1, TURNS + 1)])
    model = GenericFakeChatModel(messages=replies)

    def record(messages: list[BaseMessage]) -> list[BaseMessage]:
        prompts.append(list(messages))
        return messages

    return RunnableWithMessageHistory(RunnableLambda(record) | model, lambda _: history)


@pytest.mark.parametrize("preset", list(PRESETS))
async def test_two_hundred_turns_keep_the_prompt_small_and_lose_nothing(
    preset: str, mode: str, tmp_path: Path
) -> None:
    store = make_store()
    history = TieredChatMessageHistory(
        "chat-1",
        store=store,
        preset=preset,
        settings=SETTINGS,
        directory=tmp_path,
        user_id="alice" if preset == "dual" else None,
    )
    prompts: list[list[BaseMessage]] = []
    chain = run_chain(history, mode, prompts)
    config: Any = {"configurable": {"session_id": "chat-1"}}
    for turn in range(1, TURNS + 1):
        message = HumanMessage(user_text(turn))
        if mode == "async":
            answer = await chain.ainvoke([message], config)
        else:
            answer = chain.invoke([message], config)
        assert answer.content == reply_text(turn)

    # The prompt stays within the preset's bound on every turn.
    for prompt in prompts:
        assert prompt[-1].type == "human"
        history_part = prompt[:-1]
        messages = [m for m in history_part if m.type != "system"]
        if preset == "tiered":
            assert count_message_tokens(history_part) <= SETTINGS.context_token_limit
        elif preset == "dual":
            assert len(messages) <= 2 * SETTINGS.sliding_window_rounds
        else:
            assert len(messages) <= 2 * SETTINGS.memory_window_limit
    assert len([m for m in prompts[-1] if m.type != "system"]) < 40

    # Every message ever added is still retrievable, and was stored exactly once.
    memory = history.memory
    kept = {m.id: m.text for m in await _raw(history, mode)}
    scope = "alice" if preset == "dual" else "chat-1"
    covered: dict[str, int] = {}
    for item in store.search(namespace_for(scope, "semantic"), limit=10_000):
        if item.value.get("category") == "conversation_summary":
            for message_id in item.value["source_message_ids"]:
                covered[message_id] = covered.get(message_id, 0) + 1
    assert all(count == 1 for count in covered.values())
    assert not set(covered) & set(kept)
    found_by_search = 0
    for index in range(1, 2 * TURNS + 1):
        turn, is_reply = (index + 1) // 2, index % 2 == 0
        text = reply_text(turn) if is_reply else user_text(turn)
        message_id = f"m{index}"
        if message_id in kept:
            assert kept[message_id] == text
        elif message_id not in covered:
            hits = memory.search_archive(text, limit=1)
            assert hits, f"{message_id} is neither kept, summarised nor archived"
            assert hits[0].value["message_id"] == message_id
            assert hits[0].value["content"] == text
            found_by_search += 1
    if preset == "tiered":
        assert found_by_search > 100
    if preset == "dual":
        assert len(kept) == 2 * TURNS  # nothing deleted


async def _raw(history: TieredChatMessageHistory, mode: str) -> list[BaseMessage]:
    if mode == "async":
        return await history.araw_messages()
    return history.raw_messages()


async def test_messages_do_not_change_length_within_a_run(mode: str) -> None:
    history = TieredChatMessageHistory(
        "s", preset="tiered", settings=SETTINGS, summarizer=ScriptedSummarizer()
    )
    await _add(history, mode, [HumanMessage("hello there"), AIMessage("hi")])
    first = await _get(history, mode)
    first.append(HumanMessage("callers may change their copy"))
    second = await _get(history, mode)
    assert len(second) == 2
    assert [m.id for m in second] == ["m1", "m2"]
    await _add(history, mode, [HumanMessage("next")])
    assert len(await _get(history, mode)) == 3
    await (history.aclear() if mode == "async" else _sync(history.clear))
    assert await _get(history, mode) == []
    assert (await _raw(history, mode)) == []


async def _get(history: TieredChatMessageHistory, mode: str) -> list[BaseMessage]:
    if mode == "async":
        return await history.aget_messages()
    return history.messages


async def _add(history: TieredChatMessageHistory, mode: str, messages: list[BaseMessage]) -> None:
    if mode == "async":
        await history.aadd_messages(messages)
    else:
        history.add_messages(messages)


async def _sync(function: Any) -> Any:
    return function()


class AsyncOnlyLog(MessageLog):
    """Refuses sync calls: proves the async path never blocks on the sync one."""

    def __init__(self) -> None:
        self.inner = InMemoryMessageLog()
        self.batches = 0

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        raise AssertionError("the async API called the sync log")

    async def abatch(self, ops: Sequence[LogOp]) -> list[Any]:
        self.batches += 1
        return await self.inner.abatch(ops)


async def test_async_methods_are_real_and_add_is_one_round_trip() -> None:
    log = AsyncOnlyLog()
    history = TieredChatMessageHistory(
        "s", preset="moving_window", settings=SETTINGS, log=log, summarizer=ScriptedSummarizer()
    )
    await history.aadd_messages([HumanMessage("a"), AIMessage("b"), HumanMessage("c")])
    assert log.batches == 1
    assert [m.text for m in await history.aget_messages()] == ["a", "b", "c"]
    assert [m.id for m in await history.araw_messages()] == ["m1", "m2", "m3"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_with_a_prompt_template_and_history_key() -> None:
    history = TieredChatMessageHistory("s", preset="tiered", settings=SETTINGS)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    seen: list[list[BaseMessage]] = []

    def record(prompt_value: Any) -> Any:
        seen.append(prompt_value.to_messages())
        return prompt_value

    model = GenericFakeChatModel(messages=iter([AIMessage("first"), AIMessage("second")]))
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(record) | model,
        lambda _: history,
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "s"}}
    chain.invoke({"question": "My name is Jordan."}, config)
    chain.invoke({"question": "What is my name?"}, config)
    assert [m.text for m in history.raw_messages()] == [
        "My name is Jordan.",
        "first",
        "What is my name?",
        "second",
    ]
    # A short session is shown raw, with no note about tiers.
    assert [m.text for m in seen[1]] == [
        "Be brief.",
        "My name is Jordan.",
        "first",
        "What is my name?",
    ]


def test_presets_are_combinations_of_independent_settings(tmp_path: Path) -> None:
    dual = build_memory(
        "s", preset="dual", settings=SETTINGS, directory=tmp_path, summarizer=ScriptedSummarizer()
    )
    assert (type(dual.log).__name__, type(dual.policy).__name__) == (
        "JsonlMessageLog",
        "SlidingWindow",
    )
    assert (dual.target, dual.view) == ("user", "raw")
    tiered_on_jsonl = get_preset("tiered").with_changes(log="jsonl")
    memory = build_memory(
        "s",
        preset=tiered_on_jsonl,
        settings=SETTINGS,
        directory=tmp_path,
        summarizer=ScriptedSummarizer(),
    )
    assert type(memory.log).__name__ == "JsonlMessageLog"
    assert type(memory.policy).__name__ == "TokenBudget"
    with pytest.raises(ConfigurationError, match="preset must be one of"):
        get_preset("nope")
    with pytest.raises(ConfigurationError, match="log must be one of"):
        get_preset("tiered").with_changes(log="redis")


def test_presets_take_their_limits_from_settings(tmp_path: Path) -> None:
    settings = Settings(
        memory_window_limit=7,
        short_term_memory_limit=3,
        sliding_window_rounds=4,
        context_token_limit=900,
        context_token_buffer=100,
        min_messages_kept=6,
    )
    built = {
        name: build_memory("s", preset=name, settings=settings, directory=tmp_path)
        for name in PRESETS
    }
    assert built["moving_window"].policy.limit == 7  # type: ignore[attr-defined]
    assert built["reset"].policy.limit == 3  # type: ignore[attr-defined]
    assert built["dual"].policy.read_limit == 8
    tiered = built["tiered"].policy
    assert (tiered.limit, tiered.buffer, tiered.min_kept) == (900, 100, 6)  # type: ignore[attr-defined]
    assert built["tiered"].builder.budget == 900
    assert built["moving_window"].scope == "s"
    assert build_memory("s", preset="dual", user_id="u", directory=tmp_path).scope == "u"


@pytest.mark.parametrize("session_id", ["", "   ", "a\x00b", "x" * 513, 42, None])
def test_bad_session_ids_are_refused(session_id: Any) -> None:
    with pytest.raises(InvalidNamespaceError, match="session_id"):
        TieredChatMessageHistory(session_id, preset="moving_window", settings=SETTINGS)


@pytest.mark.parametrize("preset", list(PRESETS))
async def test_the_package_store_is_a_drop_in_long_term_memory(
    preset: str, mode: str, tmp_path: Path
) -> None:
    index: Any = {"dims": 32, "embed": DeterministicFakeEmbedding(size=32), "fields": ["content"]}
    url = f"sqlite:///{tmp_path / 'ltm.db'}"
    with TieredMemoryStore.from_url(url, index=index, settings=SETTINGS) as store:
        memory = build_memory(
            "chat-1",
            preset=preset,
            store=store,
            settings=SETTINGS,
            directory=tmp_path,
            user_id="alice" if preset == "dual" else None,
        )
        for turn in range(1, 31):
            batch = [HumanMessage(user_text(turn)), AIMessage(reply_text(turn))]
            if mode == "async":
                result = await memory.aadd_messages(batch)
                await memory.acontext()
            else:
                result = memory.add_messages(batch)
                memory.context()
            assert result.error is None
        kept = {r.id for r in memory.records()}
        summarised = {
            message_id
            for item in store.search(namespace_for(memory.scope, "semantic"), limit=1000)
            for message_id in item.value.get("source_message_ids", [])
            if item.value.get("category") == "conversation_summary"
        }
        archived = {
            item.value["message_id"]
            for item in store.search(namespace_for(memory.scope, "episodic"), limit=1000)
        }
        assert kept | summarised | archived == {f"m{i}" for i in range(1, 61)}
        assert not kept & (summarised | archived)
        expected_kept = {"moving_window": 5, "reset": 0, "dual": 60}
        if preset in expected_kept:
            assert len(kept) == expected_kept[preset]
