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

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Any, Literal, TypeVar

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    IndexConfig,
    Item,
    NamespacePath,
    NotProvided,
    Op,
    Result,
    SearchItem,
)

from langmem_tiers.config import Settings
from langmem_tiers.embeddings import OfflineEmbeddings, resolve_embeddings
from langmem_tiers.errors import (
    ConfigurationError,
    MissingDependencyError,
)
from langmem_tiers.long_term.store.core import RankedItem, StoreCore
from langmem_tiers.long_term.store.records import validate_namespace
from langmem_tiers.long_term.store.retriever import TieredMemoryRetriever
from langmem_tiers.long_term.store.search.fusion import dense_weight_for
from langmem_tiers.long_term.store.search.options import TimeMode, options_filter
from langmem_tiers.long_term.store.search.relevance import cosine_curve_for
from langmem_tiers.long_term.store.vectors import (
    PgVectorIndex,
    QdrantIndex,
    SqliteVectorIndex,
    VectorIndex,
)
from langmem_tiers.sql.database import (
    Database,
    aclose,
    open_async_connection,
    open_connection,
)
from langmem_tiers.sql.dialect import PostgresDialect

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
    __slots__ = ("_embeddings", "_owned", "_qdrant", "core", "db", "index_config", "settings")

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
        self._owned: list[Any] = []
        embed, dims, fields = _resolve_index(index, embeddings)
        self._embeddings = embed
        self.index_config = {"dims": dims, "embed": embed, "fields": fields}
        self._qdrant = _qdrant_client(qdrant) if isinstance(qdrant, str) else qdrant
        if isinstance(qdrant, str):
            self._owned.append(self._qdrant)
        self.db = Database(conn, embeddings=embed, qdrant=self._qdrant)
        dialect = self.db.dialect
        vector_index: VectorIndex
        if self._qdrant is not None:
            _check_name(qdrant_collection, "qdrant_collection")
            local = type(getattr(self._qdrant, "_client", None)).__name__ == "QdrantLocal"
            vector_index = QdrantIndex(dialect, qdrant_collection, payload_indexes=not local)
        elif isinstance(dialect, PostgresDialect):
            vector_index = PgVectorIndex(dialect)
        else:
            vector_index = SqliteVectorIndex(dialect)
        self.core = StoreCore(
            dialect,
            vector_index,
            dims=dims,
            fields=fields,
            settings=self.settings,
            dense_weight=dense_weight_for(embed),
            cosine_curve=cosine_curve_for(embed),
        )

    @property
    def conn(self) -> Any:
        """The connection or pool the store runs on (share it with a SQL message log)."""
        return self.db.conn

    # -- construction from a URL ------------------------------------------------------
    @classmethod
    def _owning(
        cls,
        conn: Any,
        index: IndexConfig | None,
        embeddings: Embeddings | str | None,
        qdrant: Any | None,
        qdrant_collection: str,
        settings: Settings,
    ) -> TieredMemoryStore:
        """A store that owns ``conn``; arguments left out come from ``settings``."""
        store = cls(
            conn,
            index=index,
            embeddings=embeddings if embeddings is not None or index else settings.embeddings,
            qdrant=qdrant if qdrant is not None else settings.qdrant_location,
            qdrant_collection=qdrant_collection,
            settings=settings,
        )
        store._owned.append(conn)
        return store

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
        conn = open_connection(url if url is not None else settings.url, pool_size=pool_size)
        try:
            store = cls._owning(conn, index, embeddings, qdrant, qdrant_collection, settings)
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
        conn = await open_async_connection(url, pool_size=pool_size)
        try:
            store = cls._owning(conn, index, embeddings, qdrant, qdrant_collection, settings)
        except BaseException:
            await aclose(conn)
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
        self.db.run(self.core.setup_flow())

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`."""
        await self.db.arun(self.core.setup_flow())

    def close(self) -> None:
        """Flush buffered access counts and close what :meth:`from_url` opened."""
        try:
            if not self.db.is_async:
                self.db.run(self.core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                resource.close()
            self._owned.clear()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        try:
            await self.db.arun(self.core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                await aclose(resource)
            self._owned.clear()

    # -- BaseStore's validating wrappers: raise this package's errors (also LangGraph's) --
    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store or replace an item (see LangGraph's ``BaseStore.put``)."""
        validate_namespace(namespace)
        super().put(namespace, key, value, index, ttl=ttl)

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
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
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        now: datetime | str | None = None,
        as_of: datetime | str | None = None,
        time: TimeMode | None = None,
        min_score: float | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix``: hybrid-ranked with a query, newest first without.

        Results of a query search are :class:`RankedItem` with the score's components;
        ``semantic`` is an absolute relevance in [0, 1]. Only current memories are found:
        active, and inside their validity interval.

        Args:
            now: the time the search is made at (default: now): "yesterday", "last week",
                "on Monday" in the query are resolved against it, recency is measured from it.
            as_of: search memory as it stood then (superseded memories current then count).
            time: what a time window named in the query does: ``"boost"`` (default),
                ``"filter"`` (only memories of that window) or ``"off"``.
            min_score: only results whose relevance is at least this (in [0, 1]).

        These options ride in ``filter["$search"]`` (see
        ``langmem_tiers.long_term.store.search.options``), so any ``BaseStore`` caller can
        pass them through a filter.

        Example::

            >>> from langmem_tiers import TieredMemoryStore
            >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
            ...     store.put(("u", "episodic"), "e1", {"content": "Cooked a curry",
            ...               "event_timestamp": "2024-03-13T19:00:00+00:00"})
            ...     store.put(("u", "episodic"), "e2", {"content": "Went swimming",
            ...               "event_timestamp": "2024-02-02T08:00:00+00:00"})
            ...     hits = store.search(("u",), query="what did I do yesterday?",
            ...                         now="2024-03-14T12:00:00+00:00")
            ...     bad = store.search(("u",), query="quantum physics", min_score=0.3)
            >>> [h.key for h in hits], bad
            (['e1', 'e2'], [])
        """
        validate_namespace(namespace_prefix, field="namespace_prefix", prefix=True)
        return super().search(
            namespace_prefix,
            query=query,
            filter=options_filter(filter, now=now, as_of=as_of, time=time, min_score=min_score),
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
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
        now: datetime | str | None = None,
        as_of: datetime | str | None = None,
        time: TimeMode | None = None,
        min_score: float | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`."""
        validate_namespace(namespace_prefix, field="namespace_prefix", prefix=True)
        return await super().asearch(
            namespace_prefix,
            query=query,
            filter=options_filter(filter, now=now, as_of=as_of, time=time, min_score=min_score),
            limit=limit,
            offset=offset,
            refresh_ttl=refresh_ttl,
        )

    def list_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Namespaces matching a prefix and/or suffix (``*`` matches any one label)."""
        _validate_match_paths(prefix, suffix)
        return super().list_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    async def alist_namespaces(
        self,
        *,
        prefix: NamespacePath | None = None,
        suffix: NamespacePath | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Async twin of :meth:`list_namespaces`."""
        _validate_match_paths(prefix, suffix)
        return await super().alist_namespaces(
            prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item (a no-op when it does not exist)."""
        validate_namespace(namespace)
        super().delete(namespace, key)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async twin of :meth:`delete`."""
        validate_namespace(namespace)
        await super().adelete(namespace, key)

    def as_retriever(self, scope: str | tuple[str, ...], **options: Any) -> TieredMemoryRetriever:
        """A LangChain retriever over ``scope`` (``kinds``, ``filter``, ``k``, ``min_score``)."""
        return TieredMemoryRetriever(store=self, scope=scope, **options)

    # -- the BaseStore seam ----------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one transaction (reads see the state before the batch's writes)."""
        return self.db.run(self.core.batch_flow(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        return await self.db.arun(self.core.batch_flow(list(ops)))


def _validate_match_paths(prefix: Any, suffix: Any) -> None:
    for name, path in (("prefix", prefix), ("suffix", suffix)):
        if path is not None:
            validate_namespace(tuple(path), field=name, prefix=True)


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
