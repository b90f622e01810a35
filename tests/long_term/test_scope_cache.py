"""The namespace cache of searches (SQLite and PostgreSQL): the same answers as reading the
database, however the namespace changed, whoever changed it, and whatever the search's time.

Each test compares a store whose cache is warm with what the database says now (a cache
cleared before the search), or with the expected keys.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.store.search import scope_cache, scope_data, scope_seeds
from langmem_tiers.long_term.store.search.scope_cache import ScopeCache
from langmem_tiers.long_term.store.search.scope_data import ScopeData
from langmem_tiers.sql.dialect import (
    CHANGES_KEPT,
    ITEM_CHANGES,
    PACKED_SEPARATOR,
    VECTORS,
    PostgresDialect,
    SqliteDialect,
)
from langmem_tiers.sql.flow import Latch
from langmem_tiers.sql.item_ids import item_id

from .fakes import KeywordEmbeddings, default_index
from .old_schema import ITEM_ACCESS, PACKED_TERMS, as_release, write_terms_table

UTC = timezone.utc
NS = ("u1", "semantic")
TEXTS = {
    "m1": "apple pie with cinnamon for dessert",
    "m2": "the car engine needs new oil",
    "m3": "jazz music in paris on friday",
    "m4": "green tea or black coffee in the morning",
    "m5": "apple and banana are my favourite fruit",
    "m6": "the dog and the cat sleep in the sun",
}
QUERIES = ["apple", "apple fruit dessert", "engine oil", "music paris", "morning coffee"]


def _open(url: str) -> Any:
    return TieredMemoryStore.from_url(url, index=default_index(fields=("content",)))


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh database of each backend."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'memory.db'}"


@contextmanager
def _plain_sql(url: str) -> Iterator[Callable[[str], None]]:
    """A connection of another program: statements run in one transaction, committed."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        with conn:
            yield lambda sql: conn.execute(sql) and None
        conn.close()
        return
    import psycopg

    with psycopg.connect(url) as pg, pg.transaction():
        yield lambda sql: pg.execute(sql) and None


@pytest.fixture
def store(db: str) -> Iterator[Any]:
    with _open(db) as opened:
        for key, text in TEXTS.items():
            opened.put(NS, key, {"content": text})
        yield opened


def _cache(store: Any) -> ScopeCache:
    cache = store.core.search.scope_cache
    assert isinstance(cache, ScopeCache)
    return cache


def _answer(store: Any, query: str, **options: Any) -> dict[str, float]:
    """The results' relevance by key: what the cached data decides (recency and access
    counts move between two searches, so the combined score is not compared)."""
    hits = store.search(NS, query=query, limit=4, **options)
    return {h.key: round(h.scores["semantic"], 9) for h in hits}


def _keys(answer: dict[str, float]) -> list[str]:
    return sorted(answer, key=lambda k: (-answer[k], k))


def _fresh(store: Any, query: str, **options: Any) -> dict[str, float]:
    """What the search answers from the database alone."""
    _cache(store).clear()
    return _answer(store, query, **options)


def test_warm_cache_answers_exactly_as_the_database(store: Any) -> None:
    expected = {q: _fresh(store, q) for q in QUERIES}
    _answer(store, QUERIES[0])  # fills the cache
    assert {q: _answer(store, q) for q in QUERIES} == expected
    assert len(_cache(store)._entries) == 1


