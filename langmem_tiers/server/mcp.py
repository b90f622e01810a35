"""The MCP server: any MCP client remembers and recalls through the memory engine.

Install the extra (``pip install 'langmem-tiers[mcp]'``) and run it over stdio for one
scope, which is how desktop clients and agent frameworks launch a local server::

    $ langmem-tiers mcp --scope alice --url sqlite:///memory.db

or over streamable HTTP, where each caller sends an API key of the HTTP server
(``Authorization: Bearer <key>``) and works in the scope the key is bound to::

    $ langmem-tiers keys create --scope alice
    $ langmem-tiers mcp --http --host 127.0.0.1 --port 8765

==============  ===================================================================
tool            does
==============  ===================================================================
``remember``    store a fact (duplicates, conflicts, versions), a preference
                (key -> value, reinforced when repeated) or an event
``recall``      hybrid search, each result with its score and the score's components
``forget``      soft delete (status ``deleted``) or, with ``hard``, remove the rows
``history``     every version of a fact, oldest first, and its current state
``read_memory`` a memory's whole text (or value), page by page
``entities``    the people, organisations, places and things the memories name (most
                mentioned first), or one of them by ``name`` with the memories naming it
``relations``   the (subject, relation, object) facts ("user lives_in Berlin"), now or
                ``as_of`` an instant, optionally of one ``subject``
==============  ===================================================================

Each answer is one JSON text (a memory's text appears once in it), and carries at most
``Settings.mcp_answer_chars`` characters of memory text, shared by its memories: a longer
text is cut, and the memory gets a ``truncated`` note with the ``read_memory`` call that
reads on from there. So an MCP client's limit on one message (1 MiB for the SDK's) is never
reached, however large a memory is. An entity's name and aliases share the same budget:
aliases past an entity's share are counted in ``more_aliases`` instead of listed; so are
a relation's subject and object.

Resources: ``memory://facts`` (the scope's current facts), ``memory://preferences``
(its preferences, key -> value) and ``memory://entities`` (its entities, most mentioned
first), all JSON.

Every write goes through :class:`~langmem_tiers.long_term.engine.engine.MemoryEngine`, so an MCP
client gets the same duplicate checks, conflict resolution, versions and event log as
the HTTP API and the graphs. Bad arguments give a tool error (``isError``) whose text
names the field; nothing is stored then.

The ``mcp`` SDK is imported only when a server is built, so ``import langmem_tiers``
does not need it.

Example:
    >>> import asyncio, json
    >>> from langmem_tiers import TieredMemoryStore
    >>> from langmem_tiers import MemoryEngine
    >>> async def main():
    ...     async with TieredMemoryStore.afrom_url("sqlite:///:memory:") as store:
    ...         server = build_mcp_server(MemoryEngine(store), scope="alice")
    ...         await server.call_tool("remember", {"content": "Alice lives in Oslo"})
    ...         found = await server.call_tool("recall", {"query": "where does Alice live?"})
    ...         return json.loads(found.content[0].text)["results"][0]["content"]
    >>> asyncio.run(main())
    'Alice lives in Oslo'
"""

# No ``from __future__ import annotations``: the SDK reads the tools' annotations to build
# their input schemas, and the names they use are imported inside build_mcp_server.

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from langmem_tiers.config import Settings
from langmem_tiers.errors import (
    ConfigurationError,
    LangmemTiersError,
    MissingDependencyError,
)
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.keys import ApiKeys
from langmem_tiers.server.mcp_answers import (
    bounded,
    clip,
    compact,
    entity_entry,
    memory_entry,
    relation_entry,
    scored_entry,
    share_of,
    without_content,
)

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "ENTITIES_URI",
    "FACTS_URI",
    "KIND_NAMES",
    "PREFERENCES_URI",
    "ApiKeyVerifier",
    "build_mcp_server",
    "serve_http",
    "serve_stdio",
]

FACTS_URI = "memory://facts"
PREFERENCES_URI = "memory://preferences"
ENTITIES_URI = "memory://entities"

KIND_NAMES: Mapping[str, str] = {
    "fact": "semantic",
    "preference": "procedural",
    "event": "episodic",
    "semantic": "semantic",
    "procedural": "procedural",
    "episodic": "episodic",
}
"""What each ``kind`` argument means in the engine (the engine's own names work too)."""

