"""Seeds: a namespace that this process writes from its first item on, kept as its
writes left it, so the namespace's first search needs no read of it (see
:meth:`~langmem_tiers.long_term.store.search.scope_cache.ScopeCache.written`)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from langmem_tiers.long_term.store.writes import OwnWrite, WrittenItem

from langmem_tiers.long_term.store.search.scope_data import (
    NO_VECTORS,
    ScopeData,
    by_code,
    code_terms,
)

#: Vector blocks (one a write) a seed keeps before joining them into one.
MAX_SEED_BLOCKS = 64


class Seed:
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
        self.posting_codes.fromlist(code_terms(self.codes, list(chain.from_iterable(terms))))
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
        vectors = np.concatenate(self.blocks) if self.blocks else NO_VECTORS
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
        order = by_code(codes, len(self.codes))
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


def take_own_write(data: ScopeData, own: OwnWrite, names: Sequence[str]) -> ScopeData:
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
        np.concatenate(blocks) if blocks else NO_VECTORS,
    )
