"""Where a store's time goes: the wall time of each SQL statement and Qdrant call, by phase.

:class:`StatementProfile` wraps the I/O classes of :mod:`langmem_tiers.sql.backends` while
active, so :mod:`benchmarks.store_speed` reports what this project's store executes.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["StatementProfile"]

_SPACES = re.compile(r"\s+")
_MARKS = re.compile(
    r"(\?(\s*,\s*\?)+)|(\(CAST\(\? AS TEXT\), CAST\(\? AS DOUBLE PRECISION\)\)(, )?)+"
)


def _statement_label(text: str) -> str:
    label = _MARKS.sub("?...", _SPACES.sub(" ", text).strip())
    return label[:110]


def _io_classes(*names: str) -> list[type]:
    """The I/O classes of these names, wherever this revision of the package keeps them
    (``sql/backends.py``, and ``sql/postgres_io.py`` where PostgreSQL's I/O has a module)."""
    found: list[type] = []
    for module in ("langmem_tiers.sql.backends", "langmem_tiers.sql.postgres_io"):
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            continue
        found += [getattr(loaded, n) for n in names if isinstance(getattr(loaded, n, None), type)]
    return list(dict.fromkeys(found))


class StatementProfile:
    """Sums the wall time of every SQL statement and Qdrant call the store's I/O runs.

        Wraps the I/O classes of :mod:`langmem_tiers.sql.backends` and
    :mod:`~langmem_tiers.sql.postgres_io` while active (and
        restores them), so it sees exactly what the store executes and nothing else.
    """

    def __init__(self) -> None:
        self.phase = "setup"
        self.seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.calls: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def _wrap(self, kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
        profile = self

        def timed(io: Any, request: Any) -> Any:
            if kind == "qdrant":
                label = f"qdrant {request.method}"
            elif kind == "insert_rows":
                label = f"insert_rows {request.table} ({', '.join(request.columns)})"
            else:
                label = f"{kind} {_statement_label(request.text)}"
            start = time.perf_counter()
            try:
                return original(io, request)
            finally:
                profile.seconds[profile.phase][label] += time.perf_counter() - start
                profile.calls[profile.phase][label] += 1

        return timed

    @contextmanager
    def active(self) -> Iterator[StatementProfile]:
        targets: list[tuple[type, str, str]] = []
        for cls in _io_classes("SqliteIO", "_PgConnIO"):
            targets += [(cls, "sql", "sql"), (cls, "sql_many", "sql_many")]
            if "insert_rows" in cls.__dict__:
                targets.append((cls, "insert_rows", "insert_rows"))
        targets += [(cls, "qdrant", "qdrant") for cls in _io_classes("SharedIO", "_SharedIO")]
        saved = [(cls, name, cls.__dict__[name]) for cls, name, _ in targets]
        try:
            for cls, name, kind in targets:
                setattr(cls, name, self._wrap(kind, cls.__dict__[name]))
            yield self
        finally:
            for cls, name, original in saved:
                setattr(cls, name, original)

    def top(self, phase: str, wall_seconds: float, n: int = 6) -> list[dict[str, Any]]:
        """The ``n`` statements that took longest in ``phase``, with their share of it."""
        rows = sorted(self.seconds[phase].items(), key=lambda kv: -kv[1])[:n]
        return [
            {
                "statement": label,
                "seconds": round(seconds, 3),
                "calls": self.calls[phase][label],
                "share_of_phase": round(seconds / wall_seconds, 3) if wall_seconds else None,
            }
            for label, seconds in rows
        ]