_RESOURCE_LIMIT = 1000
# Claims of the access token an API key becomes.
_SCOPE_CLAIM = "langmem_tiers_scope"
_ADMIN_CLAIM = "langmem_tiers_admin"

T = TypeVar("T")

KindName = Literal["fact", "preference", "event", "semantic", "procedural", "episodic"]
StrategyName = Literal["supersede", "keep_both", "reject_new", "merge"]


def _require_sdk() -> None:
    """MissingDependencyError naming the extra when the ``mcp`` SDK is not installed."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as err:
        raise MissingDependencyError("The MCP server", "mcp", "mcp") from err


# -- authentication over HTTP ------------------------------------------------------------


class ApiKeyVerifier:
    """The SDK's token verifier over the HTTP server's API keys (``server/keys.py``).

    A valid, unrevoked key becomes an access token whose claims carry the key's scope;
    anything else is refused (401 from the SDK's bearer middleware).
    """

    def __init__(self, keys: ApiKeys) -> None:
        self.keys = keys

    async def verify_token(self, token: str) -> "AccessToken | None":
        """The access token of an API key, or None when the key is not valid."""
        from mcp.server.auth.provider import AccessToken

        record = await self.keys.averify(token)
        if record is None:
            return None
        return AccessToken(
            token=token,
            client_id=record.id,
            scopes=[],
            subject=record.scope,
            claims={_SCOPE_CLAIM: record.scope, _ADMIN_CLAIM: record.is_admin},
        )


def _scope_of_caller(fixed: str | None) -> str:
    """The scope this request works in: the server's, or the caller's API key's."""
    if fixed is not None:
        return fixed
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.mcpserver.exceptions import ToolError

    token = get_access_token()
    claims = token.claims if token is not None and token.claims else {}
    scope = claims.get(_SCOPE_CLAIM)
    if isinstance(scope, str):
        return scope
    if claims.get(_ADMIN_CLAIM):
        raise ToolError(
            "an admin API key names no scope, and the MCP server works in one scope per key: "
            "create a key bound to the agent or user with: langmem-tiers keys create --scope ID"
        )
    # Only reachable when the server was built with neither a scope nor key checks.
    raise ToolError("this server has no scope: start it with --scope ID, or use API keys.")


def _kinds(kinds: list[KindName] | None) -> list[str] | None:
    if not kinds:
        return None
    return list(dict.fromkeys(KIND_NAMES[k] for k in kinds))


async def _engine_call(call: Awaitable[T]) -> T:
    """Run an engine call; its refusals (bad input, unknown id) become tool errors."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return await call
    except LangmemTiersError as err:
        # The engine's messages name the argument, the value and the fix; the SDK
        # prefixes the tool's name.
        raise ToolError(str(err)) from err


# -- remember's steps --------------------------------------------------------------------------


def _refuse_preference_fields(kind: KindName, *, key: str | None, value: Any) -> None:
    """``key`` and ``value`` name a preference: refuse them with any other kind."""
    from mcp.server.mcpserver.exceptions import ToolError

    for field, given in (("key", key), ("value", value)):
        if given is not None:
            raise ToolError(
                f"{field} is only for kind 'preference', got kind {kind!r} "
                f"with {field}={given!r}; leave {field} out or use kind 'preference'."
            )


async def _remember_fact(
    engine: MemoryEngine,
    where: str,
    content: str,
    *,
    subject: str | None,
    category: str | None,
    confidence: float,
    strategy: StrategyName | None,
    budget: int,
) -> dict[str, Any]:
    """Add a fact, answering what happened to it and the conflicts it met, within budget."""
    result = await _engine_call(
        engine.aadd_semantic(
            where,
            content,
            subject=subject,
            category=category,
            confidence=confidence,
            strategy=strategy,
        ),
    )
    conflicts: list[dict[str, Any]] = [
        {
            "memory_id": c.memory.id,
            "content": c.memory.content,
            "similarity": round(c.similarity, 6),
            "conflict": c.conflict,
            "confidence": round(c.confidence, 6),
        }
        for c in result.conflicts
    ]
    changed = [memory_entry(m) for m in result.changed]
    share = share_of(budget, 1 + len(conflicts) + len(changed))
    return {
        "action": result.action,
        "memory": clip(memory_entry(result.memory), share),
        "reason": result.reason,
        "conflicts": [clip(c, share, memory_id=str(c["memory_id"])) for c in conflicts],
        "changed": [clip(m, share) for m in changed],
    }


async def _remember_preference(
    engine: MemoryEngine, where: str, content: str, key: str | None, value: Any, *, budget: int
) -> dict[str, Any]:
    """Set a preference (``value`` defaults to the content); repeating one reinforces it."""
    from mcp.server.mcpserver.exceptions import ToolError

    if key is None:
        raise ToolError(
            "key is required for kind 'preference': name the preference, "
            "e.g. key='answer_language' with value='French'."
        )
    memory = await _engine_call(
        engine.aset_procedural(
            where, key, value if value is not None else content, content=content
        ),
    )
    action = "reinforced" if memory.reinforcement_count > 1 else "created"
    return {"action": action, "memory": clip(memory_entry(memory), budget)}


# -- the server ------------------------------------------------------------------------------


def build_mcp_server(
    engine: MemoryEngine,
    *,
    scope: str | None = None,
    keys: ApiKeys | None = None,
    issuer_url: str = "http://127.0.0.1",
    name: str = "langmem-tiers",
) -> "MCPServer[Any]":
    """An MCP server (the SDK's ``MCPServer``) over ``engine``, for one scope or per key.

    Args:
        engine: the memory engine every tool calls.
        scope: the agent or user id every call works in (stdio).
        keys: the API keys of the HTTP server; each caller works in its key's scope
            (streamable HTTP). Exactly one of ``scope`` and ``keys``.
        issuer_url: the server's own base URL, named in its auth metadata (with ``keys``).
        name: the server's name shown to clients.

    Raises:
        MissingDependencyError: the ``mcp`` extra is not installed.
        ConfigurationError: both or neither of ``scope`` and ``keys``, or an invalid scope.
    """
    _require_sdk()
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import AnyHttpUrl

    if (scope is None) == (keys is None):
        raise ConfigurationError(
            "pass exactly one of scope= (one agent or user, for stdio) and keys= "
            f"(each API key's scope, for HTTP); got scope={scope!r}, keys={keys!r}."
        )
    if scope is not None:
        _check_scope(scope)
    auth: dict[str, Any] = {}
    if keys is not None:
        auth = {
            "token_verifier": ApiKeyVerifier(keys),
            "auth": AuthSettings(issuer_url=AnyHttpUrl(issuer_url), resource_server_url=None),
        }
    server: MCPServer[Any] = MCPServer(
        name,
        instructions=(
            "Long-term memory of one agent or user. remember stores facts, preferences "
            "(key -> value) and events; recall searches them; history shows how a fact "
            "changed; forget removes one; entities lists the people, places and things the "
            "memories name; relations lists facts such as 'user lives_in Berlin', now or as of "
            "an instant. Resources memory://facts, memory://preferences and "
            "memory://entities list what is current."
        ),
        **auth,
    )

    budget = engine.settings.mcp_answer_chars

    @server.tool(title="Remember", structured_output=False)
    async def remember(
        content: Annotated[
            str, Field(min_length=1, description="The text to remember, in a sentence.")
        ],
        kind: Annotated[
            KindName,
            Field(
                description="fact (checked for duplicates and contradictions, versioned), "
                "preference (key -> value; repeating it reinforces it) or event "
                "(something that happened, time-stamped)."
            ),
        ] = "fact",
        key: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=512,
                description="The preference's name, e.g. answer_language (preferences only).",
            ),
        ] = None,
        value: Annotated[
            Any,
            Field(description="The preference's value, any JSON (default: the content)."),
        ] = None,
        subject: Annotated[
            str | None,
            Field(min_length=1, max_length=512, description="Who or what a fact is about."),
        ] = None,
        category: Annotated[str | None, Field(min_length=1, max_length=512)] = None,
        confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0,
        strategy: Annotated[
            StrategyName | None,
            Field(description="How a contradicted fact is resolved (default: the setting)."),
        ] = None,
        session_id: Annotated[
            str | None, Field(min_length=1, max_length=512, description="An event's session.")
        ] = None,
    ) -> dict[str, Any]:
        """Store a fact, a preference or an event in long-term memory.

        A fact that repeats a stored one is not stored twice (action "duplicate"); one that
        contradicts a stored fact supersedes it by default (action "superseded").
        """
        where = _scope_of_caller(scope)
        engine_kind = KIND_NAMES[kind]
        if engine_kind != "procedural":
            _refuse_preference_fields(kind, key=key, value=value)
        if engine_kind == "semantic":
            return await _remember_fact(
                engine,
                where,
                content,
                subject=subject,
                category=category,
                confidence=confidence,
                strategy=strategy,
                budget=budget,
            )
        if engine_kind == "procedural":
            return await _remember_preference(engine, where, content, key, value, budget=budget)
        memory = await _engine_call(engine.aadd_episodic(where, content, session_id=session_id))
        return {"action": "created", "memory": clip(memory_entry(memory), budget)}

    @server.tool(title="Recall", structured_output=False)
    async def recall(
        query: Annotated[
            str, Field(min_length=1, max_length=10_000, description="What to look for.")
        ],
        kinds: Annotated[
            list[KindName] | None,
            Field(description="Only these kinds (default: facts, preferences and events)."),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Results at most.")] = 5,
        include_inactive: Annotated[
            bool, Field(description="Also superseded, decayed and deleted memories.")
        ] = False,
        min_score: Annotated[
            float | None,
            Field(
                ge=0.0,
                le=1.0,
                description="Only memories at least this relevant (absolute, 0 to 1).",
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search long-term memory by the hybrid score (semantic, recency, frequency,
        confidence); each result carries its score and the score's components."""
        found = await _engine_call(
            engine.aretrieve(
                _scope_of_caller(scope),
                query,
                kinds=_kinds(kinds),
                limit=limit,
                include_inactive=include_inactive,
                min_score=min_score,
            ),
        )
        return {"results": bounded([scored_entry(item) for item in found], budget)}

    @server.tool(title="Forget", structured_output=False)
    async def forget(
        memory_id: Annotated[
            str, Field(min_length=1, max_length=256, description="The memory's id.")
        ],
        hard: Annotated[
            bool,
            Field(description="Remove the rows instead of marking the memory deleted."),
        ] = False,
    ) -> dict[str, Any]:
        """Forget one memory: it leaves recall (its events stay in the log unless hard)."""
        memory = await _engine_call(engine.aforget(_scope_of_caller(scope), memory_id, hard=hard))
        return {
            "memory_id": memory_id,
            "hard": hard,
            "memory": None if memory is None else clip(memory_entry(memory), budget),
        }

    @server.tool(title="History", structured_output=False)
    async def history(
        memory_id: Annotated[
            str, Field(min_length=1, max_length=256, description="The fact's id.")
        ],
    ) -> dict[str, Any]:
        """Every version of a fact, oldest first, and the fact as it is now."""
        where = _scope_of_caller(scope)
        current = await _engine_call(engine.aget(where, memory_id))
        if current is None:
            raise ToolError(
                f"memory_id {memory_id!r} names no memory of this scope; recall gives the ids."
            )
        versions = await _engine_call(engine.aevolution(where, memory_id))
        share = share_of(budget, 1 + len(versions))
        return {
            "memory": clip(memory_entry(current), share),
            "versions": [
                clip({**v.to_dict(), "value": without_content(v.value, v.content)}, share)
                for v in versions
            ],
        }

    @server.tool(title="Read memory", structured_output=False)
    async def read_memory(
        memory_id: Annotated[
            str, Field(min_length=1, max_length=256, description="The memory's id.")
        ],
        part: Annotated[
            Literal["content", "value"],
            Field(description="Its text (content) or its value as JSON text."),
        ] = "content",
        offset: Annotated[
            int, Field(ge=0, description="The first character to read (0: the start).")
        ] = 0,
        version: Annotated[
            int | None,
            Field(ge=1, description="A past version of a fact (history lists them)."),
        ] = None,
    ) -> dict[str, Any]:
        """Read a memory's whole text, one page at a time: the page from ``offset``, and the
        ``next_offset`` to ask for next (None at the end). An answer that cut a memory's
        text says which arguments read on."""
        where = _scope_of_caller(scope)
        current = await _engine_call(engine.aget(where, memory_id))
        if current is None:
            raise ToolError(
                f"memory_id {memory_id!r} names no memory of this scope; recall gives the ids."
            )
        content, value = current.content, current.value
        if version is not None:
            versions = await _engine_call(engine.aevolution(where, memory_id))
            chosen = [v for v in versions if v.version == version]
            if not chosen:
                raise ToolError(
                    f"version {version} of memory {memory_id!r} does not exist; it has "
                    f"versions {[v.version for v in versions]} (history lists them)."
                )
            content, value = chosen[0].content, chosen[0].value
        text = content if part == "content" else compact(without_content(value, content))
        if offset > len(text):
            raise ToolError(
                f"offset {offset} is past the end of the {part} ({len(text)} characters); "
                "read from an offset below that."
            )
        end = min(offset + budget, len(text))
        return {
            "memory_id": memory_id,
            "part": part,
            "version": version,
            "offset": offset,
            "text": text[offset:end],
            "total_chars": len(text),
            "next_offset": end if end < len(text) else None,
        }

    @server.tool(title="Entities", structured_output=False)
    async def entities(
        name: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=512,
                description="One entity's name or alias: that entity and the memories "
                "naming it (default: list the entities).",
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=100, description="Entities (or, with name, memories) at most.")
        ] = 20,
        offset: Annotated[
            int, Field(ge=0, le=100_000, description="How many to skip (the next page).")
        ] = 0,
    ) -> dict[str, Any]:
        """The people, organisations, places and things this memory names, most mentioned
        first; with ``name``, that entity (found by name or alias) and the memories that
        mention it, oldest first. ``next_offset`` asks for the next page (None at the end)."""
        where = _scope_of_caller(scope)
        if name is None:
            # One more than asked tells whether there is a next page.
            found = await _engine_call(engine.aentities(where, limit=limit + 1, offset=offset))
            page = found[:limit]
            share = share_of(budget, len(page))
            return {
                "entities": [entity_entry(e, share) for e in page],
                "offset": offset,
                "next_offset": offset + limit if len(found) > limit else None,
            }
        detail = await _engine_call(engine.aentity(where, name))
        if detail is None:
            raise ToolError(
                f"name {name!r} names no entity of this scope; entities without a name lists them."
            )
        memories = detail.memories[offset : offset + limit]
        share = share_of(budget, 1 + len(memories))
        end = offset + len(memories)
        return {
            "entity": entity_entry(detail.entity, share),
            "memories": [clip(memory_entry(m), share) for m in memories],
            "total_memories": len(detail.memories),
            "offset": offset,
            "next_offset": end if end < len(detail.memories) else None,
        }

    @server.tool(title="Relations", structured_output=False)
    async def relations(
        subject: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=512,
                description="Only this subject's relations: 'user' (the speaker), "
                "'user.sister', or a name (default: every subject).",
            ),
        ] = None,
        as_of: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=64,
                description="An ISO-8601 instant, e.g. '2026-03-01T12:00:00Z': the "
                "relations as they held then (default: now).",
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="Relations at most.")] = 20,
        offset: Annotated[
            int, Field(ge=0, le=100_000, description="How many to skip (the next page).")
        ] = 0,
    ) -> dict[str, Any]:
        """The (subject, relation, object) facts this memory holds, such as
        'user lives_in Berlin', oldest first, each with the memory stating it and when it
        holds (valid_from, valid_until). With ``as_of``, those that held at that instant:
        a move shows the old place before it. ``next_offset`` asks for the next page."""
        found = await _engine_call(
            engine.arelations(_scope_of_caller(scope), subject=subject, as_of=as_of)
        )
        page = found[offset : offset + limit]
        share = share_of(budget, len(page))
        end = offset + len(page)
        return {
            "relations": [relation_entry(r, share) for r in page],
            "as_of": as_of,
            "offset": offset,
            "next_offset": end if end < len(found) else None,
        }

    @server.resource(
        FACTS_URI,
        name="facts",
        title="Current facts",
        description="The scope's active facts, oldest first.",
        mime_type="application/json",
    )
    async def facts() -> str:
        memories = await engine.amemories(
            _scope_of_caller(scope), kinds="semantic", limit=_RESOURCE_LIMIT
        )
        return _json(bounded([memory_entry(m) for m in memories], budget))

    @server.resource(
        PREFERENCES_URI,
        name="preferences",
        title="Preferences",
        description="The scope's active preferences: key -> value.",
        mime_type="application/json",
    )
    async def preferences() -> str:
        memories = await engine.amemories(
            _scope_of_caller(scope), kinds="procedural", limit=_RESOURCE_LIMIT
        )
        share = share_of(budget, len(memories))
        return _json(
            {
                m.proc_key or m.key: clip(
                    {
                        "value": m.value.get("value"),
                        "reinforcement_count": m.reinforcement_count,
                        "memory_id": m.id,
                    },
                    share,
                    memory_id=m.id,
                )
                for m in memories
            }
        )

    @server.resource(
        ENTITIES_URI,
        name="entities",
        title="Entities",
        description="The people, organisations, places and things the scope's memories "
        "name, most mentioned first.",
        mime_type="application/json",
    )
    async def entities_resource() -> str:
        found = await engine.aentities(_scope_of_caller(scope), limit=_RESOURCE_LIMIT)
        share = share_of(budget, len(found))
        return _json([entity_entry(e, share) for e in found])

    return server


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _check_scope(scope: str) -> None:
    from langmem_tiers.long_term.store.scope import encode_label

    encode_label(scope)  # the engine's own rule, checked before the server starts


