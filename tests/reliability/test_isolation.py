"""Isolation under hostile ids, labels, filters and queries (property-based, seeded, bounded).

Two scopes hold items with the same keys and contents; only the scope tells them apart.
Whatever the ids contain (unicode, ``%``, ``_``, quotes, ``--``, ``;``, backslashes,
dots), no get, search (listing, query, filter), namespace listing or delete through one
scope returns or changes the other's items, on SQLite, on PostgreSQL, and on PostgreSQL in
a database whose default collation is ICU's (where ``(`` and ``@`` sort between ``.``
and ``/``), and everything is stored literally: it
comes back exactly as it was given. Raw namespace labels with a dot or a NUL byte, or an
empty label, are refused with nothing stored. The same holds for short-term memory
sessions, on every message log.

Examples are generated deterministically (``derandomize``); ``-m slow`` runs ten times
as many.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from langmem_tiers.config import Settings
from langmem_tiers.errors import (
    BackendError,
    InvalidContentError,
    InvalidNamespaceError,
    NotFoundError,
)
from langmem_tiers.long_term.store.scope import decode_label, namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import SlidingWindow
from langmem_tiers.short_term.records import draft_from_message
from langmem_tiers.short_term.sql_log import SqlMessageLog

from .harness import index_config, sql_rows

# Pieces that mean something to SQL, LIKE, JSON paths, shells or LangGraph.
_METACHARACTERS = [
    "%", "_", "'", '"', "--", ";", "\\", "*", "/", "$", "[0]", ".", "..", " ", "\t", "\n",
    "' OR '1'='1", "'; DROP TABLE lmt_items; --", "%25", "%2E", "langgraph", "é", "日本",
    "😀", "\u202e", "NULL", "?", ":name", "$1", "{}", "[]", "\\x00",
]  # fmt: skip
# The six characters backslash-u-0-0-0-0 are refused as if they were a NUL byte; that bug
# has its own test (test_hostile_input.py), so they are left out here.
_TEXT = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
_PIECE = st.one_of(st.sampled_from(_METACHARACTERS), st.text(_TEXT, min_size=1, max_size=6))
hostile = st.lists(_PIECE, min_size=1, max_size=4).map("".join).filter(lambda t: "\\u0000" not in t)
"""Text made of metacharacters and arbitrary unicode (no NUL, no lone surrogates)."""
json_scalars = st.one_of(
    hostile, st.integers(-(2**53), 2**53), st.booleans(), st.none(), st.just(0), st.just("")
)

EXAMPLES = 40
_COUNTER = itertools.count()


def _examples(n: int) -> settings:
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.fixture(params=["sqlite", "postgres", "postgres_icu"])
def sql_backend(request: pytest.FixtureRequest) -> str:
    """SQLite, PostgreSQL, and PostgreSQL in a database with an ICU default collation."""
    return str(request.param)


@pytest.fixture
def store(store_url: str) -> Iterator[TieredMemoryStore]:
    """One store for all examples of a test: scopes differ per example, leftovers are fine."""
    with TieredMemoryStore.from_url(store_url, index=index_config(), settings=Settings()) as s:
        yield s


def _counts(store: TieredMemoryStore) -> tuple[int, int]:
    items = int(sql_rows(store, "SELECT count(*) FROM lmt_items")[0][0])
    return items, int(sql_rows(store, "SELECT count(*) FROM lmt_events")[0][0])


def _check_scoped(
    store: TieredMemoryStore, a: str, b: str, key: str, content: str, tag: Any, query: str
) -> None:
    ns_a, ns_b = namespace_for(a, "semantic"), namespace_for(b, "semantic")
    value_a = {"content": content, "owner": a, "tag": tag}
    value_b = {"content": content, "owner": b, "tag": tag}
    store.put(ns_a, key, value_a)
    store.put(ns_b, key, value_b)

    got = store.get(ns_a, key)
    assert got is not None
    assert got.value == value_a, "not stored literally"
    assert got.namespace == ns_a
    assert decode_label(got.namespace[0]) == a
    for prefix in (ns_a, ns_a[:1]):
        for found in (
            store.search(prefix, limit=1000),
            store.search(prefix, query=query, limit=50),
            store.search(prefix, query=content, limit=50),
            store.search(prefix, filter={"tag": tag}, limit=1000),
            store.search(prefix, filter={"owner": {"$ne": a}}, limit=1000),
        ):
            assert all(item.namespace == ns_a for item in found), [i.namespace for i in found]
            assert all(item.value["owner"] == a for item in found)
        assert store.search(prefix, filter={"owner": b}) == []
        for namespace in store.list_namespaces(prefix=prefix):
            assert namespace[: len(prefix)] == prefix
    assert key in {i.key for i in store.search(ns_a, filter={"owner": a}, limit=1000)}

    store.delete(ns_a, key)
    assert store.get(ns_a, key) is None
    other = store.get(ns_b, key)
    assert other is not None
    assert other.value == value_b, "a delete in one scope changed another"


# The other scope: any id, or this one's id with more after it (``alice`` and
# ``alice@example.com``), the case a prefix comparison gets wrong; what follows starts
# with a character that a linguistic collation sorts between '.' and '/'.
_NEAR_DOT = ["@", "(", ")", "'", '"', "[", "{", "*", "&", "#", "é", "-", "_", " "]
_OTHER = st.one_of(
    st.tuples(st.sampled_from(_NEAR_DOT), st.one_of(st.just(""), hostile)).map(
        lambda p: ("+", p[0] + p[1])
    ),
    hostile.map(lambda t: ("", t)),
)


def _other_scope(a: str, other: tuple[str, str]) -> str:
    how, text = other
    return a + text if how == "+" else text


def _crosses_no_scope(
    store: TieredMemoryStore,
    a: str,
    other: tuple[str, str],
    key: str,
    content: str,
    tag: Any,
    query: str,
) -> None:
    b = _other_scope(a, other)
    assume(a != b)
    assume(content.strip())
    _check_scoped(store, a, b, key, content, tag, query)


_hostile_scopes = given(
    a=hostile, other=_OTHER, key=hostile, content=hostile, tag=json_scalars, query=hostile
)
test_no_store_operation_crosses_scopes = _examples(EXAMPLES)(_hostile_scopes(_crosses_no_scope))
test_no_store_operation_crosses_scopes_many_times = pytest.mark.slow(
    _examples(10 * EXAMPLES)(_hostile_scopes(_crosses_no_scope))
)


# Labels that sort between ``alice.`` and ``alice/`` under ICU (and most linguistic)
# collations, though they are not below ``alice``: punctuation is ignored at the first
# level there, so ``alice(evil)`` compares like ``aliceevil``.
_NEIGHBOURS = ["alice@example%2Ecom", "alice(evil)", "alice-b", "alice_b", "alice b", "alice'"]


def test_a_scope_prefix_matches_only_its_own_namespaces(store: TieredMemoryStore) -> None:
    mine = ("alice", "semantic")
    store.put(mine, "k", {"content": "alice's own memory"})
    for label in _NEIGHBOURS:
        store.put((label, "semantic"), "k", {"content": f"the memory of {label}"})
        store.put((label,), "doc", {"content": f"a document of {label}"})
    store.put(("alice",), "doc", {"content": "alice's document"})
    for prefix in (("alice",), mine):
        listed = store.search(prefix, limit=100)
        queried = store.search(prefix, query="memory document", limit=100)
        for found in (listed, queried):
            assert {i.namespace[0] for i in found} == {"alice"}, [i.namespace for i in found]
    assert len(store.search(("alice",), limit=100)) == 2
    assert store.list_namespaces(prefix=("alice",)) == [("alice",), mine]
    if store.db.dialect.name == "postgres":
        # The range is also indexable: the compared columns are in byte order themselves.
        collations = sql_rows(
            store,
            "SELECT table_name, collation_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND column_name = 'prefix'"
            " AND table_name IN ('lmt_items', 'lmt_vectors') ORDER BY 1",
        )
        assert collations == [("lmt_items", "C"), ("lmt_vectors", "C")]


def _label_refused(label: str, first: bool) -> bool:
    return not label or "." in label or (first and label == "langgraph")


@_examples(EXAMPLES)
@given(labels=st.lists(st.one_of(hostile, st.just("")), min_size=1, max_size=3))
def test_raw_labels_are_stored_literally_or_refused_whole(
    store: TieredMemoryStore, labels: list[str]
) -> None:
    namespace = (*labels, "semantic")
    refused = any(_label_refused(label, i == 0) for i, label in enumerate(labels))
    key = f"k{next(_COUNTER)}"
    value = {"content": "a memory under a raw label", "labels": labels}
    before = _counts(store)
    if refused:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, key, value)
        assert _counts(store) == before
        return
    store.put(namespace, key, value)
    got = store.get(namespace, key)
    assert got is not None
    assert got.value == value
    assert got.namespace == namespace
    for item in store.search((labels[0],), limit=1000):
        assert item.namespace[0] == labels[0]


@pytest.mark.parametrize("label", ["a\x00b", "\x00"])
def test_a_nul_byte_in_a_label_or_scope_id_is_refused(store: TieredMemoryStore, label: str) -> None:
    before = _counts(store)
    with pytest.raises(InvalidNamespaceError, match="NUL"):
        store.put((label, "semantic"), "k", {"content": "x"})
    with pytest.raises(InvalidNamespaceError, match="NUL"):
        namespace_for(label, "semantic")
    assert _counts(store) == before


# -- filters are compared literally ------------------------------------------------------------


# Keys whose JSON text is escaped ('"' and control characters) are left out here: on
# SQLite they silently match nothing (test_hostile_input.py has that bug's own test).
def _plain_key(key: str) -> bool:
    return (
        '"' not in key
        and not any(ord(c) < 0x20 for c in key)
        and not key.startswith("$")
        and key != "content"
    )


filter_keys = hostile.filter(_plain_key)


@_examples(EXAMPLES)
@given(
    fields=st.dictionaries(filter_keys, json_scalars, min_size=1, max_size=4),
    others=st.lists(st.dictionaries(filter_keys, json_scalars, max_size=3), max_size=3),
    data=st.data(),
)
def test_filters_match_exactly_the_items_a_literal_comparison_matches(
    store: TieredMemoryStore,
    fields: dict[str, Any],
    others: list[dict[str, Any]],
    data: st.DataObject,
) -> None:
    scope = f"filters-{next(_COUNTER)}"
    namespace = namespace_for(scope, "semantic")
    values = [{**v, "content": f"item {n}"} for n, v in enumerate([fields, *others])]
    for n, value in enumerate(values):
        store.put(namespace, f"i{n}", value)
    key = data.draw(st.sampled_from(sorted(fields)))
    wanted = fields[key]

    def equal(value: dict[str, Any]) -> bool:
        have = value.get(key, object())
        return type(have) is type(wanted) and have == wanted

    expected = sorted(f"i{n}" for n, v in enumerate(values) if equal(v))
    found = sorted(i.key for i in store.search(namespace, filter={key: wanted}, limit=100))
    assert found == expected


# -- short-term memory sessions ----------------------------------------------------------------

session_ids = hostile.filter(lambda s: bool(s.strip()))


@pytest.fixture(params=["jsonl", "sql"])
def shared_log(
    request: pytest.FixtureRequest, store_url: str, tmp_path: Path
) -> Iterator[MessageLog]:
    if request.param == "jsonl":
        yield JsonlMessageLog(tmp_path / "sessions")
        return
    log = SqlMessageLog.from_url(store_url)
    try:
        yield log
    finally:
        log.close()


@_examples(EXAMPLES // 2)
@given(a=session_ids, b=session_ids, text=hostile)
def test_sessions_never_see_each_others_messages(
    shared_log: MessageLog, a: str, b: str, text: str
) -> None:
    assume(a != b)
    assume(text.strip())
    nonce = next(_COUNTER)

    def memory(session: str) -> ShortTermMemory:
        return ShortTermMemory(session, log=shared_log, store=None, policy=SlidingWindow(50))

    first, second = memory(a), memory(b)
    added_a = first.add_messages([HumanMessage(f"{nonce} {text}")]).ids
    second.add_messages([HumanMessage(f"{nonce} {text}"), HumanMessage(f"{nonce} of b only")])
    mine = [r for r in first.records() if r.text.startswith(f"{nonce} ")]
    assert [(r.id, r.text) for r in mine] == [(added_a[0], f"{nonce} {text}")]
    # An id of the other session means nothing here: it names this session's own
    # message or nothing, and never changes the other session.
    before = [(r.id, r.required_tier_level) for r in second.records()]
    with contextlib.suppress(NotFoundError):
        first.request_tier(second.records()[-1].id, 3)
    assert [(r.id, r.required_tier_level) for r in second.records()] == before
    if isinstance(shared_log, JsonlMessageLog):
        assert shared_log.path_for(a) != shared_log.path_for(b)


@pytest.mark.parametrize(("a", "b"), [("Alice", "alice"), ("Session-A", "session-a")])
def test_ids_that_differ_only_in_case_are_refused_where_the_file_system_ignores_case(
    a: str, b: str, tmp_path: Path
) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append(a, [draft_from_message(HumanMessage(f"{a}'s secret"), index=0)])
    before = log.path_for(a).read_bytes()
    # What a case-insensitive file system does: both names open the one file.
    os.link(log.path_for(a), log.path_for(b))
    other = JsonlMessageLog(tmp_path)
    with pytest.raises(BackendError, match=f"belongs to session '{a}'.*ignores case"):
        other.append(b, [draft_from_message(HumanMessage(f"{b}'s secret"), index=0)])
    with pytest.raises(BackendError, match=f"belongs to session '{a}'"):
        other.read(b)
    assert log.path_for(a).read_bytes() == before, "the other session's file was changed"
    assert [r.text for r in JsonlMessageLog(tmp_path).read(a)] == [f"{a}'s secret"]


def test_a_log_file_of_another_session_is_refused_not_mixed_in(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    log.append("alice", [draft_from_message(HumanMessage("alice's secret"), index=0)])
    # As a case-insensitive file system, or a hand copy, would present it.
    log.path_for("alice").rename(log.path_for("bob"))
    with pytest.raises(BackendError, match="belongs to session 'alice'"):
        JsonlMessageLog(tmp_path).read("bob")


def test_a_session_id_with_a_nul_byte_is_refused(tmp_path: Path) -> None:
    log = JsonlMessageLog(tmp_path)
    with pytest.raises(InvalidNamespaceError, match="NUL"):
        ShortTermMemory("a\x00b", log=log, store=None, policy=SlidingWindow(5))
    assert list(tmp_path.iterdir()) == []


def test_a_query_with_a_nul_byte_is_refused(store: TieredMemoryStore) -> None:
    with pytest.raises(InvalidContentError, match="NUL"):
        store.search(("a",), query="x\x00y")
