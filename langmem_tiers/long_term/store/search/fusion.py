"""Relevance fusion: dense cosine and BM25 scores of the candidates into one score in [0, 1].

The long-term store ranks a query's candidates by a hybrid score whose *semantic* part is
the relevance computed here. :func:`fuse` takes the candidates' dense scores (cosine
similarity of query and item vectors) and lexical scores (BM25 of
:mod:`langmem_tiers.long_term.store.search.bm25`) and returns one relevance per candidate.

How it combines them: each score map is standardised over the candidates (z-scores), so
neither the scale of the embedder's cosines nor the query-dependent scale of BM25
matters, and the two are summed with a weight. The sum is then mapped to [0, 1] with a
logistic curve, so a candidate as relevant as the average candidate gets 0.5 and the
clear winners approach 1. Standardising is what the LoCoMo measurements favoured over
reciprocal rank fusion (see ``benchmarks/locomo_retrieval.py``): ranks throw away how
*far* ahead the best lexical match is, and that distance is the most useful signal a
short conversational memory has.

A key missing from one map has no score there, and what that means differs by side:

* missing from ``lexical``: no query term occurs in the item, so its BM25 is 0;
* missing from ``dense``: the item was not among the dense index's candidates, so its
  cosine is at most the lowest one the index returned; it gets that lowest score.

Example::

    >>> rel = fuse({"a": 0.82, "b": 0.40, "c": 0.35}, {"a": 7.1, "c": 2.0})
    >>> max(rel, key=rel.get), all(0.0 <= v <= 1.0 for v in rel.values())
    ('a', True)
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = [
    "DENSE_WEIGHT",
    "LOGISTIC_SCALE",
    "NEIGHBOUR_WEIGHT",
    "dense_weight_for",
    "fuse",
    "smooth_neighbours",
]

K = TypeVar("K", bound=Hashable)

#: Weight of the dense z-score relative to the lexical one (which has weight 1), for a
#: learned embedding model. Measured on LoCoMo with all-MiniLM-L6-v2: 0.7-1.0 is the flat
#: optimum both with full score maps and with candidate pools; above it pools suffer.
DENSE_WEIGHT = 1.0
#: How far :func:`smooth_neighbours` moves an item towards a more relevant neighbour.
#: Chosen on LoCoMo's tuning conversations (0-4, ``benchmarks/locomo_retrieval.py``): 0.3-0.9
#: all helped with both embedders, 0.7 most with each; the held-out conversations agreed.
NEIGHBOUR_WEIGHT = 0.7
#: Steepness of the logistic map from the fused z-score to [0, 1].
LOGISTIC_SCALE = 1.0


def dense_weight_for(embeddings: object) -> float:
    """The dense weight to fuse with for ``embeddings``.

    An embedder may declare how much its cosine should count against BM25 with a
    ``fusion_dense_weight`` attribute; the offline hashing embedder does (its cosine is
    mostly lexical overlap again, so it counts for little). Any other embedder gets
    :data:`DENSE_WEIGHT`.

    Example::

        >>> dense_weight_for(object())
        1.0
    """
    weight = getattr(embeddings, "fusion_dense_weight", DENSE_WEIGHT)
    return float(weight) if isinstance(weight, (int, float)) and weight >= 0 else DENSE_WEIGHT


def _standardise(values: list[float]) -> list[float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    if var <= 1e-24:
        return [0.0] * n
    std = math.sqrt(var)
    return [(v - mean) / std for v in values]


def _logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def fuse(
    dense: Mapping[K, float],
    lexical: Mapping[K, float],
    *,
    weight: float = DENSE_WEIGHT,
    scale: float = LOGISTIC_SCALE,
) -> dict[K, float]:
    """Relevance in [0, 1] for every key of ``dense`` or ``lexical``.

    Args:
        dense: Cosine similarity of each candidate (any real scale: only its spread over
            the candidates matters).
        lexical: BM25 score of each candidate (>= 0); a missing key means 0.
        weight: Weight of the dense side relative to the lexical side (``0`` ranks by
            BM25 alone, a large value by cosine alone).
        scale: Steepness of the logistic map to [0, 1].

    Returns:
        ``{key: relevance}`` over the union of keys. Equal inputs give equal outputs, and
        raising one candidate's score on either side never lowers its relevance. When a
        side has the same score for every candidate (or no candidate) it does not move
        the ranking, and when both are flat every candidate gets 0.5.

    Example::

        >>> fuse({}, {})
        {}
        >>> fuse({"only": 0.9}, {})
        {'only': 0.5}
    """
    keys = list(dict.fromkeys([*dense, *lexical]))
    if not keys:
        return {}
    floor = min(dense.values()) if dense else 0.0
    dense_z = _standardise([float(dense.get(k, floor)) for k in keys])
    lexical_z = _standardise([float(lexical.get(k, 0.0)) for k in keys])
    total = 1.0 + weight
    return {
        k: _logistic(scale * (lz + weight * dz) / total)
        for k, dz, lz in zip(keys, dense_z, lexical_z, strict=True)
    }


def smooth_neighbours(
    relevance: Mapping[K, float],
    neighbours: Mapping[K, Sequence[K]],
    *,
    weight: float = NEIGHBOUR_WEIGHT,
) -> dict[K, float]:
    """Lift items whose conversational neighbours are more relevant than they are.

    In a conversation the answer to a question is often the turn next to the one that
    matches it ("What did you make?" / "A bowl!"). Each item moves ``weight`` of the way
    towards its best neighbour's relevance when that is higher::

        r' = r + weight * max(0, max(r_neighbour) - r)

    so an item never passes the neighbour that lifts it, the best match keeps its place,
    and values stay in [0, 1]. (Mixing in the neighbour's score unconditionally raised
    recall as much but let the neighbours of the best match overtake it: MRR fell.)

    ``neighbours`` maps an item to the items near it (before and after) in the same session
    or thread (the store decides; items of other sessions are never neighbours). A
    neighbour missing from ``relevance`` (not a candidate) counts as 0; an item without
    an entry keeps its relevance.

    Example::

        >>> rel = {"q": 0.9, "answer": 0.3, "other": 0.35}
        >>> out = smooth_neighbours(rel, {"answer": ["q"], "q": ["answer"]})
        >>> out["q"], out["answer"] > out["other"]
        (0.9, True)
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"smooth_neighbours weight must be within [0, 1], got {weight!r}.")
    out = dict(relevance)
    for key, near in neighbours.items():
        if key in relevance:
            own = relevance[key]
            best = max((relevance.get(n, 0.0) for n in near), default=0.0)
            out[key] = own + weight * max(0.0, best - own)
    return out
