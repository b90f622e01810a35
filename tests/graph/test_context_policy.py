"""The chat graph and the agent nodes under the default budget policy and the eager setting.

Whatever the policy, the model is told what tiered lines mean and how to ask for more
exactly when its prompt shows some, and the explanation is given once.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.graph import build_tiered_chat_graph
from langmem_tiers.graph.agent import memory_save_node, memory_view_node
from langmem_tiers.graph.prompts import render_system_prompt
from langmem_tiers.short_term.context import TIER_NOTE, is_tiered_line

from .fakes import FACTS, PromptRecorder, run_turn, scripted

LONG = " ".join(
    [
        "For the record: the venue is the Harbor Street Library, the launch is on May 4, the",
        "budget is 12,000 euros, and Priya Nair designs the screens with Tomas Berg. The beta",
        "starts on March 23 with twelve volunteers, the accessibility audit is on April 8, the",
        "contingency is 600 euros, backups run every night at 02:00, login uses magic links by",
        "email, and the coordinator calendar can be printed from the browser for the launch.",
    ]
)


TURNS = [FACTS, LONG, "Once more: " + LONG, "And again: " + LONG]


def _graph(model: Any, store: TieredMemoryStore, settings: Settings) -> Any:
    memory = ChatMemory(store, settings=settings)
    return build_tiered_chat_graph(model, store=store, memory=memory)


async def _third_prompt(store: TieredMemoryStore, settings: Settings, runner: str) -> list[Any]:
    graph = _graph(scripted(*["Noted."] * len(TURNS), "It is May 4."), store, settings)
    for text in TURNS:
        await run_turn(graph, runner, text)
    recorder = PromptRecorder()
    out = await run_turn(graph, runner, "When is the launch?", config={"callbacks": [recorder]})
    assert out["answer"] == "It is May 4."
    assert len(recorder.prompts) == 1  # one model call
    return recorder.prompts[0]


async def test_by_default_a_short_session_is_sent_raw_with_no_tier_guide(
    store: TieredMemoryStore, runner: str
) -> None:
    system, *view, question = await _third_prompt(store, Settings(), runner)
    assert [m.content for m in view] == [part for text in TURNS for part in (text, "Noted.")]
    assert question.content == "When is the launch?"
    assert "REQUEST_TIER" not in system.text
    assert "[m12|t1]" not in system.text
    assert "[SEARCH_EPISODIC:" in system.text


async def test_lowered_lines_are_explained_once_and_listed(
    store: TieredMemoryStore, runner: str
) -> None:
    settings = Settings(context_soft_budget=300)
    system, *view, _ = await _third_prompt(store, settings, runner)
    tiered = [m for m in view if is_tiered_line(m)]
    # The older user messages are lowered; the short answers would cost as much tiered and
    # the newest two are kept raw.
    assert [m.id for m in tiered] == ["m1", "m3", "m5"]
    assert view[-1].content == "Noted."  # the newest stay raw
    assert "[REQUEST_TIER:3:<id>]" in system.text
    listed = system.text.split("Shown this way: ")[1].split("\n")[0]
    assert listed == ", ".join(
        f"{m.id} ({'user' if m.type == 'human' else 'assistant'}, "
        f"t{m.response_metadata['langmem_tiers']['tier']})"
        for m in tiered
    )
    assert TIER_NOTE not in system.text  # the view's own note is replaced by the guide


async def test_the_eager_setting_tiers_every_older_message(
    store: TieredMemoryStore, runner: str
) -> None:
    system, *view, _ = await _third_prompt(store, Settings(context_policy="eager"), runner)
    assert [m.content[:8] for m in view] == [
        "[m1|t1] ",
        "[m2|t1] ",
        "[m3|t1] ",
        "[m4|t1] ",
        "[m5|t1] ",
        "[m6|t1] ",
        "[m7|t3] ",
        "[m8|t3] ",
    ]
    assert "m1 (user, t1), m2 (assistant, t1), m3 (user, t1)" in system.text
    assert "[REQUEST_TIER:3:<id>]" in system.text


def test_a_custom_prompt_without_the_placeholders_still_gets_the_guide() -> None:
    tiered = HumanMessage(
        "[m1|t1] a=b", response_metadata={"langmem_tiers": {"message_id": "m1", "tier": 1}}
    )
    raw = HumanMessage(
        "a is b", response_metadata={"langmem_tiers": {"message_id": "m1", "labelled": False}}
    )
    assert "[REQUEST_TIER:3:<id>]" in render_system_prompt("Be brief.", context=[tiered])
    assert render_system_prompt("Be brief.", context=[raw]) == "Be brief."


async def test_the_agent_nodes_add_no_memory_prompt_when_there_is_nothing_to_say(
    store: TieredMemoryStore,
) -> None:
    class State(MessagesState):
        llm_input_messages: list[Any]

    memory = ChatMemory(store, settings=Settings())
    model = scripted("Noted.", "Noted.")
    builder = StateGraph(State)
    builder.add_node("memory_view", memory_view_node(memory))
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["llm_input_messages"])]})
    builder.add_node("memory_save", memory_save_node(memory))
    builder.add_edge(START, "memory_view")
    builder.add_edge("memory_view", "agent")
    builder.add_edge("agent", "memory_save")
    builder.add_edge("memory_save", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "a1", "user_id": "a1"}}
    graph.invoke({"messages": [SystemMessage("You are Ada."), HumanMessage("Hi.")]}, config)
    out = graph.invoke({"messages": [HumanMessage("Still here.")]}, config)
    sent = out["llm_input_messages"]
    assert sent[0].text == "You are Ada."  # the agent's own prompt only
    assert [m.content for m in sent[1:]] == ["Hi.", "Noted.", "Still here."]


async def test_the_middleware_explains_tiers_only_when_it_shows_them(
    store: TieredMemoryStore,
) -> None:
    from langchain.agents import create_agent

    from langmem_tiers import TieredMemoryMiddleware

    from .fakes import ToolCallingFake

    def agent(settings: Settings, thread: str) -> tuple[Any, PromptRecorder, RunnableConfig]:
        model = ToolCallingFake(messages=iter(["Noted."] * len(TURNS) + ["It is May 4."]))
        middleware = TieredMemoryMiddleware(settings=settings)
        built = create_agent(
            model, middleware=[middleware], store=store, checkpointer=InMemorySaver()
        )
        recorder = PromptRecorder()
        config: RunnableConfig = {
            "configurable": {"thread_id": thread, "user_id": thread},
            "callbacks": [recorder],
        }
        for text in [*TURNS, "When is the launch?"]:
            built.invoke({"messages": [HumanMessage(text)]}, config)
        return built, recorder, config

    _, recorder, _ = agent(Settings(), "raw")
    system, *sent = recorder.prompts[-1]
    assert [m.content for m in sent[:-1]] == [p for text in TURNS for p in (text, "Noted.")]
    assert "request_tier tool" not in system.text
    assert "[m12|t1]" not in system.text
    _, recorder, _ = agent(Settings(context_soft_budget=300), "lowered")
    system, *sent = recorder.prompts[-1]
    assert [m.id for m in sent if str(m.content).startswith(f"[{m.id}|t")] == ["m1", "m3", "m5"]
    assert "call the request_tier tool with its id" in system.text
    assert TIER_NOTE not in system.text  # explained once, in the middleware's own words
