"""Tiered memory for an agent of your own: two nodes around its model node.

``memory_view_node`` runs before the model: it turns the state's ``messages`` into the
tiered, budgeted view (the session's short-term memory, tiered, then the messages not
saved yet, raw) with a system prompt that explains tiers and lists what is known about
the user, and writes it to ``llm_input_messages`` (the model node reads that instead of
``messages``). ``memory_save_node`` runs after the model: it saves the new messages to
short-term memory with tiers, the user's facts and preferences to long-term memory, runs
the preset's consolidation when its window rule fires, and marks the saved messages in
``messages`` (``response_metadata["langmem_tiers"]["message_id"]``) so they are not saved
twice. ``messages`` must use the ``add_messages`` reducer (as ``MessagesState`` does).

These nodes are for graphs you build yourself. For ``langchain.agents.create_agent`` use
:class:`~langmem_tiers.graph.middleware.TieredMemoryMiddleware`: ``create_agent`` ignores
``llm_input_messages`` written by a ``before_model`` hook, so ``memory_view_node`` there
would change nothing.

Both nodes take the session from ``session_id`` in the state or the run's
``configurable`` (``session_id``, else ``thread_id``) and the user from ``user_id``
likewise (else the session). Long-term memory failures are logged, never raised.

Example:
    >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    >>> from langgraph.graph import START, END, MessagesState, StateGraph
    >>> from langmem_tiers import TieredMemoryStore
    >>> class State(MessagesState):
    ...     llm_input_messages: list
    >>> model = GenericFakeChatModel(messages=iter(["Hi Jordan!"]))
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     memory = ChatMemory(store)
    ...     builder = StateGraph(State)
    ...     _ = builder.add_node("memory_view", memory_view_node(memory))
    ...     _ = builder.add_node("agent", lambda s: {"messages": [model.invoke(s["llm_input_messages"])]})
    ...     _ = builder.add_node("memory_save", memory_save_node(memory))
    ...     _ = builder.add_edge(START, "memory_view").add_edge("memory_view", "agent")
    ...     _ = builder.add_edge("agent", "memory_save").add_edge("memory_save", END)
    ...     out = builder.compile().invoke({"messages": [("user", "I'm Jordan.")]},
    ...                                    {"configurable": {"thread_id": "s1"}})
    ...     stored = [(m.id, m.content) for m in memory.memory("s1").raw_messages()]
    >>> stored
    [('m1', "I'm Jordan."), ('m2', 'Hi Jordan!')]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig

from langmem_tiers.conversation.flows import Flow
from langmem_tiers.conversation.session import ChatMemory, storable
from langmem_tiers.errors import ConfigurationError
from langmem_tiers.graph.chat import node_runnable
from langmem_tiers.graph.prompts import (
    AGENT_MEMORY_PROMPT,
    AGENT_TIER_GUIDE,
    render_system_prompt,
)
from langmem_tiers.graph.state import is_saved, mark_saved, resolve_ids
from langmem_tiers.short_term.context import memory_text

__all__ = ["memory_save_node", "memory_view_node"]

logger = logging.getLogger(__name__)


def _unsaved(messages: list[BaseMessage]) -> list[BaseMessage]:
    return [m for m in messages if m.type != "system" and not is_saved(m)]


def memory_view_node(
    memory: ChatMemory,
    *,
    output_key: str = "llm_input_messages",
    prompt: str | None = AGENT_MEMORY_PROMPT,
    name: str = "memory_view",
) -> Runnable[Any, dict[str, Any]]:
    """A node that writes the tiered view of the conversation to ``output_key``.

    Args:
        memory: the memory shared with :func:`memory_save_node`.
        output_key: the state key the model node reads its input from.
        prompt: the system prompt put first (``{tiers}``, ``{message_index}``,
            ``{user_context}`` and ``{memory}`` are filled in; left out when it comes out
            empty); the state's own system messages come before it.
            ``None``: no memory prompt, only the state's system messages.
        name: the node's run name.
    """

    def flow(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        session_id, user_id = resolve_ids(state, config)
        messages: list[BaseMessage] = list(state.get("messages") or [])
        fresh = _unsaved(messages)
        query = next((m.text for m in reversed(fresh) if m.type == "human"), "")
        loaded = yield from memory.load_flow(session_id, user_id, query)
        for error in loaded.errors:
            logger.warning("session %s: %s", session_id, error)
        view = [m for m in loaded.context if m.type != "system"]
        system_parts: list[str] = [m.text for m in messages if m.type == "system"]
        if prompt is not None:
            rendered = render_system_prompt(
                prompt,
                context=view,
                user_context=loaded.user_context,
                memory="\n\n".join(memory_text(m) for m in loaded.context if m.type == "system"),
                tier_guide=AGENT_TIER_GUIDE,
            )
            if rendered:  # nothing to say: no tiered lines, user context or memories
                system_parts.append(rendered)
        head = [SystemMessage("\n\n".join(system_parts))] if system_parts else []
        return {output_key: [*head, *view, *fresh]}

    return node_runnable(name, flow)


def memory_save_node(
    memory: ChatMemory, *, name: str = "memory_save"
) -> Runnable[Any, dict[str, Any]]:
    """A node that saves the messages not saved yet, and consolidates when the window says so.

    Raises (when run):
        ConfigurationError: a message to save has no id (``messages`` does not use
            ``add_messages``, so the saved mark could not replace it).
    """

    def flow(state: Mapping[str, Any], config: RunnableConfig) -> Flow[dict[str, Any]]:
        session_id, user_id = resolve_ids(state, config)
        fresh = _unsaved(list(state.get("messages") or []))
        if not fresh:
            return {}
        if any(m.id is None for m in fresh):
            raise ConfigurationError(
                "memory_save_node needs message ids to mark saved messages: declare "
                "messages with the add_messages reducer (e.g. use MessagesState)."
            )
        kept = [m for m in fresh if storable(m)]
        ids: list[str | None] = []
        if kept:
            saved = yield from memory.save_turn_flow(session_id, user_id, kept)
            for error in saved.errors:
                logger.warning("session %s: %s", session_id, error)
            ids = list(saved.ids)
        stored = dict(zip((m.id for m in kept), ids, strict=True))
        # Empty messages cannot be stored; marking them keeps them from being retried.
        return {"messages": [mark_saved(m, stored.get(m.id)) for m in fresh]}

    return node_runnable(name, flow)
