"""``langmem-tiers demo``: a multi-session project conversation through the tiered chat graph.

The package ships the conversation (``data/demo_conversation.jsonl``: six sessions, 240
user turns about a small software project, with the expected fact for each question).
Each turn goes through :func:`~langmem_tiers.graph.build_tiered_chat_graph` with the
offline model (or ``--model``), on the store of ``--url``, with short-term memory in the
same database. As it goes the demo prints:

- each pruning event (the tiered window archiving its oldest exchanges to episodic memory)
  and, at the end of each session, the consolidation of its episodes into a summary;
- each tier request (``REQUEST_TIER``) and episodic search (``SEARCH_EPISODIC``) the
  model made, and each question with its answer and whether it holds the expected fact;

and at the end a table of prompt tokens per turn (sampled) against the raw history, and
what long-term memory holds. Every run uses a fresh scope (``demo-<id>``), so runs never
see each other's memories; ``--reset`` deletes what earlier runs left.

Example:
    $ langmem-tiers demo --turns 60
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

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.long_term.store.scope import MemoryKind

__all__ = [
    "DEFAULT_BUDGET",
    "DEMO_FILE",
    "DemoTurn",
    "PromptRecorder",
    "TurnStats",
    "load_conversation",
    "run",
]

DEMO_FILE = "demo_conversation.jsonl"
"""The shipped conversation, in ``langmem_tiers/data``."""

DEFAULT_BUDGET = 600
"""Token budget of the demo's tiered context: small, so a few hundred turns show pruning."""

_SCOPE_PREFIX = "demo-"
_KINDS: tuple[MemoryKind, ...] = ("episodic", "semantic", "procedural")


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
    """Counts the tokens of every prompt a chat model is sent."""

    def __init__(self) -> None:
        self.prompts: list[int] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        """Record the prompt's size (approximate tokens, the package's default counter)."""
        from langmem_tiers.tiers.tokens import count_message_tokens

        for prompt in messages:
            self.prompts.append(count_message_tokens(prompt))

    def take(self) -> list[int]:
        """The sizes recorded since the last call."""
        taken, self.prompts = self.prompts, []
        return taken


class TurnStats(NamedTuple):
    """Tokens of one turn."""

    turn: int
    session: str
    prompt_tokens: int
    """The first prompt of the turn (what every turn costs at least)."""
    calls: int
    """Model calls (1 + regenerations after tier requests or searches)."""
    raw_session_tokens: int
    """The session's raw history plus the question (what a plain chat would send)."""
    raw_all_tokens: int
    """Every earlier session too (what remembering everything verbatim would cost)."""


@dataclass
class _Run:
    quiet: bool
    out: Any
    events: list[dict[str, Any]] = field(default_factory=list)
    answered: int = 0
    questions: int = 0

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


def _sampled(rows: Sequence[TurnStats], count: int) -> list[TurnStats]:
    if len(rows) <= count:
        return list(rows)
    step = (len(rows) - 1) / (count - 1)
    picks = sorted({round(i * step) for i in range(count)})
    return [rows[i] for i in picks]


def token_table(rows: Sequence[TurnStats], count: int) -> list[str]:
    """The final table: sampled turns, then the mean over every turn."""
    header = f"{'turn':>5}  {'session':<16} {'prompt':>7} {'calls':>5} {'raw session':>12} {'raw all':>9}"
    lines = [header, "-" * len(header)]
    for r in _sampled(rows, count):
        lines.append(
            f"{r.turn:>5}  {r.session[:16]:<16} {r.prompt_tokens:>7,} {r.calls:>5} "
            f"{r.raw_session_tokens:>12,} {r.raw_all_tokens:>9,}"
        )
    if rows:
        n = len(rows)
        lines.append("-" * len(header))
        lines.append(
            f"{'mean':>5}  {f'over {n} turns':<16} {sum(r.prompt_tokens for r in rows) / n:>7,.0f} "
            f"{sum(r.calls for r in rows) / n:>5.2f} "
            f"{sum(r.raw_session_tokens for r in rows) / n:>12,.0f} "
            f"{sum(r.raw_all_tokens for r in rows) / n:>9,.0f}"
        )
        lines.append(
            f"{'max':>5}  {'':<16} {max(r.prompt_tokens for r in rows):>7,} "
            f"{max(r.calls for r in rows):>5} "
            f"{max(r.raw_session_tokens for r in rows):>12,} "
            f"{max(r.raw_all_tokens for r in rows):>9,}"
        )
    return lines


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


