"""The one bounded regenerate loop: what a generation asked for, answered, within a bound.

A model answering from a tiered view may ask for more with a marker in its text
(``[REQUEST_TIER:3:m12]``, ``[SEARCH_EPISODIC: query]``) or the equivalent tool call
(``request_tier``, ``search_episodic``). :func:`read_asks` reads one generation's asks
(model output only: a marker a user typed is text) and applies the bound: past
``Settings.max_regenerations`` regenerations they are ignored and the best answer so far
(:func:`best_answer`) is kept. :func:`answer_tiers_flow` and :func:`answer_searches_flow`
answer them through :class:`~langmem_tiers.conversation.session.ChatMemory` (a tier raised
stays raised; an id not in the session is refused, never a crash) and gather what the next
generation is shown in :class:`Findings`. The chat graph runs these steps as its nodes, the
middleware inside one model call; the middleware's tools answer through
:func:`tier_tool_flow` and :func:`search_tool_flow`, with the same checks and replies.

Example:
    >>> from langchain_core.messages import AIMessage
    >>> actions: list[str] = []
    >>> asked = read_asks(AIMessage("Let me look. [SEARCH_EPISODIC: budget]"), "markers",
    ...                   attempt=1, bound=2, actions=actions)
    >>> asked.draft, asked.pending["search"], asked.asks
    ('Let me look.', [{'query': 'budget', 'call_id': None}], True)
    >>> read_asks(AIMessage("Again [SEARCH_EPISODIC: budget]"), "markers",
    ...           attempt=3, bound=2, actions=actions).asks, actions
    (False, ["bound of 2 regenerations reached: ignored SEARCH_EPISODIC: 'budget'"])
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from langmem_tiers.config import ChatMode
from langmem_tiers.conversation.flows import Flow
from langmem_tiers.tiers.markers import MAX_QUERY_CHARS, parse_markers, strip_markers

if TYPE_CHECKING:
    from langmem_tiers.conversation.session import ChatMemory, SearchOutcome, TierOutcome

__all__ = [
    "FALLBACK_ANSWER",
    "MEMORY_TOOL_NAMES",
    "Asked",
    "Findings",
    "Pending",
    "PendingSearch",
    "PendingTier",
    "answer_searches_flow",
    "answer_tiers_flow",
    "best_answer",
    "no_pending",
    "read_asks",
    "search_tool_flow",
    "tier_tool_flow",
]

logger = logging.getLogger(__name__)

MEMORY_TOOL_NAMES = ("request_tier", "search_episodic")
"""The tools that ask for more context."""

FALLBACK_ANSWER = "Sorry, I could not find enough in our conversation to answer that."
"""The answer kept when every generation of a turn was only requests (no text)."""

_TIER_ARGS = "message_id must be an id shown in the context (like 'm12') and level 1, 2 or 3"


class PendingTier(TypedDict):
    """A tier request of the last generation, not yet acted on."""

    level: int
    message_id: str
    call_id: str | None
    """The tool call's id in tool mode (None for a marker)."""


class PendingSearch(TypedDict):
    """An episodic search of the last generation, not yet acted on."""

    query: str
    call_id: str | None


class Pending(TypedDict):
    """What the last generation asked for."""

    tier: list[PendingTier]
    search: list[PendingSearch]
    retry: bool
    """Tool mode: only invalid tool calls, answered with errors; generate again."""


def no_pending() -> Pending:
    """Nothing asked for."""
    return {"tier": [], "search": [], "retry": False}


class Asked(NamedTuple):
    """What one generation asked for, the bound applied."""

    draft: str
    """Its text without markers (tier lines of a one-call answer already taken out)."""
    pending: Pending
    """What to act on (nothing once the bound is reached)."""
    replies: list[BaseMessage]
    """Tool mode: the model's call (ids filled in) and error replies to invalid calls."""
    ignored: bool
    """It asked, but the bound was reached: the best answer so far is the answer."""

    @property
    def asks(self) -> bool:
        """Whether to act and generate again."""
        return bool(self.pending["tier"] or self.pending["search"] or self.pending["retry"])


