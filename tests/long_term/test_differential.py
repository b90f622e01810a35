"""The differential contract of the long-term store: behaviour, not mechanism.

A Hypothesis state machine issues random interleavings of put (overwrites, filterable
fields, TTLs), delete, search (with and without a query, with filters, with ``as_of``),
get and list_namespaces from four writers on one database:

* ``A`` and ``B``: two :class:`TieredMemoryStore` objects in this process (``a`` and
  ``b``: the same two through their async twins),
* ``P``: a second process (``store_worker.py``) with its own store on the same database,
* ``S``: plain SQL through a connection of its own, deleting rows and expiring them (on
  SQLite with foreign keys left off, as a plain client opens it: a deleted item's vector
  and term rows stay behind, and a later put of the key must still work).

Every read is checked against a dict model by the sets of keys returned. A query search
uses a limit above the number of items and a query that shares a word with every item,
so it must return exactly the live items of the prefix that match the filter, as a search
without a query does. Each check runs with the namespace cache on (the default) and off,
on SQLite and PostgreSQL; each example of the machine works under a namespace root of its
own, so the databases, stores and the worker process are opened once per test.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.records import join_namespace

from .fakes import default_index
from .sql_helpers import backend_url

Namespace = tuple[str, ...]

WORKER = Path(__file__).with_name("store_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]

COLORS = ("red", "blue")
WORDS = ("jazz", "tea", "rain", "berlin")
# Every item's text holds "apple", so every query below shares a word with every item.
QUERIES = (None, "apple", "apple jazz", "apple tea rain", "zebra apple")
FILTERS: tuple[dict[str, Any] | None, ...] = (
    None,
    {"color": "red"},
    {"color": {"$ne": "red"}},
    {"n": {"$gte": 2}},
    {"color": "blue", "n": {"$lt": 2}},
)
LIMIT = 100  # above the number of items one example can hold
SHORT_TTL_MINUTES = 0.0005  # 30 ms: the rule sleeps past it


# (writer, sub-namespace, key, color, n, word, ttl minutes) of one put.
PUTS = st.lists(
    st.tuples(
        st.sampled_from(["A", "B", "b", "P"]),
        st.sampled_from([("a",), ("b",), ("a", "x")]),
        st.sampled_from(["k0", "k1", "k2", "k3"]),
        st.sampled_from(COLORS),
        st.integers(0, 3),
        st.sampled_from(WORDS),
        st.sampled_from([None, 60]),
    ),
    min_size=1,
    max_size=4,
)


def value_of(color: str, n: int, word: str) -> dict[str, Any]:
    """A stored value: text for search, ``color`` and ``n`` for filters."""
    return {"text": f"apple {word}", "color": color, "n": n}


def matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """Whether ``value`` meets a filter of :data:`FILTERS` (LangGraph's semantics)."""
    for name, want in (flt or {}).items():
        have = value.get(name)
        ops = want if isinstance(want, dict) else {"$eq": want}
        for op, arg in ops.items():
            ok = {
                "$eq": have == arg,
                "$ne": have != arg,
                "$gte": have is not None and have >= arg,
                "$lt": have is not None and have < arg,
            }[op]
            if not ok:
                return False
    return True


# -- the writers outside this process's stores --------------------------------------


class Worker:
    """The second process: a store on the same database, fed operations over stdin."""

    def __init__(self, url: str, scope_cache_items: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), url, str(scope_cache_items)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self._answer() == "ready"

    def _answer(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            raise RuntimeError(f"the store worker ended (exit code {self.proc.wait()})")
        return line

    def send(self, op: dict[str, Any]) -> None:
        """Apply one operation in the worker and wait until it is committed."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(op) + "\n")
        self.proc.stdin.flush()
        answer = self._answer()
        assert answer == "ok", f"the worker failed on {op}: {answer}"

    def close(self) -> None:
        """End the worker (end of input), waiting for it."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class PlainSql:
    """Plain SQL on the store's database, as another program would issue it."""

    def __init__(self, backend: str, url: str, *, foreign_keys: bool = False) -> None:
        self.backend = backend
        self.conn: Any
        if backend == "sqlite":
            # Autocommit; SQLite leaves foreign keys off unless a client turns them on.
            self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 10000")
            self.conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
        else:
            import psycopg

            self.conn = psycopg.connect(url, autocommit=True)

    def execute(self, sql: str, params: list[Any]) -> None:
        """Run one statement (``?`` placeholders on both backends)."""
        if self.backend == "postgres":
            sql = sql.replace("?", "%s")
        self.conn.execute(sql, params)

    def delete(self, namespace: Namespace, key: str) -> None:
        """Delete an item's row, and nothing else."""
        self.execute(
            "DELETE FROM lmt_items WHERE prefix = ? AND key = ?", [join_namespace(namespace), key]
        )

    def expire(self, namespace: Namespace, key: str) -> None:
        """Make an item expired: it expires when it was created."""
        self.execute(
            "UPDATE lmt_items SET expires_at = created_at WHERE prefix = ? AND key = ?",
            [join_namespace(namespace), key],
        )

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


@dataclass
class World:
    """Everything the machine drives, opened once per test."""

    stores: dict[str, TieredMemoryStore]
    worker: Worker
    sql: PlainSql
    roots: Iterator[int]


@pytest.fixture(params=["sqlite", "postgres"])
def diff_backend(request: pytest.FixtureRequest) -> str:
    """The database the stores share."""
    return str(request.param)


@pytest.fixture(params=["cache", "no-cache"])
def cache_items(request: pytest.FixtureRequest) -> int:
    """The namespace cache size of every store: the default, or 0 (no cache)."""
    return (
        Settings.from_env(environ={}, dotenv=None).scope_cache_items
        if request.param == "cache"
        else 0
    )


@pytest.fixture
def world(
    diff_backend: str, cache_items: int, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[World]:
    """Two stores, the worker process and a plain SQL connection on one new database."""
    url = backend_url(diff_backend, tmp_path, request)
    chosen = Settings.from_env(scope_cache_items=cache_items, environ={}, dotenv=None)
    with (
        TieredMemoryStore.from_url(url, index=default_index(), settings=chosen) as a,
        TieredMemoryStore.from_url(url, index=default_index(), settings=chosen) as b,
    ):
        worker = Worker(url, cache_items)
        sql = PlainSql(diff_backend, url)
        counter = iter(range(1_000_000))
        try:
            yield World({"A": a, "B": b}, worker, sql, counter)
        finally:
            sql.close()
            worker.close()


# -- the reference model and the machine --------------------------------------------


@dataclass
class Entry:
    """A live item of the model: its value and the epoch it was created in (None: unsure)."""

    value: dict[str, Any]
    epoch: int | None


@dataclass
class Model:
    """What every reader must see."""

    live: dict[tuple[Namespace, str], Entry] = field(default_factory=dict)
    # Expired items whose rows may still exist: a put over one may keep the row's creation time.
    expired: set[tuple[Namespace, str]] = field(default_factory=set)
    marks: list[datetime] = field(default_factory=list)


def under(namespace: Namespace, prefix: Namespace) -> bool:
    """Whether ``namespace`` is ``prefix`` or below it."""
    return namespace[: len(prefix)] == prefix


def call(world: World, actor: str, method: str, *args: Any, **kwargs: Any) -> Any:
    """``method`` of store ``actor``: ``"A"``/``"B"`` through the sync API, ``"a"``/``"b"``
    the same stores through the async twin (``a`` + method)."""
    store = world.stores[actor.upper()]
    if actor.islower():
        return asyncio.run(getattr(store, "a" + method)(*args, **kwargs))
    return getattr(store, method)(*args, **kwargs)


def make_machine(world: World) -> type[RuleBasedStateMachine]:
    """The state machine class over ``world``."""

    class StoreMachine(RuleBasedStateMachine):
        """Random interleavings from every writer, each read checked against the model."""

        def __init__(self) -> None:
            super().__init__()
            self.model = Model()
            self.root = f"r{next(world.roots)}"

        def ns(self, sub: tuple[str, ...]) -> Namespace:
            return (self.root, *sub)

        # -- writes --
        def _put_model(self, item: tuple[Namespace, str], value: dict[str, Any]) -> None:
            current = self.model.live.get(item)
            if current is not None:
                epoch = current.epoch  # an overwrite keeps the item's creation time
            elif item in self.model.expired:
                epoch = None
            else:
                epoch = len(self.model.marks)
            self.model.live[item] = Entry(value, epoch)
            self.model.expired.discard(item)

        def put(
            self,
            writer: str,
            sub: tuple[str, ...],
            key: str,
            color: str,
            n: int,
            word: str,
            ttl: int | None,
        ) -> None:
            namespace, value = self.ns(sub), value_of(color, n, word)
            if writer == "P":
                world.worker.send(
                    {
                        "op": "put",
                        "namespace": list(namespace),
                        "key": key,
                        "value": value,
                        "ttl": ttl,
                    }
                )
            else:
                call(world, writer, "put", namespace, key, value, ttl=ttl)
            self._put_model((namespace, key), value)

        @rule(puts=PUTS)
        def put_some(self, puts: list[tuple[Any, ...]]) -> None:
            """A few puts, one by one, from any writer (a key may repeat: overwrites)."""
            for spec in puts:
                self.put(*spec)

        @rule(puts=PUTS)
        def put_more(self, puts: list[tuple[Any, ...]]) -> None:
            """As :meth:`put_some`: writes come twice as often as any other kind of step."""
            self.put_some(puts)

        @rule(
            writer=st.sampled_from(["A", "B"]),
            sub=st.sampled_from([("a",), ("b",)]),
            key=st.sampled_from(["k0", "k1", "k2", "k3"]),
        )
        def put_expiring(self, writer: str, sub: tuple[str, ...], key: str) -> None:
            """A put whose TTL runs out before the next operation."""
            namespace = self.ns(sub)
            call(
                world,
                writer,
                "put",
                namespace,
                key,
                value_of("red", 1, "tea"),
                ttl=SHORT_TTL_MINUTES,
            )
            time.sleep(SHORT_TTL_MINUTES * 60 + 0.01)
            self.model.live.pop((namespace, key), None)
            self.model.expired.add((namespace, key))

        @rule(
            writer=st.sampled_from(["A", "B", "b", "P", "S"]),
            sub=st.sampled_from([("a",), ("b",), ("a", "x")]),
            key=st.sampled_from(["k0", "k1", "k2", "k3"]),
        )
        def delete(self, writer: str, sub: tuple[str, ...], key: str) -> None:
            namespace = self.ns(sub)
            if writer == "P":
                world.worker.send({"op": "delete", "namespace": list(namespace), "key": key})
            elif writer == "S":
                world.sql.delete(namespace, key)
            else:
                call(world, writer, "delete", namespace, key)
            self.model.live.pop((namespace, key), None)
            self.model.expired.discard((namespace, key))

        def _pick_live(self, data: st.DataObject) -> tuple[Namespace, str]:
            return data.draw(st.sampled_from(sorted(self.model.live)), label="live item")

        @precondition(lambda self: bool(self.model.live))
        @rule(
            data=st.data(),
            writer=st.sampled_from(["A", "B", "b", "P"]),
            color=st.sampled_from(COLORS),
            n=st.integers(0, 3),
            word=st.sampled_from(WORDS),
        )
        def overwrite(
            self, data: st.DataObject, writer: str, color: str, n: int, word: str
        ) -> None:
            """A put over a live item."""
            (namespace, key) = self._pick_live(data)
            self.put(writer, namespace[1:], key, color, n, word, None)

        @precondition(lambda self: bool(self.model.live))
        @rule(data=st.data(), writer=st.sampled_from(["A", "B", "b", "P", "S"]))
        def delete_live(self, data: st.DataObject, writer: str) -> None:
            """A delete of a live item."""
            (namespace, key) = self._pick_live(data)
            self.delete(writer, namespace[1:], key)

        @precondition(lambda self: bool(self.model.live))
        @rule(data=st.data())
        def expire_by_sql(self, data: st.DataObject) -> None:
            """Plain SQL makes a live item expired."""
            (namespace, key) = self._pick_live(data)
            world.sql.expire(namespace, key)
            self.model.live.pop((namespace, key))
            self.model.expired.add((namespace, key))

        @rule(store=st.sampled_from(["A", "b"]))
        def sweep(self, store: str) -> None:
            call(world, store, "sweep_ttl")
            self.model.expired.clear()

        @rule()
        def mark(self) -> None:
            """Remember an instant between two operations, for ``as_of`` searches."""
            time.sleep(0.002)
            self.model.marks.append(datetime.now(timezone.utc))
            time.sleep(0.002)

        # -- reads --
        @rule(
            reader=st.sampled_from(["A", "B", "a"]),
            sub=st.sampled_from([(), ("a",), ("b",), ("a", "x")]),
            query=st.sampled_from(QUERIES),
            flt=st.sampled_from(FILTERS),
        )
        def search(
            self, reader: str, sub: tuple[str, ...], query: str | None, flt: dict[str, Any] | None
        ) -> None:
            prefix = self.ns(sub)
            found = call(world, reader, "search", prefix, query=query, filter=flt, limit=LIMIT)
            got = {(item.namespace, item.key) for item in found}
            want = {
                item
                for item, entry in self.model.live.items()
                if under(item[0], prefix) and matches(entry.value, flt)
            }
            assert got == want, (
                f"{reader}.search({prefix}, query={query!r}, filter={flt}): "
                f"extra {sorted(got - want)}, missing {sorted(want - got)}"
            )
            assert len(found) == len(got), f"duplicate results: {[i.key for i in found]}"
            stale = [i.key for i in found if i.value != self.model.live[(i.namespace, i.key)].value]
            assert not stale, f"{reader}.search({prefix}) returned old values of {stale}"

        @rule(
            reader=st.sampled_from(["A", "B", "a"]),
            query=st.sampled_from(QUERIES),
            flt=st.sampled_from(FILTERS),
            back=st.integers(1, 3),
        )
        def search_as_of(
            self, reader: str, query: str | None, flt: dict[str, Any] | None, back: int
        ) -> None:
            if not self.model.marks:
                return
            j = max(0, len(self.model.marks) - back)
            prefix = self.ns(())
            found = call(
                world,
                reader,
                "search",
                prefix,
                query=query,
                filter=flt,
                limit=LIMIT,
                as_of=self.model.marks[j],
            )
            got = {(item.namespace, item.key) for item in found}
            candidates = {
                item: entry for item, entry in self.model.live.items() if matches(entry.value, flt)
            }
            want = {item for item, e in candidates.items() if e.epoch is not None and e.epoch <= j}
            unsure = {item for item, e in candidates.items() if e.epoch is None}
            assert want <= got <= want | unsure, (
                f"{reader}.search(as_of=mark {j}, query={query!r}, filter={flt}): "
                f"extra {sorted(got - want - unsure)}, missing {sorted(want - got)}"
            )

        @rule(
            reader=st.sampled_from(["A", "B", "a"]),
            sub=st.sampled_from([("a",), ("b",), ("a", "x")]),
            key=st.sampled_from(["k0", "k1", "k2", "k3"]),
        )
        def get(self, reader: str, sub: tuple[str, ...], key: str) -> None:
            namespace = self.ns(sub)
            item = call(world, reader, "get", namespace, key)
            entry = self.model.live.get((namespace, key))
            if entry is None:
                assert item is None, f"{reader}.get({namespace}, {key!r}) found {item}"
            else:
                assert item is not None, f"{reader}.get({namespace}, {key!r}) found nothing"
                assert item.value == entry.value

        @rule(reader=st.sampled_from(["A", "B", "a"]))
        def list_namespaces(self, reader: str) -> None:
            got = set(call(world, reader, "list_namespaces", prefix=(self.root,), limit=LIMIT))
            want = {namespace for namespace, _ in self.model.live}
            assert got == want, f"{reader}.list_namespaces: got {sorted(got)}, want {sorted(want)}"

        @invariant()
        def everything_live_is_found(self) -> None:
            """The whole root, searched without a query, is the model (read through A)."""
            found = world.stores["A"].search((self.root,), limit=LIMIT)
            assert {(i.namespace, i.key) for i in found} == set(self.model.live)

    return StoreMachine


MACHINE_SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=15,
    stateful_step_count=30,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def test_interleavings_match_the_model(world: World, cache_items: int) -> None:
    """Every read by either store agrees with the model, whoever wrote."""
    for store in world.stores.values():  # the variant is what it says
        assert store.settings.scope_cache_items == cache_items
    run_state_machine_as_test(make_machine(world), settings=MACHINE_SETTINGS)
