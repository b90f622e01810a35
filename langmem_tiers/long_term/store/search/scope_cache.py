"""What a search reads of a namespace, kept in process and checked against the database.

A search reads, for the items it may return, their BM25 terms and their vectors. None of
that depends on the search's time: which items may be returned does (validity intervals,
``as_of``, time windows, expiry, statuses, value filters), and that is the database's to
answer, with the search's full condition. So the cache keeps, per searched namespace
prefix, the terms, lengths and vectors of *every* item under the prefix, whatever its
status or validity, as arrays (items are rows; a term's postings are rows and
frequencies), and each search restricts them to the members the database selected for it.

Freshness: the database counts the changes of every namespace (``lmt_scope_changes``, kept
by triggers on the items table, see ``search/migrations.py``). The members and
the sum of the counters under the prefix are read in one statement, inside the search's
transaction; counters only grow, so any insert or delete of an item under the prefix, or a
change of its id, namespace, value or length (by this process, another process, or
SQL of the engine) moves the sum. Terms and vectors are only ever written together with
such a change of their item (the store's writer, and compression, which zeroes the
length). Access counts and the other usage columns do not move the counter: they are read
with the result rows, never cached.

Changes: every count is logged with its item (``lmt_item_changes``, see
``search/migrations.py``), numbered by the count it brought its namespace to. An
entry keeps each namespace's count; when the sum moved, one statement reads the log above
those counts and the items it names, and the entry takes them in
(:meth:`ScopeData.changed`). Where the log was cut below an entry's counts (it keeps the
last :data:`~langmem_tiers.sql.dialect.CHANGES_KEPT` changes of a namespace), the rows
found are fewer than the counters moved, and the namespace is read again.

Members: the database also counts the updates that may change membership (``moves``:
statuses, scopes, kinds and the times a search compares), so an entry remembers the
members of recent searches with their counters and the next time of any of its items
after the search's instants. A later search with the same condition, at instants no
earlier and before that time, while neither counter moved, selects exactly those items.
In process (SQLite) it reads the two counters and nothing else first; over a connection
(PostgreSQL) it takes the members at once and has the statement that reads its result
rows check the counters (:meth:`ScopeCache.guess`): one statement in all while they hold.

Own writes: a write of this process reads, inside its transaction, the counts of the
namespaces it writes just before and just after its changes (``writes.OwnWrite``), and
after its commit the cache takes in what it wrote instead of reading it back: an entry
that held a namespace at the first count holds it at the second; a namespace whose count
was 0 starts a seed, every item this process wrote there since, which becomes the entry
of the namespace's first search without reading it (:meth:`ScopeCache.written`).

Example::

    >>> from langmem_tiers.sql.dialect import SqliteDialect
    >>> cache = ScopeCache(SqliteDialect(), max_items=1_000)
    >>> cache.max_items
    1000
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from itertools import chain
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

import numpy as np

from langmem_tiers.long_term.store.search.bm25 import BM25_B, BM25_K1, unpack_terms
from langmem_tiers.long_term.store.search.neighbours import NEIGHBOUR_KIND
from langmem_tiers.long_term.store.vectors import UnitVectors
from langmem_tiers.sql.dialect import (
    CHANGES_KEPT,
    ITEM_CHANGES,
    ITEMS,
    PACKED_SEPARATOR,
    SCOPE_CHANGES,
    VECTORS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, Latch, Sql, WaitFor

if TYPE_CHECKING:
    from langmem_tiers.long_term.store.writes import OwnWrite, WrittenItem

__all__ = [
    "COUNTED_GUESS_MAX",
    "LOAD_WAIT_SECONDS",
    "MAX_SETTLED",
    "MAX_TAKEN_ITEMS",
    "MEMBER_ROWS_MAX",
    "ArrayScores",
    "Guess",
    "Members",
    "ScopeCache",
    "ScopeData",
]

#: A load brings the ``columns`` of each member (what the search reads of its candidates
#: next) only while the members are at most this many. Each member row costs the reading
#: search a little more, while a separate statement for the candidates' rows costs a round
#: trip: in a small namespace the rows are cheaper, in a large one the statement.
MEMBER_ROWS_MAX = 300

#: The most items of an entry whose searches, when it remembers no members for them,
#: guess that every item is a member, proved by counting the members in the rows
#: statement (see :meth:`ScopeCache.guess`): a count over a larger namespace costs more
#: than reading its members once, after which they are remembered.
COUNTED_GUESS_MAX = 2_000

#: The most items of an entry that takes in this process's writes as they commit: taking
#: one in copies the entry, at a cost to the writer that grows with the entry, so above
#: this the next search reads the changes instead, once for every write
#: since, and writes of its namespaces read no counts.
MAX_TAKEN_ITEMS = 1_000

#: Namespaces remembered as not new to this process's writes (their count was above 0 at
#: its first write there, and it holds no seed of them): their writes read no counts.
MAX_SETTLED = 100_000

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


#: An entry over more namespaces than this is read again after a change rather than
#: brought up to date from the change log (whose statement names each namespace's count).
MAX_CHANGED_NAMESPACES = 64

#: What a read of a namespace's changes gives when its members are more than it may keep.
TOO_MANY: Final = "too many"

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
        "counters",
        "episodic",
        "ids",
        "lengths",
        "packed_terms",
        "row_of",
        "vector_ids",
        "vectors",
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
        counters: Mapping[str, int] | None = None,
    ) -> None:
        ids = list(doc_len)
        row_of = {item: row for row, item in enumerate(ids)}
        self._set(
            version,
            counters,
            ids,
            row_of,
            np.fromiter(doc_len.values(), dtype=np.int64, count=len(ids)),
            packed_terms,
            vector_ids,
            matrix,
            episodic,
            _inverted_index(row_of, packed_terms),
        )

    def _set(
        self,
        version: int,
        counters: Mapping[str, int] | None,
        ids: list[str],
        row_of: dict[str, int],
        lengths: np.ndarray,
        packed_terms: Mapping[str, str],
        vector_ids: list[str],
        vectors: np.ndarray | UnitVectors,
        episodic: AbstractSet[str],
        index: tuple[dict[str, int], list[int], np.ndarray, np.ndarray],
        vector_rows: tuple[np.ndarray, dict[str, int]] | None = None,
    ) -> None:
        self.version = version
        # Each namespace's count at ``version`` (None: not read), for a later read of the
        # items changed since (:meth:`ScopeCache.members_flow`).
        self.counters = counters
        self.ids = ids  # every item under the prefix, by row
        self.row_of = row_of
        self.lengths = lengths
        self.packed_terms = packed_terms  # item -> its packed terms (items with terms)
        self.vector_ids = vector_ids  # the item of each of ``vectors``
        self.vectors = vectors if isinstance(vectors, UnitVectors) else UnitVectors(vectors)
        self.episodic = episodic  # the items of the kind that has neighbours
        if vector_rows is None and vector_ids == ids:
            vector_rows = (np.arange(len(ids), dtype=np.int64), row_of)
        elif vector_rows is None:
            vector_rows = (
                np.fromiter((row_of[i] for i in vector_ids), dtype=np.int64, count=len(vector_ids)),
                {item: row for row, item in enumerate(vector_ids)},
            )
        # Each vector's item row, and each item's vector row (its last, if several).
        self._vector_item_rows, self._vector_row_of = vector_rows
        self._codes, self._starts, self._posting_rows, self._posting_counts = index
        self._last_members: Members | None = None
        self._remembered: OrderedDict[tuple[Any, ...], RememberedMembers] = OrderedDict()
        positive = lengths[lengths > 0]
        self._statistics = (
            len(positive),
            int(positive.sum()) / len(positive) if len(positive) else 0.0,
        )

    def changed(
        self,
        version: int,
        counters: Mapping[str, int],
        changed: AbstractSet[str],
        items: Mapping[str, tuple[int, str | None, bool]],
        vector_ids: list[str],
        matrix: np.ndarray,
    ) -> ScopeData:
        """This entry at ``version``: the ``changed`` items dropped, and those of them the
        prefix still holds added back as ``items`` (item -> length, packed terms, whether
        it has neighbours) with their vectors (``vector_ids``, rows of ``matrix``).

        The other items keep their order, their postings and their vectors; the changed
        ones come after them. What a search computes does not depend on the order (ties
        are broken by id), so the entry answers as one read afresh would.
        """
        kept = np.ones(len(self.ids), dtype=bool)
        kept[[self.row_of[i] for i in changed if i in self.row_of]] = False
        kept_rows = np.flatnonzero(kept)
        added = sorted(items)
        if len(kept_rows) == len(self.ids):  # only new items: every row stays
            ids = [*self.ids, *added]
            row_of = dict(self.row_of)
            row_of.update((item, len(self.ids) + n) for n, item in enumerate(added))
        else:
            ids = [self.ids[r] for r in kept_rows.tolist()] + added
            row_of = {item: row for row, item in enumerate(ids)}
        lengths = np.concatenate(
            [self.lengths[kept_rows], np.array([items[i][0] for i in added], dtype=np.int64)]
        )
        packed_terms = dict(self.packed_terms)
        for item in changed:
            packed_terms.pop(item, None)
        packed_terms.update((i, items[i][1]) for i in added if items[i][1])  # type: ignore[misc]
        episodic = set(self.episodic) - changed
        episodic.update(i for i in added if items[i][2])
        # Old postings of kept rows, renumbered (an order-keeping renumbering keeps them
        # sorted), merged with the added items' postings by (code, row).
        renumbered = np.full(len(self.ids), -1, dtype=np.int64)
        renumbered[kept_rows] = np.arange(len(kept_rows), dtype=np.int64)
        starts = np.asarray(self._starts, dtype=np.int64)
        old_codes = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
        old_rows = renumbered[self._posting_rows]
        staying = old_rows >= 0
        old_codes, old_rows = old_codes[staying], old_rows[staying]
        old_counts = self._posting_counts[staying]
        codes = dict(self._codes)
        new_codes, new_rows, new_counts = _postings(
            codes,
            [row_of[i] for i in added if items[i][1]],
            [t for i in added if (t := items[i][1])],
        )
        width = len(ids) + 1
        old_keys = old_codes * width + old_rows
        new_keys = new_codes * width + new_rows
        order = np.argsort(new_keys, kind="stable")
        at = np.searchsorted(old_keys, new_keys[order])
        all_codes = np.insert(old_codes, at, new_codes[order])
        index_starts = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_codes, minlength=len(codes)), out=index_starts[1:])
        index = (
            codes,
            index_starts.tolist(),
            np.insert(old_rows, at, new_rows[order]),
            np.insert(old_counts, at, new_counts[order]),
        )
        kept_vectors = np.flatnonzero(kept[self._vector_item_rows])
        if len(kept_vectors) == len(self.vector_ids):
            all_vector_ids = [*self.vector_ids, *vector_ids]
            vector_row_of = dict(self._vector_row_of)
            vector_row_of.update(
                (item, len(self.vector_ids) + n) for n, item in enumerate(vector_ids)
            )
        else:
            all_vector_ids = [self.vector_ids[r] for r in kept_vectors.tolist()] + vector_ids
            vector_row_of = {item: row for row, item in enumerate(all_vector_ids)}
        vector_item_rows = np.concatenate(
            [
                renumbered[self._vector_item_rows[kept_vectors]],
                np.array([row_of[i] for i in vector_ids], dtype=np.int64),
            ]
        )
        all_vectors = self.vectors.kept_and_added(kept_vectors, matrix)
        data = object.__new__(ScopeData)
        data._set(
            version,
            counters,
            ids,
            row_of,
            lengths,
            packed_terms,
            all_vector_ids,
            all_vectors,
            episodic,
            index,
            (vector_item_rows, vector_row_of),
        )
        return data

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

    def listed(self, packed: str | None, count: int, total: int) -> Members:
        """The members a statement listed: ``packed`` ids, or none sent (None) when they
        are all ``total`` items of this entry (``count`` of them)."""
        if packed is None and count == total and count > 0:
            return self.every_member()
        return self.members(packed or "")

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
        floats).

        Every term's postings are gathered into one array, in term order, and summed per
        item by one ``bincount``, which adds an item's contributions in that order: a few
        array operations for the whole query, not a few for each of its (expanded) terms.
        """
        k1, b = BM25_K1, BM25_B
        terms, starts, sizes = [], [], []
        for term in sorted(weights):
            code = self._codes.get(term)
            if code is not None:
                terms.append(term)
                starts.append(self._starts[code])
                sizes.append(self._starts[code + 1] - self._starts[code])
        if not terms:
            return ArrayScores(self, np.zeros(len(self.ids), dtype=np.float64))
        size = np.array(sizes, dtype=np.int64)
        # The concatenated ranges [start, start + size) of every term.
        gather = np.arange(int(size.sum()), dtype=np.int64) + np.repeat(
            np.array(starts, dtype=np.int64) - (np.cumsum(size) - size), size
        )
        rows, counts = self._posting_rows[gather], self._posting_counts[gather]
        term_of = np.repeat(np.arange(len(terms)), size)
        mask = members.mask
        if mask is not None:
            kept = mask[rows]
            rows, counts, term_of = rows[kept], counts[kept], term_of[kept]
            size = np.bincount(term_of, minlength=len(terms))
        # The idf in Python (math.log), as score_postings computes it.
        idf_weights = np.array(
            [
                weights[term] * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
                for term, df in zip(terms, size.tolist(), strict=True)
            ],
            dtype=np.float64,
        )
        norm = 1.0 - b + b * self.lengths[rows] / avgdl
        parts = idf_weights[term_of] * counts * (k1 + 1.0) / (counts + k1 * norm)
        scores = np.bincount(rows, weights=parts, minlength=len(self.ids))
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
        sims = self.vectors.similarities(vector)
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
        top = _top_rows(sims, k, rows, self.vector_ids)
        best = dict(zip([self.vector_ids[r] for r in top], sims[top].tolist(), strict=True))
        row_of = self._vector_row_of
        for item in include:
            if item not in best and item in members and item in row_of:
                best[item] = float(sims[row_of[item]])
        return best


