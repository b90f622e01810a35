"""Episodic events and procedural preferences."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.errors import InvalidNamespaceError, ValidationError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.scope import namespace_for

from .sqlite_trace import traced_statements


async def test_episode_keeps_its_fields(twin) -> None:
    when = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
    memory = await twin.add_episodic(
        "alice@example.com",
        "Alice asked to book a flight to Oslo",
        session_id="s1",
        event_timestamp=when,
        actor="user",
        action_type="request",
        entities=["Alice", "Oslo"],
        metadata={"channel": "chat"},
    )
    assert memory.scope == "alice@example.com"
    assert memory.namespace == namespace_for("alice@example.com", "episodic")
    assert (memory.kind, memory.status, memory.session_id) == ("episodic", "active", "s1")
    assert (memory.actor, memory.action_type) == ("user", "request")
    assert memory.event_timestamp == when
    assert memory.value["entities"] == ["Alice", "Oslo"]
    assert memory.value["metadata"] == {"channel": "chat"}
    assert len(memory.key) == 32  # a new uuid4 hex key
    assert await twin.get("alice@example.com", memory.id) == memory
    as_dict = memory.to_dict()
    assert as_dict["event_timestamp"] == "2026-03-01T09:30:00+00:00"
    assert as_dict["namespace"] == ["alice@example%2Ecom", "episodic"]
    (event,) = await twin.timeline("alice@example.com")
    assert (event.type, event.memory_id, event.before) == ("memory.created", memory.id, None)
    assert event.after["value"]["content"] == "Alice asked to book a flight to Oslo"


async def test_episode_time_defaults_to_now_and_accepts_iso_strings(twin) -> None:
    before = datetime.now(timezone.utc)
    now = await twin.add_episodic("alice", "hello")
    assert before <= now.event_timestamp <= datetime.now(timezone.utc)
    iso = await twin.add_episodic("alice", "hello again", event_timestamp="2026-01-02T03:04:05Z")
    assert iso.event_timestamp == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("scope", "content", "kwargs", "error", "match"),
    [
        ("", "x", {}, InvalidNamespaceError, "scope"),
        (42, "x", {}, InvalidNamespaceError, "scope"),
        ("a\x00b", "x", {}, InvalidNamespaceError, "NUL"),
        ("alice", "   ", {}, ValidationError, "content"),
        ("alice", "x", {"event_timestamp": "yesterday"}, ValidationError, "event_timestamp"),
        ("alice", "x", {"entities": "Oslo"}, ValidationError, "entities"),
        ("alice", "x", {"metadata": {"f": object()}}, ValidationError, "JSON"),
        ("alice", "x" * 2_000_001, {}, ValidationError, "max_content_chars"),
    ],
)
async def test_bad_episodes_are_refused(twin, scope, content, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        await twin.add_episodic(scope, content, **kwargs)
    assert (await twin.stats())["total"] == 0


async def test_procedural_reinforcement(twin) -> None:
    first = await twin.set_procedural("alice", "reply_style", "short")
    assert (first.kind, first.proc_key, first.reinforcement_count) == (
        "procedural",
        "reply_style",
        1,
    )
    assert first.value["value"] == "short"
    assert first.content == 'reply_style: "short"'
    assert first.last_used_at is not None
    again = await twin.set_procedural("alice", "reply_style", "short")
    assert (again.id, again.reinforcement_count) == (first.id, 2)
    assert again.last_used_at > first.last_used_at
    changed = await twin.set_procedural(
        "alice", "reply_style", {"length": "long"}, content="Alice wants long replies"
    )
    assert (changed.id, changed.reinforcement_count) == (first.id, 3)
    assert changed.value["value"] == {"length": "long"}
    assert changed.content == "Alice wants long replies"
    types = [e.type for e in await twin.timeline("alice")]
    assert types == ["memory.created", "memory.reinforced", "memory.reinforced"]
    # the new content is what search finds
    (hit,) = await twin.retrieve("alice", "long replies", kinds="procedural")
    assert hit.id == first.id
    other = await twin.set_procedural("alice", "language", "en")
    assert other.id != first.id
    assert len(await twin.memories("alice", kinds=["procedural"])) == 2


async def test_procedural_lookup_is_an_index_hit_not_a_search(make_store, twin_of) -> None:
    from langmem_tiers.long_term.engine.engine import MemoryEngine

    from .fakes import WordEmbeddings

    embeddings = WordEmbeddings()
    twin = twin_of(MemoryEngine(make_store(embeddings=embeddings)))
    await twin.set_procedural("alice", "tone", "friendly")
    calls = embeddings.calls
    found = await twin.get_procedural("alice", "tone")
    assert found.value["value"] == "friendly"
    assert await twin.get_procedural("alice", "missing") is None
    assert await twin.get_procedural("bob", "tone") is None
    assert embeddings.calls == calls  # nothing was embedded: no search ran
    plan = twin.obj.store.db.run(_explain(twin.obj.store.db.dialect.name))
    assert "proc_key" in plan


def _explain(dialect: str):  # type: ignore[no-untyped-def]
    from langmem_tiers.sql.flow import Sql, Transaction

    query = "SELECT id FROM lmt_items i WHERE i.scope = 'alice' AND i.proc_key = 'tone'"
    if dialect == "sqlite":
        rows = yield Sql("EXPLAIN QUERY PLAN " + query)
        return " ".join(str(r[-1]) for r in rows)
    return (yield Transaction(_pg_plan(query)))


def _pg_plan(query: str):  # type: ignore[no-untyped-def]
    from langmem_tiers.sql.flow import Sql

    yield Sql("SET LOCAL enable_seqscan = off")  # a tiny table would be scanned anyway
    rows = yield Sql("EXPLAIN " + query)
    return " ".join(str(r[0]) for r in rows)


async def test_procedural_bad_input(twin) -> None:
    with pytest.raises(ValidationError, match="key"):
        await twin.set_procedural("alice", "", "x")
    with pytest.raises(ValidationError, match="JSON"):
        await twin.set_procedural("alice", "k", {1, 2})
    with pytest.raises(ValidationError, match="key"):
        await twin.get_procedural("alice", None)


async def test_an_episode_written_again_at_its_key_is_a_duplicate(twin) -> None:
    write = PutOp(namespace_for("agent-1", "episodic"), "event-1", {"content": "Deployed"})
    (first,) = await twin.write_many([write])
    (again,) = await twin.write_many([write])  # a retry of the same request
    assert (first.action, again.action) == ("created", "duplicate")
    assert again.memory == first.memory
    assert [m.id for m in await twin.memories("agent-1", kinds="episodic")] == [first.memory.id]


def test_an_episode_with_a_new_key_is_not_looked_for_before_it_is_stored(
    tmp_path: Path,
) -> None:
    # Its key is a UUID made for it: no memory can hold it, so the only read of memory
    # rows is of the episode just stored.
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}") as store:
        engine = MemoryEngine(store, settings=store.settings)
        engine.add_episodic("agent-1", "The deploy started")
        memory, statements = traced_statements(
            store, lambda: engine.add_episodic("agent-1", "The deploy finished")
        )
    memory_reads = [s for s in statements if s.startswith("SELECT i.id, i.prefix, i.key")]
    assert len(memory_reads) == 1, memory_reads
    assert memory.content == "The deploy finished"
