"""Fast, seeded fake embeddings and a synthetic memory corpus for the speed benchmarks.

The speed benchmarks measure storage and retrieval, not an embedding model, so they need
an embedder that costs next to nothing and whose vectors still have the structure real
ones have (texts that share words are near each other, so an approximate index has
neighbourhoods to find). :class:`SeededEmbeddings` gives every word a fixed random
Gaussian direction derived from the seed and the word, and embeds a text as the
normalised sum of its words' directions. :class:`SyntheticCorpus` writes memories and
queries from a seeded vocabulary of made-up words, with a few topics per scope so a
scope's memories cluster the way one user's memories do.

Both are deterministic: the same seed gives the same texts and the same vectors in every
process (word directions come from ``blake2b``, never from Python's salted ``hash``).

Example:
    >>> emb = SeededEmbeddings(dims=32, seed=1)
    >>> a, b, c = emb.embed_documents(["kalo miru tesa", "kalo miru vane", "posu rina dole"])
    >>> import numpy as np
    >>> float(np.dot(a, b)) > float(np.dot(a, c))
    True
    >>> corpus = SyntheticCorpus(seed=1)
    >>> corpus.memory(scope=3, index=0) == SyntheticCorpus(seed=1).memory(scope=3, index=0)
    True
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

__all__ = ["DEFAULT_DIMS", "SeededEmbeddings", "SyntheticCorpus"]

DEFAULT_DIMS = 256

_WORD = re.compile(r"[a-z0-9]+")


def _seed_of(*parts: object) -> int:
    digest = hashlib.blake2b(":".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class SeededEmbeddings(Embeddings):
    """Bag-of-words random projections: cheap, deterministic, with real neighbourhoods.

    Args:
        dims: length of the vectors.
        seed: changes every word's direction.

    Embedding a text costs a dictionary look-up per word and one small sum, so even
    100,000 memories embed in a second or two and the benchmarks time the store.

    Example:
        >>> emb = SeededEmbeddings(dims=8)
        >>> round(float(np.linalg.norm(emb.embed_query("any text at all"))), 6)
        1.0
    """

    def __init__(self, dims: int = DEFAULT_DIMS, *, seed: int = 0) -> None:
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 2:
            raise ValueError(f"dims must be a whole number >= 2, got {dims!r}.")
        self.dims = dims
        self.seed = seed
        # Word directions as rows of one growing matrix, so a batch is one gather and
        # one segmented sum instead of a Python loop over vectors.
        self._rows: dict[str, int] = {}
        self._matrix = np.zeros((1024, dims), dtype=np.float32)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SeededEmbeddings(dims={self.dims}, seed={self.seed})"

    def _row(self, word: str) -> int:
        row = self._rows.get(word)
        if row is not None:
            return row
        with self._lock:
            row = self._rows.get(word)
            if row is None:
                row = len(self._rows)
                if row == len(self._matrix):
                    grown = np.zeros((2 * len(self._matrix), self.dims), dtype=np.float32)
                    grown[:row] = self._matrix
                    self._matrix = grown
                rng = np.random.default_rng(_seed_of("word", self.seed, word))
                self._matrix[row] = rng.standard_normal(self.dims)
                self._rows[word] = row
        return row

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dims)`` float32 array of unit rows (a text with no words: zeros)."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        rows: list[int] = []
        starts: list[int] = []
        targets: list[int] = []
        for i, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            if words:
                targets.append(i)
                starts.append(len(rows))
                rows.extend(self._row(w) for w in words)
        if not rows:
            return out
        sums = np.add.reduceat(self._matrix[rows], starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out[targets] = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One unit vector per text."""
        return [row.tolist() for row in self.embed_array(texts)]

    def embed_query(self, text: str) -> list[float]:
        """The same function as documents (the space is symmetric)."""
        vector: list[float] = self.embed_array([text])[0].tolist()
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (CPU-bound and quick: runs inline)."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return self.embed_query(text)


_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


class SyntheticCorpus:
    """Seeded memories and queries in a made-up language, clustered by scope topics.

    Args:
        seed: changes every text.
        vocabulary: how many distinct words exist.
        topics: how many topics exist; each scope draws ``topics_per_scope`` of them.
        topic_words: words per topic.

    A memory has 10-20 words: two thirds from its scope's topics, the rest from the
    whole vocabulary with a Zipf-like skew (so some words are common everywhere, as
    "meeting" or "today" are). A query has 3-6 words from one of the scope's topics.

    Example:
        >>> corpus = SyntheticCorpus(seed=7)
        >>> len(corpus.memory(scope=0, index=5).split()) >= 10
        True
        >>> corpus.query(scope=0, index=0) != corpus.query(scope=0, index=1)
        True
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        vocabulary: int = 6_000,
        topics: int = 300,
        topic_words: int = 40,
        topics_per_scope: int = 5,
    ) -> None:
        self.seed = seed
        rng = np.random.default_rng(_seed_of("vocabulary", seed))
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < vocabulary:
            syllables = int(rng.integers(2, 4))
            word = "".join(
                _CONSONANTS[int(rng.integers(len(_CONSONANTS)))]
                + _VOWELS[int(rng.integers(len(_VOWELS)))]
                for _ in range(syllables)
            )
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        ranks = np.arange(1, vocabulary + 1, dtype=np.float64)
        self._zipf_cdf = np.cumsum(1.0 / ranks) / np.sum(1.0 / ranks)
        self._topics = [
            rng.choice(vocabulary, size=topic_words, replace=False) for _ in range(topics)
        ]
        self.topics_per_scope = topics_per_scope
        self._scope_topics = lru_cache(maxsize=100_000)(self._scope_topics_uncached)

    def _scope_topics_uncached(self, scope: int) -> list[np.ndarray]:
        rng = np.random.default_rng(_seed_of("scope", self.seed, scope))
        chosen = rng.choice(len(self._topics), size=self.topics_per_scope, replace=False)
        return [self._topics[int(t)] for t in chosen]

    def memory(self, *, scope: int, index: int) -> str:
        """The ``index``-th memory text of ``scope``."""
        rng = np.random.default_rng(_seed_of("memory", self.seed, scope, index))
        topics = self._scope_topics(scope)
        topic = topics[int(rng.integers(len(topics)))]
        length = int(rng.integers(10, 21))
        n_topic = (2 * length) // 3
        picked = [int(i) for i in rng.choice(topic, size=n_topic)]
        common = np.searchsorted(self._zipf_cdf, rng.random(length - n_topic))
        picked += [min(int(i), len(self.words) - 1) for i in common]
        rng.shuffle(picked)
        return " ".join(self.words[i] for i in picked)

    def query(self, *, scope: int, index: int) -> str:
        """The ``index``-th query of ``scope``: a few words of one of its topics."""
        rng = np.random.default_rng(_seed_of("query", self.seed, scope, index))
        topics = self._scope_topics(scope)
        topic = topics[int(rng.integers(len(topics)))]
        size = int(rng.integers(3, 7))
        return " ".join(self.words[int(i)] for i in rng.choice(topic, size=size, replace=False))
