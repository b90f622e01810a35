"""The engine on an async PostgreSQL pool: the same operations through awaitable I/O."""

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
