"""One-call mode: the answer's model call writes the turn's tiers, so a plain turn is one call.

The models are scripted fakes that count their calls; the memory's tierer is an LLM tierer
on the same model, so any tierer call would show in the count.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.graph import build_tiered_chat_graph
from langmem_tiers.tiers import LLMTierer, MessageTiers, OfflineTierer
from langmem_tiers.tiers.inline import INLINE_TIER_INSTRUCTIONS, STRUCTURED_TIER_INSTRUCTIONS

from .fakes import FACTS, PromptRecorder, run_turn


class Counting(GenericFakeChatModel):
    """A scripted model that counts the calls made to it."""

    calls: int = 0

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        return super()._generate(messages, *args, **kwargs)


class StructuredCounting(Counting):
    """A counting model with tool calling, so ``with_structured_output`` works on it."""

    disable_streaming: bool = True  # GenericFakeChatModel's stream drops tool calls

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        return self


QUESTION = "I moved to Lisbon in 2021 and I work on the RAI Chat project with Priya."
ANSWER = "Lisbon is a lovely city for the RAI Chat team."
USER_TIERS = MessageTiers("place=Lisbon, date=2021, project=RAI Chat", "The user moved to Lisbon.")
ANSWER_TIERS = MessageTiers("place=Lisbon, project=RAI Chat", "Lisbon suits the team.")
LINES = (
    f"{ANSWER}\n"
    f"USER TIER1: {USER_TIERS.tier1}\nUSER TIER2: {USER_TIERS.tier2}\n"
    f"TIER1: {ANSWER_TIERS.tier1}\nTIER2: {ANSWER_TIERS.tier2}"
)


def _graph(model: Counting, store: TieredMemoryStore, **kwargs: Any) -> tuple[Any, ChatMemory]:
    # The memory's tierer is a model too: a call to it would be counted.
    memory = ChatMemory(store, settings=Settings(), tierer=LLMTierer(model))
    return build_tiered_chat_graph(model, store=store, memory=memory, **kwargs), memory


def _tiers(memory: ChatMemory) -> list[MessageTiers]:
    return [MessageTiers(r.tier1 or "", r.tier2 or "") for r in memory.memory("s1", "u1").records()]


async def test_without_it_a_turn_costs_a_second_call_for_the_tiers(
    store: TieredMemoryStore, runner: str
) -> None:
    batch = f"[m1] TIER1: {USER_TIERS.tier1} | TIER2: {USER_TIERS.tier2}\n" + (
        f"[m2] TIER1: {ANSWER_TIERS.tier1} | TIER2: {ANSWER_TIERS.tier2}"
    )
    model = Counting(messages=iter([ANSWER, batch]))
    graph, memory = _graph(model, store)
    out = await run_turn(graph, runner, QUESTION)
    assert out["answer"] == ANSWER
    assert model.calls == 2
    assert _tiers(memory) == [USER_TIERS, ANSWER_TIERS]


async def test_a_turn_is_one_model_call_and_the_tier_lines_are_never_shown(
    store: TieredMemoryStore, runner: str
) -> None:
    model = Counting(messages=iter([LINES, LINES.replace(ANSWER, "Noted, Lisbon it is.")]))
    graph, memory = _graph(model, store, one_call=True)
    recorder = PromptRecorder()
    out = await run_turn(graph, runner, QUESTION, config={"callbacks": [recorder]})
    assert model.calls == 1
    assert out["answer"] == ANSWER
    assert out["messages"][-1].content == ANSWER
    assert "TIER" not in out["messages"][-1].content
    assert _tiers(memory) == [USER_TIERS, ANSWER_TIERS]
    assert recorder.prompts[0][0].text.endswith(INLINE_TIER_INSTRUCTIONS)
    await run_turn(graph, runner, "Yes, " + QUESTION)
    assert model.calls == 2  # one per turn
    stored = [r.text for r in memory.memory("s1", "u1").records()]
    assert stored[1] == ANSWER
    assert stored[3] == "Noted, Lisbon it is."


@pytest.mark.parametrize(
    "output",
    [
        f"{ANSWER}\nTIER1: lovely city\nTIER2: ",  # no key=value, no summary
        f"{ANSWER}\n**USER TIER1:**\nTIER 2: {'far longer than the message ' * 20}",
        ANSWER,  # no tier lines at all
    ],
)
async def test_missing_or_garbage_tiers_come_from_the_offline_tierer(
    store: TieredMemoryStore, runner: str, output: str
) -> None:
    model = Counting(messages=iter([output]))
    graph, memory = _graph(model, store, one_call=True)
    out = await run_turn(graph, runner, QUESTION)
    assert out["answer"] == ANSWER  # every tier line taken out, well formed or not
    assert model.calls == 1  # the memory's model tierer was not asked either
    offline = OfflineTierer().tier([AIMessage(QUESTION), AIMessage(ANSWER)])
    assert _tiers(memory) == offline


async def test_structured_output_where_the_model_supports_it(
    store: TieredMemoryStore, runner: str
) -> None:
    args = {
        "answer": ANSWER,
        "user_tier1": USER_TIERS.tier1,
        "user_tier2": USER_TIERS.tier2,
        "answer_tier1": ANSWER_TIERS.tier1,
        "answer_tier2": ANSWER_TIERS.tier2,
    }
    reply = AIMessage("", tool_calls=[ToolCall(name="tiered_answer", args=args, id="c1")])
    model = StructuredCounting(messages=iter([reply, AIMessage(LINES)]))
    graph, memory = _graph(model, store, one_call=True)
    recorder = PromptRecorder()
    out = await run_turn(graph, runner, QUESTION, config={"callbacks": [recorder]})
    assert out["answer"] == ANSWER
    assert model.calls == 1
    assert _tiers(memory) == [USER_TIERS, ANSWER_TIERS]
    assert recorder.prompts[0][0].text.endswith(STRUCTURED_TIER_INSTRUCTIONS)
    # A reply that is not the object is read as text, tier lines and all.
    out = await run_turn(graph, runner, QUESTION)
    assert out["answer"] == ANSWER
    assert model.calls == 2
    assert _tiers(memory)[2:] == [USER_TIERS, ANSWER_TIERS]


async def test_after_a_tier_request_the_kept_answers_tiers_are_used(
    store: TieredMemoryStore, runner: str
) -> None:
    seed = "Noted.\nUSER TIER1: user_name=Jordan, budget=40000\nUSER TIER2: Jordan's plan.\n"
    seed += "TIER1: note=noted\nTIER2: Noted."
    first = (
        "Let me look. [REQUEST_TIER:3:m1]\n"
        f"USER TIER1: {USER_TIERS.tier1}\nUSER TIER2: {USER_TIERS.tier2}"
    )
    second = f"{ANSWER}\nTIER1: {ANSWER_TIERS.tier1}\nTIER2: {ANSWER_TIERS.tier2}"
    model = Counting(messages=iter([seed, first, second]))
    memory = ChatMemory(store, settings=Settings(context_policy="eager"), tierer=LLMTierer(model))
    graph = build_tiered_chat_graph(model, store=store, memory=memory, one_call=True)
    await run_turn(graph, runner, FACTS)
    out = await run_turn(graph, runner, QUESTION)
    assert out["actions"] == ["REQUEST_TIER:3:m1 -> raised"]
    assert out["answer"] == ANSWER
    assert model.calls == 3  # a call per generation, none for tiers
    # The user's tiers from the first generation, the answer's from the kept one.
    assert _tiers(memory)[2:] == [USER_TIERS, ANSWER_TIERS]


async def test_the_setting_turns_it_on(store: TieredMemoryStore) -> None:
    settings = Settings.from_env(environ={"LANGMEM_TIERS_ONE_CALL": "true"})
    model = Counting(messages=iter([LINES]))
    memory = ChatMemory(store, settings=settings, tierer=LLMTierer(model))
    graph = build_tiered_chat_graph(model, store=store, memory=memory)
    await run_turn(graph, "invoke", QUESTION)
    assert model.calls == 1
    assert _tiers(memory) == [USER_TIERS, ANSWER_TIERS]
