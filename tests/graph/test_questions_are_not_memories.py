"""A question, a request or a hypothetical states no fact about the user, on every surface.

The README's two-thread example ("I prefer green tea." in one thread, questions in the
next) through the middleware, the chat graph, the chat history, ``ingest`` and MCP: the
one preference stored is green tea, and the follow-up's prompt shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from mcp import Client

from langmem_tiers import (
    OfflineChatModel,
    TieredChatMessageHistory,
    TieredMemoryMiddleware,
    TieredMemoryStore,
    build_tiered_chat_graph,
    namespace_for,
)
from langmem_tiers.cli import main
from langmem_tiers.conversation.facts import extract_memories
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.server.mcp import PREFERENCES_URI, build_mcp_server
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers import OfflineTierer
from langmem_tiers.tiers.extraction import Fact
from langmem_tiers.tiers.statements import exchange_statements, is_statement, stated_facts

from .fakes import PromptRecorder

STATED = "I prefer green tea."
FOLLOW_UPS = [
    "What do I like to drink?",
    "Do I like coffee?",
    "Should I move to Lisbon?",
    "What should I have for breakfast?",
    "what do I like to eat",  # no question mark
    "What if I moved to Porto and liked surfing?",
    "Please remember that I like jazz?",
]
ONLY = ["The user prefers green tea."]


def _memories(store: TieredMemoryStore, user: str) -> dict[str, list[str]]:
    return {
        kind: sorted(
            str(item.value.get("content"))
            for item in store.search(namespace_for(user, kind), limit=100)
        )
        for kind in ("semantic", "procedural")
    }


@pytest.mark.parametrize(
    "sentence",
    [*FOLLOW_UPS, "Is my budget 40 euros", "Suppose I quit my job.", "Imagine I lived in Rome."],
)
def test_questions_requests_and_hypotheticals_are_not_statements(sentence: str) -> None:
    assert not is_statement(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        STATED,
        "What I need is a quiet desk.",
        "When I was a kid I lived in Porto.",
        "How I did it was by cycling to work.",
        "If the budget is approved, we ship on May 4.",
        "I like jazz.",
    ],
)
def test_statements_are_statements(sentence: str) -> None:
    assert is_statement(sentence)


def test_the_offline_tierer_s_facts_of_a_question_are_not_stated() -> None:
    tierer = OfflineTierer()
    for question in FOLLOW_UPS:
        tiers = tierer.tier_text(question)
        assert stated_facts(question, _facts(tiers.tier1)) == [], (question, tiers.tier1)
    mixed = "I prefer green tea. Do I like coffee?"
    assert stated_facts(mixed, _facts(tierer.tier_text(mixed).tier1)) == [
        Fact("prefers", "green tea")
    ]


def _facts(tier1: str) -> list[Fact]:
    from langmem_tiers.tiers import parse_tier1

    return parse_tier1(tier1)


def test_extract_memories_keeps_the_statement_s_preference_only() -> None:
    text = "I prefer green tea. Do I like coffee? What should I have for breakfast?"
    record = MessageRecord("m1", 1, "human", text, OfflineTierer().tier_text(text).tier1, "")
    found = extract_memories([record])
    assert [p.memory_key for p in found.preferences] == ["preference:prefers:green-tea"]
    assert found.facts == []


def test_a_reply_to_a_question_without_its_mark_states_no_fact() -> None:
    reply = "I'll book you a table at the cafe for Friday."
    assert exchange_statements("what should I have for breakfast", reply).reply == []
    assert exchange_statements("I need a table.", reply).reply != []


def _engine_preferences(store: TieredMemoryStore, user: str) -> dict[str, Any]:
    """``memory://preferences`` as an MCP client reads it."""

    async def read() -> dict[str, Any]:
        server = build_mcp_server(MemoryEngine(store), scope=user)
        async with Client(server) as client:
            result = await client.read_resource(PREFERENCES_URI)
        text = result.contents[0].text  # type: ignore[union-attr]
        value: dict[str, Any] = json.loads(text)
        return value

    import asyncio

    return asyncio.run(read())


def test_middleware_two_threads_then_mcp() -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        agent = create_agent(
            OfflineChatModel(),
            tools=[],
            middleware=[TieredMemoryMiddleware(token_budget=8_000)],
            store=store,
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
        agent.invoke({"messages": [("user", STATED)]}, config)
        for i, question in enumerate(FOLLOW_UPS):
            recorder = PromptRecorder()
            config = {
                "configurable": {"thread_id": f"t{i + 2}", "user_id": "alice"},
                "callbacks": [recorder],
            }
            answer = agent.invoke({"messages": [("user", question)]}, config)["messages"][-1]
            assert "The user prefers green tea." in recorder.text(0)
            assert "likes" not in str(answer.content), (question, answer.content)
        assert _memories(store, "alice") == {"semantic": [], "procedural": ONLY}
        preferences = _engine_preferences(store, "alice")
    assert list(preferences) == ["preference:prefers:green-tea"]


def test_chat_graph_two_threads() -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        graph = build_tiered_chat_graph(None, store=store, checkpointer=InMemorySaver())
        graph.invoke(
            {"messages": [HumanMessage(STATED)]},
            {"configurable": {"thread_id": "t1", "user_id": "alice"}},
        )
        for i, question in enumerate(FOLLOW_UPS):
            out = graph.invoke(
                {"messages": [HumanMessage(question)]},
                {"configurable": {"thread_id": f"t{i + 2}", "user_id": "alice"}},
            )
            assert "The user prefers green tea." in out["user_context"]
        assert _memories(store, "alice") == {"semantic": [], "procedural": ONLY}


def test_chat_history_of_the_dual_preset(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:

        def history(session: str) -> TieredChatMessageHistory:
            return TieredChatMessageHistory(
                session, preset="dual", store=store, directory=tmp_path, user_id="alice"
            )

        history("s1").add_messages([HumanMessage(STATED), AIMessage("Noted.")])
        for i, question in enumerate(FOLLOW_UPS):
            history(f"s{i + 2}").add_messages([HumanMessage(question), AIMessage("Green tea.")])
        semantic = _memories(store, "alice")["semantic"]
    assert semantic == ["prefers=green tea"]


def test_ingest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    lines = [{"role": "user", "content": STATED}, {"role": "assistant", "content": "Noted."}]
    for question in FOLLOW_UPS:
        lines += [{"role": "user", "content": question}, {"role": "assistant", "content": "Tea."}]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert main(["ingest", str(path), "--scope", "frank", "--url", url, "--no-progress"]) == 0
    capsys.readouterr()
    with TieredMemoryStore.from_url(url) as store:
        assert _memories(store, "frank") == {"semantic": [], "procedural": ONLY}
