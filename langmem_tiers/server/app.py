"""The HTTP API of the long-term memory engine: :func:`create_app`.

Install the extra (``pip install 'langmem-tiers[server]'``), create a key, and serve::

    $ langmem-tiers keys create --scope agent-a
    $ langmem-tiers serve --host 127.0.0.1 --port 8080
    $ langmem-tiers serve --workers 4 --pool-size 10   # 4 processes, 10 PG connections each

One process answers many requests at once: the routes await the engine's async methods
(SQLite work runs in worker threads, PostgreSQL on an async pool of ``pool_size``
connections), but its Python work (ranking, JSON) shares one core; ``--workers`` runs
several processes on the same port (see :func:`serve`).

The OpenAPI schema is at ``/openapi.json`` and the interactive docs at ``/docs``. Every
endpoint but ``/api/v1/health`` needs an API key (see :mod:`~langmem_tiers.server.auth`).
The memory inspector's pages are under ``/ui`` (:mod:`~langmem_tiers.server.inspector`).

Example:
    >>> from fastapi.testclient import TestClient
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     with TestClient(create_app(store)) as client:
    ...         client.get("/api/v1/health").json()["status"]
    'ok'
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from langmem_tiers.config import Settings
from langmem_tiers.errors import ConfigurationError, MissingDependencyError
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.server.consolidation import BackgroundConsolidation

if TYPE_CHECKING:
    from fastapi import FastAPI

    from langmem_tiers.long_term.engine.engine import MemoryEngine
    from langmem_tiers.server.keys import ApiKeys

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_POOL_SIZE",
    "ServerState",
    "create_app",
    "create_app_from_environment",
    "serve",
]

DEFAULT_MAX_BODY_BYTES = 1_048_576
"""Largest request body accepted by default (1 MiB); larger ones get 413."""

DEFAULT_POOL_SIZE = 10
"""PostgreSQL connections per server process when the app opens the store: more than a
handful of concurrent requests, so a request does not wait for a connection while the
database has capacity left."""

OPTIONS_ENV = "LANGMEM_TIERS_SERVER_OPTIONS"
"""How :func:`serve` hands its options to worker processes (JSON; internal)."""

API_PREFIX = "/api/v1"
INSPECTOR_PREFIX = "/ui"
"""Where the memory inspector's pages are (see :mod:`~langmem_tiers.server.inspector`)."""


@dataclass
class ServerState:
    """What the routes use: the store, the engine and the key table (set at start-up)."""

    store: TieredMemoryStore | None = None
    engine: MemoryEngine | None = None
    keys: ApiKeys | None = None
    consolidation: BackgroundConsolidation = field(default_factory=BackgroundConsolidation)

    def attach(
        self, store: TieredMemoryStore, engine: MemoryEngine | None, model: BaseChatModel | None
    ) -> None:
        """Use ``store`` (and ``engine``, else one built on the store that consolidates
        off the request path once :meth:`started`)."""
        from langmem_tiers.long_term.engine.engine import MemoryEngine
        from langmem_tiers.server.keys import ApiKeys

        self.store = store
        self.engine = (
            engine
            if engine is not None
            else MemoryEngine(
                store,
                model=model,
                settings=store.settings,
                consolidation_due=self.consolidation.due,
            )
        )
        self.keys = ApiKeys(store.db)

    @asynccontextmanager
    async def started(self) -> AsyncIterator[None]:
        """Consolidate in the background while the app runs (on the app's loop)."""
        assert self.engine is not None
        self.consolidation.start(self.engine)
        try:
            yield
        finally:
            await self.consolidation.stop()


def _chat_model(model: BaseChatModel | str | None) -> BaseChatModel | None:
    # The engine checks contradictions offline when it has no model; the offline chat
    # model of the graphs answers questions and would not help it.
    if model is None or model == "offline":
        return None
    from langmem_tiers.graph.models import resolve_chat_model

    return resolve_chat_model(model)


