"""``TieredMemoryStore.afrom_url``: entered with ``async with`` or awaited, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.store.guard import require_store

NS = namespace_for("alice", "semantic")


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    schemas: Callable[[], str] = request.getfixturevalue("postgres_schemas")
    return schemas()


async def test_async_with_opens_and_closes(url: str) -> None:
    async with TieredMemoryStore.afrom_url(url) as store:
        await store.aput(NS, "k", {"content": "Alice prefers green tea"})
        assert (await store.aget(NS, "k")) is not None
    assert store._owned == []  # everything it opened is closed


async def test_await_gives_an_open_store_the_caller_closes(url: str) -> None:
    store = await TieredMemoryStore.afrom_url(url)
    try:
        await store.aput(NS, "k", {"content": "Alice prefers green tea"})
        hits = await store.asearch(NS, query="what does Alice drink?")
        assert [h.key for h in hits] == ["k"]
    finally:
        await store.aclose()
    assert store._owned == []
    # The data is in the database, not in the object: a second store reads it.
    async with TieredMemoryStore.afrom_conn_string(url) as again:
        item = await again.aget(NS, "k")
    assert item is not None
    assert item.value["content"] == "Alice prefers green tea"


async def test_each_use_opens_its_own_store(tmp_path: Path) -> None:
    opener = TieredMemoryStore.afrom_url(f"sqlite:///{tmp_path / 'store.db'}")
    async with opener as first, opener as second:
        assert first is not second
        await first.aput(NS, "k", {"content": "x"})
        assert (await second.aget(NS, "k")) is not None


def test_an_opener_passed_as_the_store_says_how_to_open_it() -> None:
    opener = TieredMemoryStore.afrom_url("sqlite:///:memory:")
    with pytest.raises(ConfigurationError, match=r"await TieredMemoryStore\.afrom_url"):
        require_store(opener, where="ShortTermMemory")
