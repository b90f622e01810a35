"""The statements the scope cache reads a namespace with: its items with their packed
terms, its vectors, its counters, and the times after which a search's members may change
(see :mod:`~langmem_tiers.long_term.store.search.scope_cache`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from langmem_tiers.long_term.store.search.neighbours import NEIGHBOUR_KIND
from langmem_tiers.long_term.store.search.scope_data import NO_VECTORS, RememberedMembers, ScopeData
from langmem_tiers.sql.dialect import (
    CHANGES_KEPT,
    ITEM_CHANGES,
    ITEMS,
    SCOPE_CHANGES,
    VECTORS,
    Dialect,
)
from langmem_tiers.sql.flow import Sql

__all__ = [
    "changes_request",
    "changes_sql",
    "counters_sql",
    "horizon_sql",
    "items_sql",
    "under_sql",
    "vector_matrix",
    "vectors_sql",
]


def changes_sql(under: str) -> str:
    """The sum of the change counters of the namespaces matching ``under``."""
    return f"CAST(coalesce(sum(changes), 0) AS BIGINT) FROM {SCOPE_CHANGES} WHERE {under}"


def horizon_sql(
    dialect: Dialect, prefix: str, since: datetime, among: str = ""
) -> tuple[str, list[Any]]:
    """A subquery: the earliest time of an item under ``prefix`` after ``since`` (NULL
    when none), the instant until which the members of a search may change only
    through a write the counters see; ``among`` (a condition on ``i``) narrows the
    items."""
    under, under_params = under_sql(dialect, "i.prefix", prefix)
    return dialect.next_time_sql(f"{under}{among}", under_params, dialect.ts_param(since))


def under_sql(dialect: Dialect, column: str, prefix: str) -> tuple[str, list[str]]:
    """Rows whose namespace ``column`` is ``prefix`` or below it (all rows for ``""``)."""
    return dialect.under_namespace_sql(column, prefix) if prefix else ("1 = 1", [])


def items_sql(dialect: Dialect, where: str, columns: Sequence[str], condition: str) -> str:
    """The rows of the items matching ``condition``: ``'i'``, id, length, packed terms,
    whether a member (matches ``where``), whether it may have neighbours, four NULLs,
    and its ``columns``. Bound to ``where``'s parameters, then ``condition``'s."""
    extra = "".join(f", {c}" for c in columns)
    # The items first, so that PostgreSQL, which resolves a UNION's types from the
    # left, knows the type of every column before it meets a branch's NULLs.
    return (
        f"SELECT 'i', i.id, i.doc_len, i.terms, CASE WHEN {where} THEN 1 ELSE 0 END,"
        f" CASE WHEN i.kind = '{NEIGHBOUR_KIND}' THEN 1 ELSE 0 END, CAST(NULL AS BIGINT),"
        f" CAST(NULL AS BIGINT), CAST(NULL AS {dialect.ts_type}), NULL{extra}"
        f" FROM {ITEMS} i WHERE {condition}"
    )


def vectors_sql(dialect: Dialect, prefix: str, condition: str, extra: int) -> str:
    """The rows of the vectors under ``prefix`` matching ``condition`` (alias ``v``):
    ``'v'``, the item, the bytes of the vector in the tenth column, ``extra`` NULLs."""
    under, _ = under_sql(dialect, "v.prefix", prefix)
    return (
        f"SELECT 'v', v.item_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        f" {dialect.vector_bytes_sql('v.embedding')}{', NULL' * extra}"
        f" FROM {VECTORS} v WHERE {under} AND {condition}"
    )


def counters_sql(dialect: Dialect, prefix: str, logged: str, extra: int) -> str:
    """The rows of the namespaces under ``prefix``: ``'n'``, the namespace, its count,
    NULL, ``logged`` (an expression on ``s``), NULLs to the tenth column, ``extra``
    NULLs."""
    under, _ = under_sql(dialect, "s.prefix", prefix)
    return (
        f"SELECT 'n', s.prefix, s.changes, NULL, {logged}, 0, NULL, NULL, NULL,"
        f" NULL{', NULL' * extra} FROM {SCOPE_CHANGES} s WHERE {under}"
    )


def vector_matrix(dialect: Dialect, vectors: list[bytes]) -> np.ndarray:
    """Unit float32 rows from the bytes of :meth:`Dialect.vector_bytes_sql`."""
    if not vectors:
        return NO_VECTORS
    matrix = np.frombuffer(b"".join(vectors), dtype=dialect.vector_dtype)
    return matrix.astype(np.float32, copy=False).reshape(len(vectors), -1)


def changes_request(
    dialect: Dialect,
    max_items: int,
    prefix: str,
    known: ScopeData,
    where: str,
    params: Sequence[Any],
    state: str,
    state_params: Sequence[Any],
    light: tuple[RememberedMembers, str, list[Any]] | None,
) -> Sql:
    """The one statement of ``ScopeCache._changes_flow``: the items the change log names since
    ``known``'s counts, their vectors, the counters, the members (unless ``light``) and
    the ``state``."""
    assert known.counters is not None
    d = dialect
    sum_under, count_params = under_sql(dialect, "prefix", prefix)
    log_under, log_params = under_sql(dialect, "x.prefix", prefix)
    under, under_params = under_sql(dialect, "i.prefix", prefix)
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
        count_sql = (
            "SELECT CASE WHEN EXISTS (SELECT 1 FROM l)"
            f" THEN (SELECT count(*) FROM {ITEMS} i WHERE {under}) ELSE ? END AS n"
        )
        items_params = [*under_params, len(known.ids)]
    else:
        members_sql, members_params = "SELECT 0 AS n", []
        ids_sql, ids_params = "CAST(NULL AS TEXT)", []
        count_sql, items_params = "SELECT 0 AS n", []
        state, state_params = light[1], light[2]
    return Sql(
        f"WITH k AS MATERIALIZED ({known_rows}),"
        f" l AS MATERIALIZED (SELECT x.prefix, x.item_id FROM {ITEM_CHANGES} x"
        " LEFT JOIN k ON k.prefix = x.prefix"
        f" WHERE {log_under} AND x.changes > coalesce(k.n, 0) AND (SELECT"
        f" {changes_sql(sum_under)}) - ? <= ?),"
        f" m AS MATERIALIZED ({members_sql}),"
        # The items' number only after a change (else the entry's): as many members
        # as items are every item, and their ids are then not sent.
        f" t AS MATERIALIZED ({count_sql})"
        f" {items_sql(dialect, where, (), f'i.id IN {changed} AND {under}')} UNION ALL"
        f" {vectors_sql(dialect, prefix, f'v.item_id IN {changed}', 0)} UNION ALL"
        " SELECT 'c', l.item_id, NULL, NULL, 0, 0, NULL, NULL, NULL, NULL FROM l UNION ALL"
        f" {counters_sql(dialect, prefix, '(SELECT count(*) FROM l WHERE l.prefix = s.prefix)', 0)}"
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
            *under_sql(dialect, "v.prefix", prefix)[1],
            *count_params,
            max_items,
            *ids_params,
            *state_params,
        ],
        binary=True,
    )
