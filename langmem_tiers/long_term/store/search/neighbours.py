"""Conversational neighbours: the memories written just before and after a search's best hits.

In a conversation the turn that answers a question is often not the one that matches it:
"What did you do then?" / "Went to the support group." Only the question shares words with
the query; the answer shares none. Each memory is therefore lifted towards its neighbours'
relevance (:func:`~langmem_tiers.long_term.store.search.fusion.smooth_neighbours`), and a
neighbour of a best hit that was not a candidate at all joins the candidates.

Only episodic memories have neighbours: they are events of a conversation, where what came
just before and after is context. A semantic fact or a procedural preference stands alone.

Who is a neighbour is the store's own record, not a field of the value (values are any
JSON): the order of writing. Every memory's creation is an event with a sequence number
(``events.py``), so the memories written just before another one in the same namespace
precede it in the conversation (:data:`NEIGHBOUR_TURNS` on each side count). Write order alone would join unrelated conversations (the last turn of one
session and the first of the next), so two memories are neighbours only when they also
belong to the same conversation as far as the store can tell: the same ``session_id``
(both absent counts as the same) and event times (their event timestamps, else when they
were written) at most :data:`NEIGHBOUR_MAX_GAP` apart.

Only the best hits need their neighbours: a lifted memory never passes the memory that lifts
it, so a memory ranked below the page cannot lift anything onto it. The statement that reads
the candidates' rows reads the neighbours of all of them too (and their rows), through the
event log's indexes (by memory, by scope and sequence), and only among the items the search
may return that are indexed at all (an item put with ``index=False`` is never found by a
query, so not through a neighbour either).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from langmem_tiers.sql.dialect import EVENTS, ITEMS, Dialect

__all__ = [
    "NEIGHBOUR_KIND",
    "NEIGHBOUR_MAX_GAP",
    "NEIGHBOUR_SPAN",
    "NEIGHBOUR_TURNS",
    "conversation_neighbours",
    "rows_with_neighbours_sql",
]

#: Two memories further apart in event time than this are not one conversation: a pause that
#: long starts a new one, whatever their order of writing.
NEIGHBOUR_MAX_GAP = timedelta(hours=1)
#: How many memories on each side of a hit are its neighbours. An answer is often one turn
#: away from what matches the question, and often two (a question, an aside, the answer; or
#: a reply that another turn completes). Measured on LoCoMo's tuning conversations (0-4) with
#: both embedders, two turns each side raised recall@10 over one, a third did not;
#: the held-out conversations agreed.
NEIGHBOUR_TURNS = 2
#: How many events of the scope before or after a memory's creation are looked at for its
#: neighbour. Events of other namespaces of the scope, and updates, lie in between; a memory
#: created further away than this was not written next to it.
NEIGHBOUR_SPAN = 64

_CREATED = "memory.created"
#: The kind of memory that has neighbours (a memory's kind is its namespace's, recorded with
#: the item and with its creation event alike): a search needs no neighbours of the others.
NEIGHBOUR_KIND = "episodic"


def rows_with_neighbours_sql(
    dialect: Dialect,
    columns: str,
    column_params: Sequence[Any],
    ids: Sequence[str],
    anchors: Sequence[str],
    where: str,
    params: Sequence[Any],
    *,
    neighbour_where: str | None = None,
    neighbour_params: Sequence[Any] = (),
    row_where: str | None = None,
    row_params: Sequence[Any] = (),
) -> tuple[str, list[Any]]:
    """One statement: the rows of ``ids`` and of the anchors' neighbours that match
    ``where`` (alias ``i``, ``?`` bound to ``params``), each with ``columns`` (``?`` bound to
    ``column_params``) and ``2 x`` :data:`NEIGHBOUR_TURNS` more, which on an anchor's row
    are the items created just before it in its namespace, nearest first, then as many just
    after it, among the indexed items matching ``where`` (None where there is none within
    :data:`NEIGHBOUR_SPAN` events; None on other rows). The neighbours come with the rows
    they need, so a search reads both in one round trip.

    ``neighbour_where`` (with ``neighbour_params``), when given, replaces ``where`` in the
    search for neighbours: ``where`` without what every item of an anchor's namespace meets
    (a neighbour shares its anchor's namespace, and every anchor matches ``where``).
    ``row_where`` (with ``row_params``), when given, replaces it on the rows read by id
    (all rows of the statement):
    ``where`` with its namespace condition on an expression no index serves. PostgreSQL's
    plan for any values, which it may keep for a prepared statement, otherwise read every
    row of a large namespace through the namespace's index to find the hundred ids.
    """
    if neighbour_where is None:
        neighbour_where, neighbour_params = where, params
    if row_where is None:
        row_where, row_params = where, params
    if not anchors:
        return _rows_without_neighbours_sql(
            dialect, columns, column_params, ids, row_where, row_params
        )
    in_anchors, anchor_params = dialect.in_list("e.memory_id", anchors)
    id_rows, id_rows_params = dialect.list_rows_sql(ids)

    # One scalar subquery per neighbour: SQLite has no LATERAL join, and each is one probe
    # of the (scope, seq) index.
    before = f"< a.seq AND e.seq >= a.seq - {NEIGHBOUR_SPAN}"
    after = f"> a.seq AND e.seq <= a.seq + {NEIGHBOUR_SPAN}"
    sides = [
        *((before, "DESC", n) for n in range(NEIGHBOUR_TURNS)),
        *((after, "ASC", n) for n in range(NEIGHBOUR_TURNS)),
    ]
    names = [f"n{n}" for n in range(len(sides))]
    found = ", ".join(
        f"{_neighbour_subquery(*spec, neighbour_where)} AS {name}"
        for spec, name in zip(sides, names, strict=True)
    )
    listed = " UNION ALL ".join(f"SELECT p.{name} FROM p" for name in names)
    return (
        # The anchor's latest creation: an item deleted and written again sits where it
        # was written last.
        f"WITH a AS (SELECT e.memory_id AS id, e.scope, e.prefix, max(e.seq) AS seq"
        f" FROM {EVENTS} e WHERE {in_anchors} AND e.type = '{_CREATED}'"
        f" AND e.kind = '{NEIGHBOUR_KIND}' GROUP BY e.memory_id, e.scope, e.prefix),"
        f" p AS (SELECT a.id, {found} FROM a)"
        f" SELECT {columns}, {', '.join(f'p.{name}' for name in names)}"
        f" FROM {ITEMS} i LEFT JOIN p ON p.id = i.id"
        # One IN over both lists: an OR of two made PostgreSQL scan the whole table.
        f" WHERE i.id IN ({id_rows} UNION ALL {listed}) AND {row_where}",
        [
            *anchor_params,
            *[p for _ in sides for p in neighbour_params],
            *column_params,
            *id_rows_params,
            *row_params,
        ],
    )


def _neighbour_subquery(compare: str, order: str, offset: int, neighbour_where: str) -> str:
    """The scalar subquery for one neighbour of anchor ``a``: the ``offset``-th indexed item
    created on the ``compare`` side of it in its namespace, in ``order`` of sequence."""
    return (
        f"(SELECT e.memory_id FROM {EVENTS} e"
        f" WHERE e.scope = a.scope AND e.seq {compare}"
        f" AND e.prefix = a.prefix AND e.type = '{_CREATED}' AND e.kind = '{NEIGHBOUR_KIND}'"
        " AND e.memory_id <> a.id"
        # Each event's item is looked up by its key: OFFSET keeps PostgreSQL from turning
        # the EXISTS into a join, which a plan made without the parameters' values (the
        # namespace's size unknown) ran as a hash of every item in the namespace.
        f" AND EXISTS (SELECT 1 FROM {ITEMS} i WHERE i.id = e.memory_id"
        # Put with index=False (no terms): never found by a query, nor through another.
        f" AND i.doc_len > 0 AND {neighbour_where} LIMIT 1 OFFSET 0)"
        f" ORDER BY e.seq {order} LIMIT 1 OFFSET {offset})"
    )


def _rows_without_neighbours_sql(
    dialect: Dialect,
    columns: str,
    column_params: Sequence[Any],
    ids: Sequence[str],
    row_where: str,
    row_params: Sequence[Any],
) -> tuple[str, list[Any]]:
    """:func:`rows_with_neighbours_sql` with no anchors: the rows alone, neighbours all None."""
    in_ids, id_params = dialect.in_list("i.id", ids)
    return (
        f"SELECT {columns}{', NULL' * 2 * NEIGHBOUR_TURNS} FROM {ITEMS} i"
        f" WHERE {in_ids} AND {row_where}",
        [*column_params, *id_params, *row_params],
    )


def conversation_neighbours(
    pairs: Mapping[str, Sequence[str | None]],
    when: Mapping[str, datetime],
    session: Mapping[str, str | None],
    *,
    max_gap: timedelta = NEIGHBOUR_MAX_GAP,
) -> dict[str, list[str]]:
    """Neighbours both ways (``a`` lists ``b`` and ``b`` lists ``a``) of the write-order
    ``pairs`` that belong to one conversation: the same session and event times at most
    ``max_gap`` apart. ``when`` and ``session`` must hold every item of ``pairs``; a pair
    with an item missing there (no longer readable) is dropped.

    Example::

        >>> from datetime import datetime, timezone
        >>> t = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
        >>> later = t + timedelta(days=2)
        >>> conversation_neighbours(
        ...     {"q": ("x", "a")},
        ...     {"q": t, "a": t, "x": later},
        ...     {"q": None, "a": None, "x": None},
        ... )
        {'q': ['a'], 'a': ['q']}
    """
    out: dict[str, list[str]] = {}
    for anchor, sides in pairs.items():
        if anchor not in when:
            continue
        for other in sides:
            if other is None or other not in when or other == anchor:
                continue
            if session.get(anchor) != session.get(other):
                continue
            if abs(when[anchor] - when[other]) > max_gap:
                continue
            for a, b in ((anchor, other), (other, anchor)):
                listed = out.setdefault(a, [])
                if b not in listed:
                    listed.append(b)
    return out
