"""Embedding calls as the store makes them: one call per batch, every vector checked."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from langmem_tiers.errors import DimensionMismatchError, EmbeddingError, ValidationError
from langmem_tiers.sql.flow import Embed, Flow

__all__ = ["embed_flow"]


def embed_flow(texts: Sequence[str], *, dims: int, query: bool) -> Flow[list[list[float]]]:
    """Embed ``texts``; :class:`EmbeddingError` unless every vector is ``dims`` finite numbers.

    Whatever the embedder does wrong (raises, returns the wrong count, type, length, NaN),
    the caller gets one clear error before anything is written.
    """
    if not texts:
        return []
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
    if vectors and not np.isfinite(np.asarray(vectors, dtype=np.float64)).all():
        raise EmbeddingError("the embedder returned a vector with NaN or infinity.")
    return vectors


def _floats(vector: Any) -> list[float]:
    """``vector`` as a new list of floats; TypeError when an element is not a number.

    A list of floats, what embedders return, is checked by type alone: the per-element
    numeric check costs more than the rest of a put.
    """
    if type(vector) is list and set(map(type, vector)) <= {float}:
        return list(vector)
    return [_number(x) for x in vector]


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{x!r} is not a number")
    return float(x)
