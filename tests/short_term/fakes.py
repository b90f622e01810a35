"""Deterministic tierers, summarisers, stores and logs for short-term memory tests.

The failing doubles fail a set number of times and count their calls, so a test can
check both that a failure left everything as it was and that the retry did the work once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import BaseMessage
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from langmem_tiers.errors import BackendError, EmbeddingError, ModelError
from langmem_tiers.short_term.log import InMemoryMessageLog, LogOp, RemoveOp
from langmem_tiers.tiers.base import MessageTiers, Summarizer, Summary, Tierer

DIMS = 32


def make_store() -> InMemoryStore:
    """An InMemoryStore whose search embeds the ``content`` field deterministically."""
    return InMemoryStore(
        index={"dims": DIMS, "embed": DeterministicFakeEmbedding(size=DIMS), "fields": ["content"]}
    )


class ScriptedTierer(Tierer):
    """Tier 1 ``words=<first two words>``, tier 2 ``said: <first five words>``."""

    name = "scripted"

    def __init__(self, fail_times: int = 0) -> None:
        self.fail_times = fail_times
        self.calls = 0

    def tier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        self.calls += 1
        if self.fail_times > 0:
            self.fail_times -= 1
            raise ModelError("scripted tierer failure")
        out = []
        for message in messages:
            words = message.text.split()
            out.append(MessageTiers(f"words={'_'.join(words[:2])}", "said: " + " ".join(words[:5])))
        return out


class ScriptedSummarizer(Summarizer):
    """``Summary of <n> messages: <first words of each>``; key concepts are the ids' texts."""

    name = "scripted"

    def __init__(self, fail_times: int = 0) -> None:
        self.fail_times = fail_times
        self.calls = 0
        self.seen: list[list[str | None]] = []

    def summarize(self, messages: Sequence[BaseMessage]) -> Summary:
        self.calls += 1
        self.seen.append([m.id for m in messages])
        if self.fail_times > 0:
            self.fail_times -= 1
            raise ModelError("scripted summariser failure")
        heads = "; ".join(" ".join(m.text.split()[:3]) for m in messages)
        concepts = sorted({w for m in messages for w in m.text.split()[:1]})
        return Summary(f"Summary of {len(messages)} messages: {heads}", concepts)


class FlakyStore(InMemoryStore):
    """Raises on batches with a put while ``fail_puts`` > 0 (an embedder or database failure)."""

    def __init__(self, fail_puts: int = 0) -> None:
        super().__init__(
            index={
                "dims": DIMS,
                "embed": DeterministicFakeEmbedding(size=DIMS),
                "fields": ["content"],
            }
        )
        self.fail_puts = fail_puts
        self.down = False
        self.put_batches = 0

    def _check(self, ops: Iterable[Op]) -> list[Op]:
        ops = list(ops)
        if self.down:
            raise BackendError("store is down")
        if any(isinstance(op, PutOp) for op in ops):
            if self.fail_puts > 0:
                self.fail_puts -= 1
                raise EmbeddingError("embedder failed")
            self.put_batches += 1
        return ops

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return super().batch(self._check(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await super().abatch(self._check(ops))


class FlakyLog(InMemoryMessageLog):
    """Fails the next ``fail_removes`` batches that remove messages (after the store write)."""

    def __init__(self, fail_removes: int = 0) -> None:
        super().__init__()
        self.fail_removes = fail_removes
        self.fail_all = False

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        if self.fail_all:
            raise BackendError("log is down")
        if self.fail_removes > 0 and any(isinstance(op, RemoveOp) for op in ops):
            self.fail_removes -= 1
            raise BackendError("crash between persist and remove")
        return super().batch(ops)
