"""One write path: a contradicted fact is superseded whichever way it arrived.

The same story runs through every surface that writes memories: the tiered chat graph,
``langmem-tiers ingest``, short-term memory (the per-user facts it stores after each
exchange), the HTTP API and the chat history adapter. Each time the older fact must end
``superseded`` with ``valid_until`` set and a link to the newer one, and a search must
give the current fact first. Everything is offline: the rule-based contradiction check,
the offline tierer, model and embeddings.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import GetOp, PutOp, SearchOp

from langmem_tiers import (
    OfflineChatModel,
    TieredChatMessageHistory,
    TieredMemoryStore,
    build_memory,
    build_tiered_chat_graph,
    namespace_for,
)
from langmem_tiers.cli import main
from langmem_tiers.config import Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.server import ApiKeys, create_app
from langmem_tiers.sql.flow import Sql

with warnings.catch_warnings():
    # LangMem's dependency trustcall imports Send from its pre-1.0 place.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="trustcall")
    from langmem import create_manage_memory_tool  # type: ignore[import-untyped]  # no py.typed

TwinOf = Callable[[Any], Any]

OLD = "The deadline is March 3."
NEW = "The deadline moved to March 10."
QUERY = "When is the deadline?"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    found: str = request.getfixturevalue("postgres_url")
    return found


@pytest.fixture
def store(url: str) -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_url(url, settings=Settings.from_env(environ={})) as opened:
        yield opened


def assert_superseded(store: TieredMemoryStore, scope: str, old: str, new: str) -> None:
    """The fact holding ``old`` is superseded by the one holding ``new``, which ranks first."""
    engine = MemoryEngine(store)
    facts = engine.memories(scope, kinds="semantic", statuses=None)
    olds = [m for m in facts if old in m.content]
    news = [m for m in facts if new in m.content]
    assert len(olds) == 1, [m.content for m in facts]
    assert len(news) == 1, [m.content for m in facts]
    before, after = olds[0], news[0]
    assert before.status == "superseded"
    assert before.valid_until is not None
    assert before.value["superseded_by"] == after.id
    assert after.status == "active"
    assert after.value["supersedes"] == [before.id]
    types = [e.type for e in engine.timeline(scope, memory_id=before.id)]
    assert types[-1] == "memory.superseded"

    ranked = engine.retrieve(scope, QUERY, kinds="semantic")
    assert new in ranked[0].content
    assert all(old not in m.content for m in ranked)
    hits = store.search(namespace_for(scope, "semantic"), query=QUERY)
    assert new in str(hits[0].value["content"])
    assert all(old not in str(h.value["content"]) for h in hits)


async def test_chat_graph(store: TieredMemoryStore, mode: str) -> None:
    graph = build_tiered_chat_graph(OfflineChatModel(), store=store)
    for session, text in (("s1", OLD), ("s2", NEW)):
        turn = {"messages": [HumanMessage(text)], "session_id": session, "user_id": "u1"}
        if mode == "async":
            await graph.ainvoke(turn)
        else:
            graph.invoke(turn)
    assert_superseded(store, "u1", OLD, NEW)
    answer = graph.invoke({"messages": [HumanMessage(QUERY)], "session_id": "s3", "user_id": "u1"})[
        "answer"
    ]
    assert "March 10" in answer
    assert "March 3." not in answer


def test_ingest(url: str, tmp_path: Path) -> None:
    lines = [
        {"role": "user", "content": OLD, "session": "s1"},
        {"role": "assistant", "content": "Noted.", "session": "s1"},
        {"role": "user", "content": NEW, "session": "s2"},
        {"role": "assistant", "content": "Noted.", "session": "s2"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    assert main(["ingest", str(path), "--scope", "u1", "--url", url, "--no-progress"]) == 0
    with TieredMemoryStore.from_url(url) as store:
        assert_superseded(store, "u1", OLD, NEW)


async def test_short_term_memory(store: TieredMemoryStore, tmp_path: Path, mode: str) -> None:
    """The per-user target stores each user message's facts after the exchange."""
    for session, text in (("s1", OLD), ("s2", NEW)):
        stm = build_memory(session, preset="dual", store=store, user_id="u1", directory=tmp_path)
        batch = [HumanMessage(text), AIMessage("Noted.")]
        result = await stm.aadd_messages(batch) if mode == "async" else stm.add_messages(batch)
        assert result.error is None
    assert_superseded(store, "u1", "deadline=March 3", "deadline=March 10")


