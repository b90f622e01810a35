"""The model's view of a session: long-term summaries, tiered older messages, raw recent ones.

The view is a list of standard LangChain messages:

1. a ``SystemMessage`` when there is something to say: what the tiered lines mean and how
   to ask for more (only when the view shows tiered lines), then the long-term memories
   relevant to the session (summaries of archived messages, facts about the user);
2. the window's messages, older ones possibly tiered (tier 1 facts, tier 2 summary);
3. the most recent messages raw.

Which messages are tiered is the *context policy*:

- ``budget`` (the default): every message is shown raw while the view fits the soft
  budget. Over it, the oldest message is lowered first (raw -> tier 2 -> tier 1), then
  the next oldest, only until the view fits again. A message is never lowered below the
  tier the model asked for (``required_tier_level``), a step that would not save tokens
  is skipped, and a tiered view that would cost as much as the raw one is not used: the
  view never costs more than the raw messages.
- ``eager`` (the seed's view): every older message at its ``required_tier_level`` (tier 1
  unless the model asked for more), whatever the budget.

A tiered line starts with the message's id and the tier shown, ``[m12|t1] ...``, so a
model can ask for more of it (``[REQUEST_TIER:3:m12]``); in the ``eager`` view every
message is labelled so, in the ``budget`` view only the lowered ones. Tool calls and tool
results are always shown raw: the tool protocol pairs them. The view is kept within a hard
token budget; the oldest messages are left out of it (not out of memory) when even their
tiers exceed it. Tier data also rides in ``response_metadata["langmem_tiers"]``.

Example:
    >>> from langmem_tiers.short_term.records import MessageRecord
    >>> old = MessageRecord("m1", 1, "human", "My name is Jordan and I work on RAI Chat.",
    ...                     "user_name=Jordan, project=RAI Chat", "Jordan works on RAI Chat.")
    >>> new = MessageRecord("m2", 2, "ai", "Nice to meet you, Jordan!", "", "Greeting.")
    >>> [m.content for m in ContextBuilder(recent_raw=1).build([old, new], [])]
    ['My name is Jordan and I work on RAI Chat.', 'Nice to meet you, Jordan!']
    >>> view = ContextBuilder(recent_raw=1, policy="eager").build([old, new], [])
    >>> view[0].content.startswith("Messages starting with"), [m.content for m in view[1:]]
    (True, ['[m1|t1] user_name=Jordan, project=RAI Chat', '[m2|t3] Nice to meet you, Jordan!'])
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import is_
from typing import Any, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.store.base import Item

from langmem_tiers.config import ContextPolicy
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers.base import TierLevel
from langmem_tiers.tiers.tokens import TokenCounter, count_message_tokens

__all__ = [
    "MEMORY_HEADER",
    "TIER_NOTE",
    "ContextBuilder",
    "is_tiered_line",
    "memory_label",
    "memory_text",
    "shown_tier",
    "tier_metadata",
]

MEMORY_HEADER = (
    "Long-term memory of this conversation (earlier messages were archived; each line "
    "names the messages it covers):"
)
"""First line of the memories in the system part; override by passing ``memory_header``."""

TIER_NOTE = (
    "Messages starting with [<id>|t<tier>] are shortened to save space: t1 is key=value "
    "facts from the message, t2 a short summary, t3 its full text. To see one in full, "
    "write [REQUEST_TIER:3:<id>] (2 instead of 3 for the summary)."
)
"""What the system part says when the view shows tiered lines; override with ``tier_note``."""

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


def tier_metadata(message: BaseMessage) -> dict[str, Any]:
    """The tier data the context builder put on a message (empty when there is none)."""
    data = (message.response_metadata or {}).get(_METADATA_KEY)
    return data if isinstance(data, dict) else {}


def is_tiered_line(message: BaseMessage) -> bool:
    """Whether a view message is shown as a tiered line (``[m12|t1] ...``).

    >>> from langchain_core.messages import HumanMessage
    >>> is_tiered_line(HumanMessage("hi")), is_tiered_line(
    ...     HumanMessage("[m1|t1] a=b", response_metadata={"langmem_tiers": {"message_id": "m1"}}))
    (False, True)
    """
    data = (message.response_metadata or {}).get(_METADATA_KEY)
    if not isinstance(data, dict) or "message_id" not in data:
        return False
    # Views built before the budget policy labelled every message (and did not say so).
    return bool(data.get("labelled", True))


def memory_text(message: BaseMessage) -> str:
    """The long-term memory part of a view's system message (without the tier note).

    Graphs that explain tiers in their own prompt use this to keep the memories only.
    """
    data = (message.response_metadata or {}).get(_METADATA_KEY)
    skip = data.get("note_chars", 0) if isinstance(data, dict) else 0
    return message.text[skip if isinstance(skip, int) else 0 :].strip()


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
        budget: the most tokens the view may take (the oldest messages are left out past it).
        recent_raw: how many of the newest messages are always raw.
        tiered: ``False`` shows every message raw and unprefixed (the seed's plain window).
        memory_share: the part of the budget the system part's memories may take.
        memory_header: the first line of the memories.
        policy: ``budget`` or ``eager`` (see the module docstring).
        soft_budget: the ``budget`` policy's soft budget (default: ``budget``).
        tier_note: what the system part says when tiered lines are shown (``None``: nothing,
            for a caller that explains tiers itself).
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
        policy: ContextPolicy = "budget",
        soft_budget: int | None = None,
        tier_note: str | None = TIER_NOTE,
    ) -> None:
        if policy not in get_args(ContextPolicy):
            raise ConfigurationError(
                f"policy must be one of {', '.join(get_args(ContextPolicy))}, got {policy!r}."
            )
        self.token_counter = token_counter
        self.budget = budget
        self.recent_raw = recent_raw
        self.tiered = tiered
        self.memory_share = memory_share
        self.memory_header = memory_header
        self.policy: ContextPolicy = policy
        self.soft_budget = budget if soft_budget is None else min(soft_budget, budget)
        self.tier_note = tier_note
        self._costs: dict[tuple[str, int, int, bool], int] = {}
        # What decides a record's cost besides its id (whose content never changes).
        self._record_costs: dict[tuple[str, bool, int, str | None, str | None], int] = {}
        # The last window planned over and its costs: every add plans over the whole
        # window, which is the same record objects as last time plus the new ones.
        self._last_costs: tuple[tuple[MessageRecord, ...], list[int]] = ((), [])

    def level_for(self, record: MessageRecord, *, recent: bool) -> int:
        """The least a record may be shown at: raw when recent, untiered view or tool use,
        else its ``required_tier_level`` (the ``eager`` view shows exactly this)."""
        if not self.tiered or recent or record.uses_tools:
            return int(TierLevel.RAW)
        return record.required_tier_level

    def render(self, record: MessageRecord, level: int, *, labelled: bool = True) -> BaseMessage:
        """One record as a standard message at ``level``, with its id on ``id``.

        ``labelled`` (tiered views only) starts the text with ``[<id>|t<tier>]``.
        """
        shown, text = shown_tier(record, level)
        labelled = labelled and self.tiered
        metadata: dict[str, Any] = dict(record.extra.get("response_metadata") or {})
        metadata[_METADATA_KEY] = {
            "message_id": record.id,
            "tier": shown,
            "required_tier_level": record.required_tier_level,
            "labelled": labelled,
        }
        content: str | list[Any] = record.content
        if labelled:
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

    def _cost(self, record: MessageRecord, level: int, labelled: bool = True) -> int:
        shown, text = shown_tier(record, level)
        labelled = labelled and self.tiered
        key = (record.id, shown, len(text), labelled)
        cost = self._costs.get(key)
        if cost is None:
            if len(self._costs) > 50_000:  # bounded: a session only grows so far
                self._costs.clear()
            message = self.render(record, level, labelled=labelled)
            cost = count_message_tokens([message], self.token_counter)
            self._costs[key] = cost
        return cost

    def costs(self, records: Sequence[MessageRecord]) -> list[int]:
        """The least tokens each record can take in the view: at :meth:`level_for`, labelled.

        Window policies plan over these, so a message leaves the window only when even its
        cheapest form does not fit, whatever the context policy shows.
        """
        first_recent = len(records) - self.recent_raw
        last_records, last_costs = self._last_costs
        # Records are immutable, so the very objects planned over last time, none of them
        # recent then or now, cost what they cost then.
        same = min(first_recent, len(last_records) - self.recent_raw)
        if same <= 0 or not all(map(is_, islice(last_records, same), islice(records, same))):
            same = 0
        known = self._record_costs
        if len(known) > 50_000:  # bounded: a session only grows so far
            known.clear()
        out = last_costs[:same]
        for i in range(same, len(records)):
            r = records[i]
            recent = i >= first_recent
            key = (r.id, recent, r.required_tier_level, r.tier1, r.tier2)
            cost = known.get(key)
            if cost is None:
                cost = known[key] = self._cost(r, self.level_for(r, recent=recent))
            out.append(cost)
        self._last_costs = (tuple(records), out)
        return list(out)

    def levels(self, records: Sequence[MessageRecord], reserved: int = 0) -> list[tuple[int, bool]]:
        """The tier each record is shown at and whether it is labelled, oldest first.

        ``reserved``: tokens the rest of the view (the memories) already takes.
        """
        first_recent = len(records) - self.recent_raw
        floors = [self.level_for(r, recent=i >= first_recent) for i, r in enumerate(records)]
        if not self.tiered:
            return [(int(TierLevel.RAW), False)] * len(records)
        if self.policy == "eager":
            return [(level, True) for level in floors]
        raw = [(int(TierLevel.RAW), False)] * len(records)
        current = [self._cost(r, TierLevel.RAW, False) for r in records]
        raw_total = reserved + sum(current)
        if raw_total <= self.soft_budget:
            return raw
        chosen = list(raw)
        total = raw_total + self._note_cost()
        for index, record in enumerate(records):
            if total <= self.soft_budget:
                break
            for level in (TierLevel.SUMMARY, TierLevel.FACTS):
                if level < floors[index]:
                    break  # never below what the model asked for
                cost = self._cost(record, level)
                if cost < current[index]:  # a step that saves nothing is skipped
                    total -= current[index] - cost
                    current[index] = cost
                    chosen[index] = (int(level), True)
                if total <= self.soft_budget:
                    break
        return chosen

    def _note_cost(self) -> int:
        if not self.tier_note:
            return 0
        return count_message_tokens([SystemMessage(self.tier_note)], self.token_counter)

    def _memory_lines(self, memories: Sequence[Item]) -> list[str]:
        """The memories' lines (header first) within their share of the budget; [] if none."""
        if not memories:
            return []
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
        return lines if len(lines) > 1 else []

    def memory_message(
        self, memories: Sequence[Item], *, note: bool = False
    ) -> SystemMessage | None:
        """The system part: the tier note (when ``note``), then the memories (best first)."""
        return self._system(memories, self._memory_lines(memories), note)

    def _system(
        self, memories: Sequence[Item], lines: list[str], note: bool
    ) -> SystemMessage | None:
        head = self.tier_note if note and self.tier_note else ""
        if not lines and not head:
            return None
        text = "\n\n".join(part for part in (head, "\n".join(lines)) if part)
        data: dict[str, Any] = {"memories": [m.key for m in memories] if lines else []}
        if head:
            data["note_chars"] = len(head)
        return SystemMessage(text, response_metadata={_METADATA_KEY: data})

    def build(
        self, records: Sequence[MessageRecord], memories: Sequence[Item]
    ) -> list[BaseMessage]:
        """The view: the system part, then the messages that fit, oldest first.

        The newest message is always included, even alone over the budget.
        """
        lines = self._memory_lines(memories)
        memory_only = self._system(memories, lines, False)
        reserved = 0
        if memory_only is not None:
            reserved = count_message_tokens([memory_only], self.token_counter)
        levels = self.levels(records, reserved)
        kept, cost = self._fit(records, levels, self.budget - reserved)
        if self.policy == "budget" and any(labelled for _, labelled in levels):
            # The lowered view (with its note) is used only when it is cheaper than the raw
            # one, or shows messages the raw one has no room for.
            raw = [(int(TierLevel.RAW), False)] * len(records)
            raw_kept, raw_cost = self._fit(records, raw, self.budget - reserved)
            if cost >= raw_cost and len(kept) <= len(raw_kept):
                levels, kept = raw, raw_kept
        chosen = [self.render(records[i], levels[i][0], labelled=levels[i][1]) for i in kept]
        # A tool result whose call was cut off would be refused by the model's API.
        while len(chosen) > 1 and chosen[0].type == "tool":
            chosen.pop(0)
        system = self._system(memories, lines, any(is_tiered_line(m) for m in chosen))
        return [system, *chosen] if system is not None else chosen

    def _fit(
        self, records: Sequence[MessageRecord], levels: Sequence[tuple[int, bool]], room: int
    ) -> tuple[list[int], int]:
        """The newest records that fit ``room`` at ``levels`` (indices, oldest first), and
        their cost with the tier note when one of them is labelled."""
        labelled = any(label for _, label in levels)
        note = self._note_cost() if labelled else 0
        remaining = room - note
        kept: list[int] = []
        for index in range(len(records) - 1, -1, -1):
            level, label = levels[index]
            cost = self._cost(records[index], level, label)
            if kept and cost > remaining:
                break
            kept.append(index)
            remaining -= cost
        kept.reverse()
        if note and not any(levels[i][1] for i in kept):
            remaining += note  # the labelled lines were left out: no note is shown
        return kept, room - remaining
