"""Search options beyond LangGraph's ``SearchOp``: reference time, as-of, time mode, min_score,
author mode.

LangGraph's ``BaseStore.search`` has no room for options of its own, and a ``SearchOp``
travels through ``batch`` unchanged, so the options ride in the op's ``filter`` under the
reserved key ``"$search"`` (a filter key may not start with ``$`` otherwise):

.. code-block:: python

    store.search(("alice",), query="what did I cook yesterday?",
                 filter={"$search": {"now": "2024-03-14T12:00:00+00:00", "min_score": 0.3}})

``TieredMemoryStore.search`` takes the same options as keyword arguments and puts them
there; any ``BaseStore`` caller (a LangGraph node, LangMem's tools) can pass the filter.

Options (all optional):

``now``
    The reference time of the search (ISO-8601 string or datetime): relative expressions
    ("yesterday", "last week") are resolved against it, recency is measured from it, and
    memories whose validity starts after it or ended before it are left out. Default: the
    current time.
``as_of``
    Search memory as it stood at that time: superseded memories that were current then are
    seen, memories created after it or valid only outside it are not. Implies ``now``.
``time``
    What a time window named by the query does: ``"boost"`` (default: memories inside it
    rank higher), ``"filter"`` (only memories whose event time is inside it) or ``"off"``.
``min_score``
    Leave out results whose relevance (the ``semantic`` component, an absolute value in
    [0, 1], see ``relevance.py``) is below this.
``authors``
    What naming a speaker in the query does: ``"boost"`` (default: when the query names the
    author of some episodic candidates, theirs rank higher, see ``authors.py``) or
    ``"off"``.

Example::

    >>> opts, rest = split_options({"lang": "en", "$search": {"min_score": 0.4}})
    >>> opts.min_score, rest
    (0.4, {'lang': 'en'})
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, NamedTuple

from langmem_tiers.errors import InvalidFilterError, ValidationError
from langmem_tiers.long_term.store.records import parse_timestamp

__all__ = [
    "AUTHOR_MODES",
    "OPTIONS_KEY",
    "TIME_MODES",
    "SearchOptions",
    "options_filter",
    "split_options",
]

OPTIONS_KEY = "$search"
TIME_MODES = ("boost", "filter", "off")
TimeMode = Literal["boost", "filter", "off"]
AUTHOR_MODES = ("boost", "off")
AuthorMode = Literal["boost", "off"]


class SearchOptions(NamedTuple):
    """Validated search options (see the module docstring)."""

    now: datetime | None = None
    as_of: datetime | None = None
    time: TimeMode = "boost"
    min_score: float | None = None
    authors: AuthorMode = "boost"

    def reference(self, default: datetime) -> datetime:
        """The time the search is made at: ``as_of``, else ``now``, else ``default``."""
        return self.as_of or self.now or default


def check_min_score(min_score: Any, *, field: str = "min_score") -> float | None:
    """``min_score`` as a float in [0, 1] (or None); a ValidationError naming it otherwise."""
    if min_score is None:
        return None
    if (
        isinstance(min_score, bool)
        or not isinstance(min_score, (int, float))
        or not 0.0 <= min_score <= 1.0
    ):
        raise ValidationError(
            f"{field} must be a number in [0, 1] (an absolute relevance), got {min_score!r}."
        )
    return float(min_score)


def split_options(
    filter: Mapping[str, Any] | None,
) -> tuple[SearchOptions, dict[str, Any] | None]:
    """The options of a search filter and the filter without them."""
    if not isinstance(filter, Mapping) or OPTIONS_KEY not in filter:
        return SearchOptions(), filter  # type: ignore[return-value]
    raw = filter[OPTIONS_KEY]
    rest = {k: v for k, v in filter.items() if k != OPTIONS_KEY}
    if raw is None:
        return SearchOptions(), rest or None
    if not isinstance(raw, Mapping):
        raise InvalidFilterError(
            f"filter[{OPTIONS_KEY!r}] must be a dict of search options, got {raw!r}."
        )
    unknown = sorted(set(raw) - set(SearchOptions._fields))
    if unknown:
        raise InvalidFilterError(
            f"unknown search option(s) {unknown} in filter[{OPTIONS_KEY!r}]; "
            f"use {', '.join(SearchOptions._fields)}."
        )
    now = raw.get("now")
    as_of = raw.get("as_of")
    mode = raw.get("time", "boost")
    if mode not in TIME_MODES:
        raise InvalidFilterError(
            f"search option time must be one of {', '.join(TIME_MODES)}, got {mode!r}."
        )
    authors = raw.get("authors", "boost")
    if authors not in AUTHOR_MODES:
        raise InvalidFilterError(
            f"search option authors must be one of {', '.join(AUTHOR_MODES)}, got {authors!r}."
        )
    options = SearchOptions(
        now=None if now is None else parse_timestamp(now, field="search option now"),
        as_of=None if as_of is None else parse_timestamp(as_of, field="search option as_of"),
        time=mode,
        min_score=check_min_score(raw.get("min_score"), field="search option min_score"),
        authors=authors,
    )
    return options, rest or None


def options_filter(
    filter: Mapping[str, Any] | None,
    *,
    now: datetime | str | None = None,
    as_of: datetime | str | None = None,
    time: TimeMode | None = None,
    min_score: float | None = None,
    authors: AuthorMode | None = None,
) -> dict[str, Any] | None:
    """``filter`` with the given options under :data:`OPTIONS_KEY` (``None`` ones left out).

    Example::

        >>> options_filter({"lang": "en"}, min_score=0.5)
        {'lang': 'en', '$search': {'min_score': 0.5}}
        >>> options_filter(None) is None
        True
    """
    given = {
        name: value.isoformat() if isinstance(value, datetime) else value
        for name, value in (
            ("now", now),
            ("as_of", as_of),
            ("time", time),
            ("min_score", min_score),
            ("authors", authors),
        )
        if value is not None
    }
    if not given:
        return dict(filter) if filter is not None else None
    out = dict(filter or {})
    merged = dict(out.get(OPTIONS_KEY) or {})
    merged.update(given)
    out[OPTIONS_KEY] = merged
    return out
