"""What a search reads of a namespace, kept in process and checked against the database.

A search reads, for the items it may return, their BM25 terms and their vectors. None of
that depends on the search's time: which items may be returned does (validity intervals,
``as_of``, time windows, expiry, statuses, value filters), and that is the database's to
answer, with the search's full condition. So the cache keeps, per searched namespace
prefix, the terms, lengths and vectors of *every* item under the prefix, whatever its
status or validity, as arrays (items are rows; a term's postings are rows and
frequencies), and each search restricts them to the members the database selected for it.

Freshness: the database counts the changes of every namespace (``lmt_scope_changes``, kept
by triggers on the items table, see ``Dialect.scope_change_migration``). The members and
the sum of the counters under the prefix are read in one statement, inside the search's
transaction; counters only grow, so any insert or delete of an item under the prefix, or a
change of its id, namespace, value or length (by this process, another process, or
SQL of the engine) moves the sum and the entry is read again in that transaction. Terms and
vectors are only ever written together with such a change of their item (the store's
writer, and compression, which zeroes the length). Access counts and the other usage
columns do not move the counter: they are read with the result rows, never cached.

Members: the database also counts the updates that may change membership (``moves``:
statuses, scopes, kinds and the times a search compares), so an entry remembers the
members of recent searches with their counters and the next time of any of its items
after the search's instants. A later search with the same condition, at instants no
earlier and before that time, while neither counter moved, selects exactly those items.
In process (SQLite) it reads the two counters and nothing else first; over a connection
(PostgreSQL) it takes the members at once and has the statement that reads its result
rows check the counters (:meth:`ScopeCache.guess`): one statement in all while they hold.

Example::

    >>> from langmem_tiers.sql.dialect import SqliteDialect
    >>> cache = ScopeCache(SqliteDialect(), max_items=1_000)
    >>> cache.max_items
    1000
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from langmem_tiers.long_term.store.search.bm25 import BM25_B, BM25_K1, unpack_terms
from langmem_tiers.long_term.store.search.neighbours import NEIGHBOUR_KIND
from langmem_tiers.long_term.store.vectors import similarities
from langmem_tiers.sql.dialect import (
    ITEMS,
    PACKED_SEPARATOR,
    SCOPE_CHANGES,
    VECTORS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, Latch, Sql, WaitFor

__all__ = [
    "LOAD_WAIT_SECONDS",
    "MAX_CACHED_ITEMS",
    "ArrayScores",
    "Guess",
    "Members",
    "ScopeCache",
    "ScopeData",
]

#: Items kept over all cached prefixes; the least recently searched prefixes leave first.
MAX_CACHED_ITEMS = 200_000

#: How long a search waits for another's load of its namespace before reading it itself
#: (a load of 20,000 items takes well under a second; this only bounds a stuck one).
LOAD_WAIT_SECONDS = 10.0


class Members:
    """The items a search may return, as the database listed them, and their rows in a
    :class:`ScopeData` (``mask`` is None when they are every item under the prefix).

    Searches of an unchanged namespace list the same members again and again, so the
    entry keeps the last set with the text it was read from and hands it out again.
    """

    __slots__ = ("ids", "mask", "packed")

    def __init__(self, packed: str | None, ids: AbstractSet[str], mask: np.ndarray | None) -> None:
        self.packed = packed
        self.ids = ids
        self.mask = mask

    def __contains__(self, item: object) -> bool:
        return item in self.ids

    def __len__(self) -> int:
        return len(self.ids)


#: Searches (keys) whose members a namespace's entry remembers.
REMEMBERED_SEARCHES = 8


class RememberedMembers(NamedTuple):
    """The members of one search, valid while the counters stay and time stays before
    ``horizon`` (the next time of an item, None for none)."""

    members: Members
    moves: int
    instants: tuple[datetime, datetime]
    horizon: datetime | None

    def answers(self, instants: tuple[datetime, datetime]) -> bool:
        """Whether a search at ``instants`` selects the same items: both instants at or
        after these, and before the next time of any item, so no comparison of an item's
        time with them comes out otherwise."""
        if instants[0] < self.instants[0] or instants[1] < self.instants[1]:
            return False
        return self.horizon is None or max(instants) < self.horizon


class ScopeData:
    """The terms, lengths and vectors of every item under one namespace prefix.

    Items are numbered rows. The terms are an inverted index built at load in one pass
    over every item's packed terms (``bm25.pack_terms``): each term's postings (rows and
    frequencies) are a slice of two arrays, so BM25 over a namespace is a few vector
    operations per query term, and a term's document frequency is the length of its
    slice. Nothing is built later, so threads share an entry without locks.
    """

    __slots__ = (
        "_codes",
        "_last_members",
        "_posting_counts",
        "_posting_rows",
        "_remembered",
        "_starts",
        "_statistics",
        "_vector_item_rows",
        "_vector_row_of",
        "episodic",
        "ids",
        "lengths",
        "matrix",
        "packed_terms",
        "row_of",
        "vector_ids",
        "version",
    )

    def __init__(
        self,
        version: int,
        doc_len: Mapping[str, int],
        packed_terms: Mapping[str, str],
        vector_ids: list[str],
        matrix: np.ndarray,
        episodic: AbstractSet[str] = frozenset(),
    ) -> None:
        self.version = version
        self.ids = list(doc_len)  # every item under the prefix, by row
        self.row_of = {item: row for row, item in enumerate(self.ids)}
        self.lengths = np.fromiter(doc_len.values(), dtype=np.int64, count=len(self.ids))
        self.packed_terms = packed_terms  # item -> its packed terms (items with terms)
        self.vector_ids = vector_ids  # the item of each row of ``matrix``
        self.matrix = matrix  # unit float32 vectors
        self.episodic = episodic  # the items of the kind that has neighbours
        self._vector_item_rows = np.fromiter(
            (self.row_of[i] for i in vector_ids), dtype=np.int64, count=len(vector_ids)
        )
        self._vector_row_of = {item: row for row, item in enumerate(vector_ids)}
        self._codes, self._starts, self._posting_rows, self._posting_counts = _inverted_index(
            self.row_of, packed_terms
        )
        self._last_members: Members | None = None
        self._remembered: OrderedDict[tuple[Any, ...], RememberedMembers] = OrderedDict()
        positive = self.lengths[self.lengths > 0]
        self._statistics = (
            len(positive),
            int(positive.sum()) / len(positive) if len(positive) else 0.0,
        )

    def remembered(
        self, key: tuple[Any, ...], instants: tuple[datetime, datetime]
    ) -> RememberedMembers | None:
        """The remembered members of a search with ``key`` at ``instants``, if they hold."""
        try:
            found = self._remembered.get(key)
        except TypeError:  # a parameter that cannot be a key (never remembered)
            return None
        return found if found is not None and found.answers(instants) else None

    def remember(self, key: tuple[Any, ...], entry: RememberedMembers) -> None:
        try:
            self._remembered[key] = entry
        except TypeError:
            return
        self._remembered.move_to_end(key)
        while len(self._remembered) > REMEMBERED_SEARCHES:
            self._remembered.popitem(last=False)

    def members(self, packed: str) -> Members:
        """The members listed in ``packed`` (ids joined by the separator), less any item
        the entry does not hold (written after it was read: not of its version)."""
        last = self._last_members
        if last is not None and last.packed == packed:
            return last
        listed = set(packed.split(PACKED_SEPARATOR)) if packed else set()
        found = self.members_of(listed, packed)
        if found.mask is not None:
            self._last_members = found
        return found

    def members_of(self, listed: AbstractSet[str], packed: str | None = None) -> Members:
        """The members ``listed``, less any item the entry does not hold."""
        ids = {i for i in listed if i in self.row_of}
        if len(ids) == len(self.ids):
            return self.every_member()
        mask = np.zeros(len(self.ids), dtype=bool)
        mask[[self.row_of[i] for i in ids]] = True
        return Members(packed, ids, mask)

    def every_member(self) -> Members:
        """Every item the entry holds, as members."""
        return Members(None, self.row_of.keys(), None)

    def posting(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, frequencies)`` of ``term`` over every item under the prefix, rows
        ascending."""
        code = self._codes.get(term)
        if code is None:
            return _EMPTY_POSTING
        start, stop = self._starts[code], self._starts[code + 1]
        return self._posting_rows[start:stop], self._posting_counts[start:stop]

    def frequency(self, term: str) -> int:
        """How many items under the prefix hold ``term``."""
        code = self._codes.get(term)
        return 0 if code is None else self._starts[code + 1] - self._starts[code]

    def terms_of(self, item: str) -> dict[str, int]:
        """The term frequencies of ``item`` (empty for an item without terms)."""
        packed = self.packed_terms.get(item)
        return unpack_terms(packed) if packed else {}

    def statistics(self, members: Members) -> tuple[int, float]:
        """The members' number of BM25 documents (items with terms) and mean length."""
        if members.mask is None:
            return self._statistics
        lengths = self.lengths[members.mask]
        positive = lengths[lengths > 0]
        return len(positive), (int(positive.sum()) / len(positive) if len(positive) else 0.0)

    def document_frequencies(self, terms: Iterable[str], members: Members) -> dict[str, int]:
        """How many members hold each of ``terms``."""
        if members.mask is None:
            return {term: self.frequency(term) for term in terms}
        mask = members.mask
        out = {}
        for term in terms:
            if self.frequency(term):
                out[term] = int(np.count_nonzero(mask[self.posting(term)[0]]))
            else:
                out[term] = 0
        return out

    def bm25(
        self, weights: Mapping[str, float], n_docs: int, avgdl: float, members: Members
    ) -> ArrayScores:
        """BM25 of every member with a weighted term, as :func:`bm25.score_postings` gives
        from the members' postings (the same operations in the same order, so the same
        floats)."""
        k1, b = BM25_K1, BM25_B
        scores = np.zeros(len(self.ids), dtype=np.float64)
        mask = members.mask
        for term in sorted(weights):
            if not self.frequency(term):
                continue
            rows, counts = self.posting(term)
            if mask is not None:
                kept = mask[rows]
                rows, counts = rows[kept], counts[kept]
            df = len(rows)
            if df == 0:
                continue
            idf_weight = weights[term] * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = 1.0 - b + b * self.lengths[rows] / avgdl
            scores[rows] += idf_weight * counts * (k1 + 1.0) / (counts + k1 * norm)
        return ArrayScores(self, scores)

    def dense(
        self,
        vector: Sequence[float],
        k: int,
        include: Sequence[str],
        members: Members,
    ) -> dict[str, float]:
        """Best cosine similarity per member: the top ``k`` and the ``include`` items."""
        if not self.vector_ids:
            return {}
        sims = similarities(self.matrix, vector)
        if members.mask is None:
            rows = None
        else:
            rows = np.flatnonzero(members.mask[self._vector_item_rows])
            if not len(rows):
                return {}
        if len(self._vector_row_of) != len(self.vector_ids):
            # Several vectors per item (several indexed fields): the best of each item.
            chosen = list(range(len(self.vector_ids))) if rows is None else rows.tolist()
            return _best_per_item(
                [self.vector_ids[r] for r in chosen], sims[chosen].tolist(), k, include
            )
        best = {
            self.vector_ids[r]: float(sims[r]) for r in _top_rows(sims, k, rows, self.vector_ids)
        }
        row_of = self._vector_row_of
        for item in include:
            if item not in best and item in members and item in row_of:
                best[item] = float(sims[row_of[item]])
        return best


