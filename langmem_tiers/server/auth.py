"""Who is calling: the API key of a request, and the scope it may use.

A key comes in ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. No key, a
malformed, unknown or revoked key: 401. A key bound to an agent works only in that
agent's scope (:func:`scope_for`); an admin key names the agent with ``agent_id``.

Example:
    >>> from datetime import datetime, timezone
    >>> key = ApiKey("0123456789ab", "agent-a", False, None, datetime.now(timezone.utc),
    ...              None, None)
    >>> scope_for(key, None), scope_for(key, "agent-a")
    ('agent-a', 'agent-a')
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from langmem_tiers.server.errors import ApiError
from langmem_tiers.server.keys import ApiKey, ApiKeys

__all__ = ["Principal", "authenticate", "require_admin", "scope_for"]

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An API key made with `langmem-tiers keys create`: `Authorization: Bearer <key>`.",
)
_header = APIKeyHeader(
    name="X-API-Key",
    auto_error=False,
    scheme_name="apiKey",
    description="The same API key in the `X-API-Key` header.",
)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def _keys(request: Request) -> ApiKeys:
    keys: ApiKeys = request.app.state.langmem_tiers.keys
    return keys


async def authenticate(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
) -> ApiKey:
    """The caller's key record; 401 when there is no valid key."""
    key = bearer.credentials if bearer is not None else header
    if not key:
        raise ApiError(
            401,
            "unauthorized",
            "no API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>' "
            "(create one with: langmem-tiers keys create --scope <agent>).",
            headers=_CHALLENGE,
        )
    record = await _keys(request).averify(key)
    if record is None:
        raise ApiError(401, "unauthorized", "invalid or revoked API key.", headers=_CHALLENGE)
    return record


Principal = Annotated[ApiKey, Depends(authenticate)]
"""The authenticated caller, as a route parameter."""


def scope_for(key: ApiKey, agent_id: str | None) -> str:
    """The scope a request works in: the key's own, or ``agent_id`` for an admin key.

    Raises:
        ApiError: 422 when an admin key names no agent; 403 when a scoped key names
            another agent (the answer is the same whether that agent exists or not).
    """
    if key.is_admin:
        if agent_id is None:
            raise ApiError(
                422,
                "invalid_request",
                "agent_id is required with an admin key: name the agent whose memory to use.",
                fields=[{"field": "agent_id", "location": "agent_id", "message": "Field required"}],
            )
        return agent_id
    assert key.scope is not None  # a non-admin key always has a scope
    if agent_id is not None and agent_id != key.scope:
        raise ApiError(
            403,
            "forbidden",
            "this API key is bound to one agent and cannot use another's memory; "
            "leave agent_id out.",
        )
    return key.scope


def require_admin(key: ApiKey) -> None:
    """403 unless ``key`` is an admin key."""
    if not key.is_admin:
        raise ApiError(
            403,
            "forbidden",
            "this endpoint needs an admin key (langmem-tiers keys create --admin).",
        )
