"""Prompt tokens of the tiered context on LoCoMo, and how much evidence stays reachable.

Each LoCoMo conversation is fed turn by turn (one ``add_messages`` per turn) through the
``tiered`` preset: offline tierer, token-budget window, tiered view, long-term memory in
an embedded :class:`~langmem_tiers.TieredMemoryStore` (SQLite in a temporary directory,
offline embeddings). The first speaker is the user (``HumanMessage``), the second the
assistant (``AIMessage``); a turn's content is ``speaker: text`` plus
``[shares <caption>]`` on image turns.

Reported per conversation and as the mean over conversations:

* at turns 50, 200, 500 and at the end: tokens of the built context (``context()``, what a
  model would be sent) against the tokens of the raw history up to that turn, both with
  :func:`langmem_tiers.tiers.tokens.count_message_tokens`;
* at the end, for the questions of categories 1-4 with evidence: the share of evidence
  turns that stay *reachable*, either in the context at some tier (the model can ask for
  more of a message by its id) or among the top 10 of an episodic search of the session's
  archive for the question (``search_archive(question, limit=10)``).

Two configurations run: the preset's defaults (a 30,000-token budget, larger than most
LoCoMo conversations at tier 1, so nothing is archived), and a tight 4,000-token budget
that archives most of each conversation, so reachability depends on episodic search.

Run::

    python -m benchmarks.token_savings [--quick] [--data path/to/locomo10.json]

and read ``benchmarks/results/token_savings.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from benchmarks.locomo import (
    Conversation,
    Turn,
    evidence_reach,
    load_locomo,
    retrieval_questions,
)
from benchmarks.report import machine_info, write_results

__all__ = ["CHECKPOINTS", "CONFIGS", "main", "run_conversation", "turn_message"]

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CHECKPOINTS: tuple[int, ...] = (50, 200, 500)
SEARCH_K = 10

#: Settings of each configuration (``Settings`` field -> value).
CONFIGS: dict[str, dict[str, int]] = {
    "tiered defaults (30k budget)": {},
    "tiered, 4k budget": {"context_token_limit": 4_000, "context_token_buffer": 1_000},
}


def turn_message(turn: Turn, user: str) -> BaseMessage:
    """A LoCoMo turn as a chat message: the first speaker is the user.

    Example:
        >>> t = Turn("D1:1", 1, "Caroline", "1 May", "Hi!", None)
        >>> turn_message(t, "Caroline").content
        'Caroline: Hi!'
    """
    content = f"{turn.speaker}: {turn.text}"
    if turn.caption:
        content += f" [shares {turn.caption}]"
    return HumanMessage(content) if turn.speaker == user else AIMessage(content)


def _context_ids(view: Sequence[BaseMessage]) -> set[str]:
    ids: set[str] = set()
    for message in view:
        meta = (message.response_metadata or {}).get("langmem_tiers") or {}
        if isinstance(meta, dict) and meta.get("message_id"):
            ids.add(str(meta["message_id"]))
    return ids


def run_conversation(
    conversation: Conversation, overrides: dict[str, int], *, max_turns: int | None = None
) -> dict[str, Any]:
    """Feed one conversation through the ``tiered`` preset; tokens and reachability."""
    from langmem_tiers import TieredMemoryStore
    from langmem_tiers.config import Settings
    from langmem_tiers.short_term import build_memory
    from langmem_tiers.tiers.tokens import count_message_tokens

    settings = Settings.from_env(**overrides)  # type: ignore[arg-type]
    turns = conversation.turns[:max_turns] if max_turns else conversation.turns
    user = conversation.speakers[0]
    message_of: dict[str, str] = {}
    raw: list[BaseMessage] = []
    points: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="langmem-bench-") as directory,
        TieredMemoryStore.from_url(f"sqlite:///{directory}/memory.db", settings=settings) as store,
    ):
        memory = build_memory(
            conversation.sample_id, preset="tiered", store=store, settings=settings
        )

        def checkpoint(label: str) -> list[BaseMessage]:
            view = memory.context()
            context_tokens = count_message_tokens(view)
            raw_tokens = count_message_tokens(raw)
            points[label] = {
                "turn": len(raw),
                "context_tokens": context_tokens,
                "raw_tokens": raw_tokens,
                "ratio": round(context_tokens / raw_tokens, 4),
                "messages_in_window": len(memory.records()),
                "messages_in_context": len(_context_ids(view)),
            }
            return view

        for number, turn in enumerate(turns, start=1):
            message = turn_message(turn, user)
            result = memory.add_messages([message])
            if result.error is not None:
                raise RuntimeError(f"{conversation.sample_id}: add failed: {result.error!r}")
            message_of[turn.dia_id] = result.ids[0]
            raw.append(message)
            if number in CHECKPOINTS:
                checkpoint(str(number))
        final_view = checkpoint("end")
        in_context = _context_ids(final_view)

        questions = [
            q
            for q in retrieval_questions(conversation)
            if all(dia in message_of for dia in q.evidence)
        ]
        reach = evidence_reach(questions, message_of, in_context, memory, limit=SEARCH_K)
    return {
        "sample_id": conversation.sample_id,
        "turns": len(turns),
        "checkpoints": points,
        "reachable": {
            "questions": len(questions),
            "evidence_turns": reach.evidence,
            "in_context": reach.in_view,
            "by_search_only": reach.by_search,
            "share": round(reach.reached / reach.evidence, 4) if reach.evidence else None,
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def _summarise(conversations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    labels = [*(str(c) for c in CHECKPOINTS), "end"]
    mean: dict[str, Any] = {}
    for label in labels:
        rows = [c["checkpoints"][label] for c in conversations if label in c["checkpoints"]]
        if rows:
            mean[label] = {
                "conversations": len(rows),
                "context_tokens": round(sum(r["context_tokens"] for r in rows) / len(rows), 1),
                "raw_tokens": round(sum(r["raw_tokens"] for r in rows) / len(rows), 1),
                "ratio": round(sum(r["ratio"] for r in rows) / len(rows), 4),
            }
    evidence = sum(c["reachable"]["evidence_turns"] for c in conversations)
    in_view = sum(c["reachable"]["in_context"] for c in conversations)
    by_search = sum(c["reachable"]["by_search_only"] for c in conversations)
    reachable = {
        "evidence_turns": evidence,
        "share": round((in_view + by_search) / evidence, 4) if evidence else None,
        "in_context_share": round(in_view / evidence, 4) if evidence else None,
        "by_search_only_share": round(by_search / evidence, 4) if evidence else None,
    }
    return {"mean": mean, "reachable": reachable}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, write the JSON and return the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="how many to run")
    parser.add_argument("--max-turns", type=int, default=None, help="cut each conversation")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=RESULTS / "token_savings.json")
    args = parser.parse_args(argv)

    conversations = load_locomo(args.data)
    count = args.conversations or (2 if args.quick else len(conversations))
    conversations = conversations[:count]
    configs: list[dict[str, Any]] = []
    for name in args.configs:
        print(f"token_savings: {name}", flush=True)
        rows = []
        for conversation in conversations:
            row = run_conversation(conversation, CONFIGS[name], max_turns=args.max_turns)
            end = row["checkpoints"]["end"]
            print(
                f"  {row['sample_id']}: {row['turns']} turns, context {end['context_tokens']:,} "
                f"/ raw {end['raw_tokens']:,} tokens, reachable {row['reachable']['share']}",
                flush=True,
            )
            rows.append(row)
        configs.append(
            {
                "name": name,
                "settings": CONFIGS[name],
                **_summarise(rows),
                "conversations": rows,
            }
        )
    results: dict[str, Any] = {
        "benchmark": "token_savings",
        "machine": machine_info(),
        "data": args.data.name,
        "preset": "tiered",
        "token_counter": "count_message_tokens (about 4 characters a token, plus per message)",
        "checkpoints": [*(str(c) for c in CHECKPOINTS), "end"],
        "search_k": SEARCH_K,
        "configs": configs,
    }
    write_results(results, args.out)
    return results


if __name__ == "__main__":
    main()
