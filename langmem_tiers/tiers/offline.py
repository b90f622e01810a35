"""The offline tierer: rule-based ``key=value`` facts and an extractive summary.

No model, no download, deterministic, thousands of messages a second. Tier 1 lists
what a reader would need to recognise the message later (who, where, when, how many,
what was liked or decided) as ``key=value`` pairs; tier 2 keeps the one or two most
informative sentences, trimmed. Both are never longer than the raw text.

The rules live in :mod:`langmem_tiers.tiers.extraction` (shared with the offline
summariser); the word lists in :mod:`langmem_tiers.tiers.lexicon`.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> tiers = OfflineTierer().tier(
    ...     [HumanMessage("Hi, my name is Jordan. The deadline for RAI Chat is March 1, 2026.")]
    ... )
    >>> tiers[0].tier1
    'user_name=Jordan, deadline=March 1 2026, entity=RAI Chat'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.tiers.base import MessageTiers, Tierer
from langmem_tiers.tiers.extraction import (
    Fact,
    extract_facts,
    format_facts,
    message_role,
    message_text,
    normalize_text,
)
from langmem_tiers.tiers.extractive import summarize_text, topic_words
from langmem_tiers.tiers.tokens import TokenCounter, count_tokens

__all__ = ["OfflineTierer"]


class OfflineTierer(Tierer):
    """Rule-based tiers: ``key=value`` facts and an extractive one- or two-sentence summary.

    Args:
        max_facts: most facts in tier 1 (names, places, dates and numbers come first).
        tier1_ratio: share of the raw size a topic may bring tier 1 to; facts are kept
            even past it, the topic only fills space that is left.
        tier2_ratio: tier 2 budget as a share of the raw words.
        tier2_min_words: tier 2 budget never goes below this.
        short_message_words: messages this short keep their text as tier 2.
        token_counter: how sizes are measured (default :func:`count_tokens`).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> tiers = OfflineTierer().tier([AIMessage("We decided to ship the beta on Friday.")])
        >>> tiers[0].tier1
        'date=Friday, decision=ship the beta'
        >>> tiers[0].tier2
        'We decided to ship the beta on Friday.'
    """

    name = "offline"

    def __init__(
        self,
        *,
        max_facts: int = 12,
        tier1_ratio: float = 0.2,
        tier2_ratio: float = 0.35,
        tier2_min_words: int = 8,
        short_message_words: int = 8,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if max_facts < 1:
            raise ValueError(f"max_facts must be >= 1, got {max_facts!r}.")
        for field_name, ratio in (("tier1_ratio", tier1_ratio), ("tier2_ratio", tier2_ratio)):
            if not 0 < ratio <= 1:
                raise ValueError(f"{field_name} must be in (0, 1], got {ratio!r}.")
        self.max_facts = max_facts
        self.tier1_ratio = tier1_ratio
        self.tier2_ratio = tier2_ratio
        self.tier2_min_words = tier2_min_words
        self.short_message_words = short_message_words
        self.token_counter = token_counter

    def _count(self, text: str) -> int:
        return count_tokens(text, self.token_counter)

    def tier_text(self, text: str, role: str = "user") -> MessageTiers:
        """Tiers of a text said by ``role`` (``user``, ``assistant``...).

        >>> OfflineTierer().tier_text("I love hiking with my dog Toby.")
        MessageTiers(tier1='dog=Toby, likes=hiking', tier2='I love hiking with my dog Toby.')
        """
        if not text.strip():
            raise InvalidContentError(f"text has no content to tier, got {text!r}.")
        norm = normalize_text(text)
        raw_tokens = self._count(norm)
        return MessageTiers(self._tier1(norm, role, raw_tokens), self._tier2(norm, raw_tokens))

    def _tier1(self, text: str, role: str, raw_tokens: int) -> str:
        facts = extract_facts(text, role)[: self.max_facts]
        budget = max(1, math.ceil(raw_tokens * self.tier1_ratio))
        tier1 = format_facts(facts)
        room = budget - self._count(tier1)
        want_topic = not facts or room > 2
        if want_topic:
            count = 3 if len(text.split()) > 30 else 2
            for n in range(count, 0, -1):
                topic = topic_words(text, [w for f in facts for w in f], n)
                if not topic:
                    break
                candidate = format_facts([*facts, Fact("topic", " ".join(topic))])
                if not facts or self._count(candidate) <= budget:
                    tier1 = candidate
                    break
        if not facts and not tier1:
            # Small talk only: its gist in chat words still beats repeating it.
            loose = topic_words(text, [], 2, allow_chat_words=True)
            tier1 = format_facts([Fact("topic", " ".join(loose))]) if loose else ""
        # Tier 1 never costs more than the message itself.
        while facts and self._count(tier1) > raw_tokens:
            facts = facts[:-1]
            tier1 = format_facts(facts)
        if not tier1 or self._count(tier1) > raw_tokens:
            return text.replace("\n", " ")
        return tier1

    def _tier2(self, text: str, raw_tokens: int) -> str:
        flat = text.replace("\n", " ")
        n_words = len(flat.split())
        if n_words <= self.short_message_words:
            return flat
        budget = max(self.tier2_min_words, math.ceil(n_words * self.tier2_ratio))
        summary = summarize_text(text, budget)
        if not summary or self._count(summary) >= raw_tokens:
            return flat
        return summary

    def tier(self, messages: Sequence[BaseMessage]) -> list[MessageTiers]:
        """Tiers of each message, in order; an empty message raises InvalidContentError."""
        texts = [(message_text(m, i), message_role(m)) for i, m in enumerate(messages)]
        return [self.tier_text(text, role) for text, role in texts]
