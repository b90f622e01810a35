"""``TieredMemoryMiddleware``: tiered short-term and long-term memory for ``create_agent``.

LangChain 1.x builds agents with ``langchain.agents.create_agent(model, tools,
middleware=[...], store=..., checkpointer=...)``. This middleware gives such an agent the
package's memory without touching the agent's own state:

- **Before every model call** (``wrap_model_call`` / ``awrap_model_call``) the request's
  messages are replaced by the thread's tiered, token-budgeted view: the messages saved
  in the thread's short-term memory at their tier (``[m12|t1] user_name=Jordan``), then
  this turn's messages not saved yet, in full. The system prompt (the agent's own first)
  explains what the tiered lines mean and how to ask for more, and lists what long-term
  memory knows about the user from other threads. ``state["messages"]`` is never
  rewritten: the checkpointer keeps every message as it was.
- **After every model call** (``after_model``) the messages not saved yet go to the
  thread's short-term memory (with tiers; the preset's window archives the oldest to
  episodic memory when it overflows, persisted before removed), and the facts and
  preferences the user stated go to the user's long-term memory, through the
  ``MemoryEngine`` write pipeline (duplicates, conflicts, versions, events) when the store
  is a ``TieredMemoryStore``. Which state messages are saved is kept in a private state
  key, so a message is saved once.
- **Asking for more**: with ``mode="tools"`` (default) the middleware registers two tools,
  ``request_tier(message_id, level)`` and ``search_episodic(query)``, which the agent's
  own tool loop runs; a tier raised stays raised for later turns. With ``mode="markers"``
  the model writes ``[REQUEST_TIER:3:m12]`` / ``[SEARCH_EPISODIC: query]`` in its text;
  the middleware acts on them (model output only) and calls the model again inside the
  same model step, and the user sees the answer without markers. Either way a turn asks
  at most ``Settings.max_regenerations`` times; then the model must answer.

**Which thread and user**: the thread is the run's ``configurable.thread_id`` (or
``configurable.session_id``); the user is ``context.user_id`` (a dict or an object given
as ``context=`` when the agent has a ``context_schema``), else
``configurable.user_id``, else the thread. **Which store**: the one passed here, else the
one the agent was created with (``create_agent(..., store=store)``); short-term memory
lives in the same database when it is a ``TieredMemoryStore``.

Example:
    >>> from langchain.agents import create_agent
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from langmem_tiers import TieredMemoryStore
    >>> from langmem_tiers.graph import OfflineChatModel
    >>> config = {"configurable": {"thread_id": "t1", "user_id": "jordan"}}
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     agent = create_agent(OfflineChatModel(), middleware=[TieredMemoryMiddleware()],
    ...                          store=store, checkpointer=InMemorySaver())
    ...     _ = agent.invoke({"messages": [("user", "I prefer green tea.")]}, config)
    ...     config["configurable"]["thread_id"] = "t2"
    ...     out = agent.invoke({"messages": [("user", "What do I prefer?")]}, config)
    >>> out["messages"][-1].content
    'The user prefers green tea.'
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, cast, get_args

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import OmitFromSchema
from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from typing_extensions import NotRequired

from langmem_tiers.config import ChatMode, Settings
from langmem_tiers.conversation.flows import Call, Flow, adrive, drive
from langmem_tiers.conversation.regenerate import (
    MEMORY_TOOL_NAMES,
    Findings,
    answer_searches_flow,
    answer_tiers_flow,
    best_answer,
    read_asks,
    search_tool_flow,
    tier_tool_flow,
)
from langmem_tiers.conversation.session import ChatMemory, storable
from langmem_tiers.errors import ConfigurationError, ValidationError
from langmem_tiers.graph.prompts import (
    MIDDLEWARE_MARKERS_PROMPT,
    MIDDLEWARE_MARKERS_TIER_GUIDE,
    MIDDLEWARE_TOOLS_PROMPT,
    MIDDLEWARE_TOOLS_TIER_GUIDE,
    render_system_prompt,
)
from langmem_tiers.graph.state import resolve_ids
from langmem_tiers.long_term.store.guard import require_store
from langmem_tiers.short_term.context import memory_text
from langmem_tiers.short_term.log import MessageLog
from langmem_tiers.short_term.presets import Preset
from langmem_tiers.tiers.base import Summarizer, Tierer
from langmem_tiers.tiers.tokens import TokenCounter, count_message_tokens, count_tokens

if TYPE_CHECKING:
    from langmem_tiers.long_term.engine.engine import MemoryEngine

__all__ = [
    "SAVED_KEY",
    "MemoryMode",
    "TieredMemoryMiddleware",
    "TieredMemoryState",
]

logger = logging.getLogger(__name__)

MemoryMode = ChatMode
"""How the model asks for more context: tool calls, or markers in its text."""

SAVED_KEY = "tiered_memory_saved"
"""Private state key: state message id -> short-term memory id ("" when not storable)."""

_WINDOW_SHARE = 0.7  # of the prompt budget, for the saved messages; the rest is headroom
_MIN_BUDGET = 200


class TieredMemoryState(AgentState[Any]):
    """The agent state plus which messages the middleware saved (private, checkpointed)."""

    tiered_memory_saved: NotRequired[
        Annotated[dict[str, str], OmitFromSchema(input=True, output=True)]
    ]


def _this_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages since the last user message (that message included)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].type == "human":
            return list(messages[index:])
    return list(messages)


def _memory_calls(messages: Sequence[BaseMessage]) -> int:
    return sum(
        1
        for m in _this_turn(messages)
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["name"] in MEMORY_TOOL_NAMES
    )


def _tool_tokens(tools: Sequence[Any], counter: TokenCounter | None) -> int:
    """Tokens of the tools' JSON schemas (sent with every call that binds them)."""
    if not tools:
        return 0
    schemas = [t if isinstance(t, dict) else convert_to_openai_tool(t) for t in tools]
    return count_tokens(json.dumps(schemas, separators=(",", ":")), counter)


