"""One spec for every message log (in-memory, JSONL), through the sync and async twins."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langmem_tiers.short_term.log import (
    AppendOp,
    ClaimOp,
    NextIdOp,
    ReadOp,
    ReleaseOp,
    RemoveOp,
    new_lease_owner,
)
from langmem_tiers.short_term.records import MessageDraft, draft_from_message
from langmem_tiers.tiers.base import MessageTiers

from .conftest import LogFactory, TwinOf


def drafts(*texts: str) -> list[MessageDraft]:
    return [draft_from_message(HumanMessage(t), index=i) for i, t in enumerate(texts)]


async def test_append_gives_sequential_ids_and_reads_in_order(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    log = twin_of(make_log())
    first = await log.append("s1", drafts("a", "b"))
    second = await log.append("s1", drafts("c"))
    assert [r.id for r in first + second] == ["m1", "m2", "m3"]
    assert [r.text for r in await log.read("s1")] == ["a", "b", "c"]
    assert [r.text for r in await log.read("s1", last=2)] == ["b", "c"]
    assert await log.read("s1", last=0) == []
    assert await log.read("other") == []
    assert [r.id for r in await log.append("other", drafts("x"))] == ["m1"]


async def test_ids_are_never_reused_after_remove_clear_or_reopen(
    make_log: LogFactory, twin_of: TwinOf, log_kind: str
) -> None:
    log = twin_of(make_log())
    await log.append("s1", drafts("a", "b", "c"))
    assert await log.remove("s1", ["m3", "m9"]) == ["m3"]
    assert await log.next_id("s1") == "m4"
    assert await log.clear("s1") == ["m1", "m2"]
    assert await log.read("s1") == []
    assert [r.id for r in await log.append("s1", drafts("d"))] == ["m4"]
    if log_kind == "jsonl":
        reopened = twin_of(make_log())
        assert [r.id for r in await reopened.read("s1")] == ["m4"]
        assert await reopened.next_id("s1") == "m5"


async def test_tier_level_only_rises_and_missing_ids_answer_none(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    log = twin_of(make_log())
    await log.append("s1", drafts("a"))
    raised = await log.set_tier_level("s1", "m1", 3)
    assert raised is not None
    assert raised.required_tier_level == 3
    unchanged = await log.set_tier_level("s1", "m1", 2)
    assert unchanged is not None
    assert unchanged.required_tier_level == 3
    assert await log.set_tier_level("s1", "m7", 3) is None
    assert await log.set_tier_level("s2", "m1", 3) is None
    assert (await log.read("s1"))[0].required_tier_level == 3


async def test_update_tiers_fills_missing_tiers(make_log: LogFactory, twin_of: TwinOf) -> None:
    log = twin_of(make_log())
    (record,) = await log.append("s1", drafts("Jordan here"))
    assert record.tier1 is None
    assert not record.tiered
    updated = await log.update_tiers(
        "s1", {"m1": MessageTiers("name=Jordan", "Jordan."), "m5": MessageTiers("x", "y")}
    )
    assert updated == ["m1"]
    (stored,) = await log.read("s1")
    assert (stored.tier1, stored.tier2, stored.text) == ("name=Jordan", "Jordan.", "Jordan here")


async def test_one_batch_appends_and_reads_back(make_log: LogFactory, twin_of: TwinOf) -> None:
    log = twin_of(make_log())
    await log.append("s1", drafts("a"))
    added, window, next_id = await log.batch(
        [AppendOp("s1", tuple(drafts("b", "c"))), ReadOp("s1"), NextIdOp("s1")]
    )
    assert [r.id for r in added] == ["m2", "m3"]
    assert [r.id for r in window] == ["m1", "m2", "m3"]
    assert next_id == "m4"
    (removed, after) = await log.batch([RemoveOp("s1", ("m1", "m2")), ReadOp("s1")])
    assert removed == ["m1", "m2"]
    assert [r.id for r in after] == ["m3"]


async def test_messages_round_trip_exactly(
    make_log: LogFactory, twin_of: TwinOf, log_kind: str
) -> None:
    call = {"name": "lookup", "args": {"q": "weather"}, "id": "call_1", "type": "tool_call"}
    originals = [
        HumanMessage(
            [{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {"url": "x"}}]
        ),
        AIMessage("", tool_calls=[call], response_metadata={"model": "m"}),
        ToolMessage("sunny", tool_call_id="call_1", name="lookup"),
        AIMessage("It is sunny. Ünïcödé\nnew line", additional_kwargs={"k": [1, 2]}),
    ]
    log = twin_of(make_log())
    await log.append("s1", [draft_from_message(m, index=i) for i, m in enumerate(originals)])
    logs = [log] + ([twin_of(make_log())] if log_kind == "jsonl" else [])
    for each in logs:
        restored = [r.to_message() for r in await each.read("s1")]
        assert [type(m) for m in restored] == [type(m) for m in originals]
        for before, after in zip(originals, restored, strict=True):
            assert after.id is not None
            assert after.model_copy(update={"id": None}) == before


async def test_the_consolidation_lease_has_one_holder_at_a_time(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    log = twin_of(make_log())
    first, second = new_lease_owner(), new_lease_owner()
    assert await log.batch([ClaimOp("s1", first, 60.0)]) == [True]
    assert await log.batch([ClaimOp("s1", second, 60.0), ClaimOp("s2", second, 60.0)]) == [
        False,
        True,
    ]
    assert await log.batch([ClaimOp("s1", first, 60.0)]) == [True], "the holder renews"
    assert await log.batch([ReleaseOp("s1", second)]) == [False], "only the holder releases"
    assert await log.batch([ReleaseOp("s1", first), ClaimOp("s1", second, 60.0)]) == [True, True]
    assert await log.batch([ReleaseOp("s1", first)]) == [False]


@pytest.fixture(scope="module")
def gone() -> str:
    """A lease owner named like this machine's processes, whose process has exited."""
    script = "from langmem_tiers.short_term.log import new_lease_owner; print(new_lease_owner())"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


