"""The embedded store's per-scope search cache never serves stale data.

A search of SQLite keeps a scope's terms and vectors in process; every change of the
scope's items (by this store, by another store on the same file, by the engine's direct
SQL) must show in the next search, and the cached ranking must equal the uncached one.
"""

from __future__ import annotations

from pathlib import Path

from langmem_tiers import TieredMemoryStore
from tests.long_term.fakes import default_index

NS = ("user-1", "semantic")
TEXTS = [
    f"{topic} note {i} about the {place}"
    for i, (topic, place) in enumerate(
        (t, p)
        for t in ("garden tomato", "kayak river", "violin concert", "museum visit")
        for p in ("lake", "city", "mountain", "coast", "valley", "forest", "island", "desert")
        for _ in range(2)
    )
]


def _fill(store: TieredMemoryStore) -> None:
    for i, text in enumerate(TEXTS):
        store.put(NS, f"k{i}", {"content": text})


def test_cached_search_ranks_like_the_uncached_one(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path}/m.db", index=default_index()) as store:
        _fill(store)
        assert store.core.search.scope_cache is not None
        # BM25 with feedback from the cached scope equals the SQL postings' (PRF needs
        # 50 documents: 64 here).
        cached = store.core.search.cached_lexical("kayak river lake", _data(store))
        uncached = _lexical_uncached(store, "kayak river lake")
        assert cached.keys() == uncached.keys()
        assert len(cached) > 8
        for item, score in uncached.items():
            assert abs(cached[item] - score) < 1e-9


def _data(store: TieredMemoryStore) -> object:
    from langgraph.store.base import SearchOp

    from langmem_tiers.long_term.store.records import join_namespace
    from langmem_tiers.long_term.store.search.query import prepare_search

    search = prepare_search(SearchOp(NS, query="q", limit=10), store.core.dialect)
    cache = store.core.search.scope_cache
    assert cache is not None
    assert search.plain
    return store.db.run(
        _in_tx(cache.data_flow(join_namespace(search.prefix), search.where, search.params))
    )


def _lexical_uncached(store: TieredMemoryStore, query: str) -> dict[str, float]:
    from langgraph.store.base import SearchOp

    from langmem_tiers.long_term.store.search.query import prepare_search

    search = prepare_search(SearchOp(NS, query=query, limit=10), store.core.dialect)
    scores, _ = store.db.run(_in_tx(store.core.search.lexical_flow(query, search)))
    return scores


def _in_tx(flow: object) -> object:
    from langmem_tiers.sql.flow import Transaction

    def wrapper() -> object:
        return (yield Transaction(flow))  # type: ignore[arg-type]

    return wrapper()


def test_changes_by_another_store_on_the_same_file_show_in_the_next_search(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    with (
        TieredMemoryStore.from_url(url, index=default_index()) as reader,
        TieredMemoryStore.from_url(url, index=default_index()) as writer,
    ):
        _fill(writer)
        before = [h.key for h in reader.search(NS, query="kayak river", limit=5)]
        assert before
        assert all(int(k[1:]) in range(16, 32) for k in before)
        # A new memory that matches better, a deletion and a change of content.
        writer.put(NS, "new", {"content": "kayak river kayak river paddle"})
        writer.delete(NS, before[0])
        writer.put(NS, before[1], {"content": "violin rehearsal"})
        after = [h.key for h in reader.search(NS, query="kayak river", limit=5)]
        assert after[0] == "new"
        assert before[0] not in after
        assert before[1] not in after


def test_status_change_by_direct_sql_leaves_the_cached_scope(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path}/m.db", index=default_index()) as store:
        _fill(store)
        top = store.search(NS, query="museum visit", limit=3)[0].key
        # What the engine's lifecycle does: archive a memory with an UPDATE of its row.
        from langmem_tiers.sql.flow import Sql

        store.db.run(
            _in_tx(_one(Sql("UPDATE lmt_items SET status = 'archived' WHERE key = ?", [top])))
        )
        assert top not in [h.key for h in store.search(NS, query="museum visit", limit=10)]


def _one(request: object) -> object:
    def flow() -> object:
        return (yield request)

    return flow()


def test_access_counts_do_not_invalidate_the_cache(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path}/m.db", index=default_index()) as store:
        _fill(store)
        first = _data(store)
        for _ in range(3):
            store.search(NS, query="garden tomato", limit=10)
        store.db.run(store.core.flush_flow())
        assert _data(store) is first
        store.put(NS, "k0", {"content": "garden tomato harvest"})
        assert _data(store) is not first
