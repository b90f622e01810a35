"""TieredMemoryMiddleware inside LangChain's create_agent: view, saving, tools, markers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import SearchOp
from langgraph.store.memory import InMemoryStore

from langmem_tiers import TieredMemoryMiddleware, TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.conversation import FALLBACK_ANSWER
from langmem_tiers.errors import ConfigurationError, InvalidNamespaceError
from langmem_tiers.graph.middleware import SAVED_KEY
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.short_term.log import InMemoryMessageLog
from langmem_tiers.tiers.tokens import count_message_tokens

from .fakes import FACTS, BrokenStore, PromptRecorder, ToolCallingFake, run_turn, tool_call

# These specs exercise requests for tiered lines: the seed's eager view shows them at once
# (the default budget policy keeps a short session raw; see test_context_policy.py).
EAGER = Settings(context_policy="eager")

WORDS = [
    "amber",
    "basalt",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "juniper",
]


def _fact(i: int) -> str:
    """A distinct user statement for turn ``i`` (its code word appears nowhere else)."""
    return (
        f"Note {i}: the courier for parcel {i} is called {WORDS[i % 10].title()}{i} and "
        f"the parcel weighs {i + 3} kilograms, packed in crate {i * 7}."
    )


def _config(thread: str, recorder: PromptRecorder, user: str = "u1") -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "user_id": user}, "callbacks": [recorder]}


async def _turn(agent: Any, runner: str, text: str, config: RunnableConfig) -> dict[str, Any]:
    # An agent's input is its messages: the session and the user come from the config.
    return await run_turn(agent, runner, text, session_id=None, user_id=None, config=config)


def _model(*outputs: str | AIMessage) -> ToolCallingFake:
    return ToolCallingFake(messages=iter(outputs))


@pytest.fixture
def store() -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=Settings()) as opened:
        yield opened


def _agent(model: Any, store: Any, **kwargs: Any) -> tuple[Any, TieredMemoryMiddleware]:
    kwargs.setdefault("settings", EAGER)
    middleware = TieredMemoryMiddleware(**kwargs)
    agent = create_agent(model, middleware=[middleware], store=store, checkpointer=InMemorySaver())
    return agent, middleware


# -- 200 turns: budget, nothing lost, one call per turn -----------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["invoke", "ainvoke"])
async def test_200_turns_stay_within_budget_and_lose_no_message(
    store: TieredMemoryStore, runner: str
) -> None:
    turns = 200
    budget = 1_500
    model = _model(*[f"Noted, parcel {i}." for i in range(turns)])
    # The default budget policy: older messages lowered only as the budget requires.
    agent, middleware = _agent(model, store, token_budget=budget, settings=Settings())
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    for i in range(turns):
        out = await _turn(agent, runner, _fact(i), config)

    # One model call per turn, no extra ones.
    assert len(recorder.prompts) == turns
    # Every prompt stays within the budget, though the thread is far over it.
    sizes = [count_message_tokens(prompt) for prompt in recorder.prompts]
    assert max(sizes) <= budget
    assert count_message_tokens(out["messages"]) > 5 * budget
    # The checkpointed messages are all there, as sent: never rewritten.
    sent = [m.content for m in out["messages"] if m.type == "human"]
    assert sent == [_fact(i) for i in range(turns)]
    assert [m.content for m in out["messages"] if m.type == "ai"] == [
        f"Noted, parcel {i}." for i in range(turns)
    ]
    assert SAVED_KEY not in out  # private: not in the agent's output
    # Every message is in the thread's short-term memory or archived as an episode.
    memory = middleware.memory(store)
    window = {r.text for r in memory.memory("t1", "u1").records()}
    archived = {
        str(item.value.get("content"))
        for item in store.search(namespace_for("u1", "episodic"), limit=10_000)
    }
    every = {*sent, *(f"Noted, parcel {i}." for i in range(turns))}
    assert every <= window | archived
    assert archived, "the window overflowed, so the oldest exchanges were archived"
    # An archived message is found by the episodic search the model can run.
    found = memory.search_episodic("t1", "u1", "courier for parcel 3 Dune3")
    assert any("called Dune3 and" in line for line in found.lines)
    # The newest turns are in the last prompt, the oldest were left to the archive.
    last = recorder.text(-1)
    assert _fact(turns - 1) in last
    assert "called Amber0 and" not in last


# -- asking for more: tools ------------------------------------------------------------------


async def test_a_tool_request_raises_the_tier_for_this_and_later_turns(
    store: TieredMemoryStore, runner: str
) -> None:
    model = _model(
        "Noted.",
        "Noted.",
        tool_call("request_tier", "c1", message_id="m1", level=3),
        "The budget is 40,000 euros.",
        "Anything else?",
    )
    agent, middleware = _agent(model, store)
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    await _turn(agent, runner, FACTS, config)
    await _turn(agent, runner, "We meet on Fridays.", config)
    out = await _turn(agent, runner, "What is the budget?", config)

    assert out["messages"][-1].content == "The budget is 40,000 euros."
    assert len(recorder.prompts) == 4  # three turns, one call after the tool
    assert "[m1|t1]" in recorder.text(2)
    assert "the budget is 40,000 euros" not in recorder.text(2)
    assert "[m1|t3]" in recorder.text(3)
    assert "40,000 euros" in recorder.text(3)
    assert model.bound_tools == ["request_tier", "search_episodic"]
    tool_reply = out["messages"][-2]
    assert tool_reply.type == "tool"
    assert "m1 is now shown at tier 3" in tool_reply.content
    records = middleware.memory(store).memory("t1", "u1").records()
    assert records[0].required_tier_level == 3
    await _turn(agent, runner, "Thanks.", config)
    assert "[m1|t3]" in recorder.text(4)  # the raised tier persists


async def test_a_request_for_an_unknown_message_is_refused_not_crashed_on(
    store: TieredMemoryStore,
) -> None:
    model = _model(tool_call("request_tier", "c1", message_id="m99"), "I could not find it.")
    agent, _ = _agent(model, store)
    out = agent.invoke({"messages": [("user", "What was m99?")]}, _config("t1", PromptRecorder()))
    assert out["messages"][-2].content.startswith("Refused:")
    assert out["messages"][-1].content == "I could not find it."


async def test_search_episodic_tool_finds_archived_messages(store: TieredMemoryStore) -> None:
    turns = 30
    outputs: list[str | AIMessage] = [f"Noted, parcel {i}." for i in range(turns)]
    outputs += [tool_call("search_episodic", "c1", query="courier Cedar2"), "It is Cedar2."]
    agent, _ = _agent(_model(*outputs), store, token_budget=600)
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    for i in range(turns):
        agent.invoke({"messages": [("user", _fact(i))]}, config)
    assert "Cedar2 and" not in recorder.text(-1), "the message left the view"
    out = agent.invoke({"messages": [("user", "Who is the courier of parcel 2?")]}, config)
    assert "called Cedar2 and" in out["messages"][-2].content  # the tool's answer
    assert out["messages"][-1].content == "It is Cedar2."
    assert len(recorder.prompts) == turns + 2


async def test_memory_tools_are_withdrawn_at_the_bound(store: TieredMemoryStore) -> None:
    model = _model(
        "Noted.",
        "Noted.",
        tool_call("request_tier", "c1", message_id="m1", level=2),
        "Here it is.",
    )

    def lookup(city: str) -> str:
        """The weather of a city."""
        return f"Sunny in {city}."

    middleware = TieredMemoryMiddleware(settings=EAGER.replace(max_regenerations=1))
    agent = create_agent(model, tools=[lookup], middleware=[middleware], store=store)
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    agent.invoke({"messages": [("user", FACTS)]}, config)
    agent.invoke({"messages": [("user", "We meet on Fridays.")]}, config)
    agent.invoke({"messages": [("user", "What is the budget?")]}, config)
    assert len(recorder.prompts) == 4
    assert model.bound_tools == ["lookup"]  # the last call could not ask for more
    assert "You have used the 1 memory requests of this turn" in recorder.text(3)


# -- asking for more: markers ----------------------------------------------------------------


async def test_markers_regenerate_within_one_model_step(
    store: TieredMemoryStore, runner: str
) -> None:
    model = _model(
        "Noted.",
        "Noted.",
        "Let me look. [REQUEST_TIER:3:m1]",
        "The budget is 40,000 euros.",
    )
    agent, middleware = _agent(model, store, mode="markers")
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    await _turn(agent, runner, FACTS, config)
    await _turn(agent, runner, "We meet on Fridays.", config)
    out = await _turn(agent, runner, "What is the budget?", config)

    assert len(recorder.prompts) == 4
    assert "[m1|t3]" in recorder.text(3)
    assert "40,000 euros" in recorder.text(3)
    assert [m.type for m in out["messages"]] == ["human", "ai"] * 3  # no tool messages
    assert out["messages"][-1].content == "The budget is 40,000 euros."
    assert middleware.tools == []
    assert middleware.memory(store).memory("t1", "u1").records()[0].required_tier_level == 3


async def test_markers_are_bounded_and_never_shown(store: TieredMemoryStore) -> None:
    model = _model("[REQUEST_TIER:3:m1]", "[SEARCH_EPISODIC: budget]", "[REQUEST_TIER:2:m1]")
    middleware = TieredMemoryMiddleware(mode="markers", settings=EAGER.replace(max_regenerations=2))
    agent = create_agent(model, middleware=[middleware], store=store)
    recorder = PromptRecorder()
    out = agent.invoke({"messages": [("user", "What is the budget?")]}, _config("t1", recorder))
    assert len(recorder.prompts) == 3  # one call and two regenerations
    assert out["messages"][-1].content == FALLBACK_ANSWER
    assert "Your search for 'budget' found nothing." in recorder.text(2)


@pytest.mark.parametrize("mode", ["tools", "markers"])
async def test_a_failed_search_is_told_to_the_model_as_failed(mode: str) -> None:
    store = BrokenStore(InMemoryStore(), failing=(SearchOp,))
    asks = (
        tool_call("search_episodic", "c1", query="budget")
        if mode == "tools"
        else "[SEARCH_EPISODIC: budget]"
    )
    agent, _ = _agent(_model(asks, "I could not look it up."), store, mode=mode)
    recorder = PromptRecorder()
    out = agent.invoke({"messages": [("user", "What is the budget?")]}, _config("t1", recorder))
    assert "The search for 'budget' failed; answer without it." in recorder.text(1)
    assert "found nothing" not in recorder.text(1)
    assert out["messages"][-1].content == "I could not look it up."


async def test_a_marker_the_user_typed_is_text(store: TieredMemoryStore) -> None:
    model = _model("Noted.", "Noted.", "Sure.")
    agent, middleware = _agent(model, store, mode="markers")
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    agent.invoke({"messages": [("user", FACTS)]}, config)
    agent.invoke({"messages": [("user", "We meet on Fridays.")]}, config)
    agent.invoke({"messages": [("user", "Show me [REQUEST_TIER:3:m1] please.")]}, config)
    assert len(recorder.prompts) == 3
    assert middleware.memory(store).memory("t1", "u1").records()[0].required_tier_level == 1


# -- long-term memory: the user's facts in a new thread ------------------------------------


async def test_the_users_facts_come_back_in_a_new_thread(
    store: TieredMemoryStore, runner: str
) -> None:
    model = _model("Noted.", "Noted.", "Noted again.", "You prefer green tea.")
    agent, _ = _agent(model, store)
    recorder = PromptRecorder()
    await _turn(agent, runner, "I prefer green tea.", _config("t1", recorder))
    await _turn(agent, runner, FACTS, _config("t1", recorder))
    await _turn(agent, runner, FACTS, _config("t1", recorder))  # said twice: stored once
    out = await _turn(agent, runner, "What do I prefer?", _config("t2", recorder))

    assert out["messages"][-1].content == "You prefer green tea."
    assert [m.type for m in out["messages"]] == ["human", "ai"]  # a new thread
    prompt = recorder.text(3)
    assert "The user prefers green tea." in prompt
    assert "deadline for RAI Chat" in prompt
    engine = MemoryEngine(store)
    facts = [m for m in engine.memories("u1", kinds="semantic") if m.category == "user_fact"]
    assert len(facts) == 1  # the engine's duplicate check kept one
    assert facts[0].value["session_id"] == "t1"
    assert engine.get_procedural("u1", "preference:prefers:green-tea") is not None
    assert engine.timeline("u1"), "every write left an event"
    # Another user sees none of it.
    other = PromptRecorder()
    agent2, _ = _agent(_model("Hello."), store)
    await _turn(agent2, runner, "What do I prefer?", _config("t3", other, user="u2"))
    assert "green tea" not in other.text(0)


async def test_the_user_comes_from_the_run_context(store: TieredMemoryStore) -> None:
    agent, _ = _agent(_model("Noted.", "You prefer green tea."), store)
    recorder = PromptRecorder()
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}, "callbacks": [recorder]}
    agent.invoke({"messages": [("user", "I prefer green tea.")]}, config, context={"user_id": "al"})
    config = {"configurable": {"thread_id": "t2"}, "callbacks": [recorder]}
    agent.invoke({"messages": [("user", "What do I prefer?")]}, config, context={"user_id": "al"})
    assert "The user prefers green tea." in recorder.text(1)
    assert store.search(namespace_for("al", "procedural"))


async def test_the_checkpoint_keeps_messages_and_what_was_saved(store: TieredMemoryStore) -> None:
    agent, _ = _agent(_model("Noted.", "Fine."), store)
    config = _config("t1", PromptRecorder())
    first = agent.invoke({"messages": [("user", FACTS)]}, config)
    second = agent.invoke({"messages": [("user", "Hello again.")]}, config)
    assert [m.id for m in second["messages"][:2]] == [m.id for m in first["messages"]]
    saved = agent.get_state(config).values[SAVED_KEY]
    assert list(saved.values()) == ["m1", "m2", "m3", "m4"]


async def test_any_base_store_works_with_plain_puts() -> None:
    store = InMemoryStore()
    middleware = TieredMemoryMiddleware(log=InMemoryMessageLog(), settings=EAGER)
    agent = create_agent(_model("Noted.", "You prefer tea."), middleware=[middleware], store=store)
    recorder = PromptRecorder()
    agent.invoke({"messages": [("user", "I prefer tea.")]}, _config("t1", recorder))
    agent.invoke({"messages": [("user", "What do I prefer?")]}, _config("t2", recorder))
    assert "The user prefers tea." in recorder.text(1)


async def test_long_term_memory_down_the_agent_still_answers_and_keeps_messages(
    runner: str,
) -> None:
    store = BrokenStore(InMemoryStore())
    middleware = TieredMemoryMiddleware(log=InMemoryMessageLog(), settings=EAGER)
    model = _model("Noted.", "Fine.")
    agent = create_agent(model, middleware=[middleware], store=store)
    recorder = PromptRecorder()
    await _turn(agent, runner, "I prefer green tea.", _config("t1", recorder))
    out = await _turn(agent, runner, "And coffee in the morning.", _config("t1", recorder))
    assert out["messages"][-1].content == "Fine."
    assert store.calls >= 2  # the searches and the writes failed
    stored = [r.text for r in middleware.memory(store).memory("t1", "u1").records()]
    assert stored == ["I prefer green tea.", "Noted.", "And coffee in the morning.", "Fine."]


# -- configuration errors ----------------------------------------------------------------------


def test_a_store_that_was_not_opened_is_refused_at_once() -> None:
    unopened = TieredMemoryStore.from_url("sqlite:///:memory:")
    with pytest.raises(
        ConfigurationError, match=r"context manager.*with TieredMemoryStore\.from_url"
    ):
        TieredMemoryMiddleware(unopened)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"must be a LangGraph BaseStore.*dict"):
        TieredMemoryMiddleware({})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="mode must be"):
        TieredMemoryMiddleware(mode="magic")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="token_budget"):
        TieredMemoryMiddleware(token_budget=10)


def test_an_agent_without_a_store_or_thread_is_told_how_to_fix_it(
    store: TieredMemoryStore,
) -> None:
    agent = create_agent(_model("Hi."), middleware=[TieredMemoryMiddleware()])
    with pytest.raises(ConfigurationError, match="create_agent\\(\\.\\.\\., store=store\\)"):
        agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
    agent = create_agent(_model("Hi."), middleware=[TieredMemoryMiddleware(store)])
    with pytest.raises(InvalidNamespaceError, match="thread_id"):
        agent.invoke({"messages": [("user", "hi")]})


# -- PostgreSQL ----------------------------------------------------------------------------------


@pytest.mark.postgres
async def test_on_postgres_with_the_engine(postgres_url: str) -> None:
    async with TieredMemoryStore.afrom_url(postgres_url, settings=Settings()) as store:
        model = _model(
            "Noted.",
            "Noted.",
            tool_call("request_tier", "c1", message_id="m1", level=3),
            "The budget is 40,000 euros.",
            "You prefer green tea.",
        )
        agent, _ = _agent(model, store)
        recorder = PromptRecorder()
        config = _config("t1", recorder)
        await agent.ainvoke({"messages": [("user", FACTS + " I prefer green tea.")]}, config)
        await agent.ainvoke({"messages": [("user", "We meet on Fridays.")]}, config)
        out = await agent.ainvoke({"messages": [("user", "What is the budget?")]}, config)
        assert out["messages"][-1].content == "The budget is 40,000 euros."
        assert "[m1|t3]" in recorder.text(3)
        await agent.ainvoke({"messages": [("user", "What do I prefer?")]}, _config("t2", recorder))
        assert "The user prefers green tea." in recorder.text(4)


# -- hostile messages: each saved or refused on its own ----------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[TieredMemoryStore]:
    """A TieredMemoryStore on each SQL backend."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'memory.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    with TieredMemoryStore.from_url(url, settings=Settings()) as opened:
        yield opened


