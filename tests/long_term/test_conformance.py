"""The one conformance spec of the long-term store.

Every test runs for every backend in ``conftest.BACKENDS`` and through both the sync and
the async methods (``twin``). Part 1 is LangGraph's ``BaseStore`` contract as its own
``InMemoryStore`` (the "reference" backend) behaves; it must pass there. Part 2 holds
what langmem_tiers promises on top (tests that take the ``ours`` fixture, skipped on the
reference): memory kinds, hybrid ranking, and bad input refused with nothing stored.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from langmem_tiers import errors
from langmem_tiers.config import RankingWeights

from .fakes import KeywordEmbeddings, default_index

if TYPE_CHECKING:
    from conftest import Twin

MakeStore = Callable[..., BaseStore]
TwinOf = Callable[[Any], "Twin"]

# Filler words that are in no test vocabulary: document i carries the first i of them,
# so its similarity to a one-word query falls strictly with i.
_FILLERS = [
    *("alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"),
    *("juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"),
    *("sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"),
]


def keys(items: Sequence[Item]) -> list[str]:
    """The keys of items, in order."""
    return [item.key for item in items]


def scored(items: Sequence[SearchItem]) -> list[SearchItem]:
    """The results a vector search actually scored."""
    return [item for item in items if item.score is not None]


async def put_all(
    twin: Twin, namespace: tuple[str, ...], values: dict[str, dict[str, Any]]
) -> None:
    """Put values one by one, in order (so insertion order is the dict's order)."""
    for key, value in values.items():
        await twin.put(namespace, key, value)


# ---------------------------------------------------------------------------------------
# Part 1: LangGraph BaseStore semantics (must pass on the reference)
# ---------------------------------------------------------------------------------------

# -- put / get / delete -----------------------------------------------------------------


async def test_put_then_get_returns_the_item(twin: Twin) -> None:
    ns = ("users", "u1")
    value = {
        "text": "café ☕ at noon",
        "n": 3,
        "x": 2.5,
        "ok": True,
        "none": None,
        "tags": ["a", "b"],
        "meta": {"lang": "fr", "depth": {"k": [1, 2]}},
    }
    await twin.put(ns, "prefs", value)
    value["text"] = "changed after put"  # the store must have kept its own copy
    item = await twin.get(ns, "prefs")
    assert item is not None
    assert item.namespace == ns
    assert item.key == "prefs"
    assert item.value == {**value, "text": "café ☕ at noon"}
    assert isinstance(item.created_at, datetime)
    assert isinstance(item.updated_at, datetime)
    assert item.created_at.tzinfo is not None
    assert item.updated_at.tzinfo is not None
    assert item.created_at <= item.updated_at


async def test_get_of_missing_key_or_namespace_is_none(twin: Twin) -> None:
    await twin.put(("docs",), "a", {"text": "apple"})
    assert await twin.get(("docs",), "missing") is None
    assert await twin.get(("nowhere",), "a") is None
    assert await twin.get(("docs", "a"), "a") is None


async def test_same_key_in_two_namespaces_is_two_items(twin: Twin) -> None:
    await twin.put(("a",), "k", {"v": 1})
    await twin.put(("a", "b"), "k", {"v": 2})
    first = await twin.get(("a",), "k")
    second = await twin.get(("a", "b"), "k")
    assert first is not None
    assert second is not None
    assert (first.value, second.value) == ({"v": 1}, {"v": 2})
    await twin.delete(("a",), "k")
    assert await twin.get(("a",), "k") is None
    assert await twin.get(("a", "b"), "k") is not None


async def test_delete_removes_the_item_and_is_idempotent(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "a", {"text": "apple"})
    await twin.put(ns, "b", {"text": "banana"})
    await twin.delete(ns, "a")
    assert await twin.get(ns, "a") is None
    assert keys(await twin.search(ns)) == ["b"]
    await twin.delete(ns, "a")  # deleting again is not an error
    await twin.delete(ns, "never-there")
    assert keys(await twin.search(ns)) == ["b"]


async def test_put_of_none_value_in_a_batch_deletes(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "a", {"text": "apple"})
    assert await twin.batch([PutOp(ns, "a", None)]) == [None]
    assert await twin.get(ns, "a") is None


async def test_update_replaces_the_value_and_moves_updated_at(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "a", {"text": "apple", "old_only": 1})
    before = await twin.get(ns, "a")
    assert before is not None
    await asyncio.sleep(0.01)  # timestamps need time to differ
    await twin.put(ns, "a", {"text": "apple pie"})
    after = await twin.get(ns, "a")
    assert after is not None
    assert after.value == {"text": "apple pie"}  # replaced, not merged
    assert after.updated_at > before.updated_at


@pytest.mark.usefixtures("ours")
async def test_update_keeps_created_at(twin: Twin) -> None:
    # The reference stamps created_at anew on every put; LangGraph's PostgresStore keeps
    # it, and a memory's creation time is what its history is told from.
    ns = ("docs",)
    await twin.put(ns, "a", {"text": "apple"})
    before = await twin.get(ns, "a")
    assert before is not None
    await asyncio.sleep(0.01)
    await twin.put(ns, "a", {"text": "apple pie"})
    after = await twin.get(ns, "a")
    assert after is not None
    assert after.created_at == before.created_at
    assert after.updated_at > before.updated_at


# -- batch ------------------------------------------------------------------------------


async def test_batch_of_mixed_ops_returns_results_in_order(twin: Twin) -> None:
    ns = ("docs",)
    await put_all(twin, ns, {"a": {"text": "apple", "n": 1}, "b": {"text": "banana", "n": 2}})
    results = await twin.batch(
        [
            GetOp(ns, "a"),
            PutOp(ns, "c", {"text": "car", "n": 3}),
            SearchOp(ns, filter={"n": 2}),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
            GetOp(ns, "missing"),
            PutOp(ns, "b", None),
            GetOp(("elsewhere",), "a"),
        ]
    )
    assert len(results) == 7
    first, put_c, found, listed, missing, delete_b, elsewhere = results
    assert isinstance(first, Item)
    assert first.key == "a"
    assert first.value == {"text": "apple", "n": 1}
    assert put_c is None
    assert keys(found) == ["b"]
    assert listed == [ns]
    assert missing is None
    assert delete_b is None
    assert elsewhere is None
    # The writes of the batch took effect.
    c = await twin.get(ns, "c")
    assert c is not None
    assert c.value == {"text": "car", "n": 3}
    assert await twin.get(ns, "b") is None


async def test_batch_with_two_puts_to_one_key_keeps_the_last(twin: Twin) -> None:
    ns = ("docs",)
    await twin.batch([PutOp(ns, "k", {"v": 1}), PutOp(ns, "k", {"v": 2})])
    item = await twin.get(ns, "k")
    assert item is not None
    assert item.value == {"v": 2}
    assert keys(await twin.search(ns)) == ["k"]


@pytest.mark.usefixtures("ours")
async def test_batch_of_puts_with_identical_text_embeds_each(twin: Twin) -> None:
    # The reference embeds each distinct text once and then fails to map the vectors
    # back to the items sharing it ("Number of embeddings (1) does not match ...").
    await twin.batch([PutOp(("docs", f"s{i}"), "k", {"text": "apple"}) for i in range(3)])
    await twin.put(("docs", "s3"), "k", {"text": "car"})
    results = await twin.search(("docs",), query="apple")
    assert sorted(item.namespace[1] for item in results[:3]) == ["s0", "s1", "s2"]
    assert keys(scored(results)) == ["k"] * 4


async def test_empty_batch_returns_empty_list(twin: Twin) -> None:
    assert await twin.batch([]) == []


# -- search by namespace ----------------------------------------------------------------


async def test_search_by_namespace_prefix_matches_whole_labels(twin: Twin) -> None:
    await twin.put(("docs",), "root", {"v": 0})
    await twin.put(("docs", "a"), "a1", {"v": 1})
    await twin.put(("docs", "a", "deep"), "deep1", {"v": 2})
    await twin.put(("docs", "b"), "b1", {"v": 3})
    await twin.put(("docs2",), "other1", {"v": 4})
    await twin.put(("doc",), "other2", {"v": 5})
    await twin.put(("other", "docs"), "other3", {"v": 6})
    # Between "docs" and "docs." in byte order: the one band a prefix's range must leave out.
    await twin.put(("docs-x",), "other4", {"v": 7})

    assert sorted(keys(await twin.search(("docs",)))) == ["a1", "b1", "deep1", "root"]
    assert sorted(keys(await twin.search(("docs", "a")))) == ["a1", "deep1"]
    assert keys(await twin.search(("docs", "b"))) == ["b1"]
    assert keys(await twin.search(("docs", "a", "deep"))) == ["deep1"]
    assert keys(await twin.search(("do",))) == []  # a prefix of a label is not a prefix
    assert keys(await twin.search(("docs", "c"))) == []
    everything = await twin.search((), limit=100)
    assert sorted(keys(everything)) == [
        "a1",
        "b1",
        "deep1",
        "other1",
        "other2",
        "other3",
        "other4",
        "root",
    ]
    by_key = {item.key: item for item in everything}
    assert by_key["deep1"].namespace == ("docs", "a", "deep")
    assert by_key["other3"].namespace == ("other", "docs")


async def test_search_without_query_returns_unscored_items(twin: Twin) -> None:
    ns = ("docs",)
    await put_all(twin, ns, {"a": {"text": "apple"}, "b": {"text": "banana"}})
    results = await twin.search(ns)
    assert sorted(keys(results)) == ["a", "b"]
    assert all(isinstance(item, SearchItem) for item in results)
    assert all(item.score is None for item in results)


async def test_search_without_query_order(twin: Twin, backend: str) -> None:
    # LangGraph's two stores disagree: InMemoryStore keeps insertion order, PostgresStore
    # lists the most recently updated first. langmem_tiers follows PostgresStore: the
    # newest memories are the ones a caller browsing without a query wants first.
    ns = ("docs",)
    names = [f"k{i:02d}" for i in range(8)]
    for i, name in enumerate(names):
        await twin.put(ns, name, {"i": i})
    await twin.put(ns, "k03", {"i": 3, "updated": True})
    results = await twin.search(ns)
    if backend == "reference":
        assert keys(results) == names
        assert results[3].value == {"i": 3, "updated": True}
    else:
        assert keys(results) == ["k03", *reversed([n for n in names if n != "k03"])]
        assert results[0].value == {"i": 3, "updated": True}


# -- filters ----------------------------------------------------------------------------


async def test_filter_equality_on_strings_and_booleans(twin: Twin) -> None:
    ns = ("things",)
    await put_all(
        twin,
        ns,
        {
            "r1": {"color": "red", "done": True},
            "r2": {"color": "red", "done": False},
            "b1": {"color": "blue", "done": True},
            "g1": {"color": "green", "done": False},
        },
    )

    async def found(flt: dict[str, Any]) -> list[str]:
        return sorted(keys(await twin.search(ns, filter=flt)))

    assert await found({"color": "red"}) == ["r1", "r2"]
    assert await found({"color": {"$eq": "red"}}) == ["r1", "r2"]
    assert await found({"color": {"$ne": "red"}}) == ["b1", "g1"]
    assert await found({"color": "purple"}) == []
    assert await found({"done": True}) == ["b1", "r1"]
    assert await found({"done": False}) == ["g1", "r2"]
    assert await found({"done": {"$eq": False}}) == ["g1", "r2"]
    assert await found({"done": {"$ne": True}}) == ["g1", "r2"]
    assert await found({"color": "red", "done": False}) == ["r2"]  # conditions are ANDed
    assert await found({"color": {"$ne": "red"}, "done": True}) == ["b1"]
    assert await found({}) == ["b1", "g1", "r1", "r2"]


async def test_filter_numeric_comparisons_compare_numbers_not_text(twin: Twin) -> None:
    ns = ("numbers",)
    values = {"m5": -5, "mhalf": -0.5, "zero": 0, "f25": 2.5, "n9": 9, "n10": 10, "n100": 100}
    await put_all(twin, ns, {k: {"n": v} for k, v in values.items()})

    async def found(flt: dict[str, Any]) -> set[str]:
        return set(keys(await twin.search(ns, filter={"n": flt}, limit=50)))

    def where(pred: Callable[[float], bool]) -> set[str]:
        return {k for k, v in values.items() if pred(v)}

    # "10" < "9" as text: a backend comparing text gets these wrong.
    assert await found({"$gt": 9}) == {"n10", "n100"}
    assert await found({"$gte": 9}) == {"n9", "n10", "n100"}
    assert await found({"$lt": 10}) == where(lambda v: v < 10)
    assert await found({"$lte": 10}) == where(lambda v: v <= 10)
    assert await found({"$lt": 0}) == {"m5", "mhalf"}
    assert await found({"$lte": -0.5}) == {"m5", "mhalf"}
    assert await found({"$gt": -1}) == where(lambda v: v > -1)
    assert await found({"$gte": 2.5}) == {"f25", "n9", "n10", "n100"}
    assert await found({"$gt": 2.4, "$lt": 100}) == {"f25", "n9", "n10"}
    assert await found({"$gt": 9.5}) == {"n10", "n100"}
    assert await found({"$eq": 10}) == {"n10"}
    assert await found({"$ne": 10}) == set(values) - {"n10"}
    assert set(keys(await twin.search(ns, filter={"n": 100}))) == {"n100"}
    assert set(keys(await twin.search(ns, filter={"n": 2.5}))) == {"f25"}
    assert set(keys(await twin.search(ns, filter={"n": 10.0}))) == {"n10"}


@pytest.mark.usefixtures("ours")
async def test_comparison_skips_items_without_the_field(twin: Twin) -> None:
    # The reference raises TypeError (float(None)) as soon as one item lacks the field.
    ns = ("numbers",)
    await put_all(twin, ns, {"n5": {"n": 5}, "n50": {"n": 50}, "none": {"other": 1}})
    assert sorted(keys(await twin.search(ns, filter={"n": {"$gt": 9}}))) == ["n50"]
    assert sorted(keys(await twin.search(ns, filter={"n": {"$lte": 9}}))) == ["n5"]
    assert sorted(keys(await twin.search(ns, filter={"n": 5}))) == ["n5"]


async def test_filter_on_nested_keys(twin: Twin) -> None:
    ns = ("books",)
    await put_all(
        twin,
        ns,
        {
            "en_long": {"meta": {"lang": "en", "pages": 120}},
            "en_short": {"meta": {"lang": "en", "pages": 9}},
            "fr_long": {"meta": {"lang": "fr", "pages": 300}},
        },
    )

    async def found(flt: dict[str, Any]) -> list[str]:
        return sorted(keys(await twin.search(ns, filter=flt)))

    # A nested object in a filter names some keys of the nested value, not all of them.
    assert await found({"meta": {"lang": "en"}}) == ["en_long", "en_short"]
    assert await found({"meta": {"pages": {"$gte": 10}}}) == ["en_long", "fr_long"]
    assert await found({"meta": {"lang": "en", "pages": {"$gt": 100}}}) == ["en_long"]
    assert await found({"meta": {"lang": "de"}}) == []


async def test_filter_on_list_values_is_exact(twin: Twin) -> None:
    ns = ("tagged",)
    await put_all(
        twin,
        ns,
        {"ab": {"tags": ["a", "b"]}, "ba": {"tags": ["b", "a"]}, "abc": {"tags": ["a", "b", "c"]}},
    )
    assert keys(await twin.search(ns, filter={"tags": ["a", "b"]})) == ["ab"]


# -- paging -----------------------------------------------------------------------------


async def test_paging_without_query_has_no_duplicates_and_no_gaps(twin: Twin) -> None:
    ns = ("paged",)
    await twin.batch([PutOp(ns, f"k{i:02d}", {"i": i}) for i in range(23)])
    full = keys(await twin.search(ns, limit=100))
    assert sorted(full) == [f"k{i:02d}" for i in range(23)]
    pages = [keys(await twin.search(ns, limit=5, offset=o)) for o in range(0, 25, 5)]
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [k for page in pages for k in page] == full
    assert await twin.search(ns, limit=5, offset=23) == []
    assert await twin.search(ns, limit=5, offset=100) == []
    assert len(await twin.search(ns)) == 10  # the default limit


async def test_paging_across_namespaces_is_stable(twin: Twin) -> None:
    ops = [
        PutOp(("paged", f"s{s}"), f"k{s}{i}", {"s": s, "i": i}) for s in range(3) for i in range(6)
    ]
    await twin.batch(ops)
    full = keys(await twin.search(("paged",), limit=100))
    assert len(full) == len(set(full)) == 18
    pages = [keys(await twin.search(("paged",), limit=4, offset=o)) for o in range(0, 20, 4)]
    assert [k for page in pages for k in page] == full


async def test_paging_with_query_follows_the_ranking(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=default_index(fields=["text"])))
    ns = ("paged",)
    # Document i holds "apple" and i filler words: similarity to "apple" falls with i.
    await twin.batch(
        [PutOp(ns, f"d{i:02d}", {"text": " ".join(["apple", *_FILLERS[:i]])}) for i in range(15)]
    )
    full = await twin.search(ns, query="apple", limit=100)
    assert keys(full) == [f"d{i:02d}" for i in range(15)]
    scores = [item.score for item in full]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)
    pages = [keys(await twin.search(ns, query="apple", limit=4, offset=o)) for o in (0, 4, 8, 12)]
    assert [k for page in pages for k in page] == keys(full)


