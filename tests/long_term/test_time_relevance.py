"""Memory that answers right: time-aware retrieval, current facts first, an absolute
relevance with ``min_score``, and fact-augmented keys, on every backend of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.store.base import BaseStore

from langmem_tiers.errors import InvalidFilterError, ValidationError
from langmem_tiers.long_term.store.search.time import parse_time_query, says_when
from langmem_tiers.sql.dialect import TERMS
from langmem_tiers.sql.flow import Sql

from .fakes import default_index

UTC = timezone.utc
NOW = datetime(2024, 3, 14, 12, 0, tzinfo=UTC)  # a Thursday
EPISODIC = ("u1", "episodic")
SEMANTIC = ("u1", "semantic")


def _content_index() -> Any:
    return default_index(fields=("content",))


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday", "2024-03-13", "2024-03-14"),
        ("what did I cook two days ago", "2024-03-12", "2024-03-13"),
        ("where was I 3 weeks ago", "2024-02-19", "2024-02-26"),
        ("what did we decide last week", "2024-03-04", "2024-03-11"),
        ("who called on Monday", "2024-03-11", "2024-03-12"),
        ("who called last Thursday", "2024-03-07", "2024-03-08"),
        ("what happened in March", "2024-03-01", "2024-04-01"),
        ("what happened in June", "2023-06-01", "2023-07-01"),
        ("trips in 2022", "2022-01-01", "2023-01-01"),
        ("the party on 8 May, 2023", "2023-05-08", "2023-05-09"),
        ("the party on May 8, 2023", "2023-05-08", "2023-05-09"),
        ("news from May 2023", "2023-05-01", "2023-06-01"),
        ("last month's invoices", "2024-02-01", "2024-03-01"),
        ("two months ago", "2024-01-01", "2024-02-01"),
        ("last weekend", "2024-03-09", "2024-03-11"),
        ("in the past 3 days", "2024-03-12", "2024-03-15"),
    ],
)
def test_time_expressions_resolve_against_now(query: str, start: str, end: str) -> None:
    window = parse_time_query(query, NOW).window
    assert window is not None, query
    assert (window.start.date().isoformat(), window.end.date().isoformat()) == (start, end)


@pytest.mark.parametrize(
    "query", ["You may like this", "what is the capital of France", "March on", "Jan said hi"]
)
def test_no_time_expression_no_window(query: str) -> None:
    parsed = parse_time_query(query, NOW)
    assert parsed.window is None
    assert parsed.terms == {}


@pytest.mark.parametrize(
    ("query", "present"),
    [
        ("where does Alice live now", True),
        ("what is her current job", True),
        ("does he still play tennis", True),
        ("what does she cook these days", True),
        ("where did Alice live", False),
        ("what do you know about it", False),
    ],
)
def test_present_tense_questions(query: str, present: bool) -> None:
    assert parse_time_query(query, NOW).present is present


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Jo move to Lisbon?", True),
        ("when is the launch", True),
        ("How long has Sam played chess?", True),
        ("Which year did Ann adopt her dog?", True),
        ("In what month did they marry?", True),
        ("How many days passed between the two trips?", True),
        ("What time is the meeting?", True),
        ("Where did Jo move when she left?", False),
        ("What did Jo do last week?", False),
        ("How many dogs does Ann have?", False),
        ("whenever you like", False),
    ],
)
def test_questions_that_ask_when(query: str, asks: bool) -> None:
    assert parse_time_query(query, NOW).asks_when is asks


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("Last week I went on a trip to Canada", True),
        ("Yesterday we adopted a puppy", True),
        ("I've had them for 3 years!", True),
        ("Let's go hiking next month", True),
        ("We met two days ago", True),
        ("See you on Saturday", True),
        ("We married in 2021", True),
        ("The party is in May", True),
        ("We got back in September", True),
        ("I love hiking with the dogs", False),
        ("You may like it", False),
        ("Call me at 555-2024-11", False),
        ("Thanks, that sounds great!", False),
    ],
)
def test_texts_that_say_when(text: str, says: bool) -> None:
    assert says_when(text) is says


def test_a_question_asking_when_prefers_the_memory_that_says_when(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    """The answer to "when" is a time: the turn that tells the move with its time is the
    evidence, before one that shares more of the question's words but says no time."""
    store = make_store(index=None)  # words alone
    at = "2024-03-01T10:00:00+00:00"
    store.put(EPISODIC, "talk", {"content": "Jo loves the flat in Lisbon", "event_timestamp": at})
    store.put(EPISODIC, "told", {"content": "Jo moved last spring", "event_timestamp": at})
    query = "When did Jo move into the flat in Lisbon?"
    off = store.search(EPISODIC, query=query, filter={"$search": {"time": "off"}})
    assert [h.key for h in off] == ["talk", "told"], [(h.key, h.score) for h in off]
    hits = store.search(EPISODIC, query=query)
    assert [h.key for h in hits] == ["told", "talk"], [(h.key, h.score) for h in hits]
    # Not a question about a time: the closer match stays first.
    hits = store.search(EPISODIC, query="Jo moving into the flat in Lisbon")
    assert hits[0].key == "talk", [(h.key, h.score) for h in hits]