async def test_short_term_consolidation_is_idempotent_through_the_pipeline(
    store: TieredMemoryStore,
) -> None:
    """Summaries and archived messages keep their keys; a retry writes nothing twice."""
    stm = build_memory(
        "s1", preset="moving_window", store=store, settings=Settings(memory_window_limit=2)
    )
    stm.add_messages([HumanMessage(OLD), AIMessage("Noted."), HumanMessage(NEW)])
    engine = MemoryEngine(store)
    summaries = engine.memories("s1", kinds="semantic")
    assert [m.key for m in summaries] == ["summary:s1:m1-m2"]
    assert [e.type for e in engine.timeline("s1")] == ["memory.created"]
    assert [v.reason for v in engine.evolution("s1", summaries[0].id)] == ["created"]


def test_http(store: TieredMemoryStore) -> None:
    key = ApiKeys(store.db).create(scope="u1").key
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(store)) as client:
        for text, action in ((OLD, "created"), (NEW, "superseded")):
            answer = client.post("/api/v1/memory/semantic", json={"content": text}, headers=auth)
            assert answer.status_code == 201, answer.text
            assert answer.json()["action"] == action
        found = client.post("/api/v1/memory/retrieve", json={"query": QUERY}, headers=auth)
        assert found.json()["results"][0]["memory"]["content"] == NEW
    assert_superseded(store, "u1", OLD, NEW)


async def test_history_adapter(store: TieredMemoryStore, tmp_path: Path, mode: str) -> None:
    for session, text in (("s1", OLD), ("s2", NEW)):
        history = TieredChatMessageHistory(
            session, store=store, preset="dual", user_id="u1", directory=tmp_path
        )
        batch = [HumanMessage(text), AIMessage("Noted.")]
        if mode == "async":
            await history.aadd_messages(batch)
        else:
            history.add_messages(batch)
    assert_superseded(store, "u1", "deadline=March 3", "deadline=March 10")


async def test_a_raw_put_goes_through_the_pipeline(
    store: TieredMemoryStore, twin_of: TwinOf
) -> None:
    """Once an engine is built on the store, ``BaseStore.put`` of a memory is its write:
    a contradicted fact is superseded, a new value at a key is a version, a value said
    again at its key changes nothing, and a delete still deletes."""
    engine = MemoryEngine(store)
    assert store.put_pipeline is engine
    twin = twin_of(store)
    namespace = namespace_for("u1", "semantic")
    await twin.put(namespace, "a", {"content": OLD})
    await twin.put(namespace, "b", {"content": NEW})
    assert_superseded(store, "u1", OLD, NEW)
    old = await twin.get(namespace, "a")
    assert old is not None
    assert old.value["status"] == "superseded"
    history = engine.evolution("u1", engine.memories("u1", statuses=None)[0].id)
    assert [(v.content, v.valid_until is not None) for v in history] == [(OLD, True)]

    later = "The deadline moved to March 12."
    await twin.put(namespace, "b", {"content": later})
    await twin.put(namespace, "b", {"content": later})  # said again: nothing new
    current = engine.memories("u1", kinds="semantic")
    assert [(m.key, m.content, m.version) for m in current] == [("b", later, 2)]
    assert [v.content for v in engine.evolution("u1", current[0].id)] == [NEW, later]
    types = [e.type for e in engine.timeline("u1")]
    assert types == ["memory.created", "memory.created", "memory.superseded", "memory.updated"]

    await twin.delete(namespace, "b")
    assert await twin.get(namespace, "b") is None
    assert engine.memories("u1", kinds="semantic") == []


async def test_langmem_manage_tool_supersedes_a_contradicted_fact(
    store: TieredMemoryStore, twin_of: TwinOf
) -> None:
    """LangMem's tool writes with ``store.put``: through the pipeline all the same."""
    engine = MemoryEngine(store)
    manage = twin_of(
        create_manage_memory_tool(namespace=("{langgraph_user_id}", "semantic"), store=store)
    )
    config = {"configurable": {"langgraph_user_id": "u1"}}
    said = [await manage.invoke({"content": text}, config=config) for text in (OLD, NEW)]
    old_id, new_id = (text.removeprefix("created memory ") for text in said)
    assert_superseded(store, "u1", OLD, NEW)
    old = engine.memories("u1", statuses=("superseded",))
    assert [m.key for m in old] == [old_id]
    assert [v.valid_until is not None for v in engine.evolution("u1", old[0].id)] == [True]

    later = "The deadline moved to March 12."
    out = await manage.invoke({"action": "update", "id": new_id, "content": later}, config=config)
    assert out == f"updated memory {new_id}"
    current = engine.memories("u1", kinds="semantic")
    assert [(m.key, m.content, m.version) for m in current] == [(new_id, later, 2)]
    hits = store.search(namespace_for("u1", "semantic"), query=QUERY)
    assert [h.key for h in hits] == [new_id]