# -- list_namespaces --------------------------------------------------------------------

_TREE = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


async def _plant(twin: Twin, namespaces: Sequence[tuple[str, ...]]) -> None:
    await twin.batch([PutOp(ns, f"id{i}", {"i": i}) for i, ns in enumerate(namespaces)])


async def test_list_namespaces_with_prefix_and_suffix(twin: Twin) -> None:
    await _plant(twin, _TREE)
    assert await twin.list_namespaces() == sorted(_TREE)
    assert await twin.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert await twin.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await twin.list_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await twin.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert await twin.list_namespaces(prefix=("nonexistent",)) == []
    assert await twin.list_namespaces(prefix=("a", "b", "c", "d", "e")) == []
    assert await twin.list_namespaces(prefix=("use",)) == []  # whole labels only
    assert await twin.list_namespaces(suffix=("users", "789")) == [("admin", "users", "789")]


async def test_list_namespaces_with_wildcards(twin: Twin) -> None:
    await _plant(twin, _TREE)
    assert await twin.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert await twin.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await twin.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert await twin.list_namespaces(suffix=("*", "settings")) == [("users", "456", "settings")]
    assert await twin.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert await twin.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert await twin.list_namespaces(prefix=("*", "*", "*", "*")) == [
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
    ]


