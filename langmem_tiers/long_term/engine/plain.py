"""JSON-safe forms of the engine's records, for the CLI's ``--json``, the HTTP API and MCP."""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from datetime import date, datetime, time, timedelta
from pathlib import PurePath
from typing import Any

__all__ = ["plain"]


def plain(obj: Any) -> Any:
    """``obj`` as JSON-safe data: dicts, lists, strings, numbers, booleans and None.

    Records become dicts (``to_dict``, named tuples, dataclasses), times ISO-8601 strings,
    enums their values; a float that JSON cannot hold (NaN, infinity) becomes None.

    Example:
        >>> from datetime import datetime, timezone
        >>> from typing import NamedTuple
        >>> class Hit(NamedTuple):
        ...     key: str
        ...     at: datetime
        ...     scores: dict[str, float]
        >>> plain(Hit("k1", datetime(2026, 5, 4, tzinfo=timezone.utc), {"semantic": 0.5}))
        {'key': 'k1', 'at': '2026-05-04T00:00:00+00:00', 'scores': {'semantic': 0.5}}
    """
    # Exact built-in types first: a response is mostly dicts, lists and strings, and a
    # lookup of the type costs less than the chain of checks below (about 4x on a page
    # of memories). Subclasses (enums, named tuples) take the chain.
    kind = type(obj)
    if kind in _AS_IS:
        return obj
    if kind is dict:
        return {k if type(k) is str else str(k): plain(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [plain(v) for v in obj]
    if kind is float:
        return obj if math.isfinite(obj) else None
    return _plain_other(obj)


_AS_IS = frozenset({str, int, bool, type(None)})


def _plain_other(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj.value if isinstance(obj, enum.Enum) else obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    if isinstance(obj, (datetime, date, time)):
        return obj.isoformat()
    if isinstance(obj, timedelta):
        return obj.total_seconds()
    if isinstance(obj, (uuid.UUID, PurePath)):
        return str(obj)
    if hasattr(obj, "to_dict"):
        return plain(obj.to_dict())
    if hasattr(obj, "_asdict"):
        return plain(obj._asdict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return plain(obj.item())
    raise TypeError(f"{type(obj).__name__} has no JSON form: {obj!r}")
