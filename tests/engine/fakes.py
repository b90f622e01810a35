"""Deterministic fakes for the memory engine's tests.

:class:`WordEmbeddings` is a bag of words hashed (blake2b, stable across runs) into
256 dimensions: the cosine of two texts is the overlap of their words, so a test can
predict it ("Alice lives in Berlin" / "Alice lives in Paris": 2/3).

Example:
    >>> emb = WordEmbeddings()
    >>> round(emb.similarity("Alice lives in Berlin", "Alice lives in Paris"), 3)
    0.667
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

DIMS = 256
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "the", "in", "of", "to", "is", "and", "on", "at", "for"})


class WordEmbeddings(Embeddings):
    """Hashed bag of words; counts the texts it embeds (``calls``).

    ``synonyms`` maps words to the word they embed as: similar meaning without a shared
    word, which lexical search cannot see.
    """

    def __init__(self, dims: int = DIMS, *, synonyms: dict[str, str] | None = None) -> None:
        self.dims = dims
        self.synonyms = dict(synonyms or {})
        self.calls = 0

    def _vector(self, text: str) -> list[float]:
        self.calls += 1
        counts = [0.0] * self.dims
        words = [self.synonyms.get(w, w) for w in _WORD.findall(text.lower()) if w not in _STOP]
        if not words:
            counts[0] = 1.0
        for word in words:
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            counts[1 + int.from_bytes(digest, "big") % (self.dims - 1)] += 1.0
        norm = math.sqrt(sum(c * c for c in counts))
        return [c / norm for c in counts]

    def similarity(self, a: str, b: str) -> float:
        """Cosine of two texts (not counted as calls)."""
        va, vb = self._vector(a), self._vector(b)
        self.calls -= 2
        return sum(x * y for x, y in zip(va, vb, strict=True))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents."""
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self._vector(text)


def scripted(answers: Iterable[str]) -> GenericFakeChatModel:
    """A chat model that answers with these texts, in order (and fails after them)."""
    return GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))