def test_a_load_without_the_members_rows_answers_the_same(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over :data:`MEMBER_ROWS_MAX` members a load reads no member rows (PostgreSQL) and
    the search reads its candidates' rows after it: the same results."""

    def cold(query: str) -> list[tuple[str, Any, float]]:
        _cache(store).clear()
        hits = store.search(NS, query=query, limit=4)
        return [(h.key, h.value, round(h.scores["semantic"], 9)) for h in hits]

    with_rows = {q: cold(q) for q in QUERIES}
    monkeypatch.setattr(scope_cache, "MEMBER_ROWS_MAX", len(TEXTS) - 1)
    assert {q: cold(q) for q in QUERIES} == with_rows


def test_search_without_cache_is_the_reference(store: Any) -> None:
    """The cached path ranks as the SQL path does (BM25 with feedback, dense, fusion),
    with statistics over the search's members only: items of the namespace that it may
    not return (superseded, no longer valid) hold the query's words too."""
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    store.put(NS, "old", {"content": "apple apple coffee paris", "status": "superseded"})
    store.put(NS, "gone", {"content": "apple music engine", "valid_until": past})
    cached = {q: _answer(store, q) for q in QUERIES}
    assert all("old" not in a and "gone" not in a for a in cached.values())
    store.core.search.scope_cache = None
    reference = {q: _answer(store, q) for q in QUERIES}
    assert {q: _keys(a) for q, a in reference.items()} == {q: _keys(a) for q, a in cached.items()}
    # pgvector scores float4 vectors in its own arithmetic: equal to a few ulps.
    for query, answer in reference.items():
        assert answer == pytest.approx(cached[query], abs=1e-6)


def test_writes_of_another_store_are_seen(db: str, store: Any) -> None:
    assert _keys(_answer(store, "banana"))[0] == "m5"
    with _open(db) as other:
        other.put(NS, "m7", {"content": "banana bread banana split banana"})
        other.put(NS, "m5", {"content": "pears only"})
        other.delete(NS, "m2")
    assert _keys(_answer(store, "banana"))[0] == "m7"
    assert "m2" not in _answer(store, "car engine")
    assert _answer(store, "banana") == _fresh(store, "banana")


def test_members_as_many_as_the_old_entry_held_are_read_again(db: str, store: Any) -> None:
    """The ids of a search's members are withheld when they are as many as the cached
    entry's items; after another writer adds an item the search may not return, they are
    as many as before but no longer all the items, and are read again."""
    assert "m1" in _answer(store, "apple")
    with _open(db) as other:
        other.put(NS, "hidden", {"content": "apple apple apple", "status": "superseded"})
    after = _answer(store, "apple")
    assert "hidden" not in after
    assert after == _fresh(store, "apple")
    assert len(_cache(store)._entries["u1.semantic"].ids) == len(TEXTS) + 1


def test_changes_by_plain_sql_are_seen(db: str, store: Any) -> None:
    """A change made without the store (another program, the engine's own SQL)."""
    before = _answer(store, "apple")
    with _plain_sql(db) as run:
        run("DELETE FROM lmt_items WHERE key = 'm1'")
        # The length changes without the terms.
        run("UPDATE lmt_items SET doc_len = 40 WHERE key = 'm5'")
    after = _answer(store, "apple")
    assert "m1" in before
    assert "m1" not in after
    assert after == _fresh(store, "apple")


@contextmanager
def _namespace_reads(store: Any) -> Iterator[list[str]]:
    """How the store's searches meanwhile read its namespaces: ``"load"`` (every item)
    or ``"changes"`` (the items the change log names)."""
    seen: list[str] = []
    cache = _cache(store)
    original = cache._load_flow, cache._changes_flow

    def load(*args: Any, **kwargs: Any) -> Any:
        seen.append("load")
        return (yield from original[0](*args, **kwargs))

    def changes(*args: Any, **kwargs: Any) -> Any:
        seen.append("changes")
        return (yield from original[1](*args, **kwargs))

    cache._load_flow, cache._changes_flow = load, changes  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del cache._load_flow, cache._changes_flow


def test_a_search_after_writes_reads_the_changed_items_alone(db: str, store: Any) -> None:
    """Puts, re-puts, deletes (of this store and another, and plain SQL) bring the entry
    up to date: the namespace is not read again, and the entry answers as a fresh read of
    the database does. This store's own writes are in the entry already: where a
    statement is a round trip (PostgreSQL) the searches' rows statements prove that every
    item is a member, and read no changes; in process (SQLite) a read of the changes
    finds none. Another store's writes are read from the change log."""
    _answer(store, "apple")
    in_process = _cache(store).dialect.in_process
    steps: list[Callable[[], None]] = [
        lambda: store.put(NS, "m7", {"content": "banana bread banana split banana"}),
        lambda: store.put(NS, "m5", {"content": "pears and apple only"}),
        lambda: store.delete(NS, "m2"),
        lambda: store.batch([_put(NS, f"n{n}", f"apple number {n} music") for n in range(5)]),
    ]
    with _open(db) as other:
        steps.append(lambda: other.put(NS, "m1", {"content": "a different dessert"}))
        for number, step in enumerate(steps):
            step()
            with _namespace_reads(store) as seen:
                answers = {q: _answer(store, q) for q in [*QUERIES, "banana"]}
            assert seen == (["changes"] if in_process or number == len(steps) - 1 else [])
            entry = _cache(store)._entries["u1.semantic"]
            assert {q: _fresh(store, q) for q in answers} == answers
            fresh = _cache(store)._entries["u1.semantic"]
            assert sorted(entry.ids) == sorted(fresh.ids)
            assert entry.packed_terms == fresh.packed_terms
            assert entry.counters == fresh.counters
            assert entry.version == fresh.version
    with _plain_sql(db) as run:
        run("UPDATE lmt_items SET doc_len = 40 WHERE key = 'n3'")
    with _namespace_reads(store) as seen:
        answer = _answer(store, "apple number")
    assert seen == ["changes"]
    assert answer == _fresh(store, "apple number")


def test_a_write_beside_a_move_is_seen(db: str, store: Any) -> None:
    """The remembered members stay but for the changed items only while nothing moved:
    a status changed by plain SQL beside a put has the members read again."""
    _answer(store, "apple fruit")
    _answer(store, "apple fruit")  # remembered
    with _plain_sql(db) as run:
        run("UPDATE lmt_items SET status = 'superseded' WHERE key = 'm5'")
    store.put(NS, "m9", {"content": "apple fruit salad"})
    with _namespace_reads(store) as seen:
        after = _answer(store, "apple fruit")
    assert "load" not in seen
    assert "m9" in after
    assert "m5" not in after
    assert after == _fresh(store, "apple fruit")


def test_an_item_written_after_the_members_were_remembered_ends_them_at_its_time(
    db: str, store: Any
) -> None:
    """The members taken over from before another store's write hold until the next time
    of the items written too."""
    now = datetime.now(UTC)
    _answer(store, "apple tasting")
    _answer(store, "apple tasting")  # remembered
    with _open(db) as other:
        other.put(
            NS,
            "soon",
            {
                "content": "apple tasting tonight",
                "valid_until": (now + timedelta(hours=1)).isoformat(),
            },
        )
    with _namespace_reads(store) as seen:
        assert "soon" in _answer(store, "apple tasting", now=now + timedelta(minutes=30))
    assert seen == ["changes"]
    later = now + timedelta(hours=2)
    assert "soon" not in _answer(store, "apple tasting", now=later)
    assert _answer(store, "apple tasting", now=later) == _fresh(store, "apple tasting", now=later)


def test_a_cache_behind_the_log_reads_the_namespace_again(db: str, store: Any) -> None:
    """Where the log no longer holds every change since the entry's count (cut), the
    namespace is read again (written by another store: this store's own writes keep its
    entry current)."""
    _answer(store, "apple")
    with _open(db) as other:
        other.put(NS, "m7", {"content": "banana bread banana split banana"})
        other.put(NS, "m8", {"content": "banana cake"})
    with _plain_sql(db) as run:
        run(
            f"DELETE FROM {ITEM_CHANGES} WHERE item_id = (SELECT id FROM lmt_items WHERE key = 'm7')"
        )
    with _namespace_reads(store) as seen:
        answer = _answer(store, "banana")
    assert seen == ["changes", "load"]
    assert _keys(answer)[:2] == ["m7", "m8"]
    assert answer == _fresh(store, "banana")


def test_the_change_log_keeps_the_last_changes_of_a_namespace(db: str) -> None:
    """Each count is one row numbered by it; the log is cut to the last CHANGES_KEPT
    (fewer than twice as many) as a namespace's count passes a multiple of it."""
    total = 2 * CHANGES_KEPT + 300
    with _open(db) as store:
        for start in range(0, total, 500):
            store.batch([_put(NS, f"k{n}", "x") for n in range(start, min(total, start + 500))])
        store.put(NS, "k0", {"content": "y"})  # an update counts once on each side
    rows = _query(db, f"SELECT changes FROM {ITEM_CHANGES} WHERE prefix = 'u1.semantic'")
    counted = _query(db, "SELECT changes FROM lmt_scope_changes WHERE prefix = 'u1.semantic'")
    count = int(counted[0][0])
    numbers = sorted(int(r[0]) for r in rows)
    assert count in (total + 1, total + 2)  # SQLite counts the old and the new row
    assert numbers[-1] == count
    assert numbers == list(range(numbers[0], count + 1))
    assert CHANGES_KEPT <= len(numbers) < 2 * CHANGES_KEPT + 500


def test_an_overwrite_batch_counts_each_item_and_usage_counts_nothing(db: str) -> None:
    """500 items of one namespace overwritten in one batch count each once (PostgreSQL,
    one statement; SQLite's row trigger counts the old and the new row) and are logged;
    access counts and TTL refreshes of them move no counter."""
    n = 500
    with _open(db) as store:
        store.batch([_put(NS, f"k{i}", "first words") for i in range(n)])
        before = int(_query(db, "SELECT changes FROM lmt_scope_changes")[0][0])
        store.batch([_put(NS, f"k{i}", f"new words {i}") for i in range(n)])
        after = int(_query(db, "SELECT changes FROM lmt_scope_changes")[0][0])
        logged = [
            r[0] for r in _query(db, f"SELECT item_id FROM {ITEM_CHANGES} WHERE changes > {before}")
        ]
        store.core.access.record(
            [item_id(NS, f"k{i}") for i in range(n)], datetime.now(timezone.utc)
        )
        store.db.run(store.core.flush_flow())
        store.put(NS, "ttl", {"content": "kept a while"}, ttl=5.0)
        counted = int(_query(db, "SELECT changes FROM lmt_scope_changes")[0][0])
        assert store.get(NS, "ttl", refresh_ttl=True) is not None
        store.db.run(store.core.flush_flow())
        final = int(_query(db, "SELECT changes FROM lmt_scope_changes")[0][0])
        counts = _query(db, "SELECT count(*) FROM lmt_item_access WHERE access_count = 1")
    per_item = 2 if db.startswith("sqlite") else 1
    assert after - before == per_item * n
    assert sorted(logged) == sorted(item_id(NS, f"k{i}") for i in range(n) for _ in range(per_item))
    assert final == counted
    assert counts[0][0] == n + 1


def _query(url: str, sql: str) -> list[Any]:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as pg:
        return pg.execute(sql).fetchall()


def test_compression_is_seen(db: str, store: Any) -> None:
    """Compression drops an item's terms (what the engine's lifecycle writes)."""
    assert "m2" in _answer(store, "engine oil")
    with _plain_sql(db) as run:
        run("UPDATE lmt_items SET doc_len = 0, terms = NULL WHERE key = 'm2'")
        if db.startswith("sqlite:///"):  # PostgreSQL's terms are a view of the column above
            run("DELETE FROM lmt_terms WHERE item_id = (SELECT id FROM lmt_items WHERE key = 'm2')")
    after = _answer(store, "engine oil")
    assert after == _fresh(store, "engine oil")
    entry = _cache(store)._entries["u1.semantic"]
    assert not any("m2" in i for i in entry.packed_terms)


def test_a_key_moved_to_another_namespace_is_seen(db: str, store: Any) -> None:
    """An item moved by SQL (its namespace rewritten) leaves the one it was in and joins
    the other, for the namespace and for a prefix above both."""
    wide = ("u1",)
    assert "m3" in {h.key for h in store.search(wide, query="jazz", limit=3)}
    assert "m3" in _answer(store, "jazz")
    with _plain_sql(db) as run:
        run("UPDATE lmt_items SET prefix = 'u1.moved' WHERE key = 'm3'")
        run(
            "UPDATE lmt_vectors SET prefix = 'u1.moved'"
            " WHERE item_id = (SELECT id FROM lmt_items WHERE key = 'm3')"
        )
    assert "m3" not in _answer(store, "jazz")
    assert [h.key for h in store.search(("u1", "moved"), query="jazz", limit=3)] == ["m3"]
    warm = [(h.namespace, h.key) for h in store.search(wide, query="jazz", limit=3)]
    _cache(store).clear()
    assert warm == [(h.namespace, h.key) for h in store.search(wide, query="jazz", limit=3)]
    assert (("u1", "moved"), "m3") in warm


def test_validity_is_applied_at_each_search_time(store: Any) -> None:
    """The cache keeps no answer that depends on the time: the same cached namespace,
    searched at different times, gives each time's members."""
    now = datetime.now(UTC)
    store.put(
        NS,
        "fact",
        {
            "content": "apple orchard visit planned",
            "valid_from": (now - timedelta(days=10)).isoformat(),
            "valid_until": (now - timedelta(days=1)).isoformat(),
        },
    )
    current = _answer(store, "apple orchard")
    assert "fact" not in current  # no longer valid now
    then = now - timedelta(days=5)
    assert _keys(_answer(store, "apple orchard", now=then))[0] == "fact"
    assert _answer(store, "apple orchard") == current
    assert _answer(store, "apple orchard", now=then) == _fresh(store, "apple orchard", now=then)


def test_a_status_change_needs_no_reload_and_is_seen(store: Any) -> None:
    _answer(store, "jazz")
    entry = next(iter(_cache(store)._entries.values()))
    store.put(NS, "m3", {"content": TEXTS["m3"], "status": "superseded"})
    assert "m3" not in _answer(store, "jazz music")
    assert _answer(store, "jazz music") == _fresh(store, "jazz music")
    # A re-put writes the value again, so that one did move the counter.
    assert next(iter(_cache(store)._entries.values())).version > entry.version


def test_access_counts_do_not_invalidate(store: Any) -> None:
    for _ in range(3):
        _answer(store, "apple")
    store.db.run(store.core.flush_flow())  # the buffered access counts are written
    version = next(iter(_cache(store)._entries.values())).version
    _answer(store, "apple")
    assert next(iter(_cache(store)._entries.values())).version == version


def test_value_filters_and_prefixes_use_the_members_of_the_search(store: Any) -> None:
    store.put(NS, "tagged", {"content": "apple tart", "tag": "x"})
    filtered = store.search(NS, query="apple", filter={"tag": "x"}, limit=5)
    assert [h.key for h in filtered] == ["tagged"]
    wide = store.search(("u1",), query="apple", limit=10)
    assert {h.key for h in wide} >= {"m1", "m5", "tagged"}


def test_a_write_that_takes_an_item_out_of_a_filtered_search_is_seen(db: str, store: Any) -> None:
    """An item's value decides membership too (value filters): a put that changes it is
    no move, and the remembered members lose the item by its own membership."""

    def tagged() -> list[str]:
        return [h.key for h in store.search(NS, query="apple", filter={"tag": "x"}, limit=5)]

    store.put(NS, "tagged", {"content": "apple tart", "tag": "x"})
    store.put(NS, "other", {"content": "apple crumble", "tag": "x"})
    assert sorted(tagged()) == ["other", "tagged"]
    assert sorted(tagged()) == ["other", "tagged"]  # remembered
    store.put(NS, "tagged", {"content": "apple tart", "tag": "y"})
    store.put(NS, "new", {"content": "apple pie", "tag": "x"})
    with _namespace_reads(store) as seen:
        assert sorted(tagged()) == ["new", "other"]
    assert seen == ["changes"]
    # The rows statement checks each candidate again: the members themselves are right.
    remembered = [
        set(r.members.ids) for r in _cache(store)._entries["u1.semantic"]._remembered.values()
    ]
    if db.startswith("sqlite"):
        assert {item_id(NS, "new"), item_id(NS, "other")} in remembered
    else:  # a filter is bound as JSON, which is no key: such searches are not remembered
        assert remembered == []


def test_the_cache_is_bounded(store: Any) -> None:
    expected = _fresh(store, "apple")
    cache = _cache(store)
    cache.clear()
    cache.max_items = 3  # fewer than the namespace holds: the SQL path answers
    assert _answer(store, "apple") == pytest.approx(expected, abs=1e-6)
    assert not cache._entries


@pytest.mark.parametrize("items", [0, 3, 50])
def test_the_cache_bound_is_a_setting(db: str, items: int) -> None:
    """``scope_cache_items`` bounds what a store keeps; 0 keeps nothing. Whatever the
    bound, a search answers what the database holds."""
    with _open(db) as reference:
        for key, text in TEXTS.items():
            reference.put(NS, key, {"content": text})
        expected = {q: _fresh(reference, q) for q in QUERIES}
    settings = Settings.from_env(scope_cache_items=items, environ={}, dotenv=None)
    with TieredMemoryStore.from_url(
        db, index=default_index(fields=("content",)), settings=settings
    ) as bounded:
        cache = bounded.core.search.scope_cache
        if items == 0:
            assert cache is None
        else:
            assert isinstance(cache, ScopeCache)
            assert cache.max_items == items
        for query in QUERIES:
            assert _answer(bounded, query) == pytest.approx(expected[query], abs=1e-6)
        held = sum(len(d.ids) for d in cache._entries.values()) if cache is not None else 0
        assert held == (len(TEXTS) if items >= len(TEXTS) else 0)
        assert cache is None or cache._held == held


@pytest.mark.parametrize("value", [-1, 2.5, "many", True])
def test_a_bad_cache_bound_is_refused(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="scope_cache_items must be a whole number >= 0"):
        Settings.from_env(scope_cache_items=value, environ={}, dotenv=None)


def test_a_database_from_before_the_counter_upgrades_in_place(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old:
        # A database made before PostgreSQL counted changes.
        as_release(old, PACKED_TERMS, also=[ITEM_ACCESS])
        # PostgreSQL had no counter then; SQLite had its own already.
        old.setattr(PostgresDialect, "counts_scope_changes", False)
        # Nor did either count membership changes.
        old.setattr(SqliteDialect, "counts_membership_changes", False)
        old.setattr(PostgresDialect, "counts_membership_changes", False)
        # Nor log changed items.
        old.setattr(SqliteDialect, "logs_item_changes", False)
        old.setattr(PostgresDialect, "logs_item_changes", False)
        write_terms_table(old)
        with _open(db) as before:
            for key, text in TEXTS.items():
                before.put(NS, key, {"content": text})
            assert (before.core.search.scope_cache is None) == db.startswith("postgres")
            expected = {q: _keys(_answer(before, q)) for q in QUERIES}
    with _open(db) as store:
        assert {q: _keys(_answer(store, q)) for q in QUERIES} == expected
        assert len(_cache(store)._entries) == 1
        with _open(db) as other:  # counted by the triggers the upgrade created
            other.put(NS, "m7", {"content": "banana bread banana split banana"})
            other.delete(NS, "m1")
        assert _keys(_answer(store, "banana"))[0] == "m7"
        assert "m1" not in _answer(store, "apple")
        assert _answer(store, "apple") == _fresh(store, "apple")


def test_writers_of_two_namespaces_in_opposite_orders_do_not_deadlock(db: str) -> None:
    """Each batch re-puts, deletes and adds items of two namespaces, one thread in one
    order and the other in the other: the counters both count in are taken in one order."""
    a, b = ("w", "a"), ("w", "b")
    rounds = 15
    with _open(db) as setup:
        setup.batch([_put(ns, f"k{n}", "seed") for ns in (a, b) for n in range(4)])
    errors: list[BaseException] = []

    def write(first: tuple[str, ...], second: tuple[str, ...]) -> None:
        try:
            with _open(db) as mine:
                for n in range(rounds):
                    mine.batch(
                        [
                            _put(first, f"k{n % 4}", f"first {n}"),
                            _put(second, f"k{(n + 1) % 4}", f"second {n}"),
                            _put(second, f"new{first[1]}{n}", "added"),
                            _put(second, f"new{first[1]}{n - 1}", None),
                        ]
                    )
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=write, args=order) for order in ((a, b), (b, a))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    with _open(db) as check:
        for ns in (a, b):
            keys = {item.key for item in check.search(ns, limit=100)}
            other = "b" if ns == a else "a"
            assert {k for k in keys if k.startswith("k")} == {f"k{n}" for n in range(4)}
            assert {k for k in keys if k.startswith("new")} == {f"new{other}{rounds - 1}"}


def _put(namespace: tuple[str, ...], key: str, text: str | None) -> Any:
    from langgraph.store.base import PutOp

    return PutOp(namespace, key, None if text is None else {"content": text})


def test_dense_top_k_keeps_ties_in_id_order() -> None:
    """The partial sort picks the same top k as sorting every item by (-similarity, id),
    ties at the k-th value included, and scores the requested extra items."""
    import numpy as np

    from langmem_tiers.long_term.store.search.scope_data import ScopeData

    rng = np.random.default_rng(3)
    # Few distinct directions, so many items tie.
    directions = rng.normal(size=(4, 8)).astype(np.float32)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    ids = [f"i{n:03d}" for n in rng.permutation(60)]
    matrix = directions[rng.integers(0, 4, size=60)]
    data = ScopeData(1, dict.fromkeys(ids, 1), {}, ids, matrix)
    query = directions[0].tolist()
    sims = dict(zip(ids, (matrix @ directions[0]).tolist(), strict=True))
    expected = dict(sorted(sims.items(), key=lambda kv: (-kv[1], kv[0]))[:7])
    extra = [i for i in ids if i not in expected][:3]
    every = data.members(PACKED_SEPARATOR.join(ids))
    assert every.mask is None
    got = data.dense(query, 7, extra, every)
    assert list(got)[:7] == list(expected)
    assert got == pytest.approx({**expected, **{i: sims[i] for i in extra}}, abs=1e-6)
    some = set(ids[:30])
    subset = {i: s for i, s in sims.items() if i in some}
    top = dict(sorted(subset.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
    members = data.members(PACKED_SEPARATOR.join(sorted(some)))
    assert data.dense(query, 5, [], members) == pytest.approx(top, abs=1e-6)


def test_dense_with_several_vectors_an_item_takes_each_items_best() -> None:
    """Items with a vector per indexed field, their rows in any order: each item scores
    its best row, and the top k and the included items are those of a plain sort."""
    from langmem_tiers.long_term.store.search.scope_data import ScopeData

    rng = np.random.default_rng(5)
    items = [f"i{n:02d}" for n in range(40)]
    vector_ids = [items[n] for n in rng.integers(0, 40, size=100)]
    matrix = rng.normal(size=(100, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    data = ScopeData(1, dict.fromkeys(items, 1), {}, vector_ids, matrix)
    query = rng.normal(size=8).astype(np.float32)
    query /= np.linalg.norm(query)
    best: dict[str, float] = {}
    for item, sim in zip(vector_ids, (matrix @ query).tolist(), strict=True):
        best[item] = max(sim, best.get(item, -2.0))
    for chosen in (set(items), set(items[::2])):
        members = data.members(PACKED_SEPARATOR.join(sorted(chosen)))
        among = {i: s for i, s in best.items() if i in chosen}
        top = dict(sorted(among.items(), key=lambda kv: (-kv[1], kv[0]))[:6])
        extra = [i for i in sorted(among) if i not in top][:2]
        got = data.dense(query.tolist(), 6, extra, members)
        assert got == pytest.approx({**top, **{i: among[i] for i in extra}}, abs=1e-6)
        assert list(got)[:6] == list(top)


def test_inverted_index_answers_each_terms_postings_as_the_items_hold_them() -> None:
    from langmem_tiers.long_term.store.search.bm25 import pack_terms
    from langmem_tiers.long_term.store.search.scope_data import ScopeData

    terms = {f"i{n}": {f"t{(n * k) % 97}": k for k in range(1, 6)} for n in range(50)}
    packed = {i: pack_terms(tf) for i, tf in terms.items() if i != "i7"}
    lengths = {i: 0 if i == "i7" else 15 for i in terms}
    data = ScopeData(1, lengths, packed, [], np.zeros((0, 0), dtype=np.float32))  # type: ignore[arg-type]
    expected = {
        f"t{t}": {i: tf[f"t{t}"] for i, tf in terms.items() if f"t{t}" in tf and i != "i7"}
        for t in range(98)
    }
    assert {term: _as_dict(data, term) for term in expected} == expected
    assert {term: data.frequency(term) for term in expected} == {
        term: len(found) for term, found in expected.items()
    }
    assert _as_dict(data, "absent") == {}
    assert data.frequency("absent") == 0
    assert data.terms_of("i3") == terms["i3"]
    assert data.terms_of("i7") == {}
    rows, _ = data.posting("t0")
    assert rows.tolist() == sorted(rows.tolist())


def test_bm25_over_the_index_gives_score_postings_floats_with_and_without_members() -> None:
    """One pass over every term's postings adds an item's terms in sorted order, as
    score_postings does: the same floats to the bit, whoever the members are, for terms
    the namespace lacks and for an item without terms."""
    from langmem_tiers.long_term.store.search.bm25 import pack_terms, score_postings
    from langmem_tiers.long_term.store.search.scope_data import ScopeData

    rng = np.random.default_rng(11)
    vocabulary = [f"w{n}" for n in range(40)]
    terms = {
        f"i{n:02d}": {
            vocabulary[int(k)]: int(rng.integers(1, 4))
            for k in rng.choice(40, size=int(rng.integers(3, 12)), replace=False)
        }
        for n in range(60)
    }
    terms["i05"] = {}
    packed = {i: pack_terms(tf) for i, tf in terms.items() if tf}
    lengths = {i: sum(tf.values()) for i, tf in terms.items()}
    data = ScopeData(1, lengths, packed, [], np.zeros((0, 0), dtype=np.float32))  # type: ignore[arg-type]
    # Many weighted terms an item: a different order of their additions shows in the bits.
    weights = {w: float(rng.uniform(0.01, 3.0)) for w in vocabulary} | {"absent": 1.0}
    for chosen in (set(terms), {i for n, i in enumerate(sorted(terms)) if n % 3}):
        members = data.members(PACKED_SEPARATOR.join(sorted(chosen)))
        n_docs, avgdl = data.statistics(members)
        tf = {term: {i: terms[i][term] for i in chosen if term in terms[i]} for term in weights}
        expected = score_postings(weights, n_docs, avgdl, tf, lengths)
        got = data.bm25(weights, n_docs, avgdl, members)
        assert dict(got) == expected
        assert got.of(["i05", *sorted(expected)[:5], "unknown"]) == {
            i: expected[i] for i in sorted(expected)[:5]
        }
    assert dict(data.bm25({"absent": 1.0}, 59, 7.0, data.every_member())) == {}


@pytest.mark.parametrize("n_codes", [3_000, 1 << 16, (1 << 16) + 1, 200_000])
def test_postings_are_ordered_by_code_keeping_their_order_within_one(n_codes: int) -> None:
    """Either sort (16-bit codes or wider) gives the order of a stable sort by code."""
    import numpy as np

    from langmem_tiers.long_term.store.search.scope_data import by_code

    coded = np.random.default_rng(n_codes).integers(0, n_codes, 50_000)
    coded[:2] = n_codes - 1
    assert np.array_equal(by_code(coded, n_codes), np.argsort(coded, kind="mergesort"))


def _as_dict(data: Any, term: str) -> dict[str, int]:
    rows, counts = data.posting(term)
    return {data.ids[r]: int(n) for r, n in zip(rows.tolist(), counts.tolist(), strict=True)}


def _statements(run: Callable[[], Any]) -> list[str]:
    """The SQL statements ``run`` had the database execute."""
    from langmem_tiers.sql import backends, postgres_io

    executed: list[str] = []
    saved = [(cls, cls.__dict__["sql"]) for cls in (backends.SqliteIO, postgres_io._PgConnIO)]

    def recording(original: Callable[..., Any]) -> Callable[..., Any]:
        def sql(io: Any, request: Any) -> Any:
            executed.append(request.text)
            return original(io, request)

        return sql

    try:
        for cls, original in saved:
            cls.sql = recording(original)  # type: ignore[method-assign]
        run()
    finally:
        for cls, original in saved:
            cls.sql = original  # type: ignore[method-assign]
    return executed


def _lists_members(store: Any, run: Callable[[], Any]) -> bool:
    """Whether ``run`` had the database list a search's members (their ids, or the
    namespace's items each marked member or not)."""
    listing = _cache(store).dialect.packed_sql("i.id")
    return any(listing in s or VECTORS in s for s in _statements(run))


@pytest.mark.parametrize("superseded", [1, 5])
def test_members_swapped_without_a_change_of_their_number_are_seen(
    db: str, store: Any, superseded: int
) -> None:
    """One member leaves and one item joins by plain SQL that changes no value (statuses):
    as many members as before, but not the same. The moves counted by the database's
    triggers make the next search read its members again."""
    hidden = [f"old{n}" for n in range(superseded)]
    for key in hidden:
        store.put(NS, key, {"content": "apple apple fruit salad", "status": "superseded"})
    for key in ("m1", "m2", "m3", "m4", "m6")[: max(0, superseded - 1)]:
        store.put(NS, key, {"content": TEXTS[key], "status": "superseded"})
    before = _answer(store, "apple fruit")
    assert _answer(store, "apple fruit") == before
    assert "m5" in before
    assert "old0" not in before
    with _plain_sql(db) as run:
        run(
            "UPDATE lmt_items SET status = CASE key WHEN 'old0' THEN 'active'"
            " ELSE 'superseded' END WHERE key IN ('old0', 'm5')"
        )
    after = _answer(store, "apple fruit")
    assert "old0" in after
    assert "m5" not in after
    assert after == _fresh(store, "apple fruit")


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE lmt_items SET status = 'superseded' WHERE key = 'm5'",
        "UPDATE lmt_items SET valid_until = '2000-01-01T00:00:00+00:00' WHERE key = 'm5'",
        "UPDATE lmt_items SET expires_at = '2000-01-01T00:00:00+00:00' WHERE key = 'm5'",
        "UPDATE lmt_items SET valid_from = '2999-01-01T00:00:00+00:00' WHERE key = 'm5'",
    ],
)
def test_a_change_of_membership_by_plain_sql_is_seen(db: str, store: Any, change: str) -> None:
    """Statuses and times decide membership without a change of the value: each counts."""
    assert "m5" in _answer(store, "apple fruit")
    _answer(store, "apple fruit")  # remembered
    with _plain_sql(db) as execute:
        execute(change)
    after = _answer(store, "apple fruit")
    assert "m5" not in after
    assert after == _fresh(store, "apple fruit")


def test_remembered_members_end_at_the_next_time_of_an_item(store: Any) -> None:
    """An item that stops being valid in an hour is selected now and not two hours from
    now, though nothing was written in between: the members are read again once a
    search's time passes an item's time."""
    now = datetime.now(UTC)
    store.put(
        NS,
        "soon",
        {"content": "apple tasting tonight", "valid_until": (now + timedelta(hours=1)).isoformat()},
    )
    assert "soon" in _answer(store, "apple tasting")
    assert "soon" in _answer(store, "apple tasting", now=now + timedelta(minutes=30))
    later = now + timedelta(hours=2)
    assert "soon" not in _answer(store, "apple tasting", now=later)
    assert _answer(store, "apple tasting", now=later) == _fresh(store, "apple tasting", now=later)
    # Back in time: the members of the earlier instant, not of the later one.
    assert "soon" in _answer(store, "apple tasting", now=now + timedelta(minutes=31))


def test_access_counts_keep_the_members(store: Any) -> None:
    """Searches count accesses (an update of every hit); that moves no counter."""
    for _ in range(3):
        _answer(store, "apple")
    store.db.run(store.core.flush_flow())  # the buffered access counts are written
    assert not _lists_members(store, lambda: _answer(store, "apple"))


def test_searches_beside_writers_of_membership_on_postgres(postgres_url: str) -> None:
    """Searches of one namespace on their own connections while others change which items
    they may return (statuses by plain SQL, puts, deletes): every search completes, and
    once the writers stop, each searcher's warm cache answers as the database does, after
    one more change of membership too."""
    import psycopg

    rounds = 12
    with _open(postgres_url) as setup:
        for key, text in TEXTS.items():
            setup.put(NS, key, {"content": text})
    errors: list[BaseException] = []
    with ExitStack() as stack:
        searchers = [stack.enter_context(_open(postgres_url)) for _ in range(3)]

        def search(mine: Any) -> None:
            try:
                for n in range(rounds * 2):
                    _answer(mine, QUERIES[n % len(QUERIES)])
            except BaseException as err:  # reported by the main thread
                errors.append(err)

        def write(n_thread: int) -> None:
            try:
                with (
                    _open(postgres_url) as mine,
                    psycopg.connect(postgres_url, autocommit=True) as plain,
                ):
                    for n in range(rounds):
                        plain.execute(
                            "UPDATE lmt_items SET status = %s WHERE key = %s",
                            [
                                "superseded" if (n + n_thread) % 2 else "active",
                                f"m{1 + (n + n_thread) % 6}",
                            ],
                        )
                        mine.put(NS, f"w{n_thread}", {"content": f"apple note {n}"})
                        if n % 3 == 2:
                            mine.delete(NS, f"w{n_thread}")
            except BaseException as err:
                errors.append(err)

        threads = [threading.Thread(target=search, args=(s,)) for s in searchers]
        threads += [threading.Thread(target=write, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not errors, errors
        for searcher in searchers:
            _answer(searcher, "apple fruit")  # its members kept with the namespace
        with _plain_sql(postgres_url) as run:  # moves no counter of PostgreSQL's
            run(
                "UPDATE lmt_items SET status = CASE status WHEN 'active' THEN 'superseded'"
                " ELSE 'active' END WHERE key = 'm5'"
            )
        for searcher in searchers:
            warm = {q: _answer(searcher, q) for q in ["apple fruit", *QUERIES]}
            assert warm == {q: _fresh(searcher, q) for q in ["apple fruit", *QUERIES]}


def test_a_latch_lets_threads_and_event_loops_go_once_opened() -> None:
    latch = Latch()
    assert not latch.wait(0.01)
    assert asyncio.run(latch.await_open(0.01)) is False
    assert not latch._waiters  # a waiter that timed out is not kept
    woken: list[bool] = []

    async def waiter() -> None:
        woken.append(await latch.await_open(10))

    thread = threading.Thread(target=asyncio.run, args=(waiter(),))
    thread.start()
    blocked = threading.Thread(target=lambda: woken.append(latch.wait(10)))
    blocked.start()
    while not latch._waiters:  # the loop's waiter registered
        time.sleep(0.001)
    latch.open()  # from another thread than the loop's
    thread.join(5)
    blocked.join(5)
    assert woken == [True, True]
    assert latch.wait(0)
    assert asyncio.run(latch.await_open(0))


@contextmanager
def _slow_loads(io_class: Any, *, fail_first: bool = False) -> Iterator[SimpleNamespace]:
    """Loads of a namespace (the statement reading its vectors) held until ``release``
    is set, the first one failing with ``fail_first``; ``loads`` counts them, and
    ``waits`` counts searches waiting for another's load."""
    from langmem_tiers.sql import flow

    seen = SimpleNamespace(loads=0, waits=0, entered=threading.Event(), release=threading.Event())
    original_sql, original_wait, original_await = (
        io_class.__dict__["sql"],
        Latch.wait,
        Latch.await_open,
    )

    def is_load(request: Any) -> bool:
        # Reads vectors, and not only those of the items the change log names.
        return f"FROM {VECTORS} v" in request.text and ITEM_CHANGES not in request.text

    def sync_sql(io: Any, request: Any) -> Any:
        if is_load(request):
            seen.loads += 1
            seen.entered.set()
            assert seen.release.wait(10)
            if fail_first and seen.loads == 1:
                raise RuntimeError("the database went away during the load")
        return original_sql(io, request)

    async def async_sql(io: Any, request: Any) -> Any:
        if is_load(request):
            seen.loads += 1
            seen.entered.set()
            assert await asyncio.to_thread(seen.release.wait, 10)
            if fail_first and seen.loads == 1:
                raise RuntimeError("the database went away during the load")
        return await original_sql(io, request)

    def counted_wait(latch: Any, timeout: float) -> bool:
        seen.waits += 1
        return original_wait(latch, timeout)

    async def counted_await(latch: Any, timeout: float) -> bool:
        seen.waits += 1
        return await original_await(latch, timeout)

    is_async = asyncio.iscoroutinefunction(original_sql)
    io_class.sql = async_sql if is_async else sync_sql
    flow.Latch.wait = counted_wait  # type: ignore[method-assign]
    flow.Latch.await_open = counted_await  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        io_class.sql = original_sql
        flow.Latch.wait = original_wait  # type: ignore[method-assign]
        flow.Latch.await_open = original_await  # type: ignore[method-assign]


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


@pytest.mark.parametrize("fail_first", [False, True])
def test_searches_meeting_a_cold_namespace_share_one_load(
    postgres_url: str, fail_first: bool
) -> None:
    """Threads searching a namespace another thread is reading wait for that load and use
    its entry: one load, not one per thread. When that load fails, its search fails and
    the waiters read the namespace themselves."""
    from langmem_tiers.sql import postgres_io

    with _open(postgres_url) as store:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        expected = _fresh(store, "apple fruit")
        _cache(store).clear()
        answers: list[Any] = []

        def search() -> None:
            try:
                answers.append(_answer(store, "apple fruit"))
            except Exception as err:  # the failed load's search
                answers.append(err)

        with _slow_loads(postgres_io._PgConnIO, fail_first=fail_first) as seen:
            first = threading.Thread(target=search)
            first.start()
            assert seen.entered.wait(10)
            others = [threading.Thread(target=search) for _ in range(3)]
            for thread in others:
                thread.start()
            _until(lambda: seen.waits == 3)
            seen.release.set()
            for thread in [first, *others]:
                thread.join(10)
        failed = [a for a in answers if isinstance(a, Exception)]
        assert len(failed) == (1 if fail_first else 0)
        assert [a for a in answers if not isinstance(a, Exception)] == [expected] * (
            3 if fail_first else 4
        )
        if fail_first:  # the waiters read it again (how many times depends on timing)
            assert 2 <= seen.loads <= 4
        else:
            assert seen.loads == 1
        assert not _cache(store)._loads


async def test_tasks_meeting_a_cold_namespace_share_one_load(postgres_url: str) -> None:
    """The same on one event loop (concurrent ``abatch`` calls on an async pool): tasks
    await the load of another while the loop runs on."""
    from langgraph.store.base import SearchOp

    from langmem_tiers.sql import postgres_io

    async with TieredMemoryStore.afrom_url(
        postgres_url, index=default_index(fields=("content",))
    ) as store:
        for key, text in TEXTS.items():
            await store.aput(NS, key, {"content": text})

        async def answer() -> list[str]:
            (hits,) = await store.abatch([SearchOp(NS, query="apple fruit", limit=4)])
            return [h.key for h in hits]

        expected = await answer()
        _cache(store).clear()

        async def until(condition: Callable[[], bool]) -> None:
            deadline = time.monotonic() + 10
            while not condition():
                assert time.monotonic() < deadline, "timed out"
                await asyncio.sleep(0.002)

        with _slow_loads(postgres_io._AsyncPgConnIO) as seen:
            first = asyncio.create_task(answer())
            await until(seen.entered.is_set)
            others = [asyncio.create_task(answer()) for _ in range(3)]
            await until(lambda: seen.waits == 3)
            seen.release.set()
            found = await asyncio.gather(first, *others)
        assert found == [expected] * 4
        assert seen.loads == 1


def test_a_load_that_never_ends_is_waited_for_once(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load whose flow was left unfinished never opens its latch: the next search waits
    at most ``LOAD_WAIT_SECONDS``, reads the namespace itself, and forgets that load, so
    later searches do not wait again."""
    from langmem_tiers.long_term.store.records import join_namespace
    from langmem_tiers.long_term.store.search import scope_cache

    expected = _fresh(store, "apple fruit")
    _cache(store).clear()
    monkeypatch.setattr(scope_cache, "LOAD_WAIT_SECONDS", 0.05)
    waits: list[float] = []
    original = Latch.wait

    def counted(latch: Any, timeout: float) -> bool:
        waits.append(timeout)
        return original(latch, timeout)

    monkeypatch.setattr(Latch, "wait", counted)
    _cache(store)._loads[join_namespace(NS)] = Latch()  # a load that never ends
    assert _answer(store, "apple fruit") == expected
    assert waits == [0.05]
    assert not _cache(store)._loads
    _cache(store).clear()
    assert _answer(store, "apple fruit") == expected
    assert waits == [0.05]


def test_moves_on_postgres_are_logged_and_folded_by_writers(postgres_url: str) -> None:
    """A status change logs a move (no counter row is taken); the next write of the
    namespace, holding its counter, adds the log to it: the sum a search reads stays."""
    import psycopg

    def moves(pg: Any) -> tuple[int, int]:
        counted = pg.execute(
            "SELECT moves FROM lmt_scope_changes WHERE prefix = %s", [".".join(NS)]
        ).fetchone()[0]
        logged = pg.execute("SELECT count(*) FROM lmt_scope_moves").fetchone()[0]
        return int(counted), int(logged)

    with _open(postgres_url) as store, psycopg.connect(postgres_url, autocommit=True) as pg:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        start = moves(pg)
        assert start[1] == 0
        pg.execute("UPDATE lmt_items SET status = 'superseded' WHERE key IN ('m1', 'm2')")
        pg.execute("UPDATE lmt_items SET importance = importance + 1")  # no move
        pg.execute("UPDATE lmt_items SET status = status")  # set, not changed: no move
        assert moves(pg) == (start[0], 2)
        assert "m1" not in _answer(store, "apple")
        store.put(NS, "m7", {"content": "plum jam"})
        assert moves(pg) == (start[0] + 2, 0)
        assert _answer(store, "apple fruit") == _fresh(store, "apple fruit")


def test_a_writer_on_postgres_does_not_wait_for_an_open_move(postgres_url: str) -> None:
    """A transaction that changed an item's status and is still open holds that item's
    row, and nothing of its namespace's counter: a put of another item of the namespace
    commits meanwhile, and the move counts once the mover commits."""
    import psycopg

    with _open(postgres_url) as store:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        assert "m5" in _answer(store, "apple fruit")
        _answer(store, "apple fruit")  # remembered
        with psycopg.connect(postgres_url) as mover:
            mover.execute("UPDATE lmt_items SET status = 'superseded' WHERE key = 'm5'")
            with _open(postgres_url) as writer:
                put = threading.Thread(
                    target=writer.put, args=(NS, "m8", {"content": "apple cider vinegar"})
                )
                put.start()
                put.join(timeout=10)
                waited = put.is_alive()
                assert "m5" in _answer(store, "apple fruit")  # not committed yet
                mover.commit()
                put.join(timeout=30)
            assert not waited, "the put waited for the open move"
        after = _answer(store, "apple fruit")
        assert "m5" not in after
        assert "m8" in after
        assert after == _fresh(store, "apple fruit")


def test_ttl_refreshes_on_postgres_keep_the_move_log_short(postgres_url: str) -> None:
    """Each search that refreshes (``refresh_ttl=True``) restarts the TTL of the items it
    returns, a move of each: a namespace
    that is only read folds its log as it refreshes, so the log holds at most the last
    refresh's moves while the counters keep counting them."""
    import psycopg

    ttl_ns = ("u1", "ttl")
    with _open(postgres_url) as store, psycopg.connect(postgres_url, autocommit=True) as pg:
        for key, text in TEXTS.items():
            store.put(ttl_ns, key, {"content": text}, ttl=60)
        logged = []
        for _ in range(6):
            hits = store.search(ttl_ns, query="apple fruit", limit=3, refresh_ttl=True)
            assert [h.key for h in hits][:2] == ["m5", "m1"]
            store.db.run(store.core.flush_flow())  # the refresh, in its own transaction
            logged.append(pg.execute("SELECT count(*) FROM lmt_scope_moves").fetchone()[0])
        counted = pg.execute(
            "SELECT moves FROM lmt_scope_changes WHERE prefix = 'u1.ttl'"
        ).fetchone()[0]
    assert max(logged) <= 3, logged
    assert counted + logged[-1] >= 6 * 2


# -- own writes ---------------------------------------------------------------------------


class _LongVectors(KeywordEmbeddings):
    """Document vectors of several lengths: what the store keeps is normalised."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed_documents(texts)
        return [[x * (2 + len(t) % 5) for x in v] for v, t in zip(vectors, texts, strict=True)]


def _open_own(url: str) -> Any:
    return TieredMemoryStore.from_url(url, index=default_index(_LongVectors(), fields=("content",)))


def _state(data: Any) -> tuple[Any, ...]:
    """What an entry holds, whatever the order of its rows: version, counters, each item's
    length, packed terms, kind and vectors (bytes), and each term's postings (a term no
    item holds any more may keep an empty posting)."""
    vectors: dict[str, list[bytes]] = {}
    for row, item in enumerate(data.vector_ids):
        vectors.setdefault(item, []).append(data.vectors.row(row).tobytes())
    return (
        data.version,
        data.counters,
        {i: int(data.lengths[data.row_of[i]]) for i in data.ids},
        dict(data.packed_terms),
        set(data.episodic),
        {i: sorted(v) for i, v in vectors.items()},
        {t: postings for t in data._codes if (postings := _as_dict(data, t))},
    )


@contextmanager
def _item_reads(store: Any) -> Iterator[list[str]]:
    """What the store's searches meanwhile read of items: ``"load"`` (every item of a
    namespace) or ``"changes"`` (items the change log named, taken into an entry)."""
    seen: list[str] = []
    cache = _cache(store)
    original_load, original_changed = cache._load_flow, ScopeData.changed

    def load(*args: Any, **kwargs: Any) -> Any:
        seen.append("load")
        return (yield from original_load(*args, **kwargs))

    def changed(data: ScopeData, *args: Any, **kwargs: Any) -> ScopeData:
        seen.append("changes")
        return original_changed(data, *args, **kwargs)

    cache._load_flow = load  # type: ignore[method-assign]
    ScopeData.changed = changed  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del cache._load_flow
        ScopeData.changed = original_changed  # type: ignore[method-assign]


def _read_state(reader: Any, prefix: tuple[str, ...]) -> tuple[Any, ...]:
    """The entry of ``prefix`` as a store that never wrote reads it from the database."""
    _cache(reader).clear()
    reader.search(prefix, query="apple", limit=1)
    return _state(_cache(reader)._entries[".".join(prefix)])


def _scores(store: Any, prefix: tuple[str, ...], query: str, limit: int = 10) -> dict[str, float]:
    hits = store.search(prefix, query=query, limit=limit)
    return {f"{'.'.join(h.namespace)}/{h.key}": round(h.scores["semantic"], 9) for h in hits}


def test_a_namespace_written_from_its_start_is_searched_without_reading_it(db: str) -> None:
    """A namespace this store created holds every item this store wrote there: its first
    search reads neither its items nor its change log, and its entry is the one a store
    that never wrote reads from the database (items, kinds, vectors, postings, counts)."""
    notes, events = ("u2", "notes"), ("u2", "talk", "episodic")
    with _open_own(db) as store, _open_own(db) as reader:
        store.batch([_put(notes, f"k{n}", f"apple {n} music") for n in range(6)])
        store.batch([_put(events, f"e{n}", f"we met at the apple shop {n}") for n in range(3)])
        store.put(
            notes, "k1", {"content": "banana bread", "title": "bread"}, index=["content", "title"]
        )
        store.delete(notes, "k2")
        store.delete(notes, "never-there")
        store.put(notes, "plain", {"content": "apple not indexed"}, index=False)
        for prefix in (notes, events):
            with _item_reads(store) as seen:
                answer = _scores(store, prefix, "apple music")
            assert seen == []
            assert _state(_cache(store)._entries[".".join(prefix)]) == _read_state(reader, prefix)
            assert answer == _scores(reader, prefix, "apple music")


def test_a_seed_of_many_writes_is_the_entry_a_read_makes(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seed appends every write's rows (joining its vector blocks as it goes, here
    every third): items written again, deleted, written after their deletion, with two
    vectors or none, keep only their last rows, the rows of items written again do not
    pile up, and the entry is the one a store that never wrote reads."""
    monkeypatch.setattr(scope_seeds, "MAX_SEED_BLOCKS", 2)
    notes = ("u3", "notes")
    with _open_own(db) as store, _open_own(db) as reader:
        for n in range(5):
            store.put(notes, f"k{n}", {"content": f"apple {n} music"})
        store.put(
            notes, "k1", {"content": "banana bread", "title": "bread"}, index=["content", "title"]
        )
        store.delete(notes, "k2")
        store.batch([_put(notes, "k3", "apple pie"), _put(notes, "k4", None)])
        store.put(notes, "plain", {"content": "apple not indexed"}, index=False)
        store.put(notes, "k2", {"content": "apple music again"})
        for n in range(40):
            store.put(notes, "k0", {"content": f"apple music {n}"})
        seed = _cache(store)._seeds["u3.notes"]
        # Rows of items written again are dropped as they pile up.
        assert len(seed.ids) <= 2 * len(seed.items) + scope_seeds.MAX_SEED_BLOCKS + 1
        with _item_reads(store) as seen:
            answer = _scores(store, notes, "apple music")
        assert seen == []
        assert _state(_cache(store)._entries["u3.notes"]) == _read_state(reader, notes)
        assert answer == _scores(reader, notes, "apple music")


def test_own_writes_keep_the_entries_above_them_current(db: str) -> None:
    """Writes of this store to namespaces under cached prefixes are taken into those
    entries (no read of the namespace or of the log at the next search), beside entries
    that other writers made stale; whoever wrote last, every entry that says it is at the
    database's count holds what the database holds."""
    a, child, other = ("u3", "a"), ("u3", "a", "b"), ("u3", "c")
    with _open_own(db) as store, _open_own(db) as reader, _open_own(db) as stranger:
        stranger.batch([_put(ns, "s0", "apple from a stranger") for ns in (a, child, other)])
        for prefix in (("u3",), a, child, other):
            store.search(prefix, query="apple", limit=1)  # loads: entries of 4 prefixes
        steps: list[tuple[Callable[[], Any], set[str]]] = [
            (lambda: store.batch([_put(a, f"k{n}", f"apple pie {n}") for n in range(4)]), set()),
            (lambda: store.batch([_put(child, "k0", "music"), _put(other, "s0", None)]), set()),
            (lambda: store.put(a, "k1", {"content": "banana split"}), set()),
            (
                lambda: stranger.put(child, "s1", {"content": "apple jazz"}),
                {"u3", "u3.a", "u3.a.b"},
            ),
            (lambda: store.put(a, "k2", None), set()),
            (lambda: store.put(child, "k5", {"content": "apple again"}), set()),
        ]
        for step, stale in steps:
            step()
            cache = _cache(store)
            held = dict(cache._entries)
            assert set(held) == {"u3", "u3.a", "u3.a.b", "u3.c"}
            assert cache._held == sum(len(d.ids) for d in held.values())
            current = {
                p for p in held if _read_state(reader, tuple(p.split(".")))[0] == held[p].version
            }
            assert current == set(held) - stale
            for prefix in current:
                assert _state(held[prefix]) == _read_state(reader, tuple(prefix.split(".")))
            with _item_reads(store) as seen:
                for prefix in held:
                    answer = _scores(store, tuple(prefix.split(".")), "apple pie music")
                    assert answer == _scores(reader, tuple(prefix.split(".")), "apple pie music")
            assert seen == ["changes"] * len(stale)


def test_a_namespace_another_store_wrote_to_is_read_again(db: str) -> None:
    """A write of another store between two of this store's ends the seed: the namespace
    is then read from the database, and found as the other store left it."""
    ns = ("u4", "notes")
    with _open(db) as store, _open(db) as other:
        store.put(ns, "a", {"content": "apple one"})
        other.put(ns, "b", {"content": "apple two"})
        store.put(ns, "c", {"content": "apple three"})
        assert "u4.notes" not in _cache(store)._seeds
        with _item_reads(store) as seen:
            answer = _scores(store, ns, "apple")
        assert seen == ["load"]
        assert sorted(answer) == ["u4.notes/a", "u4.notes/b", "u4.notes/c"]
        other.put(ns, "d", {"content": "apple four"})
        store.put(ns, "e", {"content": "apple five"})
        assert sorted(_scores(store, ns, "apple")) == [f"u4.notes/{k}" for k in "abcde"]


def test_a_search_from_a_seed_catches_up_with_other_writers(db: str) -> None:
    """The first search of a seeded namespace another store wrote to since reads the
    change log above the seed's count: the other store's items come in, the seed's stay."""
    ns = ("u5", "notes")
    with _open(db) as store, _open(db) as other:
        store.batch([_put(ns, f"k{n}", f"apple {n}") for n in range(3)])
        other.put(ns, "k1", {"content": "banana"})
        other.put(ns, "x", {"content": "apple from elsewhere"})
        with _item_reads(store) as seen:
            answer = _scores(store, ns, "apple banana")
        assert seen == ["changes"]
        assert answer == _scores(other, ns, "apple banana")
        assert len(answer) == 4


def _hits(store: Any, prefix: tuple[str, ...], query: str, **options: Any) -> list[Any]:
    """Everything a search returns but the combined score (recency moves between two)."""
    hits = store.search(prefix, query=query, limit=5, **options)
    return [
        (h.namespace, h.key, h.value, h.created_at, round(h.scores["semantic"], 9)) for h in hits
    ]


def test_a_wrong_guess_of_every_item_costs_a_statement_not_an_answer(db: str) -> None:
    """Where the namespace changed since the entry (as many items, not the same ones),
    not every item is a member (some no longer valid), or a namespace below was written
    by another store, the search reads its members and answers as a store that never
    wrote."""
    ns, below = ("u7", "semantic"), ("u7", "semantic", "old")
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    with _open(db) as store, _open(db) as reader:
        store.batch([_put(ns, f"k{n}", f"apple {n} music") for n in range(6)])
        now = datetime.now(UTC)
        assert len(_hits(store, ns, "apple music", now=now)) == 5
        reader.batch([_put(ns, "k0", None), _put(ns, "new", "apple music apple music anew")])
        found = _hits(store, ns, "apple music", now=now)
        assert "new" in [h[1] for h in found]
        assert found == _hits(reader, ns, "apple music", now=now)
        # Past items that match best: taken for members, they would fill the candidates.
        for n in range(20):
            store.put(ns, f"gone{n}", {"content": "apple music apple music", "valid_until": past})
        found = _hits(store, ns, "apple music", now=now)
        assert len(found) == 5
        assert not any(h[1].startswith("gone") for h in found)
        assert found == _hits(reader, ns, "apple music", now=now)
        reader.put(below, "x", {"content": "apple music apple music apple music below"})
        found = _hits(store, ns, "apple music", now=now)
        assert "x" in [h[1] for h in found]
        assert found == _hits(reader, ns, "apple music", now=now)


def test_an_entry_above_the_taken_bound_reads_the_changes_at_its_next_search(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes of this store to a namespace held only by entries larger than
    :data:`MAX_TAKEN_ITEMS` read no counts and are not taken in (copying a large entry
    at every write would cost the writer): the next search reads them from the log,
    once for every write since, and answers as a store that never wrote."""
    from langmem_tiers.long_term.store.search import scope_cache

    ns = ("u9", "notes")
    with _open(db) as store, _open(db) as reader:
        reader.batch([_put(ns, f"k{n}", f"apple {n}") for n in range(6)])
        store.search(ns, query="apple", limit=1)
        monkeypatch.setattr(scope_cache, "MAX_TAKEN_ITEMS", 5)
        store.put(ns, "a", {"content": "apple pie"})  # counted: is the namespace new?
        assert _cache(store).counted(["u9.notes"]) == []
        store.put(ns, "b", {"content": "apple music"})
        with _item_reads(store) as seen:
            found = _hits(store, ns, "apple music")
        assert seen == ["changes"]
        assert found == _hits(reader, ns, "apple music")
        monkeypatch.setattr(scope_cache, "MAX_TAKEN_ITEMS", 8)
        assert _cache(store).counted(["u9.notes"]) == ["u9.notes"]
        store.put(ns, "c", {"content": "apple jam"})
        with _item_reads(store) as seen:
            found = _hits(store, ns, "apple jam")
        assert seen == []
        assert found == _hits(reader, ns, "apple jam")


def test_seeds_are_bounded(db: str) -> None:
    """Seeds hold at most the cache's items; the namespaces they leave are read when
    searched, and their later writes read no counts."""
    with _open(db) as store:
        cache = _cache(store)
        cache.max_items = 5
        for n in range(4):
            store.batch([_put(("u6", f"n{n}"), f"k{k}", f"apple {k}") for k in range(2)])
        assert list(cache._seeds) == ["u6.n2", "u6.n3"]
        assert cache.counted(["u6.n0", "u6.n3", "u6.n9"]) == ["u6.n3", "u6.n9"]
        with _item_reads(store) as seen:
            assert len(_scores(store, ("u6", "n0"), "apple")) == 2
            assert len(_scores(store, ("u6", "n3"), "apple")) == 2
        assert seen == ["load"]


def test_concurrent_writers_leave_every_entry_right(db: str) -> None:
    """Threads of one store and another store write the same namespaces at once (their
    commits and their taking-in of own writes interleave); every cached entry and seed
    that says it is at the database's count holds what the database holds, and every
    search answers as a store that never wrote."""
    spaces = [("u7", "a"), ("u7", "a", "b"), ("u7", "c")]
    with _open_own(db) as store, _open_own(db) as other, _open_own(db) as reader:
        store.search(("u7",), query="apple", limit=1)

        def write(writer: Any, name: str) -> None:
            for n in range(12):
                ns = spaces[n % len(spaces)]
                writer.batch(
                    [
                        _put(ns, f"{name}{n}", f"apple {name} {n} music"),
                        _put(ns, f"shared{n % 4}", f"apple shared {name} {n}"),
                        _put(ns, f"{name}{n - 3}", None),
                    ]
                )

        threads = [
            threading.Thread(target=write, args=(w, name))
            for w, name in ((store, "s"), (store, "t"), (other, "o"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cache = _cache(store)
        # The items the bound counts are those of the entries, however writes replaced them.
        assert cache._held == sum(len(d.ids) for d in cache._entries.values())
        held = {**cache._entries, **{n: seed.entry(n) for n, seed in cache._seeds.items()}}
        for prefix, data in held.items():
            fresh = _read_state(reader, tuple(prefix.split(".")))
            if fresh[0] == data.version:
                assert _state(data) == fresh
        # Every item's relevance, not a page: items of equal relevance are ordered by their
        # access counts, which each store buffers apart, so a page may cut them differently.
        for prefix in [("u7",), *spaces]:
            assert _scores(store, prefix, "apple shared music", 100) == _scores(
                reader, prefix, "apple shared music", 100
            )


@given(
    st.lists(st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5, 1.0, -1.0]), min_size=0, max_size=30),
    st.integers(min_value=0, max_value=35),
    st.booleans(),
    st.sampled_from([np.float64, np.float32]),
    st.randoms(use_true_random=False),
)
def test_top_rows_are_the_best_values_ties_in_id_order(
    values: list[float], k: int, subset: bool, dtype: Any, rnd: Any
) -> None:
    """``_top_rows`` (the cache's partial sort) against sorting every row: the ``k``
    highest values among the rows asked, best first, ties by id; many ties on purpose."""
    array = np.array(values, dtype=dtype)
    ids = [f"id{rnd.randrange(10**6):07d}-{n}" for n in range(len(values))]
    rows = sorted(rnd.sample(range(len(values)), len(values) // 2)) if subset else None
    asked = range(len(values)) if rows is None else rows
    expected = sorted(asked, key=lambda r: (-float(array[r]), ids[r]))[:k]
    found = scope_data._top_rows(
        array, k, None if rows is None else np.array(rows, dtype=np.int64), ids
    )
    assert found == expected
