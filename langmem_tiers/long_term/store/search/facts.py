"""Fact-augmented keys: the facts extracted from a memory make it findable too.

A message written as an episodic memory carries its tier-1 facts (``tier1``:
``dislikes=cilantro, place=Oslo``), and a fact stored from a message carries them as
``facts``. Those facts say what the message *means*: "I can't stand cilantro" is a
dislike, "I live in Oslo with my wife" names a place. A question asks in those words
("what food does the user dislike?", "where is the user's home?") more often than in the
message's own, so the store indexes, beside the text, the words of each fact's key and a
few words people use for it (:data:`KEY_WORDS`), and its value.

Only BM25 terms are added (the embedded text stays the memory's text), with the same
analyser as the text, so they need nothing but the value itself.

Example::

    >>> fact_text({"content": "I can't stand cilantro", "tier1": "dislikes=cilantro"})
    'dislikes dislike hate avoid cilantro'
    >>> fact_text({"content": "no facts here"})
    ''
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["FACT_FIELDS", "KEY_WORDS", "fact_text", "parse_facts"]

#: Value fields that hold ``key=value, key=value`` facts: the offline or LLM tierer's tier 1
#: of an archived message, and the facts of a fact memory.
FACT_FIELDS = ("tier1", "facts")

#: Words a question uses for the tierer's fact keys (the key's own words come too).
#: Keys not listed contribute their own words only (``home_town`` -> ``home town``).
KEY_WORDS: dict[str, str] = {
    "likes": "like enjoy love favourite favorite prefer",
    "dislikes": "dislike hate avoid",
    "prefers": "prefer preference favourite favorite",
    "user_name": "name called",
    "assistant_name": "name called",
    "place": "place location live home city",
    "date": "date when",
    "time": "time when",
    "amount": "amount cost price money",
    "percent": "percent percentage",
    "decision": "decided decision choose chose",
    "plan": "plan planning going intend",
    "entity": "",
    "topic": "",
    "note": "",
}
#: Keys whose own word says nothing a question would ask for.
_SILENT_KEYS = frozenset(("entity", "topic", "note"))

_FACT = re.compile(r"(?:^|,)\s*(?P<key>[A-Za-z_][\w\-]*)\s*=\s*(?P<value>[^,]*)")


def parse_facts(text: str) -> list[tuple[str, str]]:
    """``key=value`` pairs of a tier-1 text, in order (tolerant: junk is skipped).

    Example::

        >>> parse_facts("user_name=Jordan, likes=jazz, nonsense")
        [('user_name', 'Jordan'), ('likes', 'jazz')]
    """
    return [
        (m.group("key"), m.group("value").strip())
        for m in _FACT.finditer(text)
        if m.group("value").strip()
    ]


def fact_text(value: Mapping[str, Any]) -> str:
    """The extra text to index for a memory's facts: key words and values (``''``: none)."""
    words: list[str] = []
    for name in FACT_FIELDS:
        raw = value.get(name)
        if not isinstance(raw, str):
            continue
        for key, fact_value in parse_facts(raw):
            lowered = key.lower()
            if lowered not in _SILENT_KEYS:
                words.append(lowered.replace("_", " ").replace("-", " "))
            extra = KEY_WORDS.get(lowered, "")
            if extra:
                words.append(extra)
            words.append(fact_value)
    return " ".join(words)
