"""The pages of one memory (``/ui/memory``) and of a scope's time (``/ui/timeline``).

The memory page: its fields, provenance and links (the episodes a summary came from, the
session and messages of a fact, what superseded it), its versions on a time axis, the
conflict record (what superseded or merged it and why) and its events. The timeline: the
scope's event log and memory as it was at an instant (``replay``), chosen by time or with a
slider over the events.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.models import Event, Memory
from langmem_tiers.server.inspector.access import PageError, Viewer
from langmem_tiers.server.inspector.frame import (
    SLIDER_JS,
    clip,
    html_response,
    local_time,
    memory_link,
    param,
    scope_crumbs,
    scope_param,
    state_of,
    status_badge,
    text_input,
    time_param,
    validity,
)
from langmem_tiers.server.inspector.html import (
    PREFIX,
    Raw,
    attr,
    esc,
    fmt_time,
    json_block,
    link,
    page,
    query,
    table,
)
from langmem_tiers.server.inspector.svg import intervals_chart

__all__ = ["EVENT_ROWS", "memory_page", "timeline_page"]

EVENT_ROWS = 1_000
"""Events the timeline lists (the slider moves through every event read)."""


_LINKED = (
    "superseded_by",
    "supersedes",
    "merged_into",
    "merged_from",
    "source_episodic_ids",
    "consolidated_into_id",
    "compressed_into",
    "conflicts_with",
)


def _ids(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


async def memory_page(request: Request, viewer: Viewer) -> Response:
    _, engine = state_of(request)
    scope = scope_param(request, viewer)
    memory_id = param(request, "id")
    if memory_id is None:
        raise PageError(
            422, "id is missing: add &id=<memory id> (the scope page links every memory)."
        )
    memory = await engine.aget(scope, memory_id)
    if memory is None:
        raise PageError(404, f"This scope has no memory with id {memory_id!r}.")
    now = datetime.now(timezone.utc)
    parts: list[str] = [_fields_table(memory), _provenance_section(memory, scope)]
    events = await engine.atimeline(scope, memory_id=memory.id, limit=10_000)
    if memory.kind == "semantic":
        parts.append(await _versions_section(engine, scope, memory, now))
    parts.append(_conflicts_section(scope, events))
    parts.append('<h2 id="events">Events</h2>')
    parts.append(_events_table(scope, events))
    parts.append('<h2 id="value">Stored value</h2>')
    parts.append(json_block(memory.value))
    crumbs = [
        *scope_crumbs(scope),
        (query(f"{PREFIX}/memory", scope=scope, id=memory.id), memory.key),
    ]
    return html_response(page(f"Memory {memory.key}", "".join(map(str, parts)), crumbs=crumbs))


def _fields_table(memory: Memory) -> str:
    """The memory's own fields: identity, content, scores, validity and use."""
    return table(
        ["field", "value"],
        [
            ["id", memory.id],
            ["key", memory.key],
            ["kind", memory.kind],
            ["status", status_badge(memory)],
            ["content", Raw(f"<pre>{esc(memory.content)}</pre>")],
            ["version", memory.version],
            ["confidence", f"{memory.confidence:.3f}"],
            ["importance", f"{memory.importance:.3f}"],
            [
                "valid",
                validity(memory),
            ],
            [
                "created / updated (UTC)",
                f"{fmt_time(memory.created_at)} / {fmt_time(memory.updated_at)}",
            ],
            [
                "used",
                f"{memory.access_count} times, last {fmt_time(memory.last_accessed_at) or 'never'}",
            ],
        ],
        css="memory",
    )


def _provenance_section(memory: Memory, scope: str) -> str:
    """What the memory came from (session, messages, speaker) and the memories it links to."""
    prov: list[list[object]] = []
    for name in (
        "session_id",
        "source_session_id",
        "source_message_ids",
        "message_id",
        "speaker",
        "actor",
    ):
        value = memory.value.get(name, getattr(memory, name, None))
        if value:
            prov.append([name, ", ".join(map(str, value)) if isinstance(value, list) else value])
    session = (
        memory.session_id or memory.value.get("session_id") or memory.value.get("source_session_id")
    )
    if isinstance(session, str):
        prov.append(["session", link(query(f"{PREFIX}/session", scope=scope, id=session), session)])
    for name in _LINKED:
        ids = _ids(memory.value.get(name, getattr(memory, name, None)))
        if ids:
            links = ", ".join(str(memory_link(scope, i, i)) for i in ids[:200])
            more = f" and {len(ids) - 200} more" if len(ids) > 200 else ""
            prov.append([name, Raw(links + esc(more))])
    return '<h2 id="provenance">Provenance and links</h2>' + (
        str(table(["what", "value"], prov, css="provenance")) if prov else "<p>None recorded.</p>"
    )


async def _versions_section(engine: MemoryEngine, scope: str, memory: Memory, now: datetime) -> str:
    """A semantic memory's versions on a time axis, and as a table with why each changed."""
    versions = await engine.aevolution(scope, memory.id)
    spans = [(f"v{v.version}", v.valid_from or v.created_at, v.valid_until) for v in versions]
    return (
        '<h2 id="versions">Versions</h2>'
        + intervals_chart("Validity of each version", spans, now=now)
        + table(
            ["version", "valid from", "valid until", "why", "confidence", "content"],
            (
                [
                    v.version,
                    fmt_time(v.valid_from),
                    fmt_time(v.valid_until) or "open",
                    v.reason or "",
                    f"{v.confidence:.3f}",
                    clip(v.content, 300),
                ]
                for v in versions
            ),
            css="versions",
        )
    )


