"""Message records: what short-term memory stores for each message.

A record keeps the raw message (tier 3) with its two cheaper tiers, the tier level the
context must show it at, and a per-session id ``m1, m2, ...`` that is never reused. Only
standard LangChain message classes go in and out; the id is set on the message's ``id``.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> draft = draft_from_message(HumanMessage("My name is Jordan."), index=0)
    >>> record = draft.to_record(seq=1, tier1="user_name=Jordan", tier2="The user is Jordan.")
    >>> record.id, record.required_tier_level
    ('m1', 1)
    >>> record.to_message()
    HumanMessage(content='My name is Jordan.', additional_kwargs={}, response_metadata={}, id='m1')
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from langmem_tiers.errors import (
    InvalidContentError,
    InvalidNamespaceError,
    InvalidTierError,
    NotFoundError,
)
from langmem_tiers.long_term.store.records import has_nul_escape, json_utf8_error

__all__ = [
    "Content",
    "MessageDraft",
    "MessageRecord",
    "format_message_id",
    "parse_message_id",
    "validate_level",
    "validate_session_id",
]

Content = str | list[str | dict[str, Any]]
"""A LangChain message's content: text, or a list of content blocks."""

_ID_PATTERN = re.compile(r"m([1-9][0-9]*)")
_MAX_SESSION_ID_CHARS = 512


def format_message_id(seq: int) -> str:
    """The id of the ``seq``-th message of a session: ``m<seq>``.

    >>> format_message_id(12)
    'm12'
    """
    return f"m{seq}"


def parse_message_id(message_id: object) -> int:
    """The sequence number of an id like ``m12``.

    Raises:
        NotFoundError: the value is not a message id, so no message has it.

    >>> parse_message_id("m12")
    12
    """
    match = _ID_PATTERN.fullmatch(message_id) if isinstance(message_id, str) else None
    if match is None:
        raise NotFoundError(
            f"message_id {message_id!r} does not exist: ids look like 'm12' (the letter m and "
            "the message's number in its session); use an id shown in the context."
        )
    return int(match.group(1))


def validate_level(level: object, field_name: str = "level") -> int:
    """A tier level as an int in 1..3, or :class:`InvalidTierError`.

    >>> validate_level(3)
    3
    """
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 3:
        raise InvalidTierError(
            f"{field_name} must be a tier level 1, 2 or 3 (facts, summary, raw), got {level!r}."
        )
    return int(level)


def validate_session_id(session_id: object, field_name: str = "session_id") -> str:
    """A session (or user) id: a non-empty string without NUL bytes, at most 512 characters."""
    what = "the user's id" if field_name == "user_id" else "the conversation's id"
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidNamespaceError(
            f"{field_name} must be a non-empty string, got {session_id!r}; pass {what}."
        )
    if "\x00" in session_id:
        raise InvalidNamespaceError(
            f"{field_name} may not contain NUL bytes, got {session_id!r}; remove the '\\x00'."
        )
    if len(session_id) > _MAX_SESSION_ID_CHARS:
        raise InvalidNamespaceError(
            f"{field_name} is {len(session_id)} characters long; the limit is "
            f"{_MAX_SESSION_ID_CHARS}. Use a shorter id (a hash of it, for example)."
        )
    return session_id


def _is_default(value: Any) -> bool:
    # Fields left at their defaults are not stored: the message class restores them.
    if value is None or value is False:
        return True
    return isinstance(value, (dict, list, str)) and not value


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def content_text(content: Content) -> str:
    """The text of a message content: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message of a session.

    ``content`` is tier 3 (the message exactly as it was added); ``tier1``/``tier2`` are
    ``None`` while tiering has failed (they are retried on a later add).
    """

    id: str
    """``m<seq>``: stable, never reused in the session."""
    seq: int
    """The number in the id; orders the session."""
    role: str
    """The LangChain message type: ``human``, ``ai``, ``system``, ``tool``, ``chat``..."""
    content: Content
    """Tier 3: the raw content."""
    tier1: str | None
    """Tier 1: ``key=value`` facts."""
    tier2: str | None
    """Tier 2: one or two sentences."""
    required_tier_level: int = 1
    """The tier the context shows this message at; only ever raised."""
    created_at: str = field(default_factory=_now_iso)
    """When the message was added (ISO 8601, UTC)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """The message's other fields (name, tool calls, metadata), to rebuild it exactly."""
    user_id: str | None = None
    """The user the conversation is with, when the caller said (lists a user's sessions)."""

    @property
    def text(self) -> str:
        """Tier 3 as text."""
        return content_text(self.content)

    @property
    def tiered(self) -> bool:
        """Whether tiering succeeded for this message."""
        return self.tier1 is not None and self.tier2 is not None

    @property
    def uses_tools(self) -> bool:
        """Tool calls and tool results must reach a model whole (the protocol pairs them)."""
        return self.role == "tool" or bool(self.extra.get("tool_calls"))

    def to_message(self) -> BaseMessage:
        """The raw message, as the standard LangChain class, with ``id`` set to this id."""
        data = {**self.extra, "content": self.content, "id": self.id}
        return messages_from_dict([{"type": self.role, "data": data}])[0]

    def replace(self, **changes: Any) -> MessageRecord:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the JSONL log's ``message`` object; ``user_id`` only when set)."""
        data = {
            "id": self.id,
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "tier1": self.tier1,
            "tier2": self.tier2,
            "required_tier_level": self.required_tier_level,
            "created_at": self.created_at,
            "extra": dict(self.extra),
        }
        if self.user_id is not None:
            data["user_id"] = self.user_id
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MessageRecord:
        """Invert :meth:`to_json`."""
        return cls(
            id=str(data["id"]),
            seq=int(data["seq"]),
            role=str(data["role"]),
            content=data["content"],
            tier1=data.get("tier1"),
            tier2=data.get("tier2"),
            required_tier_level=int(data.get("required_tier_level", 1)),
            created_at=str(data["created_at"]),
            extra=dict(data.get("extra") or {}),
            user_id=data.get("user_id"),
        )


