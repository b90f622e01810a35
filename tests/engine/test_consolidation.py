"""Consolidation of episodes into semantic memories: grouping, idempotence, triggers."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

from langmem_tiers.long_term.engine.consolidation import Episode, group_episodes
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.tiers.base import Summarizer, Summary

from .fakes import WordEmbeddings, scripted

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=timezone.utc)


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


class CountingSummarizer(Summarizer):
    """Joins the messages; counts its calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def summarize(self, messages):  # type: ignore[no-untyped-def]
        texts = [str(m.content) for m in messages]
        self.calls.append(texts)
        return Summary(" / ".join(texts), [texts[0].split()[0]])


def test_grouping_by_session_then_by_time_gap() -> None:
    episodes = [
        Episode("s1-a", "a", "s1", "user", _at(0)),
        Episode("x-1", "b", None, "user", _at(1)),
        Episode("s2-a", "c", "s2", "user", _at(2)),
        Episode("x-2", "d", None, "user", _at(30)),
        Episode("s1-b", "e", "s1", "ai", _at(300)),
        Episode("x-3", "f", None, "user", _at(200)),  # more than an hour after x-2
    ]
    groups = group_episodes(episodes, gap=timedelta(hours=1), max_size=50)
    assert [[e.id for e in g] for g in groups] == [
        ["s1-a", "s1-b"],
        ["x-1", "x-2"],
        ["s2-a"],
        ["x-3"],
    ]
    cut = group_episodes(episodes, gap=timedelta(hours=1), max_size=1)
    assert sorted(len(g) for g in cut) == [1] * 6


async def test_consolidation_summarises_links_and_is_idempotent(make_engine, twin_of) -> None:
    summarizer = CountingSummarizer()
    twin = twin_of(make_engine(summarizer=summarizer, auto_consolidate=False))
    s1 = [
        await twin.add_episodic(
            "alice", f"Alice planned step {i}", session_id="s1", event_timestamp=_at(i)
        )
        for i in range(3)
    ]
    loose = await twin.add_episodic("alice", "Alice waved", event_timestamp=_at(10))
    other = await twin.add_episodic("bob", "Bob arrived", session_id="s1", event_timestamp=_at(0))

    result = await twin.consolidate("alice")
    assert (result.scope, result.groups, result.episodes, result.skipped) == ("alice", 2, 4, 0)
    first, second = result.memories
    assert first.kind == "semantic"
    assert first.category == "episode_summary"
    assert first.content == "Alice planned step 0 / Alice planned step 1 / Alice planned step 2"
    assert first.value["source_episodic_ids"] == [e.id for e in s1]
    assert first.value["session_id"] == "s1"
    assert first.value["key_concepts"] == ["Alice"]
    assert first.value["first_event_at"] == _at(0).isoformat()
    assert second.value["source_episodic_ids"] == [loose.id]
    for episode in s1:
        marked = await twin.get("alice", episode.id)
        assert marked.consolidated_into_id == first.id
        assert marked.value["consolidated_into_id"] == first.id
        assert marked.status == "active"  # episodes stay searchable
    assert (await twin.get("bob", other.id)).consolidated_into_id is None

    again = await twin.consolidate("alice")
    assert (again.groups, again.episodes, again.memories) == (0, 0, [])
    assert len(summarizer.calls) == 2
    assert len(await twin.memories("alice", kinds="semantic")) == 2
    types = [e.type for e in await twin.timeline("alice")]
    assert types.count("memory.consolidated") == 4
    # the summary has a first version and is found by search
    assert [v.reason for v in await twin.evolution("alice", first.id)] == [
        "consolidated from episodes"
    ]
    hits = await twin.retrieve("alice", "planned step", kinds="semantic")
    assert hits[0].id == first.id


async def test_episodes_marked_by_the_consolidation_graph_are_not_redone(
    make_engine, twin_of
) -> None:
    from langmem_tiers.long_term.store.scope import namespace_for

    summarizer = CountingSummarizer()
    engine = make_engine(summarizer=summarizer, auto_consolidate=False)
    twin = twin_of(engine)
    ns = namespace_for("alice", "episodic")
    engine.store.put(ns, "e1", {"content": "done", "consolidated_into_id": "episodes:s1:abc"})
    engine.store.put(ns, "e2", {"content": "waiting"})
    result = await twin.consolidate("alice")
    assert result.episodes == 1
    assert summarizer.calls == [["waiting"]]


async def test_threshold_triggers_consolidation_on_add(make_engine, twin_of) -> None:
    summarizer = CountingSummarizer()
    twin = twin_of(make_engine(summarizer=summarizer, settings={"consolidation_threshold": 3}))
    await twin.add_episodic("alice", "one", session_id="s")
    await twin.add_episodic("alice", "two", session_id="s")
    assert summarizer.calls == []
    third = await twin.add_episodic("alice", "three", session_id="s")
    assert summarizer.calls == [["one", "two", "three"]]
    assert third.consolidated_into_id is not None  # returned as it is after consolidating
    assert (await twin.stats("alice"))["unconsolidated_episodes"] == 0


