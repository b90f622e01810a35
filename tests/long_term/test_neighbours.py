"""Conversational neighbours: a memory is found through the memory written next to it, in the
same conversation, on every backend of ours and through both twins.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, PutOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.long_term.store.search.fusion import NEIGHBOUR_WEIGHT
from langmem_tiers.long_term.store.search.neighbours import (
    NEIGHBOUR_MAX_GAP,
    conversation_neighbours,
)

from .fakes import default_index

UTC = timezone.utc
AT = "2024-05-01T10:00:00+00:00"
NS = ("u1", "episodic")
QUERY = "pottery class"


def _turn(key: str, content: str, **extra: Any) -> PutOp:
    return PutOp(NS, key, {"content": content, "event_timestamp": AT, **extra})


def _conversation(answer: PutOp) -> list[PutOp]:
    """A question that matches the query, then ``answer``, which shares no word with it;
    ``dog`` and ``bus`` lie further from the question than neighbours reach."""
    return [
        _turn("hello", "Good morning, how are you?"),
        _turn("question", "Did you go to the pottery class yesterday?"),
        answer,
        _turn("weather", "It rained all weekend here."),
        _turn("dog", "My dog chewed a shoe again."),
        _turn("bus", "The bus was late this morning."),
    ]


def _semantic(hits: list[Any], key: str) -> float:
    by_key = {h.key: h for h in hits}
    return float(by_key[key].scores["semantic"]) if key in by_key else 0.0


def _search(store: BaseStore, **kwargs: Any) -> list[Any]:
    return store.search(("u1",), query=QUERY, limit=10, **kwargs)


async def test_the_answer_is_found_through_the_question_next_to_it(
    make_store: Callable[..., BaseStore], ours: None, twin_of: Any
) -> None:
    twin = twin_of(make_store(index=default_index(fields=("content",))))
    await twin.batch(_conversation(_turn("answer", "Yes! I made a little blue bowl.")))
    hits = await twin.search(("u1",), query=QUERY, limit=10)
    keys = [h.key for h in hits]
    # Both sides of the question are lifted, up to two turns away: the turn before it, the
    # answer after it and the turn after that.
    assert keys[0] == "question"
    assert set(keys[1:4]) == {"hello", "answer", "weather"}, [(h.key, h.score) for h in hits]
    # Lifted towards the question, never past it; three turns away is no neighbour.
    assert _semantic(hits, "answer") < _semantic(hits, "question")
    assert _semantic(hits, "answer") > 2 * _semantic(hits, "dog")


def test_a_neighbour_outside_the_candidates_joins_them(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    # No index: the lexical side alone picks candidates, and the answer has none of the
    # query's words, so only its neighbour brings it in.
    store = make_store(index=None)
    store.batch(_conversation(_turn("answer", "Yes! I made a little blue bowl.")))
    keys = [h.key for h in _search(store)]
    assert keys[0] == "question"
    assert set(keys[1:4]) == {"hello", "answer", "weather"}


@pytest.mark.parametrize(
    "answer",
    [
        # Another conversation: a different session, or hours later.
        _turn("answer", "Yes! I made a little blue bowl.", session_id="s2"),
        PutOp(
            NS,
            "answer",
            {
                "content": "Yes! I made a little blue bowl.",
                "event_timestamp": (
                    datetime.fromisoformat(AT) + NEIGHBOUR_MAX_GAP + timedelta(minutes=1)
                ).isoformat(),
            },
        ),
        # Another namespace of the same scope.
        PutOp(("u1", "other"), "answer", {"content": "Yes! I made a little blue bowl."}),
    ],
    ids=["session", "time", "namespace"],
)
def test_neighbours_end_where_the_conversation_ends(
    make_store: Callable[..., BaseStore], ours: None, answer: PutOp
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    store.batch(_conversation(answer))
    hits = _search(store)
    assert hits[0].key == "question"
    assert _semantic(hits, "answer") < 0.5 * _semantic(hits, "hello")


def test_neighbours_are_only_what_the_search_may_return(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    store.batch(_conversation(_turn("answer", "Yes! I made a little blue bowl.", topic="private")))
    keys = [h.key for h in _search(store, filter={"topic": {"$ne": "private"}})]
    assert "question" in keys
    assert "answer" not in keys
    # A deleted neighbour is skipped: the next memories written are the neighbours now.
    store.delete(NS, "answer")
    hits = _search(store)
    assert "answer" not in [h.key for h in hits]
    assert _semantic(hits, "dog") > _semantic(hits, "bus") + 0.1


def test_conversation_neighbours_are_symmetric_and_bounded() -> None:
    t = datetime(2024, 5, 1, 12, tzinfo=UTC)
    pairs = {"b": ("a", "c"), "c": ("b", None)}
    when = {"a": t - timedelta(days=1), "b": t, "c": t + timedelta(minutes=5)}
    session = {"a": None, "b": None, "c": None}
    assert conversation_neighbours(pairs, when, session) == {"b": ["c"], "c": ["b"]}
    assert conversation_neighbours(pairs, when, {**session, "c": "s1"}) == {}
    # An item that can no longer be read has no neighbours.
    assert conversation_neighbours({"b": ("a", "gone")}, when, session) == {}


def test_an_item_put_with_index_false_is_no_neighbour(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    store.put(
        NS, "question", {"content": "Did you go to the pottery class?", "event_timestamp": AT}
    )
    store.put(NS, "hidden", {"content": "Yes, I made a bowl.", "event_timestamp": AT}, index=False)
    assert [h.key for h in _search(store)] == ["question"]


def test_only_episodic_memories_have_neighbours(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    facts = ("u1", "semantic")
    store.put(facts, "pottery", {"content": "Mel takes a pottery class on Tuesdays"})
    store.put(facts, "car", {"content": "Mel drives a red car"})
    hits = store.search(facts, query=QUERY)
    assert hits[0].key == "pottery"
    assert _semantic(hits, "car") < 0.5 * _semantic(hits, "pottery")


def test_the_neighbour_weight_is_a_setting(tmp_path: Path) -> None:
    assert Settings().neighbour_weight == NEIGHBOUR_WEIGHT
    with pytest.raises(ConfigurationError, match="neighbour_weight"):
        Settings(neighbour_weight=1.5)
    lifted = {}
    for weight in (0.0, NEIGHBOUR_WEIGHT):
        url = f"sqlite:///{tmp_path / f'w{weight}.db'}"
        settings = Settings.from_env(environ={}, neighbour_weight=weight)
        with TieredMemoryStore.from_url(url, settings=settings) as store:
            store.batch(_conversation(_turn("answer", "Yes! I made a little blue bowl.")))
            hits = _search(store)
            lifted[weight] = _semantic(hits, "answer") - _semantic(hits, "dog")
    assert abs(lifted[0.0]) < 0.02
    assert lifted[NEIGHBOUR_WEIGHT] > 0.1
