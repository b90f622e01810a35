"""Entities of a scope: the people, organisations, places and things its memories name.

Every memory the engine writes (episodic, semantic, procedural) is read by the rules of
:mod:`~langmem_tiers.tiers.entities`; each entity it names becomes (or joins) a record
of the memory's scope in ``lmt_entities``, and the memory a mention of it in
``lmt_entity_mentions``. A short form joins the full name ("Mel" and "Melanie" are one
entity, shown by the longer name, the other kept as an alias); the speaker of a memory
written in the first person is mentioned by it; the ``entities`` a caller passes with an
episode are mentions too.

:func:`entities_flow` lists a scope's entities (most mentioned first) and
:func:`entity_flow` reads one by name or alias, with the memories that mention it, oldest
first, and the relations they state of it that hold now, or as all of it was at an instant.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from langmem_tiers.long_term.engine.lifecycle import memories_flow
from langmem_tiers.long_term.engine.models import Memory
from langmem_tiers.long_term.engine.relations import Relation, relations_of
from langmem_tiers.long_term.engine.replay import state_at_flow
from langmem_tiers.sql.dialect import ENTITIES, ENTITY_MENTIONS, Dialect
from langmem_tiers.sql.flow import Flow, Sql, Transaction
from langmem_tiers.tiers.entities import Mention, find_entities, same_entity

__all__ = [
    "Entity",
    "EntityDetail",
    "entities_flow",
    "entity_flow",
    "memory_mentions",
    "record_entities_flow",
]

_NAMESPACE = uuid.UUID("8d0f6f5e-3b61-4d6c-9a55-2f4f1f5d7a10")
_COLUMNS = "id, scope, name, kind, aliases, mentions, first_seen, last_seen"


@dataclass(frozen=True, slots=True)
class Entity:
    """An entity of a scope: its name, kind, aliases and how often memories name it."""

    id: str
    scope: str
    name: str
    kind: str
    """``person``, ``organization``, ``place`` or ``thing``."""
    aliases: tuple[str, ...]
    mentions: int
    """How many memories name it."""
    first_seen: datetime | None
    last_seen: datetime | None


@dataclass(frozen=True, slots=True)
class EntityDetail:
    """An entity with the memories that mention it, oldest first, and its relations."""

    entity: Entity
    memories: list[Memory] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    """The relations those memories state that hold now, with the entity as subject or
    object (see :mod:`~langmem_tiers.long_term.engine.relations`)."""


def _stem(name: str) -> str:
    """The first three letters of a name, lower-cased: where its aliases are looked for."""
    return name.casefold()[:3]


def _entity(dialect: Dialect, row: Sequence[Any]) -> Entity:
    return Entity(
        id=str(row[0]),
        scope=str(row[1]),
        name=str(row[2]),
        kind=str(row[3]),
        aliases=tuple(json.loads(row[4] or "[]")),
        mentions=int(row[5]),
        first_seen=dialect.ts_value(row[6]),
        last_seen=dialect.ts_value(row[7]),
    )


def memory_mentions(memory: Memory) -> list[Mention]:
    """The entities one memory names (its text, its speaker, the entities passed with it)."""
    speaker = memory.actor or memory.value.get("speaker") or memory.value.get("author")
    found = find_entities(memory.content, speaker if isinstance(speaker, str) else None)
    given = memory.value.get("entities")
    if isinstance(given, list):
        names = {m.name.casefold() for m in found}
        found += [
            Mention(name.strip(), "thing")
            for name in given
            if isinstance(name, str) and name.strip() and name.strip().casefold() not in names
        ]
    return found


def _candidates_flow(
    dialect: Dialect, scope: str, names: Iterable[str], *, lock: bool = False
) -> Flow[list[Entity]]:
    stems = sorted({_stem(n) for n in names})
    if not stems:
        return []
    in_stems, params = dialect.in_list("stem", stems)
    suffix = dialect.for_update if lock else ""
    rows = yield Sql(
        f"SELECT {_COLUMNS} FROM {ENTITIES} WHERE scope = ? AND {in_stems}"
        f" ORDER BY first_seen, id{suffix}",
        [scope, *params],
    )
    return [_entity(dialect, row) for row in rows]


def _match(entities: Iterable[Entity], name: str) -> Entity | None:
    for entity in entities:
        if same_entity(entity.name, name) or any(same_entity(a, name) for a in entity.aliases):
            return entity
    return None


def record_entities_flow(dialect: Dialect, memories: Sequence[Memory]) -> Flow[None]:
    """Record the entities the memories name, in one transaction (see the module docstring)."""
    found = [(m, memory_mentions(m)) for m in memories]
    if any(mentions for _, mentions in found):
        yield Transaction(_record(dialect, found))


def _record(dialect: Dialect, found: Sequence[tuple[Memory, list[Mention]]]) -> Flow[None]:
    by_scope: dict[str, list[tuple[Memory, list[Mention]]]] = {}
    for memory, mentions in found:
        if mentions:
            by_scope.setdefault(memory.scope, []).append((memory, mentions))
    for scope, items in sorted(by_scope.items()):
        names = [m.name for _, mentions in items for m in mentions]
        known = yield from _candidates_flow(dialect, scope, names, lock=True)
        for memory, mentions in items:
            at = dialect.ts_param(memory.event_timestamp or memory.created_at)
            for mention in mentions:
                entity = _match(known, mention.name)
                if entity is None:
                    entity = Entity(
                        str(uuid.uuid5(_NAMESPACE, f"{scope}\x00{mention.name.casefold()}")),
                        scope,
                        mention.name,
                        mention.kind,
                        (),
                        0,
                        None,
                        None,
                    )
                    yield Sql(
                        f"INSERT INTO {ENTITIES} ({_COLUMNS}, stem)"
                        " VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                        [
                            entity.id,
                            scope,
                            entity.name,
                            entity.kind,
                            "[]",
                            at,
                            at,
                            _stem(entity.name),
                        ],
                    )
                    known.append(entity)
                added = yield Sql(
                    f"INSERT INTO {ENTITY_MENTIONS} (entity_id, memory_id, scope, at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (entity_id, memory_id) DO NOTHING"
                    " RETURNING entity_id",
                    [entity.id, memory.id, scope, at],
                )
                updated = _joined(entity, mention)
                known[known.index(entity)] = updated
                yield Sql(
                    f"UPDATE {ENTITIES} SET name = ?, kind = ?, aliases = ?, stem = ?,"
                    " mentions = mentions + ?,"
                    " first_seen = CASE WHEN first_seen <= ? THEN first_seen ELSE ? END,"
                    " last_seen = CASE WHEN last_seen >= ? THEN last_seen ELSE ? END"
                    " WHERE id = ?",
                    [
                        updated.name,
                        updated.kind,
                        json.dumps(list(updated.aliases)),
                        _stem(updated.name),
                        1 if added else 0,
                        at,
                        at,
                        at,
                        at,
                        entity.id,
                    ],
                )


def _joined(entity: Entity, mention: Mention) -> Entity:
    """``entity`` with ``mention`` joined: the longer name shown, the other an alias."""
    name, aliases = entity.name, list(entity.aliases)
    if mention.name.casefold() != name.casefold():
        if len(mention.name) > len(name):
            aliases.append(name)
            name = mention.name
        else:
            aliases.append(mention.name)
    seen: set[str] = {name.casefold()}
    unique = []
    for alias in aliases:
        if alias.casefold() not in seen:
            seen.add(alias.casefold())
            unique.append(alias)
    kind = mention.kind if entity.kind == "thing" else entity.kind
    return Entity(
        entity.id,
        entity.scope,
        name,
        kind,
        tuple(unique),
        entity.mentions,
        entity.first_seen,
        entity.last_seen,
    )


def entities_flow(dialect: Dialect, scope: str, *, limit: int, offset: int) -> Flow[list[Entity]]:
    """The scope's entities, most mentioned first (then by name)."""
    rows = yield Sql(
        f"SELECT {_COLUMNS} FROM {ENTITIES} WHERE scope = ?"
        " ORDER BY mentions DESC, name, id LIMIT ? OFFSET ?",
        [scope, limit, offset],
    )
    return [_entity(dialect, row) for row in rows]


