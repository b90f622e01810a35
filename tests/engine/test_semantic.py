"""Semantic memories: duplicates, contradictions and the four strategies, offline and LLM."""

from __future__ import annotations

import pytest

from langmem_tiers.errors import NotFoundError, ValidationError
from langmem_tiers.long_term.engine.engine import MemoryEngine

from .fakes import scripted


async def test_new_fact_is_created_with_its_first_version(twin) -> None:
    result = await twin.add_semantic("alice", "Alice lives in Berlin", subject="Alice")
    assert result.action == "created"
    assert result.conflicts == []
    memory = result.memory
    assert (memory.kind, memory.status, memory.version, memory.subject) == (
        "semantic",
        "active",
        1,
        "Alice",
    )
    assert memory.value["content"] == "Alice lives in Berlin"
    versions = await twin.evolution("alice", memory.id)
    assert [(v.version, v.content, v.reason) for v in versions] == [
        (1, "Alice lives in Berlin", "created")
    ]


async def test_duplicate_returns_the_existing_memory_and_stores_nothing(twin) -> None:
    first = await twin.add_semantic("alice", "Alice likes green tea")
    again = await twin.add_semantic("alice", "Alice likes green tea")
    assert again.action == "duplicate"
    assert again.memory.id == first.memory.id
    assert again.conflicts[0].similarity == pytest.approx(1.0)
    assert [m.id for m in await twin.memories("alice")] == [first.memory.id]


async def test_unrelated_facts_are_both_created(twin) -> None:
    await twin.add_semantic("alice", "Alice likes green tea")
    other = await twin.add_semantic("alice", "The server room is cold")
    assert other.action == "created"
    assert len(await twin.memories("alice")) == 2


async def test_supersede_links_both_ways_and_closes_validity(twin) -> None:
    old = (await twin.add_semantic("alice", "Alice lives in Berlin", subject="Alice")).memory
    new = await twin.add_semantic("alice", "Alice lives in Paris", subject="Alice")
    assert new.action == "superseded"
    assert [c.memory.id for c in new.conflicts if c.conflict] == [old.id]
    assert new.memory.value["supersedes"] == [old.id]
    gone = await twin.get("alice", old.id)
    assert gone.status == "superseded"
    assert gone.value["superseded_by"] == new.memory.id
    assert gone.valid_until == new.memory.valid_from
    assert [m.id for m in new.changed] == [old.id]
    hits = await twin.retrieve("alice", "where does Alice live")
    assert [h.id for h in hits] == [new.memory.id]
    everything = await twin.retrieve("alice", "where does Alice live", include_inactive=True)
    assert {h.id for h in everything} == {old.id, new.memory.id}
    # the superseded memory's current version stopped being current
    (version,) = await twin.evolution("alice", old.id)
    assert version.valid_until == gone.valid_until


async def test_keep_both_marks_the_conflict_on_each_side(twin) -> None:
    old = (await twin.add_semantic("alice", "Alice is 30 years old")).memory
    new = await twin.add_semantic("alice", "Alice is 31 years old", strategy="keep_both")
    assert new.action == "kept_both"
    (link,) = new.memory.value["conflicts_with"]
    assert link["id"] == old.id
    assert "30" in link["explanation"]
    kept = await twin.get("alice", old.id)
    assert kept.status == "active"
    assert kept.value["conflicts_with"][0]["id"] == new.memory.id
    assert len(await twin.memories("alice")) == 2


async def test_reject_new_stores_nothing_and_says_why(twin) -> None:
    old = (await twin.add_semantic("alice", "Alice likes jazz")).memory
    events_before = len(await twin.timeline("alice"))
    result = await twin.add_semantic("alice", "Alice does not like jazz", strategy="reject_new")
    assert result.action == "rejected"
    assert result.memory.id == old.id
    assert old.id in result.reason
    assert "negates" in result.reason
    assert [m.id for m in await twin.memories("alice", statuses=None)] == [old.id]
    assert len(await twin.timeline("alice")) == events_before


async def test_merge_makes_a_new_version_and_keeps_the_old_one(twin) -> None:
    old = (await twin.add_semantic("alice", "The budget is $5,000")).memory
    result = await twin.add_semantic("alice", "The budget is $7,000", strategy="merge")
    assert result.action == "merged"
    merged = result.memory
    assert merged.id == old.id
    assert merged.version == 2
    assert merged.content == "The budget is $7,000 (earlier: The budget is $5,000)"
    assert merged.value["merged_from"][0]["content"] == "The budget is $7,000"
    versions = await twin.evolution("alice", old.id)
    assert [(v.version, v.content) for v in versions] == [
        (1, "The budget is $5,000"),
        (2, "The budget is $7,000 (earlier: The budget is $5,000)"),
    ]
    assert versions[0].valid_until == versions[1].valid_from
    assert versions[1].reason.startswith("merged:")
    assert len(await twin.memories("alice")) == 1


async def test_merge_supersedes_the_other_contradicting_memories(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(conflict_candidates=5))
    a = (await twin.add_semantic("bob", "Bob works at Initech", strategy="keep_both")).memory
    b = (await twin.add_semantic("bob", "Bob works at Globex", strategy="keep_both")).memory
    result = await twin.add_semantic("bob", "Bob works at Umbrella", strategy="merge")
    assert result.action == "merged"
    target, other = (a, b) if result.memory.id == a.id else (b, a)
    assert result.memory.version == 2
    assert (await twin.get("bob", other.id)).value["superseded_by"] == target.id
    assert [m.id for m in await twin.memories("bob")] == [target.id]


