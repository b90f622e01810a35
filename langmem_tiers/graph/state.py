"""The state of the tiered chat graph, and how a node finds the session and the new message.

``messages`` is the conversation as LangGraph keeps it (``add_messages``); the model's
view comes from short-term memory instead, so it stays within its budget however long
the thread grows. The other fields describe the current turn and are reset by
``load_memory`` at its start.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> resolve_ids({"session_id": "s1"}, {"configurable": {"user_id": "u1"}})
    ('s1', 'u1')
    >>> resolve_ids({}, {"configurable": {"thread_id": "t9"}})
    ('t9', 't9')
    >>> current_question([HumanMessage("hi", id="1")]).content
    'hi'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    messages_from_dict,
    messages_to_dict,
)
from langgraph.graph.message import add_messages

from langmem_tiers.conversation.regenerate import Pending
from langmem_tiers.errors import InvalidContentError, InvalidNamespaceError
from langmem_tiers.short_term.context import tier_metadata
from langmem_tiers.short_term.records import validate_session_id

_METADATA_KEY = "langmem_tiers"

__all__ = [
    "TieredChatInput",
    "TieredChatState",
    "current_question",
    "is_saved",
    "mark_saved",
    "pack",
    "resolve_ids",
    "unpack",
]


class TieredChatInput(TypedDict, total=False):
    """What a caller passes: the new user message and whose conversation it is."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation; a turn starts with a new ``HumanMessage`` at the end."""
    session_id: str
    """The conversation's id (default: the thread id of the run's config)."""
    user_id: str
    """Whose long-term memory (default: ``configurable.user_id``, else the session id)."""


class TieredChatState(TieredChatInput, total=False):
    """The graph's state: the input plus the current turn."""

    context: list[dict[str, Any]]
    """The session's tiered view from short-term memory (without the new message), packed."""
    user_context: list[str]
    """The user's memories from earlier sessions, best first."""
    search_results: list[str]
    """What this turn's episodic searches found."""
    notices: list[str]
    """Notes for the model about refused or failed requests."""
    scratch: list[dict[str, Any]]
    """Tool mode: this turn's tool calls and tool results, packed."""
    pending: Pending
    """What the last generation asked for."""
    answer: str
    """The answer so far, markers stripped (the final one after ``save``)."""
    drafts: list[str]
    """Every generation of this turn, markers stripped."""
    draft_tiers: list[dict[str, list[str] | None]]
    """One-call mode: the tiers each generation wrote (``user`` and ``reply``, each
    ``[tier1, tier2]`` or None), aligned with ``drafts``."""
    actions: list[str]
    """What the regenerate loop did this turn, in order."""
    regenerations: int
    """Regenerations this turn (bounded by ``Settings.max_regenerations``)."""
    errors: list[str]
    """Failures this turn that did not stop it (long-term memory down, a failed search)."""
    consolidation_due: bool
    """The preset's window rule asked for a consolidation after ``save``."""
    consolidated: list[str]
    """Message ids the ``consolidate`` node moved to long-term memory this turn."""


def pack(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as plain dicts for a state field other than ``messages``.

    LangGraph's ``messages`` stream mode emits every message object a node writes to the
    state; the view and the tool scratch are the model's input, not the conversation, so
    they are kept packed and never streamed as if they were new messages.

    >>> from langchain_core.messages import HumanMessage
    >>> unpack(pack([HumanMessage("hi", id="m1")]))[0].id
    'm1'
    """
    return messages_to_dict(list(messages))


def unpack(packed: Sequence[dict[str, Any]] | None) -> list[BaseMessage]:
    """Invert :func:`pack` (``None`` is no messages)."""
    return messages_from_dict(list(packed or []))


def resolve_ids(state: Mapping[str, Any], config: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(session_id, user_id)`` from the state, else the run's ``configurable``.

    The session defaults to the thread id; the user to the session.

    Raises:
        InvalidNamespaceError: no session id anywhere, or an invalid one.
    """
    configurable = (config or {}).get("configurable") or {}
    session = (
        state.get("session_id") or configurable.get("session_id") or configurable.get("thread_id")
    )
    if not session:
        raise InvalidNamespaceError(
            "session_id is missing: pass {'session_id': ...} in the graph input, or run it "
            "with config={'configurable': {'thread_id': ...}}."
        )
    user = state.get("user_id") or configurable.get("user_id") or session
    return validate_session_id(str(session)), validate_session_id(str(user))


def is_saved(message: BaseMessage) -> bool:
    """Whether a state message was saved to short-term memory by a memory node."""
    return "message_id" in tier_metadata(message)


def mark_saved(message: BaseMessage, message_id: str | None) -> BaseMessage:
    """A copy of a state message marked as saved under ``message_id`` (same id, so
    ``add_messages`` replaces it; ``None``: not storable, marked so it is not retried)."""
    metadata = dict(message.response_metadata or {})
    metadata[_METADATA_KEY] = {"message_id": message_id}
    return message.model_copy(update={"response_metadata": metadata})


def current_question(messages: Sequence[BaseMessage]) -> BaseMessage:
    """The new user message a turn answers: the last message, a ``HumanMessage`` not saved yet.

    Raises:
        InvalidContentError: the messages do not end with a new user message.
    """
    if not messages:
        raise InvalidContentError(
            "messages is empty: a turn needs the user's message, e.g. "
            "{'messages': [HumanMessage('...')]}."
        )
    last = messages[-1]
    if last.type != "human" or is_saved(last):
        raise InvalidContentError(
            f"messages must end with the user's new message (a HumanMessage not answered yet), "
            f"got a {type(last).__name__} last ({last.text[:60]!r}); add the user's message."
        )
    return last
