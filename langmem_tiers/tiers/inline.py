"""Tiers written in the answer's own model call (the seed's one-call mode).

A chat model that answers a user can write, in the same call, tier 1 and tier 2 of the
user's message and of its own answer, so a turn needs no second call to a tierer. Two
ways, and one reading of both:

- **Structured output** (models with ``with_structured_output``): the reply is an object
  of :data:`ONE_CALL_SCHEMA`: ``answer``, ``user_tier1``, ``user_tier2``,
  ``answer_tier1``, ``answer_tier2``.
- **Tier lines** (any model): the answer, then lines in the seed's format
  (:data:`INLINE_TIER_INSTRUCTIONS`)::

      The deadline is March 1.
      USER TIER1: topic=deadline
      USER TIER2: The user asks for the deadline.
      TIER1: deadline=March 1
      TIER2: The deadline is March 1.

  ``USER TIER1/2`` are the user message's tiers; ``TIER1/2`` (or ``ANSWER TIER1/2``) the
  answer's. Every tier line is taken out of the answer, well formed or not: the user never
  sees them.

Tiers that are missing, without a ``key=value`` in tier 1, or longer than their message
are dropped (``None``), and the caller falls back to the offline tierer.

Example:
    >>> reply = split_inline_tiers("Hi Jo!\\nUSER TIER1: name=Jo\\nUSER TIER2: Jo says hi."
    ...                            "\\nTIER1: greeting=Jo\\nTIER2: A greeting.")
    >>> reply.answer, reply.user, reply.reply
    ('Hi Jo!', MessageTiers(tier1='name=Jo', tier2='Jo says hi.'), MessageTiers(tier1='greeting=Jo', tier2='A greeting.'))
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from langmem_tiers.tiers.base import MessageTiers

__all__ = [
    "INLINE_TIER_INSTRUCTIONS",
    "ONE_CALL_SCHEMA",
    "STRUCTURED_TIER_INSTRUCTIONS",
    "InlineTiers",
    "from_structured",
    "split_inline_tiers",
]

INLINE_TIER_INSTRUCTIONS = """\
After your answer, on their own lines, write tiers of the user's last message and of \
your answer, for the memory of this conversation (the user never sees them):
USER TIER1: key=value facts of the user's message, joined by ", " (keep names, places, \
dates and numbers; topic=<key words> if it holds no facts)
USER TIER2: one or two sentences with its gist
TIER1: key=value facts of your answer (topic=confirmation if it only confirms or repeats \
the user's message)
TIER2: one or two sentences with its gist"""
"""What the tier-lines mode adds to the system prompt (override it as a module constant)."""

STRUCTURED_TIER_INSTRUCTIONS = """\
Reply with your answer to the user in "answer", and, for the memory of this \
conversation, tiers of the user's last message and of your answer: tier 1 is key=value \
facts joined by ", " (keep names, places, dates and numbers; topic=<key words> if there \
are no facts), tier 2 one or two sentences with the gist. An answer that only confirms \
the user's message has no facts of its own: topic=confirmation."""
"""What the structured mode adds to the system prompt."""

_TIER_FIELD = "key=value facts joined by ', ' (topic=<key words> when there are none)"
ONE_CALL_SCHEMA: dict[str, Any] = {
    "title": "tiered_answer",
    "description": "The answer to the user, with tiers of the user's message and of the answer.",
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "The answer shown to the user."},
        "user_tier1": {"type": "string", "description": f"The user's message: {_TIER_FIELD}."},
        "user_tier2": {
            "type": "string",
            "description": "The user's message in one or two sentences.",
        },
        "answer_tier1": {"type": "string", "description": f"The answer: {_TIER_FIELD}."},
        "answer_tier2": {"type": "string", "description": "The answer in one or two sentences."},
    },
    "required": ["answer", "user_tier1", "user_tier2", "answer_tier1", "answer_tier2"],
}
"""The structured-output schema of the one-call mode (a JSON schema ``with_structured_output``
accepts)."""

# A tier line, well formed or not: "[USER|ANSWER] TIER1|TIER2 :|= ..." (markdown bullets,
# bold and spaces tolerated). The whole line is removed from the answer.
_TIER_LINE = re.compile(
    r"^[ \t>*_-]*(?P<who>USER|ANSWER|ASSISTANT)?[ \t*_]*TIER[ \t]*(?P<level>[12])[ \t*_]*[:=]"
    r"(?P<value>[^\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)
_HEADER_LINE = re.compile(r"^[ \t>*_-]*TIERS?[ \t*_]*:?[ \t]*$", re.IGNORECASE | re.MULTILINE)
_WRAPPING = "`\"' |*_"


class InlineTiers(NamedTuple):
    """A one-call reply, read."""

    answer: str
    """The answer without any tier line."""
    user: MessageTiers | None
    """The user message's tiers, when both were written (not yet checked for use)."""
    reply: MessageTiers | None
    """The answer's tiers, when both were written (not yet checked for use)."""


def _clean(value: str) -> str:
    return " ".join(value.split()).strip(_WRAPPING)


def _pair(found: Mapping[str, str]) -> MessageTiers | None:
    tier1, tier2 = found.get("1", ""), found.get("2", "")
    return MessageTiers(tier1, tier2) if tier1 and tier2 else None


def split_inline_tiers(text: str) -> InlineTiers:
    """The answer and the tiers written in tier lines (the first of each kind counts).

    >>> split_inline_tiers("Sure.\\nTIER1: garbage").answer
    'Sure.'
    >>> split_inline_tiers("No tiers here.")
    InlineTiers(answer='No tiers here.', user=None, reply=None)
    """
    user: dict[str, str] = {}
    reply: dict[str, str] = {}
    for match in _TIER_LINE.finditer(text):
        who = (match.group("who") or "answer").lower()
        found = user if who == "user" else reply
        found.setdefault(match.group("level"), _clean(match.group("value")))
    answer = _HEADER_LINE.sub("", _TIER_LINE.sub("", text))
    answer = re.sub(r"\n{3,}", "\n\n", answer).strip()
    return InlineTiers(answer, _pair(user), _pair(reply))


def from_structured(parsed: Any) -> InlineTiers | None:
    """A structured reply (a dict of :data:`ONE_CALL_SCHEMA`), read; None when it is not one.

    >>> from_structured({"answer": "Hi.", "user_tier1": "name=Jo", "user_tier2": "Jo.",
    ...                  "answer_tier1": "", "answer_tier2": ""}).reply is None
    True
    >>> from_structured("not an object") is None
    True
    """
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("answer"), str):
        return None

    def field(name: str) -> str:
        value = parsed.get(name)
        return _clean(value) if isinstance(value, str) else ""

    # A model may still put tier lines in the answer: they never reach the user.
    inner = split_inline_tiers(parsed["answer"])
    user = _pair({"1": field("user_tier1"), "2": field("user_tier2")}) or inner.user
    reply = _pair({"1": field("answer_tier1"), "2": field("answer_tier2")}) or inner.reply
    return InlineTiers(inner.answer, user, reply)
