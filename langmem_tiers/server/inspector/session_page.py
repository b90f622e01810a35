"""The page of one session (``/ui/session``): its messages at tiers 1, 2 and 3 with their
token counts, where each went (archived to episodic memory, when), the summaries made of
it, the context a chosen turn was given (rebuilt with the short-term context builder under
a policy and budget the page sets), and the window's tokens per turn against the raw history.
"""

from __future__ import annotations

from typing import get_args

from fastapi import Request
from fastapi.responses import Response

from langmem_tiers.config import ContextPolicy
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.inspector import reads
from langmem_tiers.server.inspector.access import PageError, Viewer
from langmem_tiers.server.inspector.frame import (
    choice_param,
    clip,
    html_response,
    memory_link,
    number_param,
    param,
    scope_crumbs,
    scope_param,
    select,
    state_of,
    status_badge,
    text_input,
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
from langmem_tiers.server.inspector.svg import line_chart

__all__ = ["session_page"]


async def session_page(request: Request, viewer: Viewer) -> Response:
    store, engine = state_of(request)
    scope = scope_param(request, viewer)
    session_id = param(request, "id")
    if session_id is None:
        raise PageError(422, "id is missing: add &id=<session id> (the scope page lists them).")
    policy = choice_param(request, "policy", get_args(ContextPolicy))
    budget = number_param(request, "budget", 1, 10_000_000)
    soft = number_param(request, "soft_budget", 1, 10_000_000)
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
    turn = param(request, "turn") or (turns[-1] if turns else None)
    parts: list[str] = [
        _context_form(view, scope, session_id, turns, turn),
        _messages_section(request, view, scope, session_id, policy),
    ]
    chosen = await reads.turn_context(store, view, scope, turn) if turn else None
    if chosen is not None:
        parts.append(_context_section(chosen))
    if view.summaries:
        parts.append(_summaries_section(view, scope))
    parts.append(await _tokens_section(store, view, scope, turns))
    crumbs = [
        *scope_crumbs(scope),
        (query(f"{PREFIX}/session", scope=scope, id=session_id), session_id),
    ]
    return html_response(page(f"Session {session_id}", "".join(map(str, parts)), crumbs=crumbs))


def _context_form(
    view: reads.SessionView, scope: str, session_id: str, turns: list[str], turn: str | None
) -> str:
    """The form that picks a turn and the policy and budgets its context is rebuilt under."""
    b = view.builder
    return (
        f'<form class="filters" method="get" action="{PREFIX}/session#context">'
        f'<input type="hidden" name="scope" value="{attr(scope)}">'
        f'<input type="hidden" name="id" value="{attr(session_id)}">'
        '<label>turn <select name="turn" id="turn">'
        + "".join(
            f'<option value="{attr(t)}"{" selected" if t == turn else ""}>{esc(t)}</option>'
            for t in turns
        )
        + "</select></label>"
        + select("policy", "context policy", get_args(ContextPolicy), b.policy)
        + text_input("budget", "token budget", b.budget, "number", min="1")
        + text_input("soft_budget", "soft budget", b.soft_budget, "number", min="1")
        + '<button type="submit">Show context</button></form>'
        '<p class="muted">The session does not record the budget it ran with: the defaults '
        "are the server's settings (LANGMEM_TIERS_CONTEXT_TOKEN_LIMIT, ..._CONTEXT_POLICY, "
        "..._CONTEXT_SOFT_BUDGET).</p>"
    )


def _messages_section(
    request: Request, view: reads.SessionView, scope: str, session_id: str, policy: str | None
) -> str:
    """Every message at tiers 1, 2 and 3 with token counts, and where it went."""
    rows = []
    for row in view.rows:
        r = row.record
        archived = (
            Raw(
                f"{memory_link(scope, row.archived.id, 'archived')} {esc(fmt_time(row.archived.created_at))}"
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
                budget=param(request, "budget"),
                soft_budget=param(request, "soft_budget"),
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
    return '<h2 id="messages">Messages at tiers 1, 2 and 3</h2>' + table(
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


def _context_section(chosen: reads.TurnContext) -> str:
    """The prompt the chosen turn was given, message by message, with its token count."""
    return (
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


def _summaries_section(view: reads.SessionView, scope: str) -> str:
    """The summary memories made of this session."""
    return '<h2 id="summaries">Summaries made of this session</h2>' + table(
        ["memory", "status", "created (UTC)", "covers", "content"],
        (
            [
                memory_link(scope, m.id, m.key),
                status_badge(m),
                fmt_time(m.created_at),
                f"{len(m.value.get('source_message_ids') or [])} messages",
                clip(m.content, 300),
            ]
            for m in view.summaries
        ),
        css="summaries",
    )


async def _tokens_section(
    store: TieredMemoryStore, view: reads.SessionView, scope: str, turns: list[str]
) -> str:
    """Prompt tokens per turn against the raw history, as a chart."""
    prompt: list[tuple[float, float]] = []
    raw: list[tuple[float, float]] = []
    for n, t in enumerate(turns[:300], 1):
        ctx = await reads.turn_context(store, view, scope, t, with_memories=False)
        if ctx is not None:
            prompt.append((float(n), float(ctx.tokens)))
            raw.append((float(n), float(ctx.raw_tokens)))
    return (
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