async def test_default_strategy_comes_from_settings(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(settings={"conflict_strategy": "reject_new"}))
    await twin.add_semantic("alice", "Alice lives in Berlin")
    assert (await twin.add_semantic("alice", "Alice lives in Paris")).action == "rejected"
    assert (
        await twin.add_semantic("alice", "Alice lives in Paris", strategy="supersede")
    ).action == "superseded"


async def test_conversation_summaries_are_never_rejected(twin) -> None:
    await twin.add_semantic("alice", "Alice lives in Berlin")
    for _ in range(2):  # a contradicting one, then an exact copy
        result = await twin.add_semantic(
            "alice",
            "Alice lives in Paris",
            category="conversation_summary",
            strategy="reject_new",
        )
        assert result.action == "created"
    assert len(await twin.memories("alice")) == 3
    # and a fact never supersedes a summary
    fact = await twin.add_semantic("alice", "Alice lives in Rome", strategy="supersede")
    summaries = [m for m in await twin.memories("alice") if m.category == "conversation_summary"]
    assert len(summaries) == 2
    assert all(c.memory.category != "conversation_summary" for c in fact.conflicts)


async def test_a_subject_keeps_other_subjects_out_of_the_check(twin) -> None:
    await twin.add_semantic("team", "Alice lives in Berlin", subject="Alice")
    other = await twin.add_semantic("team", "Bob lives in Berlin", subject="Bob")
    assert other.action == "created"
    assert other.conflicts == []


async def test_source_episodes_must_belong_to_the_scope(twin) -> None:
    mine = await twin.add_episodic("alice", "We talked about Berlin")
    theirs = await twin.add_episodic("bob", "We talked about Paris")
    ok = await twin.add_semantic("alice", "Alice likes Berlin", source_episodic_ids=[mine.id])
    assert ok.memory.value["source_episodic_ids"] == [mine.id]
    with pytest.raises(NotFoundError, match="source_episodic_ids"):
        await twin.add_semantic("alice", "Alice likes Paris", source_episodic_ids=[theirs.id])
    assert len(await twin.memories("alice", kinds="semantic")) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"content": ""}, "content"),
        ({"content": "x\x00y"}, "NUL"),
        ({"content": 3}, "content"),
        ({"strategy": "overwrite"}, "strategy"),
        ({"confidence": 1.5}, "confidence"),
        ({"metadata": [1, 2]}, "metadata"),
        ({"source_episodic_ids": "abc"}, "source_episodic_ids"),
    ],
)
async def test_bad_input_is_refused_before_anything_is_written(twin, kwargs, match) -> None:
    args = {"content": "Alice lives in Berlin", **kwargs}
    content = args.pop("content")
    with pytest.raises(ValidationError, match=match):
        await twin.add_semantic("alice", content, **args)
    assert (await twin.stats("alice"))["total"] == 0


# -- the model-backed path -----------------------------------------------------------------
async def test_llm_judge_decides_and_merges(make_engine, twin_of) -> None:
    model = scripted(
        [
            "CONFLICT: yes\nCONFIDENCE: 0.9\nEXPLANATION: the city changed.",
            "Alice lives in Paris since 2025; she lived in Berlin before.",
        ]
    )
    twin = twin_of(make_engine(model=model))
    old = (await twin.add_semantic("alice", "Alice lives in Berlin")).memory
    merged = await twin.add_semantic("alice", "Alice lives in Paris since 2025", strategy="merge")
    assert merged.action == "merged"
    assert merged.conflicts[0].explanation == "the city changed."
    assert merged.conflicts[0].confidence == pytest.approx(0.9)
    assert merged.memory.id == old.id
    assert merged.memory.content == "Alice lives in Paris since 2025; she lived in Berlin before."


async def test_llm_judge_can_clear_what_the_rules_would_flag(make_engine, twin_of) -> None:
    model = scripted(["CONFLICT: no\nCONFIDENCE: 0.8\nEXPLANATION: both can be true."])
    twin = twin_of(make_engine(model=model))
    await twin.add_semantic("alice", "Alice lives in Berlin")
    result = await twin.add_semantic("alice", "Alice lives in Paris", strategy="reject_new")
    assert result.action == "created"
    assert result.conflicts[0].explanation == "both can be true."


async def test_llm_low_confidence_is_not_a_conflict(make_engine, twin_of) -> None:
    model = scripted(["CONFLICT: yes\nCONFIDENCE: 0.2\nEXPLANATION: unsure."])
    twin = twin_of(make_engine(model=model))
    await twin.add_semantic("alice", "Alice likes tea")
    result = await twin.add_semantic("alice", "Alice likes coffee", strategy="reject_new")
    assert result.action == "created"


async def test_llm_answer_out_of_format_falls_back_to_the_rules(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(model=scripted(["I would rather not say."])))
    await twin.add_semantic("alice", "Alice lives in Berlin")
    result = await twin.add_semantic("alice", "Alice lives in Paris", strategy="reject_new")
    assert result.action == "rejected"
    assert "'paris' now, 'berlin' before" in result.reason  # the rules' slot verdict


async def test_llm_failure_falls_back_to_the_rules(make_engine, twin_of) -> None:
    twin = twin_of(make_engine(model=scripted([])))  # raises on the first call
    await twin.add_semantic("alice", "Alice likes jazz")
    result = await twin.add_semantic("alice", "Alice hates jazz", strategy="reject_new")
    assert result.action == "rejected"


def test_engine_options_are_checked(engine: MemoryEngine) -> None:
    from langmem_tiers.errors import ConfigurationError

    for bad in ({"conflict_candidates": 0}, {"min_conflict_confidence": 2}, {"max_group_size": 0}):
        with pytest.raises(ConfigurationError):
            MemoryEngine(engine.store, **bad)  # type: ignore[arg-type]