def _last_ai(response: ModelResponse[Any]) -> int | None:
    for index in range(len(response.result) - 1, -1, -1):
        if isinstance(response.result[index], AIMessage):
            return index
    return None


class TieredMemoryMiddleware(AgentMiddleware[TieredMemoryState, Any, Any]):
    """Tiered short-term and long-term memory for a ``create_agent`` agent.

    Args:
        store: long-term memory (and, for a ``TieredMemoryStore``, the short-term memory's
            database). ``None``: the store the agent was created with (``create_agent(...,
            store=...)``), found at run time. Checked here: a store that was not opened
            (``TieredMemoryStore.from_url(...)`` without ``with``) raises at once.
        mode: ``tools`` (register ``request_tier`` and ``search_episodic``) or
            ``markers`` (act on ``[REQUEST_TIER:...]`` / ``[SEARCH_EPISODIC:...]``).
        preset: the short-term memory preset (``tiered`` by default).
        settings: ``context_token_limit`` is the budget of the model's input (system
            prompt, messages and the bound tools' schemas); ``max_regenerations`` bounds the requests of a turn;
            ``user_context_k`` the memories shown. From the environment when ``None``.
        token_budget: overrides ``settings.context_token_limit``.
        system_prompt: the memory part of the system prompt (default
            :data:`~langmem_tiers.graph.prompts.MIDDLEWARE_TOOLS_PROMPT` or
            :data:`~langmem_tiers.graph.prompts.MIDDLEWARE_MARKERS_PROMPT`); it follows
            the agent's own system prompt.
        user_id_key: the field of the run's ``context`` (or ``configurable``) naming the user.
        memory: a :class:`~langmem_tiers.conversation.session.ChatMemory` to share with graphs; its
            store, preset, settings, log and tierer are used, and the arguments of the same
            names here are ignored (``token_budget`` still bounds the prompt).
        engine: the ``MemoryEngine`` the user's facts go through (default: one over the
            store when it is a ``TieredMemoryStore``; other stores get plain puts).
        log, tierer, summarizer, token_counter, recent_raw: see ``ChatMemory``.

    Raises:
        ConfigurationError: an unknown mode, a bad budget, or a ``store`` that is not a
            ``BaseStore``.
    """

    state_schema = TieredMemoryState

    def __init__(
        self,
        store: BaseStore | None = None,
        *,
        mode: MemoryMode = "tools",
        preset: str | Preset = "tiered",
        settings: Settings | None = None,
        token_budget: int | None = None,
        system_prompt: str | None = None,
        user_id_key: str = "user_id",
        memory: ChatMemory | None = None,
        engine: MemoryEngine | None = None,
        log: MessageLog | None = None,
        tierer: Tierer | None = None,
        summarizer: Summarizer | None = None,
        token_counter: TokenCounter | None = None,
        recent_raw: int = 2,
    ) -> None:
        super().__init__()
        if mode not in get_args(MemoryMode):
            raise ConfigurationError(f"mode must be 'tools' or 'markers', got {mode!r}.")
        require_store(store, where="TieredMemoryMiddleware", optional=True)
        base = memory.settings if memory is not None else settings or Settings.from_env()
        budget = token_budget if token_budget is not None else base.context_token_limit
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < _MIN_BUDGET:
            raise ConfigurationError(
                f"token_budget must be a whole number of tokens >= {_MIN_BUDGET}, got "
                f"{budget!r}; pass token_budget=... or Settings(context_token_limit=...)."
            )
        self.mode: MemoryMode = mode
        self.token_budget = budget
        self.user_id_key = user_id_key
        self.prompt = system_prompt or (
            MIDDLEWARE_TOOLS_PROMPT if mode == "tools" else MIDDLEWARE_MARKERS_PROMPT
        )
        # The saved messages get most of the budget; the prompt and this turn the rest.
        window = max(1, int(budget * _WINDOW_SHARE))
        self.settings = _within(base, budget, window)
        self._memory_settings = _within(base, window, window)
        self._store = store
        self._shared = memory
        self._engine = engine
        self._parts = {
            "preset": preset,
            "log": log,
            "tierer": tierer,
            "summarizer": summarizer,
            "token_counter": token_counter,
            "recent_raw": recent_raw,
        }
        self._token_counter = memory.token_counter if memory is not None else token_counter
        self._memories: dict[int, tuple[BaseStore, ChatMemory]] = {}
        self._lock = threading.Lock()
        self.tools: list[BaseTool] = self._make_tools() if mode == "tools" else []

    # -- parts -----------------------------------------------------------------------------

    def memory(self, store: BaseStore | None = None) -> ChatMemory:
        """The memory used with ``store`` (or the store given to the middleware).

        Raises:
            ConfigurationError: no store here nor in the agent.
        """
        if self._shared is not None:
            return self._shared
        chosen = self._store if self._store is not None else store
        if chosen is None:
            raise ConfigurationError(
                "TieredMemoryMiddleware has no store: pass create_agent(..., store=store) or "
                "TieredMemoryMiddleware(store=store), with store opened by `with "
                "TieredMemoryStore.from_url(url) as store:` (or any LangGraph BaseStore)."
            )
        require_store(chosen, where="create_agent")
        with self._lock:
            found = self._memories.get(id(chosen))
            if found is not None and found[0] is chosen:
                return found[1]
            memory = ChatMemory(
                chosen,
                settings=self._memory_settings,
                engine=self._engine if self._engine is not None else _engine_for(chosen),
                **self._parts,  # type: ignore[arg-type]
            )
            self._memories[id(chosen)] = (chosen, memory)
            return memory

    def _ids(self, runtime: Any, config: Mapping[str, Any] | None) -> tuple[str, str]:
        context = getattr(runtime, "context", None)
        if isinstance(context, Mapping):
            user = context.get(self.user_id_key)
        else:
            user = getattr(context, self.user_id_key, None)
        configurable = dict((config or {}).get("configurable") or {})
        if self.user_id_key != "user_id" and configurable.get(self.user_id_key):
            configurable["user_id"] = configurable[self.user_id_key]
        return resolve_ids({"user_id": user} if user else {}, {"configurable": configurable})

    # -- the model's view --------------------------------------------------------------------

    def _prompt(
        self,
        request: ModelRequest[Any],
        context: Sequence[BaseMessage],
        fresh: Sequence[BaseMessage],
        user_context: Sequence[str],
        found: Findings,
        tools: Sequence[Any],
    ) -> tuple[SystemMessage, list[BaseMessage]]:
        """The system message and messages, trimmed (oldest first) to the budget.

        The budget covers what the provider is sent: the messages and the tools' schemas.
        """
        view = [m for m in context if m.type != "system"]
        # The view's own note on tiers is left out: the prompt explains them for this mode.
        memories = "\n\n".join(memory_text(m) for m in context if m.type == "system")
        parts: list[str] = []
        if request.system_message is not None:
            parts.append(str(request.system_message.text))
        parts.append(
            render_system_prompt(
                self.prompt,
                context=view,
                user_context=user_context,
                search_results=found.search_results,
                notices=found.notices,
                memory=memories,
                tier_guide=(
                    MIDDLEWARE_TOOLS_TIER_GUIDE
                    if self.mode == "tools"
                    else MIDDLEWARE_MARKERS_TIER_GUIDE
                ),
            )
        )
        system = SystemMessage("\n\n".join(p for p in parts if p))
        counter = self._token_counter
        total = count_message_tokens([system, *view, *fresh], counter) + _tool_tokens(
            tools, counter
        )
        dropped = 0
        while total > self.token_budget and view:
            total -= count_message_tokens([view.pop(0)], counter)
            dropped += 1
            while view and view[0].type == "tool":  # a result without its call is refused
                total -= count_message_tokens([view.pop(0)], counter)
                dropped += 1
        if dropped:
            logger.info("prompt over its budget: %d saved messages left out of the view", dropped)
        return system, [*view, *fresh]

    def _model_flow(
        self, request: ModelRequest[Any], handler: Callable[..., Any]
    ) -> Flow[ModelResponse[Any]]:
        if self.mode == "tools":
            _require_bind_tools(request.model)
        memory = self.memory(request.runtime.store if request.runtime is not None else None)
        session_id, user_id = self._ids(request.runtime, get_config())
        saved: Mapping[str, str] = dict(request.state.get(SAVED_KEY) or {})  # type: ignore[call-overload]
        fresh = [m for m in request.messages if m.type != "system" and m.id not in saved]
        query = next((m.text for m in reversed(request.messages) if m.type == "human"), "")
        loaded = yield from memory.load_flow(session_id, user_id, query)
        context = loaded.context
        tools = list(request.tools)
        found = Findings()
        bound = self.settings.max_regenerations
        if self.mode == "tools" and _memory_calls(request.messages) >= bound:
            tools = [t for t in tools if getattr(t, "name", None) not in MEMORY_TOOL_NAMES]
            found.notices.append(
                f"You have used the {bound} memory requests of this turn: answer from what "
                "is shown."
            )
        drafts: list[str] = []
        while True:
            system, messages = self._prompt(
                request, context, fresh, loaded.user_context, found, tools
            )
            attempt = request.override(
                system_message=system, messages=cast("list[AnyMessage]", messages), tools=tools
            )
            response: ModelResponse[Any] = yield Call(handler, handler, (attempt,))
            index = _last_ai(response)
            if self.mode != "markers" or index is None:
                return response
            output = cast("AIMessage", response.result[index])
            asked = read_asks(
                output, "markers", attempt=len(drafts) + 1, bound=bound, actions=found.actions
            )
            drafts.append(asked.draft)
            if asked.asks:
                if asked.pending["tier"]:
                    context = yield from answer_tiers_flow(
                        memory, session_id, user_id, asked.pending["tier"], found
                    )
                yield from answer_searches_flow(
                    memory, session_id, user_id, asked.pending["search"], found
                )
                continue
            answer = best_answer(drafts) if asked.ignored else asked.draft
            if answer == output.text:
                return response
            stripped = output.model_copy(update={"content": answer})
            result = [*response.result[:index], stripped, *response.result[index + 1 :]]
            return replace(response, result=result)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the tiered view (and, in markers mode, act on its markers)."""
        return drive(self._model_flow(request, handler))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        return await adrive(self._model_flow(request, handler))

    # -- saving --------------------------------------------------------------------------

    def _save_flow(self, state: Mapping[str, Any], runtime: Any) -> Flow[dict[str, Any] | None]:
        saved: dict[str, str] = dict(state.get(SAVED_KEY) or {})
        fresh = [
            m
            for m in state.get("messages") or []
            if m.type != "system" and m.id is not None and m.id not in saved
        ]
        if not fresh:
            return None
        memory = self.memory(getattr(runtime, "store", None))
        session_id, user_id = self._ids(runtime, get_config())
        kept = [m for m in fresh if storable(m)]
        stored: dict[str, str] = {}
        if kept:
            try:
                outcome = yield from memory.save_turn_flow(session_id, user_id, kept)
            except ValidationError:
                # One message short-term memory refuses (a NUL byte, a lone surrogate) must
                # not hold back the others: each is then saved or refused on its own.
                stored = yield from self._save_each_flow(memory, session_id, user_id, kept)
                if not stored:
                    return None
            except Exception as err:  # they stay in the state, unsaved: the next step retries
                logger.warning(
                    "session %s: saving to short-term memory failed: %r", session_id, err
                )
                return None
            else:
                stored = dict(zip((str(m.id) for m in kept), outcome.ids, strict=True))
                for error in outcome.errors:
                    logger.warning("session %s: %s", session_id, error)
        for message in fresh:
            if str(message.id) in stored or not storable(message):
                saved[str(message.id)] = stored.get(str(message.id), "")
        return {SAVED_KEY: saved}

    def _save_each_flow(
        self,
        memory: ChatMemory,
        session_id: str,
        user_id: str,
        messages: Sequence[BaseMessage],
    ) -> Flow[dict[str, str]]:
        """Save ``messages`` one at a time, in order, then consolidate when due: state id ->
        short-term id, a refused message mapped to ``""`` (never retried) with its reason
        logged, as are long-term memory failures.

        A failure that is not a refusal (the database is down) stops there: that message and
        the ones after it stay unsaved, for the next step to retry.
        """
        stored: dict[str, str] = {}
        due = False
        for message in messages:
            try:
                outcome = yield from memory.save_flow(session_id, user_id, [message])
            except ValidationError as err:
                logger.warning(
                    "session %s: message %s (%s) refused by short-term memory, not saved: %s",
                    session_id,
                    message.id,
                    message.type,
                    err,
                )
                stored[str(message.id)] = ""
                continue
            except Exception as err:
                logger.warning(
                    "session %s: saving to short-term memory failed at message %s, retried"
                    " next step: %r",
                    session_id,
                    message.id,
                    err,
                )
                break
            stored[str(message.id)] = outcome.ids[0] if outcome.ids else ""
            for error in outcome.errors:
                logger.warning("session %s: %s", session_id, error)
            due = due or outcome.consolidation_due
        if due:
            done = yield from memory.consolidate_flow(session_id, user_id)
            if done.error is not None:
                logger.warning("session %s: consolidation failed: %s", session_id, done.error)
        return stored

    def after_model(self, state: TieredMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Save the messages not saved yet (short-term) and the user's facts (long-term)."""
        return drive(self._save_flow(state, runtime))

    async def aafter_model(
        self, state: TieredMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        return await adrive(self._save_flow(state, runtime))

    # -- tools ---------------------------------------------------------------------------

    def _session(self, runtime: ToolRuntime) -> tuple[ChatMemory, str, str]:
        memory = self.memory(runtime.store)
        return (memory, *self._ids(runtime, runtime.config))

    def _make_tools(self) -> list[BaseTool]:
        def request_tier(message_id: str, runtime: ToolRuntime, level: int = 3) -> str:
            return drive(tier_tool_flow(*self._session(runtime), message_id, level))

        async def arequest_tier(message_id: str, runtime: ToolRuntime, level: int = 3) -> str:
            return await adrive(tier_tool_flow(*self._session(runtime), message_id, level))

        def search_episodic(query: str, runtime: ToolRuntime) -> str:
            return drive(search_tool_flow(*self._session(runtime), query))

        async def asearch_episodic(query: str, runtime: ToolRuntime) -> str:
            return await adrive(search_tool_flow(*self._session(runtime), query))

        return [
            StructuredTool.from_function(
                request_tier,
                coroutine=arequest_tier,
                name="request_tier",
                description=(
                    "Show an earlier message of this conversation at a richer tier from now "
                    "on: level 3 is its full text, 2 its summary. message_id is the id shown "
                    "before the message, like m12."
                ),
            ),
            StructuredTool.from_function(
                search_episodic,
                coroutine=asearch_episodic,
                name="search_episodic",
                description=(
                    "Search the archived messages of earlier conversations with this user "
                    "(what is no longer shown). query says what to look for."
                ),
            ),
        ]


def _within(base: Settings, limit: int, window: int) -> Settings:
    """``base`` with a context of ``limit`` tokens (the window's buffer at most a quarter)."""
    soft = base.context_soft_budget
    return replace(
        base,
        context_token_limit=limit,
        context_token_buffer=min(base.context_token_buffer, window // 4),
        context_soft_budget=None if soft is None else min(soft, limit),
    )


def _require_bind_tools(model: object) -> None:
    """Refuse, before any call, a chat model that cannot take the memory tools."""
    if isinstance(model, BaseChatModel) and type(model).bind_tools is BaseChatModel.bind_tools:
        raise ConfigurationError(
            f"TieredMemoryMiddleware(mode='tools') gives the model the request_tier and "
            f"search_episodic tools, but {type(model).__name__} does not support bind_tools; "
            "use TieredMemoryMiddleware(mode='markers') for a model without tools."
        )


def _engine_for(store: BaseStore) -> MemoryEngine | None:
    """A ``MemoryEngine`` over ``store`` when it is the package's store, else None."""
    from langmem_tiers.long_term.engine.engine import MemoryEngine
    from langmem_tiers.long_term.store.store import TieredMemoryStore

    return MemoryEngine(store) if isinstance(store, TieredMemoryStore) else None