def run(args: argparse.Namespace) -> int:
    """The ``demo`` command."""
    from langmem_tiers.cli.main import open_store, print_json, settings_for
    from langmem_tiers.graph import build_tiered_chat_graph, consolidate_episodes
    from langmem_tiers.graph.models import resolve_chat_model
    from langmem_tiers.short_term.presets import get_preset
    from langmem_tiers.short_term.sql_log import SqlMessageLog
    from langmem_tiers.tiers.tokens import count_message_tokens

    budget = args.budget
    settings = settings_for(
        args,
        context_token_limit=max(budget, 2),
        context_token_buffer=max(1, budget // 3),
        min_messages_kept=4,
    )
    model_name = args.model or settings.model
    model = resolve_chat_model(model_name)
    turns = load_conversation()
    if args.turns is not None:
        turns = turns[: args.turns]
    scope = args.scope or f"{_SCOPE_PREFIX}{uuid.uuid4().hex[:8]}"
    out = _Run(quiet=args.quiet or args.json, out=sys.stdout)
    started = time.perf_counter()
    recorder = PromptRecorder()
    stats: list[TurnStats] = []
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
            f"model {model_name or 'offline'}, scope {scope}, context budget {budget} tokens"
        )
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
            raw_session_tokens = count_message_tokens([*raw_session, question])
            raw_all_tokens = count_message_tokens([*raw_all, question])
            result = graph.invoke(
                {"messages": [question], "session_id": f"{scope}-{turn.session}", "user_id": scope},
                config={"callbacks": [recorder]},
            )
            prompts = recorder.take()
            answer = str(result.get("answer", ""))
            stats.append(
                TurnStats(
                    number,
                    turn.session,
                    prompts[0] if prompts else 0,
                    len(prompts),
                    raw_session_tokens,
                    raw_all_tokens,
                )
            )
            _report_turn(out, number, turn, answer, result)
            reply = AIMessage(answer)
            raw_session += [question, reply]
            raw_all += [question, reply]
        if current is not None:
            _consolidate(store, scope, current, settings, out, consolidate_episodes)
        holdings = _holdings(store, scope)
    elapsed = time.perf_counter() - started

    table = token_table(stats, args.rows)
    if args.json:
        print_json(
            {
                "scope": scope,
                "model": model_name or "offline",
                "turns": len(stats),
                "sessions": len(sessions),
                "seconds": round(elapsed, 2),
                "questions": out.questions,
                "answered_with_expected_fact": out.answered,
                "events": out.events,
                "tokens": [r._asdict() for r in stats],
                "long_term_memory": holdings,
            }
        )
        return 0
    print(f"\nPrompt tokens per turn (sampled) against the raw history ({len(stats)} turns):")
    print("\n".join(table))
    print(
        "  prompt: the first prompt of the turn (system prompt, memories, tiered window, "
        "question)\n  raw session / raw all: the verbatim history of this session / of all "
        "sessions plus the question, without a system prompt"
    )
    _print_holdings(holdings)
    print(
        f"\nquestions answered with the expected fact: {out.answered}/{out.questions}"
        f"   time: {elapsed:.1f} s"
    )
    print(
        f'look around: langmem-tiers search "launch date" --scope {scope}'
        + (f" --url {args.url}" if args.url else "")
    )
    return 0


def _report_turn(out: _Run, number: int, turn: DemoTurn, answer: str, result: Any) -> None:
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
        out.questions += 1
        hit = turn.expect.lower() in answer.lower()
        out.answered += hit
        mark = "ok" if hit else f"missed {turn.expect!r}"
        out.say(f"  [{number}] Q: {turn.content}")
        out.say(f"        A: {_clip(answer)}  [{mark}]")
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
