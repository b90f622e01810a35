"""Who said it: a query naming a speaker prefers that speaker's memories, on every backend."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from langmem_tiers.long_term.store.search import authors
from langmem_tiers.long_term.store.search.authors import (
    AUTHOR_BOOST,
    author_boosts,
    author_terms,
    by_author,
)
from langmem_tiers.long_term.store.search.ranking import Ranked, ScoreComponents
from langmem_tiers.sql.dialect import ITEMS
from langmem_tiers.sql.flow import Sql, Transaction

from .fakes import default_index

EPISODIC = ("conv", "episodic")
START = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("value", "terms"),
    [
        ({"content": "Melanie: We went camping."}, {"melani"}),
        ({"content": "Dr. Ana Ruiz: Take two a day."}, {"dr", "ana", "ruiz"}),
        ({"content": "We went camping.", "actor": "Melanie"}, {"melani"}),
        ({"content": "Jon: hi", "speaker": "Gina"}, {"gina"}),  # the field wins
        ({"content": "ok", "actor": "human"}, {"human", "user"}),
        ({"content": "ok", "actor": "ai"}, {"ai", "assist"}),
        ({"content": "ok", "author": "  "}, set()),  # a blank field names no one
        ({"content": "Jon: hi", "actor": 7}, {"jon"}),  # not a string: the label
        ({"content": "10:30 stand-up moved"}, set()),
        ({"content": "see http://example.org"}, set()),
        ({"content": "one two three four: too long for a name"}, set()),
        ({"content": "The: only stop words"}, set()),
        ({"summary": "no content"}, set()),
    ],
)
def test_the_author_of_a_memory(value: dict[str, Any], terms: set[str]) -> None:
    assert author_terms(value) == terms


def test_boosts_only_when_the_query_names_some_authors_but_not_all() -> None:
    authors = {"m": frozenset({"melani"}), "c": frozenset({"carolin"}), "x": frozenset()}
    other = pytest.approx(1 - AUTHOR_BOOST)
    assert author_boosts(authors, {"melani", "kid"}) == {"m": 1.0, "c": other, "x": 1.0}
    assert author_boosts(authors, {"kid"}) == {}
    assert author_boosts(authors, set()) == {}
    both = {"m": frozenset({"melani"}), "c": frozenset({"carolin"})}
    assert author_boosts(both, {"melani", "carolin"}) == {}


@pytest.mark.parametrize("seed", range(20))
def test_the_first_of_a_ranking_are_those_of_boosting_every_candidate(seed: int) -> None:
    rng = random.Random(seed)
    names = [frozenset(), frozenset({"ann"}), frozenset({"bob"}), frozenset({"cy"})]
    ranked = sorted(
        (
            Ranked(f"m{n}", round(rng.random(), 2), ScoreComponents(0.5, 0.0, 0.0, 1.0))
            for n in range(40)
        ),
        key=lambda r: (-r.score, r.id),
    )
    author = {r.id: rng.choice(names) for r in ranked}
    looked_at: list[str] = []

    def authors_of(item_id: str) -> frozenset[str]:
        looked_at.append(item_id)
        return author[item_id]

    want = rng.randint(1, 15)
    boosts = author_boosts(author, {"ann", "kid"})
    every = sorted(
        (r._replace(score=r.score * boosts.get(r.id, 1.0)) for r in ranked),
        key=lambda r: (-r.score, r.id),
    )
    assert by_author(ranked, want, {"ann", "kid"}, authors_of)[:want] == every[:want]
    bar = ranked[want - 1].score * (1 - AUTHOR_BOOST)
    assert set(looked_at) == {r.id for r in ranked if r.score >= bar}


def _put_turns(store: BaseStore, turns: list[dict[str, Any]]) -> None:
    # A day apart: other conversations, so no turn lifts its neighbour (test_neighbours.py).
    for n, value in enumerate(turns):
        at = (START + timedelta(days=n)).isoformat()
        store.put(EPISODIC, f"t{n}", {**value, "event_timestamp": at})


@pytest.mark.parametrize(
    "turns",
    [
        [
            {"content": "Caroline: Hey Melanie, are your kids still painting with you?"},
            {"content": "Melanie: The kids love painting dinosaurs lately."},
        ],
        [
            {"content": "Hey Melanie, are your kids still painting with you?", "actor": "Caroline"},
            {"content": "The kids love painting dinosaurs lately.", "actor": "Melanie"},
        ],
    ],
    ids=["label", "field"],
)
def test_a_query_naming_a_speaker_prefers_what_they_said(
    make_store: Callable[..., BaseStore],
    ours: None,
    turns: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    _put_turns(store, turns)
    query = "What are Melanie's kids painting?"
    assert [h.key for h in store.search(EPISODIC, query=query)] == ["t1", "t0"]
    # Naming no speaker, the words decide.
    assert store.search(EPISODIC, query="are your kids painting with you")[0].key == "t0"
    # Caroline's turn shares more of the query's words: only the author puts Melanie's first.
    monkeypatch.setattr(authors, "AUTHOR_BOOST", 0.0)
    assert store.search(EPISODIC, query=query)[0].key == "t0"


def test_roles_are_named_as_people_name_them(
    make_store: Callable[..., BaseStore], ours: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store(index=default_index(fields=("content",)))
    _put_turns(
        store,
        [
            {"content": "Should the launch page use the blue theme?", "actor": "human"},
            {"content": "For the launch page, the green theme: it tested better.", "actor": "ai"},
        ],
    )
    user = "Which theme did the user want for the launch page?"
    assert store.search(EPISODIC, query=user)[0].key == "t0"
    assistant = "Which theme for the launch page did the assistant suggest?"
    assert store.search(EPISODIC, query=assistant)[0].key == "t1"
    # Alike in words, the newer answer comes first: the user's question wins by its role.
    monkeypatch.setattr(authors, "AUTHOR_BOOST", 0.0)
    assert store.search(EPISODIC, query=user)[0].key == "t1"


def test_only_episodic_memories_have_an_author(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    # A fact is about the user whoever stated it: naming the user prefers none of them.
    store = make_store(index=default_index(fields=("content",)))
    name = {"content": "The user's name is Jordan.", "actor": "human"}
    tea = {"content": "The user drinks tea.", "actor": "ai"}
    days = [(START + timedelta(days=n)).isoformat() for n in range(2)]  # not neighbours
    scores = {}
    for kind in ("semantic", "episodic"):
        store.put(("u1", kind), "name", {**name, "event_timestamp": days[0]})
        store.put(("u1", kind), "tea", {**tea, "event_timestamp": days[1]})
        hits = store.search(("u1", kind), query="what does the user drink?")
        scores[kind] = {h.key: h.score for h in hits}
    # Kinds rank alike but for a constant factor; only the assistant's episode loses.
    said, facts = scores["episodic"], scores["semantic"]
    assert said["tea"] / said["name"] == pytest.approx(
        (1 - AUTHOR_BOOST) * facts["tea"] / facts["name"]
    )


def test_an_author_changed_in_place_is_seen_at_the_next_search(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    # Lifecycle changes may rewrite a value without touching updated_at: the author the
    # searches remember follows the value, not the time.
    store = make_store(index=default_index(fields=("content",)))
    turns = [
        {"content": "Should the launch page use the blue theme?", "actor": "human"},
        {"content": "For the launch page, the green theme: it tested better.", "actor": "ai"},
    ]
    _put_turns(store, turns)
    user = "Which theme did the user want for the launch page?"
    assert store.search(EPISODIC, query=user)[0].key == "t0"
    dialect = store.db.dialect  # type: ignore[attr-defined]
    rows = []
    for n, actor in enumerate(("ai", "human")):
        item = store.get(EPISODIC, f"t{n}")
        assert item is not None
        value = dialect.json_param({**item.value, "actor": actor})
        rows.append([value, "conv.episodic", f"t{n}"])

    def rewrite() -> Any:
        for params in rows:
            yield Sql(f"UPDATE {ITEMS} SET value = ? WHERE prefix = ? AND key = ?", params)

    def in_transaction() -> Any:
        yield Transaction(rewrite())

    store.db.run(in_transaction())  # type: ignore[attr-defined]
    assert store.search(EPISODIC, query=user)[0].key == "t1"


async def test_a_search_can_turn_the_speaker_preference_off(
    make_store: Callable[..., BaseStore], ours: None, twin_of: Any
) -> None:
    twin = twin_of(make_store(index=default_index(fields=("content",))))
    _put_turns(
        twin.obj,
        [
            {"content": "Caroline: Hey Melanie, are your kids still painting with you?"},
            {"content": "Melanie: The kids love painting dinosaurs lately."},
        ],
    )
    query = "What are Melanie's kids painting?"
    assert [h.key for h in await twin.search(EPISODIC, query=query)] == ["t1", "t0"]
    assert [h.key for h in await twin.search(EPISODIC, query=query, authors="off")] == [
        "t0",
        "t1",
    ]
    # The option rides in the filter, as any BaseStore caller passes it.
    plain = await twin.search(EPISODIC, query=query, filter={"$search": {"authors": "off"}})
    assert [h.key for h in plain] == ["t0", "t1"]
