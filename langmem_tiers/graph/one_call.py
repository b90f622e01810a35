"""One-call mode of the tiered chat graph: the answer's model call also writes the turn's tiers.

Without it a turn costs two model calls when the tierer is a model (the answer, then the
tiers of the user message and of the answer). With it, ``generate`` asks for both at once
(see :mod:`~langmem_tiers.tiers.inline`): through ``with_structured_output`` when the
model supports it, else as tier lines after the answer, which are taken out of what the
user sees. ``save`` stores the messages with those tiers, so a turn without tier or search
requests is exactly one model call. Tiers a reply lacks, or that are garbage (no
``key=value``, longer than the message), come from the offline tierer: still no call.

When the model regenerates after a request, the user message's tiers come from the newest
generation that wrote usable ones, and the answer's from the generation whose answer is kept.

Example:
    >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    >>> from langmem_tiers import TieredMemoryStore
    >>> from langmem_tiers.conversation import ChatMemory
    >>> from langmem_tiers.graph import build_tiered_chat_graph
    >>> model = GenericFakeChatModel(messages=iter([
    ...     "Hello Jordan, good luck with RAI Chat!\\nUSER TIER1: user_name=Jordan, project=RAI Chat"
    ...     "\\nUSER TIER2: Jordan leads RAI Chat.\\nTIER1: greeting=Jordan\\nTIER2: A greeting."]))
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     graph = build_tiered_chat_graph(model, store=store, one_call=True)
    ...     out = graph.invoke({"messages": [("user", "Hi, I am Jordan and I lead RAI Chat.")],
    ...                         "session_id": "s1"})
    ...     records = ChatMemory(store).memory("s1").records()
    >>> out["answer"], [r.tier1 for r in records]
    ('Hello Jordan, good luck with RAI Chat!', ['user_name=Jordan, project=RAI Chat', 'greeting=Jordan'])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from langmem_tiers.tiers.base import MessageTiers
from langmem_tiers.tiers.inline import (
    INLINE_TIER_INSTRUCTIONS,
    ONE_CALL_SCHEMA,
    STRUCTURED_TIER_INSTRUCTIONS,
    InlineTiers,
    from_structured,
    split_inline_tiers,
)
from langmem_tiers.tiers.llm import usable_tiers
from langmem_tiers.tiers.offline import OfflineTierer
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = ["OneCall", "read_one_call", "tiers_entry"]

logger = logging.getLogger(__name__)

TiersEntry = dict[str, list[str] | None]
"""One generation's tiers in the state: ``{"user": [t1, t2] | None, "reply": ...}``."""


def read_one_call(output: Any) -> tuple[Any, InlineTiers | None]:
    """The model's message and what it wrote, from a plain or structured (``include_raw``) call."""
    if isinstance(output, Mapping) and "raw" in output:
        raw = output["raw"]
        reading = from_structured(output.get("parsed"))
        if reading is None and isinstance(raw, AIMessage):
            reading = split_inline_tiers(raw.text)  # no object: read its text instead
        return raw, reading
    if isinstance(output, AIMessage):
        return output, split_inline_tiers(output.text)
    return output, None


def tiers_entry(reading: InlineTiers | None) -> TiersEntry:
    """What a generation wrote, for the state (plain lists: it is checkpointed as JSON)."""

    def pair(tiers: MessageTiers | None) -> list[str] | None:
        return None if tiers is None else [tiers.tier1, tiers.tier2]

    if reading is None:
        return {"user": None, "reply": None}
    return {"user": pair(reading.user), "reply": pair(reading.reply)}


def _tiers(raw: Any) -> MessageTiers | None:
    if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(isinstance(t, str) for t in raw):
        return MessageTiers(raw[0], raw[1])
    return None


class OneCall:
    """How one graph asks for the tiers in the answer's call, and reads them back.

    Args:
        structured: the call uses ``with_structured_output`` (else tier lines).
        token_counter: measures "longer than the message" when checking tiers.
    """

    def __init__(self, *, structured: bool, token_counter: TokenCounter | None = None) -> None:
        self.structured = structured
        self.token_counter = token_counter
        self.fallback = OfflineTierer()

    @classmethod
    def bind(
        cls,
        model: BaseChatModel,
        bound: Runnable[LanguageModelInput, Any],
        *,
        tools: bool,
        token_counter: TokenCounter | None = None,
    ) -> tuple[OneCall, Runnable[LanguageModelInput, Any]]:
        """The one-call reader and the runnable ``generate`` calls.

        Structured output where the model has it and the graph does not bind its own
        tools (both would be tool calls); tier lines otherwise.
        """
        if not tools:
            try:
                structured = model.with_structured_output(ONE_CALL_SCHEMA, include_raw=True)
            except NotImplementedError:
                pass
            else:
                return cls(structured=True, token_counter=token_counter), structured
        return cls(structured=False, token_counter=token_counter), bound

    @property
    def instructions(self) -> str:
        """What the system prompt gets at its end."""
        return STRUCTURED_TIER_INSTRUCTIONS if self.structured else INLINE_TIER_INSTRUCTIONS

    def turn_tiers(
        self,
        state: Mapping[str, Any],
        question: BaseMessage,
        reply: AIMessage,
        session_id: str,
    ) -> list[MessageTiers | None]:
        """Tiers of the user message and of the kept answer; the offline tierer's for
        those the model did not write usably (``None`` for a message without text)."""
        entries: Sequence[TiersEntry] = state.get("draft_tiers") or []
        drafts: Sequence[str] = state.get("drafts") or []
        user = None
        for entry in reversed(entries):
            user = usable_tiers(_tiers(entry.get("user")), question.text, self.token_counter)
            if user is not None:
                break
        answer = None
        kept = [i for i, d in enumerate(drafts) if d.strip() and d == reply.text]
        if kept and kept[-1] < len(entries):
            written = _tiers(entries[kept[-1]].get("reply"))
            answer = usable_tiers(written, reply.text, self.token_counter)
        out: list[MessageTiers | None] = []
        missing: list[str] = []
        for name, message, tiers in (("user message", question, user), ("answer", reply, answer)):
            if tiers is None and message.text.strip():
                missing.append(name)
                tiers = self.fallback.tier([message])[0]
            out.append(tiers)
        if missing:
            logger.warning(
                "session %s: the model wrote no usable tiers for the %s; the offline "
                "tierer made them",
                session_id,
                " and the ".join(missing),
            )
        return out
