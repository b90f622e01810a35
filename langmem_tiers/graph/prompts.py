"""Prompts and tool schemas of the tiered chat graph (module constants callers can override).

The system prompt says how to search earlier conversations (a marker, or a tool for
tool-calling models). When the view shows tiered lines (``[m12|t1] ...``), and only then,
its ``{tiers}`` part explains them, lists their ids with the tier each is shown at and says
how to ask for more. Sections follow only when they have content: what is known about the
user from earlier sessions, what an episodic search found, and notes about refused requests.
Every section line is a ``- `` bullet, so a reader (or :class:`OfflineChatModel`) can tell
evidence from instructions.

Placeholders in a template are replaced by name (``{tiers}``, ``{message_index}``,
``{user_context}``, ``{search_results}``, ``{notices}``, ``{memory}``); any other braces are
left as they are, so a custom prompt may contain JSON. A custom prompt with neither
``{tiers}`` nor ``{message_index}`` gets the tier guide at its end when tiered lines are shown.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> view = [HumanMessage("[m1|t1] user_name=Jordan",
    ...         response_metadata={"langmem_tiers": {"message_id": "m1", "tier": 1}})]
    >>> message_index(view)
    'm1 (user, t1)'
    >>> text = render_system_prompt(CHAT_SYSTEM_PROMPT, context=view,
    ...                             user_context=["The user prefers tea."])
    >>> "m1 (user, t1)" in text, "[REQUEST_TIER:3:<id>]" in text, "- The user prefers tea." in text
    (True, True, True)
    >>> "REQUEST_TIER" in render_system_prompt(CHAT_SYSTEM_PROMPT, context=[HumanMessage("hi")])
    False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from langmem_tiers.short_term.context import is_tiered_line, tier_metadata

__all__ = [
    "AGENT_MEMORY_PROMPT",
    "AGENT_TIER_GUIDE",
    "CHAT_SYSTEM_PROMPT",
    "CHAT_TIER_GUIDE",
    "MIDDLEWARE_MARKERS_PROMPT",
    "MIDDLEWARE_MARKERS_TIER_GUIDE",
    "MIDDLEWARE_TOOLS_PROMPT",
    "MIDDLEWARE_TOOLS_TIER_GUIDE",
    "NOTICES_HEADER",
    "REQUEST_TIER_TOOL",
    "SEARCH_EPISODIC_TOOL",
    "SEARCH_RESULTS_HEADER",
    "TOOLS_SYSTEM_PROMPT",
    "TOOLS_TIER_GUIDE",
    "USER_CONTEXT_HEADER",
    "message_index",
    "render_system_prompt",
]

_TIERS = """\
Messages starting with [<id>|t<tier>] are shortened to save space: t1 is key=value facts \
from the message, t2 a short summary, t3 its full text. Shown this way: {message_index}"""

CHAT_TIER_GUIDE = (
    "\n\n"
    + _TIERS
    + """
To see one in full, write [REQUEST_TIER:3:<id>] (for example [REQUEST_TIER:3:m12]; 2 \
instead of 3 for its summary)."""
)
"""What ``{tiers}`` becomes in the marker mode's prompt when the view shows tiered lines."""

TOOLS_TIER_GUIDE = (
    "\n\n"
    + _TIERS
    + """
To see one in full, call the request_tier tool with its id (level 3 is the full text, 2 \
the summary)."""
)
"""What ``{tiers}`` becomes in the tool mode's prompt when the view shows tiered lines."""

AGENT_TIER_GUIDE = (
    _TIERS
    + """
Earlier messages you need in full are in the memory; answer from what is shown."""
)
"""What ``{tiers}`` becomes in :data:`AGENT_MEMORY_PROMPT` when the view shows tiered lines."""

CHAT_SYSTEM_PROMPT = """\
You are a helpful assistant with a tiered memory of this conversation.{tiers}

If you need something from earlier conversations that is not shown, write \
[SEARCH_EPISODIC: <what to look for>]. You will be asked again with what you asked for. \
Ask only when what is shown is not enough; otherwise answer directly. The user never \
sees these markers.{user_context}{search_results}{notices}{memory}"""
"""System prompt of the marker mode (``mode="markers"``)."""

TOOLS_SYSTEM_PROMPT = """\
You are a helpful assistant with a tiered memory of this conversation.{tiers}

If you need something from earlier conversations that is not shown, call the \
search_episodic tool. Call tools only when what is shown is not enough; otherwise answer \
directly.{user_context}{search_results}{notices}{memory}"""
"""System prompt of the tool mode (``mode="tools"``)."""

AGENT_MEMORY_PROMPT = "{tiers}{user_context}{memory}"
"""System prompt the pre-model memory node puts before an agent's messages (empty, and
left out, when there are no tiered lines, user context or memories)."""

_TIERED_LINES = """\
Messages starting with [<id>|t<tier>] are shortened to save space: t1 is key=value facts \
from the message, t2 a short summary, t3 its full text; the others are shown in full."""

