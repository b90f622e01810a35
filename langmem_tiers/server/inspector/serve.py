"""``langmem-tiers inspect``: the inspector on loopback, signed in by a link it prints.

The server listens on 127.0.0.1 only. At start it draws a random token (never stored)
that the inspector, and only the inspector, takes as an admin key, and prints the link
that signs a browser in with it (``/ui/?key=<token>``, which sets a cookie and drops the
token from the address). API keys made with ``langmem-tiers keys create`` work too.

Example:
    >>> inspect_url(8090, "abc")
    'http://127.0.0.1:8090/ui/?key=abc'
"""

from __future__ import annotations

import secrets
import sys
from typing import TextIO

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError, MissingDependencyError
from langmem_tiers.server.inspector.access import TOKEN_STATE

__all__ = ["LOOPBACK", "inspect_url", "serve_inspector"]

LOOPBACK = "127.0.0.1"


def inspect_url(port: int, token: str) -> str:
    """The link that opens the inspector signed in with ``token``."""
    return f"http://{LOOPBACK}:{port}/ui/?key={token}"


def serve_inspector(
    url: str | None = None,
    *,
    settings: Settings | None = None,
    port: int = 8090,
    log_level: str = "warning",
    out: TextIO | None = None,
) -> None:
    """Serve the inspector on ``127.0.0.1:port`` over the store at ``url`` until stopped.

    Raises:
        MissingDependencyError: the 'server' extra (FastAPI, uvicorn) is not installed.
        ConfigurationError: ``port`` is not a port number.
    """
    try:
        import uvicorn
    except ImportError as err:
        raise MissingDependencyError("langmem-tiers inspect", "server", "uvicorn") from err
    from langmem_tiers.server.app import create_app

    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigurationError(f"port must be 1-65535, got {port!r}.")
    settings = settings or Settings.from_env()
    app = create_app(url if url is not None else settings.url, settings=settings, pool_size=2)
    token = secrets.token_urlsafe(24)
    setattr(app.state, TOKEN_STATE, token)
    stream = out or sys.stdout
    print(f"memory inspector: open {inspect_url(port, token)}", file=stream, flush=True)
    print("(this link signs in as admin while this process runs; Ctrl+C stops it)", file=stream)
    uvicorn.run(app, host=LOOPBACK, port=port, log_level=log_level)