def create_app(
    store_or_url: TieredMemoryStore | str | None = None,
    *,
    settings: Settings | None = None,
    model: BaseChatModel | str | None = None,
    engine: MemoryEngine | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    title: str = "langmem-tiers",
    pool_size: int = DEFAULT_POOL_SIZE,
    freeze_startup_heap: bool = False,
) -> FastAPI:
    """The FastAPI application of the memory engine.

    Args:
        store_or_url: a :class:`~langmem_tiers.TieredMemoryStore` you own (its schema set
            up), or a URL the app opens at start-up and closes at shutdown (``None``: the
            embedded default, or ``settings.url``).
        settings: used when the app opens the store (default: from the environment).
        model: a chat model (or provider string) the engine uses for contradiction checks
            and summaries; ``None`` keeps it offline.
        engine: a :class:`~langmem_tiers.long_term.engine.engine.MemoryEngine` to use instead of
            one built on the store.
        max_body_bytes: request bodies larger than this are refused with 413.
        title: the API's title in the OpenAPI schema.
        pool_size: PostgreSQL connections of the pool the app opens from a URL (unused
            for SQLite, and for a store you pass).
        freeze_startup_heap: once started, hide what is alive from Python's cyclic
            garbage collector (``gc.freeze``), process-wide: for a process that serves
            this app alone (:func:`serve` sets it). Its full collections then scan what
            requests left, not every module, class and function loaded.

    Raises:
        MissingDependencyError: FastAPI is not installed.
        ConfigurationError: ``max_body_bytes`` or ``pool_size`` is not a positive whole
            number.
    """
    try:
        from fastapi import FastAPI
    except ImportError as err:
        raise MissingDependencyError("The HTTP server", "server", "fastapi") from err
    from langmem_tiers import __name__ as package_name
    from langmem_tiers.server.errors import BodyLimitAndErrorsMiddleware, install_error_handlers
    from langmem_tiers.server.routes import build_router

    _check_counts(max_body_bytes=max_body_bytes, pool_size=pool_size)
    chat_model = _chat_model(model)
    state = ServerState()
    url = _attach_or_url(state, store_or_url, engine, chat_model)
    lifespan = _lifespan(
        state,
        url,
        settings=settings,
        pool_size=pool_size,
        engine=engine,
        chat_model=chat_model,
        freeze_startup_heap=freeze_startup_heap,
    )
    app = FastAPI(
        title=title,
        version=_version(package_name),
        description="Long-term memory (episodic, semantic, procedural) with hybrid "
        "retrieval, versions, conflicts, decay, an event log and replay.",
        lifespan=lifespan,
    )
    app.state.langmem_tiers = state
    install_error_handlers(app)
    app.add_middleware(BodyLimitAndErrorsMiddleware, max_body_bytes=max_body_bytes)
    app.include_router(build_router(), prefix=API_PREFIX)
    from langmem_tiers.server.inspector import build_inspector_router

    app.include_router(build_inspector_router(), prefix=INSPECTOR_PREFIX)
    return app


def _attach_or_url(
    state: ServerState,
    store_or_url: object,
    engine: MemoryEngine | None,
    chat_model: BaseChatModel | None,
) -> str | None:
    """Attach a store the caller owns now, or answer the URL to open at start-up."""
    if isinstance(store_or_url, TieredMemoryStore):
        state.attach(store_or_url, engine, chat_model)
        return None
    if store_or_url is None or isinstance(store_or_url, str):
        return store_or_url
    raise ConfigurationError(
        f"store_or_url must be a TieredMemoryStore, a URL or None, got "
        f"{type(store_or_url).__name__}."
    )


