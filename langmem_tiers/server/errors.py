"""How the HTTP API answers errors: JSON ``{"error", "message", "fields"}``, never a traceback.

=====================================  ======  ==========================================
raised                                 status  ``error``
=====================================  ======  ==========================================
request body or parameters invalid,    422     ``invalid_request`` (``fields`` named)
or a body JSON cannot be parsed
``ValidationError``, bad settings      422     ``invalid_input``
no key / bad key                       401     ``unauthorized``
scoped key naming another agent        403     ``forbidden``
``NotFoundError`` (also another        404     ``not_found``
scope's memory id)
``ConflictError``                      409     ``conflict``
body over the limit                    413     ``payload_too_large``
``BackendError``                       503     ``database_unavailable``
``EmbeddingError``, ``ModelError``     502     ``upstream_failed``
anything else                          500     ``internal_error`` (logged, not shown)
=====================================  ======  ==========================================

Example:
    >>> ApiError(403, "forbidden", "not yours").status_code
    403
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    ConflictError,
    EmbeddingError,
    LangmemTiersError,
    ModelError,
    NotFoundError,
    ValidationError,
)
from langmem_tiers.server.models import ErrorOut

__all__ = [
    "ApiError",
    "BodyLimitAndErrorsMiddleware",
    "ErrorResponses",
    "error_body",
    "install_error_handlers",
]

logger = logging.getLogger("langmem_tiers.server")

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


ErrorResponses: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": description}
    for status, description in (
        (401, "No API key, or an invalid or revoked one."),
        (403, "The key may not do this (another agent, or not an admin key)."),
        (404, "No such memory in the caller's scope (or no such endpoint)."),
        (409, "The write was refused by a conflict rule."),
        (413, "The request body is over the server's limit."),
        (422, "The request is invalid; `fields` names the fields at fault."),
        (503, "The database does not answer."),
    )
}
"""Error responses every API route may give, for the OpenAPI schema."""


class ApiError(StarletteHTTPException):
    """An error answered as JSON with a code (see the module table)."""

    def __init__(
        self,
        status_code: int,
        error: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        fields: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(status_code, detail=message, headers=headers)
        self.error = error
        self.message = message
        self.fields = fields


def error_body(error: str, message: str, fields: list[dict[str, str]] | None = None) -> bytes:
    """The JSON bytes of an error response."""
    body: dict[str, Any] = {"error": error, "message": message}
    if fields is not None:
        body["fields"] = fields
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _response(
    status: int,
    error: str,
    message: str,
    *,
    fields: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    content: dict[str, Any] = {"error": error, "message": message}
    if fields is not None:
        content["fields"] = fields
    return JSONResponse(status_code=status, content=content, headers=headers)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _field_errors(errors: Sequence[Any]) -> list[dict[str, str]]:
    out = []
    for err in errors:
        loc = [str(part) for part in err.get("loc", ())]
        # The location's first part says where (body, query, path, header); the rest is
        # the field's path inside it.
        field = ".".join(loc[1:]) if len(loc) > 1 else ".".join(loc)
        out.append(
            {
                "field": field or "body",
                "location": ".".join(loc),
                "message": _one_line(err.get("msg", "invalid")),
            }
        )
    return out


def _unparseable_body(cause: BaseException) -> str | None:
    """What is wrong with a body the JSON parser raised ``cause`` on, or ``None``.

    FastAPI answers a JSONDecodeError itself (422), but wraps the parser's other errors in
    a bare 400 "error parsing the body" raised from them. Said of the body: "is ...".
    """
    if isinstance(cause, UnicodeDecodeError):
        return (
            f"is not valid UTF-8 (byte 0x{cause.object[cause.start]:02x} at offset "
            f"{cause.start}); send JSON encoded as UTF-8"
        )
    if isinstance(cause, RecursionError):
        return "is nested too deeply to parse; send flatter JSON"
    if isinstance(cause, ValueError):
        # The only other ValueError json.loads raises: an integer over Python's digit limit.
        return (
            f"holds a number of more than {sys.get_int_max_str_digits()} digits, which cannot "
            "be parsed; send such a value as a string"
        )
    return None


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers of the module table on ``app``."""

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        fields = _field_errors(exc.errors())
        summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        return _response(422, "invalid_request", f"invalid request: {summary}", fields=fields)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if isinstance(exc, ApiError):
            return _response(
                exc.status_code,
                exc.error,
                exc.message,
                fields=exc.fields,
                headers=dict(exc.headers) if exc.headers else None,
            )
        unparseable = _unparseable_body(exc.__cause__) if exc.__cause__ is not None else None
        if exc.status_code == 400 and unparseable is not None:
            fields = [{"field": "body", "location": "body", "message": unparseable}]
            message = f"invalid request: the body {unparseable}."
            return _response(422, "invalid_request", message, fields=fields)
        error = _STATUS_CODES.get(exc.status_code, "http_error")
        message = _one_line(str(exc.detail)) if exc.detail else error.replace("_", " ")
        if exc.status_code == 404:
            message = f"no such endpoint: {request.method} {request.url.path}"
        return _response(
            exc.status_code, error, message, headers=dict(exc.headers) if exc.headers else None
        )

    async def on_package_error(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, NotFoundError):
            return _response(404, "not_found", _one_line(str(exc)))
        if isinstance(exc, (ValidationError, ConfigurationError)):
            return _response(422, "invalid_input", _one_line(str(exc)))
        if isinstance(exc, ConflictError):
            return _response(409, "conflict", _one_line(str(exc)))
        if isinstance(exc, BackendError):
            logger.error("database error on %s %s: %s", request.method, request.url.path, exc)
            return _response(
                503, "database_unavailable", "the database failed; try again in a moment."
            )
        if isinstance(exc, (EmbeddingError, ModelError)):
            logger.error("upstream error on %s %s: %s", request.method, request.url.path, exc)
            return _response(502, "upstream_failed", _one_line(str(exc)))
        logger.error("error on %s %s: %r", request.method, request.url.path, exc)
        return _response(500, "internal_error", "internal error; the server log has the details.")

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(LangmemTiersError, on_package_error)


class _BodyTooLargeError(ApiError):
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            "payload_too_large",
            f"the request body is larger than the server's limit of {limit} bytes.",
        )


class BodyLimitAndErrorsMiddleware:
    """Refuse bodies over ``max_body_bytes`` (413) and answer unexpected errors as JSON 500.

    The declared ``Content-Length`` is checked before anything is read; a body sent
    without one (chunked) is counted as it arrives. An exception no handler took is
    logged with its traceback and answered with a generic message.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _send_error(send, 413, "payload_too_large", _BodyTooLargeError(limit).message)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # An HTTPException, so the framework's body parsing passes it on.
                    raise _BodyTooLargeError(limit)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLargeError as exc:
            if not started:
                await _send_error(send, 413, exc.error, exc.message)
        except Exception:
            logger.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await _send_error(
                    send, 500, "internal_error", "internal error; the server log has the details."
                )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_error(send: Send, status: int, error: str, message: str) -> None:
    body = error_body(error, message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
