"""Relations as facts over time: kept in semantic values, superseded and replayed with them.

On every backend, through the sync and the async twins.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.engine.relations import (
    Relation,
    refreshed_value,
    statement_relations,
    value_with_relations,
)


async def _last_event_at(twin: Any, scope: str) -> datetime:
    at: datetime = (await twin.timeline(scope, limit=100_000))[-1].at
    return at


def _triples(relations: list[Relation]) -> list[tuple[str, str, str]]:
    return [(r.subject, r.relation, r.object) for r in relations]


async def test_a_move_ends_where_the_user_lived_and_replay_still_shows_it(twin: Any) -> None:
    berlin = (await twin.add_semantic("jo", "I live in Berlin.")).memory
    assert berlin.value["relations"] == [
        {"subject": "user", "relation": "lives_in", "object": "Berlin"}
    ]
    before_move = await _last_event_at(twin, "jo")
    await asyncio.sleep(0.01)
    moved = await twin.add_semantic("jo", "I moved to Munich last month.")
    assert moved.action == "superseded"
    munich = moved.memory

    now = await twin.relations("jo")
    assert _triples(now) == [("user", "lives_in", "Munich")]
    assert now[0].memory_id == munich.id
    assert now[0].valid_from == munich.valid_from
    assert now[0].valid_until is None

    then = await twin.relations("jo", as_of=before_move)
    assert _triples(then) == [("user", "lives_in", "Berlin")]
    assert then[0].memory_id == berlin.id
    assert then[0].valid_until == munich.valid_from  # ended by the move
    assert await twin.relations("jo", as_of=before_move.isoformat()) == then
    # The relation is part of the memory's value: versioned and evented with it.
    old = await twin.get("jo", berlin.id)
    assert old.status == "superseded"
    assert old.value["relations"] == berlin.value["relations"]
    superseded = await twin.timeline("jo", types=["memory.superseded"])
    assert [e.after["value"]["relations"][0]["object"] for e in superseded] == ["Berlin"]
    # Another scope has none of them; before a scope's first event there is nothing.
    assert await twin.relations("other") == []
    assert await twin.relations("jo", as_of=before_move - timedelta(days=1)) == []


async def test_a_job_change_moves_works_at_and_the_entities_show_it(twin: Any) -> None:
    acme = (await twin.add_semantic("jo", "I work at Acme Corp as a designer.")).memory
    await twin.add_semantic("jo", "My manager is Sarah.")
    before_change = await _last_event_at(twin, "jo")
    await asyncio.sleep(0.01)
    changed = await twin.add_semantic("jo", "I quit Acme and started at Globex this week.")
    assert changed.action == "superseded"

    assert _triples(await twin.relations("jo")) == [
        ("user", "manager", "Sarah"),
        ("user", "works_at", "Globex"),
    ]
    then = await twin.relations("jo", subject="User", as_of=before_change)
    assert _triples(then) == [("user", "works_at", "Acme Corp"), ("user", "manager", "Sarah")]
    assert then[0].memory_id == acme.id
    assert await twin.relations("jo", subject="sarah") == []  # the subject, not the object

    globex = await twin.entity("jo", "Globex")
    assert _triples(globex.relations) == [("user", "works_at", "Globex")]
    acme_now = await twin.entity("jo", "Acme")
    assert acme_now.relations == []  # named still, related no more
    assert {m.id for m in acme_now.memories} >= {acme.id}


async def test_facts_that_only_add_keep_both_and_state_no_relation(twin: Any) -> None:
    dog = await twin.add_semantic("jo", "I have a dog.")
    cat = await twin.add_semantic("jo", "I also have a cat.")
    assert (dog.action, cat.action) == ("created", "created")
    assert [m.status for m in await twin.memories("jo")] == ["active", "active"]
    # No slot: the values are as they were before relations were kept.
    assert dog.memory.value == {"content": "I have a dog.", "confidence": 1.0}
    assert "relations" not in cat.memory.value
    assert await twin.relations("jo") == []


async def test_a_new_version_restates_its_relations_and_a_callers_are_kept(twin: Any) -> None:
    lives = (await twin.add_semantic("jo", "I live in Munich.")).memory
    updated = await twin.update_semantic("jo", lives.id, "I live in Hamburg.")
    assert updated.value["relations"][0]["object"] == "Hamburg"
    assert _triples(await twin.relations("jo")) == [("user", "lives_in", "Hamburg")]

    own = [{"subject": "Kim", "relation": "mentor_of", "object": "Jo"}]
    written = await twin.write(
        ("kim", "semantic"), "k1", {"content": "Kim lives in Oslo.", "relations": own}
    )
    assert written.memory.value["relations"] == own
    found = await twin.relations("kim", subject="kim")
    assert _triples(found) == [("Kim", "mentor_of", "Jo")]


async def test_a_merge_keeps_the_relation_of_the_merged_content(twin: Any) -> None:
    await twin.add_semantic("jo", "I live in Berlin.")
    merged = await twin.add_semantic("jo", "I moved to Munich last month.", strategy="merge")
    assert merged.action == "merged"
    assert merged.memory.value["relations"] == [
        {"subject": "user", "relation": "lives_in", "object": "Munich"}
    ]
    assert _triples(await twin.relations("jo")) == [("user", "lives_in", "Munich")]


async def test_a_bad_as_of_or_subject_names_the_field(twin: Any) -> None:
    with pytest.raises(ValidationError, match="as_of"):
        await twin.relations("jo", as_of="not a time")
    with pytest.raises(ValidationError, match="subject"):
        await twin.relations("jo", subject="")


def test_values_keep_their_shape_without_a_slot_and_follow_their_content() -> None:
    assert statement_relations("Sounds lovely.") == []
    assert value_with_relations({"content": "I have a dog."}) is None
    assert value_with_relations({"content": {"text": "I live in Rome."}}) is None
    stated = value_with_relations({"content": "I'm a vegetarian."})
    assert stated == {
        "content": "I'm a vegetarian.",
        "relations": [{"subject": "user", "relation": "diet", "object": "vegetarian"}],
    }
    # A content change restates derived relations, drops them when none is left...
    assert refreshed_value(stated, {**stated, "content": "I'm vegan now."})["relations"] == [
        {"subject": "user", "relation": "diet", "object": "vegan"}
    ]
    assert refreshed_value(stated, {**stated, "content": "I like tea."}) == {
        "content": "I like tea."
    }
    # ...and leaves a caller's own relations alone.
    own = {"content": "I'm a vegetarian.", "relations": [{"subject": "a", "relation": "b"}]}
    assert refreshed_value(own, {**own, "content": "I like tea."}) == {
        **own,
        "content": "I like tea.",
    }
