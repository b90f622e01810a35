"""What one slow or greedy client may hold of an HTTP server: time and connections.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` and answers 503
to a request beyond ``limit_concurrency``, but a connection that has sent a request line
and part of its headers waits for the rest forever, and every such connection holds a file
descriptor: a few hundred slow clients take the server down. :class:`BoundedHTTPProtocol`
adds the two missing bounds to uvicorn's own HTTP protocol:

- a **header deadline**: a request's line and headers must arrive within
  ``header_timeout`` seconds of its first byte (of the connection, for the first request),
  else the server answers 408 and closes the connection;
- a **connection cap**: a connection accepted while ``max_connections`` are open is
  answered 503 and closed at once, before it can hold anything.

:func:`uvicorn_options` gives the options of ``uvicorn.Config`` / ``uvicorn.run`` that
apply :class:`~langmem_tiers.config.Settings`' ``server_header_timeout``,
``server_keepalive_timeout`` and ``server_max_connections``; ``langmem-tiers serve`` and
the MCP server over HTTP both use it. This module imports uvicorn: import it only where
the ``server`` (or ``mcp``) extra is installed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from langmem_tiers.config import Settings

__all__ = ["BoundedHTTPProtocol", "uvicorn_options"]

logger = logging.getLogger(__name__)

_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\nconnection: close\r\n"
    b"content-length: 38\r\n\r\nThe request's headers came too slowly.\n"
)
_FULL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n"
    b"content-length: 40\r\n\r\nToo many connections; try again shortly.\n"
)


class BoundedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol with a header deadline and a connection cap (see the module).

    Built by uvicorn with its own arguments; ``header_timeout`` (seconds) and
    ``max_connections`` come through :func:`functools.partial` (:func:`uvicorn_options`).
    """

    def __init__(
        self, *args: Any, header_timeout: float, max_connections: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            logger.warning(
                "%d connections open (server_max_connections): one more refused with 503",
                len(self.connections) - 1,
            )
            transport.write(_FULL)  # type: ignore[attr-defined]
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        if self._deadline is None and (before is None or before.response_complete):
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self.cycle is not before:
            self._disarm()  # its headers are complete: the application has the request

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            logger.info(
                "%s: a request's headers took over %.1f s (server_header_timeout): closed",
                self.client,
                self.header_timeout,
            )
            self.transport.write(_TIMED_OUT)
            self.transport.close()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The options of ``uvicorn.Config`` (or ``uvicorn.run``) that bound slow clients.

    Example:
        >>> options = uvicorn_options(Settings(server_max_connections=50))
        >>> options["limit_concurrency"], options["timeout_keep_alive"]
        (51, 5.0)
    """
    return {
        "http": functools.partial(
            BoundedHTTPProtocol,
            header_timeout=settings.server_header_timeout,
            max_connections=settings.server_max_connections,
        ),
        "timeout_keep_alive": settings.server_keepalive_timeout,
        # uvicorn counts the connection of the request it checks: the cap's last
        # connection is still served.
        "limit_concurrency": settings.server_max_connections + 1,
    }
