"""Item ids are injective over (namespace, key), and databases with the first ids are migrated.

The first scheme hashed ``".".join(namespace) + "\\x1f" + key``; labels and keys may hold
``\\x1f``, so two different items could share one id and the second put overwrote the
first. The migration that introduced the current ids rewrites every place an id is
stored; its test builds a database whose ids are the first scheme's (computed here, not
by the package) and checks that nothing points at an old id afterwards.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.migrations import STORE, STORE_SCHEMA
from langmem_tiers.long_term.store.migrations import _rekey_items as rekey_step
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import DEFAULT_QDRANT_COLLECTION
from langmem_tiers.sql.flow import Flow, Sql, Transaction
from langmem_tiers.sql.item_ids import ID_MAP, item_id, rekey_items_flow
from langmem_tiers.sql.migrations import SCHEMA_VERSIONS

from .fakes import DIMS, WordEmbeddings

BACKENDS = ["sqlite", "postgres", "postgres+qdrant"]
_FIRST_SCHEME = uuid.UUID("6f1c8a52-3b7e-4d3a-9a53-1f0e2d6c7b90")
ONE = {"content": "the first memory"}
TWO = {"content": "the second memory"}


@pytest.mark.parametrize(
    ("namespace", "key"),
    [
        (("agent", "semantic"), "k"),
        (("a\x1fb",), "c"),
        (("ünïcode", "日本", "x" * 600), '🙂 key with "quotes" and \\ slashes'),
    ],
)
def test_ids_are_the_uuid5_of_the_json_of_namespace_and_key(
    namespace: tuple[str, ...], key: str
) -> None:
    # Stored ids must never change: the id is uuid5 of this exact text, however computed.
    text = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    assert item_id(namespace, key) == str(uuid.uuid5(_FIRST_SCHEME, text))


_ID_CHARS = st.sampled_from(
    ["a", "Z", ".", '"', "\\", "\x00", "\x1f", "\x7f", "\u00e9", "\u2028", "\U0001f642"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(_ID_CHARS, min_size=1, max_size=4), max_size=3),
    st.text(_ID_CHARS, max_size=4),
)
def test_ids_of_any_labels_and_key_are_the_uuid5_of_their_json(labels: list[str], key: str) -> None:
    # Plain labels and keys take a shortcut to the JSON text; quotes, backslashes and
    # control characters take the encoder: both must spell the text the id always had.
    text = json.dumps([labels, key], ensure_ascii=False, separators=(",", ":"))
    assert item_id(tuple(labels), key) == str(uuid.uuid5(_FIRST_SCHEME, text))


def first_scheme_id(prefix: str, key: str) -> str:
    """The id the first scheme gave (namespace joined by '.', then \\x1f, then the key)."""
    return str(uuid.uuid5(_FIRST_SCHEME, prefix + "\x1f" + key))


@pytest.fixture(params=BACKENDS)
def open_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], TieredMemoryStore]]:
    """Opens (and sets up) the same database again on each call; Qdrant keeps its files."""
    backend = str(request.param)
    url = (
        f"sqlite:///{tmp_path / 'ids.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("postgres_schemas")()
    )
    opened: list[ExitStack] = []

    def open_() -> TieredMemoryStore:
        while opened:
            opened.pop().close()  # Qdrant's local mode allows one client per path
        options: dict[str, Any] = {
            "index": {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["content"]},
            "settings": Settings.from_env(environ={}),
        }
        if backend == "postgres+qdrant":
            options["qdrant"] = str(tmp_path / "qdrant")
        stack = ExitStack()
        opened.append(stack)
        return stack.enter_context(TieredMemoryStore.from_url(url, **options))

    try:
        yield open_
    finally:
        while opened:
            opened.pop().close()


def test_items_whose_old_ids_collided_are_two_items(
    open_store: Callable[[], TieredMemoryStore],
) -> None:
    store = open_store()
    assert first_scheme_id("a\x1fb", "c") == first_scheme_id("a", "b\x1fc")
    store.put(("a\x1fb",), "c", ONE)
    store.put(("a",), "b\x1fc", TWO)
    first, second = store.get(("a\x1fb",), "c"), store.get(("a",), "b\x1fc")
    assert first is not None
    assert first.value == ONE
    assert second is not None
    assert second.value == TWO
    assert {i.key for i in store.search(("a\x1fb",))} == {"c"}
    store.delete(("a",), "b\x1fc")
    assert store.get(("a\x1fb",), "c") is not None


def _rows(store: TieredMemoryStore, text: str) -> list[tuple[Any, ...]]:
    def flow() -> Flow[list[tuple[Any, ...]]]:
        return list((yield Sql(text)))

    return store.db.run(flow())


def _every_stored_id(store: TieredMemoryStore) -> str:
    """All text of every table that holds ids, as one string (to look for old ids in)."""
    parts: list[str] = []
    for table, columns in {
        "lmt_items": "id, consolidated_into_id, value",
        "lmt_terms": "item_id",
        "lmt_versions": "memory_id, value",
        "lmt_events": "memory_id, before, after, metadata",
    }.items():
        parts.extend(str(row) for row in _rows(store, f"SELECT {columns} FROM {table}"))
    exists = store.db.run(_table_exists(store, "lmt_vectors"))
    if exists:
        parts.extend(str(row) for row in _rows(store, "SELECT item_id FROM lmt_vectors"))
    return "\n".join(parts)


def _table_exists(store: TieredMemoryStore, table: str) -> Flow[bool]:
    rows = yield Sql(store.db.dialect.table_exists_sql(), [table])
    return bool(rows[0][0])


def _rekey_number(store: TieredMemoryStore) -> int:
    """The old number of the id migration (in the one list of releases before components)."""
    found = [m.legacy for m in STORE.migrations(store.db.dialect) if rekey_step in m.steps]
    assert len(found) == 1
    assert found[0] is not None
    return found[0]


def _forget_from(store: TieredMemoryStore, number: int) -> Flow[None]:
    """Forget every migration numbered ``number`` or later, whatever its component."""
    for component in STORE_SCHEMA:
        versions = [
            version
            for version, m in enumerate(component.migrations(store.db.dialect), start=1)
            if m.legacy is not None and m.legacy >= number
        ]
        if versions:
            yield Sql(
                f"DELETE FROM {SCHEMA_VERSIONS} WHERE component = ? AND version >= ?",
                [component.name, versions[0]],
            )


def _downgrade(store: TieredMemoryStore) -> dict[str, str]:
    """Give every item its first-scheme id, as a database written before the migration.

    The migrations from the id migration on are forgotten too, so setup() applies them
    again (each is idempotent on a database that already has it).
    """

    def flow() -> Flow[dict[str, str]]:
        # The terms were a table then (a later migration made them a view).
        yield Sql("CREATE TABLE lmt_terms_rows AS SELECT item_id, term, tf FROM lmt_terms")
        yield Sql("DROP VIEW lmt_terms")
        yield Sql("ALTER TABLE lmt_terms_rows RENAME TO lmt_terms")
        renames = yield from rekey_items_flow(store.db.dialect, first_scheme_id)
        yield Sql(f"DROP TABLE {ID_MAP}")
        yield from _forget_from(store, _rekey_number(store))
        yield Sql("DROP VIEW IF EXISTS long_term_memories")  # a later migration's
        return renames

    return store.db.run(_in_transaction(flow()))


def _in_transaction(flow: Flow[Any]) -> Flow[Any]:
    return (yield Transaction(flow))


def test_the_id_migration_rewrites_every_stored_id(
    open_store: Callable[[], TieredMemoryStore],
) -> None:
    store = open_store()
    engine = MemoryEngine(store, auto_consolidate=False)
    engine.add_semantic("alice", "Alice lives in Berlin", subject="alice")
    new_fact = engine.add_semantic("alice", "Alice lives in Paris", subject="alice").memory
    engine.update_semantic("alice", new_fact.id, "Alice lives in Paris, Belleville")
    for n in range(3):
        engine.add_episodic("alice", f"Alice asked about trains {n}", session_id="s1")
    assert engine.consolidate("alice").episodes == 3
    gone = engine.add_semantic("alice", "Alice owned a red bicycle").memory
    engine.forget("alice", gone.id, hard=True)
    engine.add_semantic("bob", "Bob likes tea")
    store.put(("plain",), "doc", {"content": "a plain document"})
    store.put(("a\x1fb",), "c", ONE)  # collided with nothing yet: one item of the pair

    prefix_keys = _rows(
        store, "SELECT prefix, key FROM lmt_items UNION SELECT prefix, key FROM lmt_events"
    )
    renames = _downgrade(store)
    assert len(renames) == len(prefix_keys)
    old_ids = {first_scheme_id(p, k) for p, k in prefix_keys}
    assert {r[0] for r in _rows(store, "SELECT id FROM lmt_items")} <= old_ids
    new_ids = {item_id(p.split("."), k) for p, k in prefix_keys}
    before = _every_stored_id(store)
    assert not any(i in before for i in new_ids), "the downgrade left a current id"
    store = open_store()  # setup() applies the id migration
    engine = MemoryEngine(store, auto_consolidate=False)
    after = _every_stored_id(store)
    leftover = [i for i in old_ids if i in after]
    assert leftover == [], f"{len(leftover)} old ids are still stored"
    assert {r[0] for r in _rows(store, "SELECT id FROM lmt_items")} <= new_ids

    ids = {m.content: m.id for m in engine.state("alice")}
    paris = ids["Alice lives in Paris, Belleville"]
    assert paris == item_id(namespace_for("alice", "semantic"), new_fact.key)
    berlin = engine.get("alice", ids["Alice lives in Berlin"])
    assert berlin is not None
    assert berlin.status == "superseded"
    assert berlin.value["superseded_by"] == paris
    assert [v.version for v in engine.evolution("alice", paris)] == [1, 2]
    episodes = [m for m in engine.state("alice") if m.kind == "episodic"]
    summaries = {m.consolidated_into_id for m in episodes}
    assert len(summaries) == 1
    assert engine.get("alice", summaries.pop()) is not None
    client = store.db.sync_io.qdrant_client
    if client is not None:
        points, _ = client.scroll(DEFAULT_QDRANT_COLLECTION, limit=10_000, with_payload=True)
        assert points
        assert {p.payload["item_id"] for p in points} <= new_ids
    # Search finds the renamed items through the vector index (pgvector, SQLite, Qdrant).
    hits = engine.retrieve("alice", "where does Alice live Paris")
    assert paris in {h.id for h in hits}
    now = datetime.now(timezone.utc) + timedelta(seconds=1)
    assert [m.state() for m in engine.replay("alice", now)] == [
        m.state() for m in engine.state("alice")
    ]
    # The pair that collided now stores both.
    store.put(("a",), "b\x1fc", TWO)
    got = store.get(("a\x1fb",), "c")
    assert got is not None
    assert got.value == ONE

    stored = _rows(store, "SELECT id, prefix, key FROM lmt_items ORDER BY id")
    store = open_store()  # idempotent: a second setup() renames nothing
    assert _rows(store, "SELECT id, prefix, key FROM lmt_items ORDER BY id") == stored
    assert store.get(("a\x1fb",), "c") is not None
