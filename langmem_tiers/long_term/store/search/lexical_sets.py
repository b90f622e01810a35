"""What BM25 with feedback reads a search's filtered set through: one interface
(:class:`LexicalSet`), answered by the database (:class:`SqlSet`, postings read by SQL) or by
a namespace the scope cache holds (:class:`CachedSet`, no I/O), with the same floats.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol

from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.scope_data import ArrayScores, Members, ScopeData
from langmem_tiers.sql.flow import Flow

__all__ = ["CachedSet", "LexicalSet", "Postings", "SqlSet", "best_first", "scores_of", "top_scores"]


class Postings(NamedTuple):
    """Term frequencies of some terms within a search's filtered set, and the set's size."""

    n_docs: int
    avgdl: float
    tf: dict[str, Mapping[str, int]]  # term -> item id -> frequency
    doc_len: dict[str, int]  # item id -> number of terms
    members: set[str] | None = None  # every item of the set, when asked for
    #: Cosine similarity of every item of the set to the query vector, when the index
    #: could answer it in the same statement (None: not asked, or the set was too large).
    similarity: dict[str, float] | None = None


def best_first(scored: tuple[str, float]) -> tuple[float, str]:
    """Sort key of ``(item, score)``: highest score first, ties by id."""
    return -scored[1], scored[0]


class LexicalSet(Protocol):
    """What BM25 with feedback reads of a search's filtered set."""

    n_docs: int  # items with terms
    avgdl: float
    members: set[str] | None  # every item of the set, when read
    similarity: dict[str, float] | None  # cosine of every item, when read with the set

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many items of the set hold each term (terms read so far)."""
        ...

    def score(self, weights: Mapping[str, float]) -> Mapping[str, float]:
        """BM25 of the set's items that hold a term of ``weights``."""
        ...

    def feedback_flow(self, items: Sequence[str]) -> Flow[list[dict[str, int]]]:
        """The term frequencies of ``items`` (members of the set); afterwards the set
        knows the postings of all their terms."""
        ...


class SqlSet:
    """The filtered set as SQL reads it: postings of the terms asked for so far."""

    def __init__(
        self, first: Postings, read_feedback: Callable[[Sequence[str]], Flow[Postings]]
    ) -> None:
        self.n_docs, self.avgdl = first.n_docs, first.avgdl
        self.members, self.similarity = first.members, first.similarity
        self.tf: dict[str, Mapping[str, int]] = dict(first.tf)
        self.doc_len = first.doc_len
        self._read_feedback = read_feedback

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        return {term: len(self.tf.get(term, ())) for term in terms}

    def score(self, weights: Mapping[str, float]) -> dict[str, float]:
        return bm25.score_postings(weights, self.n_docs, self.avgdl, self.tf, self.doc_len)

    def feedback_flow(self, items: Sequence[str]) -> Flow[list[dict[str, int]]]:
        more = yield from self._read_feedback(items)
        self.tf.update(more.tf)
        self.doc_len = {**self.doc_len, **more.doc_len}
        tfs: dict[str, dict[str, int]] = {i: {} for i in items}
        for term, by_item in self.tf.items():
            for item in items:
                if item in by_item:
                    tfs[item][term] = by_item[item]
        return [tfs[i] for i in items]


class CachedSet:
    """The filtered set answered from a cached namespace: no I/O."""

    def __init__(self, data: ScopeData, members: Members) -> None:
        self.data, self._members = data, members
        # The cache scores dense itself: neither is read.
        self.members: set[str] | None = None
        self.similarity: dict[str, float] | None = None
        self.n_docs, self.avgdl = data.statistics(members)

    def document_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        return self.data.document_frequencies(terms, self._members)

    def score(self, weights: Mapping[str, float]) -> ArrayScores:
        return self.data.bm25(weights, self.n_docs, self.avgdl, self._members)

    def feedback_flow(self, items: Sequence[str]) -> Flow[list[dict[str, int]]]:
        return [self.data.terms_of(i) for i in items]
        yield  # pragma: no cover - makes this a generator


def scores_of(scores: Mapping[str, float], items: Iterable[str]) -> dict[str, float]:
    """The scores of those of ``items`` that ``scores`` holds."""
    if isinstance(scores, ArrayScores):
        return scores.of(items)
    return {i: scores[i] for i in items if i in scores}


def top_scores(scores: Mapping[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` best ``(item, score)``, best first, ties in id order."""
    if isinstance(scores, ArrayScores):
        return scores.top(k)
    return heapq.nsmallest(k, scores.items(), key=best_first)
