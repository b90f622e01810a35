"""Episodic -> semantic consolidation: the graph and the function run the engine's one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.graph import END, START
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.errors import ConfigurationError, InvalidNamespaceError
from langmem_tiers.graph import (
    aconsolidate_episodes,
    build_consolidation_graph,
    build_tiered_chat_graph,
    consolidate_episodes,
)
from langmem_tiers.graph.consolidation_graph import SUMMARY_CATEGORY
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.tiers.base import Summary

from .fakes import CountingSummarizer, PromptRecorder, run_turn, scripted

EPISODES = {
    "s1": ["We fly to Oslo on Friday.", "Great, the flight leaves at 9."],
    "s2": ["My sister Anna visits in May.", "Lovely, say hi to Anna."],
}


def _put_episodes(store: BaseStore, scope: str = "u1") -> None:
    for n, (session_id, texts) in enumerate(EPISODES.items()):
        for i, text in enumerate(texts, start=1):
            store.put(
                namespace_for(scope, "episodic"),
                f"episode:{session_id}:m{i}",
                {
                    "content": text,
                    "session_id": session_id,
                    "message_id": f"m{i}",
                    "actor": "human" if i % 2 else "ai",
                    "event_timestamp": f"2026-01-0{2 * n + i}T10:00:00+00:00",
                },
            )


async def _consolidate(store: BaseStore, mode: str, **kwargs: Any) -> Any:
    if mode == "async":
        return await aconsolidate_episodes(store, "u1", **kwargs)
    return consolidate_episodes(store, "u1", **kwargs)


class PickySummarizer(CountingSummarizer):
    """Fails on runs that mention Anna."""

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        if any("Anna" in m.text for m in messages):
            self.calls += 1
            raise RuntimeError("cannot summarise this one")
        return super().summarize(messages)


def test_graph_shape(store: TieredMemoryStore) -> None:
    drawn = build_consolidation_graph(store).get_graph()
    assert set(drawn.nodes) == {START, "select_episodes", "consolidate_episodes", END}
    assert {(e.source, e.target) for e in drawn.edges} == {
        (START, "select_episodes"),
        ("select_episodes", "consolidate_episodes"),
        ("select_episodes", END),
        ("consolidate_episodes", END),
    }


async def test_consolidates_each_session_once(store: TieredMemoryStore, mode: str) -> None:
    _put_episodes(store)
    summarizer = CountingSummarizer()
    report = await _consolidate(store, mode, summarizer=summarizer, force=True)
    assert report.episodes == 4
    assert report.marked == 4
    assert report.errors == []
    assert len(report.summaries) == 2
    engine = MemoryEngine(store)
    by_session = {}
    for memory_id in report.summaries:
        memory = engine.get("u1", memory_id)
        assert memory is not None
        by_session[memory.value["session_id"]] = memory
    s1 = by_session["s1"]
    assert s1.content == "Summary of 2 episodes: We fly to; Great, the flight"
    assert s1.category == SUMMARY_CATEGORY
    assert s1.value["source_message_ids"] == ["m1", "m2"]
    ids = [engine.memories("u1", kinds="episodic")[i].id for i in range(4)]
    assert sorted(
        s1.value["source_episodic_ids"] + by_session["s2"].value["source_episodic_ids"]
    ) == sorted(ids)
    assert [v.reason for v in engine.evolution("u1", s1.id)] == ["consolidated from episodes"]
    episode = store.get(namespace_for("u1", "episodic"), "episode:s1:m1")
    assert episode is not None
    assert episode.value["consolidated_into_id"] == s1.id
    assert episode.value["content"] == "We fly to Oslo on Friday."  # the event itself is kept

    again = await _consolidate(store, mode, summarizer=summarizer, force=True)
    assert (again.episodes, again.summaries, again.marked) == (0, [], 0)
    assert again.skipped == "no unconsolidated episodes"
    assert summarizer.calls == 2


async def test_the_cli_engine_and_graph_share_one_consolidation(store: TieredMemoryStore) -> None:
    """What the graph consolidated, the engine (CLI, HTTP) finds done, and the reverse."""
    _put_episodes(store)
    _put_episodes(store, scope="u2")
    engine = MemoryEngine(store, summarizer=CountingSummarizer())
    done = engine.consolidate("u1")
    assert done.episodes == 4
    assert consolidate_episodes(store, "u1", force=True).skipped == "no unconsolidated episodes"
    report = consolidate_episodes(store, "u2", force=True)
    assert report.marked == 4
    assert engine.consolidate("u2").episodes == 0


async def test_below_the_threshold_nothing_happens(store: TieredMemoryStore, mode: str) -> None:
    _put_episodes(store)
    summarizer = CountingSummarizer()
    report = await _consolidate(
        store, mode, summarizer=summarizer, settings=Settings(consolidation_threshold=20)
    )
    assert report.skipped == "4 unconsolidated episodes, below the threshold 20"
    assert summarizer.calls == 0
    assert store.search(namespace_for("u1", "semantic")) == []


async def test_a_failing_group_waits_for_the_next_run(store: TieredMemoryStore, mode: str) -> None:
    _put_episodes(store)
    report = await _consolidate(store, mode, summarizer=PickySummarizer(), force=True)
    assert report.errors == ["RuntimeError: cannot summarise this one"]
    assert report.marked == 2  # s1, summarised before s2 failed, stays done
    s2 = store.get(namespace_for("u1", "episodic"), "episode:s2:m1")
    assert s2 is not None
    assert "consolidated_into_id" not in s2.value
    retry = await _consolidate(store, mode, summarizer=CountingSummarizer(), force=True)
    assert retry.episodes == 2
    assert retry.marked == 2
    assert len(store.search(namespace_for("u1", "semantic"), limit=50)) == 2


async def test_the_graph_runs_the_same_steps(store: TieredMemoryStore, runner: str) -> None:
    _put_episodes(store)
    graph = build_consolidation_graph(store, summarizer=CountingSummarizer())
    payload = {"scope": "u1", "force": True}
    if runner == "invoke":
        out = graph.invoke(payload)
    elif runner == "ainvoke":
        out = await graph.ainvoke(payload)
    else:
        out = {}
        async for value in graph.astream(payload, stream_mode="values"):
            out = value
    assert out["episodes"] == 4
    assert out["marked"] == 4
    assert len(out["summaries"]) == 2
    assert out["errors"] == []
    nothing = graph.invoke(payload)
    assert nothing["skipped"] == "no unconsolidated episodes"
    assert nothing["marked"] == 0


def test_a_plain_store_is_refused(store: TieredMemoryStore) -> None:
    with pytest.raises(ConfigurationError, match="TieredMemoryStore"):
        consolidate_episodes(InMemoryStore(), "u1", force=True)


def test_scopes_are_isolated(store: TieredMemoryStore) -> None:
    _put_episodes(store, scope="u1")
    _put_episodes(store, scope="u2")
    consolidate_episodes(store, "u1", summarizer=CountingSummarizer(), force=True)
    assert store.search(namespace_for("u2", "semantic")) == []
    untouched = store.get(namespace_for("u2", "episodic"), "episode:s1:m1")
    assert untouched is not None
    assert "consolidated_into_id" not in untouched.value


def test_a_scope_is_required(store: TieredMemoryStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="scope"):
        build_consolidation_graph(store).invoke({"force": True})


async def test_a_chat_session_sees_its_consolidated_past(store: TieredMemoryStore) -> None:
    tight = Settings(context_token_limit=40, context_token_buffer=10, min_messages_kept=2)
    model = scripted("Noted, the library in Porto.", "Noted.", "In Porto.")
    memory = ChatMemory(store, settings=tight)
    chat = build_tiered_chat_graph(model, store=store, memory=memory)
    await run_turn(
        chat, "invoke", "The venue for the offsite is the old library in Porto, booked for June 4."
    )
    await run_turn(chat, "invoke", "Also, I like green tea in the morning.")
    report = consolidate_episodes(store, "u1", force=True)
    assert report.marked == 2
    # The tight budget leaves no room for memories in the view: read on with the defaults.
    roomy = ChatMemory(store, settings=Settings(), log=memory.log)
    chat = build_tiered_chat_graph(model, store=store, memory=roomy)
    recorder = PromptRecorder()
    await run_turn(chat, "invoke", "Where is the offsite?", config={"callbacks": [recorder]})
    system = recorder.prompts[0][0].text
    assert "Long-term memory of this conversation" in system
    assert "- [m1-m2] " in system
    assert "library in Porto" in system
