"""An AI turn that only calls tools has nothing to tier and must not block the batch's tiers."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.memory import InMemoryStore

from langmem_tiers import build_memory


def test_tool_call_only_message_does_not_fail_tiering(caplog: pytest.LogCaptureFixture) -> None:
    memory = build_memory("s1", preset="moving_window", store=InMemoryStore())
    with caplog.at_level(logging.WARNING):
        memory.add_messages(
            [
                HumanMessage("What's the weather in Paris?"),
                AIMessage(
                    "", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "t1"}]
                ),
                ToolMessage("rainy, 12C", tool_call_id="t1"),
            ]
        )
    records = memory.records()
    assert "tiering failed" not in caplog.text
    assert records[0].tier1 == "place=Paris"
    assert records[2].tier1 is not None
    view = memory.context()
    assert isinstance(view[1], AIMessage)
    assert view[1].tool_calls[0]["id"] == "t1"
