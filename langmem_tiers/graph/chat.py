"""The tiered chat graph: answer from tiered memory, ask for more when needed, remember.

::

    START -> load_memory -> generate --+--> request_tier --+--> search_episodic --> generate
                              ^        |                    +--> generate
                              |        +--> search_episodic ---> generate
                              |        +--> save --+--> consolidate --> END
                                                   +--> END

- ``load_memory``: the session's tiered view (short-term memory) and ``user_context``,
  the user's best semantic and procedural memories from other sessions.
- ``generate``: the model answers from a system prompt that explains tiers and lists
  message ids with their tier. In ``markers`` mode it may write
  ``[REQUEST_TIER:<level>:<id>]`` or ``[SEARCH_EPISODIC: <query>]``; in ``tools`` mode it
  may call the ``request_tier`` / ``search_episodic`` tools. Only the model's output is
  read for requests: a marker a user typed is text.
- ``request_tier``: raises the messages' tier levels (kept for later turns); an id that is
  not in this session is refused, logged and told to the model, never a crash.
- ``search_episodic``: hybrid-ranked search of the user's archived messages.
- The loop is bounded: after ``Settings.max_regenerations`` regenerations, requests are
  ignored and the best answer so far (the newest non-empty one) is kept.
- ``save``: the user message and the answer (markers stripped) go to short-term memory
  with tiers, the user's facts and preferences to long-term memory.
- ``consolidate`` (presets that consolidate): runs when the window rule fires, long-term
  memory first, then removal.

Long-term memory failures are logged and listed in ``errors``; the answer still comes and
short-term memory still gets the messages.

Example:
    >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    >>> from langmem_tiers import TieredMemoryStore
    >>> model = GenericFakeChatModel(messages=iter(["Hello Jordan! [SEARCH_EPISODIC: Jordan]",
    ...                                             "Hello again, Jordan!"]))
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     graph = build_tiered_chat_graph(model, store=store)
    ...     out = graph.invoke({"messages": [("user", "Hi, I am Jordan.")], "session_id": "s1"})
    >>> out["answer"], out["regenerations"], out["actions"][0]
    ('Hello again, Jordan!', 1, "SEARCH_EPISODIC: 'Jordan' -> 0 found")
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError, ModelError
from langmem_tiers.graph.flows import Call, Flow, adrive, drive
from langmem_tiers.graph.models import resolve_chat_model
from langmem_tiers.graph.nodes import ChatMemory
from langmem_tiers.graph.one_call import OneCall, read_one_call, tiers_entry
from langmem_tiers.graph.prompts import (
    CHAT_SYSTEM_PROMPT,
    CHAT_TIER_GUIDE,
    FALLBACK_ANSWER,
    REQUEST_TIER_TOOL,
    SEARCH_EPISODIC_TOOL,
    TOOLS_SYSTEM_PROMPT,
    TOOLS_TIER_GUIDE,
    render_system_prompt,
)
from langmem_tiers.graph.state import (
    Pending,
    PendingSearch,
    PendingTier,
    TieredChatInput,
    TieredChatState,
    current_question,
    no_pending,
    pack,
    resolve_ids,
    unpack,
)
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.short_term.context import memory_text
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.presets import Preset
from langmem_tiers.tiers.base import Summarizer, Tierer
from langmem_tiers.tiers.inline import InlineTiers
from langmem_tiers.tiers.markers import MAX_QUERY_CHARS, parse_markers, strip_markers
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = ["NODES", "ChatMode", "best_answer", "build_tiered_chat_graph", "node_runnable"]

logger = logging.getLogger(__name__)

ChatMode = Literal["markers", "tools"]
"""How the model asks for more context: markers in its text, or tool calls."""

NODES = ("load_memory", "generate", "request_tier", "search_episodic", "save", "consolidate")
"""The node names of the tiered chat graph (``consolidate`` only for consolidating presets)."""

_METADATA_KEY = "langmem_tiers"
Update = dict[str, Any]


def node_runnable(
    name: str, flow: Callable[[Mapping[str, Any], RunnableConfig], Flow[Update]]
) -> Runnable[Any, Update]:
    """A graph node running ``flow`` with sync methods in ``invoke``, async in ``ainvoke``."""

    def run(state: Mapping[str, Any], config: RunnableConfig) -> Update:
        return drive(flow(state, config))

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> Update:
        return await adrive(flow(state, config))

    return RunnableLambda(run, afunc=arun, name=name)


def best_answer(drafts: Sequence[str]) -> str:
    """The newest non-empty draft (it saw the most context), else :data:`FALLBACK_ANSWER`.

    >>> best_answer(["A first try.", "", "The answer."]), best_answer(["", ""]) == FALLBACK_ANSWER
    ('The answer.', True)
    """
    for draft in reversed(drafts):
        if draft.strip():
            return draft
    return FALLBACK_ANSWER


def _tag(message: BaseMessage, message_id: str) -> BaseMessage:
    """A copy of a state message marked as saved (same id, so add_messages replaces it)."""
    metadata = dict(message.response_metadata or {})
    metadata[_METADATA_KEY] = {"message_id": message_id}
    return message.model_copy(update={"response_metadata": metadata})


def _level(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    return raw if isinstance(raw, int) and 1 <= raw <= 3 else None


def _tool_requests(
    output: AIMessage, attempt: int
) -> tuple[list[PendingTier], list[PendingSearch], list[BaseMessage]]:
    """Requests in ``output``'s tool calls, and the scratch messages to keep.

    Calls with bad arguments or unknown names are answered at once with an error
    ``ToolMessage`` (the tool protocol wants an answer to every call).
    """
    if not output.tool_calls:
        return [], [], []
    tier: list[PendingTier] = []
    search: list[PendingSearch] = []
    replies: list[BaseMessage] = []
    calls = []
    for index, call in enumerate(output.tool_calls):
        call_id = call.get("id") or f"call_{attempt}_{index}"
        calls.append({**call, "id": call_id})
        name, args = call["name"], call.get("args") or {}
        error: str | None = None
        if name == "request_tier":
            message_id, level = args.get("message_id"), _level(args.get("level", 3))
            if isinstance(message_id, str) and message_id.strip() and level is not None:
                tier.append({"level": level, "message_id": message_id.strip(), "call_id": call_id})
            else:
                error = (
                    f"invalid arguments {args!r}: message_id must be an id shown in the "
                    "context (like 'm12') and level 1, 2 or 3."
                )
        elif name == "search_episodic":
            query = args.get("query")
            if isinstance(query, str) and query.strip():
                search.append(
                    {"query": " ".join(query.split())[:MAX_QUERY_CHARS], "call_id": call_id}
                )
            else:
                error = f"invalid arguments {args!r}: query must be a non-empty string."
        else:
            error = f"unknown tool {name!r}; the tools are request_tier and search_episodic."
        if error is not None:
            logger.warning("ignoring tool call %s: %s", call_id, error)
            replies.append(ToolMessage(error, tool_call_id=call_id, name=name, status="error"))
    asked = output.model_copy(update={"tool_calls": calls})
    return tier, search, [asked, *replies]


def _describe(pending: Pending) -> str:
    parts = [f"REQUEST_TIER:{p['level']}:{p['message_id']}" for p in pending["tier"]]
    parts += [f"SEARCH_EPISODIC: {p['query']!r}" for p in pending["search"]]
    if pending["retry"]:
        parts.append("invalid tool calls")
    return ", ".join(parts)


class _TieredChat:
    """The nodes of one tiered chat graph (each a flow; see :func:`node_runnable`)."""

    def __init__(
        self,
        model: Runnable[LanguageModelInput, Any],
        memory: ChatMemory,
        *,
        mode: ChatMode,
        system_prompt: str,
        one_call: OneCall | None = None,
    ) -> None:
        self.model = model
        self.memory = memory
        self.mode: ChatMode = mode
        self.system_prompt = system_prompt
        self.one_call = one_call
        self.tier_guide = TOOLS_TIER_GUIDE if mode == "tools" else CHAT_TIER_GUIDE
        self.settings = memory.settings

    # -- nodes ---------------------------------------------------------------------------

    def load_memory(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        question = current_question(state.get("messages") or [])
        loaded = yield from self.memory.load_flow(session_id, user_id, question.text)
        return {
            "session_id": session_id,
            "user_id": user_id,
            "context": pack(loaded.context),
            "user_context": loaded.user_context,
            "search_results": [],
            "notices": [],
            "scratch": [],
            "pending": no_pending(),
            "answer": "",
            "drafts": [],
            "draft_tiers": [],
            "actions": [],
            "regenerations": 0,
            "errors": loaded.errors,
            "consolidation_due": False,
            "consolidated": [],
        }

    def _prompt(self, state: Mapping[str, Any]) -> list[BaseMessage]:
        context = unpack(state.get("context"))
        # The view's own note on tiers is left out: the prompt explains them for this mode.
        memory = "\n\n".join(memory_text(m) for m in context if m.type == "system")
        view = [m for m in context if m.type != "system"]
        system = render_system_prompt(
            self.system_prompt,
            context=view,
            tier_guide=self.tier_guide,
            user_context=state.get("user_context") or [],
            search_results=state.get("search_results") or [],
            notices=state.get("notices") or [],
            memory=memory,
        )
        if self.one_call is not None:
            system += "\n\n" + self.one_call.instructions
        question = current_question(state.get("messages") or [])
        return [SystemMessage(system), *view, question, *unpack(state.get("scratch"))]

    def generate(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        prompt = self._prompt(state)
        try:
            output = yield Call(
                self.model.invoke, self.model.ainvoke, (prompt,), {"config": config}
            )
        except Exception as err:
            raise ModelError(
                f"the chat model failed while answering: {type(err).__name__}: {err}"
            ) from err
        reading: InlineTiers | None = None
        if self.one_call is not None:
            output, reading = read_one_call(output)
        if not isinstance(output, AIMessage):
            raise ModelError(f"the chat model returned {type(output).__name__}, not an AIMessage.")
        text = reading.answer if reading is not None else output.text  # tier lines taken out
        drafts = [*(state.get("drafts") or []), ""]
        attempt = len(drafts)
        scratch: list[BaseMessage] = []
        if self.mode == "markers":
            parsed = parse_markers(text)  # model output only: user text is never parsed
            drafts[-1] = parsed.text
            pending: Pending = {
                "tier": [
                    {"level": int(r.level), "message_id": r.message_id, "call_id": None}
                    for r in parsed.tier_requests
                ],
                "search": [{"query": q, "call_id": None} for q in parsed.episodic_searches],
                "retry": False,
            }
        else:
            drafts[-1] = strip_markers(text)  # never shown, never acted on here
            tier, search, scratch = _tool_requests(output, attempt)
            # Calls that were all invalid got error replies: the model may correct itself.
            pending = {
                "tier": tier,
                "search": search,
                "retry": bool(scratch and not (tier or search)),
            }
        actions = list(state.get("actions") or [])
        asked = bool(pending["tier"] or pending["search"] or pending["retry"])
        if asked and attempt > self.settings.max_regenerations:
            logger.warning(
                "regeneration bound (%d) reached; ignoring %s and keeping the best answer",
                self.settings.max_regenerations,
                _describe(pending),
            )
            actions.append(
                f"bound of {self.settings.max_regenerations} regenerations reached: "
                f"ignored {_describe(pending)}"
            )
            pending, scratch, asked = no_pending(), [], False
        update: Update = {
            "drafts": drafts,
            "draft_tiers": [*(state.get("draft_tiers") or []), tiers_entry(reading)],
            "answer": best_answer(drafts) if not asked else drafts[-1],
            "pending": pending,
            "regenerations": attempt - 1,
            "actions": actions,
        }
        if scratch:
            update["scratch"] = [*(state.get("scratch") or []), *pack(scratch)]
        return update

    def request_tier(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        pending: Pending = state.get("pending") or no_pending()
        requests = [(p["level"], p["message_id"]) for p in pending["tier"]]
        outcomes, context = yield from self.memory.request_tiers_flow(session_id, user_id, requests)
        actions = list(state.get("actions") or [])
        notices = list(state.get("notices") or [])
        errors = list(state.get("errors") or [])
        scratch = list(state.get("scratch") or [])
        for asked, outcome in zip(pending["tier"], outcomes, strict=True):
            actions.append(f"REQUEST_TIER:{outcome.level}:{outcome.message_id} -> {outcome.status}")
            if outcome.status == "failed":
                errors.append(f"request_tier: {outcome.message_id}: {outcome.detail}")
            if asked["call_id"] is not None:
                reply = ToolMessage(
                    outcome.detail,
                    tool_call_id=asked["call_id"],
                    name="request_tier",
                    status="success" if outcome.status == "raised" else "error",
                )
                scratch.extend(pack([reply]))
            elif outcome.status != "raised":
                notices.append(
                    f"Your request for message {outcome.message_id} was {outcome.status}: "
                    f"{outcome.detail}"
                )
        return {
            "context": pack(context),
            "pending": {"tier": [], "search": pending["search"], "retry": False},
            "actions": actions,
            "notices": notices,
            "errors": errors,
            "scratch": scratch,
        }

    def search_episodic(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        pending: Pending = state.get("pending") or no_pending()
        results = list(state.get("search_results") or [])
        actions = list(state.get("actions") or [])
        notices = list(state.get("notices") or [])
        errors = list(state.get("errors") or [])
        scratch = list(state.get("scratch") or [])
        for asked in pending["search"]:
            outcome = yield from self.memory.search_flow(session_id, user_id, asked["query"])
            if outcome.error is not None:
                actions.append(f"SEARCH_EPISODIC: {asked['query']!r} -> failed")
                errors.append(f"search_episodic: {outcome.error}")
                reply = f"The search for {asked['query']!r} failed; answer without it."
            else:
                actions.append(f"SEARCH_EPISODIC: {asked['query']!r} -> {len(outcome.lines)} found")
                results.extend(line for line in outcome.lines if line not in results)
                reply = (
                    "\n".join(outcome.lines) or f"Your search for {asked['query']!r} found nothing."
                )
            if asked["call_id"] is not None:
                answer = ToolMessage(reply, tool_call_id=asked["call_id"], name="search_episodic")
                scratch.extend(pack([answer]))
            elif outcome.error is not None or not outcome.lines:
                notices.append(reply)
        return {
            "search_results": results,
            "pending": no_pending(),
            "actions": actions,
            "notices": notices,
            "errors": errors,
            "scratch": scratch,
        }

    def save(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        question = current_question(state.get("messages") or [])
        answer = state.get("answer") or best_answer(state.get("drafts") or [])
        reply = AIMessage(answer)
        tiers = None
        if self.one_call is not None:
            tiers = self.one_call.turn_tiers(state, question, reply, session_id)
        saved = yield from self.memory.save_flow(session_id, user_id, [question, reply], tiers)
        question_id, answer_id = saved.ids
        return {
            "messages": [_tag(question, question_id), _tag(reply, answer_id)],
            "answer": answer,
            "pending": no_pending(),
            "consolidation_due": saved.consolidation_due,
            "errors": [*(state.get("errors") or []), *saved.errors],
        }

    def consolidate(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        outcome = yield from self.memory.consolidate_flow(session_id, user_id)
        errors = list(state.get("errors") or [])
        if outcome.error is not None:
            errors.append(f"consolidate: {outcome.error} (the window was kept; next turn retries)")
        return {
            "consolidated": outcome.consolidated,
            "consolidation_due": False,
            "errors": errors,
        }

    # -- routes ----------------------------------------------------------------------------

    @staticmethod
    def after_generate(state: Mapping[str, Any]) -> str:
        pending: Pending = state.get("pending") or no_pending()
        if pending["tier"]:
            return "request_tier"
        if pending["search"]:
            return "search_episodic"
        return "generate" if pending["retry"] else "save"

    @staticmethod
    def after_request_tier(state: Mapping[str, Any]) -> str:
        pending: Pending = state.get("pending") or no_pending()
        return "search_episodic" if pending["search"] else "generate"

    @staticmethod
    def after_save(state: Mapping[str, Any]) -> str:
        return "consolidate" if state.get("consolidation_due") else END


def build_tiered_chat_graph(
    model: BaseChatModel | str | None,
    *,
    store: BaseStore,
    preset: str | Preset = "tiered",
    checkpointer: Checkpointer = None,
    settings: Settings | None = None,
    mode: ChatMode = "markers",
    system_prompt: str | None = None,
    memory: ChatMemory | None = None,
    log: MessageLog | None = None,
    directory: str | None = None,
    tierer: Tierer | None = None,
    summarizer: Summarizer | None = None,
    token_counter: TokenCounter | None = None,
    attach_store: bool = True,
    stream_drafts: bool = False,
    one_call: bool | None = None,
    name: str = "tiered_chat",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The tiered chat graph, compiled (see the module docstring for its shape).

    Args:
        model: a LangChain chat model, a provider string (``openai:gpt-4o-mini``, through
            ``init_chat_model``) or ``None`` / ``"offline"`` for :class:`OfflineChatModel`.
        store: long-term memory (``TieredMemoryStore`` or any ``BaseStore``); the graph is
            compiled with it, so other nodes reach it with ``get_store()``.
        preset: ``tiered`` (default), ``moving_window``, ``reset``, ``dual`` or a ``Preset``.
        checkpointer: keeps ``messages`` and the turn's fields per thread (optional: the
            memory itself lives in the message log and the store).
        settings: ``max_regenerations``, ``user_context_k``, limits; from the environment
            when ``None``.
        mode: ``markers`` (the model writes markers) or ``tools`` (it calls the
            ``request_tier`` and ``search_episodic`` tools; needs ``bind_tools``).
        system_prompt: replaces :data:`CHAT_SYSTEM_PROMPT` / :data:`TOOLS_SYSTEM_PROMPT`.
        memory: a :class:`ChatMemory` to share with other graphs or nodes; then its own
            store, preset, settings, log, tierer, summariser and token counter are used
            and the arguments of the same names here are ignored.
        log, directory, tierer, summarizer, token_counter: see :class:`ChatMemory`.
        attach_store: compile the graph with ``store`` (``False`` for a LangGraph API
            server, which refuses graphs with a store of their own; the nodes use
            ``store`` either way).
        stream_drafts: let ``stream_mode="messages"`` stream the model's tokens of every
            generation. Off by default: drafts carry markers and may be regenerated, so
            only the final answer (stripped, from ``save``) is streamed as a message.
        one_call: the answer's model call also writes tier 1 and tier 2 of the user
            message and of the answer (structured output where the model supports it and
            ``mode="markers"``, tier lines otherwise; see :mod:`~langmem_tiers.graph.one_call`),
            so a turn without requests is one model call. ``None``: ``settings.one_call``.
        name: the compiled graph's name.

    Raises:
        ConfigurationError: an unknown mode, or ``tools`` mode with a model that cannot
            bind tools.
    """
    if mode not in get_args(ChatMode):
        raise ConfigurationError(f"mode must be 'markers' or 'tools', got {mode!r}.")
    require_store(store, where="build_tiered_chat_graph", optional=True)
    if memory is None:
        memory = ChatMemory(
            store,
            preset=preset,
            settings=settings,
            log=log,
            directory=directory,
            tierer=tierer,
            summarizer=summarizer,
            token_counter=token_counter,
        )
    chat_model = resolve_chat_model(model)
    bound: Runnable[LanguageModelInput, Any] = chat_model
    if mode == "tools":
        try:
            bound = chat_model.bind_tools([REQUEST_TIER_TOOL, SEARCH_EPISODIC_TOOL])
        except NotImplementedError as err:
            raise ConfigurationError(
                f"mode='tools' needs a chat model that supports bind_tools; "
                f"{type(chat_model).__name__} does not. Use mode='markers'."
            ) from err
    reader: OneCall | None = None
    if one_call if one_call is not None else memory.settings.one_call:
        reader, bound = OneCall.bind(
            chat_model, bound, tools=mode == "tools", token_counter=memory.token_counter
        )
    if not stream_drafts:
        bound = bound.with_config(tags=[TAG_NOSTREAM])
    prompt = system_prompt
    if prompt is None:
        prompt = TOOLS_SYSTEM_PROMPT if mode == "tools" else CHAT_SYSTEM_PROMPT
    chat = _TieredChat(bound, memory, mode=mode, system_prompt=prompt, one_call=reader)

    builder = StateGraph(TieredChatState, input_schema=TieredChatInput)
    builder.add_node("load_memory", node_runnable("load_memory", chat.load_memory))
    builder.add_node("generate", node_runnable("generate", chat.generate))
    builder.add_node("request_tier", node_runnable("request_tier", chat.request_tier))
    builder.add_node("search_episodic", node_runnable("search_episodic", chat.search_episodic))
    builder.add_node("save", node_runnable("save", chat.save))
    builder.add_edge(START, "load_memory")
    builder.add_edge("load_memory", "generate")
    builder.add_conditional_edges(
        "generate", chat.after_generate, ["request_tier", "search_episodic", "generate", "save"]
    )
    builder.add_conditional_edges(
        "request_tier", chat.after_request_tier, ["search_episodic", "generate"]
    )
    builder.add_edge("search_episodic", "generate")
    if memory.consolidates:
        builder.add_node("consolidate", node_runnable("consolidate", chat.consolidate))
        builder.add_conditional_edges("save", chat.after_save, ["consolidate", END])
        builder.add_edge("consolidate", END)
    else:
        builder.add_edge("save", END)
    return builder.compile(
        checkpointer=checkpointer, store=store if attach_store else None, name=name
    )
