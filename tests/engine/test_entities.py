"""Entities of a scope: recorded from every memory the engine writes, read by name or alias.

On every backend, through the sync and the async twins.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from langmem_tiers.errors import ValidationError
from langmem_tiers.long_term.store.migrations import ENTITIES as ENTITIES_SCHEMA
from langmem_tiers.sql.dialect import (
    ENTITIES,
    ENTITY_MENTIONS,
    Dialect,
    PostgresDialect,
    SqliteDialect,
)
from langmem_tiers.tiers.entities import Mention, find_entities, same_entity


def test_rules_tell_people_organisations_and_places() -> None:
    found = find_entities("I moved to Munich with Anna and joined Globex Inc in March.", "Jo")
    assert found == [
        Mention("Jo", "person"),
        Mention("Munich", "place"),
        Mention("Anna", "person"),
        Mention("Globex Inc", "organization"),
    ]
    # No first person: the speaker is not mentioned; a greeting's name still is.
    assert find_entities("Hey Mel! Lovely photo.", "Jo") == [Mention("Mel", "thing")]
    assert find_entities("Thanks, sounds good.") == []


def test_short_forms_are_one_entity_and_different_names_are_not() -> None:
    assert same_entity("Mel", "Melanie")
    assert same_entity("acme", "Acme Corp")
    assert not same_entity("Mel", "Melbourne Park")
    assert not same_entity("Jo", "Joanna")  # too short to tell
    assert not same_entity("Ann", "Annabelle-Marie")


@pytest.mark.parametrize("dialect", [SqliteDialect(), PostgresDialect()])
def test_the_entity_tables_are_a_component_that_only_adds_tables(dialect: Dialect) -> None:
    (only,) = ENTITIES_SCHEMA.migrations(dialect)
    last = only.steps
    assert all(isinstance(step, str) for step in last)
    assert all(step.lstrip().startswith(("CREATE TABLE", "CREATE INDEX")) for step in last)
    assert any(ENTITIES in step for step in last)
    assert any(ENTITY_MENTIONS in step for step in last)


async def test_every_kind_of_memory_records_what_it_names(twin: Any) -> None:
    first = await twin.add_episodic(
        "jo", "Hey Mel! I went hiking with my sister Anna in Yosemite.", actor="Caroline"
    )
    second = await twin.add_episodic("jo", "Melanie said the Acme Corp office in Berlin is nice.")
    fact = await twin.add_semantic("jo", "The user works at Acme Corp as a designer.")
    await twin.set_procedural("jo", "style", "short", content="Anna prefers short answers.")
    await twin.add_episodic("other", "Melanie lives in Paris.")

    found = {e.name: e for e in await twin.entities("jo")}
    assert set(found) == {"Melanie", "Anna", "Yosemite", "Caroline", "Acme Corp", "Berlin"}
    assert found["Melanie"].aliases == ("Mel",)
    assert found["Melanie"].kind == "person"
    assert found["Anna"].mentions == 2
    assert found["Acme Corp"].kind == "organization"
    assert found["Yosemite"].kind == "place"
    assert found["Caroline"].mentions == 1  # the speaker of the first-person episode
    ranked = await twin.entities("jo")
    assert [e.mentions for e in ranked] == sorted((e.mentions for e in ranked), reverse=True)

    detail = await twin.entity("jo", "mel")
    assert detail.entity.name == "Melanie"
    assert [m.id for m in detail.memories] == [first.id, second.id]
    acme = await twin.entity("jo", "Acme")
    assert {m.id for m in acme.memories} == {second.id, fact.memory.id}
    assert await twin.entity("jo", "Nobody") is None
    # Scopes never see each other's entities.
    assert [e.name for e in await twin.entities("other")] == ["Melanie", "Paris"]
    assert len((await twin.entity("other", "Melanie")).memories) == 1


async def test_a_duplicate_or_a_reinforcement_counts_no_new_mention(twin: Any) -> None:
    await twin.set_procedural("jo", "tone", "warm", content="Keep it warm for Anna.")
    await twin.set_procedural("jo", "tone", "warm", content="Keep it warm for Anna.")
    await twin.add_semantic("jo", "Anna lives in Porto.")
    await twin.add_semantic("jo", "Anna lives in Porto.")
    (anna,) = [e for e in await twin.entities("jo") if e.name == "Anna"]
    assert anna.mentions == 2


async def test_bad_input_names_the_field(twin: Any) -> None:
    with pytest.raises(ValidationError, match="name"):
        await twin.entity("jo", "")
    with pytest.raises(ValidationError, match="limit"):
        await twin.entities("jo", limit=0)
    with pytest.raises(ValidationError, match="offset"):
        await twin.entities("jo", offset=-1)


async def _last_event_at(twin: Any, scope: str) -> datetime:
    at: datetime = (await twin.timeline(scope, limit=100_000))[-1].at
    return at


async def test_an_entity_as_of_an_instant_is_what_the_memories_of_then_said(twin: Any) -> None:
    greeting = await twin.add_episodic("jo", "Hey Mel! I live in Berlin now.", actor="Caroline")
    berlin = (await twin.add_semantic("jo", "I live in Berlin.")).memory
    before_move = await _last_event_at(twin, "jo")
    await asyncio.sleep(0.01)
    later = await twin.add_episodic("jo", "Melanie said Berlin was grey and I moved to Munich.")
    munich = (await twin.add_semantic("jo", "I moved to Munich last month.")).memory

    # Now: both names joined, both mentions, no relation left with Berlin.
    mel = await twin.entity("jo", "Mel")
    assert (mel.entity.name, mel.entity.aliases, mel.entity.mentions) == ("Melanie", ("Mel",), 2)
    assert [m.id for m in mel.memories] == [greeting.id, later.id]
    assert (await twin.entity("jo", "Berlin")).relations == []

    # Then: one mention, by the only name used so far; Berlin was where the user lived.
    mel_then = await twin.entity("jo", "Melanie", as_of=before_move)
    assert (mel_then.entity.name, mel_then.entity.aliases) == ("Mel", ())
    assert mel_then.entity.mentions == 1
    assert [m.id for m in mel_then.memories] == [greeting.id]
    assert mel_then.entity.first_seen == mel_then.entity.last_seen == mel.entity.first_seen
    assert mel.entity.last_seen > mel.entity.first_seen
    assert await twin.entity("jo", "Mel", as_of=before_move.isoformat()) == mel_then
    berlin_then = await twin.entity("jo", "Berlin", as_of=before_move)
    assert [m.id for m in berlin_then.memories] == [greeting.id, berlin.id]
    assert [(r.subject, r.relation, r.object) for r in berlin_then.relations] == [
        ("user", "lives_in", "Berlin")
    ]
    assert berlin_then.relations[0].valid_until == munich.valid_from  # as known now
    # Named only later, or before the scope's first event: no entity then.
    assert await twin.entity("jo", "Munich", as_of=before_move) is None
    assert await twin.entity("jo", "Berlin", as_of=before_move - timedelta(days=1)) is None
    assert (await twin.entity("jo", "Munich")).memories[-1].id == munich.id
    with pytest.raises(ValidationError, match="as_of"):
        await twin.entity("jo", "Berlin", as_of="not a time")
