"""``langmem-tiers demo``: a multi-session project conversation through the tiered chat graph.

The package ships the conversation (``data/demo_conversation.jsonl``: six sessions, 240
user turns about a small software project, with the expected fact for each question).
Each turn goes through :func:`~langmem_tiers.graph.build_tiered_chat_graph` with the
offline model (or ``--model`` / ``LANGMEM_TIERS_MODEL``: then the answers are the model's
own), on the store of ``--url``, with short-term memory in the same database. As it goes
the demo prints:

- each pruning event (the tiered window archiving its oldest exchanges to episodic memory)
  and, at the end of each session, the consolidation of its episodes into a summary;
- each tier request (``REQUEST_TIER``) and episodic search (``SEARCH_EPISODIC``) the
  model made;
- each question with the answer and what memory supplied: the part of the prompt that
  held the expected fact (a fact from earlier sessions, a window line at some tier, a
  search result), or that it did not reach the prompt.

At the end: the tiered memory beside two baselines measured on the same conversation in
the same run (the full history in the prompt; a plain window of the last ``--window``
messages), with prompt tokens, model calls and the share of questions whose evidence
reached the prompt (see :mod:`~langmem_tiers.cli.demo_report`); per-session means; the
demo's targets; what long-term memory holds; and, with ``--plot PATH``, a chart of prompt
tokens per turn (needs matplotlib). Every run uses a fresh scope (``demo-<id>``), so runs
never see each other's memories; ``--reset`` deletes what earlier runs left.

Example:
    $ langmem-tiers demo --turns 60 --plot tokens.png
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langmem_tiers.cli.demo_report import (
    QuestionStats,
    TurnStats,
    baseline_prompt,
    comparison_table,
    holds,
    locate,
    plot_tokens,
    session_table,
    targets,
    token_table,
)
from langmem_tiers.errors import InvalidContentError
from langmem_tiers.long_term.store.scope import MemoryKind

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_WINDOW",
    "DEMO_FILE",
    "DemoTurn",
    "PromptRecorder",
    "TurnStats",
    "load_conversation",
    "run",
    "token_table",
]

DEMO_FILE = "demo_conversation.jsonl"
"""The shipped conversation, in ``langmem_tiers/data``."""

DEFAULT_BUDGET = 400
"""Token budget of the demo's tiered window (the product's default is 30,000): messages
stay raw until the window passes it, then the oldest are lowered to tier 2 and tier 1, and
the oldest exchanges are archived to episodic memory when even tier 1 does not fit. Small,
so a conversation of a few thousand tokens shows all of it."""

DEFAULT_WINDOW = 20
"""Messages of the plain-window baseline (ten rounds, the ``dual`` preset's default)."""

_SCOPE_PREFIX = "demo-"
_KINDS: tuple[MemoryKind, ...] = ("episodic", "semantic", "procedural")
_LEGEND = """How to read a question: "A:" is the model's answer, and [answer holds X] / [answer lacks X]
says whether it holds the expected fact X: X in a sentence about what was asked (a line that
names X for something else does not count), or X alone. "memory:" names the part of the
prompt that held X so: user_context (facts from earlier sessions), a raw message or a tier 1/2 line of this
session's window, an episodic search the model asked for, or this session's summaries; or
it says that X did not reach the prompt. The offline model answers by quoting what it was
given (fragments); with --model or LANGMEM_TIERS_MODEL a real model writes the answers."""


class DemoTurn(NamedTuple):
    """One user turn of the shipped conversation."""

    session: str
    at: str
    content: str
    expect: str | None
    """A fact the answer should hold (questions only)."""


def load_conversation(text: str | None = None) -> list[DemoTurn]:
    """The shipped conversation (or the JSONL ``text`` given), in order.

    >>> turns = load_conversation()
    >>> len(turns) >= 200, len({t.session for t in turns}) >= 5
    (True, True)
    """
    if text is None:
        text = resources.files("langmem_tiers").joinpath("data", DEMO_FILE).read_text("utf-8")
    turns = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            turns.append(DemoTurn(row["session"], row["at"], row["content"], row.get("expect")))
        except (ValueError, KeyError, TypeError) as err:
            raise InvalidContentError(
                f"demo conversation line {number} is not a turn "
                f"(session, at, content): {line[:80]!r}"
            ) from err
    return turns


class PromptRecorder(BaseCallbackHandler):
    """Records every prompt a chat model is sent, and its size."""

    def __init__(self) -> None:
        self.prompts: list[int] = []
        self.messages: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        """Record the prompt and its size (approximate tokens, the package's default counter)."""
        from langmem_tiers.tiers.tokens import count_message_tokens

        for prompt in messages:
            self.prompts.append(count_message_tokens(prompt))
            self.messages.append(list(prompt))

    def take(self) -> tuple[list[int], list[list[BaseMessage]]]:
        """The sizes and prompts recorded since the last call."""
        taken = self.prompts, self.messages
        self.prompts, self.messages = [], []
        return taken


@dataclass
class _Run:
    quiet: bool
    out: Any
    real_model: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    questions: list[QuestionStats] = field(default_factory=list)

    def say(self, text: str = "") -> None:
        if not self.quiet:
            print(text, file=self.out)

    def event(self, kind: str, text: str, **data: Any) -> None:
        self.events.append({"type": kind, "text": text, **data})
        self.say(f"    > {text}")


def _id_range(ids: Sequence[str]) -> str:
    return ids[0] if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"


def _clip(text: str, limit: int = 110) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _items(store: Any, namespace: tuple[str, ...]) -> Iterator[Any]:
    offset = 0
    while True:
        page = store.search(namespace, limit=500, offset=offset)
        yield from page
        if len(page) < 500:
            return
        offset += 500


def _reset(store: Any, log: Any, sessions: Sequence[str], out: _Run) -> int:
    """Delete every demo-* scope's memories and demo sessions; answers the items deleted."""
    from langmem_tiers.long_term.store.scope import decode_label

    deleted = 0
    for (label,) in store.list_namespaces(max_depth=1, limit=10_000):
        scope = decode_label(label)
        if not scope.startswith(_SCOPE_PREFIX):
            continue
        for kind in _KINDS:
            for item in list(_items(store, (label, kind))):
                store.delete(item.namespace, item.key)
                deleted += 1
        for session in sessions:
            log.clear(f"{scope}-{session}")
    out.say(f"reset: deleted {deleted} memories of earlier demo runs")
    return deleted


def _settings(args: argparse.Namespace) -> Any:
    from langmem_tiers.cli.main import settings_for

    budget = max(args.budget, 2)
    soft = None if args.soft_budget is None else min(args.soft_budget, budget)
    return settings_for(
        args,
        context_token_limit=budget,
        context_token_buffer=max(1, budget // 3),
        context_soft_budget=soft,  # None: the product's default, the budget itself
        min_messages_kept=4,
    )


def _where_line(url: str | None, scope: str) -> str:
    """Where the demo writes, and how to remove what it wrote."""
    from langmem_tiers.sql.database import parse_url, redact_url

    kind, where = parse_url(url)
    shown = where if kind == "sqlite" else redact_url(where)
    return (
        f"writing to {shown} under scope {scope} (a few hundred memories a run; "
        "`langmem-tiers demo --reset` deletes every earlier run's)"
    )


def _budget_line(settings: Any) -> str:
    from dataclasses import fields

    default = next(f.default for f in fields(settings) if f.name == "context_token_limit")
    return (
        f"context budget (a demo setting; the product's default is {default:,} tokens): messages "
        f"stay raw until the session's window passes {settings.soft_budget} tokens, then the "
        f"oldest are shown as tier 2 / tier 1; when even tier 1 passes "
        f"{settings.context_token_limit} tokens the oldest exchanges are archived to episodic "
        "memory (--budget, --soft-budget)"
    )


def run(args: argparse.Namespace) -> int:
    """The ``demo`` command."""
    from langmem_tiers.cli.main import open_store, print_json
    from langmem_tiers.graph import build_tiered_chat_graph
    from langmem_tiers.graph.models import resolve_chat_model
    from langmem_tiers.short_term.presets import get_preset
    from langmem_tiers.short_term.sql_log import SqlMessageLog

    settings = _settings(args)
    window = args.window
    model_name = args.model or settings.model
    model = resolve_chat_model(model_name)
    turns = load_conversation()
    if args.turns is not None:
        turns = turns[: args.turns]
    scope = args.scope or f"{_SCOPE_PREFIX}{uuid.uuid4().hex[:8]}"
    out = _Run(quiet=args.quiet or args.json, out=sys.stdout, real_model=bool(model_name))
    started = time.perf_counter()
    sessions = list(dict.fromkeys(t.session for t in turns))

    with open_store(args, settings) as store:
        log = SqlMessageLog(store.conn)
        if args.reset:
            _reset(store, log, list(dict.fromkeys(t.session for t in load_conversation())), out)
        graph = build_tiered_chat_graph(
            model,
            store=store,
            preset=get_preset("tiered").with_changes(log="sql"),
            settings=settings,
            log=log,
        )
        out.say(
            f"langmem-tiers demo: {len(turns)} turns in {len(sessions)} sessions, "
            f"model {model_name or 'offline'}, scope {scope}\n{_budget_line(settings)}\n"
            f"baselines in the same run: the full history, and the last {window} messages\n"
            f"{_where_line(settings.url, scope)}\n"
        )
        out.say(_LEGEND)
        stats = _play(graph, store, scope, turns, sessions, settings, window, out)
        holdings = _holdings(store, scope)
    elapsed = time.perf_counter() - started

    plot_note: str | None = None
    if args.plot:
        plot_note = plot_tokens(
            stats,
            args.plot,
            window,
            f"Prompt tokens per turn, {len(sessions)} sessions "
            f"(soft budget {settings.soft_budget}, budget {settings.context_token_limit})",
        )
    reached = targets(stats, out.questions)
    if args.json:
        print_json(
            {
                "scope": scope,
                "model": model_name or "offline",
                "turns": len(stats),
                "sessions": len(sessions),
                "seconds": round(elapsed, 2),
                "context": {
                    "soft_budget": settings.soft_budget,
                    "budget": settings.context_token_limit,
                    "window": window,
                },
                **_answers_json(out),
                "targets": [t._asdict() for t in reached],
                "events": out.events,
                "tokens": [r._asdict() for r in stats],
                "long_term_memory": holdings,
                "plot": None if not args.plot else (plot_note or args.plot),
            }
        )
        return 0
    _print_summary(out, stats, window, reached, args.rows)
    _print_holdings(holdings)
    _print_closing(args, out, scope, elapsed, plot_note)
    return 0


def _play(
    graph: Any,
    store: Any,
    scope: str,
    turns: Sequence[DemoTurn],
    sessions: list[str],
    settings: Any,
    window: int,
    out: _Run,
) -> list[TurnStats]:
    """Play the conversation through the graph, session by session, consolidating at the
    end of each, and measure every turn's prompt against the two baselines."""
    from langmem_tiers.graph import consolidate_episodes
    from langmem_tiers.tiers.tokens import count_message_tokens

    recorder = PromptRecorder()
    stats: list[TurnStats] = []
    raw_all: list[BaseMessage] = []
    raw_session: list[BaseMessage] = []
    current: str | None = None
    for number, turn in enumerate(turns, start=1):
        if turn.session != current:
            if current is not None:
                _consolidate(store, scope, current, settings, out, consolidate_episodes)
            current = turn.session
            raw_session = []
            out.say(
                f"\n== session {sessions.index(current) + 1}/{len(sessions)}: "
                f"{current} ({turn.at[:10]}) =="
            )
        question = HumanMessage(turn.content)
        full = baseline_prompt(raw_all, question)
        recent = baseline_prompt(raw_all, question, window)
        result = graph.invoke(
            {"messages": [question], "session_id": f"{scope}-{turn.session}", "user_id": scope},
            config={"callbacks": [recorder]},
        )
        sizes, prompts = recorder.take()
        answer = str(result.get("answer", ""))
        stats.append(
            TurnStats(
                number,
                turn.session,
                sizes[0] if sizes else 0,
                len(sizes),
                count_message_tokens([*raw_session, question]),
                count_message_tokens([*raw_all, question]),
                count_message_tokens(full),
                count_message_tokens(recent),
            )
        )
        _report_turn(out, number, turn, answer, result, prompts, (full, recent))
        reply = AIMessage(answer)
        raw_session += [question, reply]
        raw_all += [question, reply]
    if current is not None:
        _consolidate(store, scope, current, settings, out, consolidate_episodes)
    return stats


def _answers_json(out: _Run) -> dict[str, Any]:
    """How the questions were answered, and where their evidence was, for ``--json``."""
    return {
        "questions": len(out.questions),
        "answered_with_expected_fact": sum(q.answered for q in out.questions),
        "evidence_in_prompt": {
            "tiered": sum(q.evidence is not None for q in out.questions),
            "full_history": sum(q.in_full_history for q in out.questions),
            "window": sum(q.in_window for q in out.questions),
        },
        "question_details": [_question_json(q) for q in out.questions],
    }


def _print_closing(
    args: argparse.Namespace, out: _Run, scope: str, elapsed: float, plot_note: str | None
) -> None:
    """The score, the time, where the plot went, and a command to look around with."""
    answered = sum(q.answered for q in out.questions)
    print(
        f"\nanswers that hold the expected fact: {answered}/{len(out.questions)}"
        f"   time: {elapsed:.1f} s"
    )
    if args.plot:
        print(f"plot skipped: {plot_note}" if plot_note else f"plot written to {args.plot}")
    print(
        f'look around: langmem-tiers search "launch date" --scope {scope}'
        + (f" --url {args.url}" if args.url else "")
    )


def _question_json(q: QuestionStats) -> dict[str, Any]:
    row = q._asdict()
    row["evidence"] = None if q.evidence is None else q.evidence._asdict()
    return row


def _print_summary(
    out: _Run,
    stats: Sequence[TurnStats],
    window: int,
    reached: Sequence[Any],
    rows: int,
) -> None:
    print(f"\nPrompt tokens per turn (sampled, {len(stats)} turns):")
    print("\n".join(token_table(stats, rows, window)))
    print(
        "  prompt: the first prompt of the turn (system prompt, memories, window, question)\n"
        "  raw session: this session's verbatim history and the question, no system prompt\n"
        f"  full history / last {window}: the baselines' prompts (a one-line system prompt, "
        "every earlier message or the last ones, the question)"
    )
    print("\nPer session:")
    print("\n".join(session_table(stats)))
    print(f"\nThe tiered memory beside two baselines, same conversation ({len(stats)} turns):")
    print("\n".join(comparison_table(stats, out.questions, window)))
    print(
        "  evidence in the prompt: questions whose expected fact (its value in a line about\n"
        "  what was asked) was in the prompt the model answered from (for the baselines: in\n"
        "  their prompt; they need one call a turn)\n"
        "  answers with the fact: the tiered run's answers that hold it (the baselines'\n"
        "  prompts are built to be measured, not sent)"
    )
    print("\nTargets:")
    for target in reached:
        print(f"  {'met' if target.met else 'NOT met':<8} {target.name}: {target.measured}")


def _report_turn(
    out: _Run,
    number: int,
    turn: DemoTurn,
    answer: str,
    result: Any,
    prompts: Sequence[Sequence[BaseMessage]],
    baselines: tuple[Sequence[BaseMessage], Sequence[BaseMessage]],
) -> None:
    for action in result.get("actions") or []:
        if action.startswith("REQUEST_TIER"):
            out.event("tier_request", f"tier request {action[len('REQUEST_TIER:') :]}", turn=number)
        elif action.startswith("SEARCH_EPISODIC"):
            out.event(
                "episodic_search",
                f"episodic search {action[len('SEARCH_EPISODIC: ') :]}",
                turn=number,
            )
        else:
            out.event("note", action, turn=number)
    if turn.expect is not None:
        expected = turn.expect
        # The prompt the kept answer was written from: the turn's last.
        # Each check is of the fact the question asks for, not of any line naming its value.
        asked = turn.content
        evidence = locate(prompts[-1], expected, asked) if prompts else None
        full, recent = baselines
        stats = QuestionStats(
            number,
            turn.session,
            turn.content,
            expected,
            answer,
            holds(answer, expected, asked, answer=True),
            evidence,
            any(holds(str(m.text), expected, asked) for m in full),
            any(holds(str(m.text), expected, asked) for m in recent),
        )
        out.questions.append(stats)
        verdict = f"answer {'holds' if stats.answered else 'lacks'} {expected!r}"
        out.say(f"  [{number}] Q: {turn.content}")
        out.say(f"        A: {_clip(answer, 400 if out.real_model else 130)}  [{verdict}]")
        if evidence is None:
            out.say(f"        memory: {expected!r} did not reach the prompt")
        else:
            out.say(f"        memory: {evidence.source}: {_clip(evidence.line, 100)}")
    consolidated = list(result.get("consolidated") or [])
    if consolidated:
        out.event(
            "pruned",
            f"pruned {len(consolidated)} messages ({_id_range(consolidated)}) from the window "
            "to episodic memory",
            turn=number,
            ids=consolidated,
        )


def _consolidate(
    store: Any, scope: str, session: str, settings: Any, out: _Run, consolidate: Any
) -> None:
    report = consolidate(store, scope, settings=settings, force=True)
    if report.summaries:
        out.event(
            "consolidated",
            f"end of {session}: consolidated {report.marked} episodes into "
            f"{len(report.summaries)} semantic "
            + ("summary" if len(report.summaries) == 1 else "summaries"),
            summaries=list(report.summaries),
        )
    for error in report.errors:
        out.event("error", f"consolidation: {error}")


def _holdings(store: Any, scope: str) -> dict[str, Any]:
    from langmem_tiers.long_term.store.scope import namespace_for

    held: dict[str, Any] = {}
    for kind in _KINDS:
        items = list(_items(store, namespace_for(scope, kind)))
        categories: dict[str, int] = {}
        for item in items:
            category = _group(kind, item.value)
            categories[category] = categories.get(category, 0) + 1
        examples = _examples(items)
        held[kind] = {
            "count": len(items),
            "by_category": categories,
            "examples": [
                {
                    "key": i.key,
                    "content": str(i.value.get("content", "")),
                    **(
                        {"reinforcement_count": i.value["reinforcement_count"]}
                        if "reinforcement_count" in i.value
                        else {}
                    ),
                }
                for i in examples
            ],
        }
    return held


def _group(kind: str, value: dict[str, Any]) -> str:
    """What a memory is, for the counts: its category, who said it, or its key."""
    if value.get("category"):
        return str(value["category"])
    if kind == "episodic":
        return {"human": "from user", "ai": "from assistant"}.get(str(value.get("actor")), "event")
    return str(value.get("key") or kind)


def _examples(items: Sequence[Any], count: int = 3) -> list[Any]:
    """A few memories worth showing: the most reinforced, one per category, users' words."""
    ordered = sorted(
        items,
        key=lambda i: (
            -int(i.value.get("reinforcement_count") or 0),
            i.value.get("actor") not in (None, "human"),  # the user's own messages first
            str(i.value.get("category") or ""),
            i.key,
        ),
    )
    picked: list[Any] = []
    seen: set[str] = set()
    for item in ordered:  # one of each category first, then the rest in order
        category = str(item.value.get("category") or "")
        if category not in seen:
            picked.append(item)
            seen.add(category)
    picked += [i for i in ordered if i not in picked]
    return picked[:count]


def _print_holdings(holdings: dict[str, Any]) -> None:
    total = sum(h["count"] for h in holdings.values())
    print(f"\nLong-term memory of this run: {total} memories")
    for kind, held in holdings.items():
        parts = ", ".join(f"{k} {v}" for k, v in sorted(held["by_category"].items()))
        print(f"  {kind:<11} {held['count']:>4}" + (f"  ({parts})" if parts else ""))
        for example in held["examples"]:
            said = example.get("reinforcement_count")
            suffix = f"  (said {said}x)" if said else ""
            print(f"      - {_clip(example['content'], 96)}{suffix}")
