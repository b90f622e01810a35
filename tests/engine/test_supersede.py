"""Updates said in ordinary words supersede the old fact offline; facts that only add do not.

The corpus (``data/updates.json``) is measured through the real ingest path by the
benchmark (:mod:`benchmarks.supersede`); the engine tests below show the mechanism on
every backend: the relation slots find an old fact that embeddings do not put near the
new one, and the rules judge it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers.long_term.engine.contradiction import RuleContradictionChecker, Statement
from langmem_tiers.tiers.slots import fills_slot, read_claims, related, slot_verdict

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # the benchmarks live beside the tests

from benchmarks import supersede  # noqa: E402

CORPUS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "updates.json").read_text(encoding="utf-8")
)


def test_the_corpus_has_enough_updates_and_adds() -> None:
    assert len(CORPUS["updates"]) >= 40
    assert len(CORPUS["adds"]) >= 20
    assert len(CORPUS["held_out_updates"]) + len(CORPUS["held_out_adds"]) >= 20


def test_updates_supersede_through_ingest_and_adds_do_not(tmp_path: Path) -> None:
    result = supersede.measure(CORPUS, tmp_path)
    tuned, held_out = result["tuned"], result["held_out"]
    assert tuned["recall"] >= 0.9, tuned["missed"]
    assert tuned["wrong_supersedes"] == 0, tuned["wrong"]
    assert held_out["wrong_supersedes"] == 0, held_out["wrong"]
    assert held_out["recall"] >= 0.85, held_out["missed"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user lives in Berlin.", "The user moved to Munich last month."),
        (
            "The user works at Acme Corp as a designer.",
            "The user quits Acme and started at Globex.",
        ),
        ("The user's manager is Sarah.", "Sarah left; the user's new manager is Tom."),
        ("The user is married to Chris.", "Chris and the user got divorced this year."),
        ("The user drives a Honda Civic.", "The user sold the Civic and now drives a Tesla."),
        ("The user speaks Spanish at home.", "The user gave up Spanish and speaks Portuguese."),
        ("The launch is on May 4.", "The launch was pushed to June 10."),
        ("The user's mobile is 0151 2345.", "The user got a new mobile number: 0160 9876."),
        ("The user's team lead is Priya.", "Marco is the user's team lead now."),
    ],
)
def test_the_rules_see_an_update(old: str, new: str) -> None:
    verdict = RuleContradictionChecker().compare(Statement(new), Statement(old))
    assert verdict.conflict, verdict
    assert related(read_claims(new), read_claims(old))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user has a dog named Rex.", "The user also has a cat named Miso."),
        ("The user's son is 8 years old.", "The user's daughter is 5 years old."),
        (
            "The user's phone number is 415-555-0199.",
            "The user's work phone number is 415-555-0300.",
        ),
        ("The user's sister lives in Boston.", "The user's brother lives in Chicago."),
        ("The user lives in Berlin.", "The user's parents live in Munich."),
        ("The user plays the guitar.", "The user started learning the piano as well."),
        ("The user lives in Berlin.", "The user lives in Berlin now."),
        ("The user plays the guitar.", "The user now plays tennis."),
        ("The user won't quit on the user's dreams.", "The user won't quit, no matter what."),
    ],
)
def test_the_rules_see_an_add(old: str, new: str) -> None:
    verdict = RuleContradictionChecker().compare(Statement(new), Statement(old))
    assert not verdict.conflict, verdict


def test_first_and_third_person_fill_the_same_slot() -> None:
    assert (
        read_claims("I'm based in London.").slots
        == read_claims("The user is based in London.").slots
        == {("user", "lives_in"): "london"}
    )
    assert read_claims("We relocated to Vancouver in March.").slots == {
        ("user", "lives_in"): "vancouver"
    }
    assert read_claims("I am 34.").slots == {("user", "age"): "34"}
    assert read_claims("My mobile is 0151 2345.").slots == {("user", "mobile"): "0151 2345"}
    new = read_claims("The report deadline moved to next Wednesday.")
    old = read_claims("The deadline for the report is Friday.")
    assert set(new.slots) == set(old.slots) == {("user", "report deadline")}
    assert slot_verdict(new, old) == (
        True,
        0.75,
        "report deadline: 'next wednesday' now, 'friday' before",
    )


def test_short_slot_sentences_are_facts_and_chit_chat_is_not() -> None:
    assert fills_slot("I'm single.")
    assert fills_slot("I work as a nurse.")
    assert not fills_slot("That sounds lovely.")
    assert not fills_slot("I have a dog.")


async def test_a_move_supersedes_the_old_city_whatever_the_vectors(twin: Any) -> None:
    # The word embeddings put these two far apart: only the slots tie them.
    old = await twin.add_semantic("jo", "The user lives in Berlin.")
    other = await twin.add_semantic("jo", "The user has a dog named Rex.")
    new = await twin.add_semantic("jo", "The user moved to Munich last month.")
    assert new.action == "superseded"
    assert [m.id for m in new.changed] == [old.memory.id]
    assert (await twin.get("jo", old.memory.id)).status == "superseded"
    assert (await twin.get("jo", other.memory.id)).status == "active"
    added = await twin.add_semantic("jo", "The user also has a cat named Miso.")
    assert added.action == "created"
    assert (await twin.get("jo", other.memory.id)).status == "active"
