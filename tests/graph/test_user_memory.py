"""What the chat graphs remember about a user (clean facts) and recall (distinct memories)."""

from __future__ import annotations

import re

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.cli.demo import load_conversation
from langmem_tiers.config import Settings
from langmem_tiers.conversation import ChatMemory
from langmem_tiers.conversation.facts import extract_memories
from langmem_tiers.graph.offline_model import OfflineChatModel
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers import LLMTierer, OfflineTierer

_CHIT_CHAT = re.compile(r"^(?:hi|hello|hey|thanks|thank you|bye|goodbye|see you|talk to you)\b")


def _exchange(user: str, reply: str, first: int = 1) -> list[MessageRecord]:
    tiers = OfflineTierer().tier([HumanMessage(user), AIMessage(reply)])
    return [
        MessageRecord(f"m{first}", first, "human", user, tiers[0].tier1, tiers[0].tier2),
        MessageRecord(f"m{first + 1}", first + 1, "ai", reply, tiers[1].tier1, tiers[1].tier2),
    ]


def _facts(store: TieredMemoryStore, user: str = "u1") -> list[dict]:
    items = store.search(namespace_for(user, "semantic"), limit=100)
    return [i.value for i in items if i.value.get("category") == "user_fact"]


# -- remembering: facts, not chit-chat or echoes ---------------------------------------------


def test_a_greeting_and_thanks_are_not_facts_and_the_rest_is_in_the_third_person() -> None:
    records = _exchange(
        "Hi! My name is Maya Chen and I am the project lead for Lighthouse. Thanks!",
        "Noted: user_name=Maya Chen, entity=Lighthouse.",
    )
    found = extract_memories(records)
    assert [f.content for f in found.facts] == [
        "The user's name is Maya Chen and the user is the project lead for Lighthouse."
    ]
    assert found.facts[0].speaker == "user"
    assert "user_name=Maya Chen" in found.facts[0].facts


def test_small_talk_alone_stores_nothing() -> None:
    for said in ("Talk to you next week!", "Hello again, it's Maya.", "Wish us luck for May 4!"):
        assert extract_memories(_exchange(said, "Noted.")).facts == [], said


def test_the_assistants_confirmation_is_no_fact_but_its_plan_is() -> None:
    confirmed = _exchange("The launch moves to May 4.", "Got it: the launch moves to May 4, noted.")
    assert [f.speaker for f in extract_memories(confirmed).facts] == ["user"]

    planned = _exchange(
        "The launch moves to May 4.",
        "Understood. I'll book the launch party room at the library for May 4 at 17:00.",
    )
    facts = extract_memories(planned).facts
    assert [(f.speaker, f.message_ids) for f in facts] == [
        ("user", ("m1",)),
        ("assistant", ("m2",)),
    ]
    assert facts[1].content == (
        "The assistant will book the launch party room at the library for May 4 at 17:00."
    )


def test_an_answer_to_a_question_restates_and_adds_no_fact() -> None:
    records = _exchange("When is the launch?", "We decided to launch on May 4.")
    assert extract_memories(records).facts == []


def test_a_preference_is_procedural_only() -> None:
    found = extract_memories(_exchange("I prefer bullet points over long paragraphs.", "Noted."))
    assert found.facts == []
    assert [p.memory_key for p in found.preferences] == ["preference:prefers:bullet-points"]


def test_agreeing_with_what_was_said_is_no_preference() -> None:
    found = extract_memories(_exchange("I like that idea; the team knows Python.", "Noted."))
    assert found.preferences == []
    assert [f.content for f in found.facts] == ["The user likes that idea; the team knows Python."]


def test_the_shipped_conversation_gives_facts_not_transcripts() -> None:
    # Every user turn with the offline model's reply, as the demo saves them.
    model = OfflineChatModel()
    records: list[MessageRecord] = []
    turns = load_conversation()
    for turn in turns:
        reply = model.reply([HumanMessage(turn.content)]).text
        records += _exchange(turn.content, reply, len(records) + 1)
    found = extract_memories(records)
    statements = [t for t in turns if not t.content.rstrip().endswith("?")]
    contents = [f.content for f in found.facts]
    assert len(contents) < len(statements)  # small talk and sign-offs are gone
    assert not [c for c in contents if "Noted" in c or "assistant:" in c or "=" in c]
    assert not [c for c in contents if _CHIT_CHAT.match(c.lower())]
    assert not [c for c in contents if re.search(r"\b(?:I|my|me)\b", c)]  # third person
    assert all(f.speaker == "user" for f in found.facts)  # the offline model only confirms
    assert "Tomas owns the database migration to production." in contents


def test_the_llm_path_stores_facts_and_no_echo(settings: Settings) -> None:
    # The tier model sees the user message and the reply in one call.
    tier_model = GenericFakeChatModel(
        messages=iter(
            [
                "[m1] TIER1: user_name=Maya, budget=12,000 euros | TIER2: Maya states the budget.\n"
                "[m2] TIER1: budget=12,000 euros | TIER2: The assistant confirms the budget."
            ]
        )
    )
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=settings) as store:
        memory = ChatMemory(store, settings=settings, tierer=LLMTierer(tier_model))
        memory.save(
            "s1",
            "u1",
            [
                HumanMessage("Hello, Maya here. The budget is 12,000 euros. Thanks a lot!"),
                AIMessage("Noted, the budget is 12,000 euros."),
            ],
        )
        facts = _facts(store)
    assert [f["content"] for f in facts] == ["The budget is 12,000 euros."]
    assert facts[0]["facts"] == "budget=12,000 euros"
    assert facts[0]["speaker"] == "user"


# -- recalling: five distinct memories -------------------------------------------------------


def test_user_context_holds_distinct_memories(settings: Settings) -> None:
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=settings) as store:
        semantic, procedural = namespace_for("u1", "semantic"), namespace_for("u1", "procedural")
        store.put(procedural, "p1", {"content": "The user prefers bullet points."})
        store.put(semantic, "f1", {"content": "The user prefers bullet points over long text."})
        store.put(semantic, "f2", {"content": "The budget for Lighthouse is 12,000 euros."})
        store.put(semantic, "f3", {"content": "Lighthouse has a budget of 12,000 euros."})
        store.put(semantic, "f4", {"content": "The launch is on May 4."})
        store.put(semantic, "f5", {"content": "Tomas Berg does the backend."})
        store.put(semantic, "f6", {"content": "Priya Nair does the design."})
        memory = ChatMemory(store, settings=settings)
        loaded = memory.load("s2", "u1", "bullet points budget launch backend design")
    context = loaded.user_context
    # Seven memories say five things: the five slots hold all five, each once.
    assert len(context) == 5
    assert all(any(word in line for line in context) for word in ("May 4", "Tomas", "Priya"))
    bullets = [line for line in context if "bullet points" in line]
    budgets = [line for line in context if "12,000" in line]
    assert len(bullets) == 1, context  # one preference, not a fact and a preference
    assert len(budgets) == 1, context  # one budget, not the same fact twice
