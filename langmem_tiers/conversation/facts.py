"""What the chat graphs remember about a user, and what they show of it.

Two pure halves (no I/O), used by :class:`~langmem_tiers.conversation.session.ChatMemory`:

- **Remembering** (:func:`extract_memories`): an exchange (a user message and the reply)
  gives *facts*, not transcripts. The user's sentences that state something, put in the
  third person, without greetings, thanks, requests or questions; the assistant's
  sentences about plans and decisions that add something (a confirmation of what the
  user said is an echo, not a fact; see :mod:`~langmem_tiers.tiers.statements`); and the
  user's preferences (``likes``, ``prefers``, ``favorite_<thing>``...) as procedural
  memories, one per key and value, reinforced each time they are said.
- **Recalling** (:func:`distinct_memories`): ``user_context`` holds distinct memories. A
  memory that says what a better-ranked one already says (the same preference stored as
  a fact and as a procedural memory, a fact repeated in other words) is skipped, so five
  slots hold five different things.

Example:
    >>> from langmem_tiers.short_term.records import MessageRecord
    >>> found = extract_memories([
    ...     MessageRecord("m1", 1, "human", "Hi! I prefer tea. My budget is 40 euros.",
    ...                   "prefers=tea, budget=40 euros", ""),
    ...     MessageRecord("m2", 2, "ai", "Noted: budget=40 euros.", "budget=40 euros", "")])
    >>> [f.content for f in found.facts], [p.memory_key for p in found.preferences]
    (["The user's budget is 40 euros."], ['preference:prefers:tea'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import snowballstemmer
from langgraph.store.base import Item

from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers import parse_tier1
from langmem_tiers.tiers.extraction import Fact
from langmem_tiers.tiers.lexicon import STOP_WORDS
from langmem_tiers.tiers.statements import exchange_statements, is_preference, stated_facts

__all__ = [
    "ExtractedMemories",
    "FactMemory",
    "PreferenceMemory",
    "distinct_memories",
    "extract_memories",
    "memory_terms",
    "preference_sentence",
]

_CONTENT_CHARS = 1_000  # a fact memory's content is cut to this
_NOT_FACTS = frozenset({"topic", "note"})  # what a message is about, not what it says
_TERM = re.compile(r"[a-z0-9]+")
# Who a memory is about says nothing that tells two memories apart.
_PLAIN_TERMS = STOP_WORDS | {"user", "assistant", "s"}


class FactMemory(NamedTuple):
    """What one message stated, as a semantic memory."""

    content: str
    """Its fact sentences, in the third person (chit-chat and questions left out)."""
    facts: str
    """Its tier-1 facts found in ``content``, ``key=value, ...`` (preferences left out)."""
    message_ids: tuple[str, ...]
    """The short-term memory id of the message."""
    speaker: str = "user"
    """``user``, or ``assistant`` for a plan or decision the assistant stated."""


class PreferenceMemory(NamedTuple):
    """A preference the user stated, as a procedural memory."""

    memory_key: str
    """``preference:<key>:<value slug>``: one memory per key and value."""
    key: str
    """``likes``, ``dislikes``, ``prefers`` or ``favorite_<thing>``."""
    value: str
    message_ids: tuple[str, ...]
    """Every message that said it (each one reinforces it)."""


class ExtractedMemories(NamedTuple):
    """What :func:`extract_memories` found."""

    facts: list[FactMemory]
    preferences: list[PreferenceMemory]


def preference_sentence(key: str, value: str) -> str:
    """A preference fact as a sentence.

    >>> preference_sentence("favorite_color", "green"), preference_sentence("prefers", "tea")
    ("The user's favorite color is green.", 'The user prefers tea.')
    """
    if key.startswith("favorite_"):
        return f"The user's favorite {key[len('favorite_') :].replace('_', ' ')} is {value}."
    return f"The user {key} {value}."


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")[:60] or "x"


def _cut(text: str, limit: int = _CONTENT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _facts_in(facts: Iterable[Fact], content: str) -> str:
    """The facts whose value the content still holds (those of dropped chit-chat are not)."""
    flat = re.sub(r"[^a-z0-9]", "", content.lower())
    kept = [f for f in facts if re.sub(r"[^a-z0-9]", "", f.value.lower()) in flat]
    return ", ".join(f"{f.key}={f.value}" for f in kept)


def extract_memories(records: Sequence[MessageRecord], *, facts: bool = True) -> ExtractedMemories:
    """The facts and preferences stated in ``records`` (pure: no I/O).

    Each user message is read with the reply that follows it. Only messages with tier 1
    count (when tiering failed, the facts come when it is retried, not guessed), and only
    the facts a statement of the message holds
    (:func:`~langmem_tiers.tiers.statements.stated_facts`): a question, a request or a
    hypothetical states nothing about the user.
    ``facts=False`` gives the preferences only (for presets whose short-term memory
    stores facts itself).

    >>> record = MessageRecord("m1", 1, "human", "I like jazz. My name is Jordan.",
    ...                        "likes=jazz, user_name=Jordan", "")
    >>> found = extract_memories([record])
    >>> found.facts[0].content, found.facts[0].facts, found.preferences[0].memory_key
    ("The user's name is Jordan.", 'user_name=Jordan', 'preference:likes:jazz')
    """
    fact_memories: list[FactMemory] = []
    preferences: dict[str, tuple[str, str, list[str]]] = {}
    for index, record in enumerate(records):
        if record.role != "human" or not record.tier1:
            continue
        # A question's, request's or hypothetical's facts are not the user's ("What do I
        # like to drink?" gives likes=drink): one rule for every surface.
        parsed = stated_facts(
            record.text, [f for f in parse_tier1(record.tier1) if f.key not in _NOT_FACTS]
        )
        for fact in parsed:
            if is_preference(fact.key):
                key = f"preference:{fact.key}:{_slug(fact.value)}"
                preferences.setdefault(key, (fact.key, fact.value, []))[2].append(record.id)
        if not facts:
            continue
        reply = records[index + 1] if index + 1 < len(records) else None
        if reply is not None and reply.role != "ai":
            reply = None
        reply_facts = [] if reply is None else parse_tier1(reply.tier1 or "")
        said = exchange_statements(
            record.text,
            "" if reply is None else reply.text,
            user_facts=[f.value for f in parsed],
            reply_facts=[f.value for f in reply_facts if f.key not in _NOT_FACTS],
        )
        plain = [f for f in parsed if not is_preference(f.key)]
        if said.user:
            content = _cut(" ".join(said.user))
            fact_memories.append(FactMemory(content, _facts_in(plain, content), (record.id,)))
        if said.reply and reply is not None:
            content = _cut(" ".join(said.reply))
            own = [f for f in reply_facts if f.key not in _NOT_FACTS]
            fact_memories.append(
                FactMemory(content, _facts_in(own, content), (reply.id,), "assistant")
            )
    return ExtractedMemories(
        fact_memories,
        [
            PreferenceMemory(memory_key, key, value, tuple(ids))
            for memory_key, (key, value, ids) in preferences.items()
        ],
    )


# -- recalling -------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")


def memory_terms(text: str) -> frozenset[str]:
    """The stemmed words (and numbers) that tell one memory from another.

    >>> sorted(memory_terms("The user prefers bullet points."))
    ['bullet', 'point', 'prefer']
    """
    words = [w for w in _TERM.findall(text.lower()) if w not in _PLAIN_TERMS]
    return frozenset(_stemmer().stemWords(words))


def _repeats(terms: frozenset[str], seen: frozenset[str]) -> bool:
    """Whether a memory with ``terms`` says what one with ``seen`` says."""
    if not terms or not seen:
        return terms == seen
    shared = len(terms & seen)
    smaller = min(len(terms), len(seen))
    # One inside the other ("prefers bullet points" in "prefers bullet points over long
    # paragraphs"), or mostly the same words in another order.
    return (smaller >= 2 and shared / smaller >= 0.8) or shared / len(terms | seen) >= 0.6


def distinct_memories(items: Sequence[Item], limit: int) -> list[Item]:
    """Up to ``limit`` of ``items`` (best first), skipping those a better one already says.

    >>> from datetime import datetime, timezone
    >>> now = datetime.now(timezone.utc)
    >>> def item(key, content):
    ...     return Item(value={"content": content}, key=key, namespace=("u1", "semantic"),
    ...                 created_at=now, updated_at=now)
    >>> found = distinct_memories([item("a", "The user prefers bullet points over prose."),
    ...                            item("b", "The user prefers bullet points."),
    ...                            item("c", "The budget is 12,000 euros.")], 5)
    >>> [i.key for i in found]
    ['a', 'c']
    """
    picked: list[Item] = []
    seen: list[frozenset[str]] = []
    for item in items:
        if len(picked) >= limit:
            break
        terms = memory_terms(str(item.value.get("content", "")))
        if any(_repeats(terms, other) for other in seen):
            continue
        picked.append(item)
        seen.append(terms)
    return picked
