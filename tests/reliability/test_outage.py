"""Database outages: PostgreSQL connections terminated between and in the middle of operations.

Connections are terminated with ``pg_terminate_backend`` from a second connection. Only
connections carrying the test's own ``application_name`` are touched (the server may be
shared). To hit the middle of an operation deterministically, a second transaction holds
a row lock the operation needs; once the operation waits on it (seen in
``pg_stat_activity``), its connection is terminated.

Each guarantee runs through the sync API and its async twin (an async pool).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.store.base import PutOp

from langmem_tiers.config import Settings
from langmem_tiers.errors import BackendError
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import MovingWindow
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.tiers.base import Summary
from langmem_tiers.tiers.summarizer import OfflineSummarizer

from .conftest import with_application_name
from .harness import index_config, sql_rows

pytestmark = pytest.mark.postgres

NS = ("agent_a", "semantic")


@asynccontextmanager
async def _store(url: str, mode: str) -> AsyncIterator[TieredMemoryStore]:
    settings = Settings()
    if mode == "async":
        async with TieredMemoryStore.afrom_url(
            url, index=index_config(), settings=settings, pool_size=2
        ) as store:
            yield store
    else:
        with TieredMemoryStore.from_url(
            url, index=index_config(), settings=settings, pool_size=2
        ) as store:
            yield store


async def _call(mode: str, obj: Any, name: str, *args: Any) -> Any:
    """The sync method in a worker thread (it blocks), or the async twin."""
    if mode == "async":
        return await getattr(obj, "a" + name)(*args)
    return await asyncio.to_thread(getattr(obj, name), *args)


def _admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


def _terminate(url: str, application: str, *, waiting_on_lock: bool = False) -> int:
    """Terminate the server connections of ``application``; answers how many. Between
    operations the call returns once the sessions have ended (their connections closed);
    a session waiting on a lock is only signalled."""
    condition = " AND wait_event_type = 'Lock'" if waiting_on_lock else ""
    wait = "" if waiting_on_lock else ", 10000"
    with _admin(url) as admin:
        rows = admin.execute(
            f"SELECT pg_terminate_backend(pid{wait}) FROM pg_stat_activity"
            f" WHERE application_name = %s AND pid <> pg_backend_pid(){condition}",
            [application],
        ).fetchall()
    return len(rows)


async def _terminate_when_blocked(url: str, application: str, running: Awaitable[Any]) -> None:
    """Wait until a connection of ``application`` waits on a lock, then terminate it."""
    task = asyncio.ensure_future(running)
    deadline = time.monotonic() + 20
    while not await asyncio.to_thread(_terminate, url, application, waiting_on_lock=True):
        assert not task.done(), f"finished without waiting on the lock: {task.result()!r}"
        assert time.monotonic() < deadline, "the operation never waited on the held lock"
        await asyncio.sleep(0.01)
    await asyncio.wait([task], timeout=20)


class _LockHolder:
    """A second transaction holding row locks (``SELECT ... FOR UPDATE``) until released."""

    def __init__(self, url: str, statement: str, params: Sequence[Any]) -> None:
        self.conn = psycopg.connect(url, autocommit=False)
        rows = self.conn.execute(statement, list(params)).fetchall()
        assert rows, f"nothing to lock with {statement!r}"

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def _counts(store: TieredMemoryStore) -> tuple[int, int]:
    items = sql_rows(store, "SELECT count(*) FROM lmt_items")[0][0]
    events = sql_rows(store, "SELECT count(*) FROM lmt_events")[0][0]
    return int(items), int(events)


async def test_connections_terminated_between_operations_are_replaced(
    postgres_url: str, mode: str
) -> None:
    url, application = with_application_name(postgres_url)
    async with _store(url, mode) as store:
        await _call(mode, store, "put", NS, "a", {"content": "before the outage"})
        for _ in range(3):
            assert await asyncio.to_thread(_terminate, postgres_url, application) >= 1
            await _call(mode, store, "put", NS, "b", {"content": "after the outage"})
            item = await _call(mode, store, "get", NS, "a")
            assert item.value == {"content": "before the outage"}
            hits = await _call(mode, store, "search", NS)
            assert sorted(h.key for h in hits) == ["a", "b"]


async def test_a_batch_cut_off_mid_transaction_fails_whole_and_the_pool_recovers(
    postgres_url: str, mode: str
) -> None:
    url, application = with_application_name(postgres_url)
    async with _store(url, mode) as store:
        await _call(mode, store, "put", NS, "locked", {"content": "old"})
        before = await asyncio.to_thread(_counts, store)
        holder = _LockHolder(
            postgres_url, "SELECT id FROM lmt_items WHERE key = %s FOR UPDATE", ["locked"]
        )
        ops = [
            PutOp(NS, "new1", {"content": "first of the batch"}),
            PutOp(NS, "new2", {"content": "second of the batch"}),
            PutOp(NS, "locked", {"content": "new"}),  # waits on the held row lock
        ]
        outcome: list[Any] = []

        async def batch() -> None:
            try:
                outcome.append(await _call(mode, store, "batch", ops))
            except Exception as err:
                outcome.append(err)

        try:
            await _terminate_when_blocked(postgres_url, application, batch())
        finally:
            holder.release()
        (error,) = outcome
        assert isinstance(error, BackendError), error
        assert "the database failed" in str(error)
        # Nothing of the batch was written, and the next operations succeed.
        assert await _call(mode, store, "get", NS, "new1") is None
        assert await _call(mode, store, "get", NS, "new2") is None
        locked = await _call(mode, store, "get", NS, "locked")
        assert locked.value == {"content": "old"}
        assert await asyncio.to_thread(_counts, store) == before
        await _call(mode, store, "batch", ops)  # the same batch again: now it lands whole
        assert (await _call(mode, store, "get", NS, "new2")).value["content"].startswith("second")
        assert (await _call(mode, store, "get", NS, "locked")).value == {"content": "new"}


class _CountingSummarizer(OfflineSummarizer):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        self.calls += 1
        return super().summarize(messages)


async def _memory(store: TieredMemoryStore, mode: str, summarizer: Any) -> ShortTermMemory:
    log = SqlMessageLog(store.conn)
    if mode == "async":
        await log.asetup()
    return ShortTermMemory(
        "s1", log=log, store=store, policy=MovingWindow(3), summarizer=summarizer, view="raw"
    )


def _human(text: str) -> list[BaseMessage]:
    return [HumanMessage(text)]


async def test_an_add_cut_off_while_allocating_ids_stores_nothing_and_ids_stay_contiguous(
    postgres_url: str, mode: str
) -> None:
    url, application = with_application_name(postgres_url)
    async with _store(url, mode) as store:
        memory = await _memory(store, mode, _CountingSummarizer())
        first = await _call(mode, memory, "add_messages", _human("before"))
        assert first.ids == ["m1"]
        holder = _LockHolder(
            postgres_url,
            "SELECT last_seq FROM lmt_stm_sessions WHERE session_id = %s FOR UPDATE",
            ["s1"],
        )
        outcome: list[Any] = []

        async def add() -> None:
            try:
                outcome.append(await _call(mode, memory, "add_messages", _human("cut off")))
            except Exception as err:
                outcome.append(err)

        try:
            await _terminate_when_blocked(postgres_url, application, add())
        finally:
            holder.release()
        (error,) = outcome
        assert isinstance(error, BackendError), error
        records = await _call(mode, memory, "records")
        assert [(r.id, r.text) for r in records] == [("m1", "before")]
        after = await _call(mode, memory, "add_messages", _human("after"))
        assert after.ids == ["m2"]
        assert after.error is None


async def test_an_outage_between_persisting_and_removing_is_finished_without_a_second_summary(
    postgres_url: str, mode: str
) -> None:
    url, application = with_application_name(postgres_url)
    async with _store(url, mode) as store:
        summarizer = _CountingSummarizer()
        memory = await _memory(store, mode, summarizer)
        for n in range(1, 4):
            await _call(mode, memory, "add_messages", _human(f"message {n}"))
        # The removal of m1-m3 waits on these row locks; the summary is already stored.
        holder = _LockHolder(
            postgres_url,
            "SELECT seq FROM lmt_stm_messages WHERE session_id = %s AND seq <= 3 FOR UPDATE",
            ["s1"],
        )
        outcome: list[Any] = []

        async def add() -> None:
            outcome.append(await _call(mode, memory, "add_messages", _human("message 4")))

        try:
            await _terminate_when_blocked(postgres_url, application, add())
        finally:
            holder.release()
        (result,) = outcome
        assert result.ids == ["m4"], "the message itself was acknowledged"
        assert isinstance(result.error, BackendError), result.error
        records = await _call(mode, memory, "records")
        assert [r.id for r in records] == ["m1", "m2", "m3", "m4"], "the window was kept"
        assert summarizer.calls == 1

        result = await _call(mode, memory, "add_messages", _human("message 5"))
        assert result.error is None
        assert result.consolidated == ["m1", "m2", "m3"]
        assert summarizer.calls == 1, "the stored summary was found, not made again"
        summaries = await _call(mode, store, "search", namespace_for("s1", "semantic"))
        assert [s.value["source_message_ids"] for s in summaries] == [["m1", "m2", "m3"]]
        assert [r.id for r in await _call(mode, memory, "records")] == ["m4", "m5"]
