"""The event log: replay at any instant, the timeline, and events in the change's transaction."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langmem_tiers.errors import LangmemTiersError, ValidationError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.events import event_context


def _states(memories: list[Any]) -> list[dict[str, Any]]:
    return [m.state() for m in memories]


async def _last_event_at(twin, scope: str) -> datetime:
    return (await twin.timeline(scope, limit=100_000))[-1].at


async def test_replay_rebuilds_each_instant(twin) -> None:
    berlin = (await twin.add_semantic("alice", "Alice lives in Berlin")).memory
    t1 = await _last_event_at(twin, "alice")
    state1 = _states(await twin.state("alice"))
    await asyncio.sleep(0.01)
    paris = (await twin.add_semantic("alice", "Alice lives in Paris")).memory
    await twin.update_semantic("alice", paris.id, "Alice lives in Paris, Montmartre")
    t2 = await _last_event_at(twin, "alice")
    state2 = _states(await twin.state("alice"))
    await asyncio.sleep(0.01)
    note = await twin.add_episodic("alice", "Alice asked about trains")
    await twin.forget("alice", note.id, hard=True)
    await twin.set_procedural("alice", "tone", "warm")

    assert _states(await twin.replay("alice", t1)) == state1
    assert [m.status for m in await twin.replay("alice", t1)] == ["active"]
    then = await twin.replay("alice", t2)
    assert _states(then) == state2
    assert [(m.id, m.status, m.version) for m in then] == [
        (berlin.id, "superseded", 1),
        (paris.id, "active", 2),
    ]
    now = datetime.now(timezone.utc) + timedelta(seconds=1)
    assert _states(await twin.replay("alice", now)) == _states(await twin.state("alice"))
    assert note.id not in {m.id for m in await twin.replay("alice", now)}
    # a hard delete erases: its events are content-free tombstones, and replay to an
    # instant when the memory existed shows nothing of it
    assert await twin.timeline("alice", memory_id=note.id) == []
    erased = await twin.timeline("alice", types=["memory.erased"])
    assert len(erased) == 2  # its creation and its deletion
    assert all(e.before is None and e.after is None for e in erased)
    for e in erased:
        assert note.id not in {m.id for m in await twin.replay("alice", e.at)}


async def test_replay_before_the_first_event_is_refused(twin) -> None:
    await twin.add_semantic("alice", "Alice lives in Berlin")
    with pytest.raises(ValidationError, match="first event"):
        await twin.replay("alice", datetime(2000, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(ValidationError, match="first event"):
        await twin.replay("nobody", datetime.now(timezone.utc))
    with pytest.raises(ValidationError, match="at"):
        await twin.replay("alice", "not a time")


async def test_timeline_filters(twin) -> None:
    first = (await twin.add_semantic("alice", "Alice likes jazz")).memory
    await asyncio.sleep(0.01)
    middle = await _last_event_at(twin, "alice")
    await asyncio.sleep(0.01)
    await twin.add_semantic("alice", "Alice hates jazz")
    await twin.set_procedural("alice", "tone", "warm")
    events = await twin.timeline("alice")
    assert [e.type for e in events] == [
        "memory.created",
        "memory.created",
        "memory.superseded",
        "memory.created",
    ]
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert len({e.correlation_id for e in events[1:3]}) == 1  # one operation, one id
    assert events[0].correlation_id != events[1].correlation_id
    assert [e.type for e in await twin.timeline("alice", since=middle)][-3:] == [
        "memory.created",
        "memory.superseded",
        "memory.created",
    ]
    assert len(await twin.timeline("alice", until=middle)) == 1
    assert len(await twin.timeline("alice", limit=2)) == 2
    superseded = await twin.timeline("alice", types=["memory.superseded"])
    assert [(e.memory_id, e.before["status"], e.after["status"]) for e in superseded] == [
        (first.id, "active", "superseded")
    ]
    assert superseded[0].to_dict()["after"]["status"] == "superseded"
    with pytest.raises(ValidationError, match="types"):
        await twin.timeline("alice", types=["memory.exploded"])
    with pytest.raises(ValidationError, match="since"):
        await twin.timeline("alice", since=middle, until=middle - timedelta(days=1))
    with pytest.raises(ValidationError, match="limit"):
        await twin.timeline("alice", limit=0)


async def test_actor_and_correlation_id_come_from_the_callers_context(engine: MemoryEngine) -> None:
    from langmem_tiers.long_term.store.events import event_context

    with event_context(actor="scheduler", correlation_id="run-7"):
        engine.add_semantic("alice", "Alice likes jazz")
        engine.add_semantic("alice", "Alice hates jazz")
    events = engine.timeline("alice")
    assert {(e.actor, e.correlation_id) for e in events} == {("scheduler", "run-7")}


async def test_an_event_without_an_actor_is_the_systems(twin) -> None:
    fact = (await twin.add_semantic("alice", "Alice likes jazz")).memory
    await twin.forget("alice", fact.id)
    with event_context(correlation_id="run-8"):
        await twin.add_episodic("alice", "Alice asked about jazz clubs")
    events = await twin.timeline("alice")
    assert len(events) == 3
    assert {e.actor for e in events} == {"system"}
    with event_context(actor="alice-app"):
        await twin.add_episodic("alice", "Alice booked a table")
    assert (await twin.timeline("alice"))[-1].actor == "alice-app"


async def test_a_failed_event_write_undoes_the_whole_change(
    engine: MemoryEngine, monkeypatch
) -> None:
    from langmem_tiers.long_term.engine import lifecycle

    old = engine.add_semantic("alice", "Alice lives in Berlin").memory
    before = _states(engine.state("alice"))
    events = len(engine.timeline("alice"))

    def broken(*args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        raise RuntimeError("event log unavailable")
        yield

    monkeypatch.setattr(lifecycle, "write_events_flow", broken)
    with pytest.raises((RuntimeError, LangmemTiersError)):
        engine.add_semantic("alice", "Alice lives in Paris")  # supersede: new row + old status
    with pytest.raises((RuntimeError, LangmemTiersError)):
        engine.forget("alice", old.id)
    assert _states(engine.state("alice")) == before
    assert len(engine.timeline("alice")) == events


# -- the property: replay to any instant equals the live state then -------------------------
_FACTS = [
    "Alice lives in Berlin",
    "Alice lives in Paris",
    "Alice does not live in Paris",
    "Alice is 30 years old",
    "Alice is 31 years old",
    "Alice likes jazz",
    "Alice hates jazz",
    "The budget is $5,000",
    "The budget is $7,000",
    "Bob works at Initech",
]
_operation = st.one_of(
    st.tuples(
        st.just("semantic"),
        st.sampled_from(_FACTS),
        st.sampled_from(["supersede", "keep_both", "reject_new", "merge"]),
    ),
    st.tuples(st.just("episodic"), st.sampled_from(["hi", "we met", "Alice left"]), st.booleans()),
    st.tuples(st.just("update"), st.integers(0, 50), st.sampled_from(_FACTS)),
    st.tuples(st.just("procedural"), st.sampled_from(["tone", "lang"]), st.integers(0, 2)),
    st.tuples(st.just("forget"), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("decay"), st.integers(1, 400), st.just(None)),
    st.tuples(st.just("consolidate"), st.just(None), st.just(None)),
    st.tuples(st.just("compress"), st.just(None), st.just(None)),
)


def _apply(engine: MemoryEngine, scope: str, op: tuple[Any, Any, Any]) -> str | None:
    """Apply ``op``; answers the id of a memory it erased (a hard forget)."""
    name, a, b = op
    existing = engine.memories(scope, statuses=None, limit=1000)
    if name == "semantic":
        engine.add_semantic(scope, a, strategy=b)
    elif name == "episodic":
        engine.add_episodic(scope, a, session_id="s1" if b else None)
    elif name == "update":
        semantic = [m for m in existing if m.kind == "semantic" and m.status == "active"]
        if semantic:
            engine.update_semantic(scope, semantic[a % len(semantic)].id, b, reason="test")
    elif name == "procedural":
        engine.set_procedural(scope, a, ["short", "long", "none"][b])
    elif name == "forget":
        if existing:
            target = existing[a % len(existing)].id
            engine.forget(scope, target, hard=b)
            return target if b else None
    elif name == "decay":
        engine.decay(scope, now=datetime.now(timezone.utc) + timedelta(days=a))
    elif name == "consolidate":
        engine.consolidate(scope)
    elif name == "compress":
        engine.compress(scope)
    return None


def _check_replay_equals_live(engine: MemoryEngine, ops: list[tuple[Any, Any, Any]]) -> None:
    scope = f"agent-{uuid.uuid4().hex[:8]}"
    checkpoints: list[tuple[datetime, list[dict[str, Any]]]] = []
    erased: set[str] = set()
    for op in ops:
        gone = _apply(engine, scope, op)
        if gone is not None:
            erased.add(gone)
        events = engine.timeline(scope, limit=100_000)
        if events:
            checkpoints.append((events[-1].at, _states(engine.state(scope))))
    for at, expected in checkpoints:
        # A hard-forgotten memory is erased from every earlier instant too.
        assert _states(engine.replay(scope, at)) == [e for e in expected if e["id"] not in erased]
    if checkpoints:
        now = datetime.now(timezone.utc) + timedelta(seconds=1)
        assert _states(engine.replay(scope, now)) == _states(engine.state(scope))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_operation, min_size=20, max_size=60))
def test_replay_equals_the_live_state_after_random_operations(make_engine, ops) -> None:
    engine = make_engine(settings={"consolidation_threshold": 4, "decay_half_life_days": 30.0})
    _check_replay_equals_live(engine, ops)
