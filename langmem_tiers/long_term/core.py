"""The logic of the long-term store, written once as flows over a dialect and a vector index.

:class:`StoreCore` turns LangGraph ops into flows (see flow.py); the store class only
drives them with a backend's sync or async I/O. Order of a batch:

1. validate every op (nothing is written when one is bad);
2. embed the texts of puts and the queries (one call each, before any transaction);
3. write vectors to an external index (Qdrant) — orphans are harmless, missing ones not;
4. in one transaction: reads (gets, searches, namespace listings, as LangGraph's
   PostgreSQL store does, reads see the state before the batch's writes), then writes
   (items, terms, vectors) and the buffered access counts;
5. delete vectors of deleted items from an external index.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

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
from langmem_tiers.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidContentError,
    InvalidNamespaceError,
    ValidationError,
)
from langmem_tiers.long_term import lexical
from langmem_tiers.long_term.dialect import (
    ITEMS,
    META,
    TERMS,
    Dialect,
    item_columns,
    migrate_flow,
)
from langmem_tiers.long_term.events import EventRow, snapshot_flow, write_events_flow
from langmem_tiers.long_term.filters import compile_filter, validate_filter
from langmem_tiers.long_term.flow import Embed, Flow, InsertRows, Sql, SqlMany, Transaction
from langmem_tiers.long_term.fusion import fuse
from langmem_tiers.long_term.ranking import Candidate, rank
from langmem_tiers.long_term.records import (
    ItemRecord,
    item_id,
    join_namespace,
    split_namespace,
    texts_to_index,
    utf8_error,
    validate_key,
    validate_namespace,
    validate_value,
)
from langmem_tiers.long_term.vectors import VectorIndex, VectorRow

__all__ = ["ENGINE_COLUMNS", "RankedItem", "StoreCore", "WriteNote"]

_MAX_QUERY_CHARS = 10_000
_MAX_PAGE = 2**31  # what every database here can bind as a LIMIT/OFFSET
_ACCESS_FLUSH_ITEMS = 500
_ACCESS_FLUSH_SECONDS = 2.0

# Memory columns a value does not carry, kept by the memory engine: name -> is a timestamp.
ENGINE_COLUMNS: dict[str, bool] = {
    "version": False,
    "reinforcement_count": False,
    "last_used_at": True,
    "consolidated_into_id": False,
}


class WriteNote(NamedTuple):
    """What a caller adds to the put of one item (see :meth:`StoreCore.batch_flow`).

    ``event_type`` and ``metadata`` replace the event's defaults (``memory.created`` /
    ``memory.updated``, ``{}``); ``columns`` sets :data:`ENGINE_COLUMNS` in the same
    transaction, before the event's snapshot is taken.
    """

    event_type: str | None = None
    metadata: dict[str, Any] | None = None
    columns: dict[str, Any] | None = None


class RankedItem(SearchItem):
    """A search result with the components of its hybrid score.

    ``score`` is the combined score; ``scores`` maps ``semantic``, ``recency``,
    ``frequency`` and ``confidence`` to their values in [0, 1].
    """

    __slots__ = ("scores",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float,
        scores: dict[str, float],
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.scores = scores

    def dict(self) -> dict[str, Any]:
        out = super().dict()
        out["scores"] = dict(self.scores)
        return out


class _PreparedPut(NamedTuple):
    record: ItemRecord | None  # None: delete
    namespace: tuple[str, ...]
    key: str
    texts: list[tuple[str, str]]  # (field, text) to embed
    terms: dict[str, int]
    doc_len: int


class _Postings(NamedTuple):
    """Term frequencies of some terms within a search's filtered set, and the set's size."""

    n_docs: int
    avgdl: float
    tf: dict[str, dict[str, int]]  # term -> item id -> frequency
    doc_len: dict[str, int]  # item id -> number of terms
    members: set[str] | None = None  # every item of the set, when asked for


class _PreparedSearch(NamedTuple):
    prefix: tuple[str, ...]
    where: str
    params: list[Any]
    value_filtered: bool
    limit: int
    offset: int
    query: str | None


@dataclass
class _AccessBuffer:
    """Access counts of retrieved items, flushed in one statement instead of one write each."""

    counts: dict[str, int] = field(default_factory=dict)
    last_at: dict[str, datetime] = field(default_factory=dict)
    since: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, ids: Iterable[str], at: datetime) -> None:
        with self.lock:
            if not self.counts:
                self.since = time.monotonic()
            for item_id in ids:
                self.counts[item_id] = self.counts.get(item_id, 0) + 1
                self.last_at[item_id] = at

    def pending(self, item_id: str) -> int:
        return self.counts.get(item_id, 0)

    def due(self, force: bool) -> bool:
        if not self.counts:
            return False
        return (
            force
            or len(self.counts) >= _ACCESS_FLUSH_ITEMS
            or time.monotonic() - self.since >= _ACCESS_FLUSH_SECONDS
        )

    def take(self) -> list[tuple[int, datetime, str]]:
        with self.lock:
            rows = [(n, self.last_at[i], i) for i, n in self.counts.items()]
            self.counts, self.last_at = {}, {}
            return rows

    def restore(self, rows: Sequence[tuple[int, datetime, str]]) -> None:
        with self.lock:
            for n, at, item_id in rows:
                self.counts[item_id] = self.counts.get(item_id, 0) + n
                self.last_at[item_id] = max(at, self.last_at.get(item_id, at))


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
    ) -> None:
        self.dialect = dialect
        self.index = index
        self.dims = dims
        self.fields = list(fields) if fields is not None else None
        self.settings = settings
        self.dense_weight = dense_weight
        self.access = _AccessBuffer()

    # -- setup ---------------------------------------------------------------------------
    def setup_flow(self) -> Flow[None]:
        """Apply missing migrations (idempotent) and check the vector dimensions."""
        yield Transaction(self._migrate_flow())
        if not self.index.in_database:
            yield from self.index.setup_flow(self.dims)

    def _migrate_flow(self) -> Flow[None]:
        d = self.dialect
        yield from migrate_flow(d)
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
            for statement in d.vector_migrations(self.dims):
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
        ops = list(ops)
        for note_id, note in (notes or {}).items():
            unknown = set(note.columns or {}) - set(ENGINE_COLUMNS)
            if unknown:
                raise ValidationError(
                    f"note of {note_id} sets unknown column(s) {sorted(unknown)}; "
                    f"only {sorted(ENGINE_COLUMNS)} can be set this way."
                )
        puts: dict[tuple[tuple[str, ...], str], _PreparedPut] = {}
        searches: dict[int, _PreparedSearch] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                prepared = self._prepare_put(op)
                puts[(prepared.namespace, prepared.key)] = prepared  # the last put wins
            elif isinstance(op, SearchOp):
                searches[i] = self._prepare_search(op)
            elif isinstance(op, GetOp):
                validate_namespace(op.namespace)
                validate_key(op.key)
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    validate_namespace(tuple(condition.path), field="match path", prefix=True)
                _check_page(op.limit, op.offset)
            else:
                raise ValidationError(f"unsupported store operation {type(op).__name__}: {op!r}")

        texts = [text for p in puts.values() for _, text in p.texts]
        known = vectors or {}
        missing = sorted({t for t in texts if t not in known})
        embedded = dict(
            zip(missing, (yield from self._embed_flow(missing, query=False)), strict=True)
        )
        vectors_by_text = [list(known[t]) if t in known else embedded[t] for t in texts]
        queries = sorted({s.query for s in searches.values() if s.query})
        query_vectors = yield from self._embed_flow(queries, query=True)
        query_vector = dict(zip(queries, query_vectors, strict=True))

        rows: list[VectorRow] = []
        position = 0
        for p in puts.values():
            for field_id, _ in p.texts:
                assert p.record is not None
                rows.append(
                    VectorRow(p.record.id, field_id, p.record.prefix, vectors_by_text[position])
                )
                position += 1
        written_ids = [p.record.id for p in puts.values() if p.record is not None]
        deleted = [p for p in puts.values() if p.record is None]

        if not self.index.in_database and puts:
            yield from self.index.write_flow(rows, written_ids)

        now = now or self.dialect.now()
        results: list[Result] = yield Transaction(
            self._transaction_flow(
                ops, searches, query_vector, list(puts.values()), rows, now, notes or {}
            )
        )

        if not self.index.in_database and deleted:
            yield from self.index.delete_flow([item_id(p.namespace, p.key) for p in deleted])
        return results

    def _transaction_flow(
        self,
        ops: list[Op],
        searches: dict[int, _PreparedSearch],
        query_vector: dict[str, list[float]],
        puts: list[_PreparedPut],
        rows: list[VectorRow],
        now: datetime,
        notes: Mapping[str, WriteNote],
    ) -> Flow[list[Result]]:
        results: list[Result] = [None] * len(ops)
        accessed: list[str] = []
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            found = yield from self._get_flow([op for _, op in gets])
            for (i, _get), hit in zip(gets, found, strict=True):
                results[i] = hit[0] if hit else None
                if hit:
                    accessed.append(hit[1])
        for i, search in searches.items():
            if search.query:
                items, ids = yield from self._ranked_search_flow(
                    search, query_vector[search.query], now
                )
                accessed.extend(ids)
                results[i] = items
            else:
                results[i] = yield from self._list_flow(search)
        for i, op in enumerate(ops):
            if isinstance(op, ListNamespacesOp):
                results[i] = yield from self._namespaces_flow(op)
        if puts:
            yield from self._write_flow(puts, rows, now, notes)
        if self.access.due(force=bool(puts)):
            yield from self._flush_access_flow()
        self.access.record(accessed, now)
        return results

    # -- preparation (pure) ------------------------------------------------------------------
    def _prepare_put(self, op: PutOp) -> _PreparedPut:
        validate_namespace(op.namespace)
        key = validate_key(op.key)
        if op.value is None:
            return _PreparedPut(None, op.namespace, key, [], {}, 0)
        record = validate_value(
            op.namespace, key, op.value, max_chars=self.settings.max_content_chars
        )
        if op.index is False:
            return _PreparedPut(record, op.namespace, key, [], {}, 0)
        fields = list(op.index) if isinstance(op.index, list) else self.fields
        texts = texts_to_index(record, fields)
        terms = lexical.analyze(" ".join(text for _, text in texts))
        return _PreparedPut(
            record, op.namespace, key, texts, lexical.term_frequencies(terms), len(terms)
        )

    def _prepare_search(
        self,
        op: SearchOp,
        *,
        statuses: Sequence[str] | None = ("active",),
        where: str | None = None,
        params: Sequence[Any] = (),
    ) -> _PreparedSearch:
        prefix = tuple(op.namespace_prefix)
        validate_namespace(prefix, field="namespace_prefix", prefix=True)
        limit, offset = _check_page(op.limit, op.offset)
        if op.query is not None:
            if not isinstance(op.query, str):
                raise InvalidContentError(f"query must be a string, got {op.query!r}.")
            if "\x00" in op.query:
                raise InvalidContentError("query contains a NUL byte (\\x00); remove it.")
            if len(op.query) > _MAX_QUERY_CHARS:
                raise InvalidContentError(
                    f"query is {len(op.query)} characters; the limit is {_MAX_QUERY_CHARS}."
                )
            refusal = utf8_error(op.query, "query")
            if refusal is not None:
                raise InvalidContentError(refusal)
        conditions = validate_filter(op.filter)
        where_parts: list[str] = []
        bound: list[Any] = []
        if statuses is not None and tuple(statuses) == ("active",):
            where_parts.append("i.status = 'active'")
        elif statuses is not None:
            if not statuses:
                raise ValidationError("statuses must name at least one status, got none.")
            where_parts.append(f"i.status IN ({', '.join('?' for _ in statuses)})")
            bound.extend(statuses)
        if where:
            where_parts.append(f"({where})")
            bound.extend(params)
        if prefix:
            joined = join_namespace(prefix)
            # Items in the namespace itself or below it: '/' sorts right after '.'.
            where_parts.append("(i.prefix = ? OR (i.prefix > ? AND i.prefix < ?))")
            bound.extend([joined, joined + ".", joined + "/"])
        filter_sql, filter_params = compile_filter(conditions, self.dialect)
        where_parts.append(filter_sql)
        bound.extend(filter_params)
        return _PreparedSearch(
            prefix,
            " AND ".join(where_parts),
            bound,
            bool(conditions),
            limit,
            offset,
            op.query if op.query and op.query.strip() else None,
        )

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
        search = self._prepare_search(op, statuses=statuses, where=where, params=params)
        vector: list[float] = []
        if search.query:
            vector = (yield from self._embed_flow([search.query], query=True))[0]
        now = self.dialect.now()
        items: list[SearchItem] = yield Transaction(
            self._search_transaction_flow(search, vector, now)
        )
        return items

    def _search_transaction_flow(
        self, search: _PreparedSearch, vector: list[float], now: datetime
    ) -> Flow[list[SearchItem]]:
        if not search.query:
            return (yield from self._list_flow(search))
        items, ids = yield from self._ranked_search_flow(search, vector, now)
        if self.access.due(force=False):
            yield from self._flush_access_flow()
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
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        """The ``k`` items most similar to ``vector`` among items matching ``where``.

        ``candidates``, when known, is how many items match ``where`` (lets an index pick
        an exact scan for small scopes). ``include`` are items known to match ``where``
        whose similarity is wanted too (those with vectors are added to the result).
        ``members``, when known, are all the items matching ``where`` (an index that
        scores every item can then skip evaluating ``where``).

        An index outside the database (Qdrant) filters by namespace only; the SQL
        condition (statuses, scope, ...) is checked afterwards, so items it drops would
        shorten the list. Ask the index for more until ``k`` items pass or it has no more.
        """
        if self.index.in_database:
            return (
                yield from self.index.search_flow(
                    vector,
                    where,
                    params,
                    k,
                    prefix=prefix,
                    value_filtered=value_filtered,
                    candidates=candidates,
                    include=include,
                    members=members,
                )
            )
        hits = yield from self.index.search_flow(
            vector, where, params, k, prefix=prefix, value_filtered=value_filtered
        )
        if not value_filtered:
            ask = k
            passing = yield from self._passing_flow(hits, where, params)
            while len(passing) < k and ask < 256 * k:
                ask *= 4
                more = yield from self.index.search_flow(vector, where, params, ask, prefix=prefix)
                exhausted = len(more) <= len(hits)
                hits = more
                passing = yield from self._passing_flow(hits, where, params)
                if exhausted:
                    break  # the index has nothing more under this prefix
            best = sorted(passing, key=lambda i: (-hits[i], i))[:k]
            hits = {i: hits[i] for i in best}
        missing = [i for i in include if i not in hits]
        if missing:
            hits.update((yield from self.index.score_flow(vector, missing)))
        return hits

    def _passing_flow(
        self, ids: Iterable[str], where: str, params: Sequence[Any]
    ) -> Flow[set[str]]:
        ids = list(ids)
        if not ids:
            return set()
        marks = ", ".join("?" for _ in ids)
        rows = yield Sql(
            f"SELECT i.id FROM {ITEMS} i WHERE i.id IN ({marks}) AND {where}", [*ids, *params]
        )
        return {r[0] for r in rows}

    def embed_flow(self, texts: Sequence[str], *, query: bool = False) -> Flow[list[list[float]]]:
        """Embed texts as the store does (checked dimensions; EmbeddingError on failure)."""
        return (yield from self._embed_flow(texts, query=query))

    # -- embeddings --------------------------------------------------------------------------
    def _embed_flow(self, texts: Sequence[str], *, query: bool) -> Flow[list[list[float]]]:
        if not texts:
            return []
        try:
            vectors = yield Embed(list(texts), query=query)
        except ValidationError:
            raise
        except Exception as err:
            raise EmbeddingError(
                f"the embedder failed on {len(texts)} text(s): {type(err).__name__}: {err}. "
                "Nothing was stored."
            ) from err
        try:
            vectors = [_floats(v) for v in vectors]
        except TypeError as err:
            raise EmbeddingError(
                f"the embedder returned something that is not a list of number vectors: {err}."
            ) from err
        if len(vectors) != len(texts):
            raise EmbeddingError(
                f"the embedder returned {len(vectors)} vectors for {len(texts)} texts."
            )
        for vector in vectors:
            if len(vector) != self.dims:
                raise DimensionMismatchError(
                    f"the embedder returned a {len(vector)}-dimensional vector, but the index "
                    f"has dims={self.dims}; set index={{'dims': {len(vector)}, ...}} to match "
                    "the embedder."
                )
        if vectors and not np.isfinite(np.asarray(vectors, dtype=np.float64)).all():
            raise EmbeddingError("the embedder returned a vector with NaN or infinity.")
        return vectors

    # -- reads -------------------------------------------------------------------------------
    _ITEM_COLS = "i.prefix, i.key, i.value, i.created_at, i.updated_at, i.id"

    def _item(self, row: Sequence[Any]) -> Item:
        d = self.dialect
        return Item(
            value=d.json_value(row[2]),
            key=row[1],
            namespace=split_namespace(row[0]),
            created_at=d.ts_value(row[3]),  # type: ignore[arg-type]
            updated_at=d.ts_value(row[4]),  # type: ignore[arg-type]
        )

    def _get_flow(self, ops: list[GetOp]) -> Flow[list[tuple[Item, str] | None]]:
        by_prefix: dict[str, list[str]] = {}
        for op in ops:
            by_prefix.setdefault(join_namespace(op.namespace), []).append(op.key)
        found: dict[tuple[str, str], tuple[Item, str]] = {}
        for prefix, keys in by_prefix.items():
            marks = ", ".join("?" for _ in keys)
            rows = yield Sql(
                f"SELECT {self._ITEM_COLS} FROM {ITEMS} i WHERE i.prefix = ? AND i.key IN ({marks})",
                [prefix, *keys],
            )
            for row in rows:
                found[(row[0], row[1])] = (self._item(row), row[5])
        return [found.get((join_namespace(op.namespace), op.key)) for op in ops]

    def _list_flow(self, search: _PreparedSearch) -> Flow[list[SearchItem]]:
        rows = yield Sql(
            f"SELECT {self._ITEM_COLS} FROM {ITEMS} i WHERE {search.where}"
            " ORDER BY i.updated_at DESC, i.prefix, i.key LIMIT ? OFFSET ?",
            [*search.params, search.limit, search.offset],
        )
        out = []
        for row in rows:
            item = self._item(row)
            out.append(
                SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at)
            )
        return out

    def _postings_flow(
        self,
        search: _PreparedSearch,
        terms: Iterable[str],
        *,
        like_items: Sequence[str] = (),
        members: bool = False,
    ) -> Flow[_Postings]:
        """The filtered set's statistics and the postings of ``terms`` within it, one statement.

        With ``members``, also every item of the set (for an index that scores them all).
        With ``like_items``, the terms are instead those of these items (less ``terms``):
        what pseudo-relevance feedback needs, the feedback items' full term frequencies and
        the document frequencies of their terms, in the same single round trip.
        """
        wanted = sorted(set(terms))
        scope = (
            f"WITH c AS MATERIALIZED (SELECT i.id, i.doc_len FROM {ITEMS} i WHERE {search.where})"
        )
        marks = ", ".join("?" for _ in wanted)
        if like_items:
            exclude = f" AND x.term NOT IN ({marks})" if wanted else ""
            rows = yield Sql(
                f"{scope}, f AS MATERIALIZED (SELECT DISTINCT x.term FROM {TERMS} x"
                f" WHERE x.item_id IN ({', '.join('?' for _ in like_items)}){exclude})"
                f" {self._scope_postings('(SELECT f.term FROM f)')}",
                [*search.params, *like_items, *wanted],
            )
        else:
            parts = [
                # Items without terms have no postings; they are not BM25 documents either.
                "SELECT NULL, NULL, count(CASE WHEN c.doc_len > 0 THEN 1 END),"
                " CAST(avg(CASE WHEN c.doc_len > 0 THEN c.doc_len END) AS DOUBLE PRECISION)"
                " FROM c"
            ]
            if members:
                parts.append("SELECT c.id, NULL, NULL, NULL FROM c")
            if wanted:
                parts.append(self._scope_postings(f"({marks})"))
            rows = yield Sql(f"{scope} {' UNION ALL '.join(parts)}", [*search.params, *wanted])
        n_docs, avgdl = 0, 0.0
        tf: dict[str, dict[str, int]] = {}
        doc_len: dict[str, int] = {}
        found: set[str] | None = set() if members else None
        for item, term, count, length in rows:
            if item is None:
                n_docs, avgdl = int(count or 0), float(length or 0.0)
            elif term is None:
                assert found is not None
                found.add(item)
            else:
                tf.setdefault(term, {})[item] = int(count)
                doc_len[item] = int(length)
        return _Postings(n_docs, avgdl, tf, doc_len, found)

    def _scope_postings(self, term_set: str) -> str:
        """The terms rows (``t``) of the items of CTE ``c`` whose term is ``IN term_set``.

        Each item's rows are read whole through the (item_id, term, tf) index and filtered
        after: a scope is small while a frequent term has rows in every scope, and one
        range read per item beats a probe per item and term once feedback brings dozens of
        terms. SQLite keeps the written order of a CROSS JOIN, and a unary ``+`` keeps the
        term out of the index look-up; on PostgreSQL a LATERAL subquery fenced by OFFSET 0
        does both, whatever the planner's statistics say.
        """
        columns = "SELECT t.item_id, t.term, t.tf, c.doc_len"
        if self.dialect.name == "postgres":
            return (
                f"{columns} FROM c CROSS JOIN LATERAL (SELECT t.item_id, t.term, t.tf"
                f" FROM {TERMS} t WHERE t.item_id = c.id OFFSET 0) t WHERE t.term IN {term_set}"
            )
        return f"{columns} FROM c CROSS JOIN {TERMS} t WHERE t.item_id = c.id AND +t.term IN {term_set}"

    def _lexical_flow(
        self, query: str, search: _PreparedSearch
    ) -> Flow[tuple[dict[str, float], _Postings]]:
        """BM25 with pseudo-relevance feedback: expand the query with its best hits' terms.

        Returns the BM25 score of every item of the filtered set that has a term of the
        expanded query (the others score 0) and the first read of the set (its statistics,
        and its members when the vector index wants them). Two round trips at most: the
        query's postings with the statistics, then the feedback items' terms.
        """
        weights = lexical.query_weights(lexical.analyze_query(query))
        found = yield from self._postings_flow(
            search, weights, members=self.index.in_database and self.index.scans_members
        )
        if not weights or found.n_docs == 0 or found.avgdl <= 0:
            return {}, found
        first = _bm25(weights, found)
        if found.n_docs >= lexical.PRF_MIN_DOCS:
            best = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))[: lexical.PRF_DOCS]
            feedback = [(i, s) for i, s in best if s > 0]
        else:
            feedback = []
        if not feedback:
            return first, found
        ids = [i for i, _ in feedback]
        more = yield from self._postings_flow(search, weights, like_items=ids)
        tf = {**found.tf, **more.tf}
        doc_len = {**found.doc_len, **more.doc_len}
        tfs: dict[str, dict[str, int]] = {i: {} for i in ids}
        for term, by_item in tf.items():
            for item in ids:
                if item in by_item:
                    tfs[item][term] = by_item[item]
        expanded = lexical.expand_query(
            weights,
            [tfs[i] for i in ids],
            [s for _, s in feedback],
            doc_frequencies={term: len(by_item) for term, by_item in tf.items()},
            n_docs=found.n_docs,
        )
        return _bm25(expanded, _Postings(found.n_docs, found.avgdl, tf, doc_len)), found

    def _ranked_search_flow(
        self, search: _PreparedSearch, vector: list[float], now: datetime
    ) -> Flow[tuple[list[SearchItem], list[str]]]:
        assert search.query is not None
        want = search.offset + search.limit
        if want == 0:
            return [], []
        pool = want * self.settings.candidate_multiplier
        scores, found = yield from self._lexical_flow(search.query, search)
        lex = dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:pool])
        # Complete both score maps over the union, so fusion compares like with like: the
        # index scores the lexical candidates in the same call, and every item's BM25 is
        # already known.
        dense = yield from self.nearest_flow(
            vector,
            search.where,
            search.params,
            pool,
            prefix=join_namespace(search.prefix),
            value_filtered=search.value_filtered,
            candidates=found.n_docs or None,
            include=list(lex),
            members=found.members,
        )
        lex.update((i, scores[i]) for i in dense if i in scores)
        ids = sorted(set(dense) | set(lex))
        if not ids:
            return [], []
        marks = ", ".join("?" for _ in ids)
        rows = yield Sql(
            f"SELECT {self._ITEM_COLS}, i.event_at, i.access_count, i.confidence"
            f" FROM {ITEMS} i WHERE i.id IN ({marks}) AND {search.where}",
            [*ids, *search.params],
        )
        relevance = fuse(dense, lex, weight=self.dense_weight)
        by_id = {row[5]: row for row in rows}
        candidates = [
            Candidate(
                id=item_id,
                relevance=relevance.get(item_id, 0.0),
                time=self.dialect.ts_value(row[6]) or self.dialect.ts_value(row[4]),  # type: ignore[arg-type]
                access_count=int(row[7]) + self.access.pending(item_id),
                confidence=float(row[8]),
            )
            for item_id, row in by_id.items()
        ]
        ranked = rank(
            candidates,
            self.settings.weights,
            self.settings.recency_half_life_days,
            now,
            self.settings.ranking,
        )
        page = ranked[search.offset : search.offset + search.limit]
        out: list[SearchItem] = []
        for r in page:
            item = self._item(by_id[r.id])
            out.append(
                RankedItem(
                    item.namespace,
                    item.key,
                    item.value,
                    item.created_at,
                    item.updated_at,
                    r.score,
                    r.components._asdict(),
                )
            )
        return out, [r.id for r in page]

    def _namespaces_flow(self, op: ListNamespacesOp) -> Flow[list[tuple[str, ...]]]:
        rows = yield Sql(f"SELECT DISTINCT prefix FROM {ITEMS}")
        namespaces = [split_namespace(r[0]) for r in rows]
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _matches(condition, ns)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        namespaces.sort()
        return namespaces[op.offset : op.offset + op.limit]

    # -- writes ------------------------------------------------------------------------------
    def _write_flow(
        self,
        puts: list[_PreparedPut],
        rows: list[VectorRow],
        now: datetime,
        notes: Mapping[str, WriteNote],
    ) -> Flow[None]:
        d = self.dialect
        all_ids = [item_id(p.namespace, p.key) for p in puts]
        lock = d.lock_items_sql()
        if lock and all_ids:
            # Concurrent writers of one item take turns, so each event's "before" is the
            # previous event's "after" (READ COMMITTED alone lets both read the old row).
            yield Sql(lock, [sorted(set(all_ids))])
        before = yield from snapshot_flow(d, all_ids)
        deletes = [p for p in puts if p.record is None]
        for p in deletes:
            yield Sql(
                f"DELETE FROM {ITEMS} WHERE prefix = ? AND key = ?",
                [join_namespace(p.namespace), p.key],
            )
        upserts = [p for p in puts if p.record is not None]
        ids = [p.record.id for p in upserts if p.record is not None]
        if upserts:
            yield SqlMany(d.upsert_items_sql(), [self._item_row(p, now) for p in upserts])
            # Terms and vectors belong to their item (foreign keys): a new item has none.
            yield from self._index_flow(upserts, rows, [i for i in ids if i in before])
        for note_id, note in notes.items():
            if note.columns and note_id in ids:
                names = sorted(note.columns)
                yield Sql(
                    f"UPDATE {ITEMS} SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                    [
                        *(
                            d.ts_param(note.columns[n]) if ENGINE_COLUMNS[n] else note.columns[n]
                            for n in names
                        ),
                        note_id,
                    ],
                )
        after = yield from snapshot_flow(d, ids)
        events = []
        for memory_id in all_ids:
            old, new = before.get(memory_id), after.get(memory_id)
            if old is None and new is None:
                continue  # deleting what was not there changes nothing
            kind = "deleted" if new is None else "created" if old is None else "updated"
            base = new or old
            assert base is not None
            note = notes.get(memory_id, WriteNote())
            events.append(
                EventRow(
                    note.event_type or f"memory.{kind}",
                    base["scope"],
                    base["kind"],
                    memory_id,
                    base["prefix"],
                    base["key"],
                    old,
                    new,
                    dict(note.metadata or {}),
                )
            )
        yield from write_events_flow(d, events, now)

    def _index_flow(
        self, upserts: list[_PreparedPut], rows: list[VectorRow], replaced: list[str]
    ) -> Flow[None]:
        """Write the terms and in-database vectors of ``upserts``; ``replaced``: items that had some."""
        if replaced:
            marks = ", ".join("?" for _ in replaced)
            yield Sql(f"DELETE FROM {TERMS} WHERE item_id IN ({marks})", replaced)
        term_rows = [
            (term, p.record.id, tf)
            for p in upserts
            if p.record is not None
            for term, tf in p.terms.items()
        ]
        if term_rows:
            yield InsertRows(TERMS, ("term", "item_id", "tf"), term_rows)
        if self.index.in_database:
            yield from self.index.write_flow(rows, replaced)

    def _item_row(self, p: _PreparedPut, now: datetime) -> tuple[Any, ...]:
        d = self.dialect
        r = p.record
        assert r is not None
        values = {
            "id": r.id,
            "prefix": r.prefix,
            "key": r.key,
            "scope": r.scope,
            "kind": r.kind,
            "value": d.json_param(r.value),
            "created_at": d.ts_param(now),
            "updated_at": d.ts_param(now),
            "event_at": d.ts_param(r.event_at),
            "session_id": r.session_id,
            "actor": r.actor,
            "action_type": r.action_type,
            "subject": r.subject,
            "category": r.category,
            "valid_from": d.ts_param(r.valid_from),
            "valid_until": d.ts_param(r.valid_until),
            "proc_key": r.proc_key,
            "confidence": r.confidence,
            "importance": r.importance,
            "status": r.status,
            "doc_len": p.doc_len,
        }
        return tuple(values[c] for c in item_columns)

    def _flush_access_flow(self) -> Flow[None]:
        rows = self.access.take()
        if not rows:
            return
        d = self.dialect
        try:
            yield SqlMany(
                f"UPDATE {ITEMS} SET access_count = access_count + ?, last_accessed_at = ?"
                " WHERE id = ?",
                [(n, d.ts_param(at), item_id) for n, at, item_id in rows],
            )
        except BaseException:
            self.access.restore(rows)
            raise

    def flush_flow(self) -> Flow[None]:
        """Write buffered access counts now (the store does this on close)."""
        if self.access.counts:
            yield Transaction(self._flush_access_flow())


def _bm25(weights: Mapping[str, float], postings: _Postings) -> dict[str, float]:
    """BM25 (see lexical.py) of every item with a weighted term, statistics from the set.

    Terms are summed in sorted order, so a score does not depend on the order rows came in.
    """
    n, avgdl = postings.n_docs, postings.avgdl
    k1, b = lexical.BM25_K1, lexical.BM25_B
    scores: dict[str, float] = {}
    for term in sorted(weights):
        by_item = postings.tf.get(term)
        if not by_item:
            continue
        df = len(by_item)
        idf_weight = weights[term] * math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for item, tf in by_item.items():
            norm = 1.0 - b + b * postings.doc_len[item] / avgdl
            scores[item] = scores.get(item, 0.0) + idf_weight * tf * (k1 + 1.0) / (tf + k1 * norm)
    return scores


def _floats(vector: Any) -> list[float]:
    """``vector`` as a new list of floats; TypeError when an element is not a number.

    A list of floats, what embedders return, is checked by type alone: the per-element
    numeric check costs more than the rest of a put.
    """
    if type(vector) is list and set(map(type, vector)) <= {float}:
        return list(vector)
    return [_number(x) for x in vector]


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{x!r} is not a number")
    return float(x)


def _check_page(limit: Any, offset: Any) -> tuple[int, int]:
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_PAGE:
            raise ValidationError(
                f"{name} must be a whole number from 0 to {_MAX_PAGE - 1}, got {value!r}."
            )
    return int(limit), int(offset)


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


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