class SlowCountingSummarizer(CountingSummarizer):
    """A summariser that takes a while, so that concurrent adds overlap with it."""

    def summarize(self, messages):  # type: ignore[no-untyped-def]
        time.sleep(0.05)
        return super().summarize(messages)


@pytest.mark.parametrize("concurrently", ["threads", "tasks"])
async def test_concurrent_adds_over_the_threshold_summarise_each_episode_once(
    make_engine, concurrently: str
) -> None:
    """Adds meeting the threshold while an add of the same engine consolidates the scope
    leave it to that one: no episode is summarised (a model call each) twice."""
    summarizer = SlowCountingSummarizer()
    engine = make_engine(summarizer=summarizer, settings={"consolidation_threshold": 3})
    engine.add_episodic("alice", "zero", session_id="s")
    engine.add_episodic("alice", "one", session_id="s")
    texts = [f"event{n}" for n in range(8)]
    if concurrently == "threads":
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda t: engine.add_episodic("alice", t, session_id="s"), texts))
    else:
        await asyncio.gather(*(engine.aadd_episodic("alice", t, session_id="s") for t in texts))
    summarised = [text for call in summarizer.calls for text in call]
    assert summarised
    assert len(summarised) == len(set(summarised))
    stats = engine.stats("alice")
    assert stats["unconsolidated_episodes"] + len(summarised) == 10


async def test_consolidate_due_takes_the_scopes_over_the_threshold(make_engine, twin_of) -> None:
    summarizer = CountingSummarizer()
    twin = twin_of(
        make_engine(
            summarizer=summarizer,
            auto_consolidate=False,
            settings={"consolidation_threshold": 2},
        )
    )
    for scope, n in (("alice", 2), ("bob", 1), ("carol@example.com", 3)):
        for i in range(n):
            await twin.add_episodic(scope, f"{scope} event {i}", session_id="s")
    results = await twin.consolidate_due()
    assert sorted((r.scope, r.episodes) for r in results) == [
        ("alice", 2),
        ("carol@example.com", 3),
    ]
    assert await twin.consolidate_due() == []
    assert (await twin.stats("bob"))["unconsolidated_episodes"] == 1


async def test_llm_summary_and_progress_bar(make_engine, twin_of, capsys) -> None:
    model = scripted(["SUMMARY: Alice booked Oslo.\nKEY_CONCEPTS: Alice; Oslo"])
    twin = twin_of(make_engine(model=model, auto_consolidate=False))
    await twin.add_episodic("alice", "Book me a flight to Oslo", session_id="s", actor="user")
    await twin.add_episodic("alice", "Booked.", session_id="s", actor="assistant")
    result = await twin.consolidate("alice", progress=True)
    (memory,) = result.memories
    assert memory.content == "Alice booked Oslo."
    assert memory.value["key_concepts"] == ["Alice", "Oslo"]
    assert "consolidating alice" in capsys.readouterr().err


async def test_offline_summary_by_default(twin) -> None:
    await twin.add_episodic("alice", "We decided to fly to Oslo on Friday.", session_id="s")
    (memory,) = (await twin.consolidate("alice")).memories
    assert "Oslo" in memory.content
    assert memory.value["key_concepts"]


async def test_a_group_consolidated_meanwhile_is_skipped(engine: MemoryEngine) -> None:
    from langmem_tiers.long_term.engine.consolidation import (
        GroupSummary,
        summary_value,
        unconsolidated_flow,
        write_groups_flow,
    )
    from langmem_tiers.long_term.store.scope import namespace_for

    engine.add_episodic("alice", "hello", session_id="s")
    engine.add_episodic("alice", "goodbye", session_id="t")
    core = engine.store.core
    hello, goodbye = group_episodes(
        engine.store.db.run(unconsolidated_flow(core, "alice")),
        gap=timedelta(hours=1),
        max_size=50,
    )
    ns = namespace_for("alice", "semantic")
    now = core.dialect.now()

    def summary(key: str, group: list[Episode]) -> GroupSummary:
        return GroupSummary(ns, key, summary_value(group, Summary(f"{key} summary", [])), {}, group)

    (done,) = engine.store.db.run(write_groups_flow(core, [summary("k1", hello)], at=now))
    late, other = engine.store.db.run(
        write_groups_flow(core, [summary("k2", hello), summary("k3", goodbye)], at=now)
    )
    assert done is not None
    assert other is not None
    assert late is None  # only the group taken meanwhile is skipped
    assert sorted(m.key for m in engine.memories("alice", kinds="semantic")) == ["k1", "k3"]
    assert engine.get("alice", goodbye[0].id).consolidated_into_id == other.id


