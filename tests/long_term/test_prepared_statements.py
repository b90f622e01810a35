"""PostgreSQL statements are prepared as the connection says (psycopg's prepare_threshold).

A statement run often on one connection is planned once there; a connection behind a
pooler that cannot keep prepared statements says ``prepare_threshold=None`` and the store
prepares nothing on it.
"""

from __future__ import annotations

import psycopg
import pytest

from langmem_tiers import TieredMemoryStore

NAMESPACE = ("maya", "semantic")


def _work(store: TieredMemoryStore) -> None:
    store.setup()
    for n in range(8):
        store.put(NAMESPACE, f"fact-{n}", {"content": f"Maya visited city number {n}"})
    for n in range(8):
        assert store.search(NAMESPACE, query=f"city number {n}", limit=3)
        assert store.get(NAMESPACE, f"fact-{n}") is not None


def _prepared(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize(("threshold", "prepares"), [(5, True), (0, True), (None, False)], ids=str)
def test_the_store_prepares_as_its_connection_says(
    postgres_url: str, threshold: int | None, prepares: bool
) -> None:
    with psycopg.connect(postgres_url, autocommit=True, prepare_threshold=threshold) as conn:
        store = TieredMemoryStore(conn, index=None)
        _work(store)
        assert (_prepared(conn) > 0) is prepares
        # Prepared or not, the answers are the same.
        hits = store.search(NAMESPACE, query="city number 3", limit=1)
        assert [h.key for h in hits] == ["fact-3"]
