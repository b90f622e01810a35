"""What a put writes beside its item, and the item indexes a database upgrades to.

Puts write each item's terms packed beside it; the terms view must read back exactly the
analyzer's term frequencies, whatever characters a term holds. The migration
that dropped the indexes no read needed upgrades an existing database in place, and the
reads those indexes served answer as before.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.errors import InvalidContentError
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.records import item_id
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.vectors import normalize_rows
from langmem_tiers.sql.dialect import (
    ITEMS,
    MEMBERSHIP_TIMES,
    TERMS,
    VECTORS,
    PostgresDialect,
    SqliteDialect,
)

from .fakes import KeywordEmbeddings, default_index
from .old_schema import ITEM_ACCESS, as_release, write_terms_table
from .sql_helpers import backend_url, store_rows

NS = ("u1", "semantic")
AGENT_1 = namespace_for("agent-1", "episodic")[:-1]
TEXTS = {
    "plain": "the car engine needs new oil, the oil is old",
    "accents": "Caroline's café in Zürich serves crème brûlée at 1,000 places",
    "scripts": "東京タワー and Привет мир with don't won't rock'n'roll",
    "quotes": 'a "quoted" word, a back\\slash and a tab\tinside',
}


def _item_indexes(store: Any, backend: str) -> set[str]:
    if backend == "sqlite":
        sql = f"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{ITEMS}'"
    else:
        sql = f"SELECT indexname FROM pg_indexes WHERE tablename = '{ITEMS}'"
        sql += " AND schemaname = current_schema()"
    return {name for (name,) in store_rows(store, sql)}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_terms_rows_are_the_analyzer_frequencies(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = backend_url(backend, tmp_path, request)
    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        for key, text in TEXTS.items():
            store.put(NS, key, {"content": text})
        store.put(NS, "empty-text", {"content": "the and of"})  # stop words only: no terms
        rows = store_rows(store, f"SELECT item_id, term, tf FROM {TERMS}")
        packed = dict(store_rows(store, f"SELECT id, terms FROM {ITEMS}"))
        # A rewrite replaces the terms of the item, and only of that item.
        store.put(NS, "plain", {"content": "a bicycle"})
        after = store_rows(store, f"SELECT item_id, term, tf FROM {TERMS}")

    expected = {
        item_id(NS, key): bm25.term_frequencies(bm25.analyze(text)) for key, text in TEXTS.items()
    }
    found: dict[str, dict[str, int]] = {}
    for item, term, tf in rows:
        found.setdefault(item, {})[term] = int(tf)
    assert found == expected
    assert packed[item_id(NS, "empty-text")] is None
    for item, frequencies in expected.items():
        assert bm25.unpack_terms(packed[item]) == frequencies
    plain = item_id(NS, "plain")
    assert {(t, int(n)) for i, t, n in after if i == plain} == {("bicycl", 1)}
    assert {(i, t, int(n)) for i, t, n in after if i != plain} == {
        (i, t, n) for i, terms in expected.items() if i != plain for t, n in terms.items()
    }


def _live_index_columns(store: Any, backend: str) -> list[str]:
    if backend == "sqlite":
        rows = store_rows(
            store, f"SELECT name FROM pragma_index_info('{ITEMS}_live') ORDER BY seqno"
        )
    else:
        rows = store_rows(
            store,
            "SELECT a.attname FROM pg_index x"
            " JOIN pg_class c ON c.oid = x.indexrelid"
            " JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k (attnum, n) ON true"
            " JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum"
            f" WHERE c.relname = '{ITEMS}_live' AND c.relnamespace = current_schema()::regnamespace"
            " ORDER BY k.n",
        )
    return [name for (name,) in rows]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_live_index_holds_every_membership_time_after_an_upgrade(
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """The next time a namespace's members change at is read from the live index alone,
    on a new database and on one made before the index held every time."""
    url = backend_url(backend, tmp_path, request)
    with monkeypatch.context() as old:
        # Before the membership times' index (29; then the update counts, 30).
        as_release(old, 28, also=[ITEM_ACCESS])
        with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
            for key, text in TEXTS.items():
                store.put(NS, key, {"content": text})
            before = [h.key for h in store.search(NS, query="oil engine", limit=2)]
    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        columns = _live_index_columns(store, backend)
        assert columns[:3] == ["prefix", "status", "id"]
        assert set(MEMBERSHIP_TIMES) <= set(columns)
        assert [h.key for h in store.search(NS, query="oil engine", limit=2)] == before


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_next_time_is_the_earliest_membership_time_after_an_instant(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Over every membership time of the namespace's items, strictly after the instant;
    empty times, earlier times and other namespaces' items do not count."""
    url = backend_url(backend, tmp_path, request)
    with TieredMemoryStore.from_url(url) as store:
        for key in ("a", "b", "c", "d"):
            store.put(NS, key, {"content": f"note {key}"})
        store.put(("u2", "semantic"), "other", {"content": "note"})
        d = store.db.dialect
        since = datetime.now(timezone.utc) + timedelta(minutes=1)
        times = {
            ("a", "valid_from"): since + timedelta(hours=3),
            ("b", "valid_until"): since + timedelta(hours=2),
            ("b", "expires_at"): since - timedelta(hours=1),
            ("c", "event_at"): since + timedelta(hours=5),
            ("other", "valid_from"): since + timedelta(hours=1),
        }
        for (key, column), at in times.items():
            store_rows(
                store, f"UPDATE {ITEMS} SET {column} = ? WHERE key = ?", [d.ts_param(at), key]
            )
        under, params = d.under_namespace_sql("i.prefix", "u1.semantic")

        def next_time(after: datetime) -> datetime | None:
            sql, bound = d.next_time_sql(under, params, d.ts_param(after))
            return d.ts_value(store_rows(store, f"SELECT {sql}", bound)[0][0])

        assert next_time(since) == since + timedelta(hours=2)
        assert next_time(since + timedelta(hours=2)) == since + timedelta(hours=3)
        assert next_time(since + timedelta(hours=3)) == since + timedelta(hours=5)
        assert next_time(since + timedelta(hours=5)) is None
        # Before them all: b's expiry, then the first creation.
        assert next_time(since - timedelta(days=1)) == since - timedelta(hours=1)
        created = store_rows(store, f"SELECT min(created_at) FROM {ITEMS} WHERE key <> 'other'")
        assert next_time(since - timedelta(hours=1)) == d.ts_value(created[0][0])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_index_migration_upgrades_in_place(
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    url = backend_url(backend, tmp_path, request)
    with monkeypatch.context() as old:
        # Before the unused item indexes were dropped (20).
        as_release(old, 19, also=[ITEM_ACCESS])
        # Nor did PostgreSQL count changes then (a later migration); SQLite did.
        old.setattr(PostgresDialect, "counts_scope_changes", False)
        old.setattr(SqliteDialect, "counts_membership_changes", False)
        old.setattr(PostgresDialect, "counts_membership_changes", False)
        # Nor log changed items.
        old.setattr(SqliteDialect, "logs_item_changes", False)
        old.setattr(PostgresDialect, "logs_item_changes", False)
        write_terms_table(old)
        with TieredMemoryStore.from_url(url) as store:
            engine = MemoryEngine(store, settings=store.settings)
            for n in range(4):
                engine.add_episodic("agent-1", f"note {n}: the kettle is on shelf {n}")
            engine.add_episodic("agent-2", "a lone note")
            engine.add_semantic("agent-1", "the kettle is blue")
            before = _item_indexes(store, backend)
            waiting_before = engine.stats("agent-1")["unconsolidated_episodes"]
            listed_before = [i.key for i in store.search(AGENT_1, limit=20)]
    assert {f"{ITEMS}_prefix_updated", f"{ITEMS}_unconsolidated"} <= before
    assert waiting_before == 4

    with TieredMemoryStore.from_url(url) as store:
        store.setup()  # twice: nothing left to do
        engine = MemoryEngine(store, settings=store.settings)
        indexes = _item_indexes(store, backend)
        assert f"{ITEMS}_prefix_updated" not in indexes
        assert f"{ITEMS}_unconsolidated" not in indexes
        assert f"{ITEMS}_waiting_episodes" in indexes
        assert engine.stats("agent-1")["unconsolidated_episodes"] == 4
        assert engine.stats()["unconsolidated_episodes"] == 5
        assert [i.key for i in store.search(AGENT_1, limit=20)] == listed_before
        assert engine.consolidate("agent-1").episodes == 4
        assert engine.stats("agent-1")["unconsolidated_episodes"] == 0
        assert engine.stats("agent-2")["unconsolidated_episodes"] == 1
        if backend == "sqlite":
            conn = store.db.sync_io.conn
            plan = " / ".join(
                str(row[-1])
                for row in conn.execute(
                    f"EXPLAIN QUERY PLAN SELECT count(*) FROM {ITEMS} i WHERE i.scope = ?"
                    " AND i.kind = 'episodic' AND i.status = 'active'"
                    " AND i.consolidated_into_id IS NULL",
                    ["agent-2"],
                )
            )
            # Through the index of waiting episodes alone, not a scan of every episode.
            assert plan.startswith("SEARCH i USING"), plan
            assert f"INDEX {ITEMS}_waiting_episodes (" in plan, plan


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_stored_vectors_are_the_unit_vectors_in_float32(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = backend_url(backend, tmp_path, request)
    embeddings = KeywordEmbeddings()
    with TieredMemoryStore.from_url(
        url, index={"dims": embeddings.dims, "embed": embeddings, "fields": ["content"]}
    ) as store:
        store.batch([PutOp(NS, key, {"content": text}) for key, text in TEXTS.items()])
        column = "embedding" if backend == "sqlite" else "embedding::text"
        rows = dict(store_rows(store, f"SELECT item_id, {column} FROM {VECTORS}"))
    assert len(rows) == len(TEXTS)
    for key, text in TEXTS.items():
        raw = rows[item_id(NS, key)]
        if backend == "sqlite":
            stored = np.frombuffer(raw, dtype="<f4")
        else:
            stored = np.array([float(x) for x in raw.strip("[]").split(",")], dtype=np.float32)
        expected = normalize_rows([embeddings.embed_documents([text])[0]])[0].astype(np.float32)
        assert stored.tobytes() == expected.tobytes()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_items_terms_go_with_it(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = backend_url(backend, tmp_path, request)
    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        store.batch([PutOp(NS, key, {"content": text}) for key, text in TEXTS.items()])
        store.put(NS, "brief", {"content": "a short lived memory"}, ttl=1)
        kept = item_id(NS, "plain")
        store.batch([PutOp(NS, "accents", None), PutOp(NS, "scripts", None)])
        later = store.core.dialect.now() + timedelta(minutes=5)
        assert store.db.run(store.core.sweep_flow(now=later)) == 1
        left = {i for (i,) in store_rows(store, f"SELECT DISTINCT item_id FROM {TERMS}")}
        assert left == {kept, item_id(NS, "quotes")}
        if backend == "postgres":
            # Whatever deletes an item, its terms go with it: SQL of its own too (they
            # are a view of the item's row).
            store_rows(store, f"DELETE FROM {ITEMS} WHERE id = ?", [kept])
            left = {i for (i,) in store_rows(store, f"SELECT DISTINCT item_id FROM {TERMS}")}
            assert left == {item_id(NS, "quotes")}


def test_the_value_limit_counts_the_json_text_as_stored(tmp_path: Path) -> None:
    settings = Settings(max_content_chars=100)
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path}/m.db", settings=settings) as store:
        # {"content":"…","n":[1,2]}: 24 characters of compact JSON around the text.
        store.put(NS, "fits", {"content": "é" * 76, "n": [1, 2]})
        with pytest.raises(InvalidContentError, match="101 characters of JSON"):
            store.put(NS, "over", {"content": "é" * 77, "n": [1, 2]})
        (stored,) = store_rows(store, f"SELECT value FROM {ITEMS} WHERE key = 'fits'")[0]
        assert stored == '{"content":"' + "é" * 76 + '","n":[1,2]}'
        assert store.get(NS, "over") is None
