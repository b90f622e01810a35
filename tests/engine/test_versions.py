"""Versions of semantic memories, and retrieval "as of" a past time."""

from __future__ import annotations

import asyncio

import pytest

from langmem_tiers.errors import NotFoundError, ValidationError


async def _tick() -> None:
    # Timestamps have microseconds; a short pause keeps "before" and "after" apart.
    await asyncio.sleep(0.01)


async def test_update_creates_versions_and_evolution_lists_them(twin) -> None:
    memory = (await twin.add_semantic("alice", "Alice works at Initech", confidence=0.6)).memory
    v2 = await twin.update_semantic(
        "alice", memory.id, "Alice works at Initech as a lead", reason="promotion"
    )
    v3 = await twin.update_semantic(
        "alice", memory.id, "Alice leads the Initech data team", confidence=0.9, reason="detail"
    )
    assert (v2.id, v2.version, v3.version) == (memory.id, 2, 3)
    assert v3.confidence == pytest.approx(0.9)
    assert v2.confidence == pytest.approx(0.6)  # kept when not given
    history = await twin.evolution("alice", memory.id)
    assert [(v.version, v.content, v.reason) for v in history] == [
        (1, "Alice works at Initech", "created"),
        (2, "Alice works at Initech as a lead", "promotion"),
        (3, "Alice leads the Initech data team", "detail"),
    ]
    assert [v.confidence for v in history] == pytest.approx([0.6, 0.6, 0.9])
    # each version held until the next one began
    assert history[0].valid_until == history[1].valid_from
    assert history[1].valid_until == history[2].valid_from
    assert history[2].valid_until is None
    assert history[1].value["content"] == "Alice works at Initech as a lead"
    # the search index follows the new content
    hits = await twin.retrieve("alice", "data team")
    assert hits[0].id == memory.id
    assert hits[0].content == "Alice leads the Initech data team"
    # an update is an event with its reason
    (event,) = await twin.timeline("alice", types=["memory.updated"], memory_id=memory.id, limit=1)
    assert event.metadata == {"reason": "promotion", "version": 2}


async def test_memory_written_by_the_store_gets_its_history_on_first_update(twin) -> None:
    from langmem_tiers.long_term.store.scope import namespace_for

    store = twin.obj.store
    store.put(namespace_for("alice", "semantic"), "k1", {"content": "Alice owns a bike"})
    (memory,) = await twin.memories("alice")
    assert [v.version for v in await twin.evolution("alice", memory.id)] == [1]
    await twin.update_semantic("alice", memory.id, "Alice owns two bikes")
    history = await twin.evolution("alice", memory.id)
    assert [(v.version, v.content) for v in history] == [
        (1, "Alice owns a bike"),
        (2, "Alice owns two bikes"),
    ]


async def test_only_active_semantic_memories_of_the_scope_can_be_updated(twin) -> None:
    old = (await twin.add_semantic("alice", "Alice lives in Berlin")).memory
    new = (await twin.add_semantic("alice", "Alice lives in Paris")).memory
    with pytest.raises(ValidationError, match=f"superseded.*{new.id}"):
        await twin.update_semantic("alice", old.id, "Alice lives in Rome")
    episode = await twin.add_episodic("alice", "Alice said hello")
    with pytest.raises(NotFoundError):
        await twin.update_semantic("alice", episode.id, "rewritten history")
    with pytest.raises(NotFoundError):
        await twin.update_semantic("bob", new.id, "Alice lives in Rome")
    with pytest.raises(NotFoundError):
        await twin.evolution("bob", new.id)
    with pytest.raises(ValidationError, match="memory_id"):
        await twin.update_semantic("alice", "", "x")
    assert (await twin.get("alice", new.id)).version == 1


async def test_retrieval_as_of_a_past_time_sees_memory_as_it_was(twin) -> None:
    berlin = (await twin.add_semantic("alice", "Alice lives in Berlin")).memory
    await _tick()
    before_move = (await twin.timeline("alice"))[-1].at
    await _tick()
    paris = (await twin.add_semantic("alice", "Alice lives in Paris")).memory
    await _tick()
    before_update = (await twin.timeline("alice"))[-1].at
    await _tick()
    await twin.update_semantic("alice", paris.id, "Alice lives in Paris near the river")

    then = await twin.retrieve("alice", "where does Alice live", as_of=before_move)
    assert [(h.id, h.content) for h in then] == [(berlin.id, "Alice lives in Berlin")]
    middle = await twin.retrieve("alice", "Alice lives", as_of=before_update)
    assert [(h.id, h.content) for h in middle] == [(paris.id, "Alice lives in Paris")]
    assert middle[0].score > 0
    assert set(middle[0].scores) == {"semantic", "recency", "frequency", "confidence"}
    now = await twin.retrieve("alice", "Alice lives")
    assert [h.content for h in now] == ["Alice lives in Paris near the river"]
    both = await twin.retrieve("alice", "Alice lives", as_of=before_update, include_inactive=True)
    assert {h.id for h in both} == {berlin.id, paris.id}
    from datetime import datetime, timezone

    assert (
        await twin.retrieve("alice", "Alice", as_of=datetime(2000, 1, 1, tzinfo=timezone.utc)) == []
    )


async def test_validity_interval_of_the_value_limits_retrieval(twin) -> None:
    from langmem_tiers.long_term.store.scope import namespace_for

    store = twin.obj.store
    ns = namespace_for("alice", "semantic")
    store.put(ns, "past", {"content": "Alice rents a flat", "valid_until": "2001-01-01T00:00:00Z"})
    store.put(
        ns, "future", {"content": "Alice rents a house", "valid_from": "2999-01-01T00:00:00Z"}
    )
    store.put(ns, "now", {"content": "Alice rents a room"})
    hits = await twin.retrieve("alice", "Alice rents")
    assert [h.key for h in hits] == ["now"]
    assert len(await twin.retrieve("alice", "Alice rents", include_inactive=True)) == 3
