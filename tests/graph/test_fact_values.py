"""A fact has one value whoever writes it, a turn is saved in one pass, and facts of an
earlier release (``source_session_id``) are still read as their session's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.short_term.archiving import fact_value
from langmem_tiers.short_term.log import InMemoryMessageLog, LogOp, ReadOp

TURN = [
    HumanMessage("My name is Jordan Lee and I live in Lisbon."),
    AIMessage("Understood. I'll book the meeting room in Lisbon for Friday at 10:00."),
]
SCHEMA = set(fact_value("s", ["m1"], "x", facts=""))


def _facts(store: TieredMemoryStore, **where: Any) -> list[Any]:
    found = store.search(
        namespace_for("u1", "semantic"), filter={"category": "user_fact", **where}, limit=20
    )
    return sorted(found, key=lambda item: item.key)


@pytest.mark.parametrize("writer", ["puts", "engine", "dual"])
def test_every_writer_gives_a_fact_the_same_value(
    store: TieredMemoryStore, settings: Settings, tmp_path: Path, writer: str
) -> None:
    memory = ChatMemory(
        store,
        preset="dual" if writer == "dual" else "tiered",
        settings=settings,
        directory=str(tmp_path),
        engine=MemoryEngine(store) if writer == "engine" else None,
    )
    assert memory.save("s1", "u1", TURN).errors == []
    facts = _facts(store, session_id="s1")  # the store's session_id column finds them
    assert facts, "the turn states facts"
    for item in facts:
        # The fact value, and the relations the engine reads from a statement that has one.
        assert SCHEMA <= set(item.value) <= SCHEMA | {"relations"}, item.value
        assert item.value["session_id"] == "s1"
        assert item.key == f"fact:s1:{item.value['source_message_ids'][0]}"
    assert facts[0].value["source_message_ids"] == ["m1"]
    assert facts[0].value["speaker"] == "user"


class _CountingEngine(MemoryEngine):
    """The engine, counting the calls a save makes of it."""

    calls: list[tuple[str, int]]

    def write_many(self, writes: Sequence[PutOp], **kwargs: Any) -> Any:
        self.calls.append(("write_many", len(writes)))
        return super().write_many(writes, **kwargs)

    async def awrite_many(self, writes: Sequence[PutOp], **kwargs: Any) -> Any:
        self.calls.append(("write_many", len(writes)))
        return await super().awrite_many(writes, **kwargs)

    def add_semantic(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("add_semantic", 1))
        return super().add_semantic(*args, **kwargs)

    async def aadd_semantic(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("add_semantic", 1))
        return await super().aadd_semantic(*args, **kwargs)


class _CountingLog(InMemoryMessageLog):
    """An in-memory log counting the window reads it answers (its ``abatch`` runs
    ``batch``)."""

    reads = 0

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        self.reads += sum(isinstance(op, ReadOp) for op in ops)
        return super().batch(ops)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_turn_reads_its_window_once_and_writes_its_facts_in_one_engine_call(
    store: TieredMemoryStore, settings: Settings, mode: str
) -> None:
    engine = _CountingEngine(store)
    engine.calls = []
    log = _CountingLog()
    memory = ChatMemory(store, settings=settings, log=log, engine=engine)
    saved = (
        memory.save("s1", "u1", TURN) if mode == "sync" else await memory.asave("s1", "u1", TURN)
    )
    assert saved.ids == ["m1", "m2"]
    assert saved.errors == []
    assert log.reads == 1  # the add's own read of the window, nothing after it
    assert engine.calls == [("write_many", 2)]  # the user's fact and the assistant's plan
    assert [f.value["speaker"] for f in _facts(store)] == ["user", "assistant"]


def test_a_sessions_own_facts_stay_out_of_its_view(
    store: TieredMemoryStore, settings: Settings
) -> None:
    memory = ChatMemory(store, settings=settings)
    memory.save("s1", "u1", TURN)
    assert _facts(store, session_id="s1")
    view = memory.memory("s1", "u1").context()
    # The window shows the messages; their facts are not repeated in its system part.
    assert not [m for m in view if m.type == "system" and "Jordan" in m.text]
    # Another session of the user is given them.
    assert any("Jordan Lee" in line for line in memory.load("s2", "u1", "Jordan").user_context)


@pytest.mark.parametrize(
    "old",
    [
        # A plain put of the chat graph's save in the earlier release.
        {"source_session_id": "s1", "source_message_ids": ["m1"]},
        # Its engine path: the provenance under "metadata".
        {"metadata": {"source_session_id": "s1", "source_message_ids": ["m1"]}},
    ],
)
def test_a_fact_of_an_earlier_release_is_read_as_its_sessions(
    store: TieredMemoryStore, settings: Settings, old: dict[str, Any]
) -> None:
    store.put(
        namespace_for("u1", "semantic"),
        "old-fact",
        {"content": "The user's dog is called Biscuit.", "category": "user_fact", **old},
    )
    memory = ChatMemory(store, settings=settings)
    memory.save("s1", "u1", [HumanMessage("Hi there!"), AIMessage("Hello!")])
    # Session s1 still shows m1, which the fact came from: not repeated as user context.
    assert memory.load("s1", "u1", "What is my dog called?").user_context == []
    # Any other session is given it.
    later = memory.load("s2", "u1", "What is my dog called?").user_context
    assert later == ["The user's dog is called Biscuit."]