class MessageDraft(NamedTuple):
    """A validated message not yet stored: the log gives it its id."""

    role: str
    content: Content
    extra: Mapping[str, Any]
    created_at: str
    tier1: str | None = None
    tier2: str | None = None
    user_id: str | None = None

    def to_record(
        self, seq: int, tier1: str | None = None, tier2: str | None = None
    ) -> MessageRecord:
        """The record this draft becomes as the ``seq``-th message (tiers override the draft's)."""
        return MessageRecord(
            id=format_message_id(seq),
            seq=seq,
            role=self.role,
            content=self.content,
            tier1=tier1 if tier1 is not None else self.tier1,
            tier2=tier2 if tier2 is not None else self.tier2,
            required_tier_level=1,
            created_at=self.created_at,
            extra=self.extra,
            user_id=self.user_id,
        )

    def to_message(self) -> BaseMessage:
        """The message as LangChain's class (without an id yet)."""
        data = {**self.extra, "content": self.content}
        return messages_from_dict([{"type": self.role, "data": data}])[0]


def draft_from_message(
    message: object, *, index: int, max_chars: int = 1_000_000, created_at: str | None = None
) -> MessageDraft:
    """Validate one message and turn it into a draft.

    Raises:
        InvalidContentError: not a LangChain message, empty, oversized, NUL bytes, text
            that is not valid Unicode (lone surrogates), or fields that are not
            JSON-serialisable. ``index`` names the message in the error.
    """
    where = f"messages[{index}]"
    if not isinstance(message, BaseMessage):
        raise InvalidContentError(
            f"{where} must be a LangChain message (HumanMessage, AIMessage...), "
            f"got {type(message).__name__}: {message!r:.80}."
        )
    dumped = message_to_dict(message)
    role = str(dumped["type"])
    data = dict(dumped["data"])
    content: Content = data.pop("content")
    for key in ("id", "type"):
        data.pop(key, None)
    extra = {k: v for k, v in data.items() if not _is_default(v)}
    text = content_text(content)
    if not text.strip() and not extra.get("tool_calls"):
        raise InvalidContentError(
            f"{where}.content is empty ({content!r}); a stored message needs text (or tool calls)."
        )
    if len(text) > max_chars:
        raise InvalidContentError(
            f"{where}.content is {len(text)} characters long; the limit is {max_chars} "
            "(setting max_content_chars). Split the message or raise the limit."
        )
    # Keyed by field, so an error below names e.g. messages[1].additional_kwargs.x.
    fields = {"content": content, **extra}
    try:
        encoded = json.dumps(fields, ensure_ascii=False)
    except RecursionError as err:
        raise InvalidContentError(f"{where} is nested too deeply to store.") from err
    except (TypeError, ValueError) as err:
        raise InvalidContentError(
            f"{where} has fields that are not JSON-serialisable ({err}); keep content, "
            "additional_kwargs and response_metadata to JSON types."
        ) from err
    if "\x00" in encoded or has_nul_escape(encoded):
        raise InvalidContentError(
            f"{where} contains NUL bytes ('\\x00'); remove them before storing the message."
        )
    refusal = json_utf8_error(fields, encoded, where, sep=".")
    if refusal is not None:
        raise InvalidContentError(refusal)
    return MessageDraft(
        role=role,
        content=content,
        extra=extra,
        created_at=created_at or _message_time(extra, where) or _now_iso(),
    )


def _message_time(extra: Mapping[str, Any], where: str) -> str | None:
    """The time a message says it was written (``additional_kwargs["created_at"]``), as UTC ISO.

    Past conversations brought in later (``langmem-tiers ingest``) keep their own times.
    """
    kwargs = extra.get("additional_kwargs")
    raw = kwargs.get("created_at") if isinstance(kwargs, Mapping) else None
    if raw is None:
        return None
    try:
        parsed = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError as err:
        raise InvalidContentError(
            f"{where}.additional_kwargs.created_at must be an ISO-8601 time like "
            f"2024-05-01T12:00:00+00:00, got {raw!r}."
        ) from err
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).isoformat()