@dataclass
class Findings:
    """What a turn's answered asks give the next generation, and the turn's record: the
    search results (each line once), notices about refused or failed marker requests,
    tool replies, what the loop did and what failed without stopping the turn."""

    search_results: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    replies: list[BaseMessage] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def best_answer(drafts: Sequence[str]) -> str:
    """The newest non-empty draft (it saw the most context), else :data:`FALLBACK_ANSWER`.

    >>> best_answer(["A first try.", "", "The answer."]), best_answer(["", ""]) == FALLBACK_ANSWER
    ('The answer.', True)
    """
    for draft in reversed(drafts):
        if draft.strip():
            return draft
    return FALLBACK_ANSWER


def tier_level(raw: Any) -> int | None:
    """A tier level a tool was given (1, 2 or 3, also as text), else None.

    >>> tier_level("3"), tier_level(True), tier_level(4)
    (3, None, None)
    """
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    return raw if isinstance(raw, int) and 1 <= raw <= 3 else None


def _tier_args(message_id: Any, level: Any) -> tuple[int, str] | None:
    checked = tier_level(level)
    if isinstance(message_id, str) and message_id.strip() and checked is not None:
        return checked, message_id.strip()
    return None


def _query_arg(query: Any) -> str | None:
    if isinstance(query, str) and query.strip():
        return " ".join(query.split())[:MAX_QUERY_CHARS]
    return None


def _read_markers(text: str) -> tuple[str, Pending]:
    parsed = parse_markers(text)  # model output only: user text is never parsed
    pending: Pending = {
        "tier": [
            {"level": int(r.level), "message_id": r.message_id, "call_id": None}
            for r in parsed.tier_requests
        ],
        "search": [{"query": q, "call_id": None} for q in parsed.episodic_searches],
        "retry": False,
    }
    return parsed.text, pending


def _read_tool_calls(output: AIMessage, attempt: int) -> tuple[Pending, list[BaseMessage]]:
    """Requests in ``output``'s tool calls, and the messages to keep.

    Calls with bad arguments or unknown names are answered at once with an error
    ``ToolMessage`` (the tool protocol wants an answer to every call); when every call was
    such, the model may correct itself (``retry``).
    """
    pending = no_pending()
    if not output.tool_calls:
        return pending, []
    replies: list[BaseMessage] = []
    calls = []
    for index, call in enumerate(output.tool_calls):
        call_id = call.get("id") or f"call_{attempt}_{index}"
        calls.append({**call, "id": call_id})
        name, args = call["name"], call.get("args") or {}
        error: str | None = None
        if name == "request_tier":
            tier = _tier_args(args.get("message_id"), args.get("level", 3))
            if tier is None:
                error = f"invalid arguments {args!r}: {_TIER_ARGS}."
            else:
                pending["tier"].append(
                    {"level": tier[0], "message_id": tier[1], "call_id": call_id}
                )
        elif name == "search_episodic":
            query = _query_arg(args.get("query"))
            if query is None:
                error = f"invalid arguments {args!r}: query must be a non-empty string."
            else:
                pending["search"].append({"query": query, "call_id": call_id})
        else:
            error = f"unknown tool {name!r}; the tools are request_tier and search_episodic."
        if error is not None:
            logger.warning("ignoring tool call %s: %s", call_id, error)
            replies.append(ToolMessage(error, tool_call_id=call_id, name=name, status="error"))
    pending["retry"] = bool(replies) and not (pending["tier"] or pending["search"])
    return pending, [output.model_copy(update={"tool_calls": calls}), *replies]


def _describe(pending: Pending) -> str:
    parts = [f"REQUEST_TIER:{p['level']}:{p['message_id']}" for p in pending["tier"]]
    parts += [f"SEARCH_EPISODIC: {p['query']!r}" for p in pending["search"]]
    if pending["retry"]:
        parts.append("invalid tool calls")
    return ", ".join(parts)


def read_asks(
    output: AIMessage,
    mode: ChatMode,
    *,
    attempt: int,
    bound: int,
    actions: list[str],
    text: str | None = None,
) -> Asked:
    """What generation number ``attempt`` (1 for the first) asked for, within ``bound``.

    ``text``: the output's answer text when it is not ``output.text`` (a one-call answer
    without its tier lines). In ``tools`` mode markers are stripped, never acted on. When
    the bound is reached the asks are logged, added to ``actions`` and dropped.
    """
    text = output.text if text is None else text
    if mode == "markers":
        draft, pending = _read_markers(text)
        replies: list[BaseMessage] = []
    else:
        draft = strip_markers(text)
        pending, replies = _read_tool_calls(output, attempt)
    asked = Asked(draft, pending, replies, ignored=False)
    if not asked.asks or attempt <= bound:
        return asked
    logger.warning(
        "regeneration bound (%d) reached; ignoring %s and keeping the best answer",
        bound,
        _describe(pending),
    )
    actions.append(f"bound of {bound} regenerations reached: ignored {_describe(pending)}")
    return Asked(draft, no_pending(), [], ignored=True)