def _put_events(store: BaseStore) -> None:
    # The same text at different times: only the event time tells them apart.
    for key, at in [
        ("may", "2023-05-08T10:00:00+00:00"),
        ("june", "2023-06-20T10:00:00+00:00"),
        ("monday", "2024-03-11T18:00:00+00:00"),
        ("old", "2021-11-02T09:00:00+00:00"),
    ]:
        store.put(EPISODIC, key, {"content": "We had dinner with Sam", "event_timestamp": at})


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("dinner with Sam in May 2023", "may"),
        ("dinner with Sam in June", "june"),
        ("dinner with Sam on Monday", "monday"),
        ("dinner with Sam in 2021", "old"),
        ("dinner with Sam on 8 May 2023", "may"),
    ],
)
def test_event_time_is_found_by_its_words(
    make_store: Callable[..., BaseStore], ours: None, query: str, first: str
) -> None:
    store = make_store(index=_content_index())
    _put_events(store)
    hits = store.search(EPISODIC, query=query, filter={"$search": {"now": NOW.isoformat()}})
    assert hits[0].key == first, [(h.key, h.score) for h in hits]


def test_a_time_the_text_names_is_found_by_its_words(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    """ "Yesterday", said on 17 March 2022, is 16 March 2022: a question about that day
    finds the message that says it before a closer match of the same day naming none."""
    store = make_store(index=None)  # words alone
    said = "2022-03-17T19:00:00+00:00"
    named = {"content": "Yesterday James went bowling with John", "event_timestamp": said}
    store.put(EPISODIC, "named", named)
    store.put(EPISODIC, "plain", {"content": "James went bowling", "event_timestamp": said})
    hits = store.search(EPISODIC, query="What did James do on March 16, 2022?")
    assert [h.key for h in hits] == ["named", "plain"], [(h.key, h.score) for h in hits]


async def test_time_filter_keeps_only_the_window(
    make_store: Callable[..., BaseStore], ours: None, twin_of: Any
) -> None:
    twin = twin_of(make_store(index=_content_index()))
    _put_events(twin.obj)
    hits = await twin.search(EPISODIC, query="dinner with Sam on Monday", now=NOW, time="filter")
    assert [h.key for h in hits] == ["monday"]
    every = await twin.search(EPISODIC, query="dinner with Sam on Monday", now=NOW, time="off")
    assert len(every) == 4


def test_time_terms_live_in_the_index(make_store: Callable[..., BaseStore], ours: None) -> None:
    store = make_store(index=_content_index())
    store.put(EPISODIC, "e", {"content": "hello", "event_timestamp": "2023-05-08T10:00:00Z"})

    def read() -> Any:
        rows = yield Sql(f"SELECT term FROM {TERMS} WHERE term LIKE '@%' ORDER BY term")
        return rows

    terms = [r[0] for r in store.db.run(read())]  # type: ignore[attr-defined]
    assert terms == ["@2023", "@2023-05", "@2023-05-08", "@may", "@monday"]


def test_bad_search_options_are_refused(make_store: Callable[..., BaseStore], ours: None) -> None:
    store = make_store()
    with pytest.raises(InvalidFilterError, match="time"):
        store.search(EPISODIC, query="x", filter={"$search": {"time": "sometimes"}})
    with pytest.raises(InvalidFilterError, match="unknown search option"):
        store.search(EPISODIC, query="x", filter={"$search": {"when": 1}})
    with pytest.raises(ValidationError, match="min_score"):
        store.search(EPISODIC, query="x", min_score=1.5)
    with pytest.raises(InvalidFilterError, match="authors must be one of boost, off, got 'no'"):
        store.search(EPISODIC, query="x", filter={"$search": {"authors": "no"}})


# -- current facts first -------------------------------------------------------------------


def test_ended_and_superseded_facts_are_hidden_but_seen_as_of(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=_content_index())
    store.put(
        SEMANTIC,
        "old",
        {
            "content": "Alice works at Acme",
            "status": "superseded",
            "valid_from": "2020-01-01T00:00:00Z",
            "valid_until": "2023-01-01T00:00:00Z",
        },
    )
    store.put(
        SEMANTIC,
        "ended",
        {
            "content": "Alice works at Initech",
            "valid_from": "2021-01-01T00:00:00Z",
            "valid_until": "2023-06-01T00:00:00Z",
        },
    )
    store.put(SEMANTIC, "now", {"content": "Alice works at Globex"})
    current = store.search(SEMANTIC, query="where does Alice work")
    assert [h.key for h in current] == ["now"]
    # What was current in 2022: the superseded fact, not the later ones' end dates.
    then = store.search(SEMANTIC, query="where does Alice work", as_of="2022-06-01T00:00:00Z")
    assert "old" in [h.key for h in then]
    assert "ended" in [h.key for h in then]
    assert "now" not in [h.key for h in then]  # created after 2022


def test_present_tense_question_prefers_the_newest(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=_content_index())
    # The older memory is more confident: without the present-tense boost it ranks first.
    store.put(
        EPISODIC,
        "oslo",
        {
            "content": "I moved and I live in Oslo",
            "event_timestamp": "2019-01-10T00:00:00Z",
            "confidence": 1.0,
        },
    )
    store.put(
        EPISODIC,
        "rome",
        {
            "content": "I moved and I live in Rome",
            "event_timestamp": "2020-01-10T00:00:00Z",
            "confidence": 0.6,
        },
    )
    plain = store.search(EPISODIC, query="where do I live", now=NOW)
    assert plain[0].key == "oslo"
    present = store.search(EPISODIC, query="where do I live now", now=NOW)
    assert present[0].key == "rome"


# -- absolute relevance and min_score ----------------------------------------------------------


def test_a_lone_hit_is_scored_by_how_well_it_matches(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=_content_index())
    store.put(SEMANTIC, "bob", {"content": "Bob likes jazz"})
    miss = store.search(SEMANTIC, query="music")
    hit = store.search(SEMANTIC, query="Bob jazz")
    assert miss[0].scores["semantic"] < 0.2  # type: ignore[attr-defined]
    assert hit[0].scores["semantic"] > 0.6  # type: ignore[attr-defined]
    assert store.search(SEMANTIC, query="music", min_score=0.3) == []
    assert [h.key for h in store.search(SEMANTIC, query="Bob jazz", min_score=0.3)] == ["bob"]


def test_relevance_means_the_same_for_one_hit_or_many(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    alone = make_store(index=_content_index())
    crowd = make_store(index=_content_index())
    for store in (alone, crowd):
        store.put(SEMANTIC, "bob", {"content": "Bob likes jazz"})
    for i in range(60):
        crowd.put(SEMANTIC, f"n{i}", {"content": f"note {i} about the garden and tea"})
    one = alone.search(SEMANTIC, query="Bob jazz")[0].scores["semantic"]  # type: ignore[attr-defined]
    many = [h for h in crowd.search(SEMANTIC, query="Bob jazz") if h.key == "bob"]
    assert abs(one - many[0].scores["semantic"]) < 0.1  # type: ignore[attr-defined]
    # A query that matches nothing does not spread the crowd around 0.5.
    nothing = crowd.search(SEMANTIC, query="x", limit=50)
    assert max(h.scores["semantic"] for h in nothing) < 0.2  # type: ignore[attr-defined]


# -- fact-augmented keys ------------------------------------------------------------------------


def test_extracted_facts_make_a_message_findable(
    make_store: Callable[..., BaseStore], ours: None
) -> None:
    store = make_store(index=_content_index())
    store.put(
        EPISODIC,
        "m1",
        {"content": "Ugh, cilantro tastes like soap to me", "tier1": "dislikes=cilantro"},
    )
    # Another conversation (a day later): a message of the same one would be lifted by its
    # neighbour m1 (test_neighbours.py), and this test is about m1's own relevance.
    store.put(
        EPISODIC,
        "m2",
        {
            "content": "The weather in Oslo was lovely",
            "tier1": "place=Oslo",
            "event_timestamp": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
        },
    )
    hits = store.search(EPISODIC, query="which foods does the user dislike?")
    assert hits[0].key == "m1"
    others = [h.scores["semantic"] for h in hits[1:]]  # type: ignore[attr-defined]
    assert all(hits[0].scores["semantic"] > 2 * other for other in others)  # type: ignore[attr-defined]
    assert store.search(EPISODIC, query="hometown location")[0].key == "m2"
