"""TieredMemoryMiddleware beside LangChain's SummarizationMiddleware, in create_agent, on LoCoMo.

Each LoCoMo conversation is replayed through two ``create_agent`` agents (one thread, an
``InMemorySaver`` checkpointer, an embedded ``TieredMemoryStore``):

* ``tiered``: :class:`langmem_tiers.TieredMemoryMiddleware` (``tools`` mode, offline
  tierer), prompt budget ``--budget`` tokens;
* ``summarization``: LangChain's ``SummarizationMiddleware`` with ``trigger=("tokens",
  budget)`` and ``keep=("tokens", budget // 2)``, its summaries written by the package's
  offline summariser (a stand-in for the LLM call it would make).

The first speaker is the user: their turns (consecutive ones together) are one
``invoke``; the model is a replay model that answers with the second speaker's next
turns, so both agents see the same conversation and the same answers. Measured:

* prompt tokens of every agent model call (messages with
  :func:`~langmem_tiers.tiers.tokens.count_message_tokens`, plus the bound tools' JSON
  schemas at four characters a token), mean and maximum;
* LLM calls: the agent's model calls, and helper calls (the summariser's for
  ``summarization``; the tierer's for ``tiered``: LLM calls only when an LLM tierer is
  configured, offline here);
* at the end, for the questions of categories 1-4 with evidence: the share of evidence
  turns still *reachable*. For ``summarization``: the turn is in the agent's state (the
  summarised ones were removed from it). For ``tiered``: the turn is in the last prompt
  at some tier (the model can ask for it in full by id), or among the top 10 of an
  episodic search of the archive for the question (what the ``search_episodic`` tool
  runs); and the state keeps every turn.

Run::

    python -m benchmarks.middleware_vs_summarization [--quick] [--data locomo10.json]

It writes ``benchmarks/results/middleware_vs_summarization.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from benchmarks.locomo import (
    DEFAULT_DATA_PATH,
    Conversation,
    Question,
    Turn,
    evidence_reach,
    load_locomo,
    retrieval_questions,
)
from benchmarks.report import machine_info, write_results

__all__ = ["SYSTEMS", "Exchange", "ReplayModel", "exchanges", "main", "run_conversation"]

RESULTS = Path(__file__).resolve().parent / "results"
SEARCH_K = 10
SYSTEMS = ("tiered", "summarization")


class Exchange:
    """One ``invoke``: the user's turns, and the assistant's turns that answer them."""

    def __init__(self, user: list[Turn], reply: list[Turn]) -> None:
        self.user = user
        self.reply = reply

    def reply_text(self) -> str:
        return "\n".join(_text(t) for t in self.reply) or "(no reply)"


def _text(turn: Turn) -> str:
    body = f"{turn.speaker}: {turn.text}"
    return f"{body} [shares {turn.caption}]" if turn.caption else body


def exchanges(conversation: Conversation, max_turns: int | None = None) -> list[Exchange]:
    """The conversation as invokes: user turns, then the assistant turns after them.

    >>> a = Turn("D1:1", 1, "Ana", "", "Hi", None)
    >>> b = Turn("D1:2", 1, "Ben", "", "Hello", None)
    >>> c = Conversation("x", ("Ana", "Ben"), (a, b, a), ())
    >>> [(len(e.user), len(e.reply)) for e in exchanges(c)]
    [(1, 1), (1, 0)]
    """
    turns = conversation.turns[:max_turns] if max_turns else conversation.turns
    user = conversation.speakers[0]
    out: list[Exchange] = []
    pending: list[Turn] = []
    replies: list[Turn] = []
    for turn in turns:
        if turn.speaker == user:
            if replies:
                out.append(Exchange(pending, replies))
                pending, replies = [], []
            pending.append(turn)
        elif pending:
            replies.append(turn)
        # An assistant turn before any user turn has nothing to answer: it is dropped.
    if pending:
        out.append(Exchange(pending, replies))
    return out


class ReplayModel(BaseChatModel):
    """Answers each call with the next scripted reply; counts calls and prompt tokens."""

    replies: list[str]
    position: int = 0
    calls: int = 0
    prompt_tokens: list[int] = Field(default_factory=list)
    tool_tokens: int = 0
    last_prompt: list[BaseMessage] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "replay"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        from langmem_tiers.tiers.tokens import count_tokens

        schemas = [convert_to_openai_tool(t) for t in tools]
        text = json.dumps(schemas, separators=(",", ":"))
        self.tool_tokens = count_tokens(text) if schemas else 0
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
    ) -> ChatResult:
        from langmem_tiers.tiers.tokens import count_message_tokens

        self.calls += 1
        self.prompt_tokens.append(count_message_tokens(messages) + self.tool_tokens)
        self.last_prompt = list(messages)
        text = self.replies[self.position] if self.position < len(self.replies) else "OK."
        self.position += 1
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def _shown_ids(prompt: Sequence[BaseMessage]) -> set[str]:
    ids: set[str] = set()
    for message in prompt:
        data = (message.response_metadata or {}).get("langmem_tiers")
        if isinstance(data, dict) and data.get("message_id"):
            ids.add(str(data["message_id"]))
    return ids


def _run_tiered(
    store: Any, model: ReplayModel, plan: list[Exchange], budget: int, thread: str
) -> tuple[dict[str, Any], Any]:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_tiers import TieredMemoryMiddleware
    from langmem_tiers.config import Settings
    from langmem_tiers.graph.middleware import SAVED_KEY
    from langmem_tiers.tiers import OfflineTierer

    class CountingTierer(OfflineTierer):
        calls = 0

        def tier(self, messages: Sequence[BaseMessage]) -> Any:
            CountingTierer.calls += 1
            return super().tier(messages)

    tierer = CountingTierer()
    middleware = TieredMemoryMiddleware(settings=Settings(), token_budget=budget, tierer=tierer)
    agent = create_agent(model, middleware=[middleware], store=store, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread, "user_id": "user"}}
    for exchange in plan:
        agent.invoke(
            {"messages": [HumanMessage(_text(t), id=t.dia_id) for t in exchange.user]}, config
        )
    state = agent.get_state(config).values
    outcome = {"helper_calls": CountingTierer.calls, "state": state, "saved": state[SAVED_KEY]}
    return outcome, middleware


def _tiered(
    conversation: Conversation, plan: list[Exchange], questions: list[Question], budget: int
) -> dict[str, Any]:
    """The tiered middleware's row: its calls, and the evidence shown or found by search."""
    from langmem_tiers import TieredMemoryStore
    from langmem_tiers.config import Settings

    replies = [e.reply_text() for e in plan]
    turn_ids = {t.dia_id for e in plan for t in e.user + e.reply}
    reply_of = {t.dia_id: i for i, e in enumerate(plan) for t in e.reply}
    started = time.perf_counter()
    model = ReplayModel(replies=replies)
    with (
        tempfile.TemporaryDirectory(prefix="langmem-bench-") as directory,
        TieredMemoryStore.from_url(f"sqlite:///{directory}/m.db", settings=Settings()) as store,
    ):
        outcome, middleware = _run_tiered(store, model, plan, budget, conversation.sample_id)
        state, saved = outcome["state"], outcome["saved"]
        ai_ids = [m.id for m in state["messages"] if m.type == "ai"]
        stm_id: dict[str, str] = {}
        for dia in turn_ids:
            state_id = dia if dia not in reply_of else ai_ids[reply_of[dia]]
            stm_id[dia] = saved.get(str(state_id), "")
        shown = _shown_ids(model.last_prompt)
        stm = middleware.memory(store).memory(conversation.sample_id, "user")
        reach = evidence_reach(questions, stm_id, shown, stm, limit=SEARCH_K)
        kept_in_state = sum(1 for m in state["messages"] if m.type in ("human", "ai"))
    return _row(
        model,
        outcome["helper_calls"],
        reach.evidence,
        reach.reached,
        started,
        in_prompt=reach.in_view,
        by_search=reach.by_search,
        messages_in_state=kept_in_state,
    )


