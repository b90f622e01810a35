"""The engine's async twins: on an async PostgreSQL pool, and on SQLite through threads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.engine.engine import MemoryEngine

from .fakes import DIMS, WordEmbeddings


@pytest.mark.parametrize("qdrant", [None, ":memory:"])
async def test_engine_on_an_async_pool(postgres_schemas: Callable[[], str], qdrant) -> None:
    index = {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["content"]}
    async with TieredMemoryStore.afrom_url(postgres_schemas(), index=index, qdrant=qdrant) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        old = (await engine.aadd_semantic("alice", "Alice lives in Berlin")).memory
        new = await engine.aadd_semantic("alice", "Alice lives in Paris")
        assert new.action == "superseded"
        assert (await engine.aget("alice", old.id)).status == "superseded"
        await engine.aupdate_semantic("alice", new.memory.id, "Alice lives in Paris, Belleville")
        await engine.aadd_episodic("alice", "Alice asked about trains", session_id="s1")
        assert (await engine.aconsolidate("alice")).episodes == 1
        await engine.aset_procedural("alice", "tone", "warm")
        await engine.adecay("alice", now=datetime.now(timezone.utc) + timedelta(days=200))
        hits = await engine.aretrieve("alice", "Paris", include_inactive=True)
        assert new.memory.id in {h.id for h in hits}
        now = datetime.now(timezone.utc) + timedelta(seconds=1)
        replayed = [m.state() for m in await engine.areplay("alice", now)]
        assert replayed == [m.state() for m in await engine.astate("alice")]
        with pytest.raises(ConfigurationError, match="async"):
            engine.get("alice", old.id)  # sync calls cannot run on the pool's own loop


async def test_on_sqlite_an_operations_database_steps_take_one_thread_hop(tmp_path) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    class CountingExecutor(ThreadPoolExecutor):
        submitted = 0

        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
            CountingExecutor.submitted += 1
            return super().submit(fn, *args, **kwargs)

    index = {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["content"]}
    async with TieredMemoryStore.afrom_url(f"sqlite:///{tmp_path}/m.db", index=index) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        await engine.aadd_episodic("alice", "Alice asked about trains to Paris", session_id="s1")
        asyncio.get_running_loop().set_default_executor(CountingExecutor(max_workers=2))

        added = await engine.aadd_episodic("alice", "Alice booked the night train", session_id="s1")
        hops_of_an_add = CountingExecutor.submitted
        hits = await engine.aretrieve("alice", "night train")
        hops = CountingExecutor.submitted

    assert hits[0].id == added.id
    # An add reads, checks and writes in several flows, a retrieval searches then reads
    # the rows: each in one worker thread, not one per flow.
    assert (hops_of_an_add, hops) == (1, 2)
