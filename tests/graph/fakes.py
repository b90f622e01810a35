"""Scripted models, a prompt recorder, stores that fail, and a turn runner for graph tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.store.base import BaseStore, Op, PutOp, Result, SearchOp
from pydantic import Field

from langmem_tiers.errors import BackendError
from langmem_tiers.tiers.base import Summarizer, Summary

FACTS = "Hi, my name is Jordan. The deadline for RAI Chat is March 1, 2026, and the budget is 40,000 euros."
"""A user message whose tier 1 holds its facts (``budget=40,000 euros``) but not its
wording: "the budget is 40,000 euros" is only in the raw text."""


def scripted(*outputs: str | AIMessage) -> GenericFakeChatModel:
    """A model answering each call with the next output (an exhausted script raises)."""
    return GenericFakeChatModel(messages=iter(outputs))


class ToolCallingFake(GenericFakeChatModel):
    """A scripted model that accepts ``bind_tools`` (and records the tools it was given)."""

    bound_tools: list[str] = Field(default_factory=list)
    disable_streaming: bool = True  # GenericFakeChatModel's stream drops tool calls

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound_tools = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self


def tool_call(name: str, call_id: str, **args: Any) -> AIMessage:
    """An AI message calling one tool."""
    return AIMessage("", tool_calls=[ToolCall(name=name, args=args, id=call_id)])


class PromptRecorder(BaseCallbackHandler):
    """Records the messages of every chat model call made under it."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.prompts.extend(list(batch) for batch in messages)

    def text(self, index: int) -> str:
        """Everything the model saw in call ``index``, as one text."""
        return "\n".join(str(m.content) for m in self.prompts[index])


class BrokenStore(BaseStore):
    """Long-term memory that is down: every batch with one of ``failing`` ops raises."""

    def __init__(self, inner: BaseStore, failing: tuple[type[Op], ...] = (SearchOp, PutOp)) -> None:
        self.inner = inner
        self.failing = failing
        self.calls = 0

    def _check(self, ops: Iterable[Op]) -> list[Op]:
        ops = list(ops)
        if any(isinstance(op, self.failing) for op in ops):
            self.calls += 1
            raise BackendError("the store's backend failed: connection refused")
        return ops

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.inner.batch(self._check(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self.inner.abatch(self._check(ops))


class CountingSummarizer(Summarizer):
    """``Summary of <n> episodes: <first words>``; counts calls, can fail."""

    name = "counting"

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        self.calls += 1
        if self.fail:
            raise RuntimeError("summariser down")
        heads = "; ".join(" ".join(m.text.split()[:3]) for m in messages)
        return Summary(f"Summary of {len(messages)} episodes: {heads}", ["episodes"])


async def run_turn(
    graph: Any,
    runner: str,
    text: str,
    *,
    session_id: str | None = "s1",
    user_id: str | None = "u1",
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """One turn through ``invoke``, ``ainvoke`` or ``astream``; answers the final state."""
    payload: dict[str, Any] = {"messages": [HumanMessage(text)]}
    if session_id is not None:
        payload["session_id"] = session_id
    if user_id is not None:
        payload["user_id"] = user_id
    if runner == "invoke":
        result: dict[str, Any] = graph.invoke(payload, config)
        return result
    if runner == "ainvoke":
        result = await graph.ainvoke(payload, config)
        return result
    last: dict[str, Any] = {}
    async for value in graph.astream(payload, config, stream_mode="values"):
        last = value
    return last