def _lifespan(
    state: ServerState,
    url: str | None,
    *,
    settings: Settings | None,
    pool_size: int,
    engine: MemoryEngine | None,
    chat_model: BaseChatModel | None,
    freeze_startup_heap: bool,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: background consolidation, and the store when the app owns it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if state.store is not None:
            async with state.started():
                _started(freeze_startup_heap)
                yield
            return
        async with TieredMemoryStore.afrom_url(
            url, settings=settings, pool_size=pool_size
        ) as store:
            state.attach(store, engine, chat_model)
            try:
                async with state.started():
                    _started(freeze_startup_heap)
                    yield
            finally:
                state.store = state.engine = state.keys = None

    return lifespan


def _started(freeze_heap: bool) -> None:
    if freeze_heap:
        # A full collection scans every object the collector tracks, with the app's
        # imports loaded a great many, and no request moves meanwhile (the p99 of a
        # loaded server). Frozen, they are never scanned again.
        gc.collect()
        gc.freeze()


def serve(
    url: str | None = None,
    *,
    settings: Settings | None = None,
    model: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    pool_size: int = DEFAULT_POOL_SIZE,
    workers: int = 1,
    host: str = "127.0.0.1",
    port: int = 8080,
    log_level: str = "info",
) -> None:
    """Run the API with uvicorn until it is stopped (what ``langmem-tiers serve`` does).

    With ``workers`` > 1, uvicorn starts that many processes on one socket, each with
    its own store (and ``pool_size`` PostgreSQL connections); the schema is set up
    here first, so a bad URL fails once instead of in every worker. Worker processes
    read their settings from the environment, like this process.

    A process takes every connection waiting on the socket when it wakes (asyncio's
    accept loop), so a client that opens all its keep-alive connections in one burst
    may have them all served by one process: with connections opened all at once, one
    of two processes often took them all and served what one process serves, and the
    two shared them when the connections joined a moment apart. Behind a load balancer or with
    clients that connect over time, the processes share the load. Each process hides
    what is alive once it has started from the garbage collector (``freeze_startup_heap``
    of :func:`create_app`).

    Slow clients are bounded by ``settings``: ``server_header_timeout``,
    ``server_keepalive_timeout`` and ``server_max_connections`` (``server/limits.py``).

    Raises:
        MissingDependencyError: uvicorn is not installed.
        ConfigurationError: a bad option (or URL).
    """
    try:
        import uvicorn
    except ImportError as err:
        raise MissingDependencyError("langmem-tiers serve", "server", "uvicorn") from err
    from langmem_tiers.server.limits import uvicorn_options

    _check_counts(workers=workers, max_body_bytes=max_body_bytes, pool_size=pool_size)
    settings = settings or Settings.from_env()
    url = url if url is not None else settings.url
    if workers == 1:
        app = create_app(
            url,
            settings=settings,
            model=model,
            max_body_bytes=max_body_bytes,
            pool_size=pool_size,
            freeze_startup_heap=True,
        )
        uvicorn.run(app, host=host, port=port, log_level=log_level, **uvicorn_options(settings))
        return
    with TieredMemoryStore.from_url(url, settings=settings, pool_size=1):
        pass  # sets the schema up once, before the workers open the store
    options = {
        "url": url,
        "model": model,
        "max_body_bytes": max_body_bytes,
        "pool_size": pool_size,
    }
    os.environ[OPTIONS_ENV] = json.dumps(options)
    try:
        uvicorn.run(
            f"{__name__}:create_app_from_environment",
            factory=True,
            workers=workers,
            host=host,
            port=port,
            log_level=log_level,
            **uvicorn_options(settings),
        )
    finally:
        os.environ.pop(OPTIONS_ENV, None)


def create_app_from_environment() -> FastAPI:
    """The app of a worker process started by :func:`serve` (options from the environment).

    Raises:
        ConfigurationError: the options are missing (not started by :func:`serve`).
    """
    raw = os.environ.get(OPTIONS_ENV)
    if not raw:
        raise ConfigurationError(
            f"{OPTIONS_ENV} is not set: start the server with langmem-tiers serve "
            "(or call create_app yourself)."
        )
    options: dict[str, Any] = json.loads(raw)
    return create_app(
        options["url"],
        settings=Settings.from_env(),
        model=options["model"],
        max_body_bytes=options["max_body_bytes"],
        pool_size=options["pool_size"],
        freeze_startup_heap=True,
    )


def _check_counts(**numbers: Any) -> None:
    for name, number in numbers.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ConfigurationError(f"{name} must be a whole number >= 1, got {number!r}.")


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package.replace("_", "-"))
    except PackageNotFoundError:
        return "0"
