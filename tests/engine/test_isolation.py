"""Isolation: a scope never reads, changes or replays another scope's memories."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from langmem_tiers.errors import NotFoundError, ValidationError

# Scope ids that look like namespaces, encodings or each other's prefixes.
SCOPES = ["alice", "alice.semantic", "alice%2Esemantic", "langgraph", "a.b", "alice@example.com"]


async def _fill(twin, scope: str) -> dict[str, str]:
    fact = await twin.add_semantic(scope, f"{scope} lives in Berlin")
    episode = await twin.add_episodic(scope, f"{scope} said hello", session_id="s1")
    pref = await twin.set_procedural(scope, "tone", scope)
    return {"fact": fact.memory.id, "episode": episode.id, "pref": pref.id}


async def test_every_operation_stays_in_its_scope(twin) -> None:
    ids = {scope: await _fill(twin, scope) for scope in SCOPES}
    for scope in SCOPES:
        mine = set(ids[scope].values())
        assert {m.id for m in await twin.memories(scope, statuses=None)} == mine
        hits = await twin.retrieve(scope, "lives in Berlin said hello tone", include_inactive=True)
        assert {h.id for h in hits} == mine
        assert {m.scope for m in await twin.state(scope)} == {scope}
        now = datetime.now(timezone.utc) + timedelta(seconds=1)
        assert {m.id for m in await twin.replay(scope, now)} == mine
        assert {e.memory_id for e in await twin.timeline(scope)} == mine
        assert (await twin.get_procedural(scope, "tone")).value["value"] == scope
        assert (await twin.stats(scope))["total"] == 3
    assert sorted((a.scope, a.total) for a in await twin.agents()) == sorted((s, 3) for s in SCOPES)


async def test_ids_of_another_scope_are_never_found(twin) -> None:
    theirs = await _fill(twin, "alice")
    await _fill(twin, "bob")
    before = [m.state() for m in await twin.state("alice")]
    for memory_id in theirs.values():
        assert await twin.get("bob", memory_id) is None
        with pytest.raises(NotFoundError):
            await twin.update_semantic("bob", memory_id, "Bob rewrote it")
        with pytest.raises(NotFoundError):
            await twin.evolution("bob", memory_id)
        with pytest.raises(NotFoundError):
            await twin.forget("bob", memory_id)
        with pytest.raises(NotFoundError):
            await twin.forget("bob", memory_id, hard=True)
        with pytest.raises(NotFoundError):
            await twin.compress("bob", [memory_id])
        assert await twin.timeline("bob", memory_id=memory_id) == []
    # a contradiction in another scope is not a contradiction
    result = await twin.add_semantic("bob", "alice lives in Paris", strategy="reject_new")
    assert result.action == "created"
    assert [m.state() for m in await twin.state("alice")] == before


async def test_nested_namespaces_written_through_the_store_are_not_engine_scopes(twin) -> None:
    store = twin.obj.store
    store.put(("alice", "team", "semantic"), "k", {"content": "alice team lives in Berlin"})
    await _fill(twin, "alice")
    hits = await twin.retrieve("alice", "lives in Berlin")
    assert all(h.scope == "alice" for h in hits)
    assert "k" not in {h.key for h in hits}
    assert [a.scope for a in await twin.agents()] == ["alice"]


@pytest.mark.parametrize(
    ("call", "args", "kwargs", "match"),
    [
        ("retrieve", ("alice", ""), {}, "query"),
        ("retrieve", ("alice", "x"), {"kinds": ["facts"]}, "kinds"),
        ("retrieve", ("alice", "x"), {"kinds": []}, "kinds"),
        ("retrieve", ("alice", "x"), {"limit": 0}, "limit"),
        ("retrieve", ("alice", "x"), {"limit": True}, "limit"),
        ("retrieve", ("alice", "x"), {"as_of": "soon"}, "as_of"),
        ("memories", ("alice",), {"statuses": ["gone"]}, "statuses"),
        ("memories", ("alice",), {"offset": -1}, "offset"),
        ("decay", ("alice",), {"now": 12}, "now"),
        ("get", ("alice", None), {}, "memory_id"),
        ("get", ("alice", "x" * 300), {}, "memory_id"),
        ("compress", ("alice", "abc"), {}, "memory_ids"),
        ("timeline", ("alice",), {"types": "memory.created, memory.deleted"}, "types"),
    ],
)
async def test_bad_input_gets_a_clear_error(twin, call, args, kwargs, match) -> None:
    with pytest.raises(ValidationError, match=match):
        await getattr(twin, call)(*args, **kwargs)
