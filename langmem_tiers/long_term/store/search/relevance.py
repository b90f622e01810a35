"""An absolute relevance in [0, 1]: the same value means the same match for 1 hit or 1,000.

:func:`~langmem_tiers.long_term.store.search.fusion.fuse` standardises scores *within the
candidates*, so a lone hit always gets 0.5 and a query that matches nothing still spreads its
candidates around 0.5: the value says where a memory stands among the others, not whether it
matches. This module measures each side against quantities that do not depend on the other
candidates:

* **lexical**: a memory's BM25 divided by the query's *idf mass* ``sum_t w(t) * idf(t)``,
  which is what a memory of average length containing every query term once scores. The
  ratio is the share of the query's information the memory matches (above 1 with repeats and
  feedback terms), mapped to [0, 1) by ``1 - exp(-LEXICAL_RATE * ratio)``: every term matched
  gives 0.86, half of the query's idf mass 0.63, nothing 0.
* **dense**: the cosine mapped by a fixed logistic curve ``1 / (1 + exp(-(cos - mid) / width))``.
  ``mid`` is the cosine at which a memory is as likely relevant as not; an embedder declares
  its own with a ``relevance_cosine_curve = (mid, width)`` attribute (the offline hashing
  embedder does), others get :data:`DEFAULT_COSINE_CURVE`, read from sentence-embedding
  models' usual scale (unrelated sentences 0-0.2, related 0.4 and up).

The relevance is their weighted mean, the dense side weighted as in fusion (the embedder's
``fusion_dense_weight``). Ranking by it is monotone in BM25 for a fixed cosine and in the
cosine for a fixed BM25, like fusion; only the exchange rate between the two is fixed
instead of re-estimated per query.

Example::

    >>> rel = absolute_relevance({"a": 0.62, "b": 0.05}, {"a": 7.1}, idf_mass=6.0)
    >>> round(rel["a"], 2), round(rel["b"], 2)
    (0.94, 0.01)
    >>> absolute_relevance({"lone": 0.0}, {}, idf_mass=3.0)["lone"] < 0.05
    True
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

from langmem_tiers.long_term.store.search.fusion import DENSE_WEIGHT

__all__ = [
    "DEFAULT_COSINE_CURVE",
    "LEXICAL_RATE",
    "absolute_relevance",
    "cosine_curve_for",
    "dense_relevance",
    "idf_mass",
    "lexical_relevance",
]

K = TypeVar("K", bound=Hashable)

#: ``(mid, width)`` of the cosine curve for embedders that declare none.
DEFAULT_COSINE_CURVE = (0.35, 0.08)
#: How fast the lexical relevance saturates with the share of the query matched.
LEXICAL_RATE = 2.0


def cosine_curve_for(embeddings: object) -> tuple[float, float]:
    """The ``(mid, width)`` cosine curve of ``embeddings`` (its attribute, or the default).

    Example::

        >>> cosine_curve_for(object())
        (0.35, 0.08)
    """
    curve = getattr(embeddings, "relevance_cosine_curve", None)
    if (
        isinstance(curve, tuple)
        and len(curve) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in curve)
        and curve[1] > 0
    ):
        return float(curve[0]), float(curve[1])
    return DEFAULT_COSINE_CURVE


def idf_mass(weights: Mapping[str, float], doc_frequency: Mapping[str, int], n_docs: int) -> float:
    """``sum_t w(t) * idf(t)`` over the query's terms, with BM25's idf within ``n_docs``.

    A term no memory has counts with the idf of a term found once less than never (df 0):
    a query half made of unknown words can match at most about half.

    Example::

        >>> round(idf_mass({"jazz": 1.0}, {"jazz": 1}, 1), 3)
        0.288
    """
    total = 0.0
    for term, weight in weights.items():
        df = min(max(0, doc_frequency.get(term, 0)), n_docs)
        total += weight * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    return total


def lexical_relevance(score: float, mass: float) -> float:
    """``1 - exp(-LEXICAL_RATE * score / mass)``, 0 when nothing can match."""
    if mass <= 0 or score <= 0:
        return 0.0
    return 1.0 - math.exp(-LEXICAL_RATE * score / mass)


def dense_relevance(cosine: float, curve: tuple[float, float] = DEFAULT_COSINE_CURVE) -> float:
    """The cosine through the logistic curve ``(mid, width)``."""
    mid, width = curve
    x = (cosine - mid) / width
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def absolute_relevance(
    dense: Mapping[K, float],
    lexical: Mapping[K, float],
    *,
    idf_mass: float,
    weight: float = DENSE_WEIGHT,
    curve: tuple[float, float] = DEFAULT_COSINE_CURVE,
) -> dict[K, float]:
    """Relevance in [0, 1] of every key of ``dense`` or ``lexical``, from absolute scales.

    ``dense`` are cosines (a key missing there has no vector: its dense side is 0),
    ``lexical`` BM25 scores (missing: 0), ``idf_mass`` the query's (:func:`idf_mass`),
    ``weight`` the dense side's weight against the lexical side's 1.
    """
    total = 1.0 + weight
    mid, width = curve
    exp = math.exp
    out: dict[K, float] = {}
    # lexical_relevance(), dense_relevance() and the clamp written out, the same arithmetic
    # in the same order (the same values to the last bit): a search relates some fifty
    # candidates, and the calls cost more than the arithmetic.
    for key in dict.fromkeys([*dense, *lexical]):
        score = float(lexical.get(key, 0.0))
        lex = 0.0 if idf_mass <= 0 or score <= 0 else 1.0 - exp(-LEXICAL_RATE * score / idf_mass)
        if key in dense:
            x = (float(dense[key]) - mid) / width
            if x >= 0:
                den = 1.0 / (1.0 + exp(-x))
            else:
                e = exp(x)
                den = e / (1.0 + e)
        else:
            den = 0.0
        value = (lex + weight * den) / total
        out[key] = 1.0 if value >= 1.0 else value if value > 0.0 else 0.0
    return out
