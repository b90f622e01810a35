"""The inspector's pages (mounted under ``/ui``): :func:`build_inspector_router`.

=========================================  =============================================
page                                       shows
=========================================  =============================================
``/ui/``                                   every scope the key may see, counts, last event
``/ui/scope?scope=S``                      memories (kind, status, time filters), search
                                           with score bars and what was left out, growth
                                           by kind, the scope's sessions
``/ui/memory?scope=S&id=M``                a memory: versions on a time axis, what
                                           superseded what and why, provenance, events
``/ui/timeline?scope=S&at=T``              the event log, and memory as it was at T
``/ui/session?scope=S&id=X&turn=m12``      messages at tiers 1-3, archived ones, the
                                           context of a turn, prompt tokens per turn
``/ui/login`` / ``/ui/logout``             sign in with a key (a cookie) / sign out
=========================================  =============================================

Scopes and ids travel as query parameters (they may hold any character, ``/`` too).
How a browser passes its key: :mod:`~langmem_tiers.server.inspector.access`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any, get_args
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from langmem_tiers.config import ContextPolicy, Settings
from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    EmbeddingError,
    LangmemTiersError,
    NotFoundError,
    ValidationError,
)
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.models import Event, Memory
from langmem_tiers.long_term.store.records import parse_timestamp
from langmem_tiers.long_term.store.scope import MEMORY_KINDS
from langmem_tiers.long_term.store.search.query import RankedItem
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.inspector import reads
from langmem_tiers.server.inspector.access import COOKIE, PageError, Viewer, key_of, viewer_for
from langmem_tiers.server.inspector.html import (
    CSS,
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
from langmem_tiers.server.inspector.svg import intervals_chart, line_chart, score_bars

__all__ = ["build_inspector_router"]

logger = logging.getLogger("langmem_tiers.server.inspector")

STATUSES = ("active", "superseded", "decayed", "deleted", "compressed")
PAGE_SIZE = 200


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


_SLIDER_JS = """
(function () {
  var slider = document.getElementById('at-slider'), field = document.getElementById('at');
  if (!slider || !field) return;
  var times = JSON.parse(slider.getAttribute('data-times'));
  var out = document.getElementById('at-slider-value');
  slider.addEventListener('input', function () {
    field.value = times[Number(slider.value)];
    out.textContent = field.value;
  });
})();
"""

# The pages load nothing from elsewhere, are never framed, and run no script or style but
# their own (by hash): stored text that slipped through escaping still could not run.
_SECURITY_HEADERS = {
    "Content-Security-Policy": f"default-src 'none'; style-src {_digest(CSS)}; "
    f"script-src {_digest(_SLIDER_JS)}; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[..., Awaitable[Response]]


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=_SECURITY_HEADERS)


def _error_page(status: int, message: str) -> HTMLResponse:
    titles = {
        401: "Sign in",
        403: "Forbidden",
        404: "Not found",
        422: "Bad input",
        503: "Unavailable",
    }
    title = f"{status} {titles.get(status, 'Error')}"
    body = f'<p role="alert" id="error">{esc(message)}</p>'
    if status == 401:
        body += _login_form()
    return _html(page(title, body), status)


def _login_form() -> str:
    return (
        f'<form class="filters" method="post" action="{PREFIX}/login">'
        '<label>API key <input type="password" name="key" autocomplete="off" required '
        'autofocus size="40"></label><button type="submit">Sign in</button></form>'
        '<p class="muted">Create a key with <code>langmem-tiers keys create --scope ID</code> '
        "(or <code>--admin</code>); <code>langmem-tiers inspect</code> prints a link that "
        "signs in.</p>"
    )


def _state(request: Request) -> tuple[TieredMemoryStore, MemoryEngine]:
    state = request.app.state.langmem_tiers
    if state.engine is None or state.store is None:
        raise PageError(503, "The server is not started yet.")
    return state.store, state.engine


def _guarded(handler: Handler) -> Handler:
    """Sign-in by ``?key=``, a viewer for the handler, errors as pages."""

    async def run(request: Request) -> Response:
        try:
            given = request.query_params.get("key")
            if given is not None:
                await viewer_for(request, given)  # 401 for a bad key
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "key"]
                target = request.url.path + ("?" + urlencode(rest) if rest else "")
                return _signed_in(target, given)
            viewer = await viewer_for(request, key_of(request))
            return await handler(request, viewer)
        except PageError as err:
            return _error_page(err.status, err.message)
        except (ValidationError, ConfigurationError) as err:
            # The public APIs validate their input: a bad id or time names the field.
            return _error_page(422, str(err))
        except NotFoundError as err:
            return _error_page(404, str(err))
        except (BackendError, EmbeddingError) as err:
            logger.error("inspector page %s: %s", request.url.path, err)
            return _error_page(503, "The database does not answer; try again shortly.")

    # Not functools.wraps: FastAPI would read the handler's parameters as the route's.
    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


def _signed_in(target: str, key: str) -> Response:
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", path=PREFIX)
    return response


def _scope_of(request: Request, viewer: Viewer) -> str:
    scope = request.query_params.get("scope")
    if not scope:
        raise PageError(
            422, "scope is missing: add ?scope=<agent or user id> (see the scopes page)."
        )
    if not viewer.may_see(scope):
        raise PageError(
            403,
            "This key is bound to another scope and cannot see this one; "
            "sign in with that scope's key or an admin key.",
        )
    return scope


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value.strip() if value is not None and value.strip() else None


def _time_param(request: Request, name: str) -> datetime | None:
    text = _param(request, name)
    if text is None:
        return None
    try:
        value = parse_timestamp(text, field=name)
    except (LangmemTiersError, ValueError) as err:
        raise PageError(
            422, f"{name} must be an ISO-8601 time such as 2026-03-01T12:00:00, got {text!r}."
        ) from err
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _number(request: Request, name: str, low: float, high: float) -> float | None:
    text = _param(request, name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise PageError(422, f"{name} must be a number from {low:g} to {high:g}, got {text!r}.")
    return value


def _choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = _param(request, name)
    if value is not None and value not in allowed:
        raise PageError(422, f"{name} must be one of {', '.join(allowed)}, got {value!r}.")
    return value


def _status(memory: Memory) -> Raw:
    return Raw(f'<span class="status-{attr(memory.status)}">{esc(memory.status)}</span>')


def _memory_link(scope: str, memory_id: str, text: object) -> Raw:
    return link(query(f"{PREFIX}/memory", scope=scope, id=memory_id), text)


def _scope_crumbs(scope: str) -> list[tuple[str, str]]:
    return [(query(f"{PREFIX}/scope", scope=scope), scope)]


def _select(name: str, label: str, options: tuple[str, ...], chosen: str | None) -> str:
    opts = ['<option value="">any</option>'] + [
        f'<option value="{attr(o)}"{" selected" if o == chosen else ""}>{esc(o)}</option>'
        for o in options
    ]
    return f'<label>{esc(label)} <select name="{attr(name)}">{"".join(opts)}</select></label>'


def _input(name: str, label: str, value: object, kind: str = "text", **more: str) -> str:
    extra = "".join(f' {k}="{attr(v)}"' for k, v in more.items())
    return (
        f'<label>{esc(label)} <input type="{kind}" name="{attr(name)}" '
        f'value="{attr("" if value is None else value)}"{extra}></label>'
    )


def _local(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


# -- pages -------------------------------------------------------------------------------


async def _scopes_page(request: Request, viewer: Viewer) -> Response:
    _, engine = _state(request)
    if viewer.admin:
        scopes = [a.scope for a in await engine.aagents()]
    else:
        assert viewer.scope is not None
        scopes = [viewer.scope]
    rows = []
    for scope in scopes:
        info = await reads.scope_overview(engine, scope)
        by_kind = {k: sum(v.values()) for k, v in info.counts.items()}
        statuses: dict[str, int] = {}
        for counts in info.counts.values():
            for status, n in counts.items():
                statuses[status] = statuses.get(status, 0) + n
        rows.append(
            [
                link(query(f"{PREFIX}/scope", scope=scope), scope),
                *(by_kind.get(k, 0) for k in MEMORY_KINDS),
                ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())),
                info.total,
                info.events,
                fmt_time(info.last_activity),
            ]
        )
    who = "an admin key: every scope" if viewer.admin else f"the key of scope {viewer.scope}"
    body = f'<p class="muted">Signed in with {esc(who)}.</p>' + table(
        ["scope", *MEMORY_KINDS, "by status", "total", "events", "last activity (UTC)"],
        rows,
        css="scopes",
    )
    if not rows:
        body += "<p>No memories yet.</p>"
    return _html(page("Scopes", body))


async def _scope_page(request: Request, viewer: Viewer) -> Response:
    store, engine = _state(request)
    scope = _scope_of(request, viewer)
    kind = _choice(request, "kind", MEMORY_KINDS)
    status = _choice(request, "status", STATUSES)
    since, until = _time_param(request, "since"), _time_param(request, "until")
    q = _param(request, "q")
    min_score = _number(request, "min_score", 0.0, 1.0)
    ranked_at = _time_param(request, "now")
    limit = int(_number(request, "limit", 1, 100) or 10)
    offset = int(_number(request, "offset", 0, reads.MEMORY_CAP) or 0)
    parts: list[str] = []
    # Search.
    parts.append(
        '<h2 id="search">Search</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/scope" role="search">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + _input("q", "query", q, size="40")
        + _select("kind", "kind", MEMORY_KINDS, kind)
        + _input("min_score", "min_score (0-1)", min_score, "number", step="0.01", min="0", max="1")
        + _input("limit", "results", limit, "number", min="1", max="100")
        + _input("now", "ranked at (UTC; empty: now)", _local(ranked_at), "text", size="20")
        + '<button type="submit">Search</button></form>'
        '<p class="muted">A search counts as a use of what it finds (the frequency '
        "component), as every retrieval does.</p>"
    )
    if q:
        found = await reads.search(
            store, engine, scope, q, kind=kind, limit=limit, min_score=min_score, now=ranked_at
        )
        parts.append(_results(scope, found, store.settings))
    # Growth and sessions.
    series = await reads.growth(engine, scope)
    parts.append(
        '<h2 id="growth">Growth</h2>'
        + line_chart(
            "Memories by kind over time",
            series,
            x_label="time (UTC)",
            y_label="memories",
            x_format="time",
            step=True,
        )
    )
    sessions = await reads.session_ids(store, engine, scope)
    parts.append('<h2 id="sessions">Sessions</h2>')
    parts.append(
        "<ul>"
        + "".join(
            f"<li>{link(query(f'{PREFIX}/session', scope=scope, id=s), s)}</li>" for s in sessions
        )
        + "</ul>"
        if sessions
        else "<p>No sessions.</p>"
    )
    # Memories.
    wanted_status = [status] if status else None
    listed = await engine.amemories(
        scope, kinds=kind, statuses=wanted_status, limit=reads.MEMORY_CAP
    )
    capped = len(listed) == reads.MEMORY_CAP
    chosen = [
        m
        for m in listed
        if (since is None or m.created_at >= since) and (until is None or m.created_at <= until)
    ]
    shown = chosen[offset : offset + PAGE_SIZE]
    parts.append(
        '<h2 id="memories">Memories</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/scope">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + _select("kind", "kind", MEMORY_KINDS, kind)
        + _select("status", "status", STATUSES, status)
        + _input("since", "created from (UTC)", _local(since), "datetime-local", step="1")
        + _input("until", "created until (UTC)", _local(until), "datetime-local", step="1")
        + '<button type="submit">Filter</button></form>'
    )
    note = f"{len(chosen)} memories"
    if capped:
        note += f" (the first {reads.MEMORY_CAP:,} read)"
    if len(chosen) > PAGE_SIZE:
        note += f"; showing {offset + 1}-{offset + len(shown)}"
    parts.append(
        table(
            ["memory", "kind", "status", "created (UTC)", "valid", "v", "content"],
            (
                [
                    _memory_link(scope, m.id, m.key),
                    m.kind,
                    _status(m),
                    fmt_time(m.created_at),
                    f"{fmt_time(m.valid_from)} → {fmt_time(m.valid_until) or 'open'}",
                    m.version,
                    _clip(m.content, 240),
                ]
                for m in shown
            ),
            caption=note,
            css="memories",
        )
    )
    if offset + PAGE_SIZE < len(chosen):
        more = dict(request.query_params)
        more["offset"] = str(offset + PAGE_SIZE)
        parts.append(str(link(query(f"{PREFIX}/scope", **more), "Next page")))
    nav = link(query(f"{PREFIX}/timeline", scope=scope), "Timeline and time travel")
    body = f"<p>{nav}</p>" + "".join(parts)
    return _html(page(f"Scope {scope}", body, crumbs=_scope_crumbs(scope)))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _effects(settings: Settings, item: RankedItem) -> Raw:
    ratio = reads.other_effects(settings, float(item.score or 0.0), item.scores)
    if ratio is None:
        return Raw("")
    note = "none" if abs(ratio - 1.0) < 1e-9 else f"×{ratio:.3f}"
    return Raw(
        f'<div class="effects muted" data-effects="{ratio!r}" title="author, time and '
        f'when-questions: the score over its weighted components">other effects: {esc(note)}</div>'
    )


def _results(scope: str, found: reads.SearchView, settings: Settings) -> str:
    rows = []
    for rank, item in enumerate(found.results, 1):
        memory_id = reads.memory_id_of(item)
        rows.append(
            [
                rank,
                _memory_link(scope, memory_id, item.key),
                item.namespace[-1] if item.namespace else "",
                Raw(
                    f'<span class="score" data-score="{float(item.score or 0.0)!r}">'
                    f"{float(item.score or 0.0):.3f}</span>"
                ),
                Raw(score_bars(item.scores, min_score=found.min_score) + _effects(settings, item)),
                _clip(str(item.value.get("content", "")), 300),
            ]
        )
    floor = "none" if found.min_score is None else f"{found.min_score:g}"
    at = "now" if found.now is None else found.now.isoformat()
    out = str(
        table(
            ["#", "memory", "kind", "score", "components", "content"],
            rows,
            caption=f"{len(rows)} results for {found.query!r}; min_score {floor}; ranked at {at}",
            css="results",
            row_ids=[f"r-{reads.memory_id_of(i)}" for i in found.results],
        )
    )
    if not rows:
        out += "<p>No result.</p>"
    out += '<h3 id="left-out">Left out, and why</h3>'
    if found.left_out:
        out += str(
            table(
                ["memory", "kind", "status", "why", "components", "content"],
                (
                    [
                        _memory_link(scope, lo.memory.id, lo.memory.key),
                        lo.memory.kind,
                        _status(lo.memory),
                        lo.reason,
                        score_bars(lo.scores, min_score=found.min_score),
                        _clip(lo.memory.content, 300),
                    ]
                    for lo in found.left_out
                ),
                css="left-out",
            )
        )
    else:
        out += "<p>Nothing that matches was left out.</p>"
    return out


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


async def _memory_page(request: Request, viewer: Viewer) -> Response:
    _, engine = _state(request)
    scope = _scope_of(request, viewer)
    memory_id = _param(request, "id")
    if memory_id is None:
        raise PageError(
            422, "id is missing: add &id=<memory id> (the scope page links every memory)."
        )
    memory = await engine.aget(scope, memory_id)
    if memory is None:
        raise PageError(404, f"This scope has no memory with id {memory_id!r}.")
    now = datetime.now(timezone.utc)
    parts: list[str] = [
        table(
            ["field", "value"],
            [
                ["id", memory.id],
                ["key", memory.key],
                ["kind", memory.kind],
                ["status", _status(memory)],
                ["content", Raw(f"<pre>{esc(memory.content)}</pre>")],
                ["version", memory.version],
                ["confidence", f"{memory.confidence:.3f}"],
                ["importance", f"{memory.importance:.3f}"],
                [
                    "valid",
                    f"{fmt_time(memory.valid_from)} → {fmt_time(memory.valid_until) or 'open'}",
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
    ]
    # Provenance: what it came from and what it links to.
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
            links = ", ".join(str(_memory_link(scope, i, i)) for i in ids[:200])
            more = f" and {len(ids) - 200} more" if len(ids) > 200 else ""
            prov.append([name, Raw(links + esc(more))])
    parts.append('<h2 id="provenance">Provenance and links</h2>')
    parts.append(
        str(table(["what", "value"], prov, css="provenance")) if prov else "<p>None recorded.</p>"
    )
    # Versions on a time axis.
    events = await engine.atimeline(scope, memory_id=memory.id, limit=10_000)
    if memory.kind == "semantic":
        versions = await engine.aevolution(scope, memory.id)
        spans = [(f"v{v.version}", v.valid_from or v.created_at, v.valid_until) for v in versions]
        parts.append('<h2 id="versions">Versions</h2>')
        parts.append(intervals_chart("Validity of each version", spans, now=now))
        parts.append(
            table(
                ["version", "valid from", "valid until", "why", "confidence", "content"],
                (
                    [
                        v.version,
                        fmt_time(v.valid_from),
                        fmt_time(v.valid_until) or "open",
                        v.reason or "",
                        f"{v.confidence:.3f}",
                        _clip(v.content, 300),
                    ]
                    for v in versions
                ),
                css="versions",
            )
        )
    # What superseded what, and why (the conflict record of the events).
    conflicts = [
        e
        for e in events
        if e.type in ("memory.superseded", "memory.merged", "memory.conflict_noted")
    ]
    parts.append('<h2 id="conflicts">Superseded, merged, conflicts</h2>')
    if conflicts:
        parts.append(
            table(
                ["when (UTC)", "event", "by / with", "why", "confidence"],
                (
                    [
                        fmt_time(e.at),
                        e.type,
                        Raw(
                            ", ".join(
                                str(_memory_link(scope, i, i))
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
        )
    else:
        parts.append("<p>None.</p>")
    parts.append('<h2 id="events">Events</h2>')
    parts.append(_events_table(scope, events))
    parts.append('<h2 id="value">Stored value</h2>')
    parts.append(json_block(memory.value))
    crumbs = [
        *_scope_crumbs(scope),
        (query(f"{PREFIX}/memory", scope=scope, id=memory.id), memory.key),
    ]
    return _html(page(f"Memory {memory.key}", "".join(map(str, parts)), crumbs=crumbs))


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
            _memory_link(scope, e.memory_id, e.key),
            e.actor or "",
            _clip(", ".join(f"{k}={v}" for k, v in e.metadata.items()), 200),
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


async def _timeline_page(request: Request, viewer: Viewer) -> Response:
    _, engine = _state(request)
    scope = _scope_of(request, viewer)
    at = _time_param(request, "at")
    since, until = _time_param(request, "since"), _time_param(request, "until")
    events = await engine.atimeline(scope, since=since, until=until, limit=10_000)
    times = [_local(e.at) + f".{e.at.microsecond:06d}" for e in events]
    parts: list[str] = [
        '<h2 id="travel">Time travel</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/timeline#replay" id="travel-form">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + _input(
            "at",
            "memory as it was at (UTC)",
            _local(at) + (f".{at.microsecond:06d}" if at else ""),
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
                        _memory_link(scope, m.id, m.key),
                        m.kind,
                        _status(m),
                        m.version,
                        f"{fmt_time(m.valid_from)} → {fmt_time(m.valid_until) or 'open'}",
                        _clip(m.content, 300),
                    ]
                    for m in replayed
                ),
                caption=f"{len(replayed)} memories, rebuilt from the event log",
                css="replay",
                row_ids=[f"replay-{m.id}" for m in replayed],
            )
        )
    parts.append(f'<h2 id="timeline">Events</h2><p class="muted">{len(events)} events</p>')
    parts.append(_events_table(scope, events, travel=True))
    parts.append(f"<script>{_SLIDER_JS}</script>")
    crumbs = [*_scope_crumbs(scope), (query(f"{PREFIX}/timeline", scope=scope), "timeline")]
    return _html(page(f"Timeline of {scope}", "".join(map(str, parts)), crumbs=crumbs))


async def _session_page(request: Request, viewer: Viewer) -> Response:
    store, engine = _state(request)
    scope = _scope_of(request, viewer)
    session_id = _param(request, "id")
    if session_id is None:
        raise PageError(422, "id is missing: add &id=<session id> (the scope page lists them).")
    policy = _choice(request, "policy", get_args(ContextPolicy))
    budget = _number(request, "budget", 1, 10_000_000)
    soft = _number(request, "soft_budget", 1, 10_000_000)
    view = await reads.session_view(
        store,
        engine,
        scope,
        session_id,
        budget=int(budget) if budget else None,
        soft_budget=int(soft) if soft else None,
        policy=policy,  # type: ignore[arg-type]
    )
    if view is None:
        raise PageError(404, f"This scope has no session {session_id!r}.")
    turns = [row.record.id for row in view.rows if row.record.role == "human"]
    turn = _param(request, "turn") or (turns[-1] if turns else None)
    b = view.builder
    parts: list[str] = [
        f'<form class="filters" method="get" action="{PREFIX}/session#context">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        f'<input type="hidden" name="id" value="{attr(session_id)}">'
        '<label>turn <select name="turn" id="turn">'
        + "".join(
            f'<option value="{attr(t)}"{" selected" if t == turn else ""}>{esc(t)}</option>'
            for t in turns
        )
        + "</select></label>"
        + _select("policy", "context policy", get_args(ContextPolicy), b.policy)
        + _input("budget", "token budget", b.budget, "number", min="1")
        + _input("soft_budget", "soft budget", b.soft_budget, "number", min="1")
        + '<button type="submit">Show context</button></form>'
        '<p class="muted">The session does not record the budget it ran with: the defaults '
        "are the server's settings (LANGMEM_TIERS_CONTEXT_TOKEN_LIMIT, ..._CONTEXT_POLICY, "
        "..._CONTEXT_SOFT_BUDGET).</p>"
    ]
    # Messages at every tier.
    rows = []
    for row in view.rows:
        r = row.record
        archived = (
            Raw(
                f"{_memory_link(scope, row.archived.id, 'archived')} {esc(fmt_time(row.archived.created_at))}"
            )
            if row.archived is not None
            else "in window"
        )
        shown_id: object = r.id
        if r.role == "human":
            here = query(
                f"{PREFIX}/session",
                scope=scope,
                id=session_id,
                turn=r.id,
                policy=policy,
                budget=_param(request, "budget"),
                soft_budget=_param(request, "soft_budget"),
            )
            shown_id = link(here + "#context", r.id, title="the context of this turn")
        rows.append(
            [
                shown_id,
                r.role,
                fmt_time(r.created_at),
                r.required_tier_level,
                Raw(f"<pre>{esc(r.tier1 or '')}</pre>"),
                row.tokens[0],
                Raw(f"<pre>{esc(r.tier2 or '')}</pre>"),
                row.tokens[1],
                Raw(f"<pre>{esc(r.text)}</pre>"),
                row.tokens[2],
                archived,
            ]
        )
    parts.append(
        '<h2 id="messages">Messages at tiers 1, 2 and 3</h2>'
        + table(
            [
                "id",
                "role",
                "at (UTC)",
                "required tier",
                "tier 1",
                "tok",
                "tier 2",
                "tok",
                "tier 3 (raw)",
                "tok",
                "where",
            ],
            rows,
            css="messages",
            row_ids=[f"msg-{row.record.id}" for row in view.rows],
        )
    )
    chosen = await reads.turn_context(store, view, scope, turn) if turn else None
    if chosen is not None:
        parts.append(
            f'<h2 id="context">Context given for turn {esc(chosen.turn)}</h2>'
            f'<p><span id="context-tokens" data-tokens="{chosen.tokens}">{chosen.tokens:,}</span>'
            f" prompt tokens (the raw history up to this turn: {chosen.raw_tokens:,}).</p>"
            '<div class="context card">'
            + "".join(
                f'<div class="msg {attr(m.type)}"><div class="role">{esc(m.type)}'
                f"{' · ' + esc(m.id) if m.id else ''}</div><pre>{esc(m.text)}</pre></div>"
                for m in chosen.messages
            )
            + "</div>"
        )
    if view.summaries:
        parts.append(
            '<h2 id="summaries">Summaries made of this session</h2>'
            + table(
                ["memory", "status", "created (UTC)", "covers", "content"],
                (
                    [
                        _memory_link(scope, m.id, m.key),
                        _status(m),
                        fmt_time(m.created_at),
                        f"{len(m.value.get('source_message_ids') or [])} messages",
                        _clip(m.content, 300),
                    ]
                    for m in view.summaries
                ),
                css="summaries",
            )
        )
    # Prompt tokens per turn against the raw history.
    prompt: list[tuple[float, float]] = []
    raw: list[tuple[float, float]] = []
    for n, t in enumerate(turns[:300], 1):
        ctx = await reads.turn_context(store, view, scope, t, with_memories=False)
        if ctx is not None:
            prompt.append((float(n), float(ctx.tokens)))
            raw.append((float(n), float(ctx.raw_tokens)))
    parts.append(
        '<h2 id="tokens">Prompt tokens per turn</h2>'
        + line_chart(
            "Window tokens per turn against the raw history",
            {"tiered window": prompt, "raw history": raw},
            x_label="user turn",
            y_label="tokens",
        )
        + '<p class="muted">The window part of each prompt (without long-term memories) '
        "under the policy and budget above.</p>"
    )
    crumbs = [
        *_scope_crumbs(scope),
        (query(f"{PREFIX}/session", scope=scope, id=session_id), session_id),
    ]
    return _html(page(f"Session {session_id}", "".join(map(str, parts)), crumbs=crumbs))


def build_inspector_router() -> APIRouter:
    """The inspector's routes (mount with ``prefix="/ui"``; see the module table)."""
    router = APIRouter(include_in_schema=False)
    for path, handler in (
        ("/", _scopes_page),
        ("/scope", _scope_page),
        ("/memory", _memory_page),
        ("/timeline", _timeline_page),
        ("/session", _session_page),
    ):
        router.add_api_route(path, _guarded(handler), methods=["GET"], response_class=HTMLResponse)

    @router.get("/login", response_class=HTMLResponse)
    async def login_form() -> Response:
        return _html(page("Sign in", _login_form()))

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = (form.get("key") or [""])[0].strip()
        try:
            await viewer_for(request, key)
        except PageError as err:
            return _error_page(err.status, err.message)
        return _signed_in(f"{PREFIX}/", key)

    @router.get("/logout", response_class=HTMLResponse)
    async def logout() -> Response:
        response = _html(
            page("Signed out", f"<p>Signed out. {link(PREFIX + '/login', 'Sign in')}</p>")
        )
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    return router