@pytest.mark.parametrize("runner", ["invoke", "ainvoke"])
async def test_a_nul_byte_never_holds_back_the_threads_memory(
    any_store: TieredMemoryStore, runner: str, caplog: pytest.LogCaptureFixture
) -> None:
    def echo(text: str) -> str:
        """Repeat the text."""
        return f"echo: {text}"

    outputs: list[str | AIMessage] = ["Hello.", "Noted."]
    outputs += [tool_call("echo", "c1", text="bad\x00args"), "Echoed."]
    outputs += [f"Answer {i}." for i in range(4)]
    middleware = TieredMemoryMiddleware(settings=Settings())
    agent = create_agent(
        _model(*outputs),
        tools=[echo],
        middleware=[middleware],
        store=any_store,
        checkpointer=InMemorySaver(),
    )
    recorder = PromptRecorder()
    config = _config("t1", recorder)
    await _turn(agent, runner, "Hi, I am Jordan and I live in Lisbon.", config)
    await _turn(agent, runner, "abc\x00def", config)
    await _turn(agent, runner, "Please echo something.", config)
    for i in range(4):
        await _turn(agent, runner, f"Message {i}: my parcel {i} weighs {i + 3} kilograms.", config)
    stored = [r.text for r in middleware.memory(any_store).memory("t1", "u1").records()]
    # Every message but the two with NUL bytes (the user's and the tool call's) and the
    # tool's answer that repeats it.
    assert stored[:3] == ["Hi, I am Jordan and I live in Lisbon.", "Hello.", "Noted."]
    assert "Please echo something." in stored
    assert "Echoed." in stored
    assert stored[-2:] == ["Message 3: my parcel 3 weighs 6 kilograms.", "Answer 3."]
    assert len(stored) == 3 + 2 + 8
    assert not any("\x00" in text for text in stored)
    saved = agent.get_state(config).values[SAVED_KEY]
    assert list(saved.values()).count("") >= 2  # refused once, never retried
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert any("NUL" in line and "human" in line for line in refusals)
    assert any("NUL" in line and "ai" in line for line in refusals)
    # Later prompts carry the saved messages at their tier, not every message in full.
    assert "abc\x00def" not in recorder.text(-1)
    # The user's later facts reached long-term memory.
    found = any_store.search(namespace_for("u1", "semantic"), query="parcel 3 kilograms")
    assert any("parcel 3" in str(item.value.get("content")) for item in found)
