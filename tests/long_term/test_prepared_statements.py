"""PostgreSQL statements are prepared as the connection says (psycopg's prepare_threshold).

A statement run often on one connection is planned once there; a connection behind a
pooler that cannot keep prepared statements says ``prepare_threshold=None`` and the store
prepares nothing on it.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp
from psycopg import sql

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


def _scans_of_rows(plan: Any) -> list[Any]:
    """The plan's nodes that read the statement's own rows (``lmt_items`` as ``i``)."""
    own = [plan] if plan.get("Relation Name") == "lmt_items" and plan.get("Alias") == "i" else []
    return own + [n for child in plan.get("Plans", ()) for n in _scans_of_rows(child)]


def test_a_plan_for_any_values_reads_the_rows_by_id(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A prepared statement may run on a plan made for any values. Such a plan of the
    # candidates-with-neighbours statement read the whole namespace through its index to
    # find the rows of a few ids (11-14 ms against 2.5 over 10,000 episodes); the rows
    # read by id check the namespace on an expression no index serves.
    seen: list[tuple[Any, Any]] = []
    execute = psycopg.Connection.execute

    def recording(self: psycopg.Connection[Any], query: Any, params: Any = None, **kw: Any) -> Any:
        if str(query).startswith("WITH a AS"):
            seen.append((query, params))  # the candidates with their neighbours
        return execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    with psycopg.connect(postgres_url, autocommit=True, prepare_threshold=0) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        store = TieredMemoryStore(conn, index=None)
        store.setup()
        episodes = ("maya", "episodic")
        store.batch(
            [
                PutOp(episodes, f"turn-{n}", {"content": f"Maya: I visited city number {n}"})
                for n in range(2000)
            ]
        )
        conn.execute("ANALYZE")
        for n in range(6):  # prepared at once, run on the plan for any values
            hits = store.search(episodes, query=f"city number {n}", limit=3)
            assert hits[0].key == f"turn-{n}"
        assert seen
        _, params = seen[-1]
        (name,) = conn.execute(
            "SELECT name FROM pg_prepared_statements WHERE statement LIKE 'WITH a AS%'"
        ).fetchone() or (None,)
        assert name is not None
        explain = sql.SQL("EXPLAIN (FORMAT JSON) EXECUTE {}({})").format(
            sql.Identifier(name), sql.SQL(", ").join(sql.Literal(p) for p in params)
        )
        (plan,) = conn.execute(explain).fetchone() or (None,)
    scans = _scans_of_rows(plan[0]["Plan"])
    assert scans
    # By id (or, over a table this small, a scan of it): never a range of the namespace.
    assert not [scan for scan in scans if "prefix" in scan.get("Index Cond", "")], scans
