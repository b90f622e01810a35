"""Who may see which pages: the HTTP API's keys, passed the way a browser can.

A browser cannot add an ``Authorization`` header to a link, so the inspector takes the
key in one of three ways, first match wins:

1. ``Authorization: Bearer <key>`` or ``X-API-Key: <key>`` (as the API; for scripts);
2. the ``lmt_inspector`` cookie, set by opening any page once with ``?key=<key>``: the
   answer sets the cookie (``HttpOnly``, ``SameSite=Strict``, path ``/ui``) and redirects
   to the same page without the key, so the key does not stay in the address bar or the
   history; the sign-in form posts the key to ``/ui/login`` with the same effect;
3. no key: 401 with the sign-in form.

A key bound to a scope sees that scope's pages only (403 on another's, whether it exists
or not); an admin key sees every scope. ``langmem-tiers inspect`` also accepts the token it
prints (a random value of that process, never stored) as an admin key of the inspector
only: the API under ``/api/v1`` does not take it.

Example:
    >>> key = Viewer(scope="agent-a", admin=False)
    >>> key.may_see("agent-a"), key.may_see("agent-b"), Viewer(None, True).may_see("x")
    (True, False, True)
"""

from __future__ import annotations

import hmac
from typing import NamedTuple

from fastapi import Request

from langmem_tiers.server.keys import ApiKeys

__all__ = ["COOKIE", "TOKEN_STATE", "PageError", "Viewer", "key_of", "viewer_for"]

COOKIE = "lmt_inspector"
"""The cookie holding the key a browser signed in with."""

TOKEN_STATE = "inspector_token"
"""Attribute of ``app.state`` holding ``langmem-tiers inspect``'s token (None: no token)."""


class Viewer(NamedTuple):
    """Who is looking: a scope's key, or an admin (every scope)."""

    scope: str | None
    admin: bool

    def may_see(self, scope: str) -> bool:
        """Whether this viewer may open ``scope``'s pages."""
        return self.admin or scope == self.scope


class PageError(Exception):
    """No page for this request: its status (401 no or a bad key, 403 another scope, 404,
    422 a bad parameter) and a message saying what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def key_of(request: Request) -> str | None:
    """The key a request carries: a header first, then the cookie."""
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    header = request.headers.get("x-api-key")
    if header:
        return header.strip()
    return request.cookies.get(COOKIE) or None


async def viewer_for(request: Request, key: str | None) -> Viewer:
    """The viewer ``key`` stands for.

    Raises:
        PageError: 401 without a key, or with an unknown or revoked one.
    """
    if not key:
        raise PageError(401, "Sign in with an API key to see memory.")
    token: str | None = getattr(request.app.state, TOKEN_STATE, None)
    if token is not None and hmac.compare_digest(key.encode(), token.encode()):
        return Viewer(None, True)
    keys: ApiKeys | None = request.app.state.langmem_tiers.keys
    if keys is None:
        raise PageError(503, "The server is not started yet.")
    record = await keys.averify(key)
    if record is None:
        raise PageError(401, "That key is unknown or revoked.")
    return Viewer(record.scope, record.is_admin)
