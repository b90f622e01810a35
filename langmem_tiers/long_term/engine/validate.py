"""Validation of the memory engine's input, at the public edge.

Each function returns the checked value or raises a leaf of the package's error tree
whose message names the argument, the value received and what is expected.

Example:
    >>> kinds(None)
    ['episodic', 'semantic', 'procedural']
    >>> kinds("semantic")
    ['semantic']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, get_args

from langmem_tiers.config import ConflictStrategy
from langmem_tiers.errors import (
    InvalidContentError,
    InvalidNamespaceError,
    ModelError,
    ValidationError,
)
from langmem_tiers.long_term.store.records import parse_timestamp
from langmem_tiers.long_term.store.scope import MEMORY_KINDS, encode_label
from langmem_tiers.tiers.base import Summary

__all__ = [
    "checked_summary",
    "kinds",
    "label",
    "large_limit",
    "limit",
    "mapping",
    "memory_id",
    "optional_text",
    "strategy",
    "strings",
    "text",
    "time",
    "unit",
]

MAX_LIMIT = 1000
MAX_LARGE_LIMIT = 100_000
MAX_ID_CHARS = 256


def label(scope: Any) -> str:
    """The namespace label of a scope id (InvalidNamespaceError when it is not one)."""
    if not isinstance(scope, str):
        raise InvalidNamespaceError(
            f"scope must be a string (an agent or user id), got {type(scope).__name__} {scope!r}."
        )
    return encode_label(scope)


def text(name: str, value: Any) -> str:
    """A non-empty string without NUL bytes."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidContentError(f"{name} must be a non-empty string, got {value!r}.")
    if "\x00" in value:
        raise InvalidContentError(f"{name} contains a NUL byte (\\x00); remove it.")
    return value


def optional_text(name: str, value: Any) -> str | None:
    """None, or :func:`text`."""
    return None if value is None else text(name, value)


def memory_id(value: Any) -> str:
    """A memory id: a short non-empty string."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS or "\x00" in value:
        raise ValidationError(
            f"memory_id must be a memory's id (a non-empty string of at most {MAX_ID_CHARS} "
            f"characters), got {value!r}."
        )
    return value


def unit(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValidationError(f"{name} must be a number in [0, 1], got {value!r}.")
    return float(value)


def strategy(value: Any, default: ConflictStrategy) -> ConflictStrategy:
    """A conflict strategy; ``None`` is the default."""
    if value is None:
        return default
    if value not in get_args(ConflictStrategy):
        raise ValidationError(
            f"strategy must be one of {', '.join(get_args(ConflictStrategy))}, got {value!r}."
        )
    return value  # type: ignore[no-any-return]


def kinds(value: Any) -> list[str]:
    """Memory kinds in their canonical order; ``None`` is all of them."""
    if value is None:
        return list(MEMORY_KINDS)
    kinds = [value] if isinstance(value, str) else list(value)
    bad = [k for k in kinds if k not in MEMORY_KINDS]
    if not kinds or bad:
        raise ValidationError(f"kinds must name some of {', '.join(MEMORY_KINDS)}, got {value!r}.")
    return sorted(set(kinds), key=MEMORY_KINDS.index)


def limit(value: Any, name: str = "limit") -> int:
    """A page size in 1..MAX_LIMIT."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ValidationError(f"{name} must be a whole number in 1..{MAX_LIMIT}, got {value!r}.")
    return value


def time(name: str, value: Any) -> datetime:
    """An aware datetime from a datetime or an ISO-8601 string."""
    return parse_timestamp(value, field=name)


def strings(name: str, value: Any) -> list[str]:
    """A list of non-empty strings (a lone string is refused, not split)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError(f"{name} must be a list of strings, got {value!r}.")
    for item in value:
        text(f"{name} item", item)
    return list(value)


def mapping(name: str, value: Any) -> dict[str, Any]:
    """A dict copy of a mapping."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{name} must be a dict, got {type(value).__name__} {value!r}.")
    return dict(value)


def checked_summary(summary: Any) -> Summary:
    """A summariser's answer, refused (ModelError) unless it is a non-empty Summary."""
    if not isinstance(summary, Summary) or not str(summary.text).strip():
        raise ModelError(f"the summariser returned {summary!r:.120}, not a non-empty Summary.")
    return Summary(summary.text.strip(), [str(c) for c in summary.key_concepts])


def large_limit(value: Any) -> int:
    """A count in 1..MAX_LARGE_LIMIT (event listings)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LARGE_LIMIT:
        raise ValidationError(
            f"limit must be a whole number in 1..{MAX_LARGE_LIMIT}, got {value!r}."
        )
    return value
