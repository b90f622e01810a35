"""The store's BM25, computed in SQL, equals the pure-Python reference on every backend."""

from __future__ import annotations

import pytest
from langgraph.store.base import SearchOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term import lexical

DOCS = {
    "d1": "Caroline painted a sunrise over the lake last summer",
    "d2": "Melanie went hiking with her kids near the lake",
    "d3": "Caroline and Melanie talked about painting classes and the lake",
    "d4": "The weather was rainy, so they stayed inside",
    "d5": "Caroline's sunrise painting won a prize",
}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.parametrize("query", ["Caroline painting sunrise", "lake hiking", "prize"])
def test_sql_bm25_matches_reference(
    backend: str, query: str, tmp_path: object, request: pytest.FixtureRequest
) -> None:
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path}/bm25.db"
    )
    with TieredMemoryStore.from_url(url) as store:
        for key, text in DOCS.items():
            store.put(("agent", "semantic"), key, {"content": text})
        core = store.core
        search = core._prepare_search(SearchOp(("agent",), query=query, limit=10))
        weights = lexical.query_weights(lexical.analyze_query(query))
        stats = store.db.run(_in_tx(core._lexical_stats_flow(search, weights)))
        got = store.db.run(_in_tx(core._bm25_flow(weights, search, stats, None)))
    keys = list(DOCS)
    expected = lexical.bm25_scores(weights, [lexical.analyze(DOCS[k]) for k in keys])
    want = {k: s for k, s in zip(keys, expected, strict=True) if s > 0}
    item_ids = {_id(k): k for k in keys}
    assert {item_ids[i]: pytest.approx(s, rel=1e-9) for i, s in got.items()} == want


def _id(key: str) -> str:
    from langmem_tiers.long_term.records import item_id

    return item_id(("agent", "semantic"), key)


def _in_tx(flow: object) -> object:
    from langmem_tiers.long_term.flow import Transaction

    def wrapper() -> object:
        return (yield Transaction(flow))  # type: ignore[arg-type]

    return wrapper()