# -- running it ------------------------------------------------------------------------------


async def _with_engine(
    url: str | None,
    settings: Settings,
    model: BaseChatModel | str | None,
    run: Callable[[TieredMemoryStore, MemoryEngine], Awaitable[None]],
) -> None:
    # The engine checks contradictions offline without a model; the graphs' offline chat
    # model answers questions and would not help it.
    chat_model = None
    if model is not None and model != "offline":
        from langmem_tiers.graph.models import resolve_chat_model

        chat_model = resolve_chat_model(model)
    async with TieredMemoryStore.afrom_url(url, settings=settings) as store:
        await run(store, MemoryEngine(store, model=chat_model, settings=settings))


async def serve_stdio(
    scope: str,
    *,
    url: str | None = None,
    settings: Settings | None = None,
    model: BaseChatModel | str | None = None,
) -> None:
    """Serve ``scope``'s memory over stdio until the client closes the connection.

    ``model`` (a chat model or provider string) checks contradictions and merges facts;
    ``None`` keeps the engine offline.
    """
    settings = settings or Settings.from_env()
    _require_sdk()  # the missing extra is reported before the database is opened
    _check_scope(scope)

    async def run(store: TieredMemoryStore, engine: MemoryEngine) -> None:
        await build_mcp_server(engine, scope=scope).run_stdio_async()

    await _with_engine(url if url is not None else settings.url, settings, model, run)


