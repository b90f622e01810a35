"""Access counts live in a table of their own: counting what searches return never rewrites
an item's row, a deleted item takes its count with it, and a database whose counts were
kept in the items' rows keeps them through the upgrade."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.store.records import item_id
from langmem_tiers.sql.dialect import ITEM_ACCESS

from .fakes import default_index
from .old_schema import as_release
from .sql_helpers import backend_url, store_rows

NS = ("u1", "semantic")
TEXTS = {
    "m0": "apple pie with cinnamon for dessert",
    "m1": "the car engine needs new oil",
    "m2": "apple and banana are my favourite fruit",
}


def _counts(store: Any) -> dict[str, int]:
    rows = store_rows(store, f"SELECT id, access_count FROM {ITEM_ACCESS}")
    return {str(i): int(n) for i, n in rows}


def _open(url: str) -> Any:
    return TieredMemoryStore.from_url(url, index=default_index(fields=("content",)))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_searches_count_what_they_return_and_a_delete_forgets_it(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with _open(backend_url(backend, tmp_path, request)) as store:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        found = [h.key for h in store.search(NS, query="apple", limit=2)]
        store.search(NS, query="apple", limit=2)
        store.db.run(store.core.flush_flow())
        counted = _counts(store)
        store.delete(NS, found[0])
        after_delete = _counts(store)
        # A memory put again under the key is a new one: it has no accesses yet.
        store.put(NS, found[0], {"content": "a new memory under the old key"})
        again = _counts(store)
    ids = {k: item_id(NS, k) for k in TEXTS}
    assert counted == {ids[k]: 2 for k in found}
    assert after_delete == {ids[found[1]]: 2}
    assert again == after_delete


def test_counting_accesses_leaves_the_items_rows_as_they_are(postgres_url: str) -> None:
    # On PostgreSQL an update writes a new version of the whole row: counting 500 search
    # results that way cost 12-25 ms, and the next searches read the new versions.
    with _open(postgres_url) as store:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        versions = "SELECT id, xmin::text FROM lmt_items ORDER BY id"
        before = store_rows(store, versions)
        for _ in range(3):
            store.search(NS, query="apple", limit=3)
        store.db.run(store.core.flush_flow())
        after = store_rows(store, versions)
        counted = _counts(store)
    assert after == before
    assert set(counted.values()) == {3}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_counts_kept_in_the_items_rows_survive_the_upgrade(
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    url = backend_url(backend, tmp_path, request)
    at = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
    with monkeypatch.context() as old:
        as_release(old, 30)  # the release before the access counts' table (31)
        with _open(url) as store:
            for key, text in TEXTS.items():
                store.put(NS, key, {"content": text})
            # What a release of that time wrote when it flushed its counts.
            store_rows(
                store,
                "UPDATE lmt_items SET access_count = 4, last_accessed_at = ? WHERE key = 'm1'",
                [store.db.dialect.ts_param(at)],
            )
    with _open(url) as store:
        rows = store_rows(store, f"SELECT id, access_count, last_accessed_at FROM {ITEM_ACCESS}")
        dialect = store.db.dialect
        assert [(i, n, dialect.ts_value(t)) for i, n, t in rows] == [(item_id(NS, "m1"), 4, at)]
        store.put(NS, "m3", {"content": "apple crumble"})
        store.search(NS, query="apple", limit=2)
        store.db.run(store.core.flush_flow())
        assert _counts(store)[item_id(NS, "m1")] == 4


def test_the_counts_table_is_analyzed_as_it_grows(postgres_url: str) -> None:
    # PostgreSQL plans a statement a connection runs often once, with the row counts it
    # knew then: looked up in a table analyzed while empty, counts were read by a scan of
    # the whole table for every candidate of every search (3 ms a search at 3,000 counts).
    from langgraph.store.base import PutOp

    estimate = f"SELECT reltuples FROM pg_class WHERE oid = to_regclass('{ITEM_ACCESS}')"
    with _open(postgres_url) as store:
        store.batch([PutOp(NS, f"k{i}", {"content": f"note {i} on apples"}) for i in range(600)])
        store_rows(store, f"ANALYZE {ITEM_ACCESS}")
        (empty,) = store_rows(store, estimate)
        ids = [item_id(NS, f"k{i}") for i in range(600)]
        store.core.access.record(ids, datetime.now(timezone.utc))
        store.search(NS, query="apples", limit=3)  # finds the counts due: flushed, analyzed
        (grown,) = store_rows(store, estimate)
        pending = len(store.core.access.counts)
    assert empty[0] <= 0
    assert grown[0] >= 600
    assert pending == 3
