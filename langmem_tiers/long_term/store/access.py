"""Access counts of retrieved items, buffered and flushed in one statement.

Every search counts as an access of what it returns (the frequency component of the hybrid
score). Writing a row per hit would double the cost of a search, so hits are counted in
memory and written with a later write, after enough of them, or on close.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from langmem_tiers.sql.dialect import ITEMS, Dialect
from langmem_tiers.sql.flow import Flow, SqlMany

__all__ = ["AccessBuffer"]

_FLUSH_ITEMS = 500
_FLUSH_SECONDS = 2.0


@dataclass
class AccessBuffer:
    """Pending access counts by item id, safe to share between threads.

    Example:
        >>> from datetime import datetime, timezone
        >>> buffer = AccessBuffer()
        >>> buffer.record(["a", "a", "b"], datetime(2026, 1, 1, tzinfo=timezone.utc))
        >>> buffer.pending("a"), buffer.due(force=False), buffer.due(force=True)
        (2, False, True)
    """

    counts: dict[str, int] = field(default_factory=dict)
    last_at: dict[str, datetime] = field(default_factory=dict)
    since: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, ids: Iterable[str], at: datetime) -> None:
        with self.lock:
            if not self.counts:
                self.since = time.monotonic()
            for item_id in ids:
                self.counts[item_id] = self.counts.get(item_id, 0) + 1
                self.last_at[item_id] = at

    def pending(self, item_id: str) -> int:
        return self.counts.get(item_id, 0)

    def due(self, force: bool) -> bool:
        if not self.counts:
            return False
        return (
            force
            or len(self.counts) >= _FLUSH_ITEMS
            or time.monotonic() - self.since >= _FLUSH_SECONDS
        )

    def take(self) -> list[tuple[int, datetime, str]]:
        with self.lock:
            rows = [(n, self.last_at[i], i) for i, n in self.counts.items()]
            self.counts, self.last_at = {}, {}
            return rows

    def restore(self, rows: Sequence[tuple[int, datetime, str]]) -> None:
        with self.lock:
            for n, at, item_id in rows:
                self.counts[item_id] = self.counts.get(item_id, 0) + n
                self.last_at[item_id] = max(at, self.last_at.get(item_id, at))

    def flush_flow(self, dialect: Dialect) -> Flow[None]:
        """Write the pending counts (inside the caller's transaction); kept on failure.

        Rows are updated in id order, the order every writer locks items in: in the order
        items were first counted, two flushes (or a flush and a write) could each hold an
        item the other waits for, and PostgreSQL failed one with a deadlock (3 of 2,523
        requests under the HTTP load).
        """
        rows = sorted(self.take(), key=lambda row: row[2])
        if not rows:
            return
        try:
            yield SqlMany(
                f"UPDATE {ITEMS} SET access_count = access_count + ?, last_accessed_at = ?"
                " WHERE id = ?",
                [(n, dialect.ts_param(at), item_id) for n, at, item_id in rows],
            )
        except BaseException:
            self.restore(rows)
            raise
