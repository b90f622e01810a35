"""Decay, forgetting, compression, and retrieval filtered by status on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from langmem_tiers.errors import NotFoundError, ValidationError
from langmem_tiers.long_term.engine.lifecycle import decayed_importance
from langmem_tiers.long_term.store.scope import namespace_for


def test_decay_formula() -> None:
    from datetime import datetime, timezone

    now = datetime(2026, 1, 31, tzinfo=timezone.utc)
    assert decayed_importance(0.8, now, now, 30.0) == pytest.approx(0.8)
    assert decayed_importance(0.8, now - timedelta(days=30), now, 30.0) == pytest.approx(0.4)
    assert decayed_importance(1.0, now - timedelta(days=45), now, 15.0) == pytest.approx(0.125)
    assert decayed_importance(1.0, now + timedelta(days=3), now, 30.0) == 1.0


async def test_decay_lowers_importance_and_retires_weak_memories(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(settings={"decay_half_life_days": 10.0, "decay_threshold": 0.2}))
    strong = (await twin.add_semantic("alice", "Alice speaks Norwegian")).memory
    weak = await twin.add_episodic("alice", "Alice sneezed")
    store = twin.obj.store
    # a memory whose own importance starts low decays below the threshold sooner
    store.put(
        namespace_for("alice", "semantic"), "low", {"content": "A minor note", "importance": 0.5}
    )
    now = strong.updated_at + timedelta(days=10)
    result = await twin.decay("alice", now=now)
    assert (result.examined, result.updated, result.decayed) == (3, 3, [])
    assert (await twin.get("alice", strong.id)).importance == pytest.approx(0.5, rel=1e-3)

    later = strong.updated_at + timedelta(days=20)
    result = await twin.decay("alice", now=later)
    low = next(m for m in await twin.memories("alice", statuses=None) if m.key == "low")
    assert set(result.decayed) == {low.id}
    assert low.status == "decayed"
    assert low.value["status"] == "decayed"
    assert low.importance == pytest.approx(0.5 * 0.25, rel=1e-3)
    assert (await twin.get("alice", weak.id)).importance == pytest.approx(0.25, rel=1e-3)
    # decayed memories leave retrieval unless asked for
    assert [h.id for h in await twin.retrieve("alice", "minor note")] != [low.id]
    assert low.id in {
        h.id for h in await twin.retrieve("alice", "minor note", include_inactive=True)
    }
    # a pass with nothing new to record writes no event
    events = len(await twin.timeline("alice"))
    again = await twin.decay("alice", now=later)
    assert (again.updated, len(await twin.timeline("alice"))) == (0, events)
    types = {e.type for e in await twin.timeline("alice")}
    assert {"memory.decayed", "memory.importance_decayed"} <= types


async def test_retrieval_is_an_access_that_slows_decay(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(settings={"decay_half_life_days": 10.0}))
    used = (await twin.add_semantic("alice", "Alice drinks espresso")).memory
    idle = (await twin.add_semantic("alice", "The office plant is green")).memory
    store = twin.obj.store
    month_ago = used.updated_at - timedelta(days=30)
    store.db.run(_backdate([used.id, idle.id], store.db.dialect.ts_param(month_ago)))
    # both were last updated a month ago; one of them is retrieved today
    assert [h.id for h in await twin.retrieve("alice", "espresso", limit=1)] == [used.id]
    result = await twin.decay("alice")
    assert result.decayed == []
    used_after = await twin.get("alice", used.id)
    idle_after = await twin.get("alice", idle.id)
    assert used_after.access_count == 1
    assert used_after.last_accessed_at > used.updated_at
    assert used_after.importance == pytest.approx(1.0, abs=1e-3)
    assert idle_after.importance == pytest.approx(0.125, rel=1e-3)


def _backdate(ids: list[str], when: object):  # type: ignore[no-untyped-def]
    from langmem_tiers.sql.flow import Sql

    for memory_id in ids:
        yield Sql("UPDATE lmt_items SET updated_at = ? WHERE id = ?", [when, memory_id])


async def test_soft_and_hard_forget(twin) -> None:
    keep = (await twin.add_semantic("alice", "Alice has a cat named Tom")).memory
    soft = await twin.forget("alice", keep.id)
    assert soft.status == "deleted"
    assert await twin.retrieve("alice", "cat Tom") == []
    assert (await twin.forget("alice", keep.id)).status == "deleted"  # idempotent
    gone = (await twin.add_semantic("alice", "Alice's password hint is blue")).memory
    await twin.update_semantic("alice", gone.id, "Alice's password hint is red")
    assert await twin.forget("alice", gone.id, hard=True) is None
    assert await twin.get("alice", gone.id) is None
    with pytest.raises(NotFoundError):
        await twin.evolution("alice", gone.id)
    with pytest.raises(NotFoundError):
        await twin.forget("alice", gone.id)
    remaining = await twin.retrieve("alice", "password hint", include_inactive=True)
    assert [h.id for h in remaining] == [keep.id]  # the soft-deleted one is still there
    store = twin.obj.store
    leftovers = store.db.run(_rows_of(gone.id, in_database=store.core.index.in_database))
    if not store.core.index.in_database:
        leftovers["vectors"] = _qdrant_points(store, gone.id)
        assert _qdrant_points(store, keep.id) == 1  # the soft-deleted one keeps its vector
    assert leftovers == {"terms": 0, "versions": 0, "vectors": 0}
    assert store.db.run(_rows_of(keep.id, in_database=store.core.index.in_database))["terms"] > 0
    last = (await twin.timeline("alice"))[-1]
    # erased: the delete's event, like the memory's others, is a content-free tombstone
    assert (last.type, last.memory_id, last.before, last.after) == (
        "memory.erased",
        "erased",
        None,
        None,
    )
    assert await twin.timeline("alice", memory_id=gone.id) == []
    assert last.metadata == {"erased": True}
    (soft_event,) = await twin.timeline("alice", types=["memory.forgotten"])
    assert soft_event.memory_id == keep.id


def _rows_of(memory_id: str, *, in_database: bool):  # type: ignore[no-untyped-def]
    from langmem_tiers.sql.flow import Sql

    out = {}
    tables = [("terms", "lmt_terms", "item_id"), ("versions", "lmt_versions", "memory_id")]
    if in_database:
        tables.append(("vectors", "lmt_vectors", "item_id"))
    for name, table, column in tables:
        rows = yield Sql(f"SELECT count(*) FROM {table} WHERE {column} = ?", [memory_id])
        out[name] = int(rows[0][0])
    return out


def _qdrant_points(store, memory_id: str) -> int:  # type: ignore[no-untyped-def]
    from qdrant_client import models

    only = models.Filter(
        must=[models.FieldCondition(key="item_id", match=models.MatchValue(value=memory_id))]
    )
    client = store._qdrant
    return int(client.count(store.core.index.collection, count_filter=only, exact=True).count)


async def test_compress_replaces_decayed_memories_with_a_linked_summary(
    make_engine, twin_of
) -> None:
    twin = twin_of(make_engine(settings={"decay_half_life_days": 1.0}))
    a = (await twin.add_semantic("alice", "Alice liked the Lisbon trip")).memory
    b = await twin.add_episodic("alice", "Alice bought tram tickets in Lisbon")
    fresh = (await twin.add_semantic("alice", "Alice plans a Rome trip")).memory
    decayed = await twin.decay("alice", now=a.updated_at + timedelta(days=30))
    assert sorted(decayed.decayed) == sorted([a.id, b.id, fresh.id])
    result = await twin.compress("alice")
    assert sorted(result.compressed) == sorted([a.id, b.id, fresh.id])
    summary = result.summary
    assert summary.category == "compressed_summary"
    assert sorted(summary.value["source_memory_ids"]) == sorted(result.compressed)
    for memory_id in result.compressed:
        old = await twin.get("alice", memory_id)
        assert old.status == "compressed"
        assert old.value["compressed_into"] == summary.id
    hits = await twin.retrieve("alice", "Lisbon trip", include_inactive=True)
    assert [h.id for h in hits] == [summary.id]  # the originals left the index
    assert (await twin.compress("alice")).summary is None  # nothing decayed is left


async def test_compress_chosen_memories_and_bad_ids(twin) -> None:
    a = (await twin.add_semantic("alice", "Alice visited Porto")).memory
    b = (await twin.add_semantic("alice", "Alice visited Braga")).memory
    theirs = (await twin.add_semantic("bob", "Bob visited Faro")).memory
    with pytest.raises(NotFoundError):
        await twin.compress("alice", [a.id, theirs.id])
    result = await twin.compress("alice", [a.id, b.id])
    assert sorted(result.compressed) == sorted([a.id, b.id])
    with pytest.raises(ValidationError, match="not active or decayed"):
        await twin.compress("alice", [a.id])
    assert (await twin.get("bob", theirs.id)).status == "active"


async def test_inactive_memories_never_shorten_a_search(make_store, twin_of) -> None:
    """Many superseded near memories must not crowd active ones out of the top k.

    With Qdrant the vectors of inactive memories stay in the collection and the status is
    checked in SQL, so the store asks Qdrant for more until k active ones are found. The
    active memories here share no word with the query (only a synonym), so lexical
    search cannot make up for a short dense list.
    """
    from langmem_tiers.long_term.engine.engine import MemoryEngine

    from .fakes import WordEmbeddings

    embeddings = WordEmbeddings(synonyms={"bebop": "jazz"})
    store = make_store(embeddings=embeddings, candidate_multiplier=1)
    ns = namespace_for("alice", "semantic")
    # Rows as given, before an engine is built: its pipeline would take the five near
    # identical nights for one.
    for i in range(40):
        store.put(ns, f"old{i}", {"content": "jazz concert", "status": "superseded"})
    for i in range(5):
        store.put(ns, f"new{i}", {"content": f"bebop night {i}"})
    twin = twin_of(MemoryEngine(store))
    hits = await twin.retrieve("alice", "jazz concert", limit=5)
    assert sorted(h.key for h in hits) == [f"new{i}" for i in range(5)]
    plain = await twin_of(store).search(ns, query="jazz concert", limit=5)
    assert sorted(i.key for i in plain) == [f"new{i}" for i in range(5)]
    every = await twin.retrieve("alice", "jazz concert", limit=45, include_inactive=True)
    assert len(every) == 45


async def test_superseded_memories_decay_like_the_others(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(settings={"decay_half_life_days": 10.0, "decay_threshold": 0.2}))
    old = (await twin.add_semantic("alice", "Alice lives in Berlin", subject="Alice")).memory
    new = await twin.add_semantic("alice", "Alice lives in Paris", subject="Alice")
    assert (await twin.get("alice", old.id)).status == "superseded"

    result = await twin.decay("alice", now=new.memory.updated_at + timedelta(days=10))
    assert (result.examined, result.updated) == (2, 2)
    assert (await twin.get("alice", old.id)).importance == pytest.approx(0.5, rel=1e-2)

    result = await twin.decay("alice", now=new.memory.updated_at + timedelta(days=30))
    assert set(result.decayed) == {old.id, new.memory.id}
    faded = await twin.get("alice", old.id)
    assert faded.status == "decayed"
    assert faded.value["superseded_by"] == new.memory.id  # the link survives the decay
    decayed = [e for e in await twin.timeline("alice") if e.type == "memory.decayed"]
    assert {e.metadata["status_before"] for e in decayed} == {"superseded", "active"}
    # and, decayed, it can be compressed like any faded memory
    assert (await twin.compress("alice")).summary is not None


async def test_hard_forgetting_a_summary_unlinks_its_episodes(twin) -> None:
    for n in range(3):
        await twin.add_episodic("alice", f"Alice asked about night trains {n}", session_id="s1")
    first = await twin.consolidate("alice")
    assert first.episodes == 3
    summary = first.memories[0]
    assert await twin.forget("alice", summary.id, hard=True) is None

    episodes = await twin.memories("alice", kinds="episodic")
    assert [e.consolidated_into_id for e in episodes] == [None, None, None]
    assert all("consolidated_into_id" not in e.value for e in episodes)
    # the summary's own events are erased tombstones
    assert await twin.timeline("alice", memory_id=summary.id) == []
    assert (await twin.timeline("alice"))[-1].type == "memory.erased"
    for e in episodes:
        unlinked = (await twin.timeline("alice", memory_id=e.id))[-1]
        assert unlinked.metadata["unlinked_from"] == summary.id
        assert unlinked.after["consolidated_into_id"] is None

    # They are consolidated again, into a summary that exists.
    again = await twin.consolidate("alice")
    assert again.episodes == 3
    episodes = await twin.memories("alice", kinds="episodic")
    assert {e.consolidated_into_id for e in episodes} == {again.memories[0].id}
    now = again.memories[0].updated_at + timedelta(seconds=1)
    assert [m.state() for m in await twin.replay("alice", now)] == [
        m.state() for m in await twin.state("alice")
    ]


def test_changes_of_one_memory_in_one_pass_leave_the_last(engine) -> None:
    # On PostgreSQL a pass's changes of the same columns are one statement over all their
    # rows; two of one memory must leave what the second leaves, as one by one they did.
    from langmem_tiers.long_term.engine.lifecycle import Change, change_flow
    from langmem_tiers.long_term.engine.models import IMPORTANCE_DECAYED
    from langmem_tiers.sql.flow import Transaction

    first = engine.add_semantic("alice", "Alice speaks Norwegian").memory
    second = engine.add_semantic("alice", "Alice lives in Bergen").memory
    changes = [
        Change(memory_id, IMPORTANCE_DECAYED, columns={"importance": value}, touch=False)
        for memory_id, value in ((first.id, 0.5), (second.id, 0.7), (first.id, 0.3))
    ]
    dialect = engine.store.core.dialect

    def flow():  # type: ignore[no-untyped-def]
        return (yield Transaction(change_flow(dialect, changes, at=dialect.now(), max_chars=1000)))

    engine.store.db.run(flow())
    assert engine.get("alice", first.id).importance == pytest.approx(0.3)
    assert engine.get("alice", second.id).importance == pytest.approx(0.7)
    kinds = [e.type for e in engine.timeline("alice") if e.type == IMPORTANCE_DECAYED]
    assert len(kinds) == 3