async def test_list_namespaces_max_depth_truncates_and_deduplicates(twin: Twin) -> None:
    await _plant(twin, _TREE)
    assert await twin.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await twin.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert await twin.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    assert await twin.list_namespaces(suffix=("f",), max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("b", "a"),
    ]
    assert await twin.list_namespaces(max_depth=2, limit=2, offset=1) == [
        ("a", "c"),
        ("admin", "users"),
    ]


async def test_list_namespaces_sorts_as_tuples(twin: Twin) -> None:
    # ("a", "b") < ("a-b",) as tuples, though "a.b" > "a-b" as joined text.
    namespaces = [("a-b",), ("a", "b"), ("a",), ("a", "b", "c"), ("A",), ("a", "a")]
    await _plant(twin, namespaces)
    assert await twin.list_namespaces() == sorted(namespaces)


async def test_list_namespaces_pages(twin: Twin) -> None:
    namespaces = [("ns", f"sub{i:02d}") for i in range(12)]
    await _plant(twin, list(reversed(namespaces)))
    assert await twin.list_namespaces(prefix=("ns",), limit=5) == namespaces[:5]
    assert await twin.list_namespaces(prefix=("ns",), limit=5, offset=5) == namespaces[5:10]
    assert await twin.list_namespaces(prefix=("ns",), limit=5, offset=10) == namespaces[10:]
    assert await twin.list_namespaces(prefix=("ns",), offset=12) == []
    assert len(await twin.list_namespaces(limit=3)) == 3


async def test_list_namespaces_of_an_empty_store(twin: Twin) -> None:
    assert await twin.list_namespaces() == []


@pytest.mark.usefixtures("ours")
async def test_list_namespaces_forgets_emptied_and_never_used_namespaces(twin: Twin) -> None:
    # The reference keeps an entry for every namespace ever read or written.
    await twin.put(("kept",), "k", {"v": 1})
    await twin.put(("emptied",), "k", {"v": 1})
    await twin.delete(("emptied",), "k")
    assert await twin.get(("never", "written"), "k") is None
    assert await twin.search(("also", "never")) == []
    assert await twin.list_namespaces() == [("kept",)]


# -- vector search ----------------------------------------------------------------------


async def test_query_returns_nearest_first_with_descending_scores(twin: Twin) -> None:
    ns = ("docs",)
    await put_all(
        twin,
        ns,
        {
            "car": {"text": "car engine"},
            "pie": {"text": "apple pie"},
            "banana": {"text": "banana"},
            "apple": {"text": "apple"},
            "jazz": {"text": "jazz music"},
        },
    )
    results = await twin.search(ns, query="apple")
    assert keys(results)[:2] == ["apple", "pie"]
    assert sorted(keys(results)) == ["apple", "banana", "car", "jazz", "pie"]
    scores = [item.score for item in results]
    assert all(isinstance(s, float) for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[1] > scores[2]
    assert keys(await twin.search(ns, query="car", limit=1)) == ["car"]
    assert keys(await twin.search(ns, query="jazz music", limit=1)) == ["jazz"]


async def test_query_search_stays_inside_the_namespace_prefix(twin: Twin) -> None:
    await twin.put(("a",), "near_but_elsewhere", {"text": "apple"})
    await twin.put(("b",), "far", {"text": "car"})
    await twin.put(("b", "sub"), "near", {"text": "apple pie"})
    results = await twin.search(("b",), query="apple")
    assert keys(results) == ["near", "far"]


async def test_query_combines_with_filter(twin: Twin) -> None:
    ns = ("docs",)
    await put_all(
        twin,
        ns,
        {
            "apple_red": {"text": "apple", "color": "red"},
            "pie_red": {"text": "apple pie", "color": "red"},
            "apple_green": {"text": "apple", "color": "green"},
            "car_red": {"text": "car", "color": "red"},
        },
    )
    results = await twin.search(ns, query="apple", filter={"color": "red"})
    assert keys(results) == ["apple_red", "pie_red", "car_red"]
    results = await twin.search(ns, query="apple", filter={"color": {"$ne": "red"}})
    assert keys(results) == ["apple_green"]


async def test_index_fields_choose_what_is_embedded(make_store: MakeStore, twin_of: TwinOf) -> None:
    by_title = twin_of(make_store(index=default_index(fields=["title"])))
    by_body = twin_of(make_store(index=default_index(fields=["body"])))
    for twin in (by_title, by_body):
        await twin.put(("docs",), "d1", {"title": "apple", "body": "car"})
        await twin.put(("docs",), "d2", {"title": "car", "body": "apple"})
    assert keys(await by_title.search(("docs",), query="apple")) == ["d1", "d2"]
    assert keys(await by_title.search(("docs",), query="car")) == ["d2", "d1"]
    assert keys(await by_body.search(("docs",), query="apple")) == ["d2", "d1"]


async def test_several_index_fields_pool_to_one_result_per_item(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=default_index(fields=["title", "body"])))
    await twin.put(("docs",), "d1", {"title": "banana", "body": "apple"})
    await twin.put(("docs",), "d2", {"title": "apple pie", "body": "car"})
    await twin.put(("docs",), "d3", {"title": "car", "body": "engine"})
    results = await twin.search(("docs",), query="apple")
    assert keys(results) == ["d1", "d2", "d3"]  # each item once, by its best field


async def test_put_with_index_false_is_not_found_by_query(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "hidden", {"text": "apple"}, index=False)
    await twin.put(ns, "shown", {"text": "car"})
    results = await twin.search(ns, query="apple")
    assert keys(scored(results)) == ["shown"]
    # The reference appends unembedded items, unscored, after the scored ones.
    assert all(item.score is None for item in results if item.key == "hidden")
    assert keys(results)[0] == "shown"
    assert sorted(keys(await twin.search(ns))) == ["hidden", "shown"]
    hidden = await twin.get(ns, "hidden")
    assert hidden is not None
    assert hidden.value == {"text": "apple"}


@pytest.mark.usefixtures("ours")
async def test_put_with_index_false_is_absent_from_query_results(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "hidden", {"text": "apple"}, index=False)
    await twin.put(ns, "shown", {"text": "car"})
    assert keys(await twin.search(ns, query="apple")) == ["shown"]


async def test_put_with_index_fields_overrides_the_config(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=default_index(fields=["title"])))
    ns = ("docs",)
    await twin.put(ns, "by_body", {"title": "car", "body": "apple"}, index=["body"])
    await twin.put(ns, "by_title", {"title": "apple pie", "body": "zzz"})
    await twin.put(ns, "car", {"title": "car", "body": "zzz"})
    assert keys(await twin.search(ns, query="apple"))[:2] == ["by_body", "by_title"]
    # by_body's title was not embedded, so "car" finds the other car first.
    assert keys(await twin.search(ns, query="car"))[0] == "car"
    ranked = await twin.search(ns, query="car")
    assert ranked[-1].key != "car"


async def test_update_re_embeds(make_store: MakeStore, twin_of: TwinOf) -> None:
    twin = twin_of(make_store(index=default_index(fields=["text"])))
    ns = ("docs",)
    await twin.put(ns, "k", {"text": "apple"})
    await twin.put(ns, "other", {"text": "apple banana"})
    await twin.put(ns, "engine", {"text": "car engine"})
    assert keys(await twin.search(ns, query="apple")) == ["k", "other", "engine"]
    await twin.put(ns, "k", {"text": "car"})
    assert keys(await twin.search(ns, query="apple"))[0] == "other"
    assert keys(await twin.search(ns, query="car")) == ["k", "engine", "other"]


async def test_delete_removes_from_query_search(twin: Twin) -> None:
    ns = ("docs",)
    await twin.put(ns, "apple", {"text": "apple"})
    await twin.put(ns, "pie", {"text": "apple pie"})
    await twin.delete(ns, "apple")
    assert keys(await twin.search(ns, query="apple")) == ["pie"]
    await twin.delete(ns, "pie")
    assert await twin.search(ns, query="apple") == []


async def test_store_without_index_still_stores_and_searches(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=None))
    await twin.put(("docs",), "a", {"text": "apple"}, index=["text"])
    await twin.put(("docs",), "b", {"text": "car"}, index=False)
    item = await twin.get(("docs",), "a")
    assert item is not None
    assert item.value == {"text": "apple"}
    assert sorted(keys(await twin.search(("docs",)))) == ["a", "b"]
    assert keys(await twin.search(("docs",), filter={"text": "car"})) == ["b"]


# -- isolation between scopes -----------------------------------------------------------

_SCOPES = ("agent_a", "agent_b", "agent", "agent_ab")


async def _plant_scopes(twin: Twin) -> None:
    ops: list[PutOp] = []
    for scope in _SCOPES:
        for kind in ("episodic", "semantic", "procedural"):
            ns = (scope, kind)
            mark = {"owner": scope, "kind": kind}
            ops.append(PutOp(ns, "k1", {"content": f"secret apple of {scope}", **mark}))
            ops.append(PutOp(ns, "k2", {"content": "weather rain", "n": 5, **mark}))
    await twin.batch(ops)


