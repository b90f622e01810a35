"""Vector indexes of the long-term store, as flows (see flow.py).

Three implementations of one small interface:

* :class:`SqliteVectorIndex`: float32 blobs in the SQLite file, exact cosine search in
  process with numpy. No extension to load, works on every Python.
* :class:`PgVectorIndex`: a pgvector column, a scope's vectors scored exactly through the
  namespace's index (no approximate index over every scope, which each insert paid for).
  Above 50,000 candidates a search orders by distance in the database and turns on
  pgvector's iterative scan, so an HNSW index a deployment adds still returns ``k`` rows
  to a search filtered to one scope.
* :class:`QdrantIndex`: a Qdrant collection (a server, or qdrant-client's local mode);
  the payload carries every namespace prefix of an item, so scope filtering happens
  inside Qdrant.

Vectors are stored unit-normalised, so cosine similarity is a dot product. An item may
have several vectors (one per indexed field); its similarity is the best of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

import numpy as np

from langmem_tiers.long_term.store.migrations import vector_table_sql
from langmem_tiers.sql.dialect import ITEMS, VECTORS, Dialect
from langmem_tiers.sql.flow import Flow, InsertRows, QdrantCall, Sql
from langmem_tiers.sql.item_ids import ID_MAP

__all__ = [
    "PgVectorIndex",
    "QdrantIndex",
    "SqliteVectorIndex",
    "UnitVectors",
    "Vector",
    "VectorIndex",
    "VectorRow",
    "normalize",
    "normalize_rows",
    "similarities",
]


#: One vector: a list of floats, or a row of an array of a batch's vectors.
Vector = list[float] | np.ndarray


class VectorRow(NamedTuple):
    """One vector of one field of an item, to write."""

    item_id: str
    field: str
    prefix: str
    vector: np.ndarray  # a unit row (float64; :func:`normalize_rows`)


def normalize(vector: Sequence[float] | np.ndarray) -> list[float]:
    """The unit vector along ``vector`` (a zero vector stays zero)."""
    arr = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(arr))
    return (arr / norm).tolist() if norm > 0 else arr.tolist()  # type: ignore[no-any-return]


def normalize_rows(vectors: Sequence[Vector]) -> np.ndarray:
    """The unit vectors along each of ``vectors`` (float64 rows; zero rows stay zero).

    The same numbers as :func:`normalize` per row, in one array operation for a batch.
    """
    arr = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    np.divide(arr, norms, out=arr, where=norms > 0)
    return arr


def similarities(matrix: np.ndarray, vector: Sequence[float]) -> np.ndarray:
    """Cosine of each unit row of ``matrix`` (float32) with ``vector``.

    A single-threaded loop, not BLAS: a matrix-vector product of a namespace is a
    millisecond of work, and BLAS's thread pool, when the cores are busy (a server
    answering several searches, other processes), waits for its threads far longer than
    that.
    """
    query = np.asarray(normalize(vector), dtype=np.float32)
    out: np.ndarray = np.einsum("ij,j->i", matrix, query)
    return out


#: Vectors whose zeros decide how :class:`UnitVectors` lays them out.
_LAYOUT_SAMPLE = 64


class UnitVectors:
    """Unit float32 vectors, one per row, kept for the product of a search's query with
    all of them (:meth:`similarities`).

    An embedder whose vectors are mostly zeros (the offline one hashes a text's words and
    character n-grams into 512 dimensions: about 95 of them are set for a sentence, 30-50
    for a question) has them stored by dimension (the transpose, one contiguous row per
    dimension), so that a query's product reads only the dimensions the query sets, not
    the whole matrix, which is read from memory at each query. Vectors of a dense embedder
    stay by vector, where the product is fastest.

    Example::

        >>> vectors = UnitVectors(np.eye(4, dtype=np.float32)[:3])
        >>> vectors.by_dimension, len(vectors)
        (True, 3)
        >>> vectors.similarities([0.0, 1.0, 0.0, 0.0]).tolist()
        [0.0, 1.0, 0.0]
    """

    __slots__ = ("_data", "by_dimension")

    def __init__(self, rows: np.ndarray, *, by_dimension: bool | None = None) -> None:
        if by_dimension is None:
            # Exact zeros: what a hashing embedder leaves (a dense one sets every dimension).
            # The first rows tell: counting all of them cost a namespace's first search of
            # 1,000 x 256 a sixth of a millisecond.
            sample = rows[:_LAYOUT_SAMPLE]
            by_dimension = bool(sample.size) and 2 * int(np.count_nonzero(sample)) <= sample.size
        self.by_dimension = by_dimension
        self._data: np.ndarray = np.ascontiguousarray(rows.T) if by_dimension else rows

    def __len__(self) -> int:
        return int(self._data.shape[1] if self.by_dimension else self._data.shape[0])

    def row(self, index: int) -> np.ndarray:
        """Vector ``index``."""
        return self._data[:, index] if self.by_dimension else self._data[index]

    def kept_and_added(self, kept: np.ndarray, added: np.ndarray) -> UnitVectors:
        """The vectors ``kept`` (their indexes, in order) then ``added`` (rows), laid out
        as these are (a layout is the embedder's, which does not change)."""
        if not len(self):
            return UnitVectors(added)
        if self.by_dimension:
            parts = [self._data[:, kept]] + ([added.T] if len(added) else [])
            return UnitVectors(np.concatenate(parts, axis=1).T, by_dimension=True)
        parts = [self._data[kept]] + ([added] if len(added) else [])
        return UnitVectors(np.concatenate(parts), by_dimension=False)

    def similarities(self, vector: Sequence[float]) -> np.ndarray:
        """Cosine of each vector with ``vector`` (see :func:`similarities`)."""
        if not self.by_dimension:
            return similarities(self._data, vector)
        query = np.asarray(normalize(vector), dtype=np.float32)
        dimensions = np.flatnonzero(query)
        if 2 * len(dimensions) > len(query):
            out: np.ndarray = np.einsum("j,ji->i", query, self._data)
            return out
        out = np.einsum("j,ji->i", query[dimensions], self._data[dimensions])
        return out


def _best_per_item(pairs: Sequence[tuple[str, float]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for item_id, sim in pairs:
        sim = float(sim)
        if item_id not in best or sim > best[item_id]:
            best[item_id] = sim
    return best


class VectorIndex:
    """How vectors are written and searched. ``in_database``: writes join the SQL transaction."""

    in_database = True
    #: The vectors are rows of the vectors table, which any statement may read (see
    #: ``ScopeCache``, which reads them with the items).
    in_vectors_table = True
    #: The index scores every item of the filtered set in process, so it is given the
    #: set's members when the caller has them (see :meth:`search_flow`).
    scans_members = False

    #: At most this many similarities come back from :meth:`similarity_sql`.
    similarity_rows = 0

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def similarity_sql(self, vector: Sequence[float]) -> tuple[str, list[Any]] | None:
        """A SELECT giving ``(item_id, NULL, similarity, NULL)`` for the items of a CTE ``c``
        (column ``id``), to run in the statement that reads them; None when the index
        cannot (it scores elsewhere). At most :attr:`similarity_rows` + 1 rows: more
        means the caller searches the index instead."""
        return None

    def setup_flow(self, dims: int) -> Flow[None]:
        for statement in vector_table_sql(self.dialect, dims):
            yield Sql(statement)

    def write_flow(self, rows: Sequence[VectorRow], item_ids: Sequence[str]) -> Flow[None]:
        """Replace all vectors of ``item_ids`` with ``rows`` (which may add other items)."""
        yield from self.write_requests(rows, item_ids)

    def write_requests(
        self, rows: Sequence[VectorRow], item_ids: Sequence[str]
    ) -> list[Sql | InsertRows]:
        """The statements of :meth:`write_flow` of an index :attr:`in_database`, none of
        which needs the answer of another (a writer sends them in one pipeline)."""
        requests: list[Sql | InsertRows] = []
        if item_ids:
            in_ids, params = self.dialect.in_list("item_id", item_ids)
            requests.append(Sql(f"DELETE FROM {VECTORS} WHERE {in_ids}", params))
        if rows:
            encoded = self.dialect.vector_params(np.stack([r.vector for r in rows]))
            requests.append(
                InsertRows(
                    VECTORS,
                    ("item_id", "field", "prefix", "embedding"),
                    [(r.item_id, r.field, r.prefix, v) for r, v in zip(rows, encoded, strict=True)],
                )
            )
        return requests

    def delete_flow(self, item_ids: Sequence[str]) -> Flow[None]:
        """Vectors in the database go with their items (ON DELETE CASCADE)."""
        return
        yield  # pragma: no cover - makes this a generator

    def search_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int | None,
        *,
        prefix: str,
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        """Best cosine similarity per item among items matching ``where`` (top ``k``).

        ``include``: items known to match ``where`` whose similarity is wanted as well;
        those with vectors are added to the result (an index answers them in the same
        round trip where it can). ``members``: every item matching ``where``, when the
        caller knows them; an index that :attr:`scans_members` reads their vectors
        without evaluating ``where`` again, others need not look at it.
        """
        raise NotImplementedError

    def score_flow(
        self, vector: Sequence[float], item_ids: Sequence[str]
    ) -> Flow[dict[str, float]]:
        """Cosine similarity of the given items (those that have vectors)."""
        raise NotImplementedError


class SqliteVectorIndex(VectorIndex):
    """Exact search over float32 blobs, scored in process."""

    scans_members = True

    def _score_rows(
        self,
        rows: Sequence[tuple[Any, ...]],
        vector: Sequence[float],
        k: int | None,
        include: Sequence[str] = (),
    ) -> dict[str, float]:
        if not rows:
            return {}
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
        sims = similarities(matrix, vector).tolist()
        best = _best_per_item([(r[0], s) for r, s in zip(rows, sims, strict=True)])
        if k is None or len(best) <= k:
            return best
        top = dict(sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        top.update((i, best[i]) for i in include if i in best)
        return top

    def search_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int | None,
        *,
        prefix: str,
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        if members is not None:
            # The namespace's vectors through their own prefix index, kept when their item
            # is a member: no second look-up of every item's row.
            under, under_params = (
                self.dialect.under_namespace_sql("prefix", prefix) if prefix else ("1 = 1", [])
            )
            found = yield Sql(
                f"SELECT item_id, embedding FROM {VECTORS} WHERE {under}", under_params
            )
            rows = [r for r in found if r[0] in members]
        else:
            rows = yield Sql(
                f"SELECT v.item_id, v.embedding FROM {VECTORS} v JOIN {ITEMS} i"
                f" ON i.id = v.item_id WHERE {where}",
                params,
            )
        # Every item of the set is scored anyway: the included ones cost nothing more.
        return self._score_rows(rows, vector, k, include)

    def score_flow(
        self, vector: Sequence[float], item_ids: Sequence[str]
    ) -> Flow[dict[str, float]]:
        if not item_ids:
            return {}
        in_ids, params = self.dialect.in_list("item_id", item_ids)
        rows = yield Sql(f"SELECT item_id, embedding FROM {VECTORS} WHERE {in_ids}", params)
        return self._score_rows(rows, vector, None)


class PgVectorIndex(VectorIndex):
    """pgvector: exact scans of a scope, iterative scans where an HNSW index serves one."""

    def __init__(
        self, dialect: Dialect, *, ef_search: int = 100, exact_below: int = 50_000
    ) -> None:
        super().__init__(dialect)
        self.ef_search = ef_search
        self.exact_below = exact_below
        # A scope's similarities come back with its postings while it is small enough
        # to score exactly (the same scan the exact search below makes).
        self.similarity_rows = exact_below

    def similarity_sql(self, vector: Sequence[float]) -> tuple[str, list[Any]] | None:
        literal = self.dialect.vector_param(normalize(vector))
        return (
            "(SELECT v.item_id, NULL, 1 - (v.embedding <=> ?::vector), NULL FROM c"
            f" JOIN {VECTORS} v ON v.item_id = c.id LIMIT ?)",
            [literal, self.similarity_rows + 1],
        )

    def search_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int | None,
        *,
        prefix: str,
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        literal = self.dialect.vector_param(normalize(vector))
        limit = k if k is not None else 1_000_000
        # The included items are scored in the same statement (a second branch).
        extra, extra_params = "", []
        if candidates is not None and candidates <= self.exact_below:
            # A scope of a few thousand items is scored exactly faster than HNSW can walk
            # past the other scopes' vectors (and exact recall is 1.0).
            if include:
                extra, extra_params = (
                    " UNION ALL SELECT item_id, 1 - dist FROM c WHERE item_id = ANY(?)",
                    [list(include)],
                )
            rows = yield Sql(
                f"WITH c AS MATERIALIZED (SELECT v.item_id, v.embedding <=> ?::vector AS dist"
                f" FROM {VECTORS} v JOIN {ITEMS} i ON i.id = v.item_id WHERE {where})"
                f" (SELECT item_id, 1 - dist FROM c ORDER BY dist LIMIT ?){extra}",
                [literal, *params, limit, *extra_params],
            )
            return _best_per_item([(r[0], r[1]) for r in rows])
        # Without iterative scans, HNSW returns ef_search rows and the scope filter is
        # applied afterwards, so a filtered search could come back short.
        yield Sql(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('hnsw.ef_search', ?, true)",
            [str(max(self.ef_search, 2 * limit))],
        )
        if include:
            extra, extra_params = (
                f" UNION ALL SELECT item_id, 1 - (embedding <=> ?::vector) FROM {VECTORS}"
                " WHERE item_id = ANY(?)",
                [literal, list(include)],
            )
        rows = yield Sql(
            f"(SELECT v.item_id, 1 - (v.embedding <=> ?::vector) AS sim FROM {VECTORS} v"
            f" JOIN {ITEMS} i ON i.id = v.item_id WHERE {where}"
            f" ORDER BY v.embedding <=> ?::vector LIMIT ?){extra}",
            [literal, *params, literal, limit, *extra_params],
        )
        return _best_per_item([(r[0], r[1]) for r in rows])

    def score_flow(
        self, vector: Sequence[float], item_ids: Sequence[str]
    ) -> Flow[dict[str, float]]:
        if not item_ids:
            return {}
        literal = self.dialect.vector_param(normalize(vector))
        rows = yield Sql(
            f"SELECT item_id, 1 - (embedding <=> ?::vector) FROM {VECTORS} WHERE item_id = ANY(?)",
            [literal, list(item_ids)],
        )
        return _best_per_item([(r[0], r[1]) for r in rows])


_POINT_NAMESPACE = uuid.UUID("0b6c2f1e-8d4a-4f57-9e3b-5a2d7c9e1f04")


def _point_id(item_id: str, field: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, item_id + "\x1f" + field))


def _prefixes(prefix: str) -> list[str]:
    labels = prefix.split(".")
    return [".".join(labels[: i + 1]) for i in range(len(labels))]


class QdrantIndex(VectorIndex):
    """Vectors in a Qdrant collection; structured data stays in SQL."""

    in_database = False
    in_vectors_table = False

    def __init__(self, dialect: Dialect, collection: str, *, payload_indexes: bool = True) -> None:
        super().__init__(dialect)
        self.collection = collection
        # qdrant-client's local mode has no payload indexes (and warns when asked for one).
        self.payload_indexes = payload_indexes

    def setup_flow(self, dims: int) -> Flow[None]:
        from qdrant_client import models

        exists = yield QdrantCall("collection_exists", {"collection_name": self.collection})
        if not exists:
            yield QdrantCall(
                "create_collection",
                {
                    "collection_name": self.collection,
                    "vectors_config": models.VectorParams(
                        size=int(dims), distance=models.Distance.COSINE
                    ),
                },
            )
            for name in ("prefixes", "item_id") if self.payload_indexes else ():
                yield QdrantCall(
                    "create_payload_index",
                    {
                        "collection_name": self.collection,
                        "field_name": name,
                        "field_schema": models.PayloadSchemaType.KEYWORD,
                    },
                )
        else:
            yield from self._rename_points_flow()

    def _rename_points_flow(self) -> Flow[None]:
        """Move points of items the id migration renamed (sql/item_ids.py) to their new ids."""
        from qdrant_client import models

        exists = yield Sql(self.dialect.table_exists_sql(), [ID_MAP])
        if not exists or not exists[0][0]:
            return
        renames: dict[str, str] = dict((yield Sql(f"SELECT old_id, new_id FROM {ID_MAP}")))
        olds = sorted(renames)
        for start in range(0, len(olds), 256):
            chunk = olds[start : start + 256]
            moved: list[Any] = []
            offset = None
            while True:
                points, offset = yield QdrantCall(
                    "scroll",
                    {
                        "collection_name": self.collection,
                        "scroll_filter": self._item_filter(chunk),
                        "limit": 1000,
                        "offset": offset,
                        "with_payload": True,
                        "with_vectors": True,
                    },
                )
                moved.extend(points)
                if offset is None:
                    break
            if not moved:
                continue
            new_points = []
            for p in moved:
                payload = {**p.payload, "item_id": renames[p.payload["item_id"]]}
                new_id = _point_id(payload["item_id"], payload["field"])
                new_points.append(models.PointStruct(id=new_id, vector=p.vector, payload=payload))
            yield QdrantCall("upsert", {"collection_name": self.collection, "points": new_points})
            yield QdrantCall(
                "delete",
                {
                    "collection_name": self.collection,
                    "points_selector": models.PointIdsList(points=[p.id for p in moved]),
                },
            )
        # Renamed once: a later start has nothing to move.
        yield Sql(f"DELETE FROM {ID_MAP}")

    def _item_filter(self, item_ids: Sequence[str]) -> Any:
        from qdrant_client import models

        return models.Filter(
            must=[models.FieldCondition(key="item_id", match=models.MatchAny(any=list(item_ids)))]
        )

    def write_flow(self, rows: Sequence[VectorRow], item_ids: Sequence[str]) -> Flow[None]:
        from qdrant_client import models

        keep = {_point_id(r.item_id, r.field) for r in rows}
        gone: list[Any]
        if item_ids:
            # Drop vectors of fields the new version no longer has.
            stale = yield from self._point_ids(item_ids)
            gone = [p for p in stale if p not in keep]
            if gone:
                yield QdrantCall(
                    "delete",
                    {
                        "collection_name": self.collection,
                        "points_selector": models.PointIdsList(points=gone),
                    },
                )
        if rows:
            yield QdrantCall(
                "upsert",
                {
                    "collection_name": self.collection,
                    "points": [
                        models.PointStruct(
                            id=_point_id(r.item_id, r.field),
                            vector=r.vector.tolist(),
                            payload={
                                "item_id": r.item_id,
                                "field": r.field,
                                "prefixes": _prefixes(r.prefix),
                            },
                        )
                        for r in rows
                    ],
                },
            )

    def _point_ids(self, item_ids: Sequence[str]) -> Flow[list[str]]:
        found: list[str] = []
        offset = None
        while True:
            points, offset = yield QdrantCall(
                "scroll",
                {
                    "collection_name": self.collection,
                    "scroll_filter": self._item_filter(item_ids),
                    "limit": 1000,
                    "offset": offset,
                    "with_payload": False,
                    "with_vectors": False,
                },
            )
            found.extend(str(p.id) for p in points)
            if offset is None:
                return found

    def delete_flow(self, item_ids: Sequence[str]) -> Flow[None]:
        from qdrant_client import models

        if item_ids:
            yield QdrantCall(
                "delete",
                {
                    "collection_name": self.collection,
                    "points_selector": models.FilterSelector(filter=self._item_filter(item_ids)),
                },
            )

    def _query(
        self, vector: Sequence[float], query_filter: Any, limit: int
    ) -> Flow[dict[str, float]]:
        response = yield QdrantCall(
            "query_points",
            {
                "collection_name": self.collection,
                "query": normalize(vector),
                "query_filter": query_filter,
                "limit": limit,
                "with_payload": ["item_id"],
            },
        )
        return _best_per_item([(p.payload["item_id"], p.score) for p in response.points])

    def search_flow(
        self,
        vector: Sequence[float],
        where: str,
        params: Sequence[Any],
        k: int | None,
        *,
        prefix: str,
        value_filtered: bool = False,
        candidates: int | None = None,
        include: Sequence[str] = (),
        members: Collection[str] | None = None,
    ) -> Flow[dict[str, float]]:
        from qdrant_client import models

        conditions: list[Any] = []
        limit = k if k is not None else 10_000
        if value_filtered:
            # Value filters live in SQL: restrict Qdrant to the items that pass them.
            rows = yield Sql(f"SELECT i.id FROM {ITEMS} i WHERE {where}", params)
            ids = [r[0] for r in rows]
            if not ids:
                return {}  # nothing passes the filter, so nothing is included either
            conditions.append(models.FieldCondition(key="item_id", match=models.MatchAny(any=ids)))
        if prefix:
            conditions.append(
                models.FieldCondition(key="prefixes", match=models.MatchValue(value=prefix))
            )
        hits = yield from self._query(vector, models.Filter(must=conditions), limit)
        missing = [i for i in include if i not in hits]
        if missing:
            hits.update((yield from self.score_flow(vector, missing)))
        return hits

    def score_flow(
        self, vector: Sequence[float], item_ids: Sequence[str]
    ) -> Flow[dict[str, float]]:
        if not item_ids:
            return {}
        return (yield from self._query(vector, self._item_filter(item_ids), len(item_ids) * 4))
