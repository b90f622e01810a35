"""The README's pattern under a threaded server: a history per request, one shared store.

Four threads each build a fresh :class:`TieredChatMessageHistory` per add (as
``RunnableWithMessageHistory`` does per request) on one ``TieredMemoryStore``, writing
into sessions the threads share. Every add must succeed, every message must be stored
exactly once, and a shared reset window must be summarised once per overflow.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.presets import get_preset
from langmem_tiers.short_term.records import draft_from_message
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.sql.backends import WAL_CHECKPOINT_PAGES, WRITER_CACHE_KIB
from langmem_tiers.tiers.base import Summary
from langmem_tiers.tiers.summarizer import OfflineSummarizer

THREADS = 4
ADDS = 40
SESSIONS = ["alpha", "beta", "gamma"]
INDEX: Any = {"dims": 16, "embed": DeterministicFakeEmbedding(size=16), "fields": ["content"]}


class CountingSummarizer(OfflineSummarizer):
    """The offline summariser, remembering the ids of every call (from any thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str | None]] = []
        self._lock = threading.Lock()

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        with self._lock:
            self.calls.append([m.id for m in messages])
        return super().summarize(messages)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'shared.db'}"


def _in_threads(work: Callable[[int], None]) -> list[BaseException]:
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def run(thread: int) -> None:
        try:
            start.wait(30)
            work(thread)
        except BaseException as err:  # reported by the test
            failures.append(err)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return failures


def _text(thread: int, n: int) -> str:
    return f"thread {thread} says number {n}"


def test_histories_per_request_on_one_store_store_every_message_once(store_url: str) -> None:
    settings = Settings(url=store_url, context_token_limit=100_000, context_token_buffer=1_000)
    with TieredMemoryStore.from_url(store_url, index=INDEX, settings=settings) as store:

        def work(thread: int) -> None:
            for n in range(ADDS):
                session = SESSIONS[(thread + n) % len(SESSIONS)]
                history = TieredChatMessageHistory(
                    session, store=store, preset="tiered", settings=settings
                )
                history.add_messages([HumanMessage(_text(thread, n)), AIMessage(f"ok {n}")])

        failures = _in_threads(work)
        assert failures == [], f"{len(failures)} adds failed, e.g. {failures[0]!r}"
        log = SqlMessageLog(store)
        by_session = {s: log.read(s) for s in SESSIONS}
    stored = [r for records in by_session.values() for r in records]
    texts = Counter(r.text for r in stored if r.role == "human")
    expected = {_text(t, n) for t in range(THREADS) for n in range(ADDS)}
    assert set(texts) == expected, "a message was lost"
    assert max(texts.values()) == 1, "a message was stored twice"
    assert len(stored) == 2 * THREADS * ADDS
    for session, records in by_session.items():
        seqs = [r.seq for r in records]
        assert seqs == list(range(1, len(seqs) + 1)), f"ids of {session} are not contiguous"


def test_a_shared_reset_window_is_summarised_once_per_overflow(store_url: str) -> None:
    settings = Settings(url=store_url, short_term_memory_limit=3)
    preset = get_preset("reset").with_changes(log="sql")
    summarizer = CountingSummarizer()
    with TieredMemoryStore.from_url(store_url, index=INDEX, settings=settings) as store:

        def work(thread: int) -> None:
            for n in range(ADDS):
                history = TieredChatMessageHistory(
                    "shared", store=store, preset=preset, settings=settings, summarizer=summarizer
                )
                history.add_messages([HumanMessage(_text(thread, n))])

        failures = _in_threads(work)
        assert failures == [], f"{len(failures)} adds failed, e.g. {failures[0]!r}"
        final = TieredChatMessageHistory(
            "shared", store=store, preset=preset, settings=settings, summarizer=summarizer
        ).memory.consolidate()
        assert final.error is None
        window = SqlMessageLog(store).read("shared")
        summaries = [
            item
            for item in store.search(namespace_for("shared", "semantic"), limit=10_000)
            if item.value.get("category") == "conversation_summary"
        ]
    covered = Counter(i for s in summaries for i in s.value["source_message_ids"])
    kept = {r.id for r in window}
    everything = {f"m{i}" for i in range(1, THREADS * ADDS + 1)}
    assert set(covered) | kept == everything, "a message was lost"
    assert max(covered.values()) == 1, "a message is in two summaries"
    assert not set(covered) & kept, "a message is in a summary and in the window"
    assert len(summarizer.calls) == len(summaries), "a window was summarised twice"


def test_logs_wrapping_the_store_connection_queue_behind_the_store(store_url: str) -> None:
    # Older code (and user code) wraps ``store.conn`` itself: a log made per add, while
    # other threads write long-term memories through the store on the same connection.
    settings = Settings(url=store_url)
    with TieredMemoryStore.from_url(store_url, index=INDEX, settings=settings) as store:

        def work(thread: int) -> None:
            for n in range(ADDS):
                log = SqlMessageLog(store.conn)
                log.append("raw", [draft_from_message(HumanMessage(_text(thread, n)), index=0)])
                store.put(("notes", str(thread)), f"n{n}", {"content": _text(thread, n)})

        failures = _in_threads(work)
        assert failures == [], f"{len(failures)} writes failed, e.g. {failures[0]!r}"
        texts = Counter(r.text for r in SqlMessageLog(store.conn).read("raw"))
        notes = [len(store.search(("notes", str(t)), limit=1000)) for t in range(THREADS)]
    assert len(texts) == THREADS * ADDS
    assert max(texts.values()) == 1
    assert notes == [ADDS] * THREADS


def test_a_connection_inside_its_own_transaction_is_a_clear_error(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "busy.db", check_same_thread=False, isolation_level=None)
    conn.execute("BEGIN")
    with pytest.raises(ConfigurationError, match="inside an open transaction"):
        SqlMessageLog(conn)
    conn.execute("ROLLBACK")
    assert SqlMessageLog(conn).read("s1") == []


def test_a_file_database_is_logged_ahead_and_checkpointed_in_large_steps(tmp_path: Path) -> None:
    """WAL for readers beside a writer; checkpoints every WAL_CHECKPOINT_PAGES pages, so a
    batch's scattered index pages are not copied into the database at every commit; and a
    page cache large enough to hold them until then."""
    conn = sqlite3.connect(tmp_path / "memory.db", check_same_thread=False, isolation_level=None)
    SqlMessageLog(conn)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (WAL_CHECKPOINT_PAGES,)
    assert conn.execute("PRAGMA cache_size").fetchone() == (-WRITER_CACHE_KIB,)
