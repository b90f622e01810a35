"""The SQL statements an embedded (SQLite file) store runs, on its writer and its reader."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def traced_statements(store: Any, run: Callable[[], T]) -> tuple[T, list[str]]:
    """What ``run()`` returns, and every statement it ran on ``store``'s connections."""
    conn = store.db.sync_io.conn
    # Reads run on the file's reader (there is one, lent again to every read).
    reader = conn.readers.lend()
    conn.readers.give_back(reader)
    statements: list[str] = []
    for traced in (conn, reader):
        traced.set_trace_callback(statements.append)
    try:
        result = run()
    finally:
        for traced in (conn, reader):
            traced.set_trace_callback(None)
    return result, statements
