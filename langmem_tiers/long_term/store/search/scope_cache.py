"""Scope-local search data kept in process, validated by the database's change counter.

A search of the embedded store reads the same things every time it asks about a scope:
the scope's active items with their lengths, their BM25 terms and their vectors. Reading
them costs a range scan of every item's terms (twice with feedback) and of every vector,
which grows with the scope. :class:`ScopeCache` keeps them per searched namespace prefix
and answers BM25 (with feedback) and the exact dense search in process.

Freshness: the database counts the changes of every namespace (``lmt_scope_changes``,
kept by triggers on the items table, see ``Dialect.scope_change_migration``), and a
search reads the sum of the counters under its prefix in its own transaction before it
uses a cached entry. Counters only grow, so any insert, delete or change of an item's
content, status or length under the prefix, by this process or another, changes the sum
and the entry is read again. Access counts do not change it (they are read with the
final rows, never cached).

Only searches whose condition is the plain one (active items of a namespace, no value
filter, no extra SQL) use the cache; the rows of the result are always read from the
database with the search's full condition.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from langmem_tiers.long_term.store.vectors import normalize
from langmem_tiers.sql.dialect import ITEMS, SCOPE_CHANGES, TERMS, VECTORS
from langmem_tiers.sql.flow import Flow, Sql

__all__ = ["ScopeCache", "ScopeData"]

#: Items kept over all cached scopes; least recently used scopes leave first.
MAX_CACHED_ITEMS = 200_000


class ScopeData(NamedTuple):
    """What a search needs of one namespace prefix's active items."""

    version: int
    doc_len: dict[str, int]  # every active item -> its number of terms
    n_docs: int  # items with terms (the BM25 documents)
    avgdl: float
    postings: dict[str, dict[str, int]]  # term -> item -> frequency
    item_terms: dict[str, dict[str, int]]  # item -> term -> frequency
    vector_ids: list[str]  # the item of each vector row
    matrix: np.ndarray  # unit float32 vectors, one row per vector_ids entry

    def dense(self, vector: Sequence[float], k: int, include: Sequence[str]) -> dict[str, float]:
        """Best cosine similarity per item: the top ``k`` and the ``include`` items."""
        if not self.vector_ids:
            return {}
        query = np.asarray(normalize(vector), dtype=np.float32)
        sims = (self.matrix @ query).tolist()
        best: dict[str, float] = {}
        for item, sim in zip(self.vector_ids, sims, strict=True):
            if item not in best or sim > best[item]:
                best[item] = sim
        if len(best) <= k:
            return best
        top = dict(sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        top.update((i, best[i]) for i in include if i in best)
        return top


def _under(prefix: str) -> tuple[str, list[str]]:
    if not prefix:
        return "1 = 1", []
    return "(prefix = ? OR (prefix > ? AND prefix < ?))", [prefix, prefix + ".", prefix + "/"]


class ScopeCache:
    """Per-prefix :class:`ScopeData`, bounded by :data:`MAX_CACHED_ITEMS` (thread-safe)."""

    def __init__(self, max_items: int = MAX_CACHED_ITEMS) -> None:
        self.max_items = max_items
        self._entries: OrderedDict[str, ScopeData] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def data_flow(self, prefix: str, where: str, params: Sequence[object]) -> Flow[ScopeData]:
        """The scope's data, read again only when its change counter moved.

        ``where`` (alias ``i``) must be the plain condition for ``prefix``'s active items.
        Runs inside the caller's transaction, so the counter and the rows agree.
        """
        under, under_params = _under(prefix)
        rows = yield Sql(
            f"SELECT coalesce(sum(changes), 0) FROM {SCOPE_CHANGES} WHERE {under}", under_params
        )
        version = int(rows[0][0])
        with self._lock:
            cached = self._entries.get(prefix)
            if cached is not None and cached.version == version:
                self._entries.move_to_end(prefix)
                return cached
        data = yield from self._load_flow(version, prefix, where, params)
        with self._lock:
            self._entries[prefix] = data
            self._entries.move_to_end(prefix)
            total = sum(len(d.doc_len) for d in self._entries.values())
            while total > self.max_items and len(self._entries) > 1:
                _, gone = self._entries.popitem(last=False)
                total -= len(gone.doc_len)
            if total > self.max_items:
                self._entries.clear()  # one scope larger than the bound: not kept
        return data

    def _load_flow(
        self, version: int, prefix: str, where: str, params: Sequence[object]
    ) -> Flow[ScopeData]:
        members = f"WITH c AS MATERIALIZED (SELECT i.id, i.doc_len FROM {ITEMS} i WHERE {where})"
        rows = yield Sql(
            f"{members} SELECT c.id, NULL, c.doc_len FROM c UNION ALL"
            f" SELECT t.item_id, t.term, t.tf FROM c CROSS JOIN {TERMS} t WHERE t.item_id = c.id",
            list(params),
        )
        doc_len: dict[str, int] = {}
        postings: dict[str, dict[str, int]] = {}
        item_terms: dict[str, dict[str, int]] = {}
        for item, term, count in rows:
            if term is None:
                doc_len[item] = int(count)
            else:
                postings.setdefault(term, {})[item] = int(count)
                item_terms.setdefault(item, {})[term] = int(count)
        lengths = [n for n in doc_len.values() if n > 0]
        under, under_params = _under(prefix)
        vectors = yield Sql(f"SELECT item_id, embedding FROM {VECTORS} WHERE {under}", under_params)
        kept = [r for r in vectors if r[0] in doc_len]
        matrix = (
            np.frombuffer(b"".join(r[1] for r in kept), dtype="<f4").reshape(len(kept), -1).copy()
            if kept
            else np.zeros((0, 0), dtype=np.float32)
        )
        return ScopeData(
            version,
            doc_len,
            len(lengths),
            sum(lengths) / len(lengths) if lengths else 0.0,
            postings,
            item_terms,
            [r[0] for r in kept],
            matrix,
        )