def _summarization(
    conversation: Conversation, plan: list[Exchange], questions: list[Question], budget: int
) -> dict[str, Any]:
    """The summarization middleware's row: its calls, and the evidence kept in its state."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    from langmem_tiers.tiers import OfflineSummarizer

    replies = [e.reply_text() for e in plan]
    started = time.perf_counter()
    model = ReplayModel(replies=replies)
    summarizer = OfflineSummarizer()
    summaries = 0

    def summarize(messages: list[Any]) -> str:
        nonlocal summaries
        summaries += 1
        return summarizer.summarize(messages).text

    middleware = SummarizationMiddleware(
        model,
        trigger=("tokens", budget),
        keep=("tokens", budget // 2),
        summarizer=summarize,
    )
    agent = create_agent(model, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": conversation.sample_id}}
    text_of: dict[str, str] = {}
    for index, exchange in enumerate(plan):
        for turn in exchange.user:
            text_of[turn.dia_id] = _text(turn)
        for turn in exchange.reply:
            text_of[turn.dia_id] = replies[index]
        agent.invoke(
            {"messages": [HumanMessage(_text(t), id=t.dia_id) for t in exchange.user]}, config
        )
    state = agent.get_state(config).values
    contents = {str(m.content) for m in state["messages"]}
    evidence = kept = 0
    for question in questions:
        for dia in question.evidence:
            evidence += 1
            kept += text_of[dia] in contents
    return _row(
        model,
        summaries,
        evidence,
        kept,
        started,
        messages_in_state=sum(1 for m in state["messages"] if m.type in ("human", "ai")),
    )


def run_conversation(
    conversation: Conversation, *, budget: int, max_turns: int | None = None
) -> dict[str, Any]:
    """Replay one conversation through both agents; tokens, calls and reachability."""
    plan = exchanges(conversation, max_turns)
    turn_ids = {t.dia_id for e in plan for t in e.user + e.reply}
    questions = [
        q for q in retrieval_questions(conversation) if all(d in turn_ids for d in q.evidence)
    ]
    rows = {
        "tiered": _tiered(conversation, plan, questions, budget),
        "summarization": _summarization(conversation, plan, questions, budget),
    }
    return {
        "sample_id": conversation.sample_id,
        "turns": len(turn_ids),
        "invokes": len(plan),
        "questions": len(questions),
        "systems": rows,
    }


def _row(
    model: ReplayModel,
    helper_calls: int,
    evidence: int,
    reachable: int,
    started: float,
    **extra: Any,
) -> dict[str, Any]:
    tokens = model.prompt_tokens
    return {
        "model_calls": model.calls,
        "helper_calls": helper_calls,
        "prompt_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else None,
        "prompt_tokens_max": max(tokens) if tokens else None,
        "prompt_tokens_last": tokens[-1] if tokens else None,
        "evidence_turns": evidence,
        "reachable": reachable,
        "reachable_share": round(reachable / evidence, 4) if evidence else None,
        **extra,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        cells = [r["systems"][system] for r in rows]
        evidence = sum(c["evidence_turns"] for c in cells)
        reachable = sum(c["reachable"] for c in cells)
        calls = sum(c["model_calls"] for c in cells)
        out[system] = {
            "model_calls": calls,
            "helper_calls": sum(c["helper_calls"] for c in cells),
            "prompt_tokens_mean": round(
                sum(c["prompt_tokens_mean"] * c["model_calls"] for c in cells) / calls, 1
            ),
            "prompt_tokens_max": max(c["prompt_tokens_max"] for c in cells),
            "evidence_turns": evidence,
            "reachable_share": round(reachable / evidence, 4) if evidence else None,
        }
    return out


def table(results: dict[str, Any]) -> str:
    """The Markdown table of a results dict."""
    lines = [
        f"Prompt budget {results['budget']:,} tokens; {results['conversation_count']} LoCoMo "
        f"conversations, {results['invokes']:,} agent invocations.",
        "",
        "| middleware | prompt tokens / call (mean) | max | model calls | helper calls "
        "| evidence reachable |",
        "|---|---|---|---|---|---|",
    ]
    names = {
        "tiered": "TieredMemoryMiddleware",
        "summarization": "SummarizationMiddleware",
    }
    helpers = {"tiered": "tierer (offline)", "summarization": "summariser"}
    for system in SYSTEMS:
        s = results["summary"][system]
        share = s["reachable_share"]
        lines.append(
            f"| {names[system]} | {s['prompt_tokens_mean']:,.0f} | {s['prompt_tokens_max']:,} "
            f"| {s['model_calls']:,} | {s['helper_calls']:,} {helpers[system]} "
            f"| {'–' if share is None else f'{share:.1%}'} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, write the JSON, print the table and return the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="2 conversations, 200 turns each")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="how many to run")
    parser.add_argument("--max-turns", type=int, default=None, help="cut each conversation")
    parser.add_argument("--budget", type=int, default=4_000, help="prompt budget in tokens")
    parser.add_argument("--out", type=Path, default=RESULTS / "middleware_vs_summarization.json")
    args = parser.parse_args(argv)

    conversations = load_locomo(args.data)
    count = args.conversations or (2 if args.quick else len(conversations))
    max_turns = args.max_turns or (200 if args.quick else None)
    rows = []
    for conversation in conversations[:count]:
        row = run_conversation(conversation, budget=args.budget, max_turns=max_turns)
        t, s = row["systems"]["tiered"], row["systems"]["summarization"]
        print(
            f"  {row['sample_id']}: {row['turns']} turns; tiered {t['prompt_tokens_mean']} "
            f"tokens/call, reachable {t['reachable_share']}; summarization "
            f"{s['prompt_tokens_mean']} tokens/call, reachable {s['reachable_share']}",
            flush=True,
        )
        rows.append(row)
    results: dict[str, Any] = {
        "benchmark": "middleware_vs_summarization",
        "machine": machine_info(),
        "data": args.data.name,
        "quick": args.quick,
        "budget": args.budget,
        "max_turns": max_turns,
        "search_k": SEARCH_K,
        "conversation_count": len(rows),
        "invokes": sum(r["invokes"] for r in rows),
        "token_counter": "count_message_tokens (about 4 characters a token) + tool schemas",
        "summary": _summarise(rows),
        "conversations": rows,
    }
    write_results(results, args.out)
    print(table(results))
    return results


if __name__ == "__main__":
    main()