def _conflicts_section(scope: str, events: list[Event]) -> str:
    """What superseded or merged the memory and why (the conflict record of its events)."""
    conflicts = [
        e
        for e in events
        if e.type in ("memory.superseded", "memory.merged", "memory.conflict_noted")
    ]
    head = '<h2 id="conflicts">Superseded, merged, conflicts</h2>'
    if not conflicts:
        return head + "<p>None.</p>"
    return head + table(
        ["when (UTC)", "event", "by / with", "why", "confidence"],
        (
            [
                fmt_time(e.at),
                e.type,
                Raw(
                    ", ".join(
                        str(memory_link(scope, i, i))
                        for i in _ids(
                            e.metadata.get("superseded_by")
                            or e.metadata.get("merged_into")
                            or e.metadata.get("with")
                        )
                    )
                ),
                e.metadata.get("explanation") or e.metadata.get("reason") or "",
                e.metadata.get("confidence", ""),
            ]
            for e in conflicts
        ),
        css="conflicts",
    )


def _events_table(scope: str, events: list[Event], *, travel: bool = False) -> str:
    head = ["seq", "when (UTC)", "event", "kind", "memory", "actor", "details"]
    if travel:
        head.append("time travel")
    rows = []
    for e in events:
        row: list[object] = [
            e.seq,
            fmt_time(e.at),
            e.type,
            e.kind or "",
            memory_link(scope, e.memory_id, e.key),
            e.actor or "",
            clip(", ".join(f"{k}={v}" for k, v in e.metadata.items()), 200),
        ]
        if travel:
            row.append(
                link(
                    query(f"{PREFIX}/timeline", scope=scope, at=e.at.isoformat()) + "#replay",
                    "memory after this",
                )
            )
        rows.append(row)
    return str(table(head, rows, css="events")) if rows else "<p>No events.</p>"


async def timeline_page(request: Request, viewer: Viewer) -> Response:
    _, engine = state_of(request)
    scope = scope_param(request, viewer)
    at = time_param(request, "at")
    since, until = time_param(request, "since"), time_param(request, "until")
    events = await engine.atimeline(scope, since=since, until=until, limit=10_000)
    times = [local_time(e.at) + f".{e.at.microsecond:06d}" for e in events]
    parts: list[str] = [
        '<h2 id="travel">Time travel</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/timeline#replay" id="travel-form">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + text_input(
            "at",
            "memory as it was at (UTC)",
            local_time(at) + (f".{at.microsecond:06d}" if at else ""),
            "text",
            id="at",
            placeholder="2026-03-01T12:00:00",
            size="28",
        )
    ]
    if events:
        position = len(events) - 1
        if at is not None:
            position = max(0, sum(1 for e in events if e.at <= at) - 1)
        parts.append(
            f'<label>or move through the events <input type="range" id="at-slider" min="0" '
            f'max="{len(events) - 1}" value="{position}" data-times="{attr(json.dumps(times))}" '
            f'aria-describedby="at-slider-value"></label>'
            f'<output id="at-slider-value">{esc(times[position])}</output>'
        )
    parts.append('<button type="submit" id="replay-button">Show memory then</button></form>')
    if at is not None:
        replayed = await engine.areplay(scope, at)
        parts.append(
            f'<h2 id="replay">Memory at {esc(at.isoformat())}</h2>'
            + table(
                ["memory", "kind", "status", "version", "valid", "content"],
                (
                    [
                        memory_link(scope, m.id, m.key),
                        m.kind,
                        status_badge(m),
                        m.version,
                        validity(m),
                        clip(m.content, 300),
                    ]
                    for m in replayed
                ),
                caption=f"{len(replayed)} memories, rebuilt from the event log",
                css="replay",
                row_ids=[f"replay-{m.id}" for m in replayed],
            )
        )
    listed = events[-EVENT_ROWS:]
    note = f"{len(events)} events" + (
        f"; the last {EVENT_ROWS:,} listed (narrow with since / until)"
        if len(events) > EVENT_ROWS
        else ""
    )
    parts.append(
        f'<h2 id="timeline">Events</h2><form class="filters" method="get" '
        f'action="{PREFIX}/timeline#timeline">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + text_input("since", "from (UTC)", local_time(since), "datetime-local", step="1")
        + text_input("until", "until (UTC)", local_time(until), "datetime-local", step="1")
        + '<button type="submit">Filter</button></form>'
        f'<p class="muted">{esc(note)}</p>'
    )
    parts.append(_events_table(scope, listed, travel=True))
    parts.append(f"<script>{SLIDER_JS}</script>")
    crumbs = [*scope_crumbs(scope), (query(f"{PREFIX}/timeline", scope=scope), "timeline")]
    return html_response(page(f"Timeline of {scope}", "".join(map(str, parts)), crumbs=crumbs))
