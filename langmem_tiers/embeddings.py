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
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import TypeAlias, Union

import numpy as np
from langchain_core.embeddings import Embeddings

from langmem_tiers.errors import ConfigurationError, EmbeddingError
from langmem_tiers.long_term.store.search import bm25 as lexical

__all__ = ["DEFAULT_DIMS", "EmbeddingsSpec", "OfflineEmbeddings", "resolve_embeddings"]

#: Dimensions of the offline embedder when none are given.
DEFAULT_DIMS = 512
_BATCH = 1024

EmbeddingsSpec: TypeAlias = Union[  # noqa: UP007 (runs on Python 3.10 at import time)
    Embeddings,
    str,
    Callable[[Sequence[str]], list[list[float]]],
    Callable[[Sequence[str]], Awaitable[list[list[float]]]],
    None,
]
"""What :func:`resolve_embeddings` accepts."""


def _signed_bucket(feature: str, dims: int) -> int:
    """``2 * bucket + sign bit`` of a feature, from a stable 64-bit BLAKE2b digest."""
    value = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
    )
    # The low bit is the sign, so colliding features cancel on average instead of adding up.
    return ((value >> 1) % dims) * 2 + (value & 1)


# Module-level caches (not per instance, so instances stay picklable): words and bigrams
# repeat a lot across memories, and hashing and n-gram slicing are most of the cost.
@lru_cache(maxsize=200_000)
def _word_code(word: str, dims: int) -> int:
    return _signed_bucket("w:" + word, dims)


@lru_cache(maxsize=500_000)
def _bigram_code(pair: tuple[str, str], dims: int) -> int:
    return _signed_bucket(f"b:{pair[0]} {pair[1]}", dims)


@lru_cache(maxsize=200_000)
def _char_codes(word: str, dims: int, ngrams: tuple[int, ...]) -> np.ndarray:
    padded = f"<{word}>"
    grams = [padded[i : i + n] for n in ngrams for i in range(len(padded) - n + 1)]
    codes = np.array([_signed_bucket("c:" + g, dims) for g in grams], dtype=np.int64)
    codes.flags.writeable = False  # shared by every caller of the cache
    return codes


def _blocks(rows: list[np.ndarray], codes: list[np.ndarray], n: int, dims: int) -> np.ndarray:
    """One feature block for ``n`` texts: signed sublinear counts per bucket, unit rows.

    ``codes`` are signed bucket codes and ``rows`` the text each code belongs to. A
    bucket's value is ``(1 + ln tf)`` of the features hashed to it with a positive sign
    minus the same of those with a negative sign.
    """
    if not codes:
        return np.zeros((n, dims))
    flat = np.concatenate(rows) * (2 * dims) + np.concatenate(codes)
    counts = np.bincount(flat, minlength=n * 2 * dims).reshape(n, 2 * dims).astype(np.float64)
    present = counts > 0
    counts[present] = 1.0 + np.log(counts[present])
    block = counts[:, 1::2] - counts[:, 0::2]
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(block, norms, out=np.zeros_like(block), where=norms > 0)
    return unit


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

    #: How much this embedder's cosine counts against BM25 in the store's relevance
    #: (see :func:`langmem_tiers.long_term.store.search.fusion.dense_weight_for`). Its cosine mostly
    #: re-measures word overlap, which BM25 with idf measures better, so it only nudges:
    #: on LoCoMo's tuning conversations through the store, recall@10 was highest at 0.1
    #: among weights 0-0.2, and higher weights lowered it further.
    fusion_dense_weight: float = 0.1
    #: ``(mid, width)`` of the logistic curve that maps this embedder's cosine to an absolute
    #: relevance (see ``long_term/store/search/relevance.py``): texts sharing no word have a
    #: cosine near 0, a question and the message answering it typically 0.3-0.6.
    relevance_cosine_curve: tuple[float, float] = (0.25, 0.08)

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

    def __repr__(self) -> str:
        return (
            f"OfflineEmbeddings(dims={self.dims}, word_weight={self.word_weight}, "
            f"bigram_weight={self.bigram_weight}, char_weight={self.char_weight}, "
            f"char_ngrams={self.char_ngrams})"
        )

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        n = len(texts)
        parts: tuple[list[np.ndarray], ...] = ([], [], [])
        rows: tuple[list[np.ndarray], ...] = ([], [], [])
        for i, text in enumerate(texts):
            words = lexical.analyze(text)
            if not words:
                continue
            found = (
                np.array([_word_code(w, self.dims) for w in words], dtype=np.int64),
                np.array(
                    [_bigram_code(p, self.dims) for p in itertools.pairwise(words)], dtype=np.int64
                ),
                np.concatenate([_char_codes(w, self.dims, self.char_ngrams) for w in words]),
            )
            for block, codes in enumerate(found):
                if codes.size:
                    parts[block].append(codes)
                    rows[block].append(np.full(codes.size, i, dtype=np.int64))
        out = np.zeros((n, self.dims))
        weights = (self.word_weight, self.bigram_weight, self.char_weight)
        for block, weight in enumerate(weights):
            if weight > 0:
                out += weight * _blocks(rows[block], parts[block], n, self.dims)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into a ``(len(texts), dims)`` float32 array of unit rows.

        Example::

            >>> OfflineEmbeddings(dims=64).embed_array(["a dog", "a cat"]).shape
            (2, 64)
        """
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise EmbeddingError(
                    f"OfflineEmbeddings embeds strings, got {type(text).__name__} at index {i}."
                )
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        # Bounded batches keep the count matrix small whatever the caller passes.
        for start in range(0, len(texts), _BATCH):
            chunk = texts[start : start + _BATCH]
            out[start : start + len(chunk)] = self._embed_batch(chunk)
        return out

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
