"""The logic of the long-term store, written once as flows over a dialect and a vector index.

:class:`StoreCore` turns LangGraph ops into flows (see ``sql/flow.py``); the store class
only drives them with a backend's sync or async I/O. It composes the parts that do the
work: :class:`~langmem_tiers.long_term.store.writes.StoreWriter` (items, terms, vectors,
events), :class:`~langmem_tiers.long_term.store.search.query.StoreSearch` (BM25, dense,
fusion, ranking) and the :class:`~langmem_tiers.long_term.store.access.AccessBuffer`.

Order of a batch:

1. validate every op (nothing is written when one is bad);
2. embed the texts of puts and the queries (one call each, before any transaction);
3. write vectors to an external index (Qdrant) — orphans are harmless, missing ones not;
4. in one transaction: reads (gets, searches, namespace listings, as LangGraph's
   PostgreSQL store does, reads see the state before the batch's writes), then writes
   (items, terms, vectors) and the buffered access counts; a batch without writes reads
   in a read transaction, then refreshes TTLs and writes access counts in another;
5. delete vectors of deleted items from an external index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langmem_tiers.config import Settings
from langmem_tiers.errors import DimensionMismatchError, InvalidNamespaceError, ValidationError
from langmem_tiers.long_term.store.access import AccessBuffer
from langmem_tiers.long_term.store.embedding import embed_flow, embed_matrix_flow
from langmem_tiers.long_term.store.migrations import STORE_SCHEMA, vector_table_sql
from langmem_tiers.long_term.store.records import (
    as_namespace,
    item_id,
    join_namespace,
    split_namespace,
    validate_key,
    validate_namespace,
)
from langmem_tiers.long_term.store.search.prepared import (
    LIVE_SQL,
    PreparedSearch,
    check_page,
    prepare_search,
)
from langmem_tiers.long_term.store.search.query import (
    ITEM_COLS,
    RankedItem,
    StoreSearch,
    item_from_row,
)
from langmem_tiers.long_term.store.search.relevance import DEFAULT_COSINE_CURVE
from langmem_tiers.long_term.store.vectors import Vector, VectorIndex, VectorRow, normalize_rows
from langmem_tiers.long_term.store.writes import (
    ENGINE_COLUMNS,
    OwnWrite,
    PreparedPut,
    StoreWriter,
    WriteNote,
    prepare_put,
)
from langmem_tiers.sql import migrations as schema
from langmem_tiers.sql.dialect import ITEMS, META, Dialect
from langmem_tiers.sql.flow import Flow, Sql, Transaction

__all__ = ["ENGINE_COLUMNS", "RankedItem", "StoreCore", "WriteNote"]


class StoreCore:
    """Everything the store does that is not I/O."""

    def __init__(
        self,
        dialect: Dialect,
        index: VectorIndex,
        *,
        dims: int,
        fields: Sequence[str] | None,
        settings: Settings,
        dense_weight: float = 1.0,
        cosine_curve: tuple[float, float] | None = None,
    ) -> None:
        self.dialect = dialect
        self.index = index
        self.dims = dims
        self.fields = list(fields) if fields is not None else None
        self.settings = settings
        self.dense_weight = dense_weight
        self.access = AccessBuffer()
        self.search = StoreSearch(
            dialect,
            index,
            settings,
            self.access,
            dense_weight=dense_weight,
            cosine_curve=cosine_curve or DEFAULT_COSINE_CURVE,
        )
        self.writer = StoreWriter(dialect, index)

    # -- setup ---------------------------------------------------------------------------
    def setup_flow(self) -> Flow[None]:
        """Apply missing migrations (idempotent) and check the vector dimensions."""
        yield Transaction(self._migrate_flow())
        if not self.index.in_database:
            yield from self.index.setup_flow(self.dims)

    def _migrate_flow(self) -> Flow[None]:
        d = self.dialect
        yield from schema.migrate_flow(d, STORE_SCHEMA)
        # The vector table depends on the embedder's dimensions, so it is not a numbered
        # migration: its dims are recorded, and a different embedder is refused.
        stored = yield Sql(f"SELECT value FROM {META} WHERE name = 'dims'")
        if stored:
            if int(stored[0][0]) != self.dims:
                raise DimensionMismatchError(
                    f"this store was created with {stored[0][0]}-dimensional vectors, but the "
                    f"embeddings give {self.dims}. Use the same embeddings, or a new database."
                )
            return
        if self.index.in_database:
            for statement in vector_table_sql(d, self.dims):
                yield Sql(statement)
        yield Sql(f"INSERT INTO {META} (name, value) VALUES ('dims', ?)", [str(self.dims)])

    # -- batch -----------------------------------------------------------------------------
    def batch_flow(
        self,
        ops: Iterable[Op],
        *,
        notes: Mapping[str, WriteNote] | None = None,
        vectors: Mapping[str, Sequence[float]] | None = None,
        now: datetime | None = None,
    ) -> Flow[list[Result]]:
        """Run LangGraph ops; see the module docstring for the order of work.

        ``notes`` (by item id) annotate puts, ``vectors`` (by text) are embeddings the
        caller already has (they are not computed again), ``now`` stamps the writes.
        """
        ops = [_with_tuple_namespace(op) for op in ops]
        _check_notes(notes or {})
        now = now or self.dialect.now()
        puts, searches = self._prepare_ops(ops, now)
        rows = yield from self._put_rows_flow(puts, vectors or {})
        queries = sorted({s.query for s in searches.values() if s.query})
        query_vectors = yield from self.embed_flow(queries, query=True)
        query_vector = dict(zip(queries, query_vectors, strict=True))
        written_ids = [p.record.id for p in puts.values() if p.record is not None]
        deleted = [p for p in puts.values() if p.record is None]

        if not self.index.in_database and puts:
            yield from self.index.write_flow(rows, written_ids)

        if puts:
            cache = self.search.scope_cache
            namespaces = {join_namespace(p.namespace) for p in puts.values()}
            results: list[Result]
            results, own, refresh = yield Transaction(
                self._transaction_flow(
                    ops,
                    searches,
                    query_vector,
                    list(puts.values()),
                    rows,
                    now,
                    notes or {},
                    cache.counted(namespaces) if cache is not None else [],
                )
            )
            if cache is not None:
                cache.written(namespaces, own)
            if refresh:
                # After the write's commit, in a transaction holding nothing else: inside
                # the write, waiting for a read item another writer held while that
                # writer waited for one of the write's items was a deadlock.
                yield Transaction(self._refresh_flow(refresh, now))
            yield from self._analyze_access_flow()
        else:
            # Reads only: a read transaction (on PostgreSQL no transaction block at all, on
            # SQLite no write lock). The TTL refreshes and buffered access counts they call
            # for are written after it, in a transaction of their own.
            results, accessed, refresh = yield Transaction(
                self._reads_flow(ops, searches, query_vector, now), read_only=True
            )
            if refresh or self.access.due(force=False):
                yield Transaction(self._upkeep_flow(refresh, now, force=False))
                yield from self._analyze_access_flow()
            self.access.record(accessed, now)

        if not self.index.in_database and deleted:
            yield from self.index.delete_flow([item_id(p.namespace, p.key) for p in deleted])
        return results

    def _prepare_ops(
        self, ops: list[Op], now: datetime
    ) -> tuple[dict[tuple[tuple[str, ...], str], PreparedPut], dict[int, PreparedSearch]]:
        """Validate every op before any I/O: the puts by item (the last put of an item
        wins) and the searches by position, prepared; the other ops checked."""
        puts: dict[tuple[tuple[str, ...], str], PreparedPut] = {}
        searches: dict[int, PreparedSearch] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                prepared = prepare_put(
                    op, fields=self.fields, max_chars=self.settings.max_content_chars
                )
                puts[(prepared.namespace, prepared.key)] = prepared  # the last put wins
            elif isinstance(op, SearchOp):
                searches[i] = prepare_search(op, self.dialect, now=now)
            elif isinstance(op, GetOp):
                validate_namespace(op.namespace, reserved_ok=True)
                validate_key(op.key)
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    validate_namespace(tuple(condition.path), field="match path", prefix=True)
                check_page(op.limit, op.offset)
            else:
                raise ValidationError(f"unsupported store operation {type(op).__name__}: {op!r}")
        return puts, searches

    def _put_rows_flow(
        self,
        puts: Mapping[tuple[tuple[str, ...], str], PreparedPut],
        vectors: Mapping[str, Sequence[float]],
    ) -> Flow[list[VectorRow]]:
        """The puts' vector rows, unit length, embedding only the texts ``vectors`` lacks."""
        texts = [text for p in puts.values() for _, text in p.texts]
        missing = sorted({t for t in texts if t not in vectors})
        matrix = yield from embed_matrix_flow(missing, dims=self.dims, query=False)
        embedded = dict(zip(missing, matrix, strict=True))
        vectors_by_text: list[Vector] = [
            list(vectors[t]) if t in vectors else embedded[t] for t in texts
        ]
        # Unit rows once, for the index and for the namespace cache alike.
        units = normalize_rows(vectors_by_text) if vectors_by_text else np.zeros((0, 0))
        rows: list[VectorRow] = []
        position = 0
        for p in puts.values():
            for field_id, _ in p.texts:
                assert p.record is not None
                rows.append(VectorRow(p.record.id, field_id, p.record.prefix, units[position]))
                position += 1
        return rows

    def _transaction_flow(
        self,
        ops: list[Op],
        searches: dict[int, PreparedSearch],
        query_vector: dict[str, list[float]],
        puts: list[PreparedPut],
        rows: list[VectorRow],
        now: datetime,
        notes: Mapping[str, WriteNote],
        counted: Sequence[str],
    ) -> Flow[tuple[list[Result], OwnWrite | None, list[str]]]:
        """The batch's reads and writes in one transaction, with the buffered access counts;
        also the ids of the items read whose TTL to restart (after it commits)."""
        results, accessed, refresh = yield from self._reads_flow(ops, searches, query_vector, now)
        own = yield from self.writer.write_flow(puts, rows, now, notes, counted=counted)
        yield from self.access.flush_flow(self.dialect)
        self.access.record(accessed, now)
        return results, own, refresh

    def _reads_flow(
        self,
        ops: list[Op],
        searches: dict[int, PreparedSearch],
        query_vector: dict[str, list[float]],
        now: datetime,
    ) -> Flow[tuple[list[Result], list[str], list[str]]]:
        """The results of the reads of ``ops``, the ids of the items they read, and the ids
        of those read with ``refresh_ttl`` that have a TTL."""
        results: list[Result] = [None] * len(ops)
        accessed: list[str] = []
        refresh: list[str] = []
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            found = yield from self._get_flow([op for _, op in gets], now)
            for (i, get), hit in zip(gets, found, strict=True):
                results[i] = hit[0] if hit else None
                if hit:
                    accessed.append(hit[1])
                    if hit[2] and get.refresh_ttl:
                        refresh.append(hit[1])
        for i, search in searches.items():
            wants = refresh if search.refresh_ttl else None
            if search.query:
                items, ids = yield from self.search.ranked_flow(
                    search, query_vector[search.query], now, wants
                )
                accessed.extend(ids)
                results[i] = items
            else:
                results[i] = yield from self.search.list_flow(search, wants)
        for i, op in enumerate(ops):
            if isinstance(op, ListNamespacesOp):
                results[i] = yield from self._namespaces_flow(op, now)
        return results, accessed, refresh

    def _upkeep_flow(self, refresh: Sequence[str], now: datetime, *, force: bool) -> Flow[None]:
        """Restart the TTL of the items in ``refresh``, then write the buffered access
        counts when they are due (``force``: whenever there are some)."""
        if refresh:
            yield from self._refresh_flow(refresh, now)
        if self.access.due(force=force):
            yield from self.access.flush_flow(self.dialect)

    def _analyze_access_flow(self) -> Flow[None]:
        """Refresh the planner's statistics of the access counts' table when it grew past
        them (see ``access._ANALYZE_ROWS``), after the flush's transaction."""
        if self.access.analyze_due():
            yield Transaction(self.access.analyze_flow(self.dialect))

    # -- searches with options the BaseStore API has no room for ---------------------------
    def search_flow(
        self,
        op: SearchOp,
        *,
        statuses: Sequence[str] | None = ("active",),
        where: str | None = None,
        params: Sequence[Any] = (),
    ) -> Flow[list[SearchItem]]:
        """One search whose items may have other statuses than ``active`` (``None``: any).

        ``where`` is an extra SQL condition on the items (alias ``i``) with ``?``
        placeholders bound to ``params``; it is trusted SQL written by this package,
        never text from a user.
        """
        prefix = as_namespace(op.namespace_prefix, field="namespace_prefix")
        search = prepare_search(
            op._replace(namespace_prefix=prefix),
            self.dialect,
            statuses=statuses,
            where=where,
            params=params,
        )
        vector: list[float] = []
        if search.query:
            vector = (yield from self.embed_flow([search.query], query=True))[0]
        now = self.dialect.now()
        # A read transaction (one snapshot, no write lock on SQLite, so concurrent
        # searches of other connections and processes do not queue behind each other);
        # buffered access counts are written after it, in their own transaction.
        items: list[SearchItem] = yield Transaction(
            self._search_transaction_flow(search, vector, now), read_only=True
        )
        if search.query and self.access.due(force=False):
            yield Transaction(self.access.flush_flow(self.dialect))
            yield from self._analyze_access_flow()
        return items

    def _search_transaction_flow(
        self, search: PreparedSearch, vector: list[float], now: datetime
    ) -> Flow[list[SearchItem]]:
        if not search.query:
            return (yield from self.search.list_flow(search))
        items, ids = yield from self.search.ranked_flow(search, vector, now)
        self.access.record(ids, now)
        return items

    def nearest_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int,
        *,
        prefix: str,
    ) -> Flow[dict[str, float]]:
        """The ``k`` items most similar to ``vector`` among items matching ``where``."""
        return (yield from self.search.nearest_flow(vector, where, params, k, prefix=prefix))

    def embed_flow(self, texts: Sequence[str], *, query: bool = False) -> Flow[list[list[float]]]:
        """Embed texts as the store does (checked dimensions; EmbeddingError on failure)."""
        return (yield from embed_flow(texts, dims=self.dims, query=query))

    # -- reads -------------------------------------------------------------------------------
    def _get_flow(
        self, ops: list[GetOp], now: datetime
    ) -> Flow[list[tuple[Item, str, bool] | None]]:
        """Per op, the live item with its id and whether it has a TTL (None: not found)."""
        by_prefix: dict[str, dict[str, None]] = {}
        for op in ops:
            by_prefix.setdefault(join_namespace(op.namespace), {})[op.key] = None
        found: dict[tuple[str, str], tuple[Item, str, bool]] = {}
        live = self.dialect.ts_param(now)
        for prefix, keys in by_prefix.items():
            in_keys, params = self.dialect.in_list("i.key", list(keys))
            rows = yield Sql(
                f"SELECT {ITEM_COLS}, i.ttl_minutes FROM {ITEMS} i"
                f" WHERE i.prefix = ? AND {in_keys} AND {LIVE_SQL}",
                [prefix, *params, live],
            )
            for row in rows:
                item = item_from_row(self.dialect, row)
                found[(row[0], row[1])] = (item, row[5], row[6] is not None)
        return [found.get((join_namespace(op.namespace), op.key)) for op in ops]

    def _refresh_flow(self, ids: Sequence[str], now: datetime) -> Flow[None]:
        """Restart the TTL of items that were read, unless they expired meanwhile."""
        ids = sorted(set(ids))
        in_ids, id_params = self.dialect.in_list("i.id", ids)
        live = self.dialect.ts_param(now)
        # Rows are locked in id order, so two refreshing readers cannot deadlock.
        yield Sql(
            self.dialect.folding_moves(
                f"UPDATE {ITEMS} SET expires_at = {self.dialect.expiry_sql()} WHERE id IN"
                f" (SELECT i.id FROM {ITEMS} i WHERE {in_ids}"
                f" AND i.ttl_minutes IS NOT NULL AND {LIVE_SQL}"
                f" ORDER BY i.id{self.dialect.for_update})"
            ),
            [live, *id_params, live],
        )

    def sweep_flow(self, *, now: datetime | None = None, chunk: int = 500) -> Flow[int]:
        """Delete expired items, as deletes (terms, vectors and a ``memory.deleted`` event
        with ``{"reason": "expired"}``); the number deleted.

        Each chunk is one transaction, which re-reads the candidates once their items are
        locked: an item a writer renewed meanwhile is not deleted.
        """
        total = 0
        while True:
            at = now or self.dialect.now()
            rows = yield Sql(
                f"SELECT i.id FROM {ITEMS} i WHERE i.expires_at IS NOT NULL"
                f" AND i.expires_at <= ? ORDER BY i.expires_at LIMIT ?",
                [self.dialect.ts_param(at), chunk],
            )
            if not rows:
                return total
            deleted: list[str] = yield Transaction(self._sweep_chunk_flow([r[0] for r in rows], at))
            if deleted and not self.index.in_database:
                yield from self.index.delete_flow(deleted)
            total += len(deleted)
            if len(rows) < chunk:
                return total

    def _sweep_chunk_flow(self, ids: list[str], now: datetime) -> Flow[list[str]]:
        lock = self.dialect.lock_items_sql()
        if lock:
            yield Sql(lock, [sorted(ids)])
        in_ids, id_params = self.dialect.in_list("i.id", ids)
        rows = yield Sql(
            f"SELECT i.id, i.prefix, i.key FROM {ITEMS} i WHERE {in_ids}"
            " AND i.expires_at IS NOT NULL AND i.expires_at <= ?",
            [*id_params, self.dialect.ts_param(now)],
        )
        if not rows:
            return []
        deletes = [PreparedPut(None, split_namespace(r[1]), r[2], [], {}, 0) for r in rows]
        note = WriteNote(metadata={"reason": "expired"})
        yield from self.writer.write_flow(deletes, [], now, {r[0]: note for r in rows})
        return [r[0] for r in rows]

    def _namespaces_flow(self, op: ListNamespacesOp, now: datetime) -> Flow[list[tuple[str, ...]]]:
        rows = yield Sql(
            f"SELECT DISTINCT i.prefix FROM {ITEMS} i WHERE {LIVE_SQL}",
            [self.dialect.ts_param(now)],
        )
        namespaces = [split_namespace(r[0]) for r in rows]
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _matches(condition, ns)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        namespaces.sort()
        return namespaces[op.offset : op.offset + op.limit]

    def flush_flow(self) -> Flow[None]:
        """Write buffered access counts now (the store does this on close)."""
        if self.access.counts:
            yield Transaction(self.access.flush_flow(self.dialect))


