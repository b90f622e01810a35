"""JSON filters in SQL: the value at a path of an item's ``value``, compared as JSON compares.

Paths are bound as parameters, never spelled into SQL: on SQLite a key a path cannot spell
literally is matched by its decoded text through ``json_each``; PostgreSQL takes the path
as a ``text[]``.

Example:
    >>> sqlite_json_extract(["a", "b"])
    ('json_extract(value, ?)', ['$."a"."b"'])
    >>> postgres_json_compare(["n"], "$gt", 3)[1]
    [['n'], 'number', ['n'], '3']
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = [
    "postgres_json_compare",
    "postgres_json_extract",
    "postgres_json_is_number",
    "sqlite_json_compare",
    "sqlite_json_extract",
    "sqlite_json_is_number",
]


def _sqlite_path(path: Sequence[str]) -> str:
    return "$" + "".join('."' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in path)


def _path_can_spell(key: str) -> bool:
    """Whether a JSON path label matches ``key`` literally on every SQLite version.

    A quoted label ends at the first ``"`` whatever precedes it, and before 3.45 a label
    is compared with the key's escaped JSON text, so a control character (stored as
    ``\\t``, ``\\u001f``...) never matches; json_each compares decoded keys instead.
    """
    return '"' not in key and all(c >= " " for c in key)


def _sqlite_lookup(path: Sequence[str]) -> tuple[str, str, list[Any]]:
    """SQL for the value at ``path`` and for its JSON type; both take the same params.

    Keys a path can spell keep json_extract/json_type; a key it cannot is found by its
    decoded text in json_each, and the keys after it are looked up in what that yields.
    The document is passed to json_each through a subquery in FROM: an unqualified
    ``value`` in a table function's arguments would name json_each's own column.
    """
    doc, params = "value", []
    start = 0
    for i, key in enumerate(path):
        if _path_can_spell(key):
            continue
        params.extend([_sqlite_path(path[start:i]), key])
        member = f"FROM (SELECT {doc} AS doc) AS d, json_each(d.doc, ?) AS e WHERE e.key = ?"
        if i == len(path) - 1:
            return f"(SELECT e.value {member})", f"(SELECT e.type {member})", params
        # Only an object has keys to descend into; any other value has none (NULL).
        doc = f"(SELECT e.value {member} AND e.type = 'object')"
        start = i + 1
    params.append(_sqlite_path(path[start:]))
    return f"json_extract({doc}, ?)", f"json_type({doc}, ?)", params


def sqlite_json_is_number(path: Sequence[str]) -> tuple[str, list[Any]]:
    _, typed, params = _sqlite_lookup(path)
    return f"({typed} IN ('integer', 'real'))", params


def sqlite_json_extract(path: Sequence[str]) -> tuple[str, list[Any]]:
    expr, _, params = _sqlite_lookup(path)
    return expr, params


def sqlite_json_compare(path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
    expr, typed, params = _sqlite_lookup(path)
    if isinstance(operand, (dict, list)):
        literal = json.dumps(operand, ensure_ascii=False, separators=(",", ":"))
        if op == "$eq":
            return f"({expr} = json(?) AND {typed} IN ('object', 'array'))", [
                *params,
                literal,
                *params,
            ]
        return f"(({expr} IS NOT json(?)) OR {typed} NOT IN ('object', 'array'))", [
            *params,
            literal,
            *params,
        ]
    if isinstance(operand, bool):
        # JSON true/false come out of json_extract as 1/0; check the JSON type too.
        kind = "true" if operand else "false"
        if op == "$eq":
            return f"({typed} = ?)", [*params, kind]
        return f"({typed} IS NOT ?)", [*params, kind]
    if operand is None:
        if op == "$eq":
            return f"({typed} = 'null')", params
        return f"({typed} IS NOT 'null')", params
    sql_op = _COMPARATORS[op]
    operand = _sqlite_number(operand)
    if op in ("$eq", "$ne"):
        # Strings only equal strings, numbers only numbers, as in JSON.
        type_ok = "('text')" if isinstance(operand, str) else "('integer', 'real')"
        if op == "$eq":
            return f"({expr} = ? AND {typed} IN {type_ok})", [*params, operand, *params]
        return f"({expr} IS NOT ? OR {typed} NOT IN {type_ok} OR {typed} IS NULL)", [
            *params,
            operand,
            *params,
            *params,
        ]
    if isinstance(operand, str):
        return f"({typed} = 'text' AND {expr} {sql_op} ?)", [*params, *params, operand]
    return f"({typed} IN ('integer', 'real') AND {expr} {sql_op} ?)", [
        *params,
        *params,
        operand,
    ]


_INT64 = (-(2**63), 2**63 - 1)


def _sqlite_number(operand: Any) -> Any:
    """``operand`` as SQLite can bind it: an integer beyond 64 bits as the nearest float
    (as SQLite's JSON functions read such a number in a value), beyond floats as an
    infinity; anything else as it is."""
    if isinstance(operand, bool) or not isinstance(operand, int):
        return operand
    if _INT64[0] <= operand <= _INT64[1]:
        return operand
    try:
        return float(operand)
    except OverflowError:
        return math.inf if operand > 0 else -math.inf


_COMPARATORS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def postgres_json_extract(path: Sequence[str]) -> tuple[str, list[Any]]:
    return "(value #> ?::text[])", [list(path)]


def postgres_json_is_number(path: Sequence[str]) -> tuple[str, list[Any]]:
    expr, params = postgres_json_extract(path)
    return f"(jsonb_typeof({expr}) = 'number')", params


def postgres_json_compare(path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
    expr, params = postgres_json_extract(path)
    literal = json.dumps(operand, ensure_ascii=False)
    if op == "$eq":
        return f"({expr} = ?::jsonb)", [*params, literal]
    if op == "$ne":
        return f"({expr} IS DISTINCT FROM ?::jsonb)", [*params, literal]
    kind = "string" if isinstance(operand, str) else "number"
    return f"(jsonb_typeof({expr}) = ? AND {expr} {_COMPARATORS[op]} ?::jsonb)", [
        *params,
        kind,
        *params,
        literal,
    ]
