"""Memory for a user's own agent: a view node before the model, a save node after it."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.graph import memory_save_node, memory_view_node

from .fakes import FACTS, BrokenStore, PromptRecorder, scripted


class AgentState(MessagesState):
    llm_input_messages: list[AnyMessage]


def _agent(model: Any, memory: ChatMemory, **compile_kwargs: Any) -> Any:
    """A small agent of its own, given memory by adding two nodes and two edges."""

    async def acall_model(state: AgentState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["llm_input_messages"])]}

    def call_model(state: AgentState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["llm_input_messages"])]}

    builder = StateGraph(AgentState)
    builder.add_node("memory_view", memory_view_node(memory))
    builder.add_node("agent", RunnableLambda(call_model, afunc=acall_model))
    builder.add_node("memory_save", memory_save_node(memory))
    builder.add_edge(START, "memory_view")
    builder.add_edge("memory_view", "agent")
    builder.add_edge("agent", "memory_save")
    builder.add_edge("memory_save", END)
    return builder.compile(**compile_kwargs)


async def _turn(graph: Any, runner: str, messages: list[Any], config: RunnableConfig) -> Any:
    payload = {"messages": messages}
    if runner == "invoke":
        return graph.invoke(payload, config)
    if runner == "ainvoke":
        return await graph.ainvoke(payload, config)
    last: Any = None
    async for value in graph.astream(payload, config, stream_mode="values"):
        last = value
    return last


async def test_two_nodes_give_an_agent_tiered_memory(
    store: TieredMemoryStore, settings: Settings, runner: str
) -> None:
    memory = ChatMemory(store, settings=settings)
    model = scripted("Noted.", "Noted.", "Tea, Jordan.")
    graph = _agent(model, memory, checkpointer=InMemorySaver())
    recorder = PromptRecorder()
    config: RunnableConfig = {
        "configurable": {"thread_id": "s1", "user_id": "u1"},
        "callbacks": [recorder],
    }
    await _turn(graph, runner, [SystemMessage("You are Ada."), HumanMessage(FACTS)], config)
    await _turn(graph, runner, [HumanMessage("I prefer tea over coffee.")], config)
    out = await _turn(graph, runner, [HumanMessage("What do I drink?")], config)

    stored = memory.memory("s1", "u1").raw_messages()
    assert [(m.id, m.content) for m in stored] == [
        ("m1", FACTS),
        ("m2", "Noted."),
        ("m3", "I prefer tea over coffee."),
        ("m4", "Noted."),
        ("m5", "What do I drink?"),
        ("m6", "Tea, Jordan."),
    ]
    # Every message of the thread is marked saved (the system prompt is not stored).
    marks = [
        m.response_metadata.get("langmem_tiers", {}).get("message_id") for m in out["messages"]
    ]
    assert marks == [None, "m1", "m2", "m3", "m4", "m5", "m6"]
    # The third call saw the agent's prompt, the tiered history and the new message raw.
    seen = recorder.prompts[2]
    assert seen[0].type == "system"
    assert seen[0].text.startswith("You are Ada.")
    assert "m1 (user, t1), m2 (assistant, t1), m3 (user, t3), m4 (assistant, t3)" in seen[0].text
    tier1 = {r.id: r.tier1 for r in memory.memory("s1", "u1").records()}
    assert [m.content for m in seen[1:]] == [
        f"[m1|t1] {tier1['m1']}",
        f"[m2|t1] {tier1['m2']}",
        "[m3|t3] I prefer tea over coffee.",
        "[m4|t3] Noted.",
        "What do I drink?",
    ]
    assert out["llm_input_messages"][-1].content == "What do I drink?"


async def test_user_context_reaches_an_agent_in_a_new_session(
    store: TieredMemoryStore, settings: Settings, runner: str
) -> None:
    memory = ChatMemory(store, settings=settings)
    graph = _agent(scripted("Noted.", "Tea."), memory)
    await _turn(
        graph,
        runner,
        [HumanMessage("I prefer tea over coffee.")],
        {"configurable": {"thread_id": "a", "user_id": "u1"}},
    )
    out = await _turn(
        graph,
        runner,
        [HumanMessage("Drinks?")],
        {"configurable": {"thread_id": "b", "user_id": "u1"}},
    )
    system = out["llm_input_messages"][0]
    assert "- The user prefers tea." in system.text


async def test_store_from_the_compiled_graph(settings: Settings, runner: str) -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=settings) as store:
        memory = ChatMemory(settings=settings)  # no store: get_store() at run time
        graph = _agent(scripted("Noted."), memory, store=store)
        config: RunnableConfig = {"configurable": {"thread_id": "s1", "user_id": "u1"}}
        await _turn(graph, runner, [HumanMessage("I prefer tea over coffee.")], config)
        assert store.get(namespace_for("u1", "procedural"), "preference:prefers:tea") is not None


async def test_the_save_node_consolidates_when_the_window_says_so(
    store: TieredMemoryStore, runner: str
) -> None:
    tight = Settings(context_token_limit=40, context_token_buffer=10, min_messages_kept=2)
    memory = ChatMemory(store, settings=tight)
    graph = _agent(scripted("Noted, the library in Porto.", "Noted."), memory)
    config: RunnableConfig = {"configurable": {"thread_id": "s1", "user_id": "u1"}}
    await _turn(
        graph,
        runner,
        [HumanMessage("The venue for the offsite is the old library in Porto, booked for June 4.")],
        config,
    )
    await _turn(graph, runner, [HumanMessage("Also, I like green tea in the morning.")], config)
    assert [r.id for r in memory.memory("s1", "u1").records()] == ["m3", "m4"]
    assert store.get(namespace_for("u1", "episodic"), "episode:s1:m1") is not None


async def test_long_term_memory_down_the_agent_still_answers(
    store: TieredMemoryStore, settings: Settings, runner: str
) -> None:
    memory = ChatMemory(BrokenStore(store), settings=settings)
    graph = _agent(scripted("Fine."), memory)
    out = await _turn(
        graph, runner, [HumanMessage("I prefer tea.")], {"configurable": {"thread_id": "s1"}}
    )
    assert out["messages"][-1].content == "Fine."
    assert [m.content for m in memory.memory("s1").raw_messages()] == ["I prefer tea.", "Fine."]


def test_save_node_needs_message_ids(store: TieredMemoryStore, settings: Settings) -> None:
    # Without add_messages a message has no id, so the saved mark could not replace it.
    memory = ChatMemory(store, settings=settings)
    node = memory_save_node(memory)
    with pytest.raises(ConfigurationError, match="add_messages"):
        node.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "s1"}})
