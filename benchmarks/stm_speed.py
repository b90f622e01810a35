"""Short-term memory speed: adding one message and building a 1,000-message session's context.

This project's :class:`~langmem_tiers.short_term.ShortTermMemory` with the ``tiered``
preset (offline tierer, token-budget window, tiered view) is measured on every message
log it has: in memory, JSONL files, and the SQL log on SQLite and on PostgreSQL when
``langmem_tiers.short_term.sql_log`` exists (the run records which were available).
Long-term memory is a :class:`~langmem_tiers.TieredMemoryStore` on the same database as
the SQL log, and on embedded SQLite for the in-memory and JSONL logs.

The peer is langchain-postgres' ``PostgresChatMessageHistory``: adding one message, and
reading all messages of a 1,000-message session (its ``messages``, which is all it does to
give a chain its history).

For ours, *add one* is ``add_messages([message])``: tiering, the log write, reading the
window back and the window policy. A session is built by 1,000 such adds (alternating
user and assistant, seeded English-like texts of 25-45 words); the p50 is over all of them
and over the last 100 (a full session). *Context* is ``context()`` on the finished
session: the log read, a long-term memory search for the latest user message, and the
tiered view of every message.

Run::

    python -m benchmarks.stm_speed [--quick] [--messages 1000]

and read ``benchmarks/results/stm_speed.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from benchmarks.postgres import DEFAULT_POSTGRES_URL, postgres_problem, temporary_schema
from benchmarks.report import machine_info, timing_summary, write_results

__all__ = ["SYSTEMS", "chat_messages", "main"]

RESULTS = Path(__file__).resolve().parent / "results"
SQL_LOG_MODULE = "langmem_tiers.short_term.sql_log"

SYSTEMS: dict[str, str] = {
    "ours-memory": "langmem_tiers, in-memory log",
    "ours-jsonl": "langmem_tiers, JSONL log",
    "ours-sql-sqlite": "langmem_tiers, SQL log on SQLite",
    "ours-sql-postgres": "langmem_tiers, SQL log on PostgreSQL",
    "langchain-postgres": "langchain-postgres PostgresChatMessageHistory",
}
_POSTGRES_SYSTEMS = {"ours-sql-postgres", "langchain-postgres"}
_SQL_SYSTEMS = {"ours-sql-sqlite", "ours-sql-postgres"}

_NAMES = ("Jordan", "Priya", "Tomas", "Aiko", "Lena", "Marcus", "Sofia", "Kwame")
_PLACES = ("Lisbon", "the climbing gym", "Osaka", "the library", "Berlin", "the lake")
_TOPICS = ("the RAI Chat launch", "a pottery class", "the marathon", "adopting a dog",
           "the budget review", "a new job offer", "the garden", "a jazz concert")  # fmt: skip
_FILLER = (
    "honestly", "it was a lot", "and I keep thinking about it", "which surprised me",
    "so we will see", "and that felt good", "but it is fine", "as usual",
)  # fmt: skip


def chat_messages(n: int, *, seed: int = 0) -> list[BaseMessage]:
    """``n`` seeded chat messages, user and assistant in turn, each 25-45 words.

    Example:
        >>> [m.type for m in chat_messages(3)]
        ['human', 'ai', 'human']
    """
    rng = np.random.default_rng(seed)

    def pick(options: Sequence[str]) -> str:
        return options[int(rng.integers(len(options)))]

    out: list[BaseMessage] = []
    for i in range(n):
        sentences: list[str] = []
        while sum(len(s.split()) for s in sentences) < int(rng.integers(25, 46)):
            sentences.append(
                f"On day {int(rng.integers(1, 29))} {pick(_NAMES)} and I went to {pick(_PLACES)} "
                f"to talk about {pick(_TOPICS)} for {int(rng.integers(5, 90))} minutes, "
                f"{pick(_FILLER)}."
            )
        text = " ".join(sentences)
        out.append(HumanMessage(text) if i % 2 == 0 else AIMessage(f"I see. {text}"))
    return out


class _Session:
    """What is timed: add one message, and build the context (or read the history)."""

    def __init__(
        self, add: Callable[[BaseMessage], Any], context: Callable[[], list[BaseMessage]]
    ) -> None:
        self.add = add
        self.context = context
        self.memory: Any = None


@contextmanager
def open_session(name: str, postgres_url: str) -> Iterator[_Session]:
    """A fresh, empty session of system ``name``."""
    with ExitStack() as stack:
        if name == "langchain-postgres":
            import psycopg
            from langchain_postgres import PostgresChatMessageHistory

            url = stack.enter_context(temporary_schema(postgres_url))
            conn = stack.enter_context(psycopg.connect(url, autocommit=True))
            PostgresChatMessageHistory.create_tables(conn, "chat_history")
            history = PostgresChatMessageHistory(
                "chat_history", str(uuid.uuid4()), sync_connection=conn
            )
            yield _Session(lambda m: history.add_messages([m]), lambda: history.messages)
            return

        from langmem_tiers import TieredMemoryStore
        from langmem_tiers.short_term import JsonlMessageLog, MessageLog, build_memory

        directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="langmem-bench-"))
        if name == "ours-sql-postgres":
            store_url = stack.enter_context(temporary_schema(postgres_url))
        else:
            store_url = f"sqlite:///{directory}/memory.db"
        store = stack.enter_context(TieredMemoryStore.from_url(store_url))
        log: MessageLog | None = None
        if name == "ours-jsonl":
            log = JsonlMessageLog(Path(directory) / "sessions")
        elif name in _SQL_SYSTEMS:
            sql_log = importlib.import_module(SQL_LOG_MODULE)
            log = sql_log.SqlMessageLog(store.conn)
        memory = build_memory("bench-session", preset="tiered", store=store, log=log)
        session = _Session(lambda m: memory.add_messages([m]), memory.context)
        session.memory = memory
        yield session


def run_one(
    name: str, messages: Sequence[BaseMessage], context_reps: int, late: int, postgres_url: str
) -> dict[str, Any]:
    """Build a session message by message, then time building its context."""
    from langmem_tiers.tiers.tokens import count_message_tokens

    with open_session(name, postgres_url) as session:
        add_seconds: list[float] = []
        for message in messages:
            t0 = time.perf_counter()
            session.add(message)
            add_seconds.append(time.perf_counter() - t0)
        view = session.context()  # warm-up, and what the timed builds return
        context_seconds: list[float] = []
        for _ in range(context_reps):
            t0 = time.perf_counter()
            session.context()
            context_seconds.append(time.perf_counter() - t0)
        window = len(session.memory.records()) if session.memory is not None else len(view)
    result: dict[str, Any] = {
        "system": name,
        "label": SYSTEMS[name],
        "add_one": timing_summary(add_seconds),
        "add_one_late": timing_summary(add_seconds[-late:]),
        "context": timing_summary(context_seconds),
        "messages_in_window": window,
        "messages_in_context": len(view),
        "context_tokens": count_message_tokens(view),
        "raw_tokens": count_message_tokens(list(messages)),
    }
    print(
        f"  {name}: add one p50 {result['add_one']['p50_ms']:.2f} ms, "
        f"context p50 {result['context']['p50_ms']:.1f} ms",
        flush=True,
    )
    return result


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, write the JSON and return the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer context builds")
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--context-reps", type=int, default=None, help="default 50, quick 10")
    parser.add_argument("--systems", nargs="+", choices=list(SYSTEMS), default=list(SYSTEMS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--out", type=Path, default=RESULTS / "stm_speed.json")
    args = parser.parse_args(argv)

    reps = args.context_reps or (10 if args.quick else 50)
    late = max(1, min(100, args.messages // 10))
    messages = chat_messages(args.messages, seed=args.seed)
    has_sql_log = importlib.util.find_spec(SQL_LOG_MODULE) is not None
    pg_problem = (
        postgres_problem(args.postgres_url)
        if _POSTGRES_SYSTEMS.intersection(args.systems)
        else None
    )
    runs: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    notes: list[str] = []
    if not has_sql_log:
        notes.append(
            f"No SQL message log ({SQL_LOG_MODULE}) in this version: ours measured on the "
            "in-memory and JSONL logs only."
        )
    print(f"stm_speed: sessions of {args.messages:,} messages", flush=True)
    for name in args.systems:
        if name in _SQL_SYSTEMS and not has_sql_log:
            skipped.append({"system": name, "reason": f"{SQL_LOG_MODULE} does not exist"})
            continue
        if name in _POSTGRES_SYSTEMS and pg_problem is not None:
            skipped.append({"system": name, "reason": pg_problem})
            continue
        try:
            runs.append(run_one(name, messages, reps, late, args.postgres_url))
        except Exception as err:  # a broken backend is a result to report, not a crash
            print(f"  {name}: failed: {type(err).__name__}: {err}", flush=True)
            skipped.append({"system": name, "reason": f"failed: {type(err).__name__}: {err}"})

    results: dict[str, Any] = {
        "benchmark": "stm_speed",
        "machine": machine_info(args.postgres_url),
        "config": {
            "messages": args.messages,
            "late_window": late,
            "context_reps": reps,
            "preset": "tiered",
            "seed": args.seed,
        },
        "runs": runs,
        "skipped": skipped,
        "notes": notes,
    }
    write_results(results, args.out)
    return results


if __name__ == "__main__":
    main()
