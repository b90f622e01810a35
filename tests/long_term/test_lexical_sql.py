"""The store's BM25, from postings read in SQL, equals the pure-Python reference on every backend."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import PutOp, SearchOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.store.search import bm25 as lexical
from langmem_tiers.long_term.store.search.lexical_sets import CachedSet
from langmem_tiers.long_term.store.search.prepared import prepare_search, query_weights

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
        search = prepare_search(SearchOp(("agent",), query=query, limit=10), core.dialect)
        weights = lexical.query_weights(lexical.analyze_query(query))
        postings = store.db.run(_in_tx(core.search.postings_flow(search, weights)))
        got = lexical.score_postings(
            weights, postings.n_docs, postings.avgdl, postings.tf, postings.doc_len
        )
    keys = list(DOCS)
    expected = lexical.bm25_scores(weights, [lexical.analyze(DOCS[k]) for k in keys])
    want = {k: s for k, s in zip(keys, expected, strict=True) if s > 0}
    item_ids = {_id(k): k for k in keys}
    assert {item_ids[i]: pytest.approx(s, rel=1e-9) for i, s in got.items()} == want


def _id(key: str) -> str:
    from langmem_tiers.long_term.store.records import item_id

    return item_id(("agent", "semantic"), key)


def _lexical(search: Any, query: str, prepared: Any, *, cached: bool) -> Any:
    scope = None
    if cached:
        scope = yield from search.scope_cache.members_flow("agent", prepared.where, prepared.params)
    weights = query_weights(query, prepared)
    return (yield from search.lexical_flow(weights, prepared, scope))


def _in_tx(flow: object) -> object:
    from langmem_tiers.sql.flow import Transaction

    def wrapper() -> object:
        return (yield Transaction(flow))  # type: ignore[arg-type]

    return wrapper()


WORDS = [
    "garden",
    "tomato",
    "basil",
    "harvest",
    "rain",
    "soil",
    "compost",
    "seed",
    "kayak",
    "river",
    "paddle",
    "canyon",
    "violin",
    "concert",
    "rehearsal",
    "choir",
    "museum",
    "painting",
    "sculpture",
    "gallery",
    "recipe",
    "bread",
    "oven",
    "flour",
]


@pytest.mark.parametrize("subset", [False, True], ids=["whole-namespace", "some-members"])
@pytest.mark.parametrize("backend", ["sqlite", "sqlite-cached", "postgres"])
def test_feedback_expanded_bm25_matches_reference(
    backend: str, subset: bool, tmp_path: object, request: pytest.FixtureRequest
) -> None:
    """Past PRF_MIN_DOCS the query is expanded from its best hits, exactly as the reference,
    whether the set is read from SQL or from a cached namespace (all of it, or only the
    members a filter keeps: statistics over the members alone)."""
    import random

    rng = random.Random(3)
    docs = {
        f"n{n:03d}": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        for n in range(lexical.PRF_MIN_DOCS + 10)
    }
    query = "basil harvest in the garden"
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path}/prf.db"
    )
    hidden = set(list(docs)[::6]) if subset else set()  # leaves PRF_MIN_DOCS
    with TieredMemoryStore.from_url(url) as store:
        store.batch(
            [
                PutOp(("agent", "semantic"), k, {"content": t, "hidden": k in hidden})
                for k, t in docs.items()
            ]
        )
        core = store.core
        op = SearchOp(("agent",), query=query, filter={"hidden": False}, limit=10)
        search = prepare_search(op, core.dialect)
        got, found = store.db.run(
            _in_tx(_lexical(core.search, query, search, cached=backend == "sqlite-cached"))
        )
        assert isinstance(found, CachedSet) == (backend == "sqlite-cached")

    docs = {k: t for k, t in docs.items() if k not in hidden}
    keys = list(docs)
    terms = [lexical.analyze(docs[k]) for k in keys]
    weights = lexical.query_weights(lexical.analyze_query(query))
    first = lexical.bm25_scores(weights, terms)
    best = sorted(zip(keys, first, strict=True), key=lambda ks: (-ks[1], _id(ks[0])))
    feedback = [(k, s) for k, s in best[: lexical.PRF_DOCS] if s > 0]
    df: dict[str, int] = {}
    for doc in terms:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    expanded = lexical.expand_query(
        weights,
        [lexical.term_frequencies(terms[keys.index(k)]) for k, _ in feedback],
        [s for _, s in feedback],
        doc_frequencies=df,
        n_docs=len(keys),
    )
    assert len(expanded) > len(weights)  # the feedback really expanded the query
    expected = lexical.bm25_scores(expanded, terms)
    want = {k: s for k, s in zip(keys, expected, strict=True) if s > 0}
    item_ids = {_id(k): k for k in keys}
    assert found.n_docs == len(keys)
    assert {item_ids[i]: pytest.approx(s, rel=1e-9) for i, s in got.items()} == want