def entity_flow(
    dialect: Dialect, scope: str, name: str, *, at: datetime | None = None
) -> Flow[EntityDetail | None]:
    """The entity ``name`` (or an alias of it) names in the scope, with its memories.

    ``at``: the entity as it was at that instant: the memories of the scope then (as replay
    has them) that mention it, its names, count and times from those alone, and the
    relations they state that held then (None when nothing named it yet).
    """
    known = yield from _candidates_flow(dialect, scope, [name])
    exact = [e for e in known if e.name.casefold() == name.casefold()]
    entity = exact[0] if exact else _match(known, name)
    if entity is None:
        return None
    rows = yield Sql(
        f"SELECT memory_id, at FROM {ENTITY_MENTIONS} WHERE entity_id = ? ORDER BY at, memory_id",
        [entity.id],
    )
    ids = [str(r[0]) for r in rows]
    if at is not None:
        return (yield from _entity_then(dialect, scope, entity, rows, at))
    if not ids:
        return EntityDetail(entity, [])
    in_ids, params = dialect.in_list("i.id", ids)
    memories = yield from memories_flow(dialect, f"{in_ids} AND i.scope = ?", [*params, scope])
    return EntityDetail(entity, memories, _relations_naming(entity, memories, dialect.now()))


def _relations_naming(entity: Entity, memories: Iterable[Memory], at: datetime) -> list[Relation]:
    names = [entity.name, *entity.aliases]
    return [
        r
        for r in relations_of(memories, at)
        if any(same_entity(n, r.subject) or same_entity(n, r.object) for n in names)
    ]


