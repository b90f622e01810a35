"""The export format: versioned JSON Lines, one record per line.

The first line is the header; then, scope by scope, a ``scope`` line, the scope's records,
and an ``end`` line with their counts (an import commits a scope only when it reads its
``end``, so a cut file never leaves half a scope). Every record is an object with a
``type``:

``header``   ``format`` (``langmem-tiers-export``), ``version`` (this module's
             :data:`FORMAT_VERSION`), ``exported_at``, ``embedder`` (``name``, ``dims``)
             and ``embeddings`` (whether items carry their vectors)
``scope``    ``scope``: the scope's ``scope`` column value (null: sessions of no user)
``item``     every column of the memory's row (``id``, ``prefix``, ``key``, ``kind``,
             ``value``, times, validity, ``status``, ``version``, ``reinforcement_count``,
             ``confidence``, ``importance``, ``consolidated_into_id``, ``expires_at``,
             ``ttl_minutes``, ...), ``access`` (``count``, ``last_at``: usage), ``versions``
             (every stored version) and, with embeddings, ``vectors`` (field -> floats)
``event``    one row of the event log: ``seq``, ``at``, ``event_type``, ``scope``, ``kind``,
             ``memory_id``, ``prefix``, ``key``, ``before``, ``after``, ``metadata``,
             ``correlation_id``, ``actor``
``session``  a short-term session: ``session_id``, ``last_seq``, ``changes``
``message``  one short-term message: ``session_id``, ``seq``, ``role``, ``content``,
             ``tier1``, ``tier2``, ``required_tier_level``, ``created_at``, ``extra``,
             ``user_id``
``entity``   an entity the scope's memories name: ``id``, ``scope``, ``name``, ``kind``,
             ``aliases`` (a list), ``mentions``, ``first_seen``, ``last_seen``, and
             ``mentioned_by``: the memories naming it (``memory_id``, ``at``), oldest first
``end``      ``scope`` and ``counts`` (records of each type)

Times are ISO-8601 in UTC with microseconds. A reader refuses a ``version`` newer than its
own; a newer minor addition is ignored: a field it does not know, and a record type it
does not know (so ``entity`` records, added later, kept the version at 1: an older reader
imports the rest of such a file and leaves the entities out).

Example:
    >>> header("x", 8, embeddings=False)["format"], FORMAT_VERSION
    ('langmem-tiers-export', 1)
    >>> try:
    ...     check_header({"type": "header", "format": FORMAT_NAME, "version": 99})
    ... except FormatVersionError as err:
    ...     print(str(err)[:48])
    the export is format version 99, newer than this
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from langmem_tiers.errors import FormatVersionError, ValidationError

__all__ = [
    "ENTITY_FIELDS",
    "EVENT_FIELDS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ITEM_FIELDS",
    "ITEM_TIMES",
    "MESSAGE_FIELDS",
    "VERSION_FIELDS",
    "check_header",
    "decode_line",
    "encode_line",
    "header",
    "iso",
]

FORMAT_NAME = "langmem-tiers-export"
FORMAT_VERSION = 1

#: The columns of an item record, in ``lmt_items`` (``terms`` and ``doc_len`` are made
#: again from the value by the importing store's analyzer).
ITEM_FIELDS: tuple[str, ...] = (
    "id",
    "prefix",
    "key",
    "scope",
    "kind",
    "value",
    "created_at",
    "updated_at",
    "event_at",
    "session_id",
    "actor",
    "action_type",
    "subject",
    "category",
    "version",
    "valid_from",
    "valid_until",
    "proc_key",
    "reinforcement_count",
    "last_used_at",
    "confidence",
    "importance",
    "status",
    "consolidated_into_id",
    "expires_at",
    "ttl_minutes",
    "indexed",
)
#: Which of them are times.
ITEM_TIMES = frozenset(
    {
        "created_at",
        "updated_at",
        "event_at",
        "valid_from",
        "valid_until",
        "last_used_at",
        "expires_at",
    }
)
VERSION_FIELDS: tuple[str, ...] = (
    "version",
    "content",
    "value",
    "confidence",
    "valid_from",
    "valid_until",
    "reason",
    "created_at",
)
EVENT_FIELDS: tuple[str, ...] = (
    "seq",
    "at",
    "type",
    "scope",
    "kind",
    "memory_id",
    "prefix",
    "key",
    "before",
    "after",
    "metadata",
    "correlation_id",
    "actor",
)
#: The columns of an entity record, in ``lmt_entities`` (its ``stem`` is made again from
#: the name by the importing store).
ENTITY_FIELDS: tuple[str, ...] = (
    "id",
    "scope",
    "name",
    "kind",
    "aliases",
    "mentions",
    "first_seen",
    "last_seen",
)
MESSAGE_FIELDS: tuple[str, ...] = (
    "session_id",
    "seq",
    "role",
    "content",
    "tier1",
    "tier2",
    "required_tier_level",
    "created_at",
    "extra",
    "user_id",
)


def iso(value: datetime | None) -> str | None:
    """A time as the format writes it (UTC, microseconds)."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


def header(embedder: str, dims: int, *, embeddings: bool) -> dict[str, Any]:
    """The header record of an export made with ``embedder`` (``dims`` dimensions)."""
    return {
        "type": "header",
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": iso(datetime.now(timezone.utc)),
        "embedder": {"name": embedder, "dims": dims},
        "embeddings": embeddings,
    }


def check_header(record: Any) -> dict[str, Any]:
    """``record`` if it is a header this package reads, else a clear error."""
    if not isinstance(record, dict) or record.get("type") != "header":
        raise ValidationError(
            "the first line of an export must be its header "
            f'({{"type": "header", "format": "{FORMAT_NAME}", ...}}), got {str(record)[:80]!r}.'
        )
    if record.get("format") != FORMAT_NAME:
        raise ValidationError(
            f"format {record.get('format')!r} is not {FORMAT_NAME!r}; "
            "import a file written by 'langmem-tiers export'."
        )
    version = record.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValidationError(f"header version must be a whole number >= 1, got {version!r}.")
    if version > FORMAT_VERSION:
        raise FormatVersionError(
            f"the export is format version {version}, newer than this package reads "
            f"({FORMAT_VERSION}); upgrade langmem-tiers to import it."
        )
    return record


def encode_line(record: dict[str, Any]) -> str:
    """One record as a line of the format (with its newline)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def decode_line(line: str, number: int) -> dict[str, Any]:
    """The record of line ``number`` (1-based, for the error message)."""
    try:
        record = json.loads(line)
    except ValueError as err:
        raise ValidationError(f"line {number} of the export is not JSON: {err}.") from err
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        raise ValidationError(
            f"line {number} of the export is not a record (an object with a 'type')."
        )
    return record
