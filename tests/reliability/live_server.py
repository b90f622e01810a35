"""The HTTP API served by uvicorn on a loopback port, in a thread of the test process.

Unlike an in-process test client, requests go through a real socket and uvicorn's HTTP
parser, so malformed requests, chunked bodies and dropped database connections are met
exactly as a deployed server meets them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.store import TieredMemoryStore

__all__ = ["LiveServer", "serve"]


@dataclass(frozen=True)
class LiveServer:
    """Where the server listens and the keys made for it."""

    base_url: str
    key_a: str
    key_b: str
    admin: str
    revoked: str


@contextmanager
def serve(url: str, *, max_body_bytes: int = 1_048_576) -> Iterator[LiveServer]:
    """Keys for ``agent-a``, ``agent-b``, an admin and a revoked one; the app on ``url``."""
    import uvicorn

    from langmem_tiers.server import ApiKeys, create_app

    with TieredMemoryStore.from_url(url, settings=Settings()) as store:
        keys = ApiKeys(store.db)
        key_a = keys.create(scope="agent-a").key
        key_b = keys.create(scope="agent-b").key
        admin = keys.create(admin=True).key
        revoked = keys.create(scope="agent-a")
        keys.revoke(revoked.record.id)
    app = create_app(url, settings=Settings(), max_body_bytes=max_body_bytes)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="live-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "the server stopped while starting"
        assert time.monotonic() < deadline, "the server did not start within 30 s"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", key_a, key_b, admin, revoked.key)
    finally:
        server.should_exit = True
        thread.join(30)
