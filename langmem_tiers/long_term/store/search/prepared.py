"""A search as asked, validated and turned into SQL conditions (pure: no I/O).

:func:`prepare_search` checks a ``SearchOp`` (namespace prefix, filter, options, query,
page) and gives the :class:`PreparedSearch` that :class:`~langmem_tiers.long_term.store.search.query.StoreSearch`
runs: its condition on items (alias ``i``), the instants it compares times with, and the
keys under which searches select the same members.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langgraph.store.base import SearchOp

from langmem_tiers.errors import InvalidContentError, ValidationError
from langmem_tiers.long_term.store.filters import compile_filter, validate_filter
from langmem_tiers.long_term.store.records import (
    join_namespace,
    utf8_error,
    validate_namespace,
)
from langmem_tiers.long_term.store.search import bm25
from langmem_tiers.long_term.store.search.options import SearchOptions, split_options
from langmem_tiers.long_term.store.search.time import (
    TimeQuery,
    parse_time_query,
)
from langmem_tiers.sql.dialect import Dialect

__all__ = [
    "LIVE_SQL",
    "MAX_QUERY_CHARS",
    "PreparedSearch",
    "check_page",
    "prepare_search",
    "query_weights",
]


MAX_QUERY_CHARS = 10_000
_MAX_PAGE = 2**31  # what every database here can bind as a LIMIT/OFFSET

#: The condition (one ``?``: now) an item must meet to be read: it has not expired.
LIVE_SQL = "(i.expires_at IS NULL OR i.expires_at > ?)"


class PreparedSearch(NamedTuple):
    """A validated search: its scope, its SQL condition on items (alias ``i``), its page."""

    prefix: tuple[str, ...]
    where: str
    params: list[Any]
    value_filtered: bool
    limit: int
    offset: int
    query: str | None
    options: SearchOptions = SearchOptions()
    reference: datetime | None = None  # the search's time: options' as_of or now, else None
    time_query: TimeQuery | None = None
    refresh_ttl: bool = False  # extend the TTL of the items returned
    #: The instants ``where`` compares times with: validity and existence at the search's
    #: time, expiry at the clock's.
    instants: tuple[datetime, datetime] | None = None
    #: ``where`` and ``params`` with those instants left out: searches with the same key
    #: select the same items while no item's times lie between their instants.
    members_key: tuple[Any, ...] = ()
    #: ``where`` without the condition on the namespace: what an item of a namespace the
    #: search covers must meet to be found (a conversational neighbour shares its anchor's
    #: namespace, so a search needs only this of it).
    item_where: str = "1=1"
    item_params: tuple[Any, ...] = ()
    #: ``where`` for rows read by id: the namespace's condition on an expression no index
    #: serves, so that no plan (a prepared one made for any values included) reads the
    #: namespace's rows to find a few ids among them.
    row_where: str = "1=1"
    row_params: tuple[Any, ...] = ()


#: Stands for an instant in :attr:`PreparedSearch.members_key`.
_INSTANT = object()


def query_weights(query: str, search: PreparedSearch) -> dict[str, float]:
    """The lexical query: the query's terms and the time terms of its time expressions."""
    weights = bm25.query_weights(bm25.analyze_query(query))
    if search.time_query is not None:
        for term, weight in search.time_query.terms.items():
            weights[term] = max(weights.get(term, 0.0), weight)
    return weights


def check_page(limit: Any, offset: Any) -> tuple[int, int]:
    """``(limit, offset)`` as ints; a ValidationError naming the one that is not."""
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_PAGE:
            raise ValidationError(
                f"{name} must be a whole number from 0 to {_MAX_PAGE - 1}, got {value!r}."
            )
    return int(limit), int(offset)


#: A time filter's window: the item's time (its event's, else its validity's start, else when
#: it was stored) in ``[start, end)``.
_WINDOW_SQL = (
    "COALESCE(i.event_at, i.valid_from, i.created_at) >= ?"
    " AND COALESCE(i.event_at, i.valid_from, i.created_at) < ?"
)


