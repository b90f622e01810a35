"""The vectors a namespace's cache entry keeps: each layout answers the plain product."""

from __future__ import annotations

import numpy as np
import pytest

from langmem_tiers.embeddings import OfflineEmbeddings
from langmem_tiers.long_term.store.vectors import UnitVectors, normalize_rows, similarities


def _sparse_rows(rng: np.random.Generator, n: int, dims: int, nonzero: int) -> np.ndarray:
    rows = np.zeros((n, dims))
    for row in rows:
        row[rng.choice(dims, size=nonzero, replace=False)] = rng.normal(size=nonzero)
    return normalize_rows(rows).astype(np.float32)


def _dense_rows(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    return normalize_rows(rng.normal(size=(n, dims))).astype(np.float32)


def test_the_layout_follows_the_share_of_zeros() -> None:
    rng = np.random.default_rng(1)
    assert UnitVectors(_sparse_rows(rng, 50, 64, 8)).by_dimension
    assert not UnitVectors(_dense_rows(rng, 50, 64)).by_dimension
    texts = ["We went camping with the kids last weekend.", "My sister plays the violin."]
    offline = np.asarray(OfflineEmbeddings().embed_documents(texts), dtype=np.float32)
    assert UnitVectors(offline).by_dimension
    assert not UnitVectors(np.zeros((0, 0), dtype=np.float32)).by_dimension


@pytest.mark.parametrize("data", ["sparse", "dense"])
@pytest.mark.parametrize("query", ["sparse", "dense"])
def test_each_layout_answers_the_plain_product(data: str, query: str) -> None:
    rng = np.random.default_rng(7)
    rows = _sparse_rows(rng, 300, 128, 12) if data == "sparse" else _dense_rows(rng, 300, 128)
    vector = _sparse_rows(rng, 1, 128, 5)[0] if query == "sparse" else _dense_rows(rng, 1, 128)[0]
    expected = similarities(rows, vector.tolist())
    for by_dimension in (True, False):
        found = UnitVectors(rows, by_dimension=by_dimension).similarities(vector.tolist())
        assert found.shape == expected.shape
        assert found == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("by_dimension", [True, False])
def test_kept_and_added_keeps_the_order_and_the_layout(by_dimension: bool) -> None:
    rng = np.random.default_rng(3)
    rows = _sparse_rows(rng, 6, 32, 4)
    added = _sparse_rows(rng, 2, 32, 4)
    vectors = UnitVectors(rows, by_dimension=by_dimension)
    kept = np.array([0, 2, 5])
    after = vectors.kept_and_added(kept, added)
    assert after.by_dimension is by_dimension
    assert len(after) == 5
    expected = [rows[0], rows[2], rows[5], added[0], added[1]]
    assert all(np.array_equal(after.row(i), row) for i, row in enumerate(expected))
    emptied = vectors.kept_and_added(np.zeros(0, dtype=np.int64), np.zeros((0, 0), np.float32))
    assert len(emptied) == 0
    assert emptied.similarities(rows[0].tolist()).shape == (0,)
    # An entry that had no vectors takes the layout of the first it is given.
    first = UnitVectors(np.zeros((0, 0), dtype=np.float32)).kept_and_added(kept[:0], rows)
    assert len(first) == 6
    assert first.by_dimension