async def test_an_expired_lease_or_one_of_a_dead_process_is_taken(
    make_log: LogFactory, twin_of: TwinOf, gone: str
) -> None:
    log = twin_of(make_log())
    assert await log.batch([ClaimOp("s1", new_lease_owner(), -1.0)]) == [True]
    assert await log.batch([ClaimOp("s1", new_lease_owner(), 60.0)]) == [True], "expired"
    assert await log.batch([ClaimOp("s2", gone, 60.0)]) == [True]
    assert await log.batch([ClaimOp("s2", new_lease_owner(), 60.0)]) == [True], "owner gone"
    # An owner on another machine keeps its lease until it expires.
    assert await log.batch([ClaimOp("s3", "elsewhere:1:x", 60.0)]) == [True]
    assert await log.batch([ClaimOp("s3", new_lease_owner(), 60.0)]) == [False]


async def test_a_window_read_again_sees_what_another_log_object_changed(
    make_log: LogFactory, twin_of: TwinOf, log_kind: str
) -> None:
    if log_kind == "memory":
        pytest.skip("in-memory logs share nothing between objects")
    reader, writer = twin_of(make_log()), twin_of(make_log())
    await reader.append("s1", drafts("a", "b", "c"))
    assert [r.text for r in await reader.read("s1")] == ["a", "b", "c"]
    await writer.append("s1", drafts("d"))
    assert [r.id for r in await reader.read("s1")] == ["m1", "m2", "m3", "m4"]
    await writer.remove("s1", ["m2"])
    await writer.update_tiers("s1", {"m3": MessageTiers("fact=c", "about c")})
    await writer.set_tier_level("s1", "m1", 3)
    window = await reader.read("s1")
    assert [(r.id, r.tier1, r.required_tier_level) for r in window] == [
        ("m1", None, 3),
        ("m3", "fact=c", 1),
        ("m4", None, 1),
    ]
    await writer.clear("s1")
    await writer.append("s1", drafts("e"))
    assert [r.id for r in await reader.read("s1")] == ["m5"]


async def test_an_append_with_its_window_read_answers_what_a_fresh_read_gives(
    make_log: LogFactory, twin_of: TwinOf, log_kind: str
) -> None:
    if log_kind == "memory":
        pytest.skip("in-memory logs share nothing between objects")
    adder, other = twin_of(make_log()), twin_of(make_log())

    def add(text: str) -> list[object]:
        # Content blocks and fields whose stored form may differ from the given one.
        message = AIMessage(
            [{"type": "text", "text": text, "b": 1, "a": [2.5, None]}],
            additional_kwargs={"alpha": "1", "zeta": {"y": 1, "x": 2}},
        )
        draft = draft_from_message(message, index=0)
        return [AppendOp("s1", (draft, draft)), ReadOp("s1")]

    async def fresh() -> list[object]:
        return list(await twin_of(make_log()).read("s1"))

    for step in ("first", "second", "third"):
        _, window = await adder.batch(add(step))
        assert window == await fresh()
        assert [list(r.extra["additional_kwargs"]) for r in window] == [
            list(r.extra["additional_kwargs"]) for r in await fresh()
        ]
    await other.append("s1", drafts("meanwhile"))  # another writer between two adds
    _, window = await adder.batch(add("fourth"))
    assert [r.id for r in window] == [f"m{i}" for i in range(1, 10)]
    assert window == await fresh()


async def test_a_large_batch_is_stored_whole_and_in_order(
    make_log: LogFactory, twin_of: TwinOf
) -> None:
    log = twin_of(make_log())
    texts = [f"message {i}" for i in range(1, 251)]
    added, window = await log.batch([AppendOp("s1", tuple(drafts(*texts))), ReadOp("s1")])
    assert [r.id for r in added] == [r.id for r in window] == [f"m{i}" for i in range(1, 251)]
    assert [r.text for r in window] == [r.text for r in await log.read("s1")] == texts
