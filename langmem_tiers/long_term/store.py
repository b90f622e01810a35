"""``TieredMemoryStore``: a LangGraph ``BaseStore`` over SQLite, PostgreSQL and Qdrant.

Example:
    >>> from langmem_tiers import TieredMemoryStore
    >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
    ...     store.put(("agent_a", "semantic"), "m1", {"content": "Jordan leads the RAI Chat project"})
    ...     hits = store.search(("agent_a", "semantic"), query="who leads RAI Chat?")
    ...     hits[0].value["content"], sorted(hits[0].scores)
    ('Jordan leads the RAI Chat project', ['confidence', 'frequency', 'recency', 'semantic'])
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    IndexConfig,
    Item,
    NotProvided,
    Op,
    Result,
    SearchItem,
)

from langmem_tiers.config import Settings, default_data_dir
from langmem_tiers.embeddings import OfflineEmbeddings, resolve_embeddings
from langmem_tiers.errors import (
    BackendError,
    ConfigurationError,
    LangmemTiersError,
    MissingDependencyError,
)
from langmem_tiers.long_term.backends import AsyncPostgresIO, PostgresIO, SqliteIO
from langmem_tiers.long_term.core import RankedItem, StoreCore
from langmem_tiers.long_term.dialect import Dialect, PostgresDialect, SqliteDialect
from langmem_tiers.long_term.flow import Flow, arun, run
from langmem_tiers.long_term.records import validate_namespace
from langmem_tiers.long_term.vectors import (
    PgVectorIndex,
    QdrantIndex,
    SqliteVectorIndex,
    VectorIndex,
)

__all__ = ["RankedItem", "TieredMemoryStore"]

T = TypeVar("T")

DEFAULT_QDRANT_COLLECTION = "langmem_tiers"


class TieredMemoryStore(BaseStore):
    """Long-term memory as a LangGraph ``BaseStore``, hybrid-ranked, on the backend you choose.

    Use :meth:`from_url` (a context manager that owns what it opens), or pass a connection
    you own (``sqlite3.Connection``, a psycopg ``Connection``/``ConnectionPool``, or their
    async twins) and call :meth:`setup` once.

    Args:
        conn: the database connection or pool.
        index: LangGraph's index config (``dims``, ``embed``, ``fields``). ``embed`` may be
            any LangChain ``Embeddings``, a provider string or a function.
        embeddings: shortcut for ``index={"embed": embeddings}``; ``None`` with no index
            means the offline deterministic embedder.
        qdrant: put vectors in Qdrant: a ``QdrantClient``, a server URL, a local path or
            ``":memory:"`` (qdrant-client's local mode).
        qdrant_collection: the Qdrant collection name.
        settings: ranking weights, limits and the rest (:class:`~langmem_tiers.config.Settings`).
    """

    supports_ttl = False
    __slots__ = (
        "_async_io",
        "_core",
        "_dialect",
        "_embeddings",
        "_loop",
        "_owned",
        "_qdrant",
        "_sync_io",
        "conn",
        "index_config",
        "settings",
    )

    def __init__(
        self,
        conn: Any,
        *,
        index: IndexConfig | None = None,
        embeddings: Embeddings | str | None = None,
        qdrant: Any | None = None,
        qdrant_collection: str = DEFAULT_QDRANT_COLLECTION,
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.conn = conn
        self._owned: list[Any] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        embed, dims, fields = _resolve_index(index, embeddings)
        self._embeddings = embed
        self.index_config = {"dims": dims, "embed": embed, "fields": fields}
        self._qdrant = _qdrant_client(qdrant) if isinstance(qdrant, str) else qdrant
        if isinstance(qdrant, str):
            self._owned.append(self._qdrant)
        self._dialect, self._sync_io, self._async_io = self._wire(conn)
        vector_index: VectorIndex
        if self._qdrant is not None:
            _check_name(qdrant_collection, "qdrant_collection")
            local = type(getattr(self._qdrant, "_client", None)).__name__ == "QdrantLocal"
            vector_index = QdrantIndex(self._dialect, qdrant_collection, payload_indexes=not local)
        elif isinstance(self._dialect, PostgresDialect):
            vector_index = PgVectorIndex(self._dialect)
        else:
            vector_index = SqliteVectorIndex(self._dialect)
        self._core = StoreCore(
            self._dialect, vector_index, dims=dims, fields=fields, settings=self.settings
        )

    def _wire(self, conn: Any) -> tuple[Dialect, Any, Any]:
        if isinstance(conn, sqlite3.Connection):
            SqliteIO.configure(conn)
            return SqliteDialect(), SqliteIO(conn, self._embeddings, self._qdrant), None
        module = type(conn).__module__
        if module.startswith(("psycopg", "psycopg_pool")):
            is_async = type(conn).__name__.startswith("Async")
            if is_async:
                return PostgresDialect(), None, AsyncPostgresIO(conn, self._embeddings, self._qdrant)
            return PostgresDialect(), PostgresIO(conn, self._embeddings, self._qdrant), None
        raise ConfigurationError(
            f"conn must be a sqlite3.Connection or a psycopg connection or pool, got "
            f"{type(conn).__name__}; or use TieredMemoryStore.from_url(url)."
        )

    # -- construction from a URL ------------------------------------------------------
    @classmethod
    @contextmanager
    def from_url(
        cls,
        url: str | None = None,
        *,
        index: IndexConfig | None = None,
        embeddings: Embeddings | str | None = None,
        qdrant: Any | None = None,
        qdrant_collection: str = DEFAULT_QDRANT_COLLECTION,
        settings: Settings | None = None,
        setup: bool = True,
        pool_size: int = 4,
    ) -> Iterator[TieredMemoryStore]:
        """Open a store for ``url`` and close everything it opened on exit.

        ``url=None`` is the embedded default: an SQLite file in the user's data
        directory. ``sqlite:///path.db`` (or ``sqlite:///:memory:``) and
        ``postgresql://user@host/db`` choose the backend. ``setup=True`` runs the
        migrations (idempotent).
        """
        settings = settings or Settings.from_env()
        url = url if url is not None else settings.url
        qdrant = qdrant if qdrant is not None else settings.qdrant_location
        embeddings = embeddings if embeddings is not None or index else settings.embeddings
        kind, target = _parse_url(url)
        if kind == "sqlite":
            conn: Any = _open_sqlite(target)
        else:
            pool_cls = _psycopg_pool("ConnectionPool")
            conn = pool_cls(
                target,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True},
                open=True,
                check=pool_cls.check_connection,
            )
        try:
            store = cls(
                conn,
                index=index,
                embeddings=embeddings,
                qdrant=qdrant,
                qdrant_collection=qdrant_collection,
                settings=settings,
            )
            store._owned.append(conn)
        except BaseException:
            conn.close()
            raise
        try:
            if setup:
                store.setup()
            yield store
        finally:
            store.close()

    @classmethod
    @asynccontextmanager
    async def afrom_url(
        cls,
        url: str | None = None,
        *,
        index: IndexConfig | None = None,
        embeddings: Embeddings | str | None = None,
        qdrant: Any | None = None,
        qdrant_collection: str = DEFAULT_QDRANT_COLLECTION,
        settings: Settings | None = None,
        setup: bool = True,
        pool_size: int = 4,
    ) -> AsyncIterator[TieredMemoryStore]:
        """Async twin of :meth:`from_url`; PostgreSQL gets an async pool."""
        settings = settings or Settings.from_env()
        url = url if url is not None else settings.url
        qdrant = qdrant if qdrant is not None else settings.qdrant_location
        embeddings = embeddings if embeddings is not None or index else settings.embeddings
        kind, target = _parse_url(url)
        if kind == "sqlite":
            conn: Any = await asyncio.to_thread(_open_sqlite, target)
        else:
            pool_cls = _psycopg_pool("AsyncConnectionPool")
            conn = pool_cls(
                target,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True},
                open=False,
                check=pool_cls.check_connection,
            )
            await conn.open()
        try:
            store = cls(
                conn,
                index=index,
                embeddings=embeddings,
                qdrant=qdrant,
                qdrant_collection=qdrant_collection,
                settings=settings,
            )
            store._owned.append(conn)
        except BaseException:
            await _aclose(conn)
            raise
        try:
            if setup:
                await store.asetup()
            yield store
        finally:
            await store.aclose()

    # -- lifecycle -----------------------------------------------------------------------
    def setup(self) -> None:
        """Create or upgrade the schema (idempotent; safe to call on every start)."""
        self._run(self._core.setup_flow())

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`."""
        await self._arun(self._core.setup_flow())

    def close(self) -> None:
        """Flush buffered access counts and close what :meth:`from_url` opened."""
        try:
            if self._sync_io is not None:
                self._run(self._core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                resource.close()
            self._owned.clear()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        try:
            await self._arun(self._core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                await _aclose(resource)
            self._owned.clear()

    # -- BaseStore's validating wrappers: raise this package's errors (also LangGraph's) --
    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Store or replace an item (see LangGraph's ``BaseStore.put``)."""
        validate_namespace(namespace)
        super().put(namespace, key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | None | NotProvided = NOT_PROVIDED,
    ) -> None:
        """Async twin of :meth:`put`."""
        validate_namespace(namespace)
        await super().aput(namespace, key, value, index, ttl=ttl)

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """The item at ``namespace``/``key``, or None."""
        validate_namespace(namespace)
        return super().get(namespace, key, refresh_ttl=refresh_ttl)

    async def aget(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """Async twin of :meth:`get`."""
        validate_namespace(namespace)
        return await super().aget(namespace, key, refresh_ttl=refresh_ttl)

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix``: hybrid-ranked with a query, newest first without.

        Results of a query search are :class:`RankedItem` with the score's components.
        """
        validate_namespace(namespace_prefix, field="namespace_prefix", prefix=True)
        return super().search(
            namespace_prefix,
            query=query,
            filter=filter,
            limit=limit,
            offset=offset,
            refresh_ttl=refresh_ttl,
        )

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's name
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`."""
        validate_namespace(namespace_prefix, field="namespace_prefix", prefix=True)
        return await super().asearch(
            namespace_prefix,
            query=query,
            filter=filter,
            limit=limit,
            offset=offset,
            refresh_ttl=refresh_ttl,
        )

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item (a no-op when it does not exist)."""
        validate_namespace(namespace)
        super().delete(namespace, key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async twin of :meth:`delete`."""
        validate_namespace(namespace)
        await super().adelete(namespace, key)

    # -- the BaseStore seam ----------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one transaction (reads see the state before the batch's writes)."""
        return self._run(self._core.batch_flow(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        return await self._arun(self._core.batch_flow(list(ops)))

    # -- driving flows ------------------------------------------------------------------------
    def _run(self, flow: Flow[T]) -> T:
        if self._sync_io is None:
            loop = self._loop
            if loop is None or not loop.is_running():
                raise ConfigurationError(
                    "this store was opened with an async connection; use the async methods "
                    "(aput, asearch, ...) or open it with a sync connection."
                )
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                raise ConfigurationError(
                    "sync store methods cannot run on the event loop of an async connection; "
                    "use the async methods (aput, asearch, ...)."
                )
            return asyncio.run_coroutine_threadsafe(self._arun(flow), loop).result()
        try:
            return run(flow, self._sync_io)
        except LangmemTiersError:
            raise
        except Exception as err:
            raise _backend_error(err) from err

    async def _arun(self, flow: Flow[T]) -> T:
        if self._async_io is None:
            # sqlite3 and sync psycopg block: run the same flow in a worker thread.
            return await asyncio.to_thread(self._run, flow)
        self._loop = asyncio.get_running_loop()
        try:
            return await arun(flow, self._async_io)
        except LangmemTiersError:
            raise
        except Exception as err:
            raise _backend_error(err) from err


def _backend_error(err: Exception) -> Exception:
    if isinstance(err, (ValueError, TypeError, LookupError)) and not _is_db_error(err):
        return err
    return BackendError(f"the store's backend failed: {type(err).__name__}: {err}")


def _is_db_error(err: Exception) -> bool:
    return isinstance(err, sqlite3.Error) or type(err).__module__.startswith(
        ("psycopg", "qdrant_client", "grpc", "httpx")
    )


def _resolve_index(
    index: IndexConfig | None, embeddings: Embeddings | str | None
) -> tuple[Embeddings, int, list[str] | None]:
    if index is not None and embeddings is not None:
        raise ConfigurationError("pass either index= or embeddings=, not both.")
    spec: Any = embeddings
    dims: int | None = None
    fields: list[str] | None = None
    if index is not None:
        if not isinstance(index, dict):
            raise ConfigurationError(f"index must be a dict like IndexConfig, got {index!r}.")
        spec = index.get("embed")
        dims = index.get("dims")
        raw_fields = index.get("fields")
        fields = list(raw_fields) if raw_fields is not None else None
    embed = resolve_embeddings(spec)
    if dims is None:
        dims = getattr(embed, "dims", None)
    if dims is None:
        raise ConfigurationError(
            "index['dims'] is required for these embeddings: pass index={'dims': N, 'embed': ...} "
            "with the length of the embedder's vectors."
        )
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ConfigurationError(f"index['dims'] must be a whole number >= 1, got {dims!r}.")
    if isinstance(embed, OfflineEmbeddings) and embed.dims != dims:
        embed = OfflineEmbeddings(dims=dims)
    return embed, dims, fields


def _parse_url(url: str | None) -> tuple[str, str]:
    if url is None:
        directory = default_data_dir()
        directory.mkdir(parents=True, exist_ok=True)
        return "sqlite", str(directory / "memory.db")
    if url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise ConfigurationError(
                f"url {url!r} names no file; use sqlite:///path/to/memory.db or sqlite:///:memory:."
            )
        return "sqlite", path
    scheme = urlsplit(url).scheme
    if scheme in ("postgresql", "postgres"):
        return "postgres", url
    raise ConfigurationError(
        f"url {url!r} has an unknown scheme {scheme!r}; use sqlite:///path.db, "
        "postgresql://user@host:5432/db, or leave it out for the embedded default."
    )


def _open_sqlite(path: str) -> sqlite3.Connection:
    if path != ":memory:":
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


def _psycopg_pool(name: str) -> Any:
    try:
        import psycopg_pool
    except ImportError as err:
        raise MissingDependencyError("The PostgreSQL backend", "postgres", "psycopg-pool") from err
    return getattr(psycopg_pool, name)


def _qdrant_client(location: str) -> Any:
    try:
        from qdrant_client import QdrantClient
    except ImportError as err:
        raise MissingDependencyError("Qdrant vectors", "qdrant", "qdrant-client") from err
    if location == ":memory:":
        return QdrantClient(location=":memory:")
    if location.startswith(("http://", "https://")):
        return QdrantClient(url=location)
    return QdrantClient(path=location)


def _check_name(name: str, field: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]{0,62}", name):
        raise ConfigurationError(
            f"{field} must be 1-63 letters, digits, '_' or '-' starting with a letter, got {name!r}."
        )


async def _aclose(resource: Any) -> None:
    result = resource.close()
    if asyncio.iscoroutine(result):
        await result