def _tier_reply(outcome: TierOutcome) -> str:
    return outcome.detail if outcome.status == "raised" else f"Refused: {outcome.detail}"


def _search_reply(query: str, outcome: SearchOutcome) -> str:
    if outcome.error is not None:
        return f"The search for {query!r} failed; answer without it."
    return "\n".join(outcome.lines) or f"Your search for {query!r} found nothing."


def answer_tiers_flow(
    memory: ChatMemory,
    session_id: str,
    user_id: str | None,
    requests: Sequence[PendingTier],
    found: Findings,
) -> Flow[list[BaseMessage]]:
    """Raise the asked tiers; answers the session's new view. Outcomes go to ``found``."""
    asked = [(p["level"], p["message_id"]) for p in requests]
    outcomes, context = yield from memory.request_tiers_flow(session_id, user_id, asked)
    for request, outcome in zip(requests, outcomes, strict=True):
        found.actions.append(
            f"REQUEST_TIER:{outcome.level}:{outcome.message_id} -> {outcome.status}"
        )
        if outcome.status == "failed":
            found.errors.append(f"request_tier: {outcome.message_id}: {outcome.detail}")
        if request["call_id"] is not None:
            status = "success" if outcome.status == "raised" else "error"
            found.replies.append(
                ToolMessage(
                    _tier_reply(outcome),
                    tool_call_id=request["call_id"],
                    name="request_tier",
                    status=status,
                )
            )
        elif outcome.status != "raised":
            found.notices.append(
                f"Your request for message {outcome.message_id} was {outcome.status}: "
                f"{outcome.detail}"
            )
    return context


def answer_searches_flow(
    memory: ChatMemory,
    session_id: str,
    user_id: str | None,
    searches: Sequence[PendingSearch],
    found: Findings,
) -> Flow[None]:
    """Search the user's episodic memory for each asked query; results go to ``found``."""
    for search in searches:
        query = search["query"]
        outcome = yield from memory.search_flow(session_id, user_id, query)
        if outcome.error is not None:
            found.actions.append(f"SEARCH_EPISODIC: {query!r} -> failed")
            found.errors.append(f"search_episodic: {outcome.error}")
        else:
            found.actions.append(f"SEARCH_EPISODIC: {query!r} -> {len(outcome.lines)} found")
            found.search_results.extend(
                line for line in outcome.lines if line not in found.search_results
            )
        reply = _search_reply(query, outcome)
        if search["call_id"] is not None:
            found.replies.append(
                ToolMessage(reply, tool_call_id=search["call_id"], name="search_episodic")
            )
        elif outcome.error is not None or not outcome.lines:
            found.notices.append(reply)
    return None


def tier_tool_flow(
    memory: ChatMemory, session_id: str, user_id: str | None, message_id: Any, level: Any
) -> Flow[str]:
    """The ``request_tier`` tool run on its own: its reply."""
    tier = _tier_args(message_id, level)
    if tier is None:
        return f"Refused: {_TIER_ARGS}; got {message_id!r}, {level!r}."
    request: PendingTier = {"level": tier[0], "message_id": tier[1], "call_id": "tool"}
    found = Findings()
    yield from answer_tiers_flow(memory, session_id, user_id, [request], found)
    return found.replies[0].text


def search_tool_flow(
    memory: ChatMemory, session_id: str, user_id: str | None, query: Any
) -> Flow[str]:
    """The ``search_episodic`` tool run on its own: its reply."""
    text = _query_arg(query)
    if text is None:
        return "Refused: query must say what to look for."
    found = Findings()
    search: PendingSearch = {"query": text, "call_id": "tool"}
    yield from answer_searches_flow(memory, session_id, user_id, [search], found)
    return found.replies[0].text