_EMPTY_POSTING = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
_NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


def _inverted_index(
    row_of: Mapping[str, int], packed_terms: Mapping[str, str]
) -> tuple[dict[str, int], list[int], np.ndarray, np.ndarray]:
    """Every term's postings over the items of ``packed_terms``: a code per term, and the
    rows and frequencies of all postings sorted by code (rows ascending within one), code
    ``c``'s between ``starts[c]`` and ``starts[c + 1]``."""
    codes: dict[str, int] = {}
    coded, rows, counts = _postings(
        codes, [row_of[i] for i in packed_terms], list(packed_terms.values())
    )
    order = _by_code(coded, len(codes))
    starts = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(coded, minlength=len(codes)), out=starts[1:])
    return codes, starts.tolist(), rows[order], counts[order]


def _by_code(coded: np.ndarray, n_codes: int) -> np.ndarray:
    """The order that sorts postings by their codes (below ``n_codes``), keeping the order
    of those of one code. Codes that fit in 16 bits are sorted as such: numpy's stable
    sort of 16-bit integers is a radix sort, faster than a comparison sort."""
    if n_codes <= 1 << 16:
        return np.argsort(coded.astype(np.uint16), kind="stable")
    return np.argsort(coded, kind="stable")


def _postings(
    codes: dict[str, int], rows: Sequence[int], texts: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of packed ``texts`` (the terms of the items at ``rows``): each one's
    term code (new terms get the next codes in ``codes``), row and frequency, in text order.

    The texts are joined and split once, so a namespace of a thousand items is a few list
    and array operations over its postings, not a dictionary per item.
    """
    fields = PACKED_SEPARATOR.join(texts).split(PACKED_SEPARATOR) if texts else []
    counts = _frequencies(fields[1::2])
    # A packed text of n terms holds 2n - 1 separators.
    posting_rows = np.repeat(
        np.asarray(rows, dtype=np.int64),
        [(text.count(PACKED_SEPARATOR) + 1) // 2 for text in texts],
    )
    coded = np.array(_code_terms(codes, fields[0::2]), dtype=np.int64)
    return coded, posting_rows, counts


def _code_terms(codes: dict[str, int], terms: Sequence[str]) -> list[int]:
    """The code of each of ``terms``, new terms numbered next in ``codes`` in order of
    first use. Each new term is numbered once, then every code is one lookup in C: a
    Python loop over the postings cost most of a namespace's load.

    Example::

        >>> codes = {"paint": 0}
        >>> _code_terms(codes, ["sunris", "paint", "sunris", "lake"]), codes
        ([1, 0, 1, 2], {'paint': 0, 'sunris': 1, 'lake': 2})
    """
    fresh = [term for term in dict.fromkeys(terms) if term not in codes]
    first = len(codes)
    codes.update(zip(fresh, range(first, first + len(fresh)), strict=True))
    return list(map(codes.__getitem__, terms))


def _frequencies(numerals: list[str]) -> np.ndarray:
    """``numerals`` (whole numbers written in decimal) as floats.

    Nearly every term occurs once or a few times in an item: when every numeral is one
    digit, their characters are their values plus 48, read as one byte array at once
    instead of through ``int`` one by one.

    Example::

        >>> _frequencies(["1", "3", "1"]).tolist(), _frequencies(["12", "1"]).tolist()
        ([1.0, 3.0, 1.0], [12.0, 1.0])
    """
    digits = "".join(numerals)
    if len(digits) == len(numerals):
        return (np.frombuffer(digits.encode("ascii"), dtype=np.uint8) - 48).astype(np.float64)
    return np.array(numerals, dtype=np.float64)


def _top_rows(values: np.ndarray, k: int, rows: np.ndarray | None, ids: Sequence[str]) -> list[int]:
    """The rows of the ``k`` highest ``values`` (among ``rows``, default all), best first,
    ties in id order: a partial sort, then every row tied with the k-th value is sorted."""
    if k <= 0:
        return []
    candidates = values if rows is None else values[rows]
    if len(candidates) > k:
        kth = np.partition(candidates, len(candidates) - k)[len(candidates) - k]
        chosen = np.flatnonzero(candidates >= kth)
    else:
        chosen = np.arange(len(candidates))
    picked = (chosen if rows is None else rows[chosen]).tolist()
    # One array read for every value (an element read apiece cost more than the sort).
    ordered = sorted(zip((-values[picked]).tolist(), [ids[r] for r in picked], picked, strict=True))
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

    def of(self, items: Iterable[str]) -> dict[str, float]:
        """The scores of those of ``items`` that score above 0 (one array read for all)."""
        row_of = self._data.row_of
        found = [(item, row) for item in items if (row := row_of.get(item)) is not None]
        if not found:
            return {}
        values = self._scores[[row for _, row in found]].tolist()
        return {item: v for (item, _), v in zip(found, values, strict=True) if v > 0}

    def top(self, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(item, score)``, best first, ties in id order."""
        positive = np.flatnonzero(self._scores > 0)
        ids = self._data.ids
        rows = _top_rows(self._scores, k, positive, ids)
        return list(zip([ids[r] for r in rows], self._scores[rows].tolist(), strict=True))


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
    """:class:`ScopeData` per namespace prefix, bounded by ``max_items`` over all prefixes
    (``Settings.scope_cache_items``); the least recently searched prefixes leave first
    (thread-safe)."""

    def __init__(self, dialect: Dialect, max_items: int) -> None:
        self.dialect = dialect
        self.max_items = max_items
        self._entries: OrderedDict[str, ScopeData] = OrderedDict()
        # Items over every entry, kept as entries come and go: summed at each keep, it cost
        # a namespace's first search a pass over every entry held.
        self._held = 0
        self._loads: dict[str, Latch] = {}  # prefixes being read, for searches to wait on
        # Prefixes this process wrote under since their entries were read: a guess there
        # would cost a rows statement that the counters then refuse.
        self._written: set[str] = set()
        # Namespaces whose every item this process wrote since their count was 0, by
        # namespace, the least recently written first; and namespaces known not to be.
        self._seeds: OrderedDict[str, _Seed] = OrderedDict()
        self._seed_items = 0
        self._settled: set[str] = set()
        self._lock = threading.Lock()

    def counted(self, namespaces: Iterable[str]) -> list[str]:
        """The namespaces, among those a write is about to write to, whose counts it should
        read for :meth:`written`: those this cache holds in an entry or a seed, and those
        it has not met (a first write of a new namespace starts its seed)."""
        with self._lock:
            return sorted(
                n
                for n in namespaces
                if n not in self._settled
                or n in self._seeds
                or any(len(self._entries[p].ids) <= MAX_TAKEN_ITEMS for p in self._covering(n))
            )

    def written(self, namespaces: Iterable[str], own: OwnWrite | None = None) -> None:
        """Namespaces (joined) this process has just written to, in a committed write, with
        what it did to those it counted (``own``, see :meth:`counted`).

        An entry of at most :data:`MAX_TAKEN_ITEMS` that held a counted namespace at the
        write's first count takes in the write's items there (:meth:`ScopeData.changed`),
        so the next search reads nothing of them. Otherwise the cached prefixes above a
        namespace only learn that it was written: their searches ask for the changes first
        instead of guessing their members. That is only a hint: a guess is proved by the
        counters, whoever wrote, so a write of another process costs a wrong guess (one
        more statement), never a wrong answer. And an entry is right for each namespace at its own count, so
        taking in some namespaces of a write and not others leaves it right.
        """
        taken: dict[str, tuple[ScopeData, list[str]]] = {}
        hinted: set[str] = set()
        with self._lock:
            for name in set(namespaces):
                covering = self._covering(name)
                for prefix in covering:
                    data = self._entries[prefix]
                    if (
                        own is not None
                        and len(data.ids) <= MAX_TAKEN_ITEMS
                        and name in own.after
                        and data.counters is not None
                        and data.counters.get(name, 0) == own.before[name]
                    ):
                        taken.setdefault(prefix, (data, []))[1].append(name)
                    else:
                        hinted.add(prefix)
                if own is not None and name in own.after:
                    self._seed(name, own, held=name in covering)
            self._written.update(hinted)
        for prefix, (data, names) in taken.items():
            updated = _taken(data, own, names)  # type: ignore[arg-type]
            with self._lock:
                if self._entries.get(prefix) is not data:
                    continue  # replaced meanwhile by a newer read
                if len(updated.ids) > self.max_items:
                    self._held -= len(self._entries.pop(prefix).ids)
                    continue
                self._set_entry(prefix, updated)
                if prefix not in hinted:
                    self._written.discard(prefix)

    def _covering(self, namespace: str) -> list[str]:
        """The prefixes of entries that hold ``namespace`` (the caller holds the lock)."""
        labels = namespace.split(".")
        prefixes = ["", *(".".join(labels[:n]) for n in range(1, len(labels) + 1))]
        return [p for p in prefixes if p in self._entries]

    def _seed(self, name: str, own: OwnWrite, *, held: bool) -> None:
        """Take ``own``'s items in ``name`` into its seed: the seed it continues, or a new
        one where the namespace's count was 0 (the caller holds the lock). A namespace
        whose entry is kept (``held``) needs none."""
        seed = self._seeds.pop(name, None)
        if seed is not None:
            self._seed_items -= len(seed.items)
        if held:
            if own.before[name] > 0:
                self._settle(name)  # its entries count it while one may take writes in
            return
        if seed is None and own.before[name] == 0 and name not in self._settled:
            seed = _Seed()
        elif seed is None or seed.count != own.before[name]:
            # Written by another since: the seed no longer holds every item.
            self._settle(name)
            return
        seed.take(own.items.get(name, {}), own.after[name])
        self._seeds[name] = seed
        self._seed_items += len(seed.items)
        while self._seed_items > self.max_items and self._seeds:
            gone, dropped = self._seeds.popitem(last=False)
            self._seed_items -= len(dropped.items)
            self._settle(gone)

    def _settle(self, name: str) -> None:
        if len(self._settled) >= MAX_SETTLED:
            self._settled.clear()
        self._settled.add(name)

    def _seeded(self, prefix: str) -> ScopeData | None:
        """The entry of ``prefix`` from its seed, kept (None: no seed)."""
        with self._lock:
            if prefix in self._entries:
                return None
            seed = self._seeds.pop(prefix, None)
            if seed is None:
                return None
            self._seed_items -= len(seed.items)
        data = seed.entry(prefix)
        self._keep(prefix, data)
        return data

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0
            self._seeds.clear()
            self._seed_items = 0

    def guess(
        self,
        prefix: str,
        key: tuple[Any, ...],
        instants: tuple[datetime, datetime] | None,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> Guess | None:
        """The members of a search with ``key`` at ``instants`` (condition ``where`` on
        ``i``, bound to ``params``) as the cache believes them, for the search to confirm
        in its own rows statement; None where statements cost no round trip
        (:meth:`members_flow` then asks the two counters first) or where it has no belief.

        Members remembered for ``key`` are checked by the counters, read in the
        statement's snapshot: while both are what they were when the members were read,
        nothing under the prefix was written or moved since, so the members are the
        search's (see :class:`RememberedMembers`). Without them, and given ``where``, an
        entry of at most :data:`COUNTED_GUESS_MAX` items (one made from a seed, at the
        first search of a namespace this process wrote, included) guesses that every item
        is a member: while the change count is the entry's, the prefix holds exactly its
        items, so as many items matching ``where`` as the entry holds are all of them.
        A wrong guess costs the search one more statement, never an answer.
        """
        if self.dialect.in_process:
            return None
        with self._lock:
            if prefix in self._written:
                return None
            data = self._entries.get(prefix)
            remembered = (
                data.remembered(key, instants)
                if data is not None and instants is not None
                else None
            )
        if data is None and where:
            data = self._seeded(prefix)
        if data is None:
            return None
        under, under_params = self._under("prefix", prefix)
        changes = f"(SELECT {self._changes_sql(under)}) = ?"
        if remembered is None and (not where or len(data.ids) > COUNTED_GUESS_MAX):
            return None
        self._touch(prefix, data)
        if remembered is not None:
            moves, moves_params = self.dialect.moves_sql(under, under_params)
            return Guess(
                data,
                remembered.members,
                f"(SELECT CASE WHEN {changes} AND {moves} = ? THEN 1 ELSE 0 END)",
                [*under_params, data.version, *moves_params, remembered.moves],
            )
        return Guess(
            data,
            data.every_member(),
            f"(SELECT CASE WHEN {changes} AND (SELECT count(*) FROM {ITEMS} i WHERE {where})"
            " = ? THEN 1 ELSE 0 END)",
            [*under_params, data.version, *params, len(data.ids)],
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

        When the namespace is read (missing or stale) and its members are at most
        :data:`MEMBER_ROWS_MAX`, the ``columns`` (expressions on ``i``) of every member
        come with it, in ``member_rows`` by item: what a search would read of its
        candidates next, in the same snapshot as the members.

        ``key`` is ``where`` and ``params`` less the ``instants`` it compares times with
        (the search's time, the clock). When the entry holds members of a search with that
        key, the database has counted no change of the prefix since (nor of the columns
        that decide membership: statuses, scopes, kinds, times), and no item's time lies
        between that search's instants and these, those members are this search's too:
        one small statement. Otherwise one statement for the members and the counters,
        which also reads the items the change log names since the entry's counts (a stale
        entry is brought up to date from them, :meth:`_changes_flow`); when the entry is
        missing, or the log no longer holds its changes, one statement that reads the
        items, their vectors and which of them are members. None when the search's items
        are more than the cache may keep.

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
        if known is None:
            known = self._seeded(prefix)
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
        if known is not None and (
            not self.dialect.logs_item_changes
            or known.counters is None
            or len(known.counters) > MAX_CHANGED_NAMESPACES
        ):
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
                members = known.listed(packed, count, size)
                self._confirmed(prefix, known)
                self._note(known, key, instants, members, moved, next_time)
                return known, members
        elif known is not None:
            light: tuple[RememberedMembers, str, list[Any]] | None = None
            if remembers and instants is not None:
                with self._lock:
                    remembered = known.remembered(key, instants)
                if remembered is not None:
                    # The remembered members stay but for the changed items: the next
                    # time among those alone.
                    next_changed, next_params = self._horizon(
                        prefix, min(instants), " AND i.id IN (SELECT l.item_id FROM l)"
                    )
                    light = (
                        remembered,
                        f"{changes}, {moves}, {next_changed}",
                        [*under_params, *moves_params, *next_params],
                    )
            updated = yield from self._changes_flow(
                prefix, known, where, params, state, state_params, light
            )
            if updated == TOO_MANY:
                return None
            if updated is not None:
                data, members, moved, next_time = updated
                if data is known:
                    self._confirmed(prefix, known)
                else:
                    self._keep(prefix, data, replacing=known)
                self._note(data, key, instants, members, moved, next_time)
                return data, members
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
            self._keep(prefix, data)
            self._note(data, key, instants, members, moved, next_time)
            return data, members
        finally:
            if mine:
                self._forget_load(prefix, latch)
                latch.open()

    def _keep(self, prefix: str, data: ScopeData, *, replacing: ScopeData | None = None) -> None:
        """Keep ``data`` as the entry of ``prefix`` (unless larger than the cache: used
        once), the least recently searched prefixes leaving to make room. With
        ``replacing``, only while that is still the entry: a newer read stays."""
        if len(data.ids) > self.max_items:
            return
        with self._lock:
            if replacing is not None and self._entries.get(prefix) is not replacing:
                return
            self._written.discard(prefix)
            self._set_entry(prefix, data)
            self._entries.move_to_end(prefix)
            while self._held > self.max_items and len(self._entries) > 1:
                _, gone = self._entries.popitem(last=False)
                self._held -= len(gone.ids)

    def _set_entry(self, prefix: str, data: ScopeData) -> None:
        """``data`` as the entry of ``prefix``, counted (the caller holds the lock)."""
        replaced = self._entries.get(prefix)
        self._held += len(data.ids) - (0 if replaced is None else len(replaced.ids))
        self._entries[prefix] = data

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

    def _confirmed(self, prefix: str, data: ScopeData) -> None:
        """``data`` was found current by a read of the counters: used, and no longer
        written since."""
        self._touch(prefix, data)
        with self._lock:
            self._written.discard(prefix)

    def _touch(self, prefix: str, data: ScopeData) -> None:
        """``data`` was used: the last to leave."""
        with self._lock:
            if self._entries.get(prefix) is data:
                self._entries.move_to_end(prefix)

    @staticmethod
    def _changes_sql(under: str) -> str:
        """The sum of the change counters of the namespaces matching ``under``."""
        return f"CAST(coalesce(sum(changes), 0) AS BIGINT) FROM {SCOPE_CHANGES} WHERE {under}"

    def _horizon(self, prefix: str, since: datetime, among: str = "") -> tuple[str, list[Any]]:
        """A subquery: the earliest time of an item under ``prefix`` after ``since`` (NULL
        when none), the instant until which the members of a search may change only
        through a write the counters see; ``among`` (a condition on ``i``) narrows the
        items."""
        under, under_params = self._under("i.prefix", prefix)
        return self.dialect.next_time_sql(
            f"{under}{among}", under_params, self.dialect.ts_param(since)
        )

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
        ``columns`` of each member go to ``member_rows`` when the members are at most
        :data:`MEMBER_ROWS_MAX` (the columns are NULL on every row otherwise).

        One statement, so one snapshot: a row per item with its terms packed
        (bm25.pack_terms; a namespace of a thousand items has tens of thousands of term
        rows, each a Python tuple if read one by one), whether it is a member, whether it
        may have neighbours, and its ``columns``; a row per vector (its bytes; the binary
        result format carries them as they are); a row per namespace with its count; a
        last row with the state and the members' number. Nothing but the last rows when the
        members are too many: the items are then not read at all.
        """
        under, under_params = self._under("i.prefix", prefix)
        fits = "(SELECT m.n FROM m) <= ?"
        few = f"(SELECT m.n FROM m) <= {MEMBER_ROWS_MAX}"
        wanted = [f"CASE WHEN {few} THEN {c} END" for c in columns]
        rows = yield Sql(
            f"WITH m AS MATERIALIZED (SELECT count(*) AS n FROM {ITEMS} i WHERE {where})"
            f" {self._items_sql(where, wanted, f'{under} AND {fits}')} UNION ALL"
            f" {self._vectors_sql(prefix, fits, len(columns))} UNION ALL"
            f" {self._counters_sql(prefix, '0', len(columns))}"
            f" UNION ALL SELECT 's', NULL, m.n, NULL, 0, 0, {state}, NULL"
            f"{', NULL' * len(columns)} FROM m",
            [
                *params,
                *params,
                *under_params,
                self.max_items,
                *self._under("v.prefix", prefix)[1],
                self.max_items,
                *self._under("s.prefix", prefix)[1],
                *state_params,
            ],
            binary=True,
        )
        read = _read_rows(rows, member_rows)
        count, _, _, version, moves, next_time = read.state
        if member_rows is not None and count > MEMBER_ROWS_MAX:
            member_rows.clear()  # their columns were not read
        if count > self.max_items:
            return None
        data = ScopeData(
            int(version),
            {i: length for i, (length, _, _) in read.items.items()},
            {i: packed for i, (_, packed, _) in read.items.items() if packed},
            read.vector_ids,
            self._matrix(read.vectors),
            {i for i, (_, _, episodic) in read.items.items() if episodic},
            read.counters,
        )
        return data, data.members_of(read.members), moves, next_time

    def _changes_flow(
        self,
        prefix: str,
        known: ScopeData,
        where: str,
        params: Sequence[Any],
        state: str,
        state_params: Sequence[Any],
        light: tuple[RememberedMembers, str, list[Any]] | None = None,
    ) -> Flow[tuple[ScopeData, Members, Any, Any] | Literal["too many"] | None]:
        """``known`` brought to the database's version by reading the items changed since
        (the change log names them), the items matching ``where`` among it and the
        ``state``, in one statement (``known`` itself when nothing changed); None when the
        log no longer holds every change since (or holds more than :data:`CHANGES_KEPT`):
        the namespace is then read again; :data:`TOO_MANY` when the members are more than
        the cache may keep.

        With ``light`` (members remembered for the search, and a state whose next time is
        that of the changed items only), the members are not read: while no update moved
        an item (the moves counter is the remembered one), they are the remembered ones
        but for the changed items, whose membership the statement reads. Otherwise the
        statement is read again without it.

        A write of one item to a namespace of 20,000 makes the next search read that item,
        not 20,000 items and their vectors, nor build their inverted index again.
        """
        assert known.counters is not None
        d = self.dialect
        sum_under, count_params = self._under("prefix", prefix)
        log_under, log_params = self._under("x.prefix", prefix)
        under, under_params = self._under("i.prefix", prefix)
        known_rows = (
            " UNION ALL ".join(
                "SELECT CAST(? AS TEXT) AS prefix, CAST(? AS BIGINT) AS n" for _ in known.counters
            )
            or "SELECT CAST(NULL AS TEXT) AS prefix, CAST(NULL AS BIGINT) AS n WHERE 1 = 0"
        )
        changed = "(SELECT l.item_id FROM l)"
        if light is None:
            members_sql = f"SELECT count(*) AS n FROM {ITEMS} i WHERE {where}"
            members_params = list(params)
            # Read only when sent (a CASE evaluates its subquery only on that branch): a
            # search of current memories has every item as a member, and its ids cost the
            # statement a third more for nothing.
            ids_sql = f"(SELECT {d.packed_sql('i.id')} FROM {ITEMS} i WHERE {where})"
            ids_params = list(params)
            items_sql = (
                "SELECT CASE WHEN EXISTS (SELECT 1 FROM l)"
                f" THEN (SELECT count(*) FROM {ITEMS} i WHERE {under}) ELSE ? END AS n"
            )
            items_params = [*under_params, len(known.ids)]
        else:
            members_sql, members_params = "SELECT 0 AS n", []
            ids_sql, ids_params = "CAST(NULL AS TEXT)", []
            items_sql, items_params = "SELECT 0 AS n", []
            state, state_params = light[1], light[2]
        rows = yield Sql(
            f"WITH k AS MATERIALIZED ({known_rows}),"
            f" l AS MATERIALIZED (SELECT x.prefix, x.item_id FROM {ITEM_CHANGES} x"
            " LEFT JOIN k ON k.prefix = x.prefix"
            f" WHERE {log_under} AND x.changes > coalesce(k.n, 0) AND (SELECT"
            f" {self._changes_sql(sum_under)}) - ? <= ?),"
            f" m AS MATERIALIZED ({members_sql}),"
            # The items' number only after a change (else the entry's): as many members
            # as items are every item, and their ids are then not sent.
            f" t AS MATERIALIZED ({items_sql})"
            f" {self._items_sql(where, (), f'i.id IN {changed} AND {under}')} UNION ALL"
            f" {self._vectors_sql(prefix, f'v.item_id IN {changed}', 0)} UNION ALL"
            " SELECT 'c', l.item_id, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL FROM l UNION ALL"
            f" {self._counters_sql(prefix, '(SELECT count(*) FROM l WHERE l.prefix = s.prefix)', 0)}"
            f" UNION ALL SELECT 's', CASE WHEN m.n <> t.n AND m.n <= ? THEN {ids_sql} END, m.n,"
            f" NULL, t.n, 0, {state}, NULL FROM m, t",
            [
                *(v for counted in known.counters.items() for v in counted),
                *log_params,
                *count_params,
                known.version,
                CHANGES_KEPT,
                *members_params,
                *items_params,
                *params,
                *under_params,
                *self._under("v.prefix", prefix)[1],
                *count_params,
                self.max_items,
                *ids_params,
                *state_params,
            ],
            binary=True,
        )
        read = _read_rows(rows, None)
        count, packed, total, version, moves, next_time = read.state
        if light is not None and int(moves) != light[0].moves:
            return (
                yield from self._changes_flow(prefix, known, where, params, state, state_params)
            )
        if count > self.max_items:
            return TOO_MANY
        if int(version) == known.version:
            if light is not None:
                return known, light[0].members, moves, light[0].horizon
            return known, known.listed(packed, count, total), moves, next_time
        behind = {p: n - known.counters.get(p, 0) for p, n in read.counters.items()}
        if not known.counters.keys() <= read.counters.keys() or any(
            read.logged.get(p, 0) != n for p, n in behind.items()
        ):
            return None  # changes the log no longer holds
        data = known.changed(
            int(version),
            read.counters,
            read.changed,
            read.items,
            read.vector_ids,
            self._matrix(read.vectors),
        )
        if light is not None:
            remembered = light[0]
            listed = (set(remembered.members.ids) - read.changed) | read.members
            found = self.dialect.ts_value(next_time) if next_time is not None else None
            horizon = min((t for t in (found, remembered.horizon) if t is not None), default=None)
            return data, data.members_of(listed), moves, horizon
        if len(data.ids) != int(total):
            return None  # not what the database holds: read it all
        return data, data.listed(packed, count, total), moves, next_time

    def _items_sql(self, where: str, columns: Sequence[str], condition: str) -> str:
        """The rows of the items matching ``condition``: ``'i'``, id, length, packed terms,
        whether a member (matches ``where``), whether it may have neighbours, four NULLs,
        and its ``columns``. Bound to ``where``'s parameters, then ``condition``'s."""
        extra = "".join(f", {c}" for c in columns)
        # The items first, so that PostgreSQL, which resolves a UNION's types from the
        # left, knows the type of every column before it meets a branch's NULLs.
        return (
            f"SELECT 'i', i.id, i.doc_len, i.terms, CASE WHEN {where} THEN 1 ELSE 0 END,"
            f" CASE WHEN i.kind = '{NEIGHBOUR_KIND}' THEN 1 ELSE 0 END, CAST(NULL AS BIGINT),"
            f" CAST(NULL AS BIGINT), CAST(NULL AS {self.dialect.ts_type}), NULL{extra}"
            f" FROM {ITEMS} i WHERE {condition}"
        )

    def _vectors_sql(self, prefix: str, condition: str, extra: int) -> str:
        """The rows of the vectors under ``prefix`` matching ``condition`` (alias ``v``):
        ``'v'``, the item, the bytes of the vector in the tenth column, ``extra`` NULLs."""
        under, _ = self._under("v.prefix", prefix)
        return (
            f"SELECT 'v', v.item_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
            f" {self.dialect.vector_bytes_sql('v.embedding')}{', NULL' * extra}"
            f" FROM {VECTORS} v WHERE {under} AND {condition}"
        )

    def _counters_sql(self, prefix: str, logged: str, extra: int) -> str:
        """The rows of the namespaces under ``prefix``: ``'n'``, the namespace, its count,
        NULL, ``logged`` (an expression on ``s``), NULLs to the tenth column, ``extra``
        NULLs."""
        under, _ = self._under("s.prefix", prefix)
        return (
            f"SELECT 'n', s.prefix, s.changes, NULL, {logged}, 0, NULL, NULL, NULL,"
            f" NULL{', NULL' * extra} FROM {SCOPE_CHANGES} s WHERE {under}"
        )

    def _matrix(self, vectors: list[bytes]) -> np.ndarray:
        """Unit float32 rows from the bytes of :meth:`Dialect.vector_bytes_sql`."""
        if not vectors:
            return _NO_VECTORS
        matrix = np.frombuffer(b"".join(vectors), dtype=self.dialect.vector_dtype)
        return matrix.astype(np.float32, copy=False).reshape(len(vectors), -1)


#: Vector blocks (one a write) a seed keeps before joining them into one.
MAX_SEED_BLOCKS = 64


class _Seed:
    """Every item of one namespace, as this process's writes left them since its count
    was 0, at ``count``.

    The items are kept as columns that writes append to, in order: ids, lengths, postings
    (terms coded at the write), vectors. The entry they make at the namespace's first
    search is then a few array operations, not a pass over every item: over 1,000 items
    written five at a time, that pass was half of such a search. Appending costs a write
    no array of its own (typed arrays, C-speed extends). An item written again, or
    deleted, leaves its earlier rows behind; the entry drops them.
    """

    __slots__ = (
        "blocks",
        "codes",
        "count",
        "episodic",
        "frequencies",
        "ids",
        "items",
        "lengths",
        "packed",
        "posting_codes",
        "rewritten",
        "term_counts",
        "vector_counts",
    )

    def __init__(self) -> None:
        self.count = 0
        # Each item's last row. The ids only: a write's items live on as columns, not as
        # objects the garbage collector would walk (one an item, 100,000 in a process that
        # wrote as many, doubling the time of a full collection). Kept as writes come, it
        # is the entry's rows where no item was written twice: building it at the first
        # search read every item's id again, long after it had left the CPU's caches.
        self.items: dict[str, int] = {}
        self.codes: dict[str, int] = {}  # a code per term met (some may no longer occur)
        self.packed: dict[str, str] = {}  # item -> its packed terms (items with terms)
        self.episodic: set[str] = set()
        self.rewritten = False  # some rows are of an item written again or deleted
        self.ids: list[str] = []  # a row a write of an item
        self.lengths = array("q")  # a row each
        self.term_counts = array("q")  # a row each: its postings
        self.vector_counts = array("q")  # a row each: its vectors
        self.posting_codes = array("q")  # a posting each, in row order
        self.frequencies = array("d")  # a posting each
        self.blocks: list[np.ndarray] = []  # float32 vector rows, in row order

    def take(self, items: Mapping[str, WrittenItem | None], count: int) -> None:
        written: list[tuple[str, WrittenItem]] = []
        for item, w in items.items():
            if item in self.items:
                self.rewritten = True
            if w is None:
                self.items.pop(item, None)
                self.packed.pop(item, None)
                self.episodic.discard(item)
                continue
            self.items[item] = len(self.ids) + len(written)
            if w.packed_terms:
                self.packed[item] = w.packed_terms
            else:
                self.packed.pop(item, None)
            if w.episodic:
                self.episodic.add(item)
            else:
                self.episodic.discard(item)
            written.append((item, w))
        self.count = count
        if not written:
            return
        terms = [w.terms if w.packed_terms else {} for _, w in written]
        # Lists into typed arrays: ``fromlist`` copies in C, ``extend`` of an iterator
        # converts element by element.
        self.ids.extend([item for item, _ in written])
        self.lengths.fromlist([w.length for _, w in written])
        self.term_counts.fromlist(list(map(len, terms)))
        self.vector_counts.fromlist([len(w.vectors) for _, w in written])
        self.posting_codes.fromlist(_code_terms(self.codes, list(chain.from_iterable(terms))))
        self.frequencies.fromlist([n for one in terms for n in one.values()])
        self.blocks.extend(w.vectors for _, w in written if len(w.vectors))
        if len(self.blocks) > MAX_SEED_BLOCKS:
            self.blocks = [np.concatenate(self.blocks)]
        if self.rewritten and len(self.ids) > 2 * len(self.items) + MAX_SEED_BLOCKS:
            # Most rows are of items written again: the seed would grow with every write
            # of the same keys while counting as few items.
            self._compact()

    def _columns(
        self,
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Ids, lengths, postings and vectors a row, postings' codes and frequencies, and
        vectors: each item's last rows only (none for a deleted item)."""
        ids = self.ids
        lengths = np.frombuffer(self.lengths, dtype=np.int64)
        term_counts = np.frombuffer(self.term_counts, dtype=np.int64)
        vector_counts = np.frombuffer(self.vector_counts, dtype=np.int64)
        codes = np.frombuffer(self.posting_codes, dtype=np.int64)
        frequencies = np.frombuffer(self.frequencies, dtype=np.float64)
        vectors = np.concatenate(self.blocks) if self.blocks else _NO_VECTORS
        if self.rewritten:
            keep = np.zeros(len(ids), dtype=bool)
            keep[list(self.items.values())] = True
            ids = [item for item, kept in zip(ids, keep.tolist(), strict=True) if kept]
            postings = np.repeat(keep, term_counts)
            codes, frequencies = codes[postings], frequencies[postings]
            if len(vectors):
                vectors = vectors[np.repeat(keep, vector_counts)]
            lengths, term_counts, vector_counts = (
                lengths[keep],
                term_counts[keep],
                vector_counts[keep],
            )
        return ids, lengths, term_counts, vector_counts, codes, frequencies, vectors

    def _compact(self) -> None:
        """Drop the rows of items written again or deleted."""
        ids, lengths, term_counts, vector_counts, codes, frequencies, vectors = self._columns()
        self.ids = ids
        self.lengths = array("q", lengths.tobytes())
        self.term_counts = array("q", term_counts.tobytes())
        self.vector_counts = array("q", vector_counts.tobytes())
        self.posting_codes = array("q", codes.tobytes())
        self.frequencies = array("d", frequencies.tobytes())
        self.blocks = [vectors] if len(vectors) else []
        self.items = dict(zip(ids, range(len(ids)), strict=True))
        self.rewritten = False

    def entry(self, namespace: str) -> ScopeData:
        """The entry of ``namespace`` (as its prefix) these items make, at ``count``. It
        takes the seed's columns as they are: the seed is used up."""
        ids, lengths, term_counts, vector_counts, codes, frequencies, vectors = self._columns()
        rows = np.arange(len(ids), dtype=np.int64)
        posting_rows = np.repeat(rows, term_counts)
        # By code, rows ascending within one (the postings are in row order).
        order = _by_code(codes, len(self.codes))
        starts = np.zeros(len(self.codes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=len(self.codes)), out=starts[1:])
        row_of = dict(zip(ids, range(len(ids)), strict=True)) if self.rewritten else self.items
        # Each vector's item row, and each item's vector row (its last, if several): an
        # item's own row where every item has one vector, in row order.
        if bool((vector_counts == 1).all()):
            vector_ids, vector_rows = list(ids), (rows, row_of)
        else:
            vector_item_rows = np.repeat(rows, vector_counts)
            vector_ids = [ids[row] for row in vector_item_rows.tolist()]
            vector_rows = (
                vector_item_rows,
                dict(zip(vector_ids, range(len(vector_ids)), strict=True)),
            )
        data = object.__new__(ScopeData)
        data._set(
            self.count,
            {namespace: self.count},
            ids,
            row_of,
            lengths,
            self.packed,
            vector_ids,
            vectors,
            self.episodic,
            (self.codes, starts.tolist(), posting_rows[order], frequencies[order]),
            vector_rows,
        )
        return data


def _taken(data: ScopeData, own: OwnWrite, names: Sequence[str]) -> ScopeData:
    """``data`` with ``own``'s items in ``names`` taken in, at their counts after it."""
    assert data.counters is not None
    changed: set[str] = set()
    items: dict[str, tuple[int, str | None, bool]] = {}
    vector_ids: list[str] = []
    blocks: list[np.ndarray] = []
    for name in names:
        for item, written in own.items.get(name, {}).items():
            changed.add(item)
            if written is not None:
                items[item] = (written.length, written.packed_terms, written.episodic)
                vector_ids.extend([item] * len(written.vectors))
                if len(written.vectors):
                    blocks.append(written.vectors)
    counters = dict(data.counters)
    counters.update((name, own.after[name]) for name in names)
    return data.changed(
        data.version + sum(own.after[n] - own.before[n] for n in names),
        counters,
        changed,
        items,
        vector_ids,
        np.concatenate(blocks) if blocks else _NO_VECTORS,
    )


class _ReadRows(NamedTuple):
    """What a load or a read of changes found, by kind of row (see ``_items_sql``)."""

    items: dict[str, tuple[int, str | None, bool]]  # id -> length, packed terms, neighbours
    members: set[str]
    vector_ids: list[str]
    vectors: list[bytes]
    changed: set[str]
    counters: dict[str, int]
    logged: dict[str, int]
    state: tuple[Any, ...]  # members' number, their ids, items' number, the three states


def _read_rows(
    rows: Iterable[Sequence[Any]], member_rows: dict[str, Sequence[Any]] | None
) -> _ReadRows:
    read = _ReadRows({}, set(), [], [], set(), {}, {}, (0, None, 0, 0, 0, None))
    state = read.state
    # Indexed, not unpacked: a load of 10,000 items has 20,000 rows, and unpacking each
    # into names and a list of the rest cost twice as much.
    items, members, vector_ids, vectors = read.items, read.members, read.vector_ids, read.vectors
    for row in rows:
        kind = row[0]
        if kind == "v":
            vector_ids.append(row[1])
            vectors.append(row[9])
        elif kind == "i":
            item = row[1]
            items[item] = (row[2], row[3], bool(row[5]))
            if row[4]:
                members.add(item)
                if member_rows is not None:
                    member_rows[item] = row[10:]
        elif kind == "c":
            read.changed.add(row[1])
        elif kind == "n":
            read.counters[row[1]] = int(row[2])
            read.logged[row[1]] = int(row[4])
        else:
            state = (int(row[2]), row[1], int(row[4]), *row[6:9])
    if any(i not in read.items for i in read.vector_ids):
        # A vector left without its item (deleted by SQL where foreign keys are off).
        kept = [r for r, i in enumerate(read.vector_ids) if i in read.items]
        read.vector_ids[:] = [read.vector_ids[r] for r in kept]
        read.vectors[:] = [read.vectors[r] for r in kept]
    return read._replace(state=state)
