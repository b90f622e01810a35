"""The store passed to ``graph.compile(store=...)``, used from nodes, on every backend.

Nodes reach the store through ``langgraph.config.get_store()``; the graph is driven with
``invoke`` or ``ainvoke`` (the ``mode`` fixture), and in async mode the nodes use the
store's async methods, so both twins are exercised from inside a graph.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

with warnings.catch_warnings():
    # LangMem's dependency trustcall imports Send from its pre-1.0 place.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="trustcall")
    from langmem import (  # type: ignore[import-untyped]  # no py.typed
        create_manage_memory_tool,
        create_search_memory_tool,
    )

if TYPE_CHECKING:
    from conftest import Twin

TwinOf = Callable[[Any], "Twin"]


class State(TypedDict, total=False):
    """What one turn brings (``remember``, ``query``) and what it found (``recalled``)."""

    remember: str
    query: str
    recalled: list[str]


def _namespace(config: RunnableConfig) -> tuple[str, ...]:
    return ("memories", str(config["configurable"]["user_id"]))


def _key(text: str) -> str:
    # Stable keys: remembering the same text twice updates one memory.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, text))


def memory_graph(
    store: BaseStore, mode: str, *, checkpointer: InMemorySaver | None = None
) -> CompiledStateGraph[State, None, State, State]:
    """remember -> recall, with nodes of the sync or the async kind."""
    if mode == "sync":

        def remember(state: State, config: RunnableConfig) -> State:
            if text := state.get("remember"):
                get_store().put(_namespace(config), _key(text), {"content": text})
            return {}

        def recall(state: State, config: RunnableConfig) -> State:
            if not (query := state.get("query")):
                return {"recalled": []}
            hits = get_store().search(_namespace(config), query=query, limit=3)
            return {"recalled": [hit.value["content"] for hit in hits]}

        builder = StateGraph(State).add_node("remember", remember).add_node("recall", recall)
    else:

        async def aremember(state: State, config: RunnableConfig) -> State:
            if text := state.get("remember"):
                await get_store().aput(_namespace(config), _key(text), {"content": text})
            return {}

        async def arecall(state: State, config: RunnableConfig) -> State:
            if not (query := state.get("query")):
                return {"recalled": []}
            hits = await get_store().asearch(_namespace(config), query=query, limit=3)
            return {"recalled": [hit.value["content"] for hit in hits]}

        builder = StateGraph(State).add_node("remember", aremember).add_node("recall", arecall)
    builder.add_edge(START, "remember").add_edge("remember", "recall").add_edge("recall", END)
    return builder.compile(store=store, checkpointer=checkpointer)


def user(user_id: str, thread_id: str | None = None) -> RunnableConfig:
    """The run config of one user (and thread, when a checkpointer is used)."""
    configurable: dict[str, Any] = {"user_id": user_id}
    if thread_id is not None:
        configurable["thread_id"] = thread_id
    return {"configurable": configurable}


async def test_nodes_write_and_read_memories(
    store: BaseStore, twin: Twin, twin_of: TwinOf, mode: str
) -> None:
    graph = twin_of(memory_graph(store, mode))
    for text in ("User likes tea", "User drives a car", "User plays jazz music"):
        out = await graph.invoke({"remember": text}, user("alice"))
        assert out == {"remember": text, "recalled": []}

    out = await graph.invoke({"query": "jazz music"}, user("alice"))
    assert out["recalled"][0] == "User plays jazz music"
    assert sorted(out["recalled"]) == [
        "User drives a car",
        "User likes tea",
        "User plays jazz music",
    ]

    # What the nodes wrote is in the store, where the nodes said.
    found = await twin.search(("memories", "alice"), limit=10)
    assert sorted(item.value["content"] for item in found) == sorted(out["recalled"])
    item = await twin.get(("memories", "alice"), _key("User likes tea"))
    assert item is not None
    assert item.value == {"content": "User likes tea"}

    # Remembering and recalling in one turn: the new memory is found by that turn.
    out = await graph.invoke({"remember": "User drinks coffee", "query": "coffee"}, user("alice"))
    assert out["recalled"][0] == "User drinks coffee"


async def test_each_user_recalls_only_their_own_memories(
    store: BaseStore, twin_of: TwinOf, mode: str
) -> None:
    graph = twin_of(memory_graph(store, mode))
    await graph.invoke({"remember": "Alice keeps a secret about Paris"}, user("alice"))
    await graph.invoke({"remember": "Bob likes Berlin"}, user("bob"))
    out = await graph.invoke({"query": "secret Paris"}, user("bob"))
    assert out["recalled"] == ["Bob likes Berlin"]
    out = await graph.invoke({"query": "Berlin"}, user("carol"))
    assert out["recalled"] == []


async def test_memories_outlive_the_thread(store: BaseStore, twin_of: TwinOf, mode: str) -> None:
    graph = twin_of(memory_graph(store, mode, checkpointer=InMemorySaver()))
    await graph.invoke({"remember": "User walks the dog at noon"}, user("alice", "thread-1"))
    out = await graph.invoke({"query": "dog"}, user("alice", "thread-2"))
    assert out["recalled"] == ["User walks the dog at noon"]
    # The checkpointer kept each thread's own state apart.
    graph_state = graph.obj.get_state(user("alice", "thread-1"))
    assert graph_state.values.get("remember") == "User walks the dog at noon"
    assert "remember" not in graph.obj.get_state(user("alice", "thread-2")).values


async def test_langmem_tools_in_a_node_use_the_compiled_store(
    store: BaseStore, twin: Twin, twin_of: TwinOf, mode: str
) -> None:
    # No store handed to the tools: they find the graph's store through the run context.
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    if mode == "sync":

        def agent(state: State) -> State:
            if text := state.get("remember"):
                manage.invoke({"content": text})
            found = json.loads(search.invoke({"query": state.get("query") or "anything"}))
            return {"recalled": [f["value"]["content"] for f in found]}

        builder = StateGraph(State).add_node("agent", agent)
    else:

        async def aagent(state: State) -> State:
            if text := state.get("remember"):
                await manage.ainvoke({"content": text})
            found = json.loads(await search.ainvoke({"query": state.get("query") or "anything"}))
            return {"recalled": [f["value"]["content"] for f in found]}

        builder = StateGraph(State).add_node("agent", aagent)
    graph = twin_of(builder.add_edge(START, "agent").add_edge("agent", END).compile(store=store))
    config: RunnableConfig = {"configurable": {"langgraph_user_id": "alice"}}

    await graph.invoke({"remember": "User likes tea"}, config)
    out = await graph.invoke({"remember": "User plays jazz music", "query": "jazz"}, config)
    assert out["recalled"][0] == "User plays jazz music"
    assert sorted(out["recalled"]) == ["User likes tea", "User plays jazz music"]
    stored = await twin.search(("memories", "alice"))
    assert sorted(item.value["content"] for item in stored) == sorted(out["recalled"])
