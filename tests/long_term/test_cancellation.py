"""A cancelled async call on a store whose I/O blocks (SQLite, sync psycopg) stops where
it is: what it had not written yet is never written, and the store goes on serving.

The flow runs in a worker thread; a cancellation waits for the request in progress and
is thrown into the flow at its next one, so the write's transaction never starts (or
rolls back), instead of the thread finishing the write after the caller was told it was
cancelled."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.embeddings import OfflineEmbeddings

NS = namespace_for("alice", "semantic")
DIMS = 64


class GatedEmbeddings(Embeddings):
    """Deterministic embeddings whose document calls wait for a gate once armed."""

    def __init__(self) -> None:
        self.inner = OfflineEmbeddings(dims=DIMS)
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.armed = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.armed:
            self.entered.set()
            self.gate.wait(10)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database whose connection blocks: a SQLite file, or PostgreSQL opened sync."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    schemas: Callable[[], str] = request.getfixturevalue("postgres_schemas")
    return schemas()


async def test_a_cancelled_batch_is_not_written_after_the_cancellation(url: str) -> None:
    embeddings = GatedEmbeddings()
    index = {"dims": DIMS, "embed": embeddings, "fields": ["content"]}
    with TieredMemoryStore.from_url(url, index=index) as store:  # type: ignore[arg-type]
        await _cancel_a_batch(store, embeddings)


async def _cancel_a_batch(store: TieredMemoryStore, embeddings: GatedEmbeddings) -> None:
    await store.aput(NS, "before", {"content": "Alice drinks green tea"})
    embeddings.armed = True
    ops = [PutOp(NS, f"k{i}", {"content": f"Alice visited city number {i}"}) for i in range(50)]
    task = asyncio.ensure_future(store.abatch(ops))
    # The batch is in its embedder call, in the worker thread.
    assert await asyncio.to_thread(embeddings.entered.wait, 10)
    task.cancel()
    await asyncio.sleep(0.05)
    embeddings.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    embeddings.armed = False
    # Nothing of the batch, now or later; the earlier memory and the store are intact.
    await asyncio.sleep(0.2)
    assert await store.aget(NS, "k0") is None
    assert [i.key for i in await store.asearch(NS, limit=100)] == ["before"]
    await store.aput(NS, "after", {"content": "Alice moved to Porto"})
    assert {i.key for i in await store.asearch(NS, limit=100)} == {"before", "after"}
