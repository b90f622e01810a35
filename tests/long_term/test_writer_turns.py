"""Writers of one namespace on one event loop take their turns in arrival order.

The change counter of a namespace is a row lock in PostgreSQL, which wakes all its
waiters at once: under load some writer lost several times running. The turns queue them
first-come first-served in the process; the counters stay the database's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.records import join_namespace
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.sql.dialect import PostgresDialect
from langmem_tiers.sql.flow import Flow, Sql, TakeCounters, Transaction
from langmem_tiers.sql.postgres_io import WriterTurns


async def _holding(turns: WriterTurns, names: list[str], log: list[str], tag: str) -> None:
    held = await turns.take(names)
    log.append(f"{tag}:{','.join(held)}")
    await asyncio.sleep(0.001)
    turns.give_back(held)


async def test_writers_of_one_namespace_are_served_in_arrival_order() -> None:
    turns = WriterTurns(depth=1)
    first = await turns.take(["a"])
    log: list[str] = []
    waiting = []
    for n in range(6):
        waiting.append(asyncio.ensure_future(_holding(turns, ["a"], log, f"w{n}")))
        await asyncio.sleep(0)  # each has asked before the next is started
    other = await turns.take(["b"])  # another namespace does not wait
    assert other == ["b"]
    turns.give_back(other)
    assert log == []
    turns.give_back(first)
    await asyncio.gather(*waiting)
    assert log == [f"w{n}:a" for n in range(6)]
    # Nothing is kept for namespaces nobody writes now.
    assert turns._queues == {}


async def test_depth_lets_the_next_writer_wait_in_the_database_already() -> None:
    turns = WriterTurns(depth=2)
    first = await turns.take(["a"])
    second = await asyncio.wait_for(turns.take(["a"]), 1)
    assert (first, second) == (["a"], ["a"])
    third = asyncio.ensure_future(turns.take(["a"]))
    await asyncio.sleep(0.01)
    assert not third.done()
    turns.give_back(first)
    assert await asyncio.wait_for(third, 1) == ["a"]
    turns.give_back(second)
    turns.give_back(await third)


async def test_a_writer_that_waited_too_long_goes_on_without_its_turn() -> None:
    turns = WriterTurns(wait=0.02, depth=1)
    held = await turns.take(["a", "b"])
    assert held == ["a", "b"]
    assert await turns.take(["b", "c"]) == []  # "b" is busy: "c" is not waited for either
    assert await turns.take(["c"]) == ["c"]
    turns.give_back(["c"])
    turns.give_back(held)
    assert await turns.take(["a", "b"]) == ["a", "b"]


async def test_a_cancelled_writer_leaves_no_turn_taken() -> None:
    turns = WriterTurns(depth=1)
    held = await turns.take(["a"])
    cancelled = asyncio.ensure_future(turns.take(["a"]))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    turns.give_back(held)
    assert await asyncio.wait_for(turns.take(["a"]), 1) == ["a"]


# -- on PostgreSQL, through the store ---------------------------------------------------------


def _take(*names: str) -> Flow[None]:
    """Take the counters of ``names`` one after another, as the store's writers take them."""
    statement = PostgresDialect().lock_scope_changes_sql()
    assert statement is not None
    for name in names:
        yield TakeCounters(Sql(statement, [[name]]), (name,))


def _take_then_fail(name: str) -> Flow[None]:
    yield from _take(name)
    yield Sql("SELECT 1 / 0")


def _in_transaction(flow: Flow[None]) -> Flow[None]:
    yield Transaction(flow)


async def test_the_stores_writes_wait_for_their_turn(
    postgres_schemas: Callable[[], str],
) -> None:
    async with TieredMemoryStore.afrom_url(postgres_schemas(), pool_size=2) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        await engine.aadd_episodic("alice", "Alice noted the shelf")
        turns = store.db.async_io._turns
        turns.wait, turns.depth = 30.0, 1
        elsewhere = await turns.take([join_namespace(namespace_for("alice", "episodic"))])
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(engine.aadd_episodic("alice", "Alice came back"), 0.5)
        await engine.aadd_episodic("bob", "Bob is another namespace")  # does not wait
        turns.give_back(elsewhere)
        await asyncio.wait_for(engine.aadd_episodic("alice", "Alice came back"), 10)
        assert len(await engine.amemories("alice", kinds="episodic")) == 2


async def test_turns_end_with_the_transaction_committed_or_rolled_back(
    postgres_schemas: Callable[[], str],
) -> None:
    async with TieredMemoryStore.afrom_url(postgres_schemas(), pool_size=4) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        adds = [
            engine.aadd_episodic("alice", f"Alice noted item {n} on the shelf", session_id="s1")
            for n in range(40)
        ]
        added = await asyncio.gather(*adds)
        turns = store.db.async_io._turns
        assert turns._queues == {}
        with pytest.raises(Exception, match="division by zero"):
            await store.db.arun(_in_transaction(_take_then_fail("alice.episodic")))
        assert turns._queues == {}
        # The namespace is writable at once, and every add is there.
        await asyncio.wait_for(engine.aadd_episodic("alice", "Alice came back"), 5)
        memories = await engine.amemories("alice", kinds="episodic", limit=100)
        assert {m.id for m in added} <= {m.id for m in memories}
        assert len(memories) == 41


async def test_only_a_transactions_first_take_waits_for_turns(
    postgres_schemas: Callable[[], str],
) -> None:
    async with TieredMemoryStore.afrom_url(postgres_schemas(), pool_size=2) as store:
        turns = store.db.async_io._turns
        turns.wait, turns.depth = 30.0, 1
        elsewhere = await turns.take(["b"])  # a turn of "b" this transaction will not get
        # Holding "a"'s counter, it goes to the database for "b" at once: waiting in
        # Python there could wait for a writer that needs "a".
        await asyncio.wait_for(store.db.arun(_in_transaction(_take("a", "b"))), 10)
        assert set(turns._queues) == {"b"}
        with pytest.raises(TimeoutError):
            # A first take of "b" waits for its turn.
            await asyncio.wait_for(store.db.arun(_in_transaction(_take("b"))), 0.5)
        turns.give_back(elsewhere)
        await asyncio.wait_for(store.db.arun(_in_transaction(_take("b", "a"))), 10)
        assert turns._queues == {}
