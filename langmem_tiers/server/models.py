"""Request and response bodies of the HTTP API (Pydantic models, shown in the OpenAPI schema).

Requests are strict about shape: unknown fields are refused (a typo is a 422 naming the
field, not a silently ignored option); every text, also inside ``metadata`` and
``value``, must be storable by every backend (no NUL bytes, no lone surrogates, JSON at
most 64 levels deep); times must be convertible to UTC (naive ones are taken as UTC).
Content rules (size, ranges of settings) are the memory engine's, whose errors name
the field too.

``agent_id`` is only for admin keys: a key bound to an agent always works in its own
scope, and naming another agent is refused.

Example:
    >>> EpisodicIn(content="Deployed v2 to staging", actor="ci").actor
    'ci'
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "AgentOut",
    "AgentsOut",
    "ConflictOut",
    "ConsolidateIn",
    "DecayIn",
    "EntitiesOut",
    "EntityDetailOut",
    "EntityOut",
    "EpisodicIn",
    "EraseIn",
    "EraseOut",
    "ErrorOut",
    "EventOut",
    "EvolutionOut",
    "FieldErrorOut",
    "ForgetIn",
    "ForgetOut",
    "HealthOut",
    "JsonDict",
    "JsonValue",
    "MemoryKindName",
    "MemoryOut",
    "ProceduralIn",
    "RelationOut",
    "RelationsOut",
    "ReplayIn",
    "ReplayOut",
    "ResultOut",
    "RetrieveIn",
    "RetrieveOut",
    "ScoredMemoryOut",
    "ScoresOut",
    "SemanticIn",
    "SemanticUpdateIn",
    "StrategyName",
    "Text",
    "TimelineOut",
    "UtcTime",
    "VersionOut",
    "WriteResultOut",
    "check_json",
    "check_text",
    "to_utc",
]

MemoryKindName = Literal["episodic", "semantic", "procedural"]
StrategyName = Literal["supersede", "keep_both", "reject_new", "merge"]

_MAX_JSON_DEPTH = 64


def check_text(value: str) -> str:
    """A text every backend can store: no NUL bytes, valid Unicode (no lone surrogates).

    >>> check_text("ok")
    'ok'
    """
    if "\x00" in value:
        raise ValueError("must not contain NUL bytes (\\x00)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it holds a lone surrogate)") from None
    return value


def check_json(value: Any) -> Any:
    """A JSON value whose every text (keys too) passes :func:`check_text`, at most 64 deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_JSON_DEPTH:
            raise ValueError(f"is nested deeper than {_MAX_JSON_DEPTH} levels")
        if isinstance(item, str):
            check_text(item)
        elif isinstance(item, dict):
            for key, inner in item.items():
                check_text(str(key))
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
    return value