_EMPTY_POSTING = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def _inverted_index(
    row_of: Mapping[str, int], packed_terms: Mapping[str, str]
) -> tuple[dict[str, int], list[int], np.ndarray, np.ndarray]:
    """Every term's postings over the items of ``packed_terms``: a code per term, and the
    rows and frequencies of all postings sorted by code (rows ascending within one), code
    ``c``'s between ``starts[c]`` and ``starts[c + 1]``.

    The items' packed terms are joined and split once, so a namespace of a thousand items
    is a few list and array operations over its postings, not a dictionary per item.
    """
    texts = list(packed_terms.values())
    fields = PACKED_SEPARATOR.join(texts).split(PACKED_SEPARATOR) if texts else []
    words = fields[0::2]
    counts = np.array(list(map(int, fields[1::2])), dtype=np.float64)
    # A packed text of n terms holds 2n - 1 separators.
    rows = np.repeat(
        np.fromiter((row_of[i] for i in packed_terms), dtype=np.int64, count=len(texts)),
        [(text.count(PACKED_SEPARATOR) + 1) // 2 for text in texts],
    )
    codes: dict[str, int] = {}
    coded = np.array([codes.setdefault(w, len(codes)) for w in words], dtype=np.int64)
    order = np.argsort(coded, kind="stable")
    starts = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(coded, minlength=len(codes)), out=starts[1:])
    return codes, starts.tolist(), rows[order], counts[order]


