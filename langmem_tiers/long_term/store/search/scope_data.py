"""A namespace's terms, lengths and vectors as arrays, and what a search computes from
them: postings, BM25 statistics and scores, dense similarities (the scope cache's data,
see :mod:`~langmem_tiers.long_term.store.search.scope_cache`).

``read_rows`` turns the rows of a load or of a read of changes into those columns."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np

from langmem_tiers.long_term.store.search.bm25 import BM25_B, BM25_K1, unpack_terms
from langmem_tiers.long_term.store.vectors import UnitVectors
from langmem_tiers.sql.dialect import (
    PACKED_SEPARATOR,
)

if TYPE_CHECKING:
    pass


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
        renumbered = np.full(len(self.ids), -1, dtype=np.int64)
        renumbered[kept_rows] = np.arange(len(kept_rows), dtype=np.int64)
        index = self._merged_index(renumbered, row_of, len(ids), added, items)
        all_vector_ids, all_vectors, vector_rows = self._kept_and_added_vectors(
            kept, renumbered, row_of, vector_ids, matrix
        )
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
            vector_rows,
        )
        return data

    def _merged_index(
        self,
        renumbered: np.ndarray,
        row_of: Mapping[str, int],
        count: int,
        added: list[str],
        items: Mapping[str, tuple[int, str | None, bool]],
    ) -> tuple[dict[str, int], list[int], np.ndarray, np.ndarray]:
        """The term index of the entry of :meth:`changed` (``count`` rows): this entry's
        postings of kept rows (``renumbered``: each old row's new one, -1 if dropped)
        merged with those of the ``added`` items."""
        # Old postings of kept rows, renumbered (an order-keeping renumbering keeps them
        # sorted), merged with the added items' postings by (code, row).
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
        width = count + 1
        old_keys = old_codes * width + old_rows
        new_keys = new_codes * width + new_rows
        order = np.argsort(new_keys, kind="stable")
        at = np.searchsorted(old_keys, new_keys[order])
        all_codes = np.insert(old_codes, at, new_codes[order])
        index_starts = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_codes, minlength=len(codes)), out=index_starts[1:])
        return (
            codes,
            index_starts.tolist(),
            np.insert(old_rows, at, new_rows[order]),
            np.insert(old_counts, at, new_counts[order]),
        )

    def _kept_and_added_vectors(
        self,
        kept: np.ndarray,
        renumbered: np.ndarray,
        row_of: Mapping[str, int],
        vector_ids: list[str],
        matrix: np.ndarray,
    ) -> tuple[list[str], UnitVectors, tuple[np.ndarray, dict[str, int]]]:
        """The vectors of the entry of :meth:`changed`: the ids, the rows and the item row
        of each (with the row of each id) of the ``kept`` items, then the added ones."""
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
        return all_vector_ids, all_vectors, (vector_item_rows, vector_row_of)

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
NO_VECTORS = np.zeros((0, 0), dtype=np.float32)


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
    order = by_code(coded, len(codes))
    starts = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(coded, minlength=len(codes)), out=starts[1:])
    return codes, starts.tolist(), rows[order], counts[order]


def by_code(coded: np.ndarray, n_codes: int) -> np.ndarray:
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
    coded = np.array(code_terms(codes, fields[0::2]), dtype=np.int64)
    return coded, posting_rows, counts


def code_terms(codes: dict[str, int], terms: Sequence[str]) -> list[int]:
    """The code of each of ``terms``, new terms numbered next in ``codes`` in order of
    first use. Each new term is numbered once, then every code is one lookup in C: a
    Python loop over the postings cost most of a namespace's load.

    Example::

        >>> codes = {"paint": 0}
        >>> code_terms(codes, ["sunris", "paint", "sunris", "lake"]), codes
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


class ReadRows(NamedTuple):
    """What a load or a read of changes found, by kind of row (see ``_items_sql``)."""

    items: dict[str, tuple[int, str | None, bool]]  # id -> length, packed terms, neighbours
    members: set[str]
    vector_ids: list[str]
    vectors: list[bytes]
    changed: set[str]
    counters: dict[str, int]
    logged: dict[str, int]
    state: tuple[Any, ...]  # members' number, their ids, items' number, the three states


def read_rows(
    rows: Iterable[Sequence[Any]], member_rows: dict[str, Sequence[Any]] | None
) -> ReadRows:
    read = ReadRows({}, set(), [], [], set(), {}, {}, (0, None, 0, 0, 0, None))
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
