"""Reads of an SQLite file the store opened run on read-only companion connections.

In WAL mode they wait neither for a write in progress nor for each other; a read nested
in a thread's own write transaction still sees that transaction's writes; a reader never
writes; closing the store closes every reader. A connection the caller passes, and
``:memory:``, have no readers.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers.config import Settings
from langmem_tiers.errors import BackendError
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.sql.backends import SqliteFile, SqliteIO, SqliteReaders
from langmem_tiers.sql.flow import Flow, Sql, Transaction


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_url(
        f"sqlite:///{tmp_path / 'memory.db'}", settings=Settings()
    ) as s:
        s.db.run(_statement("CREATE TABLE scratch (x INTEGER)"))
        yield s


def _statement(text: str) -> Flow[list[tuple[Any, ...]]]:
    rows: list[tuple[Any, ...]] = yield Sql(text, ())
    return rows


def _in_transaction(flow: Flow[Any], *, read_only: bool = False) -> Flow[Any]:
    result = yield Transaction(flow, read_only=read_only)
    return result


def _count(store: TieredMemoryStore) -> int:
    rows = store.db.run(_in_transaction(_statement("SELECT count(*) FROM scratch"), read_only=True))
    return int(rows[0][0])


def _holding_the_write_lock(started: threading.Event, release: threading.Event) -> Flow[None]:
    yield Sql("INSERT INTO scratch VALUES (1)", ())
    started.set()
    release.wait(60)


def test_reads_go_on_while_a_write_transaction_is_open(store: TieredMemoryStore) -> None:
    store.put(("docs",), "a", {"text": "the launch moved to Friday"})
    started, release = threading.Event(), threading.Event()
    writer = threading.Thread(
        target=store.db.run, args=(_in_transaction(_holding_the_write_lock(started, release)),)
    )
    writer.start()
    try:
        assert started.wait(30)
        answers: list[Any] = []
        reader = threading.Thread(
            target=lambda: answers.extend(
                [
                    store.get(("docs",), "a"),
                    store.search(("docs",), query="launch"),
                    _count(store),
                ]
            )
        )
        reader.start()
        reader.join(30)
        # On one shared connection the reader would still wait for the writer here.
        assert not reader.is_alive()
        got, found, count = answers
        assert got is not None
        assert got.value == {"text": "the launch moved to Friday"}
        assert [item.key for item in found] == ["a"]
        assert count == 0  # the open transaction's row is not committed
    finally:
        release.set()
        writer.join(30)
    assert _count(store) == 1


def _write_then_read(text: str) -> Flow[tuple[int, int]]:
    yield Sql("INSERT INTO scratch VALUES (1)", ())
    inner = yield Transaction(_statement("SELECT count(*) FROM scratch"), read_only=True)
    again = yield Transaction(_statement(text), read_only=True)
    return int(inner[0][0]), int(again[0][0])


def test_a_read_inside_a_write_transaction_sees_its_writes(store: TieredMemoryStore) -> None:
    seen = store.db.run(_in_transaction(_write_then_read("SELECT count(*) FROM scratch")))
    assert seen == (1, 1)
    assert _count(store) == 1


def test_a_reader_refuses_to_write_and_stores_nothing(store: TieredMemoryStore) -> None:
    with pytest.raises(BackendError, match="readonly"):
        store.db.run(_in_transaction(_statement("INSERT INTO scratch VALUES (1)"), read_only=True))
    assert _count(store) == 0


def test_threads_read_their_own_writes_through_readers(store: TieredMemoryStore) -> None:
    failures: list[str] = []

    def work(worker: int) -> None:
        namespace = ("threads", str(worker))
        for round_ in range(25):
            key = f"k{round_}"
            text = f"worker {worker} wrote note {round_} about topic{worker}x{round_}"
            store.put(namespace, key, {"text": text})
            got = store.get(namespace, key)
            found = store.search(namespace, query=f"topic{worker}x{round_}", limit=3)
            if got is None or got.value["text"] != text:
                failures.append(f"get {namespace} {key}: {got}")
            if key not in [item.key for item in found]:
                failures.append(f"search {namespace} {key}: {[i.key for i in found]}")
            if len(store.search(namespace, limit=100)) != round_ + 1:
                failures.append(f"list {namespace} after {key}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    readers = store.conn.readers
    assert 1 <= readers._opened <= readers.size


def test_closing_the_store_closes_its_readers(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}", settings=Settings()) as s:
        s.put(("docs",), "a", {"text": "hello"})
        assert s.get(("docs",), "a") is not None  # opens the reader and gives it back
        readers = s.conn.readers
        assert readers._opened == 1
        lent = readers.lend()
        assert lent is not None
    assert readers._opened == 1
    assert readers._idle == []
    assert readers.lend() is None
    readers.give_back(lent)  # lent across the close: closed on return
    assert readers._opened == 0
    with pytest.raises(sqlite3.ProgrammingError):
        lent.execute("SELECT 1")


def test_a_read_waits_for_a_lent_reader_and_takes_it_when_given_back(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    sqlite3.connect(path).execute("PRAGMA journal_mode = WAL").fetchone()
    readers = SqliteReaders(str(path), size=1)
    first = readers.lend()
    assert first is not None
    taken: list[sqlite3.Connection | None] = []
    waiting = threading.Thread(target=lambda: taken.append(readers.lend()))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()
    assert taken == []
    readers.give_back(first)
    waiting.join(30)
    assert taken == [first]
    assert readers._opened == 1
    readers.close()


def test_memory_databases_and_passed_connections_have_no_readers(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=Settings()) as s:
        s.put(("docs",), "a", {"text": "hello"})
        assert s.get(("docs",), "a") is not None
        assert s.conn.readers.size == 0
    conn = sqlite3.connect(tmp_path / "own.db", check_same_thread=False)
    store = TieredMemoryStore(conn, settings=Settings())
    store.setup()
    assert not isinstance(conn, SqliteFile)
    io = store.db.sync_io
    assert isinstance(io, SqliteIO)
    assert io.readers is None
    store.put(("docs",), "a", {"text": "hello"})
    assert store.get(("docs",), "a") is not None
    store.close()
    conn.close()
