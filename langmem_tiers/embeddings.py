"""Embeddings: the offline default and the resolution of user-given embedders.

:class:`OfflineEmbeddings` is what the package uses when nothing is configured: a
deterministic feature-hashing embedder that needs no model, no download and no network.
It maps a text's stemmed words, word bigrams and character n-grams to signed buckets of a
fixed-size vector with stable hashing (BLAKE2b, never Python's salted ``hash()``), so the
same text gives the same vector in every process and on every machine, and vectors stored
yesterday stay comparable with queries embedded today.

Its cosine complements the store's BM25 rather than repeating it: character n-grams match
inflections, compounds and misspellings that stemming misses (``photographer`` and
``photos``), bigrams reward phrases, and cosine normalises by the length of each text.

:func:`resolve_embeddings` turns a setting into a LangChain ``Embeddings``.

Example::

    >>> emb = OfflineEmbeddings(dims=256)
    >>> v = emb.embed_query("I adopted a puppy last week")
    >>> len(v), round(sum(x * x for x in v), 6)
    (256, 1.0)
"""

from __future__ import annotations

import hashlib
import itertools
import math
import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import TypeAlias, Union

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_tiers.errors import ConfigurationError, EmbeddingError
from langmem_tiers.long_term import lexical

__all__ = ["DEFAULT_DIMS", "EmbeddingsSpec", "OfflineEmbeddings", "resolve_embeddings"]

#: Dimensions of the offline embedder when none are given.
DEFAULT_DIMS = 512

EmbeddingsSpec: TypeAlias = Union[  # noqa: UP007 (runs on Python 3.10 at import time)
    Embeddings,
    str,
    Callable[[Sequence[str]], list[list[float]]],
    Callable[[Sequence[str]], Awaitable[list[list[float]]]],
    None,
]
"""What :func:`resolve_embeddings` accepts."""


