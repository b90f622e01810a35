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

from collections.abc import (
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    contextmanager,
)
from datetime import datetime
from typing import Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NamespacePath,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from langmem_tiers.config import Settings
from langmem_tiers.long_term.store.coalesce import OpQueue
from langmem_tiers.long_term.store.connect import (
    check_name,
    conn_string_url,
    qdrant_client,
    resolve_index,
)
from langmem_tiers.long_term.store.core import RankedItem, StoreCore
from langmem_tiers.long_term.store.memory_puts import MemorySplit, PutPipeline, split_memory_puts
from langmem_tiers.long_term.store.records import as_namespace, validate_namespace
from langmem_tiers.long_term.store.retriever import TieredMemoryRetriever
from langmem_tiers.long_term.store.search.fusion import dense_weight_for
from langmem_tiers.long_term.store.search.options import AuthorMode, TimeMode, options_filter
from langmem_tiers.long_term.store.search.relevance import cosine_curve_for
from langmem_tiers.long_term.store.ttl import (
    DEFAULT_SWEEP_MINUTES,
    Answer,
    SweeperFuture,
    TTLSweeper,
    check_ttl_config,
)
from langmem_tiers.long_term.store.vectors import (
    PgVectorIndex,
    QdrantIndex,
    SqliteVectorIndex,
    VectorIndex,
)
from langmem_tiers.sql.backends import is_local_qdrant
from langmem_tiers.sql.database import (
    Database,
    aclose,
    open_async_connection,
    open_connection,
)
from langmem_tiers.sql.dialect import PostgresDialect

__all__ = ["AsyncStoreOpener", "RankedItem", "TieredMemoryStore"]

DEFAULT_QDRANT_COLLECTION = "langmem_tiers"