async def test_scopes_never_see_each_other(twin: Twin) -> None:
    await _plant_scopes(twin)
    a_sem = ("agent_a", "semantic")
    mine = await twin.get(a_sem, "k1")
    assert mine is not None
    assert mine.value["owner"] == "agent_a"

    hostile_filters: list[dict[str, Any] | None] = [
        None,
        {"owner": "agent_b"},
        {"owner": {"$ne": "agent_a"}},
        {"namespace": ["agent_b", "semantic"]},
        {"prefix": "agent_b.semantic"},
        {"scope": "agent_b"},
        {"agent_id": "agent_b"},
        {"kind": "semantic", "agent": "agent_b"},
        {"key": "k1"},
        {"kind": {"$ne": "nothing"}},
    ]
    queries = [None, "secret apple of agent_b", "agent_b semantic k1"]
    for prefix, owner in (
        (("agent_a",), "agent_a"),
        (a_sem, "agent_a"),
        (("agent",), "agent"),
        (("agent", "semantic"), "agent"),
    ):
        for flt in hostile_filters:
            for query in queries:
                results = await twin.search(prefix, query=query, filter=flt, limit=100)
                assert all(item.namespace[: len(prefix)] == prefix for item in results), (
                    prefix,
                    flt,
                    query,
                )
                assert all(item.value["owner"] == owner for item in results), (prefix, flt, query)
    assert len(await twin.search(("agent_a",), limit=100)) == 6
    assert len(await twin.search(("agent",), limit=100, offset=0)) == 6
    assert await twin.search(("agent_c",), query="secret apple", limit=100) == []


async def test_listing_a_scope_lists_only_that_scope(twin: Twin) -> None:
    await _plant_scopes(twin)
    assert await twin.list_namespaces(prefix=("agent",)) == [
        ("agent", "episodic"),
        ("agent", "procedural"),
        ("agent", "semantic"),
    ]
    assert await twin.list_namespaces(prefix=("agent_a",), suffix=("semantic",)) == [
        ("agent_a", "semantic")
    ]
    assert await twin.list_namespaces(suffix=("semantic",), max_depth=1) == [
        ("agent",),
        ("agent_a",),
        ("agent_ab",),
        ("agent_b",),
    ]


async def test_filtered_top_k_in_one_scope_returns_full_lists(twin: Twin) -> None:
    # 200 memories in 20 scopes; the query is close to every scope but the target one,
    # so an index that filters after taking its nearest candidates comes back short.
    ops: list[PutOp] = []
    for s in range(20):
        ns = (f"user{s:02d}", "semantic")
        for i in range(10):
            if s == 7:
                value = {"content": f"hammer {_FILLERS[i]}", "topic": "tools", "rank": i}
            else:
                value = {"content": "apple pie apple", "topic": "fruit", "rank": i, "s": s}
            ops.append(PutOp(ns, f"m{i}", value))
    await twin.batch(ops)
    target = ("user07", "semantic")

    results = await twin.search(target, query="apple pie", filter={"topic": "tools"}, limit=10)
    assert len(results) == 10
    assert all(item.namespace == target for item in results)

    results = await twin.search(target, query="apple", filter={"rank": {"$gte": 4}}, limit=5)
    assert len(results) == 5
    assert all(item.namespace == target and item.value["rank"] >= 4 for item in results)

    results = await twin.search(target, query="apple", filter={"topic": "fruit"}, limit=10)
    assert results == []

    results = await twin.search(("user03",), query="hammer", filter={"topic": "fruit"}, limit=10)
    assert len(results) == 10
    assert all(item.namespace == ("user03", "semantic") for item in results)


# ---------------------------------------------------------------------------------------
# Part 2: langmem_tiers extensions (the `ours` fixture skips them on the reference)
# ---------------------------------------------------------------------------------------

_COMPONENTS = ("semantic", "recency", "frequency", "confidence")


def components(item: SearchItem) -> dict[str, float]:
    """The hybrid score's components carried by a search result (``item.scores``)."""
    found = getattr(item, "scores", None)
    assert isinstance(found, dict), f"search result {item.key!r} has no `scores` dict"
    return found


def _iso(days_ago: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days_ago)).isoformat()


def _content_index(emb: KeywordEmbeddings | None = None) -> Any:
    # Only the content is embedded, so memories with the same content are equally
    # similar to any query whatever their timestamps or confidences.
    return default_index(emb, fields=["content"])


@pytest.mark.usefixtures("ours")
async def test_memory_kinds_round_trip_exactly(twin: Twin) -> None:
    now = _iso(0)
    memories = {
        ("agent_a", "episodic"): {
            "content": "User asked about the weather in Paris",
            "event_timestamp": now,
            "session_id": "s1",
            "confidence": 1.0,
        },
        ("agent_a", "semantic"): {
            "content": "User lives in Berlin ☔",
            "subject": "user",
            "confidence": 0.9,
            "provenance": ["e1", "e2"],
            "nested": {"valid_from": now, "note": None},
        },
        ("agent_a", "procedural"): {
            "content": "answer in French",
            "key": "language",
            "value": "fr",
            "confidence": 0.75,
        },
    }
    for ns, value in memories.items():
        await twin.put(ns, "m1", value)
    for ns, value in memories.items():
        item = await twin.get(ns, "m1")
        assert item is not None
        assert item.namespace == ns
        assert item.value == value
    found = await twin.search(("agent_a",), limit=10)
    assert sorted(item.namespace[-1] for item in found) == ["episodic", "procedural", "semantic"]
    assert {item.namespace: item.value for item in found} == memories


@pytest.mark.usefixtures("ours")
async def test_search_results_carry_hybrid_score_components(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    emb = KeywordEmbeddings()
    twin = twin_of(make_store(index=_content_index(emb)))
    ns = ("agent_a", "semantic")
    contents = {"tea": "user likes tea", "both": "tea and coffee", "car": "car engine"}
    for key, content in contents.items():
        await twin.put(ns, key, {"content": content, "confidence": 0.8})
    # Cosine to "tea": "tea and coffee" 0.71 > "user likes tea" 0.58 > "car engine" 0.
    assert emb.similarity("tea", contents["both"]) > emb.similarity("tea", contents["tea"]) > 0
    results = await twin.search(ns, query="tea")
    assert keys(results) == ["both", "tea", "car"]
    parts = [components(item) for item in results]
    # The semantic part is the query's relevance (the store may fuse lexical scores into
    # it), so only its order is fixed here, not its value.
    assert parts[0]["semantic"] > parts[1]["semantic"] > parts[2]["semantic"]
    weights = RankingWeights()
    for item, part in zip(results, parts, strict=True):
        assert set(_COMPONENTS) <= set(part)
        assert all(0.0 <= part[c] <= 1.0 for c in _COMPONENTS), part
        assert part["confidence"] == pytest.approx(0.8)
        assert item.score is not None
        assert 0.0 <= item.score <= 1.0
        # The default ranking is gated: relevance times the weighted components.
        context = sum(getattr(weights, c) * part[c] for c in _COMPONENTS if c != "semantic")
        expected = part["semantic"] * (weights.semantic + context)
        assert item.score == pytest.approx(expected, abs=1e-6)


@pytest.mark.usefixtures("ours")
async def test_fresh_frequent_confident_memory_outranks_a_stale_one(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=_content_index()))
    ns = ("agent_a", "episodic")
    content = "user drinks tea every morning"
    # The stale one goes in first: a store ranking by similarity alone, keeping ties in
    # insertion order, would put it on top.
    await twin.put(
        ns, "stale", {"content": content, "event_timestamp": _iso(400), "confidence": 0.2}
    )
    await twin.put(
        ns, "fresh", {"content": content, "event_timestamp": _iso(0), "confidence": 0.95}
    )
    for _ in range(5):
        assert await twin.get(ns, "fresh") is not None
    results = await twin.search(ns, query="tea")
    assert keys(results) == ["fresh", "stale"]
    fresh, stale = components(results[0]), components(results[1])
    assert fresh["semantic"] == pytest.approx(stale["semantic"], abs=1e-6)
    assert fresh["recency"] > 0.9 > 0.1 > stale["recency"]
    assert fresh["frequency"] > stale["frequency"]
    assert fresh["confidence"] == pytest.approx(0.95)
    assert stale["confidence"] == pytest.approx(0.2)
    assert results[0].score > results[1].score


@pytest.mark.usefixtures("ours")
async def test_recency_alone_breaks_a_semantic_tie(make_store: MakeStore, twin_of: TwinOf) -> None:
    twin = twin_of(make_store(index=_content_index()))
    ns = ("agent_a", "episodic")
    value = {"content": "meeting about the rust rewrite", "confidence": 0.5}
    await twin.put(ns, "old", {**value, "event_timestamp": _iso(200)})
    await twin.put(ns, "new", {**value, "event_timestamp": _iso(1)})
    await twin.put(ns, "mid", {**value, "event_timestamp": _iso(30)})
    assert keys(await twin.search(ns, query="rust")) == ["new", "mid", "old"]


@pytest.mark.usefixtures("ours")
async def test_confidence_alone_breaks_a_semantic_tie(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=_content_index()))
    ns = ("agent_a", "semantic")
    await twin.put(ns, "unsure", {"content": "user prefers golang", "confidence": 0.3})
    await twin.put(ns, "sure", {"content": "user prefers golang", "confidence": 0.9})
    await twin.put(ns, "half", {"content": "user prefers golang", "confidence": 0.6})
    assert keys(await twin.search(ns, query="golang")) == ["sure", "half", "unsure"]


