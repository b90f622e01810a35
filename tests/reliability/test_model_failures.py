"""Model and embedder failures at every call site: a clear error or a completed turn, no damage.

Call sites: the store's embedder on put and on search; short-term memory's tierer (tiering
failures must not block adds), its summariser (consolidation), and the store's embedder
inside consolidation, pruning and context building. Failures: exceptions, timeouts (as
model clients raise them) and garbage output (wrong length, NaN, infinity, wrong count,
``None``, wrong types). Each runs on SQLite and PostgreSQL, through the sync API and the
async twin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import PutOp

from langmem_tiers.config import Settings
from langmem_tiers.errors import (
    DimensionMismatchError,
    EmbeddingError,
    LangmemTiersError,
    ModelError,
)
from langmem_tiers.long_term.store.scope import namespace_for
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.memory import ShortTermMemory
from langmem_tiers.short_term.policies import MovingWindow, TokenBudget, WindowPolicy
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.tiers.base import Summarizer, Tierer
from langmem_tiers.tiers.llm import LLMTierer
from langmem_tiers.tiers.summarizer import LLMSummarizer, OfflineSummarizer

from .faults import (
    EMBEDDING_FAULTS,
    SUMMARY_FAULTS,
    TIER_FAULTS,
    FaultyEmbeddings,
    FaultySummarizer,
    FaultyTierer,
)
from .harness import sql_rows

if TYPE_CHECKING:
    from conftest import Twin

NS = ("agent_a", "semantic")
DIMS = 16


@contextmanager
def _open(url: str, embeddings: Any) -> Iterator[TieredMemoryStore]:
    index = {"dims": DIMS, "embed": embeddings, "fields": ["content"]}
    with TieredMemoryStore.from_url(url, index=index, settings=Settings()) as store:  # type: ignore[arg-type]
        yield store


def _state(store: TieredMemoryStore) -> tuple[Any, ...]:
    """Items (with values) and the number of events: what a failed call must not change."""
    d = store.db.dialect
    items = sorted(
        (row[0], repr(d.json_value(row[1])))
        for row in sql_rows(store, "SELECT id, value FROM lmt_items")
    )
    events = sql_rows(store, "SELECT count(*) FROM lmt_events")[0][0]
    vectors = sql_rows(store, "SELECT count(*) FROM lmt_vectors")[0][0]
    return tuple(items), int(events), int(vectors)


# -- the store's embedder ---------------------------------------------------------------------


Failing = tuple[TieredMemoryStore, "Twin", FaultyEmbeddings]


@pytest.fixture(params=EMBEDDING_FAULTS)
async def failing(
    request: pytest.FixtureRequest, store_url: str, twin_of: Callable[[Any], Twin]
) -> AsyncIterator[Failing]:
    """A store that holds one memory and whose embedder fails (each fault) from then on."""
    embeddings = FaultyEmbeddings(request.param, DIMS)
    with _open(store_url, embeddings) as store:
        twin = twin_of(store)
        await twin.put(NS, "kept", {"content": "Jordan leads the RAI Chat project"})
        embeddings.arm()
        yield store, twin, embeddings


async def test_a_failing_embedder_fails_a_put_clearly_and_stores_nothing(
    failing: Failing,
) -> None:
    store, twin, embeddings = failing
    before = _state(store)
    with pytest.raises((EmbeddingError, DimensionMismatchError)) as caught:
        await twin.batch(
            [
                PutOp(NS, "new", {"content": "a new memory"}),
                PutOp(NS, "kept", {"content": "an overwrite that must not land"}),
            ]
        )
    assert "embedder" in str(caught.value)
    assert _state(store) == before
    embeddings.disarm()
    await twin.put(NS, "new", {"content": "a new memory"})  # healthy again: it works
    assert (await twin.get(NS, "new")).value == {"content": "a new memory"}


async def test_a_failing_embedder_fails_a_search_clearly_and_changes_nothing(
    failing: Failing,
) -> None:
    store, twin, _ = failing
    before = _state(store)
    with pytest.raises((EmbeddingError, DimensionMismatchError)):
        await twin.search(NS, query="who leads RAI Chat?")
    # A listing needs no embedder and still answers.
    assert [i.key for i in await twin.search(NS)] == ["kept"]
    assert _state(store) == before


# -- short-term memory: tierer, summariser, embedder inside consolidation ---------------------


def _memory(
    store: TieredMemoryStore,
    policy: WindowPolicy,
    *,
    tierer: Tierer | None = None,
    summarizer: Summarizer | None = None,
) -> ShortTermMemory:
    return ShortTermMemory(
        "s1",
        log=SqlMessageLog(store.conn),
        store=store,
        policy=policy,
        tierer=tierer,
        summarizer=summarizer or OfflineSummarizer(),
        view="tiered",
        token_counter=lambda text: 1 + len(text) // 4,
    )


def _window(records: list[Any]) -> list[tuple[str, str, str | None, str | None]]:
    return [(r.id, r.text, r.tier1, r.tier2) for r in records]


def _human(text: str) -> list[BaseMessage]:
    return [HumanMessage(text)]


@pytest.mark.parametrize("fault", TIER_FAULTS)
async def test_a_failing_tierer_never_blocks_an_add(
    store_url: str, twin_of: Callable[[Any], Twin], fault: str
) -> None:
    tierer = FaultyTierer(fault)
    embeddings = FaultyEmbeddings("raises", DIMS)
    with _open(store_url, embeddings) as store:
        memory = twin_of(_memory(store, MovingWindow(50), tierer=tierer))
        await memory.add_messages(_human("My name is Jordan and I live in Lisbon."))
        tierer.arm()
        result = await memory.add_messages(
            [HumanMessage("We moved the deadline to March 3."), AIMessage("Noted, March 3.")]
        )
        assert result.ids == ["m2", "m3"]
        assert result.error is None
        records = await memory.records()
        assert [r.text for r in records][1:] == [
            "We moved the deadline to March 3.",
            "Noted, March 3.",
        ]
        assert [(r.tier1, r.tier2) for r in records[1:]] == [(None, None), (None, None)]
        # The model sees the raw text of an untiered message, never a blank or 'None'.
        view = await memory.context()
        assert "We moved the deadline to March 3." in view[1].text
        tierer.disarm()
        await memory.add_messages(_human("And the budget is 12,500 euros."))
        records = await memory.records()
        assert all(r.tier1 for r in records), "tiering was not retried"


def test_an_llm_tierer_with_a_garbage_model_falls_back_to_offline_tiers() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("I cannot help with that. %%%")]))
    tiers = LLMTierer(model).tier([HumanMessage("My name is Jordan and I live in Lisbon.")])
    assert "Jordan" in tiers[0].tier1


def test_an_llm_summariser_with_a_garbage_model_falls_back_to_the_offline_summary() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("")]))
    summary = LLMSummarizer(model).summarize([HumanMessage("I'm Jo and I want to visit Oslo.")])
    assert "Oslo" in summary.text


@pytest.mark.parametrize("fault", SUMMARY_FAULTS)
async def test_a_failing_summariser_leaves_the_window_and_the_store_as_they_were(
    store_url: str, twin_of: Callable[[Any], Twin], fault: str
) -> None:
    summarizer = FaultySummarizer(fault)
    with _open(store_url, FaultyEmbeddings("raises", DIMS)) as store:
        memory = twin_of(_memory(store, MovingWindow(3), summarizer=summarizer))
        for n in range(1, 4):
            await memory.add_messages(_human(f"message {n} about the Lisbon office"))
        window, before = _window(await memory.records()), _state(store)
        summarizer.arm()
        result = await memory.add_messages(_human("message 4 overflows the window"))
        assert result.ids == ["m4"]
        if fault in ("raises", "timeout"):
            # The model client's own error is reported as it was raised.
            assert isinstance(result.error, (RuntimeError, TimeoutError)), repr(result.error)
        else:  # garbage is recognised as such
            assert isinstance(result.error, ModelError), repr(result.error)
            assert "summariser" in str(result.error)
        assert _window(await memory.records())[:3] == window
        assert _state(store) == before
        summarizer.disarm()
        result = await memory.add_messages(_human("message 5"))
        assert result.error is None
        assert result.consolidated == ["m1", "m2", "m3"]
        summaries = store.search(namespace_for("s1", "semantic"))
        assert [s.value["source_message_ids"] for s in summaries] == [["m1", "m2", "m3"]]


@pytest.mark.parametrize("fault", ["timeout", "nan"])
@pytest.mark.parametrize("policy", ["moving_window", "token_budget"])
async def test_an_embedder_failing_inside_consolidation_keeps_the_window(
    store_url: str, twin_of: Callable[[Any], Twin], fault: str, policy: str
) -> None:
    embeddings = FaultyEmbeddings(fault, DIMS)
    window_policy: WindowPolicy = (
        MovingWindow(3) if policy == "moving_window" else TokenBudget(70, 20, 2)
    )
    with _open(store_url, embeddings) as store:
        memory = twin_of(_memory(store, window_policy))
        for n in range(1, 4):
            added = await memory.add_messages(_human(f"message {n}: " + "the office move " * 3))
            assert added.consolidated == []  # the fourth message is the one that overflows
        window, before = _window(await memory.records()), _state(store)
        embeddings.arm()
        result = await memory.add_messages(_human("message 4: " + "the office move " * 3))
        assert result.ids == ["m4"]
        assert isinstance(result.error, LangmemTiersError), repr(result.error)
        assert _window(await memory.records())[:3] == window
        assert _state(store) == before
        embeddings.disarm()
        result = await memory.add_messages(_human("message 5"))
        assert result.error is None
        assert result.consolidated, "the retry did not consolidate"


async def test_context_is_built_without_long_term_memory_when_the_embedder_fails(
    store_url: str, twin_of: Callable[[Any], Twin]
) -> None:
    embeddings = FaultyEmbeddings("timeout", DIMS)
    with _open(store_url, embeddings) as store:
        memory = twin_of(_memory(store, MovingWindow(2)))
        for n in range(1, 4):
            await memory.add_messages(_human(f"message {n}"))
        assert (await memory.context())[0].type == "system"  # the summary is shown
        embeddings.arm()
        view = await memory.context()
        assert [m.type for m in view] == ["human"]
        assert "message 3" in view[0].text