def prepare_search(
    op: SearchOp,
    dialect: Dialect,
    *,
    statuses: Sequence[str] | None = ("active",),
    where: str | None = None,
    params: Sequence[Any] = (),
    now: datetime | None = None,
) -> PreparedSearch:
    """Validate ``op`` into a condition on live items: ``statuses``, not expired at ``now``.

    ``where`` is an extra trusted SQL condition with ``?`` bound to ``params``.
    """
    prefix = tuple(op.namespace_prefix)
    validate_namespace(prefix, field="namespace_prefix", prefix=True)
    limit, offset = check_page(op.limit, op.offset)
    if op.query is not None:
        _check_query(op.query)
    options, plain_filter = split_options(op.filter)
    conditions = validate_filter(plain_filter)
    at = options.reference(dialect.now())
    clock = now or dialect.now()
    statuses, where_parts, bound, instant_slots = _validity_conditions(
        dialect, options, statuses, at
    )
    text = op.query if op.query and op.query.strip() else None
    time_query = parse_time_query(text, at) if text and options.time != "off" else None
    if time_query is not None and time_query.window is not None and options.time == "filter":
        where_parts.append(_WINDOW_SQL)
        bound.extend(
            [dialect.ts_param(time_query.window.start), dialect.ts_param(time_query.window.end)]
        )
    if statuses is not None:
        status_sql, status_params = _status_condition(statuses)
        where_parts.append(status_sql)
        bound.extend(status_params)
    if where:
        where_parts.append(f"({where})")
        bound.extend(params)
    # Expired items are never read, whether or not a sweep has deleted them yet.
    where_parts.append(LIVE_SQL)
    instant_slots.append(len(bound))
    bound.append(dialect.ts_param(clock))
    filter_sql, filter_params = compile_filter(conditions, dialect)
    # An item of a namespace the search covers must meet these (the namespace's own
    # condition left out).
    item_where = " AND ".join([*where_parts, filter_sql])
    item_params = (*bound, *filter_params)
    row_where, row_params = item_where, item_params
    if prefix:
        under, probe, under_params = _under_prefix(dialect, prefix)
        row_where = " AND ".join([*where_parts, probe, filter_sql])
        row_params = (*bound, *under_params, *filter_params)
        where_parts.append(under)
        bound.extend(under_params)
    where_parts.append(filter_sql)
    bound.extend(filter_params)
    where_sql = " AND ".join(where_parts)
    slots = set(instant_slots)
    return PreparedSearch(
        prefix,
        where_sql,
        bound,
        bool(conditions),
        limit,
        offset,
        text,
        options,
        options.as_of or options.now,
        time_query,
        bool(op.refresh_ttl),
        (at, clock),
        (where_sql, *(_INSTANT if n in slots else p for n, p in enumerate(bound))),
        item_where,
        item_params,
        row_where,
        row_params,
    )


def _under_prefix(dialect: Dialect, prefix: tuple[str, ...]) -> tuple[str, str, list[str]]:
    """The condition that an item lies under ``prefix``, on its indexed column and (the
    probe) on an expression no index serves, with the parameters both take."""
    under, under_params = dialect.under_namespace_sql("i.prefix", join_namespace(prefix))
    probe, _ = dialect.under_namespace_sql(dialect.filter_only("i.prefix"), join_namespace(prefix))
    return under, probe, under_params


def _check_query(query: object) -> None:
    """Refuse a query text the search cannot take, with the reason."""
    if not isinstance(query, str):
        raise InvalidContentError(f"query must be a string, got {query!r}.")
    if "\x00" in query:
        raise InvalidContentError("query contains a NUL byte (\\x00); remove it.")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidContentError(
            f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}."
        )
    refusal = utf8_error(query, "query")
    if refusal is not None:
        raise InvalidContentError(refusal)


def _validity_conditions(
    dialect: Dialect, options: SearchOptions, statuses: Sequence[str] | None, at: datetime
) -> tuple[Sequence[str] | None, list[str], list[Any], list[int]]:
    """The statuses to read, and the conditions (with their parameters and the positions in
    them of instants) that keep to memory valid at ``at``: under ``as_of``, superseded
    memory counts and what did not exist yet is left out."""
    where_parts: list[str] = []
    bound: list[Any] = []
    instant_slots: list[int] = []  # positions in ``bound`` of the instants below
    if options.as_of is not None and statuses is not None and tuple(statuses) == ("active",):
        # Memory as it stood then: what has since been superseded was current.
        statuses = ("active", "superseded")
        # Known to exist then: from its validity, its event time, or when it was stored.
        where_parts.append("COALESCE(i.valid_from, i.event_at, i.created_at) <= ?")
        instant_slots.append(len(bound))
        bound.append(dialect.ts_param(at))
    if statuses is not None:
        # Current facts only: a validity interval that has not begun or has ended hides it.
        where_parts.append(
            "(i.valid_from IS NULL OR i.valid_from <= ?) AND (i.valid_until IS NULL OR i.valid_until > ?)"
        )
        instant_slots.extend([len(bound), len(bound) + 1])
        bound.extend([dialect.ts_param(at)] * 2)
    return statuses, where_parts, bound, instant_slots


def _status_condition(statuses: Sequence[str]) -> tuple[str, list[Any]]:
    """The condition that an item's status is one of ``statuses``, with its parameters."""
    if tuple(statuses) == ("active",):
        return "i.status = 'active'", []
    if not statuses:
        raise ValidationError("statuses must name at least one status, got none.")
    return f"i.status IN ({', '.join('?' for _ in statuses)})", list(statuses)
