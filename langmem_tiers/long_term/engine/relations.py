"""Relations as facts over time: (subject, relation, object) read from semantic memories.

A semantic memory whose statement fills a relation slot (see
:mod:`~langmem_tiers.tiers.slots`: "I live in Berlin." is ``user lives_in Berlin``)
keeps the relation in its value, under ``relations``, written by the engine's one write
pipeline with the rest of the value. So a relation is superseded when its memory is
(status ``superseded``, ``valid_until`` set), versioned and evented with it, and replay
shows the relations a scope held at any instant.

:func:`value_with_relations` adds the field to a value being written;
:func:`refreshed_value` keeps it in step when a memory's content changes (an update, a
merge); :func:`relations_flow` reads the relations that held at an instant, now or in the
past (from the scope's events, as replay does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from langmem_tiers.long_term.engine.lifecycle import memories_flow
from langmem_tiers.long_term.engine.models import Memory
from langmem_tiers.long_term.engine.replay import state_at_flow
from langmem_tiers.sql.dialect import Dialect
from langmem_tiers.sql.flow import Flow
from langmem_tiers.tiers.slots import read_claims

__all__ = [
    "RELATIONS_FIELD",
    "Relation",
    "refreshed_value",
    "relations_flow",
    "statement_relations",
    "value_with_relations",
]

RELATIONS_FIELD = "relations"
"""The key of a semantic memory's value that holds the relations its statement states."""


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation a memory states, with the memory and the interval it holds in."""

    subject: str
    """``user`` (the speaker), ``user.<relation>`` ("user.sister") or a name."""
    relation: str
    """``lives_in``, ``works_at``, ``job``, ``manager``, ...: one value at a time."""
    object: str
    memory_id: str
    valid_from: datetime | None
    """When the memory began to hold (its ``valid_from``, else when it was written)."""
    valid_until: datetime | None
    """When a newer memory superseded it (as known now, also for a relation read as of a
    past instant); None while it holds."""


def _original(text: str, value: str) -> str:
    """``value`` (read lower-case) as ``text`` writes it ("acme corp": "Acme Corp")."""
    found = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE)
    return found.group(0) if found else value


def statement_relations(text: str) -> list[dict[str, str]]:
    """The relations one statement states, as stored in a value (empty when none).

    >>> statement_relations("I work at Acme Corp as a designer.")
    [{'subject': 'user', 'relation': 'works_at', 'object': 'Acme Corp'}]
    >>> statement_relations("My manager is Sarah.")
    [{'subject': 'user', 'relation': 'manager', 'object': 'Sarah'}]
    >>> statement_relations("I have a dog.")
    []
    """
    claims = read_claims(text)
    return [
        {
            "subject": subject,
            "relation": "_".join(relation.split()),
            "object": _original(text, value),
        }
        for (subject, relation), value in claims.slots.items()
    ]


def _derived(value: Mapping[str, Any]) -> list[dict[str, str]]:
    content = value.get("content")
    return statement_relations(content) if isinstance(content, str) else []


def value_with_relations(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """``value`` with the relations its ``content`` states; None when there are none.

    A value that has a ``relations`` field already, or whose content is not text, is
    left as it is (None): the engine never overwrites what a caller wrote.
    """
    if RELATIONS_FIELD in value:
        return None
    found = _derived(value)
    return {**value, RELATIONS_FIELD: found} if found else None


def refreshed_value(old: Mapping[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` (a changed ``old``) with relations that follow its new content.

    Only relations the engine derived (equal to what the old content states, or none) are
    replaced; a caller's own ``relations`` field is kept.
    """
    if RELATIONS_FIELD in old and old[RELATIONS_FIELD] != _derived(old):
        return new
    out = {k: v for k, v in new.items() if k != RELATIONS_FIELD}
    found = _derived(out)
    if found:
        out[RELATIONS_FIELD] = found
    return out


def _holds_at(memory: Memory, at: datetime) -> bool:
    if memory.kind != "semantic" or memory.status != "active":
        return False
    if memory.valid_from is not None and memory.valid_from > at:
        return False
    return memory.valid_until is None or memory.valid_until > at


def relations_of(
    memories: Iterable[Memory], at: datetime, *, subject: str | None = None
) -> list[Relation]:
    """The relations the memories state that hold at ``at``, oldest first."""
    wanted = None if subject is None else subject.casefold()
    out = []
    for memory in memories:
        if not _holds_at(memory, at):
            continue
        stated = memory.value.get(RELATIONS_FIELD)
        for item in stated if isinstance(stated, list) else []:
            if not isinstance(item, Mapping):
                continue
            parts = [item.get(k) for k in ("subject", "relation", "object")]
            if not all(isinstance(p, str) and p for p in parts):
                continue
            who, relation, what = (str(p) for p in parts)
            if wanted is not None and who.casefold() != wanted:
                continue
            out.append(
                Relation(
                    who,
                    relation,
                    what,
                    memory.id,
                    memory.valid_from or memory.created_at,
                    memory.valid_until,
                )
            )
    return sorted(out, key=lambda r: (r.valid_from or at, r.memory_id))


def relations_flow(
    dialect: Dialect,
    scope_label: str,
    *,
    at: datetime | None,
    subject: str | None = None,
) -> Flow[list[Relation]]:
    """The scope's relations at ``at`` (None: now, from the active rows; else by replay).

    Empty before the scope's first event.
    """
    if at is None:
        memories = yield from memories_flow(
            dialect,
            "i.scope = ? AND i.kind = ? AND i.status = ?",
            [scope_label, "semantic", "active"],
        )
        return relations_of(memories, dialect.now(), subject=subject)
    state = yield from state_at_flow(dialect, scope_label, at)
    then = relations_of(state or [], at, subject=subject)
    if not then:
        return then
    # The interval as the memory has it now: "Berlin" held until the move, which replay
    # to an instant before the move cannot know.
    in_ids, params = dialect.in_list("i.id", sorted({r.memory_id for r in then}))
    live = yield from memories_flow(dialect, f"{in_ids} AND i.scope = ?", [*params, scope_label])
    until = {m.id: m.valid_until for m in live}
    return [replace(r, valid_until=until.get(r.memory_id, r.valid_until)) for r in then]
