"""Batches larger than a statement's parameter limit (65,535 on PostgreSQL, 32,766 on SQLite).

A batch of 70,000 gets, puts, overwrites or deletes is one call of the store; it must
neither fail nor change meaning. Lists of ids are bound as one array parameter
(``Dialect.in_list``), so no statement grows with the batch.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import GetOp, PutOp

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.store import TieredMemoryStore

from .harness import sql_rows

N = 70_000
NAMESPACE = ("bulk", "docs")


@pytest.fixture
def store(store_url: str) -> Iterator[TieredMemoryStore]:
    with TieredMemoryStore.from_url(store_url, settings=Settings()) as s:
        yield s


def _puts(version: int, ttl: float | None = None) -> list[PutOp]:
    # index=False: the limit concerns statements, not embeddings.
    value = {"v": version}
    return [PutOp(NAMESPACE, f"k{n}", {"n": n, **value}, index=False, ttl=ttl) for n in range(N)]


def test_seventy_thousand_gets_puts_and_deletes_in_one_batch(store: TieredMemoryStore) -> None:
    store.batch(_puts(1))
    # Every item replaced (its old row, terms and snapshot are read), now with a TTL, so
    # the gets below also restart 70,000 TTLs.
    store.batch(_puts(2, ttl=60.0))
    got = store.batch([GetOp(NAMESPACE, f"k{n}") for n in range(N)])
    assert len(got) == N
    assert all(item is not None and item.value == {"n": n, "v": 2} for n, item in enumerate(got))
    same = store.batch([GetOp(NAMESPACE, "k7")] * N)
    assert all(item is not None and item.key == "k7" for item in same)

    store.batch([PutOp(NAMESPACE, f"k{n}", None) for n in range(N)])
    assert sql_rows(store, "SELECT count(*) FROM lmt_items")[0][0] == 0
    events = sql_rows(store, "SELECT type, count(*) FROM lmt_events GROUP BY type ORDER BY 1")
    assert [tuple(r) for r in events] == [
        ("memory.created", N),
        ("memory.deleted", N),
        ("memory.updated", N),
    ]