def _bucket(feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    # The low bit gives the sign so collisions cancel on average instead of adding up.
    return (value >> 1) % dims, 1.0 if value & 1 else -1.0


class OfflineEmbeddings(Embeddings):
    """Deterministic, download-free embeddings by feature hashing.

    Args:
        dims: Length of the vectors.
        word_weight: Weight of the stemmed-word block.
        bigram_weight: Weight of the word-bigram block.
        char_weight: Weight of the character n-gram block.
        char_ngrams: The n-gram sizes taken from each word (with ``<``/``>`` boundaries).

    Each block is built with sublinear term frequency (``1 + ln tf``), L2-normalised,
    scaled by its weight, summed, and the result L2-normalised. A text with no features
    (empty, punctuation only) maps to the zero vector, whose cosine with anything is 0.

    Example::

        >>> emb = OfflineEmbeddings(dims=512)
        >>> q = emb.embed_query("what pets does Melanie have")
        >>> a, b = emb.embed_documents(["Melanie: our dog and two cats", "I like hiking"])
        >>> sum(x * y for x, y in zip(q, a)) > sum(x * y for x, y in zip(q, b))
        True
    """

    def __init__(
        self,
        dims: int = DEFAULT_DIMS,
        *,
        word_weight: float = 1.0,
        bigram_weight: float = 0.5,
        char_weight: float = 0.5,
        char_ngrams: Sequence[int] = (3, 4, 5),
    ) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 16:
            raise ConfigurationError(
                f"OfflineEmbeddings dims must be an integer >= 16, got {dims!r}; use e.g. 512."
            )
        for name, value in (
            ("word_weight", word_weight),
            ("bigram_weight", bigram_weight),
            ("char_weight", char_weight),
        ):
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(
                    f"OfflineEmbeddings {name} must be a finite number >= 0, got {value!r}."
                )
        self.dims = dims
        self.word_weight = float(word_weight)
        self.bigram_weight = float(bigram_weight)
        self.char_weight = float(char_weight)
        self.char_ngrams = tuple(sorted({int(n) for n in char_ngrams}))
        self._lock = threading.Lock()
        self._bucket = lru_cache(maxsize=500_000)(self._bucket_uncached)

    def _bucket_uncached(self, feature: str) -> tuple[int, float]:
        return _bucket(feature, self.dims)

    def __repr__(self) -> str:
        return (
            f"OfflineEmbeddings(dims={self.dims}, word_weight={self.word_weight}, "
            f"bigram_weight={self.bigram_weight}, char_weight={self.char_weight}, "
            f"char_ngrams={self.char_ngrams})"
        )

    def _features(self, text: str) -> list[dict[str, int]]:
        words = lexical.analyze(text)
        unigrams: dict[str, int] = {}
        for w in words:
            unigrams["w:" + w] = unigrams.get("w:" + w, 0) + 1
        bigrams: dict[str, int] = {}
        for a, b in itertools.pairwise(words):
            key = f"b:{a} {b}"
            bigrams[key] = bigrams.get(key, 0) + 1
        chars: dict[str, int] = {}
        for w in words:
            padded = f"<{w}>"
            for n in self.char_ngrams:
                for i in range(len(padded) - n + 1):
                    key = "c:" + padded[i : i + n]
                    chars[key] = chars.get(key, 0) + 1
        return [unigrams, bigrams, chars]

    def _embed_one(self, text: str, out: np.ndarray) -> None:
        weights = (self.word_weight, self.bigram_weight, self.char_weight)
        block = np.zeros(self.dims, dtype=np.float64)
        for feats, weight in zip(self._features(text), weights, strict=True):
            if not feats or weight == 0:
                continue
            block[:] = 0.0
            for feature, tf in feats.items():
                index, sign = self._bucket(feature)
                block[index] += sign * (1.0 + math.log(tf))
            norm = float(np.linalg.norm(block))
            if norm > 0:
                out += block * (weight / norm)
        norm = float(np.linalg.norm(out))
        if norm > 0:
            out /= norm

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), dims)`` float32 array of unit rows."""
        out = np.zeros((len(texts), self.dims), dtype=np.float64)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise EmbeddingError(
                    f"OfflineEmbeddings embeds strings, got {type(text).__name__} at index {i}."
                )
            self._embed_one(text, out[i])
        return out.astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (the same function as queries: the space is symmetric)."""
        return [row.tolist() for row in self.embed_array(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        vector: list[float] = self.embed_array([text])[0].tolist()
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async twin of :meth:`embed_documents` (CPU-bound and fast, so run inline)."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async twin of :meth:`embed_query`."""
        return self.embed_query(text)


def resolve_embeddings(spec: EmbeddingsSpec) -> Embeddings:
    """Turn an embeddings setting into a LangChain ``Embeddings``.

    * ``None``: :class:`OfflineEmbeddings` with its defaults (no model, no network);
    * an ``Embeddings`` instance: returned as is;
    * a provider string such as ``"openai:text-embedding-3-small"``: LangChain's
      ``init_embeddings`` (needs ``langchain`` and the provider's package);
    * a function of a list of texts returning a list of vectors (sync or async): wrapped.

    The last two go through LangGraph's ``ensure_embeddings``, so a spec accepted by a
    LangGraph store is accepted here. Failures raise :class:`ConfigurationError` naming
    the spec and the fix.

    Example::

        >>> resolve_embeddings(None).dims
        512
        >>> resolve_embeddings(lambda texts: [[1.0, 0.0] for _ in texts]).embed_query("hi")
        [1.0, 0.0]
    """
    if spec is None:
        return OfflineEmbeddings()
    if isinstance(spec, Embeddings):
        return spec
    if isinstance(spec, str):
        if not spec.strip():
            raise ConfigurationError(
                "embeddings must be a provider string like 'openai:text-embedding-3-small', "
                "got an empty string; pass None for the offline embedder."
            )
    elif not callable(spec):
        raise ConfigurationError(
            f"embeddings must be None, a LangChain Embeddings, a provider string or a "
            f"function of a list of texts, got {type(spec).__name__}."
        )
    # Imported here: langgraph's store package is only needed when a spec must be wrapped.
    from langgraph.store.base import ensure_embeddings

    try:
        return ensure_embeddings(spec)
    except Exception as err:  # provider packages raise their own types (missing key, ...)
        raise ConfigurationError(
            f"embeddings {spec!r} could not be loaded: {err} Install the provider's "
            f"package (for example pip install 'langmem-tiers[openai]'), or pass None for "
            f"the offline embedder."
        ) from err
