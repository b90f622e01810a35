"""A database written by an earlier release opens, upgrades in place and answers every kind
of search exactly as a new database holding the same memories does.

The earlier release is the schema of its time (the migrations it had) written by the writer
of its time (``old_schema``): terms in a table of their own, no change counters, no change
log, no postings by namespace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect

from .fakes import default_index
from .old_schema import (
    ITEM_ACCESS,
    TERMS_KEYED,
    as_release,
    write_terms_table,
    write_without_packed_terms,
)

NS = ("u1", "semantic")
TEXTS = [f"note {n}: apple orchard visit number {n} with friends" for n in range(10)]


def _open(url: str, *, cache: bool = True) -> Any:
    settings = Settings.from_env(scope_cache_items=200_000 if cache else 0, environ={}, dotenv=None)
    return TieredMemoryStore.from_url(
        url, index=default_index(fields=("content",)), settings=settings
    )


def _searches(store: Any) -> dict[str, set[str]]:
    """Every kind of search, by the keys it returns."""
    return {
        "query": {h.key for h in store.search(NS, query="apple orchard", limit=50)},
        "one term": {h.key for h in store.search(NS, query="friends", limit=50)},
        "no query": {h.key for h in store.search(NS, limit=50)},
        "filter": {h.key for h in store.search(NS, query="apple", filter={"n": 3}, limit=50)},
        "prefix": {h.key for h in store.search(NS[:1], query="apple", limit=50)},
    }


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path}/memory.db"


def test_a_database_from_before_the_cache_answers_after_the_upgrade_and_a_put(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old:
        # The release before the namespace cache (and its counters).
        as_release(old, TERMS_KEYED, also=[ITEM_ACCESS])
        for dialect in (SqliteDialect, PostgresDialect):
            old.setattr(dialect, "counts_scope_changes", False)
            old.setattr(dialect, "counts_membership_changes", False)
            old.setattr(dialect, "logs_item_changes", False)
        write_without_packed_terms(old)
        write_terms_table(old)
        with _open(url) as before:
            for n, text in enumerate(TEXTS):
                before.put(NS, f"m{n}", {"content": text, "n": n})

    with _open(f"sqlite:///{tmp_path}/reference.db") as reference:
        for n, text in enumerate(TEXTS):
            reference.put(NS, f"m{n}", {"content": text, "n": n})
        expected = _searches(reference)
        reference.put(NS, "m10", {"content": "apple orchard again, with friends", "n": 10})
        expected_after_put = _searches(reference)
    assert len(expected["query"]) == 10
    assert len(expected_after_put["query"]) == 11

    with _open(url) as reader:
        assert _searches(reader) == expected
    # A process whose first act is a put, then searches; another that only reads.
    with _open(url) as store, _open(url) as other, _open(url, cache=False) as plain:
        store.put(NS, "m10", {"content": "apple orchard again, with friends", "n": 10})
        for searcher in (store, other, plain):
            assert _searches(searcher) == expected_after_put
