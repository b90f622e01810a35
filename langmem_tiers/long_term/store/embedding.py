"""Embedding calls as the store makes them: one call per batch, every vector checked."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from langmem_tiers.errors import DimensionMismatchError, EmbeddingError, ValidationError
from langmem_tiers.sql.flow import Embed, Flow

__all__ = ["embed_flow", "embed_matrix_flow"]


def embed_flow(texts: Sequence[str], *, dims: int, query: bool) -> Flow[list[list[float]]]:
    """Embed ``texts``; :class:`EmbeddingError` unless every vector is ``dims`` finite numbers.

    Whatever the embedder does wrong (raises, returns the wrong count, type, length, NaN),
    the caller gets one clear error before anything is written.
    """
    matrix = yield from embed_matrix_flow(texts, dims=dims, query=query)
    return matrix.tolist()  # type: ignore[no-any-return]


def embed_matrix_flow(texts: Sequence[str], *, dims: int, query: bool) -> Flow[np.ndarray]:
    """:func:`embed_flow`'s vectors as the rows of one float64 array, converted once: what
    a batch's puts normalise and store (lists of floats would be converted again there)."""
    if not texts:
        return np.zeros((0, dims), dtype=np.float64)
    try:
        vectors = yield Embed(list(texts), query=query)
    except ValidationError:
        raise
    except Exception as err:
        raise EmbeddingError(
            f"the embedder failed on {len(texts)} text(s): {type(err).__name__}: {err}. "
            "Nothing was stored."
        ) from err
    try:
        vectors = [_floats(v) for v in vectors]
    except TypeError as err:
        raise EmbeddingError(
            f"the embedder returned something that is not a list of number vectors: {err}."
        ) from err
    if len(vectors) != len(texts):
        raise EmbeddingError(
            f"the embedder returned {len(vectors)} vectors for {len(texts)} texts."
        )
    for vector in vectors:
        if len(vector) != dims:
            raise DimensionMismatchError(
                f"the embedder returned a {len(vector)}-dimensional vector, but the index "
                f"has dims={dims}; set index={{'dims': {len(vector)}, ...}} to match "
                "the embedder."
            )
    matrix = np.asarray(vectors, dtype=np.float64).reshape(len(vectors), dims)
    if not np.isfinite(matrix).all():
        raise EmbeddingError("the embedder returned a vector with NaN or infinity.")
    return matrix


def _floats(vector: Any) -> Sequence[float]:
    """``vector`` as floats; TypeError when an element is not a number.

    A list of floats, what embedders return, is checked by type alone (and not copied:
    the array made of it is the copy): the per-element numeric check costs more than the
    rest of a put.
    """
    if type(vector) is list and set(map(type, vector)) <= {float}:
        return vector
    return [_number(x) for x in vector]


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{x!r} is not a number")
    return float(x)
