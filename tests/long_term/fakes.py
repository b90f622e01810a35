"""Deterministic fake embeddings whose similarities a test can predict.

:class:`KeywordEmbeddings` is a bag of words: every word of the vocabulary owns one
dimension, any other word is hashed (stably, with blake2b, never Python's salted
``hash``) into the remaining dimensions, and the vector is normalised. Cosine
similarity is then the overlap of the word counts, so "apple pie" is nearer to
"apple" than to "car", and a text sharing no word with the query scores 0. Counts are
never negative, so every similarity is in [0, 1].

Example:
    >>> emb = KeywordEmbeddings()
    >>> emb.similarity("apple", "apple pie") > emb.similarity("apple", "car") == 0.0
    True
    >>> round(emb.similarity("apple", "apple"), 6)
    1.0
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig

__all__ = [
    "DEFAULT_DIMS",
    "DEFAULT_VOCABULARY",
    "KeywordEmbeddings",
    "default_index",
]

DEFAULT_DIMS = 64

# Words the tests rank by: each owns a dimension, so no hash collision can ever
# make two of them look alike.
DEFAULT_VOCABULARY: tuple[str, ...] = (
    "apple",
    "pie",
    "car",
    "engine",
    "tea",
    "coffee",
    "banana",
    "hammer",
    "python",
    "golang",
    "rust",
    "weather",
    "rain",
    "sun",
    "dog",
    "cat",
    "music",
    "jazz",
    "paris",
    "berlin",
    "secret",
    "fruit",
    "tools",
)

# Function words carry no topic; dropping them keeps similarities about the topic words.
_STOPWORDS = frozenset({"a", "an", "and", "the", "of", "to", "in", "on", "is", "for", "with"})

# Letters only: digits (timestamps, counts, confidences serialised into the text) must
# not move similarities, and one-letter tokens are mostly JSON or ISO-date debris.
_WORD = re.compile(r"[a-z]{2,}")


class KeywordEmbeddings(Embeddings):
    """Bag-of-words embeddings with dedicated dimensions for known keywords.

    Args:
        dims: length of every document vector.
        vocabulary: words that each get a dimension of their own.
        query_dims: length of query vectors, when a test needs an embedder whose
            queries do not fit the index (defaults to ``dims``).
        fail_on: a word that makes the embedder raise ``RuntimeError``, to test what a
            store does when its embedding service fails mid-batch.

    Example:
        >>> emb = KeywordEmbeddings(dims=32)
        >>> len(emb.embed_query("apple"))
        32
        >>> emb.similarity("tea and coffee", "coffee") > emb.similarity("tea", "coffee")
        True
    """

    def __init__(
        self,
        dims: int = DEFAULT_DIMS,
        *,
        vocabulary: Sequence[str] = DEFAULT_VOCABULARY,
        query_dims: int | None = None,
        fail_on: str | None = None,
    ) -> None:
        # Dimension 0 marks a text without words (a zero vector has no cosine);
        # then one per vocabulary word; the rest take hashed words.
        if dims < len(vocabulary) + 2:
            raise ValueError(
                f"dims must be at least len(vocabulary) + 2 = {len(vocabulary) + 2}, got {dims}."
            )
        self.dims = dims
        self.query_dims = dims if query_dims is None else query_dims
        self.fail_on = fail_on
        self._slots = {word: i + 1 for i, word in enumerate(vocabulary)}
        self.calls = 0
        """How many texts were embedded (documents and queries)."""

    def words(self, text: str) -> list[str]:
        """The words of ``text`` that count, in order."""
        return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]

    def _slot(self, word: str) -> int:
        slot = self._slots.get(word)
        if slot is not None:
            return slot
        first_free = len(self._slots) + 1
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        return first_free + int.from_bytes(digest, "big") % (self.dims - first_free)

    def _vector(self, text: str, dims: int) -> list[float]:
        self.calls += 1
        counts = [0.0] * self.dims
        words = self.words(text)
        if self.fail_on is not None and self.fail_on in words:
            raise RuntimeError(f"embedding service unavailable (text contains {self.fail_on!r})")
        if not words:
            counts[0] = 1.0
        for word in words:
            counts[self._slot(word)] += 1.0
        norm = math.sqrt(sum(c * c for c in counts))
        vector = [c / norm for c in counts]
        # A wrong query size is made by padding or cutting, so the first dims stay meaningful.
        return (vector + [0.0] * dims)[:dims]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts (both embedded as documents)."""
        va, vb = self._vector(a, self.dims), self._vector(b, self.dims)
        self.calls -= 2  # a helper for assertions, not a use by the store
        return sum(x * y for x, y in zip(va, vb, strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return [self._vector(t, self.dims) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (of ``query_dims`` length)."""
        return self._vector(text, self.query_dims)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (no I/O, so the sync path is the async one)."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Embed a query (no I/O, so the sync path is the async one)."""
        return self.embed_query(text)


def default_index(
    embeddings: KeywordEmbeddings | None = None, fields: Sequence[str] = ("$",)
) -> IndexConfig:
    """The index the conformance tests use unless a test asks for another one.

    Example:
        >>> default_index()["dims"] == DEFAULT_DIMS
        True
    """
    emb = embeddings or KeywordEmbeddings()
    return {"dims": emb.dims, "embed": emb, "fields": list(fields)}