async def serve_http(
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = "/mcp",
    url: str | None = None,
    settings: Settings | None = None,
    model: BaseChatModel | str | None = None,
    log_level: str = "warning",
) -> None:
    """Serve memory over streamable HTTP at ``http://host:port/mcp``; callers send API keys.

    ``model`` as in :func:`serve_stdio`. Slow clients are bounded as ``langmem-tiers
    serve`` bounds them (``settings.server_*``, ``server/limits.py``).
    """
    settings = settings or Settings.from_env()
    _require_sdk()
    try:
        import uvicorn
    except ImportError as err:  # a dependency of the mcp SDK, so rarely missing
        raise MissingDependencyError("The MCP server over HTTP", "mcp", "uvicorn") from err
    from langmem_tiers.server.limits import uvicorn_options

    async def run(store: TieredMemoryStore, engine: MemoryEngine) -> None:
        server = build_mcp_server(
            engine, keys=ApiKeys(store.db), issuer_url=f"http://{host}:{port}"
        )
        app = server.streamable_http_app(streamable_http_path=path, host=host)
        config = uvicorn.Config(
            app, host=host, port=port, log_level=log_level, **uvicorn_options(settings)
        )
        await uvicorn.Server(config).serve()

    await _with_engine(url if url is not None else settings.url, settings, model, run)