def _top_rows(values: np.ndarray, k: int, rows: np.ndarray | None, ids: Sequence[str]) -> list[int]:
    """The rows of the ``k`` highest ``values`` (among ``rows``, default all), best first,
    ties in id order: a partial sort, then every row tied with the k-th value is sorted."""
    candidates = values if rows is None else values[rows]
    if len(candidates) > k:
        kth = np.partition(candidates, len(candidates) - k)[len(candidates) - k]
        chosen = np.flatnonzero(candidates >= kth)
    else:
        chosen = np.arange(len(candidates))
    picked = chosen if rows is None else rows[chosen]
    ordered = sorted((-float(values[r]), ids[r], r) for r in picked.tolist())
    return [r for _, _, r in ordered[:k]]


class ArrayScores(Mapping[str, float]):
    """Item -> BM25 score over a cached namespace, for the items that score above 0."""

    __slots__ = ("_data", "_scores")

    def __init__(self, data: ScopeData, scores: np.ndarray) -> None:
        self._data = data
        self._scores = scores

    def __getitem__(self, item: str) -> float:
        row = self._data.row_of.get(item)
        if row is None or self._scores[row] <= 0:
            raise KeyError(item)
        return float(self._scores[row])

    def __contains__(self, item: object) -> bool:
        row = self._data.row_of.get(item) if isinstance(item, str) else None
        return row is not None and bool(self._scores[row] > 0)

    def __iter__(self) -> Iterator[str]:
        ids = self._data.ids
        return (ids[r] for r in np.flatnonzero(self._scores > 0).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self._scores > 0))

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(item, score)``, best first, ties in id order."""
        positive = np.flatnonzero(self._scores > 0)
        ids = self._data.ids
        return [(ids[r], float(self._scores[r])) for r in _top_rows(self._scores, k, positive, ids)]


def _best_per_item(
    ids: Sequence[str], sims: Sequence[float], k: int, include: Sequence[str]
) -> dict[str, float]:
    """The best similarity of each item over its rows: the top ``k`` and ``include``."""
    best: dict[str, float] = {}
    for item, sim in zip(ids, sims, strict=True):
        if item not in best or sim > best[item]:
            best[item] = sim
    if len(best) <= k:
        return best
    top = dict(sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
    top.update((i, best[i]) for i in include if i in best)
    return top


class Guess(NamedTuple):
    """Members a search takes from the cache without asking the database first, and the
    proof it must ask for in the statement that reads its rows: ``check`` (bound to
    ``params``) is 1 when they are exactly the search's members at the entry's version."""

    data: ScopeData
    members: Members
    check: str
    params: list[Any]


class ScopeCache:
    """:class:`ScopeData` per namespace prefix, bounded by ``max_items`` (thread-safe)."""

    def __init__(self, dialect: Dialect, max_items: int = MAX_CACHED_ITEMS) -> None:
        self.dialect = dialect
        self.max_items = max_items
        self._entries: OrderedDict[str, ScopeData] = OrderedDict()
        self._loads: dict[str, Latch] = {}  # prefixes being read, for searches to wait on
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def guess(
        self,
        prefix: str,
        key: tuple[Any, ...],
        instants: tuple[datetime, datetime] | None,
    ) -> Guess | None:
        """The members remembered for a search with ``key`` at ``instants``, for the search
        to confirm in its own rows statement; None when there are none that answer those
        instants, or where statements cost no round trip (:meth:`members_flow` then asks
        the two counters first).

        The check reads the counters in the statement's snapshot: while both are what
        they were when the members were read, nothing under the prefix was written or
        moved since, so the members are the search's (see :class:`RememberedMembers`).
        A wrong guess costs the search one more statement, never an answer.
        """
        if self.dialect.in_process or instants is None:
            return None
        with self._lock:
            data = self._entries.get(prefix)
            remembered = data.remembered(key, instants) if data is not None else None
        if data is None or remembered is None:
            return None
        under, under_params = self._under("prefix", prefix)
        moves, moves_params = self.dialect.moves_sql(under, under_params)
        self._touch(prefix, data)
        return Guess(
            data,
            remembered.members,
            f"(SELECT CASE WHEN (SELECT {self._changes_sql(under)}) = ?"
            f" AND {moves} = ? THEN 1 ELSE 0 END)",
            [*under_params, data.version, *moves_params, remembered.moves],
        )

    def members_flow(
        self,
        prefix: str,
        where: str,
        params: Sequence[Any],
        *,
        key: tuple[Any, ...] = (),
        instants: tuple[datetime, datetime] | None = None,
        columns: Sequence[str] = (),
        member_rows: dict[str, Sequence[Any]] | None = None,
        may_wait: bool = True,
    ) -> Flow[tuple[ScopeData, Members] | None]:
        """The prefix's data and the items matching ``where`` (alias ``i``; within ``prefix``).

        When the namespace is read (missing or stale), the ``columns`` (expressions on
        ``i``) of every member come with it, in ``member_rows`` by item: what a search
        would read of its candidates next, in the same snapshot as the members.

        ``key`` is ``where`` and ``params`` less the ``instants`` it compares times with
        (the search's time, the clock). When the entry holds members of a search with that
        key, the database has counted no change of the prefix since (nor of the columns
        that decide membership: statuses, scopes, kinds, times), and no item's time lies
        between that search's instants and these, those members are this search's too:
        one small statement. Otherwise one statement for the members and the counters,
        and when the entry is missing or stale one statement that reads the items, their
        vectors and which of them are members (a missing entry: that one only). None when
        the search's items are more than the cache may keep.

        The members' ids are sent only when they are not simply every item of the cached
        entry: at the entry's version the prefix holds exactly its items, and the members
        are some of them, so as many members as items are all of them (the usual case: a
        search of a namespace's current memories), and a large namespace costs no list.

        Where each statement reads its own snapshot (PostgreSQL's READ COMMITTED), a load
        may see changes committed after the members were read: it reads the members again,
        with the items, the vectors and the counter, in its own snapshot. The members of a
        search are kept with the entry (:meth:`guess`), and remembered where membership
        changes are counted, only when read at the entry's own version.

        One load per prefix at a time: a search that would read a namespace another
        search of this cache is reading waits for that load (``may_wait``; at most
        :data:`LOAD_WAIT_SECONDS`) and then checks the entry it left like any other, so
        eight clients meeting a cold namespace cost one load, not eight competing ones.
        """
        remembers = instants is not None and self.dialect.counts_membership_changes
        under, under_params = self._under("prefix", prefix)
        changes = f"(SELECT {self._changes_sql(under)})"
        moves, moves_params = "0", list[Any]()
        if remembers:
            moves, moves_params = self.dialect.moves_sql(under, under_params)
        with self._lock:
            known = self._entries.get(prefix)
        # Out of process, :meth:`guess` has asked the counters already.
        if known is not None and instants is not None and remembers and self.dialect.in_process:
            with self._lock:  # searches of several threads share the entry
                remembered = known.remembered(key, instants)
            if remembered is not None:
                rows = yield Sql(f"SELECT {changes}, {moves}", [*under_params, *moves_params])
                if int(rows[0][0]) == known.version and int(rows[0][1]) == remembered.moves:
                    self._touch(prefix, known)
                    return known, remembered.members
        horizon, horizon_params = "NULL", list[Any]()
        if instants is not None and remembers:
            horizon, horizon_params = self._horizon(prefix, min(instants))
        state = f"{changes}, {moves}, {horizon}"
        state_params = [*under_params, *moves_params, *horizon_params]
        if known is not None:
            size = len(known.ids)
            # The ids only when the cache may use them: a namespace too large to keep would
            # send every id at every search for nothing.
            rows = yield Sql(
                f"SELECT m.ids, m.n, {state} FROM"
                f" (SELECT CASE WHEN count(*) <= ? AND count(*) <> ?"
                f" THEN {self.dialect.packed_sql('i.id')} END AS ids,"
                f" count(*) AS n FROM {ITEMS} i WHERE {where}) m",
                [*state_params, self.max_items, size, *params],
            )
            packed, count, version, moved, next_time = rows[0]
            if count > self.max_items:
                return None
            if known.version == int(version):
                everything = packed is None and count == size and count > 0
                members = known.every_member() if everything else known.members(packed or "")
                self._touch(prefix, known)
                self._note(known, key, instants, members, moved, next_time)
                return known, members
        with self._lock:
            latch = self._loads.get(prefix)
            mine = latch is None
            if latch is None:
                latch = self._loads[prefix] = Latch()
        if not mine and may_wait:
            opened = yield WaitFor(latch, LOAD_WAIT_SECONDS)
            if not opened:
                # A load that never ended (its flow left unfinished): searches no longer
                # wait for it, and the next to load registers its own.
                self._forget_load(prefix, latch)
            return (
                yield from self.members_flow(
                    prefix,
                    where,
                    params,
                    key=key,
                    instants=instants,
                    columns=columns,
                    member_rows=member_rows,
                    may_wait=False,
                )
            )
        try:
            loaded = yield from self._load_flow(
                prefix, where, params, state, state_params, columns, member_rows
            )
            if loaded is None:
                return None
            data, members, moved, next_time = loaded
            if len(data.ids) > self.max_items:
                return data, members  # used once, never kept
            with self._lock:
                self._entries[prefix] = data
                self._entries.move_to_end(prefix)
                total = sum(len(d.ids) for d in self._entries.values())
                while total > self.max_items and len(self._entries) > 1:
                    _, gone = self._entries.popitem(last=False)
                    total -= len(gone.ids)
            self._note(data, key, instants, members, moved, next_time)
            return data, members
        finally:
            if mine:
                self._forget_load(prefix, latch)
                latch.open()

    def _forget_load(self, prefix: str, latch: Latch) -> None:
        """``latch``'s load of ``prefix`` is no longer one to wait for."""
        with self._lock:
            if self._loads.get(prefix) is latch:
                del self._loads[prefix]

    def _note(
        self,
        data: ScopeData,
        key: tuple[Any, ...],
        instants: tuple[datetime, datetime] | None,
        members: Members,
        moves: Any,
        next_time: Any,
    ) -> None:
        """Keep ``members``, read at ``data``'s version, as those of searches with ``key``."""
        if instants is None:
            return
        horizon = self.dialect.ts_value(next_time) if next_time is not None else None
        entry = RememberedMembers(members, int(moves), instants, horizon)
        with self._lock:
            data.remember(key, entry)

    def _touch(self, prefix: str, data: ScopeData) -> None:
        """``data`` was used: the last to leave."""
        with self._lock:
            if self._entries.get(prefix) is data:
                self._entries.move_to_end(prefix)

    @staticmethod
    def _changes_sql(under: str) -> str:
        """The sum of the change counters of the namespaces matching ``under``."""
        return f"CAST(coalesce(sum(changes), 0) AS BIGINT) FROM {SCOPE_CHANGES} WHERE {under}"

    def _horizon(self, prefix: str, since: datetime) -> tuple[str, list[Any]]:
        """A subquery: the earliest time of an item under ``prefix`` after ``since`` (NULL
        when none), the instant until which the members of a search may change only
        through a write the counters see."""
        under, under_params = self._under("i.prefix", prefix)
        return self.dialect.next_time_sql(under, under_params, self.dialect.ts_param(since))

    def _under(self, column: str, prefix: str) -> tuple[str, list[str]]:
        """Rows whose namespace ``column`` is ``prefix`` or below it (all rows for ``""``)."""
        return self.dialect.under_namespace_sql(column, prefix) if prefix else ("1 = 1", [])

    def _load_flow(
        self,
        prefix: str,
        where: str,
        params: Sequence[Any],
        state: str,
        state_params: Sequence[Any],
        columns: Sequence[str],
        member_rows: dict[str, Sequence[Any]] | None,
    ) -> Flow[tuple[ScopeData, Members, Any, Any] | None]:
        """The entry of ``prefix`` as the database holds it, the items matching ``where``
        among it, and the ``state`` read with them (the counters, the next time of an item:
        three values); None when those items are more than the cache may keep. The
        ``columns`` of each member go to ``member_rows``.

        One statement, so one snapshot: a row per item with its terms packed
        (bm25.pack_terms; a namespace of a thousand items has tens of thousands of term
        rows, each a Python tuple if read one by one), whether it is a member, whether it
        may have neighbours, and its ``columns``; a row per vector (its bytes; the binary
        result format carries them as they are); a last row with the state and the
        members' number. Nothing but that row when the members are too many: the items are
        then not read at all.
        """
        d = self.dialect
        under, under_params = self._under("i.prefix", prefix)
        vector_under, vector_params = self._under("v.prefix", prefix)
        fits = "(SELECT m.n FROM m) <= ?"
        extra = "".join(f", {c}" for c in columns)
        nulls = ", NULL" * len(columns)
        # The items first, so that PostgreSQL, which resolves a UNION's types from the
        # left, knows the type of every column before it meets a branch's NULLs.
        rows = yield Sql(
            f"WITH m AS MATERIALIZED (SELECT count(*) AS n FROM {ITEMS} i WHERE {where})"
            f" SELECT i.id, i.doc_len, i.terms, CASE WHEN {where} THEN 1 ELSE 0 END,"
            f" CASE WHEN i.kind = '{NEIGHBOUR_KIND}' THEN 1 ELSE 0 END,"
            f" CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS {d.ts_type}), NULL{extra}"
            f" FROM {ITEMS} i WHERE {under} AND {fits} UNION ALL"
            f" SELECT v.item_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
            f" {d.vector_bytes_sql('v.embedding')}{nulls} FROM {VECTORS} v"
            f" WHERE {vector_under} AND {fits} UNION ALL"
            f" SELECT NULL, m.n, NULL, 0, 0, {state}, NULL{nulls} FROM m",
            [
                *params,
                *params,
                *under_params,
                self.max_items,
                *vector_params,
                self.max_items,
                *state_params,
            ],
            binary=True,
        )
        count, version, moves, next_time = 0, 0, 0, None
        doc_len: dict[str, int] = {}
        packed_terms: dict[str, str] = {}
        listed: set[str] = set()
        episodic: set[str] = set()
        vector_ids: list[str] = []
        vectors: list[bytes] = []
        for item, length, packed, member, has_neighbours, *rest in rows:
            if item is None:
                count, (version, moves, next_time) = int(length), rest[:3]
            elif length is None:  # a vector: only items have a length
                vector_ids.append(item)
                vectors.append(rest[3])
            else:
                doc_len[item] = length
                if packed:
                    packed_terms[item] = packed
                if member:
                    listed.add(item)
                    if member_rows is not None:
                        member_rows[item] = rest[4:]
                if has_neighbours:
                    episodic.add(item)
        if count > self.max_items:
            return None
        if any(i not in doc_len for i in vector_ids):
            # A vector left without its item (deleted by SQL where foreign keys are off).
            kept = [r for r, i in enumerate(vector_ids) if i in doc_len]
            vector_ids, vectors = [vector_ids[r] for r in kept], [vectors[r] for r in kept]
        if vectors:
            matrix = np.frombuffer(b"".join(vectors), dtype=d.vector_dtype)
            matrix = matrix.astype(np.float32, copy=False).reshape(len(vectors), -1)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        data = ScopeData(int(version), doc_len, packed_terms, vector_ids, matrix, episodic)
        return data, data.members_of(listed), moves, next_time
