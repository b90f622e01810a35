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

from collections.abc import Callable, Mapping
from typing import Any, get_args

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer

from langmem_tiers.config import ChatMode, Settings
from langmem_tiers.conversation.flows import Call, Flow, adrive, drive
from langmem_tiers.conversation.regenerate import (
    Findings,
    Pending,
    answer_searches_flow,
    answer_tiers_flow,
    best_answer,
    no_pending,
    read_asks,
)
from langmem_tiers.conversation.session import ChatMemory
from langmem_tiers.errors import ConfigurationError, ModelError
from langmem_tiers.graph.models import resolve_chat_model
from langmem_tiers.graph.one_call import OneCall, read_one_call, tiers_entry
from langmem_tiers.graph.prompts import (
    CHAT_SYSTEM_PROMPT,
    CHAT_TIER_GUIDE,
    REQUEST_TIER_TOOL,
    SEARCH_EPISODIC_TOOL,
    TOOLS_SYSTEM_PROMPT,
    TOOLS_TIER_GUIDE,
    render_system_prompt,
)
from langmem_tiers.graph.state import (
    TieredChatInput,
    TieredChatState,
    current_question,
    mark_saved,
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
from langmem_tiers.tiers.tokens import TokenCounter

__all__ = ["NODES", "ChatMode", "build_tiered_chat_graph", "node_runnable"]

NODES = ("load_memory", "generate", "request_tier", "search_episodic", "save", "consolidate")
"""The node names of the tiered chat graph (``consolidate`` only for consolidating presets)."""

Update = dict[str, Any]
_FINDINGS = ("search_results", "notices", "actions", "errors")  # the state's fields of Findings


def node_runnable(
    name: str, flow: Callable[[Mapping[str, Any], RunnableConfig], Flow[Update]]
) -> Runnable[Any, Update]:
    """A graph node running ``flow`` with sync methods in ``invoke``, async in ``ainvoke``."""

    def run(state: Mapping[str, Any], config: RunnableConfig) -> Update:
        return drive(flow(state, config))

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> Update:
        return await adrive(flow(state, config))

    return RunnableLambda(run, afunc=arun, name=name)


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
        drafts = [*(state.get("drafts") or [])]
        actions = list(state.get("actions") or [])
        asked = read_asks(
            output,
            self.mode,
            attempt=len(drafts) + 1,
            bound=self.settings.max_regenerations,
            actions=actions,
            text=reading.answer if reading is not None else None,  # tier lines taken out
        )
        drafts.append(asked.draft)
        update: Update = {
            "drafts": drafts,
            "draft_tiers": [*(state.get("draft_tiers") or []), tiers_entry(reading)],
            "answer": drafts[-1] if asked.asks else best_answer(drafts),
            "pending": asked.pending,
            "regenerations": len(drafts) - 1,
            "actions": actions,
        }
        if asked.replies:
            update["scratch"] = [*(state.get("scratch") or []), *pack(asked.replies)]
        return update

    @staticmethod
    def _findings(state: Mapping[str, Any]) -> Findings:
        return Findings(**{key: list(state.get(key) or []) for key in _FINDINGS})

    @staticmethod
    def _found(state: Mapping[str, Any], found: Findings) -> Update:
        scratch = [*(state.get("scratch") or []), *pack(found.replies)]
        return {**{key: getattr(found, key) for key in _FINDINGS}, "scratch": scratch}

    def request_tier(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        pending: Pending = state.get("pending") or no_pending()
        found = self._findings(state)
        context = yield from answer_tiers_flow(
            self.memory, session_id, user_id, pending["tier"], found
        )
        return {
            **self._found(state, found),
            "context": pack(context),
            "pending": {"tier": [], "search": pending["search"], "retry": False},
        }

    def search_episodic(self, state: Mapping[str, Any], config: RunnableConfig) -> Flow[Update]:
        session_id, user_id = resolve_ids(state, config)
        pending: Pending = state.get("pending") or no_pending()
        found = self._findings(state)
        yield from answer_searches_flow(self.memory, session_id, user_id, pending["search"], found)
        return {**self._found(state, found), "pending": no_pending()}

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
            "messages": [mark_saved(question, question_id), mark_saved(reply, answer_id)],
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
    one_call = one_call if one_call is not None else memory.settings.one_call
    bound, reader = _bind_model(model, mode, one_call, memory, stream_drafts=stream_drafts)
    if system_prompt is None:
        system_prompt = TOOLS_SYSTEM_PROMPT if mode == "tools" else CHAT_SYSTEM_PROMPT
    chat = _TieredChat(bound, memory, mode=mode, system_prompt=system_prompt, one_call=reader)
    return _graph(chat).compile(
        checkpointer=checkpointer, store=store if attach_store else None, name=name
    )


def _bind_model(
    model: BaseChatModel | str | None,
    mode: ChatMode,
    one_call: bool,
    memory: ChatMemory,
    *,
    stream_drafts: bool,
) -> tuple[Runnable[LanguageModelInput, Any], OneCall | None]:
    """The model as ``generate`` calls it (tools bound, one-call output), and its reader."""
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
    if one_call:
        reader, bound = OneCall.bind(
            chat_model, bound, tools=mode == "tools", token_counter=memory.token_counter
        )
    if not stream_drafts:
        bound = bound.with_config(tags=[TAG_NOSTREAM])
    return bound, reader


def _graph(chat: _TieredChat) -> StateGraph[Any, Any, Any, Any]:
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(
        TieredChatState, input_schema=TieredChatInput
    )
    for node in NODES[:-1]:
        builder.add_node(node, node_runnable(node, getattr(chat, node)))
    builder.add_edge(START, "load_memory")
    builder.add_edge("load_memory", "generate")
    builder.add_conditional_edges(
        "generate", chat.after_generate, ["request_tier", "search_episodic", "generate", "save"]
    )
    builder.add_conditional_edges(
        "request_tier", chat.after_request_tier, ["search_episodic", "generate"]
    )
    builder.add_edge("search_episodic", "generate")
    if chat.memory.consolidates:
        builder.add_node("consolidate", node_runnable("consolidate", chat.consolidate))
        builder.add_conditional_edges("save", chat.after_save, ["consolidate", END])
        builder.add_edge("consolidate", END)
    else:
        builder.add_edge("save", END)
    return builder