def to_utc(value: datetime) -> datetime:
    """An aware time in UTC (a naive one is taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC") from None


Text = Annotated[str, AfterValidator(check_text)]
"""A string without NUL bytes or lone surrogates."""
JsonDict = Annotated[dict[str, Any], AfterValidator(check_json)]
"""A JSON object every backend can store."""
JsonValue = Annotated[Any, AfterValidator(check_json)]
"""Any JSON value every backend can store."""
UtcTime = Annotated[datetime, AfterValidator(to_utc)]
"""An ISO-8601 time, converted to UTC."""

_AGENT_ID = Field(
    default=None,
    min_length=1,
    max_length=512,
    description="The agent or user whose memory to use; admin keys only (a scoped key "
    "always uses its own scope).",
)
_CONTENT = Field(min_length=1, description="The memory's text.")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    # Responses carry whatever the engine adds beyond the documented fields.
    model_config = ConfigDict(extra="allow")


# -- requests -------------------------------------------------------------------------------


class EpisodicIn(_In):
    """An event: something that happened, at a time."""

    content: Text = _CONTENT
    session_id: Text | None = Field(default=None, min_length=1, max_length=512)
    event_timestamp: UtcTime | None = Field(
        default=None, description="When it happened (default: now)."
    )
    actor: Text | None = Field(default=None, max_length=512)
    action_type: Text | None = Field(default=None, max_length=512)
    entities: list[Text] | None = None
    metadata: JsonDict | None = None
    agent_id: Text | None = _AGENT_ID


class SemanticIn(_In):
    """A fact; checked against near facts of the same scope for duplicates and conflicts."""

    content: Text = _CONTENT
    subject: Text | None = Field(default=None, max_length=512)
    category: Text | None = Field(default=None, max_length=512)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    strategy: StrategyName | None = Field(
        default=None,
        description="How a contradiction is resolved (default: the server's setting).",
    )
    source_episodic_ids: list[Text] | None = None
    metadata: JsonDict | None = None
    agent_id: Text | None = _AGENT_ID


class SemanticUpdateIn(_In):
    """A new version of a semantic memory."""

    content: Text = _CONTENT
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: Text | None = Field(default=None, max_length=2_000)
    agent_id: Text | None = _AGENT_ID


class ProceduralIn(_In):
    """A preference or procedure: key -> value; setting it again reinforces it."""

    key: Text = Field(min_length=1, max_length=512)
    value: JsonValue = Field(description="Any JSON value.")
    content: Text | None = Field(default=None, min_length=1)
    agent_id: Text | None = _AGENT_ID


class RetrieveIn(_In):
    """A hybrid-ranked search."""

    query: Text = Field(min_length=1, max_length=10_000)
    kinds: list[MemoryKindName] | None = Field(default=None, description="Default: every kind.")
    limit: int = Field(default=10, ge=1, le=100)
    include_inactive: bool = False
    as_of: UtcTime | None = Field(default=None, description="Only memories valid at this instant.")
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Only memories at least this relevant: the semantic component, an absolute "
        "relevance in [0, 1] (about 0.3 and up is a match).",
    )
    agent_id: Text | None = _AGENT_ID


class ReplayIn(_In):
    """Rebuild memory as it was at an instant, from the event log."""

    at: UtcTime
    agent_id: Text | None = _AGENT_ID


class ConsolidateIn(_In):
    """Consolidate episodic memories into semantic ones (idempotent)."""

    agent_id: Text | None = _AGENT_ID


class DecayIn(_In):
    """Apply importance decay."""

    now: UtcTime | None = Field(default=None, description="Decay as of this instant.")
    agent_id: Text | None = _AGENT_ID


class ForgetIn(_In):
    """Forget a memory: soft (status ``deleted``) or hard (rows removed)."""

    memory_id: Text = Field(min_length=1, max_length=1_000)
    hard: bool = False
    agent_id: Text | None = _AGENT_ID


class EraseIn(_In):
    """Erase every trace of an agent (scope): admin keys only."""

    agent_id: Text = Field(
        min_length=1, max_length=512, description="The agent (scope) whose data to erase."
    )


# -- responses ------------------------------------------------------------------------------


class MemoryOut(_Out):
    """A memory (kind fields are null for other kinds)."""

    id: str
    scope: str
    kind: str
    key: str
    namespace: list[str] = Field(default_factory=list)
    content: str
    value: dict[str, Any] = Field(default_factory=dict)
    status: str = Field(description="active, superseded, decayed, deleted or compressed")
    confidence: float
    importance: float
    version: int
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime
    updated_at: datetime
    access_count: int = 0
    last_accessed_at: datetime | None = None
    session_id: str | None = None
    event_timestamp: datetime | None = None
    actor: str | None = None
    action_type: str | None = None
    subject: str | None = None
    category: str | None = None
    proc_key: str | None = None
    reinforcement_count: int = 0
    last_used_at: datetime | None = None
    consolidated_into_id: str | None = None


class ScoresOut(_Out):
    """The components of the hybrid score, each in [0, 1]."""

    semantic: float
    recency: float
    frequency: float
    confidence: float


class ScoredMemoryOut(_Out):
    """A retrieved memory with its score and the score's components."""

    memory: MemoryOut
    score: float
    scores: ScoresOut


class RetrieveOut(_Out):
    """Retrieved memories, best first."""

    results: list[ScoredMemoryOut]


