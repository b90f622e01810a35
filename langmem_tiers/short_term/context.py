"""The model's view of a session: long-term summaries, tiered older messages, raw recent ones.

The view is a list of standard LangChain messages:

1. a ``SystemMessage`` with the long-term memories relevant to the session (summaries of
   archived messages, facts about the user), when there are any;
2. each older message at its ``required_tier_level`` (tier 1 facts, tier 2 summary, or raw);
3. the most recent messages raw.

In the tiered view every message starts with its id and the tier shown, ``[m12|t1] ...``,
so a model can ask for more of it (``[REQUEST_TIER:3:m12]``). Tool calls and tool results
are always shown raw: the tool protocol pairs them. Everything is kept within a token
budget; the oldest messages are left out of the view (not out of memory) when it is
exceeded. Tier data also rides in ``response_metadata["langmem_tiers"]``.

Example:
    >>> from langmem_tiers.short_term.records import MessageRecord
    >>> old = MessageRecord("m1", 1, "human", "My name is Jordan and I work on RAI Chat.",
    ...                     "user_name=Jordan, project=RAI Chat", "Jordan works on RAI Chat.")
    >>> new = MessageRecord("m2", 2, "ai", "Nice to meet you, Jordan!", "", "Greeting.")
    >>> [m.content for m in ContextBuilder(recent_raw=1).build([old, new], [])]
    ['[m1|t1] user_name=Jordan, project=RAI Chat', '[m2|t3] Nice to meet you, Jordan!']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import Item

from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers.base import TierLevel
from langmem_tiers.tiers.tokens import TokenCounter, count_message_tokens

__all__ = ["MEMORY_HEADER", "ContextBuilder", "memory_label", "shown_tier"]

MEMORY_HEADER = (
    "Long-term memory of this conversation (earlier messages were archived; each line "
    "names the messages it covers):"
)
"""First line of the system part; override by passing ``memory_header``."""

_METADATA_KEY = "langmem_tiers"
_PLAIN_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "system": SystemMessage,
}


def shown_tier(record: MessageRecord, level: int) -> tuple[int, str]:
    """The tier actually shown for ``level`` and its text.

    A missing or empty cheaper tier (tiering failed, or found no facts) falls back to the
    next richer one, so nothing is shown as blank.
    """
    if level <= TierLevel.FACTS and record.tier1:
        return int(TierLevel.FACTS), record.tier1
    if level <= TierLevel.SUMMARY and record.tier2:
        return int(TierLevel.SUMMARY), record.tier2
    return int(TierLevel.RAW), record.text


def memory_label(item: Item) -> str:
    """How a long-term memory is named in the system part: the message ids it covers."""
    ids = item.value.get("source_message_ids") or []
    if not isinstance(ids, list) or not ids:
        return item.key
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


class ContextBuilder:
    """Builds the view; pure (no I/O), so the sync and async engines share it.

    Args:
        token_counter: counts a text's tokens (default: four characters a token).
        budget: the most tokens the view may take.
        recent_raw: how many of the newest messages are always raw.
        tiered: ``False`` shows every message raw and unprefixed (the seed's plain window).
        memory_share: the part of the budget the system part may take.
        memory_header: the system part's first line.
    """

    def __init__(
        self,
        *,
        token_counter: TokenCounter | None = None,
        budget: int = 30_000,
        recent_raw: int = 2,
        tiered: bool = True,
        memory_share: float = 0.25,
        memory_header: str = MEMORY_HEADER,
    ) -> None:
        self.token_counter = token_counter
        self.budget = budget
        self.recent_raw = recent_raw
        self.tiered = tiered
        self.memory_share = memory_share
        self.memory_header = memory_header
        self._costs: dict[tuple[str, int, int], int] = {}
        # What decides a record's cost besides its id (whose content never changes): an
        # add plans over the whole window, so the common case must be one dict lookup.
        self._record_costs: dict[tuple[str, bool, int, str | None, str | None], int] = {}

    def level_for(self, record: MessageRecord, *, recent: bool) -> int:
        """The level a record is shown at: raw when recent, untiered-view or tool use."""
        if not self.tiered or recent or record.uses_tools:
            return int(TierLevel.RAW)
        return record.required_tier_level

    def render(self, record: MessageRecord, level: int) -> BaseMessage:
        """One record as a standard message at ``level``, with its id on ``id``."""
        shown, text = shown_tier(record, level)
        metadata: dict[str, Any] = dict(record.extra.get("response_metadata") or {})
        metadata[_METADATA_KEY] = {
            "message_id": record.id,
            "tier": shown,
            "required_tier_level": record.required_tier_level,
        }
        content: str | list[Any] = record.content
        if self.tiered:
            prefix = f"[{record.id}|t{shown}] "
            if shown == TierLevel.RAW and not isinstance(record.content, str):
                content = [{"type": "text", "text": prefix}, *record.content]
            else:
                content = prefix + text
        plain = _PLAIN_CLASSES.get(record.role)
        if plain is not None and not record.uses_tools:
            # Built directly: a context renders every message of the window, and going
            # through the stored dict and a copy took most of a 1,000-message build.
            fields = {**record.extra, "content": content, "id": record.id}
            fields["response_metadata"] = metadata
            return plain(**fields)
        update = {"response_metadata": metadata, "content": content}
        return record.to_message().model_copy(update=update)

    def _cost(self, record: MessageRecord, level: int) -> int:
        shown, text = shown_tier(record, level)
        key = (record.id, shown, len(text))
        cost = self._costs.get(key)
        if cost is None:
            if len(self._costs) > 50_000:  # bounded: a session only grows so far
                self._costs.clear()
            cost = count_message_tokens([self.render(record, level)], self.token_counter)
            self._costs[key] = cost
        return cost

    def costs(self, records: Sequence[MessageRecord]) -> list[int]:
        """Tokens each record takes in the view (the newest ``recent_raw`` raw)."""
        first_recent = len(records) - self.recent_raw
        known = self._record_costs
        if len(known) > 50_000:  # bounded: a session only grows so far
            known.clear()
        out: list[int] = []
        for i, r in enumerate(records):
            recent = i >= first_recent
            key = (r.id, recent, r.required_tier_level, r.tier1, r.tier2)
            cost = known.get(key)
            if cost is None:
                cost = known[key] = self._cost(r, self.level_for(r, recent=recent))
            out.append(cost)
        return out

    def memory_message(self, memories: Sequence[Item]) -> SystemMessage | None:
        """The system part for these memories (best first), within its share of the budget."""
        if not memories:
            return None
        allowance = int(self.budget * self.memory_share)
        lines = [self.memory_header]
        used = count_message_tokens([SystemMessage(self.memory_header)], self.token_counter)
        for item in memories:
            content = str(item.value.get("content", "")).strip()
            if not content:
                continue
            line = f"- [{memory_label(item)}] {content}"
            concepts = item.value.get("key_concepts")
            if isinstance(concepts, list) and concepts:
                line += f" (key concepts: {', '.join(str(c) for c in concepts)})"
            cost = count_message_tokens([SystemMessage(line)], self.token_counter)
            if used + cost > allowance:
                break
            lines.append(line)
            used += cost
        if len(lines) == 1:
            return None
        return SystemMessage(
            "\n".join(lines),
            response_metadata={_METADATA_KEY: {"memories": [m.key for m in memories]}},
        )

    def build(
        self, records: Sequence[MessageRecord], memories: Sequence[Item]
    ) -> list[BaseMessage]:
        """The view: the system part, then the messages that fit, oldest first.

        The newest message is always included, even alone over the budget.
        """
        view: list[BaseMessage] = []
        system = self.memory_message(memories)
        remaining = self.budget
        if system is not None:
            view.append(system)
            remaining -= count_message_tokens([system], self.token_counter)
        costs = self.costs(records)
        first_recent = len(records) - self.recent_raw
        chosen: list[BaseMessage] = []
        for index in range(len(records) - 1, -1, -1):
            if chosen and costs[index] > remaining:
                break
            record = records[index]
            chosen.append(self.render(record, self.level_for(record, recent=index >= first_recent)))
            remaining -= costs[index]
        chosen.reverse()
        # A tool result whose call was cut off would be refused by the model's API.
        while len(chosen) > 1 and chosen[0].type == "tool":
            chosen.pop(0)
        view.extend(chosen)
        return view