class CallCountingEmbeddings(WordEmbeddings):
    """Word embeddings that count calls of ``embed_documents`` too."""

    def __init__(self) -> None:
        super().__init__()
        self.document_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls += 1
        return super().embed_documents(texts)


async def test_a_run_embeds_its_summaries_in_one_call(make_engine, twin_of) -> None:
    embeddings = CallCountingEmbeddings()
    twin = twin_of(make_engine(settings={"embeddings": embeddings}, auto_consolidate=False))
    for session in range(5):
        for step in range(2):
            await twin.add_episodic(
                "alice", f"Alice did step {step} of task {session}", session_id=f"s{session}"
            )
    before = embeddings.document_calls
    result = await twin.consolidate("alice")
    assert (result.groups, result.episodes, result.skipped) == (5, 10, 0)
    assert embeddings.document_calls - before == 1
    for memory in result.memories:
        assert [v.reason for v in await twin.evolution("alice", memory.id)] == [
            "consolidated from episodes"
        ]
        for episode_id in memory.value["source_episodic_ids"]:
            assert (await twin.get("alice", episode_id)).consolidated_into_id == memory.id
    hits = await twin.retrieve("alice", "task 3", kinds="semantic")
    assert hits[0].value["session_id"] == "s3"


async def test_a_run_stores_a_bounded_number_of_episodes_at_once(make_engine, twin_of) -> None:
    from langmem_tiers.long_term.engine.upkeep import CONSOLIDATION_WRITE_EPISODES

    embeddings = CallCountingEmbeddings()
    twin = twin_of(make_engine(settings={"embeddings": embeddings}, auto_consolidate=False))
    per_session = CONSOLIDATION_WRITE_EPISODES * 3 // 5  # two sessions pass the bound
    for session in range(3):
        for step in range(per_session):
            await twin.add_episodic(
                "alice", f"step {step} of task {session}", session_id=f"s{session}"
            )
    before = embeddings.document_calls
    result = await twin.consolidate("alice")
    assert (result.groups, result.episodes) == (3, 3 * per_session)
    # The first two groups together, then the third: an embedding call for each write.
    assert embeddings.document_calls - before == 2


async def test_summaries_waiting_long_enough_are_stored_without_waiting_for_more(
    make_engine, twin_of, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langmem_tiers.long_term.engine import upkeep

    monkeypatch.setattr(upkeep, "CONSOLIDATION_WRITE_SECONDS", 0.0)
    embeddings = CallCountingEmbeddings()
    twin = twin_of(make_engine(settings={"embeddings": embeddings}, auto_consolidate=False))
    for session in range(3):
        await twin.add_episodic(
            "alice", f"Alice spoke in session {session}", session_id=f"s{session}"
        )
    before = embeddings.document_calls
    result = await twin.consolidate("alice")
    assert (result.groups, result.episodes) == (3, 3)
    assert embeddings.document_calls - before == 3  # each summary stored on its own


async def test_a_summariser_failing_midway_keeps_the_groups_summarised_before(
    make_engine, twin_of
) -> None:
    class FailsThird(CountingSummarizer):
        def summarize(self, messages):  # type: ignore[no-untyped-def]
            if len(self.calls) == 2 and not getattr(self, "failed", False):
                self.failed = True
                raise RuntimeError("summariser down")
            return super().summarize(messages)

    summarizer = FailsThird()
    twin = twin_of(make_engine(summarizer=summarizer, auto_consolidate=False))
    for session in range(4):
        await twin.add_episodic(
            "alice", f"Alice spoke in session {session}", session_id=f"s{session}",
            event_timestamp=_at(session),
        )  # fmt: skip
    with pytest.raises(RuntimeError, match="summariser down"):
        await twin.consolidate("alice")
    kept = await twin.memories("alice", kinds="semantic")
    assert sorted(m.value["session_id"] for m in kept) == ["s0", "s1"]
    assert (await twin.stats("alice"))["unconsolidated_episodes"] == 2
    rest = await twin.consolidate("alice")
    assert sorted(m.value["session_id"] for m in rest.memories) == ["s2", "s3"]
    assert len(summarizer.calls) == 4  # each group summarised once


async def test_a_failing_summariser_leaves_episodes_for_the_next_run(make_engine, twin_of) -> None:
    class FailsOnce(CountingSummarizer):
        failed = False

        def summarize(self, messages):  # type: ignore[no-untyped-def]
            if not self.failed:
                self.failed = True
                raise RuntimeError("summariser down")
            return super().summarize(messages)

    twin = twin_of(make_engine(summarizer=FailsOnce(), auto_consolidate=False))
    await twin.add_episodic("alice", "hello", session_id="s")
    with pytest.raises(RuntimeError, match="summariser down"):
        await twin.consolidate("alice")
    assert (await twin.stats("alice"))["unconsolidated_episodes"] == 1
    assert (await twin.memories("alice", kinds="semantic")) == []
    assert (await twin.consolidate("alice")).episodes == 1
