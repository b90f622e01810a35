"""Embedders, tierers and summarisers that fail in the ways real models do.

Each double behaves well until :meth:`arm` is called (so a store can be set up and
filled first), then fails the way its ``fault`` names: an exception, a timeout (as model
clients raise them), or garbage output (wrong length, NaN, wrong count, ``None``, wrong
types). ``disarm`` makes it healthy again, for the retry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import BaseMessage

from langmem_tiers.tiers.base import MessageTiers, Summarizer, Summary, Tierer
from langmem_tiers.tiers.offline import OfflineTierer
from langmem_tiers.tiers.summarizer import OfflineSummarizer

__all__ = [
    "EMBEDDING_FAULTS",
    "SUMMARY_FAULTS",
    "TIER_FAULTS",
    "FaultyEmbeddings",
    "FaultySummarizer",
    "FaultyTierer",
]

EMBEDDING_FAULTS = ("raises", "timeout", "short", "nan", "inf", "count", "none", "strings")
TIER_FAULTS = ("raises", "timeout", "fewer", "none", "none_fields", "not_tiers")
SUMMARY_FAULTS = ("raises", "timeout", "none", "empty", "not_text", "no_concepts", "a_string")


class _Armed:
    armed = False

    def arm(self) -> None:
        self.armed = True

    def disarm(self) -> None:
        self.armed = False


class FaultyEmbeddings(_Armed, Embeddings):
    """Deterministic embeddings, until armed: then ``fault`` on every call."""

    def __init__(self, fault: str, dims: int = 16) -> None:
        self.fault = fault
        self.dims = dims
        self._good = DeterministicFakeEmbedding(size=dims)

    def _bad(self, good: list[float]) -> Any:
        if self.fault == "raises":
            raise RuntimeError("the embedding service answered 500")
        if self.fault == "timeout":
            raise TimeoutError("the embedding request timed out after 30 s")
        if self.fault == "short":
            return good[:-1]
        if self.fault == "nan":
            return [math.nan, *good[1:]]
        if self.fault == "inf":
            return [math.inf, *good[1:]]
        if self.fault == "strings":
            return ["0.5"] * len(good)
        raise AssertionError(self.fault)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        good = self._good.embed_documents(texts)
        if not self.armed:
            return good
        if self.fault == "none":
            return None  # type: ignore[return-value]
        if self.fault == "count":
            return [*good, good[0]]
        return [self._bad(vector) for vector in good]

    def embed_query(self, text: str) -> list[float]:
        good = self._good.embed_query(text)
        if not self.armed:
            return good
        if self.fault == "none":
            return None  # type: ignore[return-value]
        if self.fault == "count":
            return [good, good]  # type: ignore[list-item]
        result: list[float] = self._bad(good)
        return result


class FaultyTierer(_Armed, Tierer):
    """The offline tierer, until armed: then ``fault`` on every call."""

    def __init__(self, fault: str) -> None:
        self.fault = fault
        self._good = OfflineTierer()

    def tier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        if not self.armed:
            return self._good.tier(messages)
        if self.fault == "raises":
            raise RuntimeError("the tier model answered 500")
        if self.fault == "timeout":
            raise TimeoutError("the tier model timed out")
        if self.fault == "fewer":
            return self._good.tier(messages)[:-1]
        if self.fault == "none":
            return None  # type: ignore[return-value]
        if self.fault == "none_fields":
            return [MessageTiers(None, None) for _ in messages]  # type: ignore[arg-type]
        if self.fault == "not_tiers":
            return ["tier1=x" for _ in messages]  # type: ignore[misc]
        raise AssertionError(self.fault)


class FaultySummarizer(_Armed, Summarizer):
    """The offline summariser, until armed: then ``fault`` on every call; counts calls."""

    def __init__(self, fault: str) -> None:
        self.fault = fault
        self.calls = 0
        self._good = OfflineSummarizer()

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        self.calls += 1
        if not self.armed:
            return self._good.summarize(messages)
        if self.fault == "raises":
            raise RuntimeError("the summary model answered 500")
        if self.fault == "timeout":
            raise TimeoutError("the summary model timed out")
        if self.fault == "none":
            return None  # type: ignore[return-value]
        if self.fault == "empty":
            return Summary("  ", [])
        if self.fault == "not_text":
            return Summary(123, ["x"])  # type: ignore[arg-type]
        if self.fault == "no_concepts":
            return Summary("A fine summary.", None)  # type: ignore[arg-type]
        if self.fault == "a_string":
            return "SUMMARY: a string, not a Summary"  # type: ignore[return-value]
        raise AssertionError(self.fault)
