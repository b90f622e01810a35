"""What every inspector page shares: the response and its headers, sign-in by ``?key=``,
errors as pages, query parameters checked with a message naming the field, form pieces.

A handler is ``async (request, viewer) -> Response``; :func:`guarded` turns it into a route
that first finds the viewer (see :mod:`~langmem_tiers.server.inspector.access`) and answers
:class:`~langmem_tiers.server.inspector.access.PageError` and the package's input and
database errors as pages.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    EmbeddingError,
    LangmemTiersError,
    NotFoundError,
    ValidationError,
)
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.long_term.engine.models import Memory
from langmem_tiers.long_term.store.records import parse_timestamp
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.inspector.access import COOKIE, PageError, Viewer, key_of, viewer_for
from langmem_tiers.server.inspector.html import (
    CSS,
    PREFIX,
    Raw,
    attr,
    esc,
    fmt_time,
    link,
    page,
    query,
)

__all__ = [
    "PAGE_SIZE",
    "SECURITY_HEADERS",
    "SLIDER_JS",
    "STATUSES",
    "Handler",
    "choice_param",
    "clip",
    "error_page",
    "guarded",
    "html_response",
    "local_time",
    "login_form",
    "memory_link",
    "number_param",
    "param",
    "scope_crumbs",
    "scope_param",
    "select",
    "signed_in",
    "state_of",
    "status_badge",
    "text_input",
    "time_param",
    "validity",
]

logger = logging.getLogger("langmem_tiers.server.inspector")

STATUSES = ("active", "superseded", "decayed", "deleted", "compressed")
PAGE_SIZE = 200


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


SLIDER_JS = """
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
SECURITY_HEADERS = {
    "Content-Security-Policy": f"default-src 'none'; style-src {_digest(CSS)}; "
    f"script-src {_digest(SLIDER_JS)}; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

Handler = Callable[..., Awaitable[Response]]


def html_response(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


def error_page(status: int, message: str) -> HTMLResponse:
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
        body += login_form()
    return html_response(page(title, body), status)


def login_form() -> str:
    return (
        f'<form class="filters" method="post" action="{PREFIX}/login">'
        '<label>API key <input type="password" name="key" autocomplete="off" required '
        'autofocus size="40"></label><button type="submit">Sign in</button></form>'
        '<p class="muted">Create a key with <code>langmem-tiers keys create --scope ID</code> '
        "(or <code>--admin</code>); <code>langmem-tiers inspect</code> prints a link that "
        "signs in.</p>"
    )


def state_of(request: Request) -> tuple[TieredMemoryStore, MemoryEngine]:
    state = request.app.state.langmem_tiers
    if state.engine is None or state.store is None:
        raise PageError(503, "The server is not started yet.")
    return state.store, state.engine


def guarded(handler: Handler) -> Handler:
    """Sign-in by ``?key=``, a viewer for the handler, errors as pages."""

    async def run(request: Request) -> Response:
        try:
            given = request.query_params.get("key")
            if given is not None:
                await viewer_for(request, given)  # 401 for a bad key
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "key"]
                target = request.url.path + ("?" + urlencode(rest) if rest else "")
                return signed_in(target, given)
            viewer = await viewer_for(request, key_of(request))
            return await handler(request, viewer)
        except PageError as err:
            return error_page(err.status, err.message)
        except (ValidationError, ConfigurationError) as err:
            # The public APIs validate their input: a bad id or time names the field.
            return error_page(422, str(err))
        except NotFoundError as err:
            return error_page(404, str(err))
        except (BackendError, EmbeddingError) as err:
            logger.error("inspector page %s: %s", request.url.path, err)
            return error_page(503, "The database does not answer; try again shortly.")

    # Not functools.wraps: FastAPI would read the handler's parameters as the route's.
    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


def signed_in(target: str, key: str) -> Response:
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    response.set_cookie(COOKIE, key, httponly=True, samesite="strict", path=PREFIX)
    return response


def scope_param(request: Request, viewer: Viewer) -> str:
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


def param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value.strip() if value is not None and value.strip() else None


def time_param(request: Request, name: str) -> datetime | None:
    text = param(request, name)
    if text is None:
        return None
    try:
        value = parse_timestamp(text, field=name)
    except (LangmemTiersError, ValueError) as err:
        raise PageError(
            422, f"{name} must be an ISO-8601 time such as 2026-03-01T12:00:00, got {text!r}."
        ) from err
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def number_param(request: Request, name: str, low: float, high: float) -> float | None:
    text = param(request, name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise PageError(422, f"{name} must be a number from {low:g} to {high:g}, got {text!r}.")
    return value


def choice_param(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    value = param(request, name)
    if value is not None and value not in allowed:
        raise PageError(422, f"{name} must be one of {', '.join(allowed)}, got {value!r}.")
    return value


def status_badge(memory: Memory) -> Raw:
    return Raw(f'<span class="status-{attr(memory.status)}">{esc(memory.status)}</span>')


def memory_link(scope: str, memory_id: str, text: object) -> Raw:
    return link(query(f"{PREFIX}/memory", scope=scope, id=memory_id), text)


def scope_crumbs(scope: str) -> list[tuple[str, str]]:
    return [(query(f"{PREFIX}/scope", scope=scope), scope)]


def select(name: str, label: str, options: tuple[str, ...], chosen: str | None) -> str:
    opts = ['<option value="">any</option>'] + [
        f'<option value="{attr(o)}"{" selected" if o == chosen else ""}>{esc(o)}</option>'
        for o in options
    ]
    return f'<label>{esc(label)} <select name="{attr(name)}">{"".join(opts)}</select></label>'


def text_input(name: str, label: str, value: object, kind: str = "text", **more: str) -> str:
    extra = "".join(f' {k}="{attr(v)}"' for k, v in more.items())
    return (
        f'<label>{esc(label)} <input type="{kind}" name="{attr(name)}" '
        f'value="{attr("" if value is None else value)}"{extra}></label>'
    )


def local_time(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


# -- pages -------------------------------------------------------------------------------


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def validity(memory: Memory) -> str:
    """A memory's validity interval in words: ``always``, ``from ...``, ``until ...``."""
    start, end = fmt_time(memory.valid_from), fmt_time(memory.valid_until)
    if start and end:
        return f"{start} → {end}"
    if start:
        return f"from {start}"
    return f"until {end}" if end else "always"
