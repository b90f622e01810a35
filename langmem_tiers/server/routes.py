"""The endpoints of the HTTP API (mounted under ``/api/v1`` by :func:`create_app`).

=======  ===========================================  ======================================
method   path                                         does
=======  ===========================================  ======================================
POST     ``/memory/episodic``                         store an event
POST     ``/memory/semantic``                         store a fact (duplicates, conflicts)
PUT      ``/memory/semantic/{memory_id}``             a new version of a fact
POST     ``/memory/procedural``                       set (reinforce) a key -> value
GET      ``/memory/procedural/key/{key}``             a procedural memory by key
POST     ``/memory/retrieve``                         hybrid search, with component scores
GET      ``/memory/temporal/evolution/{memory_id}``   every version of a fact
POST     ``/memory/replay``                           memory as it was at an instant
GET      ``/memory/timeline``                         the event log
POST     ``/memory/consolidate``                      episodic -> semantic (idempotent)
POST     ``/memory/decay``                            importance decay, lifecycle
POST     ``/memory/forget``                           soft or hard delete
GET      ``/health``                                  the database answers (no key needed)
GET      ``/agents``                                  scopes with counts (admin key)
POST     ``/agents/erase``                            erase every trace of a scope (admin key)
GET      ``/agents/{agent_id}/entities``              the scope's entities, most mentioned first
GET      ``/agents/{agent_id}/entities/{name}``       one entity (by name or alias), its memories
GET      ``/agents/{agent_id}/relations``             its (subject, relation, object) facts
=======  ===========================================  ======================================

Each route authenticates, resolves the scope (the key's own, or ``agent_id`` for an
admin key) and calls the engine's async method; a memory id of another scope is the
engine's ``NotFoundError``, answered 404. The entity and relation routes name the agent in
the path: a key bound to another agent is refused (403), as ``agent_id`` elsewhere.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from langmem_tiers.errors import LangmemTiersError
from langmem_tiers.long_term.engine.plain import plain
from langmem_tiers.server.auth import Principal, require_admin, scope_for
from langmem_tiers.server.errors import ApiError, ErrorResponses
from langmem_tiers.server.models import (
    AgentsOut,
    ConsolidateIn,
    DecayIn,
    EntitiesOut,
    EntityDetailOut,
    EpisodicIn,
    EraseIn,
    EraseOut,
    EvolutionOut,
    ForgetIn,
    ForgetOut,
    HealthOut,
    MemoryOut,
    ProceduralIn,
    RelationsOut,
    ReplayIn,
    ReplayOut,
    ResultOut,
    RetrieveIn,
    RetrieveOut,
    SemanticIn,
    SemanticUpdateIn,
    Text,
    TimelineOut,
    UtcTime,
    WriteResultOut,
)
from langmem_tiers.sql.dialect import Dialect
from langmem_tiers.sql.flow import Flow
from langmem_tiers.sql.migrations import versions_flow

__all__ = ["build_router"]

logger = logging.getLogger("langmem_tiers.server")

_STORED = {"created", "superseded", "kept_both", "merged"}


#: How far from the server's clock an agent key may set ``now`` of a decay: a far future
#: instant would decay every memory of the agent at once. Admin keys may set any instant.
DECAY_WINDOW = timedelta(days=1)


def _check_decay_time(now: datetime) -> None:
    server_now = datetime.now(timezone.utc)
    if abs(now - server_now) > DECAY_WINDOW:
        message = (
            f"now must be within {DECAY_WINDOW.days} day of the server's clock "
            f"({server_now.isoformat(timespec='seconds')}) for an agent's key, got "
            f"{now.isoformat()}; leave it out to decay as of now, or use an admin key."
        )
        raise ApiError(
            422,
            "invalid_input",
            message,
            fields=[{"field": "now", "location": "body.now", "message": message}],
        )


def _memory(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = plain(obj)
    return data


def _scored(obj: Any) -> dict[str, Any]:
    data = _memory(obj)
    score = data.pop("score", getattr(obj, "score", 0.0))
    scores = data.pop("scores", getattr(obj, "scores", {}))
    memory = data.pop("memory", None) or data
    return {"memory": memory, "score": score, "scores": plain(scores)}


def _state(request: Request) -> Any:
    state = request.app.state.langmem_tiers
    if state.engine is None:  # only before start-up or after shutdown
        raise ApiError(503, "database_unavailable", "the server is not started yet.")
    return state


AgentQuery = Annotated[
    Text | None,
    Query(
        min_length=1,
        max_length=512,
        description="The agent whose memory to use (admin keys only).",
    ),
]


AgentPath = Annotated[
    Text,
    Path(
        min_length=1,
        max_length=512,
        description="The agent whose memory to read (a scoped key: its own agent only).",
    ),
]

#: The largest page of entities one request returns.
MAX_ENTITY_PAGE = 1000
#: The largest offset of an entity page (the engine's bound for listings).
MAX_OFFSET = 100_000


def _health_flow(dialect: Dialect) -> Flow[dict[str, int]]:
    return (yield from versions_flow(dialect))


def build_router() -> APIRouter:
    """The API's routes (see the module table)."""
    router = APIRouter(responses=ErrorResponses)

    @router.post(
        "/memory/episodic",
        status_code=201,
        response_model=MemoryOut,
        tags=["memory"],
        summary="Store an episodic memory (an event)",
    )
    async def add_episodic(body: EpisodicIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        memory = await engine.aadd_episodic(
            scope_for(key, body.agent_id),
            body.content,
            session_id=body.session_id,
            event_timestamp=body.event_timestamp,
            actor=body.actor,
            action_type=body.action_type,
            entities=body.entities,
            metadata=body.metadata,
        )
        return _memory(memory)

    @router.post(
        "/memory/semantic",
        response_model=WriteResultOut,
        tags=["memory"],
        summary="Store a semantic memory (a fact), resolving duplicates and conflicts",
        responses={201: {"model": WriteResultOut, "description": "A new memory was stored."}},
    )
    async def add_semantic(body: SemanticIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        result = await engine.aadd_semantic(
            scope_for(key, body.agent_id),
            body.content,
            subject=body.subject,
            category=body.category,
            confidence=body.confidence,
            strategy=body.strategy,
            source_episodic_ids=body.source_episodic_ids,
            metadata=body.metadata,
        )
        data = plain(result)
        status = 201 if data.get("action") in _STORED else 200
        return JSONResponse(WriteResultOut.model_validate(data).model_dump(mode="json"), status)

    @router.put(
        "/memory/semantic/{memory_id}",
        response_model=MemoryOut,
        tags=["memory"],
        summary="Update a semantic memory (stores a new version)",
    )
    async def update_semantic(
        memory_id: Annotated[Text, Path(min_length=1, max_length=1_000)],
        body: SemanticUpdateIn,
        request: Request,
        key: Principal,
    ) -> Any:
        engine = _state(request).engine
        memory = await engine.aupdate_semantic(
            scope_for(key, body.agent_id),
            memory_id,
            body.content,
            confidence=body.confidence,
            reason=body.reason,
        )
        return _memory(memory)

    @router.post(
        "/memory/procedural",
        response_model=MemoryOut,
        tags=["memory"],
        summary="Set a procedural memory (key -> value); repeating it reinforces it",
    )
    async def set_procedural(body: ProceduralIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        memory = await engine.aset_procedural(
            scope_for(key, body.agent_id), body.key, body.value, content=body.content
        )
        return _memory(memory)

    @router.get(
        "/memory/procedural/key/{key}",
        response_model=MemoryOut,
        tags=["memory"],
        summary="A procedural memory by its key (an index lookup, not a search)",
    )
    async def get_procedural(
        key: Annotated[Text, Path(min_length=1, max_length=512)],
        request: Request,
        caller: Principal,
        agent_id: AgentQuery = None,
    ) -> Any:
        engine = _state(request).engine
        memory = await engine.aget_procedural(scope_for(caller, agent_id), key)
        if memory is None:
            raise ApiError(404, "not_found", f"no procedural memory with key {key!r}.")
        return _memory(memory)

    @router.post(
        "/memory/retrieve",
        response_model=RetrieveOut,
        tags=["memory"],
        summary="Hybrid-ranked retrieval with the score's components",
    )
    async def retrieve(body: RetrieveIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        found = await engine.aretrieve(
            scope_for(key, body.agent_id),
            body.query,
            kinds=body.kinds,
            limit=body.limit,
            include_inactive=body.include_inactive,
            as_of=body.as_of,
            min_score=body.min_score,
        )
        return {"results": [_scored(item) for item in found]}

    @router.get(
        "/memory/temporal/evolution/{memory_id}",
        response_model=EvolutionOut,
        tags=["temporal"],
        summary="Every version of a semantic memory, oldest first",
    )
    async def evolution(
        memory_id: Annotated[Text, Path(min_length=1, max_length=1_000)],
        request: Request,
        key: Principal,
        agent_id: AgentQuery = None,
    ) -> Any:
        engine = _state(request).engine
        versions = await engine.aevolution(scope_for(key, agent_id), memory_id)
        return {"memory_id": memory_id, "versions": [plain(v) for v in versions]}

    @router.post(
        "/memory/replay",
        response_model=ReplayOut,
        tags=["temporal"],
        summary="Memory as it was at an instant, rebuilt from the event log",
    )
    async def replay(body: ReplayIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        memories = await engine.areplay(scope_for(key, body.agent_id), body.at)
        return {"at": body.at, "memories": [_memory(m) for m in memories]}

    @router.get(
        "/memory/timeline",
        response_model=TimelineOut,
        tags=["temporal"],
        summary="The event log of a scope, in order",
    )
    async def timeline(
        request: Request,
        key: Principal,
        since: Annotated[UtcTime | None, Query()] = None,
        until: Annotated[UtcTime | None, Query()] = None,
        types: Annotated[
            list[Annotated[Text, Query(min_length=1, max_length=100)]] | None,
            Query(description="Only these event types (repeat the parameter)."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
        agent_id: AgentQuery = None,
    ) -> Any:
        engine = _state(request).engine
        events = await engine.atimeline(
            scope_for(key, agent_id), since=since, until=until, types=types, limit=limit
        )
        return {"events": [plain(e) for e in events]}

    @router.post(
        "/memory/consolidate",
        response_model=ResultOut,
        tags=["maintenance"],
        summary="Consolidate episodic memories into semantic ones (idempotent)",
    )
    async def consolidate(body: ConsolidateIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        result = await engine.aconsolidate(scope_for(key, body.agent_id))
        return {"result": plain(result)}

    @router.post(
        "/memory/decay",
        response_model=ResultOut,
        tags=["maintenance"],
        summary="Apply importance decay; memories below the threshold become decayed",
    )
    async def decay(body: DecayIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        scope = scope_for(key, body.agent_id)
        if body.now is not None and not key.is_admin:
            _check_decay_time(body.now)
        result = await engine.adecay(scope, now=body.now)
        return {"result": plain(result)}

    @router.post(
        "/memory/forget",
        response_model=ForgetOut,
        tags=["maintenance"],
        summary="Forget a memory: soft (status deleted) or hard (rows removed)",
    )
    async def forget(body: ForgetIn, request: Request, key: Principal) -> Any:
        engine = _state(request).engine
        memory = await engine.aforget(scope_for(key, body.agent_id), body.memory_id, hard=body.hard)
        return {"memory": None if memory is None else _memory(memory), "hard": body.hard}

    @router.get(
        "/health",
        response_model=HealthOut,
        tags=["server"],
        summary="Whether the server and its database answer (no key needed)",
        responses={503: {"model": HealthOut, "description": "The database does not answer."}},
    )
    async def health(request: Request) -> Any:
        state = request.app.state.langmem_tiers
        if state.store is None:
            return JSONResponse(
                {"status": "unavailable", "database": "not started"}, status_code=503
            )
        try:
            versions = await state.store.db.arun(_health_flow(state.store.db.dialect))
        except (LangmemTiersError, OSError) as err:
            logger.error("health check: the database failed: %s", err)
            return JSONResponse(
                {"status": "unavailable", "database": "unreachable"}, status_code=503
            )
        return {
            "status": "ok",
            "database": state.store.db.dialect.name,
            "schema_version": sum(versions.values()),
            "schema_versions": versions,
        }

    @router.get(
        "/agents",
        response_model=AgentsOut,
        tags=["server"],
        summary="Every agent (scope) with its memory counts by kind (admin key)",
    )
    async def agents(request: Request, key: Principal) -> Any:
        require_admin(key)
        engine = _state(request).engine
        found = await engine.aagents()
        return {"agents": [_agent(a) for a in found]}

    @router.post(
        "/agents/erase",
        response_model=EraseOut,
        tags=["server"],
        summary="Erase every trace of an agent: memories, vectors, sessions, keys, the content"
        " of its events (admin key)",
    )
    async def erase(body: EraseIn, request: Request, key: Principal) -> Any:
        require_admin(key)
        engine = _state(request).engine
        result = await engine.aerase_scope(body.agent_id)
        data = result._asdict()
        data["agent_id"] = data.pop("scope")
        return data

    @router.get(
        "/agents/{agent_id}/entities",
        response_model=EntitiesOut,
        tags=["entities"],
        summary="The entities (people, organisations, places, things) an agent's memories"
        " name, most mentioned first",
    )
    async def entities(
        agent_id: AgentPath,
        request: Request,
        key: Principal,
        limit: Annotated[int, Query(ge=1, le=MAX_ENTITY_PAGE)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    ) -> Any:
        engine = _state(request).engine
        found = await engine.aentities(scope_for(key, agent_id), limit=limit, offset=offset)
        return {"entities": [_entity(e) for e in found], "limit": limit, "offset": offset}

    @router.get(
        "/agents/{agent_id}/entities/{name:path}",
        response_model=EntityDetailOut,
        tags=["entities"],
        summary="One entity of an agent, by name or alias, with the memories naming it",
    )
    async def entity(
        agent_id: AgentPath,
        name: Annotated[Text, Path(min_length=1, max_length=512)],
        request: Request,
        key: Principal,
        as_of: Annotated[
            UtcTime | None,
            Query(
                description="The entity as it was at this ISO-8601 instant: the memories of"
                " then that named it."
            ),
        ] = None,
    ) -> Any:
        engine = _state(request).engine
        scope = scope_for(key, agent_id)
        if not name.strip():
            raise ApiError(
                422,
                "invalid_input",
                "name must not be blank; give the entity's name or one of its aliases.",
                fields=[{"field": "name", "location": "path.name", "message": "blank"}],
            )
        detail = await engine.aentity(scope, name, as_of=as_of)
        if detail is None:
            then = "" if as_of is None else f" at {as_of.isoformat()}"
            raise ApiError(
                404, "not_found", f"no entity named {name!r} in this agent's memory{then}."
            )
        return {
            "entity": _entity(detail.entity),
            "memories": [_memory(m) for m in detail.memories],
        }

    @router.get(
        "/agents/{agent_id}/relations",
        response_model=RelationsOut,
        tags=["entities"],
        summary="An agent's (subject, relation, object) facts, now or as they held at an"
        " instant, oldest first",
    )
    async def relations(
        agent_id: AgentPath,
        request: Request,
        key: Principal,
        subject: Annotated[
            Text | None,
            Query(
                min_length=1,
                max_length=512,
                description='Only this subject\'s relations ("user", "user.sister", a name).',
            ),
        ] = None,
        as_of: Annotated[
            UtcTime | None,
            Query(description="The relations as they held at this ISO-8601 instant."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_ENTITY_PAGE)] = 100,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    ) -> Any:
        engine = _state(request).engine
        found = await engine.arelations(scope_for(key, agent_id), subject=subject, as_of=as_of)
        return {
            "relations": [plain(r) for r in found[offset : offset + limit]],
            "as_of": as_of,
            "limit": limit,
            "offset": offset,
        }

    return router


def _entity(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = plain(obj)
    data["agent_id"] = data.pop("scope")
    return data


def _agent(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = plain(obj)
    data["agent_id"] = data.pop("scope")
    return data