MIDDLEWARE_TOOLS_TIER_GUIDE = (
    _TIERED_LINES
    + """
To see more of one, call the request_tier tool with its id (level 3 is the full text, 2 \
the summary); it stays shown at that tier from then on.

"""
)
"""What ``{tiers}`` becomes in :data:`MIDDLEWARE_TOOLS_PROMPT` when tiered lines are shown."""

MIDDLEWARE_MARKERS_TIER_GUIDE = (
    _TIERED_LINES
    + """
To see one in full, write [REQUEST_TIER:3:<id>] (for example [REQUEST_TIER:3:m12]; 2 \
instead of 3 for its summary).

"""
)
"""What ``{tiers}`` becomes in :data:`MIDDLEWARE_MARKERS_PROMPT` when tiered lines are shown."""

MIDDLEWARE_TOOLS_PROMPT = """\
{tiers}If you need something said earlier that is not shown, call the search_episodic \
tool. Call the memory tools only when what is shown is not enough.\
{user_context}{search_results}{notices}{memory}"""
"""Memory part of the system prompt ``TieredMemoryMiddleware`` adds (``mode="tools"``)."""

MIDDLEWARE_MARKERS_PROMPT = """\
{tiers}If you need something said earlier that is not shown, write [SEARCH_EPISODIC: <what \
to look for>]. You will be asked again with what you asked for; the user never sees these \
markers. Ask only when what is shown is not enough.{user_context}{search_results}{notices}\
{memory}"""
"""Memory part of the system prompt ``TieredMemoryMiddleware`` adds (``mode="markers"``)."""

USER_CONTEXT_HEADER = "What you know about the user from earlier conversations:"
"""First line of the ``{user_context}`` section."""

SEARCH_RESULTS_HEADER = "Archived messages found by your search ([session/id] who: text):"
"""First line of the ``{search_results}`` section."""

NOTICES_HEADER = "Notes about your requests:"
"""First line of the ``{notices}`` section."""

REQUEST_TIER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "request_tier",
        "description": (
            "Show a message of this conversation at a richer tier from now on: 3 is its "
            "full text, 2 its summary. Use the id shown before the message, like m12."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "message_id": {"type": "string", "description": "The message id, like m12."},
                "level": {
                    "type": "integer",
                    "enum": [1, 2, 3],
                    "description": "3 for the full text (default), 2 for the summary.",
                },
            },
            "required": ["message_id"],
        },
    },
}
"""The ``request_tier`` tool, in the OpenAI function format ``bind_tools`` accepts."""

SEARCH_EPISODIC_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_episodic",
        "description": (
            "Search the archived messages of earlier conversations with this user "
            "(hybrid-ranked: meaning, recency, use and confidence)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
            },
            "required": ["query"],
        },
    },
}
"""The ``search_episodic`` tool, in the OpenAI function format."""

_ROLES = {"human": "user", "ai": "assistant"}


def message_index(context: Sequence[BaseMessage]) -> str:
    """``m1 (user, t1), m2 (assistant, t3), ...`` for the tiered lines of a view."""
    parts: list[str] = []
    for message in context:
        data = tier_metadata(message)
        if "message_id" in data and is_tiered_line(message):
            role = _ROLES.get(message.type, message.type)
            parts.append(f"{data['message_id']} ({role}, t{data.get('tier', 3)})")
    return ", ".join(parts) if parts else "(none yet)"


def _section(header: str, lines: Sequence[str]) -> str:
    if not lines:
        return ""
    body = "\n".join(line if line.startswith("- ") else f"- {line}" for line in lines)
    return f"\n\n{header}\n{body}"


def _fill(template: str, values: dict[str, str]) -> str:
    # str.format would choke on other braces in a caller's prompt (JSON examples).
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def render_system_prompt(
    template: str,
    *,
    context: Sequence[BaseMessage] = (),
    user_context: Sequence[str] = (),
    search_results: Sequence[str] = (),
    notices: Sequence[str] = (),
    memory: str = "",
    tier_guide: str = CHAT_TIER_GUIDE,
) -> str:
    """The system prompt for one generation.

    Args:
        template: :data:`CHAT_SYSTEM_PROMPT`, :data:`TOOLS_SYSTEM_PROMPT` or a caller's own.
        context: the view (the ids and tiers of its tiered lines make ``{message_index}``).
        user_context: memories of the user from earlier sessions.
        search_results: what episodic searches found this turn.
        notices: notes about refused or failed requests.
        memory: the view's own long-term memory text (summaries of this conversation).
        tier_guide: what ``{tiers}`` becomes when the view shows tiered lines (it may use
            ``{message_index}``); nothing otherwise.
    """
    tiers = tier_guide if any(is_tiered_line(m) for m in context) else ""
    if tiers and "{tiers}" not in template and "{message_index}" not in template:
        template += "{tiers}"  # a model that sees tiered lines is always told what they are
    return _fill(
        template,
        {
            "tiers": tiers,
            "message_index": message_index(context),
            "user_context": _section(USER_CONTEXT_HEADER, user_context),
            "search_results": _section(SEARCH_RESULTS_HEADER, search_results),
            "notices": _section(NOTICES_HEADER, notices),
            "memory": f"\n\n{memory}" if memory else "",
        },
    ).strip()
