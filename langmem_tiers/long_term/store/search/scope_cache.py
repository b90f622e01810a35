"""What a search reads of a namespace, kept in process and checked against the database.

A search of the embedded store reads, for the items it may return, their BM25 terms and
their vectors. None of that depends on the search's time: which items may be returned does
(validity intervals, ``as_of``, time windows, expiry, statuses, value filters), and that is
asked of the database at every search, with the search's full condition. So the cache
keeps, per searched namespace prefix, the terms, lengths and vectors of *every* item under
the prefix, whatever its status or validity, and each search restricts them to the members
the database returned for it.

Freshness: the database counts the changes of every namespace (``lmt_scope_changes``, kept
by triggers on the items table, see ``Dialect.scope_change_migration``). The members and
the sum of the counters under the prefix are read in one statement, inside the search's
transaction; counters only grow, so any insert or delete of an item under the prefix, or a
change of its id, namespace, value or length (by this process, another process, or
SQL of the engine) moves the sum and the entry is read again in that transaction. Terms and
vectors are only ever written together with such a change of their item (the store's
writer, and compression, which zeroes the length). Access counts and the other usage
columns do not move the counter: they are read with the result rows, never cached.

Example::

    >>> from langmem_tiers.sql.dialect import SqliteDialect
    >>> cache = ScopeCache(SqliteDialect(), max_items=1_000)
    >>> cache.max_items
    1000
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Collection, ItemsView, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from typing import Any

import numpy as np

from langmem_tiers.long_term.store.search.bm25 import unpack_terms
from langmem_tiers.long_term.store.vectors import normalize
from langmem_tiers.sql.dialect import ITEMS, PACKED_SEPARATOR, SCOPE_CHANGES, Dialect
from langmem_tiers.sql.flow import Flow, Sql

__all__ = ["LAZY_TERMS", "MAX_CACHED_ITEMS", "ScopeCache", "ScopeData"]

#: Inverted lists built one term at a time before all are built at once.
LAZY_TERMS = 32

#: Items kept over all cached prefixes; the least recently searched prefixes leave first.
MAX_CACHED_ITEMS = 200_000


class ScopeData:
    """The terms, lengths and vectors of every item under one namespace prefix.

    The inverted lists are built per term on first use, not at load: a search needs the
    postings of a few dozen terms, while building them all for a large namespace costs
    more than the search itself. Once :data:`LAZY_TERMS` lists were built one by one (a
    namespace searched again and again, each search bringing new feedback terms), all are
    built in one pass, which then costs less than the scans it saves. Two threads building
    one term's list build the same one. Document frequencies are counted at load, so the
    feedback step, which weighs dozens of candidate terms by how many items hold them,
    builds the lists of the few it keeps only.
    """

    __slots__ = (
        "_complete",
        "_items",
        "_postings",
        "_row_of",
        "_starts",
        "_statistics",
        "doc_len",
        "document_frequency",
        "item_terms",
        "matrix",
        "vector_ids",
        "version",
    )

    def __init__(
        self,
        version: int,
        doc_len: dict[str, int],
        item_terms: dict[str, dict[str, int]],
        vector_ids: list[str],
        matrix: np.ndarray,
    ) -> None:
        self.version = version
        self.doc_len = doc_len  # every item under the prefix -> its number of terms
        self.item_terms = item_terms  # item -> term -> frequency (items with terms)
        self._starts: np.ndarray | None = None
        if len(set(vector_ids)) != len(vector_ids):
            # Several vectors an item (several indexed fields): each item's rows side by
            # side, so its best similarity is one reduceat over the rows' similarities.
            order = sorted(range(len(vector_ids)), key=vector_ids.__getitem__)
            vector_ids, matrix = [vector_ids[r] for r in order], matrix[order]
            self._starts = np.flatnonzero(
                [r == 0 or vector_ids[r] != vector_ids[r - 1] for r in range(len(vector_ids))]
            )
        self.vector_ids = vector_ids  # the item of each row of ``matrix``
        self.matrix = matrix  # unit float32 vectors
        # The items with vectors, in the order of the per-item similarities.
        self._items = vector_ids if self._starts is None else [vector_ids[r] for r in self._starts]
        self._postings: dict[str, dict[str, int]] = {}
        self._complete = False  # whether _postings holds every term
        self._row_of = {item: row for row, item in enumerate(self._items)}
        self.document_frequency = Counter(chain.from_iterable(item_terms.values()))
        lengths = [n for n in doc_len.values() if n > 0]
        self._statistics = (len(lengths), sum(lengths) / len(lengths) if lengths else 0.0)

    def posting(self, term: str) -> dict[str, int]:
        """Item -> frequency of ``term`` over every item under the prefix."""
        postings = self._postings
        found = postings.get(term)
        if found is not None or self._complete:
            return found or {}
        if len(postings) >= LAZY_TERMS:
            complete: dict[str, dict[str, int]] = {}
            for item, frequencies in self.item_terms.items():
                for word, n in frequencies.items():
                    complete.setdefault(word, {})[item] = n
            self._postings, self._complete = complete, True
            return complete.get(term) or {}
        found = {i: tf[term] for i, tf in self.item_terms.items() if term in tf}
        postings[term] = found
        return found

    def covers(self, members: Collection[str]) -> bool:
        """Whether ``members`` (a subset of the prefix's items) are all of them."""
        return len(members) == len(self.doc_len)

    def statistics(self, members: Collection[str]) -> tuple[int, float]:
        """The members' number of BM25 documents (items with terms) and mean length."""
        if self.covers(members):
            return self._statistics
        lengths = [n for i in members if (n := self.doc_len.get(i, 0)) > 0]
        return len(lengths), (sum(lengths) / len(lengths) if lengths else 0.0)

    def postings_of(
        self, terms: Iterable[str], members: Collection[str]
    ) -> tuple[dict[str, Mapping[str, int]], dict[str, int]]:
        """``(term -> member -> tf, member -> length)`` for ``terms``, as the SQL read gives.

        Read only: when the members are the whole namespace, the lists and the lengths
        returned are the entry's own (the lengths of every item, not only of those listed).
        """
        if self.covers(members):
            found: dict[str, Mapping[str, int]] = {
                term: _Posting(self, term) for term in terms if self.document_frequency[term]
            }
            return found, self.doc_len
        tf: dict[str, Mapping[str, int]] = {}
        doc_len: dict[str, int] = {}
        for term in terms:
            kept = {i: n for i, n in self.posting(term).items() if i in members}
            if kept:
                tf[term] = kept
                for item in kept:
                    doc_len[item] = self.doc_len[item]
        return tf, doc_len

    def terms_of(self, items: Iterable[str]) -> set[str]:
        """Every term of ``items``."""
        return {term for item in items for term in self.item_terms.get(item, ())}

    def dense(
        self,
        vector: Sequence[float],
        k: int,
        include: Sequence[str],
        members: Collection[str],
    ) -> dict[str, float]:
        """Best cosine similarity per member: the top ``k`` and the ``include`` items."""
        if not self._items:
            return {}
        sims = self.matrix @ np.asarray(normalize(vector), dtype=np.float32)
        if self._starts is not None:
            sims = np.maximum.reduceat(sims, self._starts)
        ids = self._items
        if not self.covers(members):
            row_of = self._row_of
            rows = sorted(row_of[i] for i in members if i in row_of)
            ids, sims = [ids[r] for r in rows], sims[rows]
        if not ids:
            return {}
        if len(ids) <= k:
            return dict(zip(ids, sims.tolist(), strict=True))
        # The top k come from a partial sort, ties at the k-th value all kept so the order
        # by (-similarity, id) decides.
        kth = np.partition(sims, len(sims) - k)[len(sims) - k]
        chosen = sorted((-float(sims[r]), ids[r]) for r in np.flatnonzero(sims >= kth).tolist())
        best = {item: -negated for negated, item in chosen[:k]}
        wanted = [i for i in include if i not in best and i in members and i in self._row_of]
        if wanted:
            at = self._row_of if ids is self._items else {i: r for r, i in enumerate(ids)}
            best.update((i, float(sims[at[i]])) for i in wanted)
        return best


class _Posting(Mapping[str, int]):
    """Item -> frequency of one term over a whole cached namespace, answered from the items'
    own terms: its size (the document frequency) and membership cost nothing, and the list
    is built only when iterated."""

    __slots__ = ("_data", "_term")

    def __init__(self, data: ScopeData, term: str) -> None:
        self._data = data
        self._term = term

    def __getitem__(self, item: str) -> int:
        return self._data.item_terms[item][self._term]

    def __contains__(self, item: object) -> bool:
        frequencies = self._data.item_terms.get(item) if isinstance(item, str) else None
        return frequencies is not None and self._term in frequencies

    def __len__(self) -> int:
        return self._data.document_frequency[self._term]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data.posting(self._term))

    def items(self) -> ItemsView[str, int]:
        return self._data.posting(self._term).items()


