"""TieredMemoryMiddleware with a chat model that cannot take tools."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langmem_tiers import TieredMemoryMiddleware, TieredMemoryStore
from langmem_tiers.errors import ConfigurationError


def _agent(store: TieredMemoryStore, **middleware: Any) -> Any:
    model = GenericFakeChatModel(messages=iter([AIMessage("Noted.")]))
    return create_agent(model, middleware=[TieredMemoryMiddleware(**middleware)], store=store)


@pytest.mark.parametrize("runner", ["invoke", "ainvoke"])
async def test_a_model_without_tools_is_told_to_use_markers(runner: str) -> None:
    config: Any = {"configurable": {"thread_id": "t1"}}
    payload = {"messages": [("user", "I prefer green tea.")]}
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        agent = _agent(store)
        match = r"GenericFakeChatModel.*mode='markers'"
        if runner == "invoke":
            with pytest.raises(ConfigurationError, match=match):
                agent.invoke(payload, config)
        else:
            with pytest.raises(ConfigurationError, match=match):
                await agent.ainvoke(payload, config)


def test_the_same_model_works_with_markers() -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        agent = _agent(store, mode="markers")
        out = agent.invoke(
            {"messages": [("user", "I prefer green tea.")]}, {"configurable": {"thread_id": "t1"}}
        )
    assert out["messages"][-1].content == "Noted."
