"""Search filters: validated at the edge, compiled to SQL with bound parameters.

A filter maps top-level value keys to a value (equality) or to operators
(``$eq $ne $gt $gte $lt $lte``), as in LangGraph. A dict without operators matches
nested keys (``{"meta": {"lang": "en"}}`` means ``value.meta.lang == "en"``).
Ordering operators compare numbers as numbers (9 < 10) and strings as strings. NaN and
infinity compare as floats do: every number is below ``inf``, nothing equals NaN.

Example:
    >>> validate_filter({"score": {"$gte": 10}, "lang": "en"})
    [(('score',), '$gte', 10), (('lang',), '$eq', 'en')]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langmem_tiers.errors import InvalidFilterError
from langmem_tiers.long_term.store.records import utf8_error
from langmem_tiers.sql.dialect import Dialect

__all__ = ["OPERATORS", "Condition", "compile_filter", "validate_filter"]

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_ORDERING = ("$gt", "$gte", "$lt", "$lte")
Condition = tuple[tuple[str, ...], str, Any]


def validate_filter(filter: Mapping[str, Any] | None) -> list[Condition]:
    """Flatten a filter into ``(path, operator, operand)`` conditions, or raise InvalidFilterError."""
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise InvalidFilterError(f"filter must be a dict, got {type(filter).__name__} {filter!r}.")
    out: list[Condition] = []
    _flatten(filter, (), out)
    return out


_MAX_DEPTH = 32


def _flatten(filter: Mapping[str, Any], path: tuple[str, ...], out: list[Condition]) -> None:
    if len(path) >= _MAX_DEPTH:
        raise InvalidFilterError(
            f"filter is nested more than {_MAX_DEPTH} levels deep (at {'.'.join(path[:3])}...)."
        )
    for key, expected in filter.items():
        if not isinstance(key, str) or not key:
            raise InvalidFilterError(f"filter keys must be non-empty strings, got {key!r}.")
        if "\x00" in key:
            raise InvalidFilterError(f"filter key {key!r} contains a NUL byte; remove it.")
        refusal = utf8_error(key, f"filter key {key!r}")
        if refusal is not None:
            raise InvalidFilterError(refusal)
        if key.startswith("$"):
            raise InvalidFilterError(
                f"filter operator {key!r} must be inside a field, e.g. {{'score': {{{key!r}: 1}}}}."
            )
        here = (*path, key)
        if isinstance(expected, Mapping) and any(
            isinstance(k, str) and k.startswith("$") for k in expected
        ):
            for op, operand in expected.items():
                if op not in OPERATORS:
                    raise InvalidFilterError(
                        f"unknown filter operator {op!r} on field {'.'.join(here)!r}; "
                        f"use one of {', '.join(OPERATORS)}."
                    )
                _check_operand(here, op, operand)
                out.append((here, op, operand))
        elif isinstance(expected, Mapping):
            if not expected:
                raise InvalidFilterError(f"filter on {'.'.join(here)!r} is an empty dict.")
            _flatten(expected, here, out)
        else:
            _check_operand(here, "$eq", expected)
            out.append((here, "$eq", expected))


def _check_operand(path: tuple[str, ...], op: str, operand: Any) -> None:
    name = ".".join(path)
    refusal = _string_refusal(operand, 0)
    if refusal is not None:
        raise InvalidFilterError(f"filter on {name!r}: {refusal}")
    if isinstance(operand, (list, dict)) and _has_non_finite(operand, 0):
        raise InvalidFilterError(
            f"filter on {name!r}: {operand!r} holds NaN or infinity, which no stored JSON "
            "value can equal; compare with finite numbers."
        )
    if op in _ORDERING:
        if isinstance(operand, bool) or not isinstance(operand, (int, float, str)):
            raise InvalidFilterError(
                f"filter {op} on {name!r} needs a number or a string, got {operand!r}."
            )
    elif not isinstance(operand, (str, int, float, bool, type(None), list, dict)):
        raise InvalidFilterError(
            f"filter on {name!r}: {type(operand).__name__} {operand!r} is not a JSON value."
        )


def compile_filter(conditions: list[Condition], dialect: Dialect) -> tuple[str, list[Any]]:
    """A SQL boolean expression (``TRUE`` when empty) and its parameters."""
    if not conditions:
        return "1=1", []
    parts: list[str] = []
    params: list[Any] = []
    for path, op, operand in conditions:
        if isinstance(operand, float) and not math.isfinite(operand):
            sql, p = _non_finite(path, op, operand, dialect)
        else:
            sql, p = dialect.json_compare(path, op, operand)
        parts.append(sql)
        params.extend(p)
    return " AND ".join(parts), params


def _non_finite(
    path: tuple[str, ...], op: str, operand: float, dialect: Dialect
) -> tuple[str, list[Any]]:
    """A comparison with NaN or infinity, as IEEE floats (and LangGraph's stores) compare.

    Stored values are finite JSON numbers: none equals NaN or infinity, so ``$eq`` holds
    for no item and ``$ne`` for every one; every number is below +inf and above -inf,
    and no ordering holds with NaN.
    """
    if op == "$eq":
        return "1=0", []
    if op == "$ne":
        return "1=1", []
    below = op in ("$lt", "$lte")
    if math.isnan(operand) or (operand > 0) != below:
        return "1=0", []
    return dialect.json_is_number(path)


def _has_non_finite(value: Any, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        raise InvalidFilterError(f"a filter value is nested more than {_MAX_DEPTH} levels deep.")
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_has_non_finite(v, depth + 1) for v in value)
    return False


def _string_refusal(value: Any, depth: int) -> str | None:
    """Why a string in a filter value (keys too) cannot be matched, or ``None``: one walk."""
    if depth > _MAX_DEPTH:
        raise InvalidFilterError(f"a filter value is nested more than {_MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        if "\x00" in value:
            return "the value contains a NUL byte; remove it."
        return utf8_error(value, "the value")
    if isinstance(value, dict):
        for k, v in value.items():
            refusal = _string_refusal(k, depth + 1) or _string_refusal(v, depth + 1)
            if refusal is not None:
                return refusal
    elif isinstance(value, list):
        for v in value:
            refusal = _string_refusal(v, depth + 1)
            if refusal is not None:
                return refusal
    return None