class ScopeCache:
    """:class:`ScopeData` per namespace prefix, bounded by ``max_items`` (thread-safe)."""

    def __init__(self, dialect: Dialect, max_items: int = MAX_CACHED_ITEMS) -> None:
        self.dialect = dialect
        self.max_items = max_items
        self._entries: OrderedDict[str, ScopeData] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def members_flow(
        self, prefix: str, where: str, params: Sequence[Any]
    ) -> Flow[tuple[ScopeData | None, AbstractSet[str]]]:
        """The items matching ``where`` (alias ``i``; within ``prefix``) and the prefix's data.

        One statement for the members and the change counter; one more for the terms and
        one for the vectors when the cached entry is missing or stale. ``None`` instead of
        data (and no members) when the search's items are more than the cache may keep.

        The members' ids are sent only when they are not simply every item of the cached
        entry: at the entry's version the prefix holds exactly its items, and the members
        are some of them, so as many members as items are all of them (the usual case: a
        search of a namespace's current memories), and a large namespace costs no list.

        Where each statement reads its own snapshot (PostgreSQL's READ COMMITTED), a load
        may see changes committed after the members were read. The entry is labelled with
        the counter read with its items, so it is never older than its label (its vectors,
        read later still, only newer: that costs a reload). The members are then narrowed
        to the items loaded, so the data covers every member it is asked about.
        """
        with self._lock:
            known = self._entries.get(prefix)
        size = len(known.doc_len) if known is not None else -1
        under, under_params = self._under("prefix", prefix)
        # The ids only when the cache may use them: a namespace too large to keep would
        # send every id at every search for nothing.
        rows = yield Sql(
            f"SELECT m.ids, m.n, (SELECT {self._version_sql(under)}) FROM"
            f" (SELECT CASE WHEN count(*) <= ? AND count(*) <> ?"
            f" THEN {self.dialect.packed_sql('i.id')} END AS ids,"
            f" count(*) AS n FROM {ITEMS} i WHERE {where}) m",
            [*under_params, self.max_items, size, *params],
        )
        packed, count, changes = rows[0]
        version = int(changes)
        if count > self.max_items:
            return None, set()
        everything = packed is None and count == size and count > 0
        members: AbstractSet[str] = set(packed.split(PACKED_SEPARATOR)) if packed else set()
        if known is not None and known.version == version:
            with self._lock:
                if self._entries.get(prefix) is known:
                    self._entries.move_to_end(prefix)
            return known, known.doc_len.keys() if everything else members
        data = yield from self._load_flow(prefix)
        if everything and data.version == version and count == len(data.doc_len):
            members = data.doc_len.keys()
        elif everything:
            # The ids were withheld and the new entry does not tell them: asked for (in a
            # newer snapshot, so narrowed to the entry's items like any newer read).
            rows = yield Sql(
                f"SELECT {self.dialect.packed_sql('i.id')} FROM {ITEMS} i WHERE {where}", params
            )
            found = set(rows[0][0].split(PACKED_SEPARATOR)) if rows[0][0] else set()
            members = found & data.doc_len.keys()
        elif data.version != version:
            members = members & data.doc_len.keys()
        if len(data.doc_len) > self.max_items:
            return data, members  # used once, never kept
        with self._lock:
            self._entries[prefix] = data
            self._entries.move_to_end(prefix)
            total = sum(len(d.doc_len) for d in self._entries.values())
            while total > self.max_items and len(self._entries) > 1:
                _, gone = self._entries.popitem(last=False)
                total -= len(gone.doc_len)
        return data, members

    def _under(self, column: str, prefix: str) -> tuple[str, list[str]]:
        """Rows whose namespace ``column`` is ``prefix`` or below it (all rows for ``""``)."""
        return self.dialect.under_namespace_sql(column, prefix) if prefix else ("1 = 1", [])

    @staticmethod
    def _version_sql(under: str) -> str:
        """The sum of the counters matching ``under``: the version of a prefix's data."""
        return f"CAST(coalesce(sum(changes), 0) AS BIGINT) FROM {SCOPE_CHANGES} WHERE {under}"

    def _load_flow(self, prefix: str) -> Flow[ScopeData]:
        under, under_params = self._under("i.prefix", prefix)
        counted, counted_params = self._under("prefix", prefix)
        # One row per item, its terms packed (bm25.pack_terms): a namespace of a thousand
        # items has tens of thousands of term rows, each a Python tuple if read one by one.
        # The counter comes in the same statement (a row without an id), so it is the
        # version of exactly these rows.
        rows = yield Sql(
            f"SELECT NULL, (SELECT {self._version_sql(counted)}), NULL UNION ALL"
            f" SELECT i.id, i.doc_len, i.terms FROM {ITEMS} i WHERE {under}",
            [*counted_params, *under_params],
        )
        version = 0
        doc_len: dict[str, int] = {}
        item_terms: dict[str, dict[str, int]] = {}
        for item, length, packed in rows:
            if item is None:
                version = int(length)
                continue
            doc_len[item] = length
            if packed:
                item_terms[item] = unpack_terms(packed)
        vector_under, vector_params = self._under("v.prefix", prefix)
        ids, matrix = yield from self.dialect.vector_matrix_flow(vector_under, vector_params)
        if any(i not in doc_len for i in ids):
            # Items written after the items' read: not members of this version.
            rows_kept = [r for r, i in enumerate(ids) if i in doc_len]
            ids, matrix = [ids[r] for r in rows_kept], matrix[rows_kept]
        return ScopeData(version, doc_len, item_terms, ids, matrix)