def _ttl_minutes(store: TieredMemoryStore, namespace: tuple[str, ...], key: str) -> Any:
    def flow() -> Any:
        rows = yield Sql(
            "SELECT ttl_minutes FROM lmt_items WHERE prefix = ? AND key = ?",
            [".".join(namespace), key],
        )
        return rows[0][0] if rows else "gone"

    return store.db.run(flow())


async def test_a_raw_put_keeps_its_ttl_through_the_pipeline(
    store: TieredMemoryStore, twin_of: TwinOf
) -> None:
    """The put's TTL (the store's default when it gives none) is the memory's."""
    MemoryEngine(store)
    store.ttl_config = {"default_ttl": 30}
    twin = twin_of(store)
    facts = namespace_for("u1", "semantic")
    await twin.put(namespace_for("u1", "episodic"), "e", {"content": "Jo went sailing."})
    await twin.put(namespace_for("u1", "procedural"), "p", {"content": "Answer briefly."}, ttl=90)
    await twin.put(facts, "a", {"content": OLD}, ttl=60)
    await twin.put(facts, "b", {"content": NEW}, ttl=None)
    assert _ttl_minutes(store, namespace_for("u1", "episodic"), "e") == 30
    assert _ttl_minutes(store, namespace_for("u1", "procedural"), "p") == 90
    assert (_ttl_minutes(store, facts, "a"), _ttl_minutes(store, facts, "b")) == (60, None)
    await twin.put(facts, "b", {"content": "The deadline moved to March 12."}, ttl=15)
    assert _ttl_minutes(store, facts, "b") == 15  # the new version's
    old = await twin.get(facts, "a")
    assert old is not None
    assert old.value["status"] == "superseded"


async def test_a_batch_keeps_its_order_around_the_pipeline(
    store: TieredMemoryStore, twin_of: TwinOf
) -> None:
    """Reads see the state before the batch's writes, results come in order, and of two
    puts of one key the last wins, whichever of them is the pipeline's."""
    MemoryEngine(store)
    twin = twin_of(store)
    facts, docs = namespace_for("u1", "semantic"), ("docs",)
    await twin.put(facts, "a", {"content": OLD})
    results = await twin.batch(
        [
            PutOp(facts, "b", {"content": NEW}),
            GetOp(facts, "a"),
            PutOp(docs, "d", {"text": "a document"}),
            PutOp(facts, "c", {"content": "Jo likes tea."}),
            PutOp(facts, "c", None),
            PutOp(facts, "e", None),
            PutOp(facts, "e", {"content": "Jo plays chess."}),
            SearchOp(facts, limit=10),
        ]
    )
    assert [type(r).__name__ for r in results] == [
        *("NoneType", "Item", "NoneType", "NoneType", "NoneType", "NoneType", "NoneType"),
        "list",
    ]
    before = results[1].value  # read before the batch's NEW superseded it
    assert (before["content"], "superseded_by" in before) == (OLD, False)
    assert [i.key for i in results[-1]] == ["a"]
    assert await twin.get(facts, "c") is None
    assert (await twin.get(facts, "e")).value["content"] == "Jo plays chess."
    assert (await twin.get(docs, "d")).value == {"text": "a document"}
    assert_superseded(store, "u1", OLD, NEW)


async def test_other_namespaces_keep_langgraphs_upsert(
    store: TieredMemoryStore, twin_of: TwinOf
) -> None:
    """A namespace that is no memory kind is LangGraph's: the same value at two keys is
    two items, exactly as given."""
    MemoryEngine(store)
    twin = twin_of(store)
    for key in ("a", "b"):
        await twin.put(("docs", "u1"), key, {"content": OLD})
    await twin.put(("docs", "u1"), "b", {"content": NEW})
    items = {i.key: i.value for i in await twin.search(("docs", "u1"))}
    assert items == {"a": {"content": OLD}, "b": {"content": NEW}}


def test_a_store_without_an_engine_keeps_langgraphs_upsert(store: TieredMemoryStore) -> None:
    """No engine was built on this store: ``BaseStore.put`` upserts by key, with its event."""
    namespace = namespace_for("u1", "semantic")
    store.put(namespace, "a", {"content": OLD})
    store.put(namespace, "b", {"content": NEW})
    store.put(namespace, "a", {"content": OLD + " Really."})
    assert {i.key for i in store.search(namespace)} == {"a", "b"}
    types = [e.type for e in MemoryEngine(store).timeline("u1")]
    assert types == ["memory.created", "memory.created", "memory.updated"]
