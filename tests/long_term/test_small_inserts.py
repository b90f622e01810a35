"""On PostgreSQL a write of a few rows goes as INSERTs, more as one COPY: both store the
same values (the text of a float4 vector reads back as the same float4s)."""

from __future__ import annotations

import numpy as np
import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.sql.flow import BULK_MIN_ROWS

NAMESPACE = ("maya", "semantic")


def _stored_vectors(conn: psycopg.Connection, keys: list[str]) -> dict[str, np.ndarray]:
    rows = conn.execute(
        "SELECT i.key, v.embedding::text FROM lmt_vectors v JOIN lmt_items i ON i.id = v.item_id"
        " WHERE i.key = ANY(%s)",
        [keys],
    ).fetchall()
    return {key: np.array(text.strip("[]").split(","), dtype=np.float32) for key, text in rows}


def test_a_few_rows_and_a_copy_store_the_same_values(postgres_url: str) -> None:
    embed = DeterministicFakeEmbedding(size=64)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        store = TieredMemoryStore(conn, index={"dims": 64, "embed": embed})
        store.setup()
        value = {"content": "Maya moved to Lisbon in March", "confidence": 0.75}
        store.put(NAMESPACE, "alone", value)  # one row per table: INSERTs
        batch = [PutOp(NAMESPACE, f"copied-{n}", value) for n in range(BULK_MIN_ROWS)]
        store.batch(batch)  # enough rows for a COPY
        vectors = _stored_vectors(conn, ["alone", "copied-0"])
        assert vectors["alone"].tobytes() == vectors["copied-0"].tobytes()
        expected = np.asarray(embed.embed_documents([value["content"]])[0], dtype=np.float32)
        expected /= np.linalg.norm(expected)
        assert np.allclose(vectors["alone"], expected, atol=1e-6)
        alone, copied = store.get(NAMESPACE, "alone"), store.get(NAMESPACE, "copied-0")
        assert alone is not None
        assert copied is not None
        assert alone.value == copied.value == value
        hits = store.search(NAMESPACE, query=value["content"], limit=BULK_MIN_ROWS + 1)
        assert {hit.key for hit in hits} == {"alone", *(op.key for op in batch)}