class ConflictOut(_Out):
    """A near memory checked for a contradiction, and what the check said."""

    memory: MemoryOut
    similarity: float
    conflict: bool
    confidence: float
    explanation: str


class WriteResultOut(_Out):
    """What storing a semantic memory did.

    ``created``, ``superseded``, ``kept_both`` and ``merged`` stored something (201);
    ``duplicate`` and ``rejected`` return the existing memory (200).
    """

    action: Literal["created", "duplicate", "superseded", "kept_both", "rejected", "merged"]
    memory: MemoryOut
    conflicts: list[ConflictOut] = Field(default_factory=list)
    reason: str | None = None
    changed: list[MemoryOut] = Field(default_factory=list)


class VersionOut(_Out):
    """One version of a semantic memory."""

    memory_id: str
    version: int
    content: str
    confidence: float
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    reason: str | None = None
    value: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class EvolutionOut(_Out):
    """Every version of a semantic memory, oldest first."""

    memory_id: str
    versions: list[VersionOut]


class ReplayOut(_Out):
    """Memory as it was at ``at``."""

    at: datetime
    memories: list[MemoryOut]


class EventOut(_Out):
    """One change of a memory, with its snapshot before and after."""

    seq: int
    at: datetime
    type: str
    scope: str
    kind: str | None = None
    memory_id: str
    key: str
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    correlation_id: str | None = None
    actor: str | None = None


class TimelineOut(_Out):
    """Events in order."""

    events: list[EventOut]


class ResultOut(_Out):
    """The result of a maintenance operation (consolidate, decay)."""

    result: dict[str, Any]


class ForgetOut(_Out):
    """The forgotten memory in its new state (``deleted``); null after a hard delete."""

    memory: MemoryOut | None
    hard: bool


class EraseOut(_Out):
    """What an erasure removed: rows of each kind (events: emptied, their tombstones kept)."""

    agent_id: str
    items: int
    events: int
    sessions: int
    messages: int
    api_keys: int


class EntityOut(_Out):
    """An entity of a scope: a person, organisation, place or thing its memories name."""

    id: str
    agent_id: str
    name: str
    kind: str = Field(description="person, organization, place or thing")
    aliases: list[str] = Field(default_factory=list, description="Other names of it.")
    mentions: int = Field(description="How many memories name it.")
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class EntitiesOut(_Out):
    """A page of a scope's entities, most mentioned first."""

    entities: list[EntityOut]
    limit: int
    offset: int


class EntityDetailOut(_Out):
    """One entity with the memories that mention it, oldest first."""

    entity: EntityOut
    memories: list[MemoryOut]


class RelationOut(_Out):
    """A (subject, relation, object) fact, with the memory stating it and when it holds."""

    subject: str = Field(description='"user" (the speaker), "user.sister" or a name.')
    relation: str = Field(description="lives_in, works_at, job, manager, ...")
    object: str
    memory_id: str
    valid_from: datetime | None = None
    valid_until: datetime | None = Field(
        default=None, description="When a newer memory superseded it; null while it holds."
    )


class RelationsOut(_Out):
    """A page of a scope's relations as they held at ``as_of`` (null: now), oldest first."""

    relations: list[RelationOut]
    as_of: datetime | None
    limit: int
    offset: int


class HealthOut(_Out):
    """Server and database health."""

    status: Literal["ok", "unavailable"]
    database: str
    #: How many migrations the database has applied, over every component.
    schema_version: int | None = None
    #: The version of each component of the schema (see ``sql/migrations.py``).
    schema_versions: dict[str, int] | None = None


class AgentOut(_Out):
    """A scope with its memories counted by kind (every status)."""

    agent_id: str
    episodic: int
    semantic: int
    procedural: int
    active: int
    total: int


class AgentsOut(_Out):
    """Every scope with memories."""

    agents: list[AgentOut]


class FieldErrorOut(BaseModel):
    """One invalid field of a request."""

    field: str
    location: str
    message: str


class ErrorOut(BaseModel):
    """Every error response: a code, a message, and the fields at fault for a 422."""

    error: str
    message: str
    fields: list[FieldErrorOut] | None = None