class TieredMemoryStore(BaseStore):
    """Long-term memory as a LangGraph ``BaseStore``, hybrid-ranked, on the backend you choose.

    Use :meth:`from_url` (a context manager that owns what it opens), or pass a connection
    you own (``sqlite3.Connection``, a psycopg ``Connection``/``ConnectionPool``, or their
    async twins) and call :meth:`setup` once. A psycopg connection outside autocommit
    mode is never committed by the store: its work runs in savepoints of your open
    transaction, or in transactions of its own when none is open.

    Args:
        conn: the database connection or pool.
        index: LangGraph's index config (``dims``, ``embed``, ``fields``). ``embed`` may be
            any LangChain ``Embeddings``, a provider string or a function. Vectors are
            compared by cosine similarity: ``distance_type`` may be ``"cosine"``, ``"l2"``
            or ``"inner_product"``, which rank unit-normalised vectors alike.
        embeddings: shortcut for ``index={"embed": embeddings}``; ``None`` with no index
            means the offline deterministic embedder.
        qdrant: put vectors in Qdrant: a ``QdrantClient``, a server URL, a local path or
            ``":memory:"`` (qdrant-client's local mode).
        qdrant_collection: the Qdrant collection name.
        settings: ranking weights, limits and the rest (:class:`~langmem_tiers.config.Settings`).
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, for puts that give no
            ``ttl``), ``refresh_on_read`` (whether a read that does not say restarts the TTL; False
            when left out, as with LangGraph's ``SqliteStore``) and ``sweep_interval_minutes``
            (for :meth:`start_ttl_sweeper`).

    ``put_pipeline`` is what puts of memory namespaces go through (``memory_puts.py``):
    ``None`` (LangGraph's upsert) until a ``MemoryEngine`` is built on the store, which
    installs itself.

    Example:
        >>> with TieredMemoryStore.from_conn_string(":memory:", ttl={"default_ttl": 60}) as s:
        ...     s.put(("docs",), "a", {"text": "kept for an hour"})
        ...     s.put(("docs",), "b", {"text": "kept"}, ttl=None)
        ...     [item.key for item in s.search(["docs"])], s.sweep_ttl()
        (['b', 'a'], 0)
    """

    supports_ttl = True
    __slots__ = (
        "_owned",
        "_qdrant",
        "_queue",
        "_sweeper",
        "core",
        "db",
        "embeddings",
        "index_config",
        "put_pipeline",
        "settings",
        "ttl_config",
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
        ttl: TTLConfig | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.ttl_config = check_ttl_config(ttl)
        self._owned: list[Any] = []
        embed, dims, fields = resolve_index(index, embeddings)
        self.embeddings: Embeddings = embed
        # What the caller passed (text_fields, ann_index_config, ...) stays readable.
        self.index_config: dict[str, Any] = {
            **(index or {}),
            "dims": dims,
            "embed": embed,
            "fields": fields,
        }
        self._qdrant = qdrant_client(qdrant) if isinstance(qdrant, str) else qdrant
        if isinstance(qdrant, str):
            self._owned.append(self._qdrant)
        self.db = Database(conn, embeddings=embed, qdrant=self._qdrant)
        dialect = self.db.dialect
        vector_index: VectorIndex
        if self._qdrant is not None:
            check_name(qdrant_collection, "qdrant_collection")
            local = is_local_qdrant(self._qdrant)
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
        # The write pipeline raw puts of memories go through (see ``memory_puts``): None
        # until a MemoryEngine is built on this store, which installs itself.
        self.put_pipeline: PutPipeline | None = None
        self._queue = OpQueue(self.abatch)
        self._sweeper = TTLSweeper(self.sweep_ttl, self.asweep_ttl, self.db.on_own_loop)

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
        ttl: TTLConfig | None,
    ) -> TieredMemoryStore:
        """A store that owns ``conn``; arguments left out come from ``settings``."""
        store = cls(
            conn,
            index=index,
            embeddings=embeddings if embeddings is not None or index else settings.embeddings,
            qdrant=qdrant if qdrant is not None else settings.qdrant_location,
            qdrant_collection=qdrant_collection,
            settings=settings,
            ttl=ttl,
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
        ttl: TTLConfig | None = None,
    ) -> Iterator[TieredMemoryStore]:
        """Open a store for ``url`` and close everything it opened on exit.

        ``url=None`` is the embedded default: an SQLite file in the user's data
        directory. ``sqlite:///path.db`` (or ``sqlite:///:memory:``) and
        ``postgresql://user@host/db`` choose the backend. ``setup=True`` runs the
        migrations (idempotent). A PostgreSQL URL that cannot be used fails at once with
        the server's reason (a BackendError).
        """
        settings = settings or Settings.from_env()
        conn = open_connection(url if url is not None else settings.url, pool_size=pool_size)
        try:
            store = cls._owning(conn, index, embeddings, qdrant, qdrant_collection, settings, ttl)
        except BaseException:
            conn.close()
            raise
        try:
            if setup:
                store.db.run(store.core.setup_flow())
            yield store
        finally:
            store.close()

    @classmethod
    def afrom_url(
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
        ttl: TTLConfig | None = None,
    ) -> AsyncStoreOpener:
        """Async twin of :meth:`from_url`; PostgreSQL gets an async pool.

        Use it as ``async with TieredMemoryStore.afrom_url(url) as store:`` (closed on
        exit), or ``store = await TieredMemoryStore.afrom_url(url)`` for a store that lives
        as long as the application (then ``await store.aclose()`` at its end).
        """

        async def opened() -> TieredMemoryStore:
            chosen = settings or Settings.from_env()
            conn = await open_async_connection(
                url if url is not None else chosen.url, pool_size=pool_size
            )
            try:
                store = cls._owning(conn, index, embeddings, qdrant, qdrant_collection, chosen, ttl)
            except BaseException:
                await aclose(conn)
                raise
            try:
                if setup:
                    await store.asetup()
            except BaseException:
                await store.aclose()
                raise
            return store

        return AsyncStoreOpener(opened)

    @classmethod
    def from_conn_string(
        cls, conn_string: str, **kwargs: Any
    ) -> AbstractContextManager[TieredMemoryStore]:
        """LangGraph's name for :meth:`from_url` (same keyword arguments).

        ``conn_string`` is a URL, a libpq ``key=value`` string, or, as LangGraph's
        ``SqliteStore`` takes it, an SQLite file path (or ``":memory:"``).
        """
        return cls.from_url(conn_string_url(conn_string), **kwargs)

    @classmethod
    def afrom_conn_string(cls, conn_string: str, **kwargs: Any) -> AsyncStoreOpener:
        """LangGraph's name for :meth:`afrom_url` (see :meth:`from_conn_string`)."""
        return cls.afrom_url(conn_string_url(conn_string), **kwargs)

    # -- lifecycle -----------------------------------------------------------------------
    def setup(self) -> Awaitable[None]:
        """Create or upgrade the schema (idempotent; safe to call on every start).

        ``store.setup()`` runs it; ``await store.setup()`` works too, as with LangGraph's
        async stores: on a store opened with an async connection, called on its event
        loop, it returns the coroutine that does the work (it must be awaited there).
        """
        if self.db.on_own_loop():
            return self.asetup()
        self.db.run(self.core.setup_flow())
        return _DONE

    async def asetup(self) -> None:
        """Async twin of :meth:`setup`."""
        await self.db.arun(self.core.setup_flow())

    def close(self) -> None:
        """Stop the TTL sweeper, flush buffered access counts and close what :meth:`from_url` opened."""
        try:
            self._sweeper.stop(timeout=5)
            if not self.db.is_async:
                self.db.run(self.core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                resource.close()
            self._owned.clear()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        try:
            self._sweeper.stop(timeout=0)
            await self.db.arun(self.core.flush_flow())
        finally:
            for resource in reversed(self._owned):
                await aclose(resource)
            self._owned.clear()

    # -- time to live ---------------------------------------------------------------------
    def sweep_ttl(self) -> int:
        """Delete expired items now (each with a ``memory.deleted`` event); how many.

        Reads never return expired items, so sweeping only reclaims space. The count may
        also be awaited (``await store.sweep_ttl()``, as LangGraph's async stores are
        called); on the event loop of a store opened with an async connection the call
        returns the awaitable that sweeps.
        """
        if self.db.on_own_loop():
            return cast(int, self.asweep_ttl())
        return Answer(self.db.run(self.core.sweep_flow()))

    async def asweep_ttl(self) -> int:
        """Async twin of :meth:`sweep_ttl`."""
        return int(await self.db.arun(self.core.sweep_flow()))

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> SweeperFuture:
        """Sweep expired items in the background every ``sweep_interval_minutes``.

        The interval defaults to the ``ttl`` config's ``sweep_interval_minutes``, else 5.
        A daemon thread does it, or, called on the event loop of a store opened with an
        async connection, a task of that loop. The returned ``concurrent.futures.Future``
        completes when it stops; awaiting it gives it back at once (``await
        store.start_ttl_sweeper()``, as with LangGraph's async stores). A second call
        while it runs returns the same future. :meth:`close` stops it.
        """
        interval = (
            sweep_interval_minutes
            or (self.ttl_config or {}).get("sweep_interval_minutes")
            or DEFAULT_SWEEP_MINUTES
        )
        return self._sweeper.start(interval)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> int:
        """Stop the background sweeper: true (1) once stopped, false (0) if it did not stop
        within ``timeout`` seconds. The answer may also be awaited, as LangGraph's async
        stores' is."""
        return Answer(self._sweeper.stop(timeout))

    # -- BaseStore's methods: each builds one op (shared by the twins) ----------------------
    def _put_op(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any] | None,
        index: Literal[False] | list[str] | None = None,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> PutOp:
        namespace = as_namespace(namespace)
        # LangGraph reserves the "langgraph" namespace in put only (not delete or batch).
        validate_namespace(namespace, reserved_ok=value is None)
        if isinstance(ttl, NotProvided):
            ttl = (self.ttl_config or {}).get("default_ttl")
        return PutOp(namespace, str(key), value, index=index, ttl=ttl)

    def _get_op(self, namespace: Sequence[str], key: str, refresh_ttl: bool | None) -> GetOp:
        namespace = as_namespace(namespace)
        validate_namespace(namespace, reserved_ok=True)
        return GetOp(namespace, str(key), self._refresh(refresh_ttl))

    def _search_op(
        self,
        namespace_prefix: Sequence[str],
        query: str | None,
        filter: dict[str, Any] | None,
        limit: int,
        offset: int,
        refresh_ttl: bool | None,
    ) -> SearchOp:
        prefix = as_namespace(namespace_prefix, field="namespace_prefix")
        validate_namespace(prefix, field="namespace_prefix", prefix=True)
        return SearchOp(prefix, filter, limit, offset, query, self._refresh(refresh_ttl))

    def _list_op(
        self,
        prefix: NamespacePath | None,
        suffix: NamespacePath | None,
        max_depth: int | None,
        limit: int,
        offset: int,
    ) -> ListNamespacesOp:
        conditions = []
        for match_type, path in (("prefix", prefix), ("suffix", suffix)):
            if path:
                path = as_namespace(path, field=match_type)
                validate_namespace(path, field=match_type, prefix=True)
                conditions.append(MatchCondition(match_type, path))  # type: ignore[arg-type]
        return ListNamespacesOp(tuple(conditions), max_depth, limit, offset)

    def _refresh(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return bool(refresh_ttl)
        # As LangGraph's SqliteStore: reads refresh by default only when the config says so.
        return bool((self.ttl_config or {}).get("refresh_on_read", False))

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store or replace an item (see LangGraph's ``BaseStore.put``).

        ``ttl``: minutes until it expires (``None``: never); left out, the ``ttl``
        config's ``default_ttl``.
        """
        self.batch([self._put_op(namespace, key, value, index, ttl)])

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Async twin of :meth:`put`; concurrent calls share one batch (see coalesce.py)."""
        await self._queue.submit(self._put_op(namespace, key, value, index, ttl))

    def get(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """The item at ``namespace``/``key``, or None (also once it has expired).

        ``refresh_ttl`` restarts its TTL (default: the config's ``refresh_on_read``, False when left out).
        """
        return cast("Item | None", self.batch([self._get_op(namespace, key, refresh_ttl)])[0])

    async def aget(
        self,
        namespace: tuple[str, ...],
        key: str,
        *,
        refresh_ttl: bool | None = None,
    ) -> Item | None:
        """Async twin of :meth:`get`."""
        result: Item | None = await self._queue.submit(self._get_op(namespace, key, refresh_ttl))
        return result

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
        authors: AuthorMode | None = None,
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
            authors: what naming a speaker in the query does: ``"boost"`` (default: the
                episodic memories that speaker wrote rank higher) or ``"off"``.

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
        op = self._search_op(
            namespace_prefix,
            query,
            options_filter(
                filter, now=now, as_of=as_of, time=time, min_score=min_score, authors=authors
            ),
            limit,
            offset,
            refresh_ttl,
        )
        return cast("list[SearchItem]", self.batch([op])[0])

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
        authors: AuthorMode | None = None,
    ) -> list[SearchItem]:
        """Async twin of :meth:`search`."""
        op = self._search_op(
            namespace_prefix,
            query,
            options_filter(
                filter, now=now, as_of=as_of, time=time, min_score=min_score, authors=authors
            ),
            limit,
            offset,
            refresh_ttl,
        )
        return cast("list[SearchItem]", await self._queue.submit(op))

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
        op = self._list_op(prefix, suffix, max_depth, limit, offset)
        return cast("list[tuple[str, ...]]", self.batch([op])[0])

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
        result: list[tuple[str, ...]] = await self._queue.submit(
            self._list_op(prefix, suffix, max_depth, limit, offset)
        )
        return result

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item (a no-op when it does not exist)."""
        self.batch([self._put_op(namespace, key, None, ttl=None)])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async twin of :meth:`delete`."""
        await self._queue.submit(self._put_op(namespace, key, None, ttl=None))

    def as_retriever(self, scope: str | tuple[str, ...], **options: Any) -> TieredMemoryRetriever:
        """A LangChain retriever over ``scope`` (``kinds``, ``filter``, ``k``, ``min_score``)."""
        return TieredMemoryRetriever(store=self, scope=scope, **options)

    # -- the BaseStore seam ----------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ops in one transaction (reads see the state before the batch's writes).

        With a :attr:`put_pipeline`, puts of memory namespaces go through it after the
        rest of the batch (see ``memory_puts``): the batch is then not one transaction.
        """
        ops = list(ops)
        pipeline = self.put_pipeline
        split = self._split(ops) if pipeline is not None else None
        if pipeline is None or split is None:
            return self.db.run(self.core.batch_flow(ops))
        rest = [op for _, op in split.rest]
        done = self.db.run(self.core.batch_flow(rest)) if rest else []
        pipeline.put_many(split.memory)
        return self._placed(len(ops), split.rest, done)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of :meth:`batch`."""
        ops = list(ops)
        pipeline = self.put_pipeline
        split = self._split(ops) if pipeline is not None else None
        if pipeline is None or split is None:
            return await self.db.arun(self.core.batch_flow(ops))
        rest = [op for _, op in split.rest]
        done = await self.db.arun(self.core.batch_flow(rest)) if rest else []
        await pipeline.aput_many(split.memory)
        return self._placed(len(ops), split.rest, done)

    def _split(self, ops: list[Op]) -> MemorySplit | None:
        return split_memory_puts(ops, max_chars=self.settings.max_content_chars)

    @staticmethod
    def _placed(n: int, rest: list[tuple[int, Op]], done: list[Result]) -> list[Result]:
        """The results of the batch's other ops at their places (a put's is None)."""
        results: list[Result] = [None] * n
        for (i, _), result in zip(rest, done, strict=True):
            results[i] = result
        return results


class AsyncStoreOpener(AbstractAsyncContextManager["TieredMemoryStore"]):
    """What :meth:`TieredMemoryStore.afrom_url` gives: a store to enter or to await.

    ``async with opener as store:`` opens the store and closes everything it opened on
    exit; ``store = await opener`` opens it and leaves closing to the caller
    (``await store.aclose()``). Each use opens its own store.
    """

    __slots__ = ("_open", "_stores")

    def __init__(self, open_store: Callable[[], Awaitable[TieredMemoryStore]]) -> None:
        self._open = open_store
        self._stores: list[TieredMemoryStore] = []

    def __await__(self) -> Generator[Any, None, TieredMemoryStore]:
        return self._open().__await__()

    async def __aenter__(self) -> TieredMemoryStore:
        store = await self._open()
        self._stores.append(store)
        return store

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stores.pop().aclose()


class _Done:
    """An awaitable of work already done (what a sync ``setup`` returns)."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_DONE = _Done()