def _entity_then(
    dialect: Dialect,
    scope: str,
    entity: Entity,
    mentions: Sequence[Sequence[Any]],
    at: datetime,
) -> Flow[EntityDetail | None]:
    """:func:`entity_flow` at ``at``: what the scope's memories of then say of ``entity``."""
    state = yield from state_at_flow(dialect, scope, at)
    by_id = {m.id: m for m in state or ()}
    named = [(by_id[str(r[0])], dialect.ts_value(r[1])) for r in mentions if str(r[0]) in by_id]
    if not named:
        return None
    # Its names as those memories wrote them: an alias first used later is not one yet.
    names = [entity.name, *entity.aliases]
    then: Entity | None = None
    for memory, _ in named:
        for mention in memory_mentions(memory):
            if not any(same_entity(n, mention.name) for n in names):
                continue
            then = (
                Entity(entity.id, scope, mention.name, mention.kind, (), 0, None, None)
                if then is None
                else _joined(then, mention)
            )
    if then is None:  # named by a caller's entities only, as the record has it
        then = entity
    times = [t for _, t in named if t is not None]
    then = replace(
        then,
        mentions=len(named),
        first_seen=min(times, default=None),
        last_seen=max(times, default=None),
    )
    memories = [m for m, _ in named]
    relations = _relations_naming(then, memories, at)
    if relations:
        # The interval as the memory has it now (see relations_flow).
        in_ids, params = dialect.in_list("i.id", sorted({r.memory_id for r in relations}))
        live = yield from memories_flow(dialect, f"{in_ids} AND i.scope = ?", [*params, scope])
        until = {m.id: m.valid_until for m in live}
        relations = [
            replace(r, valid_until=until.get(r.memory_id, r.valid_until)) for r in relations
        ]
    return EntityDetail(then, memories, relations)
