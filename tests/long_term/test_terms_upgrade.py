"""A database made before the terms table was re-keyed upgrades in place: its terms are kept
(a view of the items' packed terms now, written once), and searches answer as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.sql.dialect import TERMS, PostgresDialect, SqliteDialect
from langmem_tiers.sql.flow import Sql, Transaction

from .fakes import default_index
from .old_schema import (
    ITEM_ACCESS,
    TERMS_KEYED,
    as_release,
    write_terms_table,
    write_without_packed_terms,
)

NS = ("u1", "semantic")
TEXTS = [
    "apple pie with cinnamon for dessert",
    "the car engine needs new oil",
    "jazz music in paris on friday",
    "green tea or black coffee in the morning",
    "apple and banana are my favourite fruit",
]


def _query(store: Any, sql: str) -> list[tuple[Any, ...]]:
    def flow() -> Any:
        return (yield Sql(sql))

    def tx() -> Any:
        return (yield Transaction(flow()))

    return list(store.db.run(tx()))


def _answers(store: Any) -> dict[str, list[str]]:
    return {
        q: [h.key for h in store.search(NS, query=q, limit=3)]
        for q in ("apple", "engine oil", "morning coffee")
    }


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_terms_survive_the_upgrade_and_searches_agree(
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path}/memory.db"
    )
    with monkeypatch.context() as old:
        # The release before the terms table was re-keyed.
        as_release(old, TERMS_KEYED - 1, also=[ITEM_ACCESS])
        # No change counters yet on either backend (PostgreSQL got them later still).
        old.setattr(SqliteDialect, "counts_scope_changes", False)
        old.setattr(PostgresDialect, "counts_scope_changes", False)
        # The writer of that time: no packed terms beside the item.
        write_without_packed_terms(old)
        write_terms_table(old)
        with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
            for i, text in enumerate(TEXTS):
                store.put(NS, f"m{i}", {"content": text})
            terms_before = sorted(_query(store, f"SELECT item_id, term, tf FROM {TERMS}"))
    assert terms_before
    # What a database of this release answers for the same memories.
    with TieredMemoryStore.from_url(
        f"sqlite:///{tmp_path}/reference.db", index=default_index(fields=("content",))
    ) as reference:
        for i, text in enumerate(TEXTS):
            reference.put(NS, f"m{i}", {"content": text})
        before = _answers(reference)
    assert all(before.values())

    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        assert sorted(_query(store, f"SELECT item_id, term, tf FROM {TERMS}")) == terms_before
        assert _answers(store) == before
        # The rows are now a view of the items' packed terms: nothing to write twice.
        if backend == "sqlite":
            kinds = _query(store, f"SELECT type FROM sqlite_master WHERE name = '{TERMS}'")
            assert kinds == [("view",)]
        else:
            kinds = _query(
                store,
                "SELECT relkind FROM pg_class"
                f" WHERE relname = '{TERMS}' AND relnamespace = current_schema()::regnamespace",
            )
            assert kinds == [("v",)]
        # A write after the upgrade goes to the new key.
        store.put(NS, "m9", {"content": "apple crumble"})
        assert "m9" in [h.key for h in store.search(NS, query="apple crumble", limit=3)]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_writer_of_an_earlier_release_keeps_working_after_the_upgrade(
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """A process not yet upgraded still writes and deletes terms rows, which the view
    takes and ignores; its puts and the packed terms it writes stay searchable."""
    url = (
        request.getfixturevalue("postgres_url")
        if backend == "postgres"
        else f"sqlite:///{tmp_path}/memory.db"
    )
    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        store.put(NS, "m0", {"content": TEXTS[0]})
    with monkeypatch.context() as old:
        write_terms_table(old)
        with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
            for i, text in enumerate(TEXTS[1:], start=1):
                store.put(NS, f"m{i}", {"content": text})
            store.put(NS, "m1", {"content": "the car engine needs new tyres"})  # a rewrite
    with TieredMemoryStore.from_url(url, index=default_index(fields=("content",))) as store:
        rows = _query(store, f"SELECT item_id, term, tf FROM {TERMS}")
        assert {t for _, t, _ in rows} >= {"tyre", "appl", "coffe"}
        assert "oil" not in {t for _, t, _ in rows}
        assert [h.key for h in store.search(NS, query="engine tyres", limit=1)] == ["m1"]
