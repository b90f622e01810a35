"""The embedded store's scope cache: the same answers as reading the database, however the
namespace changed and whatever the search's time.

Each test compares a store whose cache is warm with what the database says now (a cache
cleared before the search), or with the expected keys.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.store.search.scope_cache import ScopeCache
from langmem_tiers.sql.dialect import PACKED_SEPARATOR

from .fakes import default_index

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


def _open(path: Path) -> Any:
    return TieredMemoryStore.from_url(f"sqlite:///{path}", index=default_index(fields=("content",)))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db: Path) -> Iterator[Any]:
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


def test_search_without_cache_is_the_reference(db: Path, store: Any) -> None:
    """The cached path ranks as the SQL path does (BM25 with feedback, dense, fusion),
    with statistics over the search's members only: items of the namespace that it may
    not return (superseded, no longer valid) hold the query's words too."""
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    store.put(NS, "old", {"content": "apple apple coffee paris", "status": "superseded"})
    store.put(NS, "gone", {"content": "apple music engine", "valid_until": past})
    cached = {q: _answer(store, q) for q in QUERIES}
    assert all("old" not in a and "gone" not in a for a in cached.values())
    store.core.search.scope_cache = None
    assert {q: _answer(store, q) for q in QUERIES} == cached


def test_writes_of_another_store_on_the_file_are_seen(db: Path, store: Any) -> None:
    assert _keys(_answer(store, "banana"))[0] == "m5"
    with _open(db) as other:
        other.put(NS, "m7", {"content": "banana bread banana split banana"})
        other.put(NS, "m5", {"content": "pears only"})
        other.delete(NS, "m2")
    assert _keys(_answer(store, "banana"))[0] == "m7"
    assert "m2" not in _answer(store, "car engine")
    assert _answer(store, "banana") == _fresh(store, "banana")


def test_changes_by_plain_sql_are_seen(db: Path, store: Any) -> None:
    """A change made without the store (another program, the engine's own SQL)."""
    before = _answer(store, "apple")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM lmt_items WHERE key = 'm1'")
        # The length changes without the terms (what compression does to an item).
        conn.execute("UPDATE lmt_items SET doc_len = 40 WHERE key = 'm5'")
    conn.close()
    after = _answer(store, "apple")
    assert "m1" in before
    assert "m1" not in after
    assert after == _fresh(store, "apple")


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


def test_the_cache_is_bounded(store: Any) -> None:
    cache = _cache(store)
    cache.max_items = 3  # fewer than the namespace holds: used once, never kept
    assert _answer(store, "apple") == _fresh(store, "apple")
    assert not cache._entries


def test_dense_top_k_keeps_ties_in_id_order() -> None:
    """The partial sort picks the same top k as sorting every item by (-similarity, id),
    ties at the k-th value included, and scores the requested extra items."""
    import numpy as np

    from langmem_tiers.long_term.store.search.scope_cache import ScopeData

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


def test_inverted_lists_built_at_once_answer_as_those_built_per_term() -> None:
    from langmem_tiers.long_term.store.search.scope_cache import LAZY_TERMS, ScopeData

    terms = {f"i{n}": {f"t{(n * k) % 97}": k for k in range(1, 6)} for n in range(50)}
    data = ScopeData(1, dict.fromkeys(terms, 15), terms, [], np.zeros((0, 0), dtype=np.float32))
    expected = {
        f"t{t}": {i: tf[f"t{t}"] for i, tf in terms.items() if f"t{t}" in tf} for t in range(98)
    }
    got = {term: _as_dict(data, term) for term in expected}  # past LAZY_TERMS: all at once
    assert len(expected) > LAZY_TERMS
    assert got == expected
    assert _as_dict(data, "absent") == {}


def _as_dict(data: Any, term: str) -> dict[str, int]:
    rows, counts = data.posting(term)
    return {data.ids[r]: int(n) for r, n in zip(rows.tolist(), counts.tolist(), strict=True)}


def _statements(store: Any, run: Any) -> list[str]:
    conn = store.db.sync_io.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return statements


def _lists_members(statements: list[str]) -> bool:
    return any("group_concat(i.id" in s for s in statements)


def test_an_unchanged_namespace_is_not_listed_again(store: Any) -> None:
    """A search of a namespace nothing changed in reads two counters, not its members."""
    expected = _fresh(store, "apple fruit")
    _cache(store).clear()
    first = _statements(store, lambda: _answer(store, "apple fruit"))
    again = _statements(store, lambda: _answer(store, "music paris"))
    assert _lists_members(first)
    assert not _lists_members(again)
    assert _answer(store, "apple fruit") == expected


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE lmt_items SET status = 'superseded' WHERE key = 'm5'",
        "UPDATE lmt_items SET valid_until = '2000-01-01T00:00:00+00:00' WHERE key = 'm5'",
        "UPDATE lmt_items SET expires_at = '2000-01-01T00:00:00+00:00' WHERE key = 'm5'",
        "UPDATE lmt_items SET valid_from = '2999-01-01T00:00:00+00:00' WHERE key = 'm5'",
    ],
)
def test_a_change_of_membership_by_plain_sql_is_seen(db: Path, store: Any, change: str) -> None:
    """Statuses and times decide membership without a change of the value: each counts."""
    assert "m5" in _answer(store, "apple fruit")
    _answer(store, "apple fruit")  # remembered
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(change)
    conn.close()
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
    assert not _lists_members(_statements(store, lambda: _answer(store, "apple")))
