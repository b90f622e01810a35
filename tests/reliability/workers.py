"""Child processes of the concurrency tests: writers into one shared session.

Each worker opens its own store and SQL message log on the shared database (as separate
application processes would), waits at a barrier so all start together, and writes what
it did to a JSON file the test reads afterwards. Summarisers append one line per call to
a file, so the test can count consolidations across processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import (
    MovingWindow,
    ResetWindow,
    SlidingWindow,
    WindowPolicy,
)
from langmem_tiers.short_term.records import draft_from_message
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.tiers.base import Summary
from langmem_tiers.tiers.offline import OfflineTierer
from langmem_tiers.tiers.summarizer import OfflineSummarizer

from .harness import index_config

__all__ = [
    "SESSION",
    "WINDOW",
    "PolicyName",
    "adder",
    "consolidator",
    "jsonl_writer",
    "policy_for",
    "racer",
    "summarised",
]

SESSION = "shared"
WINDOW = 5
"""The moving window's limit; a reset window allows this many user messages."""

PolicyName = Literal["sliding", "moving_window", "reset"]


def policy_for(name: PolicyName) -> WindowPolicy:
    """The window policy a test names."""
    if name == "sliding":
        return SlidingWindow(10)
    if name == "moving_window":
        return MovingWindow(WINDOW)
    return ResetWindow(WINDOW)


class CountingSummarizer(OfflineSummarizer):
    """The offline summariser, recording every call's message ids in a file.

    With a barrier, each call first waits (up to ``timeout``) for another process to be
    summarising too; a barrier that times out (the calls were serialised) is fine.
    """

    def __init__(self, path: Path, barrier: Any = None, timeout: float = 5.0) -> None:
        super().__init__()
        self.path = path
        self.barrier = barrier
        self.timeout = timeout

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps([m.id for m in messages]) + "\n")
        if self.barrier is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                self.barrier.wait(self.timeout)
        return super().summarize(messages)


def summarised(directory: Path) -> list[list[str]]:
    """Every summariser call of every worker: the ids it summarised."""
    calls: list[list[str]] = []
    for path in sorted(directory.glob("summaries-*.jsonl")):
        calls.extend(json.loads(line) for line in path.read_text("utf-8").splitlines())
    return calls


def _memory(
    store: TieredMemoryStore, policy: PolicyName, summarizer: OfflineSummarizer
) -> ShortTermMemory:
    return ShortTermMemory(
        SESSION,
        log=SqlMessageLog(store.conn),
        store=store,
        policy=policy_for(policy),
        tierer=OfflineTierer(),
        summarizer=summarizer,
        settings=Settings(),
        view="raw",
    )


def _open(url: str) -> Any:
    return TieredMemoryStore.from_url(url, index=index_config(), settings=Settings(), pool_size=2)


def _errors_to(directory: Path, name: str) -> None:
    fd = os.open(directory / f"{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.dup2(fd, 2)


def adder(
    url: str, worker: int, count: int, policy: PolicyName, start: Any, directory: str
) -> None:
    """Add ``count`` messages one at a time; record the ids given and any error."""
    out = Path(directory)
    _errors_to(out, f"adder-{worker}")
    with _open(url) as store:
        memory = _memory(store, policy, CountingSummarizer(out / f"summaries-{worker}.jsonl"))
        start.wait(60)
        ids: list[str] = []
        errors: list[str] = []
        began = time.monotonic()
        for n in range(count):
            result = memory.add_messages([HumanMessage(f"worker {worker} message {n}")])
            ids.extend(result.ids)
            if result.error is not None:
                errors.append(repr(result.error))
        report = {"ids": ids, "errors": errors, "seconds": time.monotonic() - began}
        (out / f"adder-{worker}.json").write_text(json.dumps(report), "utf-8")


def consolidator(url: str, policy: PolicyName, start: Any, stop: Any, directory: str) -> None:
    """Run ``consolidate()`` in a loop while the adders write, until ``stop`` is set."""
    out = Path(directory)
    _errors_to(out, "consolidator")
    with _open(url) as store:
        memory = _memory(store, policy, CountingSummarizer(out / "summaries-consolidator.jsonl"))
        start.wait(60)
        runs, moved, errors = 0, 0, []
        while not stop.is_set():
            result = memory.consolidate()
            runs += 1
            moved += len(result.consolidated)
            if result.error is not None:
                errors.append(repr(result.error))
        report = {"runs": runs, "moved": moved, "errors": errors}
        (out / "consolidator.json").write_text(json.dumps(report), "utf-8")


def racer(url: str, worker: int, policy: PolicyName, barrier: Any, directory: str) -> None:
    """Add one message that overflows the window, summarising in step with another racer."""
    out = Path(directory)
    _errors_to(out, f"racer-{worker}")
    with _open(url) as store:
        summarizer = CountingSummarizer(out / f"summaries-{worker}.jsonl", barrier, 5.0)
        memory = _memory(store, policy, summarizer)
        result = memory.add_messages([HumanMessage(f"racer {worker} overflows the window")])
        report = {"ids": result.ids, "consolidated": result.consolidated,
                  "error": repr(result.error) if result.error else None}  # fmt: skip
        (out / f"racer-{worker}.json").write_text(json.dumps(report), "utf-8")


def jsonl_writer(directory: str, worker: int, count: int, keep: int, start: Any) -> None:
    """Add ``count`` messages to one JSONL session, removing all but the newest ``keep``.

    The removals make the file compact every few writes (``compact_min_lines=4``), so the
    other writer's cache keeps meeting a file replaced under it.
    """
    out = Path(directory)
    _errors_to(out, f"jsonl-{worker}")
    log = JsonlMessageLog(out / "sessions", fsync=False, compact_min_lines=4)
    start.wait(60)
    ids: list[str] = []
    removed: list[str] = []
    errors: list[str] = []
    for n in range(count):
        draft = draft_from_message(HumanMessage(f"worker {worker} message {n}"), index=0)
        try:
            (record,) = log.append(SESSION, [draft])
            ids.append(record.id)
            window = log.read(SESSION)
            if len(window) > keep:
                removed.extend(log.remove(SESSION, [r.id for r in window[:-keep]]))
        except Exception as err:  # reported to the test
            errors.append(repr(err))
    report = {"ids": ids, "removed": removed, "errors": errors}
    (out / f"jsonl-{worker}.json").write_text(json.dumps(report), "utf-8")