@pytest.mark.usefixtures("ours")
async def test_frequency_alone_breaks_a_semantic_tie(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    twin = twin_of(make_store(index=_content_index()))
    ns = ("agent_a", "semantic")
    # The one to be used often goes in first, so recency (microseconds) is against it.
    await twin.put(ns, "used", {"content": "user walks the dog", "confidence": 0.5})
    await twin.put(ns, "unused", {"content": "user walks the dog", "confidence": 0.5})
    for _ in range(4):
        assert await twin.get(ns, "used") is not None
    results = await twin.search(ns, query="dog")
    assert keys(results) == ["used", "unused"]
    assert components(results[0])["frequency"] > components(results[1])["frequency"]


@pytest.mark.usefixtures("ours")
@pytest.mark.parametrize(
    "namespace",
    [(), ("agent_a", ""), ("agent.a", "semantic"), ("a\x00", "x")],
    ids=["empty", "empty-label", "dot", "nul"],
)
async def test_invalid_namespace_is_refused(twin: Twin, namespace: tuple[str, ...]) -> None:
    with pytest.raises(errors.InvalidNamespaceError):
        await twin.put(namespace, "k", {"content": "x"})
    with pytest.raises(errors.InvalidNamespaceError):
        await twin.batch([PutOp(namespace, "k", {"content": "x"})])
    assert await twin.list_namespaces() == []
    assert await twin.search((), limit=100) == []


@pytest.mark.usefixtures("ours")
async def test_invalid_namespace_error_names_the_label(twin: Twin) -> None:
    with pytest.raises(errors.InvalidNamespaceError, match=r"agent\.a"):
        await twin.put(("agent.a", "semantic"), "k", {"content": "x"})
    with pytest.raises(errors.InvalidNamespaceError):
        await twin.get(("agent.a", "semantic"), "k")
    with pytest.raises(errors.InvalidNamespaceError):
        await twin.search(("agent.a",))


@pytest.mark.usefixtures("ours")
@pytest.mark.parametrize(
    "text",
    [
        "The first cities appeared about 6000 years ago in Mesopotamia.",
        "Dinosaurs died out 66000000 years ago, and yesterday I saw a fossil.",
        "It will be done in 99999999999999999999 days, or the past 10000000000 weeks.",
        "A number too long to read: " + "9" * 5000 + " days ago.",
    ],
    ids=["6000-years-ago", "66-million-years-ago", "far-future", "huge-number"],
)
async def test_times_out_of_the_calendars_range_never_fail_a_write(twin: Twin, text: str) -> None:
    # Understanding time in text indexes what the calendar can hold and skips the rest.
    ns = ("u1", "episodic")
    value = {"content": text, "event_timestamp": "2023-05-01T00:00:00"}
    await twin.put(ns, "k", value)
    item = await twin.get(ns, "k")
    assert item is not None
    assert item.value == value
    assert "k" in keys(await twin.search(ns, query=text[:60], limit=5))
    assert "k" in keys(await twin.search(ns, query="what happened 6000 years ago?", limit=5))


@pytest.mark.usefixtures("ours")
@pytest.mark.parametrize(
    "value",
    [
        {"content": "tags", "tags": {"a", "b"}},
        {"content": "object", "obj": object()},
        {"content": "not a number", "n": math.nan},
        {"content": "nul \x00 inside"},
        {"content": "nested nul", "meta": {"note": "a\x00b"}},
        {"content": "nul in a key", "ke\x00y": 1},
    ],
    ids=["set", "object", "nan", "nul", "nested-nul", "nul-key"],
)
async def test_invalid_content_is_refused_and_nothing_stored(
    twin: Twin, value: dict[str, Any]
) -> None:
    ns = ("agent_a", "semantic")
    await twin.put(ns, "existing", {"content": "apple"})
    with pytest.raises(errors.InvalidContentError):
        await twin.put(ns, "bad", value)
    with pytest.raises(errors.InvalidContentError):
        await twin.put(ns, "existing", value)
    assert await twin.get(ns, "bad") is None
    existing = await twin.get(ns, "existing")
    assert existing is not None
    assert existing.value == {"content": "apple"}
    assert keys(await twin.search(ns, limit=100)) == ["existing"]


@pytest.mark.usefixtures("ours")
async def test_failed_batch_stores_nothing_of_it(twin: Twin) -> None:
    ns = ("agent_a", "semantic")
    await twin.put(ns, "existing", {"content": "apple"})
    with pytest.raises(errors.InvalidContentError):
        await twin.batch(
            [
                PutOp(ns, "first", {"content": "banana"}),
                PutOp(ns, "existing", {"content": "apple pie"}),
                PutOp(("agent_a", "episodic"), "new_ns", {"content": "tea"}),
                PutOp(ns, "bad", {"content": "a\x00b"}),
                PutOp(ns, "last", {"content": "car"}),
            ]
        )
    assert await twin.get(ns, "first") is None
    assert await twin.get(ns, "last") is None
    existing = await twin.get(ns, "existing")
    assert existing is not None
    assert existing.value == {"content": "apple"}
    assert await twin.list_namespaces() == [ns]
    assert keys(await twin.search(ns, query="banana")) == ["existing"]


@pytest.mark.usefixtures("ours")
@pytest.mark.parametrize(
    "bad_filter",
    [
        {"x": {"$regex": "a"}},
        {"x": {"$in": ["a"]}},
        {"x": {"$gt": 1, "$bogus": 2}},
        {"meta": {"lang": {"$like": "e%"}}},
    ],
    ids=["regex", "in", "bogus-beside-valid", "nested"],
)
async def test_unknown_filter_operator_is_refused(twin: Twin, bad_filter: dict[str, Any]) -> None:
    ns = ("agent_a", "semantic")
    # Refused from the filter alone, even where no stored item would reach the check.
    with pytest.raises(errors.InvalidFilterError):
        await twin.search(ns, filter=bad_filter)
    await twin.put(ns, "k", {"content": "apple", "x": "a", "meta": {"lang": "en"}})
    with pytest.raises(errors.InvalidFilterError):
        await twin.search(ns, filter=bad_filter)
    with pytest.raises(errors.InvalidFilterError):
        await twin.search(ns, query="apple", filter=bad_filter)


@pytest.mark.usefixtures("ours")
async def test_unknown_filter_operator_error_names_it(twin: Twin) -> None:
    with pytest.raises(errors.InvalidFilterError, match=r"\$regex"):
        await twin.search(("agent_a",), filter={"x": {"$regex": "a"}})


@pytest.mark.usefixtures("ours")
async def test_embedder_with_wrong_dimensions_is_refused(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    index = {"dims": 64, "embed": KeywordEmbeddings(dims=48), "fields": ["content"]}
    twin = twin_of(make_store(index=index))
    ns = ("agent_a", "semantic")
    with pytest.raises(errors.DimensionMismatchError, match="48"):
        await twin.put(ns, "k", {"content": "apple"})
    with pytest.raises(errors.DimensionMismatchError):
        await twin.batch(
            [PutOp(ns, "k1", {"content": "apple"}), PutOp(ns, "k2", {"content": "car"})]
        )
    assert await twin.get(ns, "k") is None
    assert await twin.get(ns, "k1") is None
    assert await twin.list_namespaces() == []


@pytest.mark.usefixtures("ours")
async def test_query_embedding_with_wrong_dimensions_is_refused(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    index = {"dims": 64, "embed": KeywordEmbeddings(dims=64, query_dims=32), "fields": ["content"]}
    twin = twin_of(make_store(index=index))
    ns = ("agent_a", "semantic")
    await twin.put(ns, "k", {"content": "apple"})
    with pytest.raises(errors.DimensionMismatchError, match="32"):
        await twin.search(ns, query="apple")
    assert keys(await twin.search(ns)) == ["k"]


@pytest.mark.usefixtures("ours")
async def test_embedder_failure_mid_batch_stores_nothing(
    make_store: MakeStore, twin_of: TwinOf
) -> None:
    emb = KeywordEmbeddings(fail_on="boom")
    twin = twin_of(make_store(index=_content_index(emb)))
    ns = ("agent_a", "semantic")
    await twin.put(ns, "existing", {"content": "apple"})
    with pytest.raises(errors.EmbeddingError):
        await twin.batch(
            [
                PutOp(ns, "ok", {"content": "banana"}),
                PutOp(ns, "existing", {"content": "car"}),
                PutOp(ns, "fails", {"content": "boom goes the service"}),
            ]
        )
    assert await twin.get(ns, "ok") is None
    existing = await twin.get(ns, "existing")
    assert existing is not None
    assert existing.value == {"content": "apple"}
    assert keys(await twin.search(ns, query="car")) == ["existing"]


# ---------------------------------------------------------------------------------------
# Part 3: a drop-in for LangGraph's own stores (TTL, construction, edge cases of the API)
# ---------------------------------------------------------------------------------------


def _sql(store: BaseStore, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of one statement on the store's own database (a test's view from outside)."""
    from langmem_tiers.sql.flow import Sql

    def flow() -> Any:
        return (yield Sql(text, list(params)))

    return store.db.run(flow())  # type: ignore[attr-defined, no-any-return]


def _backdate(store: BaseStore, ns: tuple[str, ...], key: str) -> None:
    """Make an item expired a minute ago without deleting it (as if no sweep ran yet)."""
    d = store.db.dialect  # type: ignore[attr-defined]
    past = d.ts_param(datetime.now(timezone.utc) - timedelta(minutes=1))
    _sql(
        store,
        "UPDATE lmt_items SET expires_at = ? WHERE prefix = ? AND key = ?",
        [past, ".".join(ns), key],
    )


def _expiry(store: BaseStore, ns: tuple[str, ...], key: str) -> tuple[Any, Any]:
    """``(expires_at, ttl_minutes)`` of an item as stored (None, None when gone)."""
    rows = _sql(
        store,
        "SELECT expires_at, ttl_minutes FROM lmt_items WHERE prefix = ? AND key = ?",
        [".".join(ns), key],
    )
    if not rows:
        return None, None
    d = store.db.dialect  # type: ignore[attr-defined]
    return d.ts_value(rows[0][0]), rows[0][1]


def _ttl_store(make_store: MakeStore, backend: str, **ttl: Any) -> Any:
    """A store of ``backend`` with a TTL config (the reference has no TTL)."""
    store = make_store()
    store.ttl_config = dict(ttl) or None
    return store


@pytest.mark.usefixtures("ours")
async def test_expired_items_are_never_read_even_before_a_sweep(
    make_store: MakeStore, twin_of: TwinOf, backend: str
) -> None:
    store = _ttl_store(make_store, backend, default_ttl=5)
    twin = twin_of(store)
    gone, kept = ("ttl", "gone"), ("ttl", "kept")
    await twin.put(gone, "e", {"text": "apple pie recipe"})
    await twin.put(gone, "live", {"text": "apple crumble"}, ttl=None)
    await twin.put(kept, "k", {"text": "apple tart"}, ttl=None)
    _backdate(store, gone, "e")
    assert await twin.get(gone, "e") is None
    assert await twin.get(gone, "e", refresh_ttl=True) is None  # no resurrection
    assert keys(await twin.search(gone)) == ["live"]
    assert "e" not in keys(await twin.search(("ttl",), query="apple pie", limit=10))
    assert keys(await twin.search(gone, filter={"text": "apple pie recipe"})) == []
    await twin.delete(gone, "live")
    assert await twin.list_namespaces(prefix=("ttl",)) == [kept]
    # Only the sweep deletes the row, with a delete event.
    assert _expiry(store, gone, "e")[1] == 5
    assert await twin.sweep_ttl() == 1
    assert _expiry(store, gone, "e") == (None, None)
    assert await twin.sweep_ttl() == 0
    events = _sql(
        store,
        "SELECT type, metadata FROM lmt_events WHERE prefix = ? AND key = ? ORDER BY seq",
        ["ttl.gone", "e"],
    )
    assert [e[0] for e in events] == ["memory.created", "memory.deleted"]
    assert "expired" in str(events[-1][1])
    assert await twin.get(kept, "k") is not None


@pytest.mark.usefixtures("ours")
async def test_put_ttl_default_ttl_and_none(
    make_store: MakeStore, twin_of: TwinOf, backend: str
) -> None:
    store = _ttl_store(make_store, backend, default_ttl=30)
    twin = twin_of(store)
    ns = ("ttl",)
    before = datetime.now(timezone.utc)
    await twin.put(ns, "default", {"v": 1})
    await twin.put(ns, "explicit", {"v": 2}, ttl=2.5)
    await twin.put(ns, "never", {"v": 3}, ttl=None)
    await twin.batch([PutOp(ns, "batched", {"v": 4})])  # an op carries its own ttl (None)
    expires, minutes = _expiry(store, ns, "default")
    assert minutes == 30
    assert before + timedelta(minutes=29) < expires < before + timedelta(minutes=31)
    assert _expiry(store, ns, "explicit")[1] == 2.5
    assert _expiry(store, ns, "never") == (None, None) or _expiry(store, ns, "never")[0] is None
    assert _expiry(store, ns, "batched")[0] is None
    # A put replaces the TTL, as in LangGraph.
    await twin.put(ns, "explicit", {"v": 5}, ttl=None)
    assert _expiry(store, ns, "explicit") == (None, None)
    for bad in (0, -1, math.inf, math.nan, "5", True):
        with pytest.raises(errors.InvalidContentError, match="ttl"):
            await twin.put(ns, "bad", {"v": 6}, ttl=bad)
    assert await twin.get(ns, "bad") is None


@pytest.mark.usefixtures("ours")
async def test_reads_refresh_the_ttl_as_configured(
    make_store: MakeStore, twin_of: TwinOf, backend: str
) -> None:
    store = _ttl_store(make_store, backend, default_ttl=1, refresh_on_read=True)
    twin = twin_of(store)
    ns = ("ttl",)
    await put_all(twin, ns, {"g": {"text": "get me"}, "s": {"text": "search me"}})
    await twin.put(ns, "forever", {"text": "search me too"}, ttl=None)
    g0, s0 = _expiry(store, ns, "g")[0], _expiry(store, ns, "s")[0]
    await asyncio.sleep(0.05)
    assert await twin.get(ns, "g", refresh_ttl=False) is not None
    assert await twin.search(ns, filter={"text": "search me"}, refresh_ttl=False)
    assert _expiry(store, ns, "g")[0] == g0
    assert _expiry(store, ns, "s")[0] == s0
    assert await twin.get(ns, "g") is not None  # as refresh_on_read says
    assert _expiry(store, ns, "g")[0] > g0
    assert keys(await twin.search(ns, query="search me", refresh_ttl=True))[:2] != []
    s1 = _expiry(store, ns, "s")[0]
    assert s1 > s0
    assert _expiry(store, ns, "forever") == (None, None) or _expiry(store, ns, "forever")[0] is None
    store.ttl_config = {"default_ttl": 1, "refresh_on_read": False}
    await asyncio.sleep(0.05)
    await twin.get(ns, "s")
    await twin.search(ns)
    assert _expiry(store, ns, "s")[0] == s1


@pytest.mark.usefixtures("ours")
async def test_a_default_ttl_runs_from_the_put_unless_reads_are_told_to_refresh(
    make_store: MakeStore, twin_of: TwinOf, backend: str
) -> None:
    # LangGraph's SqliteStore (its test_ttl_override_default): with only a default_ttl,
    # a read that does not ask leaves the expiry where the put set it.
    store = _ttl_store(make_store, backend, default_ttl=5 / 60)
    twin = twin_of(store)
    ns = ("ttl",)
    await twin.put(ns, "short", {"v": "override"}, ttl=1 / 60)
    await twin.put(ns, "default", {"v": "default"})
    await twin.put(ns, "forever", {"v": "permanent"}, ttl=None)
    at_put = _expiry(store, ns, "default")
    assert at_put[1] == pytest.approx(5 / 60)
    await asyncio.sleep(0.05)
    for key in ("short", "default", "forever"):
        assert await twin.get(ns, key) is not None
    assert keys(await twin.search(ns, filter={"v": "default"})) == ["default"]
    assert _expiry(store, ns, "default") == at_put
    await twin.get(ns, "default", refresh_ttl=True)  # asked: refreshed
    assert _expiry(store, ns, "default")[0] > at_put[0]
    _backdate(store, ns, "short")
    _backdate(store, ns, "default")
    assert await twin.sweep_ttl() == 2
    assert [await twin.get(ns, k) is not None for k in ("short", "default", "forever")] == [
        False,
        False,
        True,
    ]


@pytest.mark.usefixtures("ours")
async def test_ttl_methods_are_awaitable_as_on_langgraphs_async_stores(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    # LangGraph's async stores define sweep_ttl, start_ttl_sweeper and stop_ttl_sweeper
    # as coroutines, and their test fixtures await them.
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    ttl = {"default_ttl": 10, "sweep_interval_minutes": 0.002}
    ns = ("ttl",)
    async with TieredMemoryStore.afrom_url(url, ttl=ttl, **_qdrant(backend)) as store:  # type: ignore[arg-type]
        await store.setup()
        running = await store.start_ttl_sweeper()
        assert running is store.start_ttl_sweeper()  # the same sweeper, awaited or not
        assert not running.done()
        await store.aput(ns, "old", {"v": 1})
        await store.aput(ns, "new", {"v": 2})
        assert await store.sweep_ttl() == 0
        _async_backdate(url, ns, "old")
        for _ in range(200):
            if _stored_expiry(url, ns, "old") == (None, None):
                break
            await asyncio.sleep(0.05)
        assert await store.aget(ns, "old") is None
        assert await store.stop_ttl_sweeper()
        await store.aput(ns, "old", {"v": 3})
        _async_backdate(url, ns, "old")
        assert await store.sweep_ttl() == 1
        assert await store.aget(ns, "new") is not None
    with TieredMemoryStore.from_url(url, ttl=ttl, **_qdrant(backend)) as store:  # type: ignore[arg-type]
        assert store.sweep_ttl() == 0  # the sync form answers at once
        assert await store.sweep_ttl() == 0  # and awaiting its answer is harmless
        assert store.stop_ttl_sweeper()


def _async_backdate(url: str, ns: tuple[str, ...], key: str) -> None:
    """:func:`_backdate` through a sync store of its own on the database at ``url``."""
    from langmem_tiers import TieredMemoryStore

    with TieredMemoryStore.from_url(url, setup=False) as other:
        _backdate(other, ns, key)


def _stored_expiry(url: str, ns: tuple[str, ...], key: str) -> tuple[Any, Any]:
    """:func:`_expiry` through a sync store of its own on the database at ``url``."""
    from langmem_tiers import TieredMemoryStore

    with TieredMemoryStore.from_url(url, setup=False) as other:
        return _expiry(other, ns, key)


@pytest.mark.usefixtures("ours")
async def test_ttl_sweeper_deletes_in_the_background(
    make_store: MakeStore, twin_of: TwinOf, backend: str
) -> None:
    store = _ttl_store(make_store, backend, sweep_interval_minutes=0.002)
    twin = twin_of(store)
    ns = ("ttl",)
    await twin.put(ns, "old", {"v": 1}, ttl=10)
    await twin.put(ns, "new", {"v": 2}, ttl=10)
    _backdate(store, ns, "old")
    done = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is done  # one sweeper per store
    for _ in range(200):
        if _expiry(store, ns, "old") == (None, None):
            break
        await asyncio.sleep(0.05)
    assert _expiry(store, ns, "old") == (None, None)
    assert store.stop_ttl_sweeper(timeout=10)
    assert done.done()
    assert await twin.get(ns, "new") is not None


@pytest.mark.usefixtures("ours")
def test_ttl_config_is_checked(backend: str, tmp_path: Any) -> None:
    from langmem_tiers import TieredMemoryStore

    for bad in ({"default_ttl": -1}, {"refresh_on_read": "yes"}, {"ttl": 5}, [5]):
        with (
            pytest.raises(errors.ConfigurationError, match="ttl"),
            TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'x.db'}", ttl=bad),  # type: ignore[arg-type]
        ):
            pass


@pytest.mark.usefixtures("ours")
async def test_batch_may_write_under_the_langgraph_namespace(twin: Twin) -> None:
    # LangGraph refuses the namespace in the public put only; its server writes there
    # through batch.
    ns = ("langgraph", "threads")
    with pytest.raises(errors.InvalidNamespaceError, match="langgraph"):
        await twin.put(ns, "k", {"v": 1})
    assert await twin.batch([PutOp(ns, "k", {"v": 1})]) == [None]
    item = await twin.get(ns, "k")
    assert item is not None
    assert item.value == {"v": 1}
    assert keys(await twin.search(("langgraph",))) == ["k"]
    await twin.delete(ns, "k")
    assert await twin.get(ns, "k") is None


@pytest.mark.usefixtures("ours")
async def test_namespaces_may_be_lists(twin: Twin) -> None:
    # As LangGraph's SQL stores take them (its InMemoryStore fails to hash a list).
    await twin.put(["test", "a"], "k", {"v": 1})  # type: ignore[arg-type]
    item = await twin.get(["test", "a"], "k")  # type: ignore[arg-type]
    assert item is not None
    assert item.namespace == ("test", "a")
    assert keys(await twin.search(["test"])) == ["k"]  # type: ignore[arg-type]
    assert await twin.list_namespaces(prefix=["test"]) == [("test", "a")]
    found = await twin.batch([SearchOp(["test"]), GetOp(["test", "a"], "k")])  # type: ignore[arg-type]
    assert keys(found[0]) == ["k"]
    assert found[1].key == "k"


@pytest.mark.usefixtures("ours")
async def test_a_match_condition_path_may_be_one_bare_label(twin: Twin) -> None:
    # LangGraph's PostgreSQL test_batch_list_namespaces_ops writes MatchCondition("suffix",
    # "public"): one label, as ("public",).
    for ns in [("test", "documents", "public"), ("test", "images", "private"), ("public",)]:
        await twin.put(ns, "k", {"v": 1})
    found = await twin.batch(
        [
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", "public"),)),  # type: ignore[arg-type]
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", "test"),)),  # type: ignore[arg-type]
            ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),)),
        ]
    )
    assert found[0] == [("public",), ("test", "documents", "public")]
    assert found[1] == [("test", "documents", "public"), ("test", "images", "private")]
    assert found[0] == found[2]
    with pytest.raises(errors.InvalidNamespaceError, match="match path"):
        await twin.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", "a.b"),))])  # type: ignore[arg-type]


@pytest.mark.usefixtures("ours")
async def test_a_string_namespace_is_refused(twin: Twin) -> None:
    with pytest.raises(errors.InvalidNamespaceError, match="tuple"):
        await twin.search("test")


async def test_filters_with_infinity_and_nan_compare_as_floats(twin: Twin) -> None:
    ns = ("numbers",)
    await put_all(twin, ns, {"one": {"n": 1}, "five": {"n": 5.5}})
    inf, nan = math.inf, math.nan
    expect = {
        "$lt": {inf: ["five", "one"], -inf: []},
        "$lte": {inf: ["five", "one"], -inf: []},
        "$gt": {inf: [], -inf: ["five", "one"]},
        "$gte": {inf: [], -inf: ["five", "one"]},
        "$eq": {inf: [], -inf: []},
        "$ne": {inf: ["five", "one"], -inf: ["five", "one"]},
    }
    for op, by_operand in expect.items():
        for operand, wanted in by_operand.items():
            found = await twin.search(ns, filter={"n": {op: operand}})
            assert sorted(keys(found)) == wanted, (op, operand)
    for op in ("$eq", "$lt", "$lte", "$gt", "$gte"):
        assert await twin.search(ns, filter={"n": {op: nan}}) == [], op
    assert sorted(keys(await twin.search(ns, filter={"n": {"$ne": nan}}))) == ["five", "one"]
    assert await twin.search(ns, filter={"n": inf}) == []


async def test_filters_with_numbers_beyond_64_bits_compare_as_numbers(twin: Twin) -> None:
    # LangGraph's test_numeric_filter_safety: such an operand is a number, not an error.
    ns = ("numbers",)
    await put_all(twin, ns, {"small": {"n": 5}, "big": {"n": 2**70}})
    expect: list[tuple[Any, list[str]]] = [
        (2**64, []),
        ({"$gt": 2**64}, ["big"]),
        ({"$gte": 2**70}, ["big"]),
        ({"$lt": 2**64}, ["small"]),
        ({"$lt": 2**71}, ["big", "small"]),
        ({"$gt": -(2**70)}, ["big", "small"]),
        ({"$ne": 10**30}, ["big", "small"]),
        (2**70, ["big"]),
    ]
    for operand, wanted in expect:
        found = await twin.search(ns, filter={"n": operand})
        assert sorted(keys(found)) == wanted, operand
    assert keys(await twin.search(ns, query="numbers", filter={"n": {"$gt": 2**64}})) == ["big"]


@pytest.mark.usefixtures("ours")
async def test_filters_with_numbers_beyond_floats_compare_as_numbers(twin: Twin) -> None:
    # The reference raises OverflowError converting such an operand to a float.
    ns = ("numbers",)
    await put_all(twin, ns, {"small": {"n": 5}, "big": {"n": 2**70}})
    for operand, wanted in [
        ({"$lt": 10**400}, ["big", "small"]),
        ({"$gt": -(10**400)}, ["big", "small"]),
        ({"$gt": 10**400}, []),
        (10**400, []),
    ]:
        found = await twin.search(ns, filter={"n": operand})
        assert sorted(keys(found)) == wanted, operand


@pytest.mark.usefixtures("ours")
async def test_index_config_keeps_what_was_passed(make_store: MakeStore, twin_of: TwinOf) -> None:
    emb = KeywordEmbeddings()
    index = {
        **_content_index(emb),
        "distance_type": "cosine",
        "text_fields": ["content"],
        "ann_index_config": {"kind": "hnsw"},
    }
    store = make_store(index=index)
    assert store.embeddings is emb  # type: ignore[attr-defined]
    config = store.index_config  # type: ignore[attr-defined]
    assert config["text_fields"] == ["content"]
    assert config["distance_type"] == "cosine"
    assert config["ann_index_config"] == {"kind": "hnsw"}
    assert config["embed"] is emb
    assert config["dims"] == index["dims"]
    with pytest.raises(errors.ConfigurationError, match=r"distance_type.*hamming"):
        make_store(index={**index, "distance_type": "hamming"})


@pytest.mark.usefixtures("ours")
@pytest.mark.parametrize("distance", ["l2", "inner_product"])
async def test_every_float_distance_langgraph_takes_ranks_as_cosine(
    make_store: MakeStore, twin_of: TwinOf, distance: str
) -> None:
    # LangGraph's stores take these; on unit vectors they order as cosine does.
    values = {
        "car": {"content": "car engine"},
        "pie": {"content": "apple pie"},
        "apple": {"content": "apple"},
        "jazz": {"content": "jazz music"},
    }
    found = {}
    for name in ("cosine", distance):
        store = make_store(index={**_content_index(), "distance_type": name})
        assert store.index_config["distance_type"] == name  # type: ignore[attr-defined]
        twin = twin_of(store)
        await put_all(twin, ("docs",), values)
        found[name] = [(i.key, i.score) for i in await twin.search(("docs",), query="apple pie")]
    assert [k for k, _ in found[distance]][:2] == ["pie", "apple"]
    assert [k for k, _ in found[distance]] == [k for k, _ in found["cosine"]]
    for (_, a), (_, b) in zip(found[distance], found["cosine"], strict=True):
        assert a == pytest.approx(b, abs=0.02)  # the same similarity (recency differs a little)


# -- construction: connections, URLs, store objects ---------------------------------------


def _url(backend: str, request: pytest.FixtureRequest, tmp_path: Any) -> str:
    if backend == "reference":
        pytest.skip("construction of langmem_tiers' store")
    if backend.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'store.db'}"
    new_schema: Callable[[], str] = request.getfixturevalue("postgres_schemas")
    return new_schema()


def _qdrant(backend: str) -> dict[str, Any]:
    return {"qdrant": ":memory:"} if backend.endswith("+qdrant") else {}


async def test_from_conn_string_is_from_url(
    backend: str, mode: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    conn_string = str(tmp_path / "store.db") if backend.startswith("sqlite") else url
    ns = ("docs",)
    if mode == "sync":
        with TieredMemoryStore.from_conn_string(conn_string, **_qdrant(backend)) as store:
            store.put(ns, "a", {"text": "apple"})
        with TieredMemoryStore.from_url(url, **_qdrant(backend)) as store:
            assert store.get(ns, "a") is not None
    else:
        async with TieredMemoryStore.afrom_conn_string(conn_string, **_qdrant(backend)) as store:
            await store.aput(ns, "a", {"text": "apple"})
            assert (await store.aget(ns, "a")) is not None


def _plain_sql(url: str, statement: str) -> None:
    """Run ``statement`` as another client would: its own connection, the driver's defaults
    (on SQLite: foreign keys not enforced)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            conn.execute(statement)
            conn.commit()
        finally:
            conn.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(statement)  # type: ignore[arg-type]


async def test_items_deleted_by_another_client_can_be_written_again(
    backend: str, twin_of: TwinOf, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    ns = ("docs",)
    with TieredMemoryStore.from_url(url, **_qdrant(backend)) as store:
        twin = twin_of(store)
        await twin.put(ns, "a", {"text": "apple pie", "note": "baked"}, index=["text", "note"])
        await twin.put(ns, "b", {"text": "banana bread"})
        _plain_sql(url, "DELETE FROM lmt_items")
        # The item's vectors may have stayed behind (SQLite without PRAGMA foreign_keys):
        # the next puts of the key replace them.
        await twin.put(ns, "a", {"text": "apple crumble"})
        await twin.batch(
            [PutOp(ns, "b", {"text": "banana split"}), PutOp(ns, "c", {"text": "cherry"})]
        )
        item = await twin.get(ns, "a")
        assert item is not None
        assert item.value == {"text": "apple crumble"}
        hits = await twin.search(ns, query="apple crumble", limit=5)
        assert keys(hits)[0] == "a"
        assert sorted(keys(hits)) == ["a", "b", "c"]
        if "qdrant" not in backend:
            fields = _sql(
                store,
                "SELECT field FROM lmt_vectors WHERE item_id IN"
                " (SELECT id FROM lmt_items WHERE key = 'a')",
            )
            assert [f[0] for f in fields] == ["$"]  # the whole value, as the config says


async def test_await_setup_works_on_any_store(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    async with TieredMemoryStore.afrom_url(url, setup=False, **_qdrant(backend)) as store:
        await store.setup()  # as LangGraph's async stores are set up
        await store.setup()  # idempotent
        await store.aput(("docs",), "a", {"text": "apple"})
    with TieredMemoryStore.from_url(url, setup=False, **_qdrant(backend)) as store:
        store.setup()  # the sync form still runs at once
        await store.setup()  # and awaiting it is harmless
        assert store.get(("docs",), "a") is not None


async def test_sync_calls_on_the_loop_of_an_async_store_raise_invalid_state(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if not backend.startswith("postgres"):
        pytest.skip("an async connection (PostgreSQL's async pool)")
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    async with TieredMemoryStore.afrom_url(url, **_qdrant(backend)) as store:
        with pytest.raises(asyncio.InvalidStateError, match="aput"):
            store.put(("docs",), "a", {"text": "apple"})
        with pytest.raises(errors.InvalidStateError):
            store.get(("docs",), "a")
        # From another thread, sync calls run on the store's loop.
        await asyncio.to_thread(store.put, ("docs",), "a", {"text": "apple"})
        assert (await store.aget(("docs",), "a")) is not None


@pytest.mark.parametrize("kind", ["connection", "pool"])
async def test_psycopg_connections_and_pools_are_accepted(
    backend: str, mode: str, kind: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if not backend.startswith("postgres"):
        pytest.skip("psycopg connections")
    import psycopg
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    ns = ("docs",)
    if mode == "sync" and kind == "connection":
        with psycopg.connect(url, autocommit=True) as conn:
            store = TieredMemoryStore(conn, **_qdrant(backend))
            store.setup()
            store.put(ns, "a", {"text": "apple"})
            assert store.get(ns, "a") is not None
    elif mode == "sync":
        with ConnectionPool(url, min_size=1, max_size=2, open=True) as pool:
            store = TieredMemoryStore(pool, **_qdrant(backend))
            store.setup()
            store.put(ns, "a", {"text": "apple"})
            assert store.get(ns, "a") is not None
    elif kind == "connection":
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as aconn:
            store = TieredMemoryStore(aconn, **_qdrant(backend))
            await store.setup()
            await store.aput(ns, "a", {"text": "apple"})
            assert (await store.aget(ns, "a")) is not None
    else:
        async with AsyncConnectionPool(url, min_size=1, max_size=2, open=False) as apool:
            store = TieredMemoryStore(apool, **_qdrant(backend))
            await store.setup()
            await store.aput(ns, "a", {"text": "apple"})
            assert (await store.aget(ns, "a")) is not None
    with TieredMemoryStore.from_url(url, **_qdrant(backend)) as check:
        assert check.get(ns, "a") is not None


async def test_a_callers_transaction_is_never_committed(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if backend != "postgres":
        pytest.skip("a psycopg connection outside autocommit")
    import psycopg

    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    with TieredMemoryStore.from_url(url):
        pass  # the schema
    ns = ("docs",)
    with psycopg.connect(url) as conn:  # autocommit off, as psycopg's default
        store = TieredMemoryStore(conn)
        # No transaction open: the store's work is its own, committed.
        store.put(ns, "own", {"text": "apple"})
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        # The caller's open transaction holds the store's work until the caller decides.
        conn.execute("SELECT 1")
        store.put(ns, "callers", {"text": "banana"})
        assert store.get(ns, "callers") is not None
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.rollback()
    with TieredMemoryStore.from_url(url) as check:
        assert check.get(ns, "own") is not None
        assert check.get(ns, "callers") is None


async def test_a_wrong_postgres_url_fails_with_the_servers_reason(
    backend: str, mode: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if backend != "postgres":
        pytest.skip("PostgreSQL URLs")
    from urllib.parse import urlsplit

    from langmem_tiers import TieredMemoryStore

    good = urlsplit(_url(backend, request, tmp_path))
    bad = good._replace(netloc=f"postgres:s3cret@{good.hostname}:{good.port}", path="/nope")

    async def open_store() -> None:
        if mode == "sync":
            with TieredMemoryStore.from_url(bad.geturl()):
                pass
        else:
            async with TieredMemoryStore.afrom_url(bad.geturl()):
                pass

    with pytest.raises(errors.BackendError, match='database "nope" does not exist') as caught:
        await open_store()
    message = str(caught.value)
    assert "s3cret" not in message
    assert "postgres:***@" in message
    assert "createdb" in message


def test_an_unentered_store_context_manager_is_refused_everywhere(tmp_path: Any) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from langmem_tiers import TieredMemoryStore
    from langmem_tiers.conversation.session import ChatMemory
    from langmem_tiers.graph.chat import build_tiered_chat_graph
    from langmem_tiers.graph.consolidation_graph import build_consolidation_graph
    from langmem_tiers.short_term.history import TieredChatMessageHistory
    from langmem_tiers.short_term.memory import ShortTermMemory
    from langmem_tiers.short_term.presets import build_memory

    opener = TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'x.db'}")
    model = GenericFakeChatModel(messages=iter([]))
    attempts: list[Callable[[], Any]] = [
        lambda: build_memory("s1", store=opener),
        lambda: TieredChatMessageHistory("s1", store=opener),
        lambda: ChatMemory(opener),
        lambda: build_tiered_chat_graph(model, store=opener),
        lambda: build_consolidation_graph(opener),
        lambda: ShortTermMemory("s1", log=None, store=opener, policy=None),  # type: ignore[arg-type]
    ]
    for attempt in attempts:
        with pytest.raises(errors.ConfigurationError, match=r"with TieredMemoryStore\.from_url"):
            attempt()
    with pytest.raises(errors.ConfigurationError, match="BaseStore"):
        build_consolidation_graph(object())  # type: ignore[arg-type]


# -- many concurrent async calls ------------------------------------------------------------


async def test_thousands_of_concurrent_async_calls_share_batches(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    from langmem_tiers import TieredMemoryStore

    url = _url(backend, request, tmp_path)
    n = 5_000
    ns = ("bulk",)
    index = default_index()
    async with TieredMemoryStore.afrom_url(
        url, index=index, pool_size=2, **_qdrant(backend)
    ) as store:
        await asyncio.gather(*(store.aput(ns, f"k{i}", {"text": f"item {i}"}) for i in range(n)))
        got = await asyncio.gather(*(store.aget(ns, f"k{i}") for i in range(n)))
        assert [item.value["text"] for item in got if item is not None] == [
            f"item {i}" for i in range(n)
        ]
        # One bad value fails its own call only.
        outcomes = await asyncio.gather(
            store.aput(ns, "bad", {"text": "nul \x00"}),
            *(store.aput(ns, f"ok{i}", {"text": "fine"}) for i in range(50)),
            return_exceptions=True,
        )
        assert isinstance(outcomes[0], errors.InvalidContentError)
        assert outcomes[1:] == [None] * 50
        assert len(await store.asearch(ns, limit=n + 100)) == n + 50