def _check_notes(notes: Mapping[str, WriteNote]) -> None:
    """Refuse a note that sets a column the engine may not set."""
    for note_id, note in notes.items():
        unknown = set(note.columns or {}) - set(ENGINE_COLUMNS)
        if unknown:
            raise ValidationError(
                f"note of {note_id} sets unknown column(s) {sorted(unknown)}; "
                f"only {sorted(ENGINE_COLUMNS)} can be set this way."
            )


def _with_tuple_namespace(op: Op) -> Op:
    """``op`` with its namespace (or prefix, or match paths) as tuples: LangGraph takes lists."""
    if isinstance(op, (GetOp, PutOp)):
        return op._replace(namespace=as_namespace(op.namespace))
    if isinstance(op, SearchOp):
        return op._replace(
            namespace_prefix=as_namespace(op.namespace_prefix, field="namespace_prefix")
        )
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        return op._replace(
            match_conditions=tuple(
                c._replace(path=_match_path(c.path)) for c in op.match_conditions
            )
        )
    return op


def _match_path(path: Any) -> tuple[str, ...]:
    """A match condition's path as a tuple; a bare string is a path of one label, as
    LangGraph's own tests write it (``MatchCondition("suffix", "public")``)."""
    if isinstance(path, str):
        return (path,)
    return as_namespace(path, field="match path")


def _matches(condition: Any, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise InvalidNamespaceError(
            f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}."
        )
    return all(p == "*" or n == p for n, p in pairs)
