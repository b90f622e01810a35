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

from datetime import datetime
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from langmem_tiers.config import Settings
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.store.scope import MEMORY_KINDS
from langmem_tiers.long_term.store.search.query import RankedItem
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.inspector import reads
from langmem_tiers.server.inspector.access import COOKIE, PageError, Viewer, viewer_for
from langmem_tiers.server.inspector.frame import (
    PAGE_SIZE,
    STATUSES,
    choice_param,
    clip,
    error_page,
    guarded,
    html_response,
    local_time,
    login_form,
    memory_link,
    number_param,
    param,
    scope_crumbs,
    scope_param,
    select,
    signed_in,
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
    link,
    page,
    query,
    table,
)
from langmem_tiers.server.inspector.memory_pages import memory_page, timeline_page
from langmem_tiers.server.inspector.session_page import session_page
from langmem_tiers.server.inspector.svg import line_chart, score_bars

__all__ = ["build_inspector_router"]


async def _scopes_page(request: Request, viewer: Viewer) -> Response:
    _, engine = state_of(request)
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
    return html_response(page("Scopes", body))


async def _scope_page(request: Request, viewer: Viewer) -> Response:
    store, engine = state_of(request)
    scope = scope_param(request, viewer)
    kind = choice_param(request, "kind", MEMORY_KINDS)
    status = choice_param(request, "status", STATUSES)
    since, until = time_param(request, "since"), time_param(request, "until")
    q = param(request, "q")
    min_score = number_param(request, "min_score", 0.0, 1.0)
    ranked_at = time_param(request, "now")
    limit = int(number_param(request, "limit", 1, 100) or 10)
    offset = int(number_param(request, "offset", 0, reads.MEMORY_CAP) or 0)
    parts: list[str] = [_search_form(scope, q, kind, min_score, limit, ranked_at)]
    if q:
        found = await reads.search(
            store, engine, scope, q, kind=kind, limit=limit, min_score=min_score, now=ranked_at
        )
        parts.append(_results(scope, found, store.settings))
    parts.append(await _growth_section(engine, scope))
    parts.append(await _sessions_section(store, engine, scope))
    parts.append(
        await _memories_section(
            request,
            engine,
            scope,
            kind=kind,
            status=status,
            since=since,
            until=until,
            offset=offset,
        )
    )
    nav = link(query(f"{PREFIX}/timeline", scope=scope), "Timeline and time travel")
    body = f"<p>{nav}</p>" + "".join(parts)
    return html_response(page(f"Scope {scope}", body, crumbs=scope_crumbs(scope)))


def _search_form(
    scope: str,
    q: str | None,
    kind: str | None,
    min_score: float | None,
    limit: int,
    ranked_at: datetime | None,
) -> str:
    """The search form, filled with the query the page was asked for."""
    return (
        '<h2 id="search">Search</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/scope" role="search">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + text_input("q", "query", q, size="40")
        + select("kind", "kind", MEMORY_KINDS, kind)
        + text_input(
            "min_score", "min_score (0-1)", min_score, "number", step="0.01", min="0", max="1"
        )
        + text_input("limit", "results", limit, "number", min="1", max="100")
        + text_input("now", "ranked at (UTC; empty: now)", local_time(ranked_at), "text", size="20")
        + '<button type="submit">Search</button></form>'
        '<p class="muted">A search counts as a use of what it finds (the frequency '
        "component), as every retrieval does.</p>"
    )


async def _growth_section(engine: MemoryEngine, scope: str) -> str:
    """The scope's memories by kind over time, as a step chart."""
    series = await reads.growth(engine, scope)
    return '<h2 id="growth">Growth</h2>' + line_chart(
        "Memories by kind over time",
        series,
        x_label="time (UTC)",
        y_label="memories",
        x_format="time",
        step=True,
    )


async def _sessions_section(store: TieredMemoryStore, engine: MemoryEngine, scope: str) -> str:
    """A link to each of the scope's sessions."""
    sessions = await reads.session_ids(store, engine, scope)
    return '<h2 id="sessions">Sessions</h2>' + (
        "<ul>"
        + "".join(
            f"<li>{link(query(f'{PREFIX}/session', scope=scope, id=s), s)}</li>" for s in sessions
        )
        + "</ul>"
        if sessions
        else "<p>No sessions.</p>"
    )


async def _memories_section(
    request: Request,
    engine: MemoryEngine,
    scope: str,
    *,
    kind: str | None,
    status: str | None,
    since: datetime | None,
    until: datetime | None,
    offset: int,
) -> str:
    """The filter form and one page of the scope's memories, with a link to the next page."""
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
    parts = [
        '<h2 id="memories">Memories</h2>'
        f'<form class="filters" method="get" action="{PREFIX}/scope">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        + select("kind", "kind", MEMORY_KINDS, kind)
        + select("status", "status", STATUSES, status)
        + text_input("since", "created from (UTC)", local_time(since), "datetime-local", step="1")
        + text_input("until", "created until (UTC)", local_time(until), "datetime-local", step="1")
        + '<button type="submit">Filter</button></form>'
    ]
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
                    memory_link(scope, m.id, m.key),
                    m.kind,
                    status_badge(m),
                    fmt_time(m.created_at),
                    validity(m),
                    m.version,
                    clip(m.content, 240),
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
    return "".join(parts)


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
                memory_link(scope, memory_id, item.key),
                item.namespace[-1] if item.namespace else "",
                Raw(
                    f'<span class="score" data-score="{float(item.score or 0.0)!r}">'
                    f"{float(item.score or 0.0):.3f}</span>"
                ),
                Raw(score_bars(item.scores, min_score=found.min_score) + _effects(settings, item)),
                clip(str(item.value.get("content", "")), 300),
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
                        memory_link(scope, lo.memory.id, lo.memory.key),
                        lo.memory.kind,
                        status_badge(lo.memory),
                        lo.reason,
                        score_bars(lo.scores, min_score=found.min_score),
                        clip(lo.memory.content, 300),
                    ]
                    for lo in found.left_out
                ),
                css="left-out",
            )
        )
    else:
        out += "<p>Nothing that matches was left out.</p>"
    return out


def build_inspector_router() -> APIRouter:
    """The inspector's routes (mount with ``prefix="/ui"``; see the module table)."""
    router = APIRouter(include_in_schema=False)
    for path, handler in (
        ("/", _scopes_page),
        ("/scope", _scope_page),
        ("/memory", memory_page),
        ("/timeline", timeline_page),
        ("/session", session_page),
    ):
        router.add_api_route(path, guarded(handler), methods=["GET"], response_class=HTMLResponse)

    @router.get("/login", response_class=HTMLResponse)
    async def sign_in_form() -> Response:
        return html_response(page("Sign in", login_form()))

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        key = (form.get("key") or [""])[0].strip()
        try:
            await viewer_for(request, key)
        except PageError as err:
            return error_page(err.status, err.message)
        return signed_in(f"{PREFIX}/", key)

    @router.get("/logout", response_class=HTMLResponse)
    async def logout() -> Response:
        response = html_response(
            page("Signed out", f"<p>Signed out. {link(PREFIX + '/login', 'Sign in')}</p>")
        )
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    return router
