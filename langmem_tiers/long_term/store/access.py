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

from langmem_tiers.sql.dialect import ITEM_ACCESS, ITEMS, Dialect
from langmem_tiers.sql.flow import Flow, Sql, SqlMany

__all__ = ["AccessBuffer"]

_FLUSH_ITEMS = 500
_FLUSH_SECONDS = 2.0

#: PostgreSQL plans a statement a connection runs often once, with the row counts it knew
#: then: a table of counts analyzed while empty (a database-wide ``VACUUM ANALYZE`` of a
#: new store) was scanned whole for every item a search looked up in it, as it grew. Once
#: this process has added that many first
#: counts to a table estimated smaller, it is analyzed: from about 500 rows on, a lookup by
#: id is planned through the index whatever the table grows to, so once is enough (each
#: analysis makes every connection plan its statements again, in its next search).
_ANALYZE_ROWS = 512


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
    #: Items this process counted for the first time since it analyzed the counts' table.
    added: int = 0
    #: The table's rows at that analysis, as the database estimated them.
    analyzed_rows: int = 0

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

        Where writers run concurrently (PostgreSQL), a count another transaction holds
        is not waited for: it stays pending for the next flush. A write transaction
        flushes after writing its own items, so waiting could close a cycle with a
        writer that holds a counted item's count and waits for one of the write's (a
        deadlock PostgreSQL broke by failing an add of the server, beside its background
        consolidation). Elsewhere counts are added in id order.
        """
        rows = sorted(self.take(), key=lambda row: row[2])
        if not rows:
            return
        # The items a search returned share its instant: each instant is written once.
        stamps = {at: dialect.ts_param(at) for at in {at for _, at, _ in rows}}
        try:
            statement = dialect.add_accesses_sql()
            if statement is None:
                yield SqlMany(
                    dialect.add_access_sql,
                    [(n, stamps[at], item_id) for n, at, item_id in rows],
                )
                return
            written = yield Sql(
                statement,
                [
                    [item_id for _, _, item_id in rows],
                    [n for n, _, _ in rows],
                    [stamps[at] for _, at, _ in rows],
                ],
            )
            done = {r[0] for r in written}
            with self.lock:
                self.added += sum(1 for r in written if r[1])
            skipped = [row for row in rows if row[2] not in done]
            if skipped:
                # Locked or deleted: only the items still there keep their counts.
                in_ids, params = dialect.in_list("id", [row[2] for row in skipped])
                there = {
                    r[0] for r in (yield Sql(f"SELECT id FROM {ITEMS} WHERE {in_ids}", params))
                }
                self.restore([row for row in skipped if row[2] in there])
        except BaseException:
            self.restore(rows)
            raise

    def analyze_due(self) -> bool:
        """Whether the counts' table grew past what its planner statistics say."""
        return self.analyzed_rows < _ANALYZE_ROWS <= self.added

    def analyze_flow(self, dialect: Dialect) -> Flow[None]:
        """Refresh the counts' table's statistics (in a transaction holding nothing else:
        another analysis of the table waits for its end)."""
        with self.lock:
            self.added = 0
        statement = dialect.analyze_sql(ITEM_ACCESS)
        if statement is None:
            return
        yield Sql(statement)
        rows = yield Sql(dialect.estimated_rows_sql(ITEM_ACCESS))
        self.analyzed_rows = max(0, int(rows[0][0] or 0))
