"""The SQL message log: sessions in the store's database (SQLite or PostgreSQL).

One table of messages with their tier columns and ``required_tier_level``, and one row
per session holding the last id given, so ids are allocated atomically even with
several writers (a row lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite). A batch of
operations is one transaction, written once as flows (see ``long_term/flow.py``) and run
with the sync or async driver of the connection.

Every add reads the whole window back (the policy plans over it), so a log keeps the
windows it read last: the session row also counts changes other than appends, and while
that count is unchanged only rows appended since are read. A change by any writer (this
process or another) bumps the count, and the next read is a full one. An add's own
append answers the counters and its rows as stored, so when nothing else happened since
the known window, reading it back takes no statement at all.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langmem_tiers.short_term.records import draft_from_message
    >>> log = SqlMessageLog.from_url("sqlite:///:memory:")
    >>> [r.id for r in log.append("s1", [draft_from_message(HumanMessage("hi"), index=0)])]
    ['m1']
    >>> log.next_id("s1")
    'm2'
    >>> log.close()
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

from langmem_tiers.config import Settings
from langmem_tiers.short_term.log import (
    AppendOp,
    ClaimOp,
    ClearOp,
    LogOp,
    MessageLog,
    NextIdOp,
    ReadOp,
    ReleaseOp,
    RemoveOp,
    SetTierLevelOp,
    UpdateTiersOp,
    UserSessions,
    lease_is_free,
)
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.short_term.records import (
    MessageRecord,
    format_message_id,
    parse_message_id,
)
from langmem_tiers.sql import migrations as schema
from langmem_tiers.sql.database import Database, open_connection
from langmem_tiers.sql.dialect import (
    STM_LEASES,
    STM_MESSAGES,
    STM_SESSIONS,
    Dialect,
)
from langmem_tiers.sql.flow import Flow, Sql, Transaction

__all__ = ["SqlMessageLog", "open_message_log"]

_COLUMNS = "seq, role, content, tier1, tier2, required_tier_level, created_at, extra, user_id"
_CACHED_SESSIONS = 256  # windows a log keeps; the least recently read is dropped first
_SET_UP: weakref.WeakSet[Database] = weakref.WeakSet()  # databases a log has migrated


class _Window(NamedTuple):
    """A session's window as read: every stored row up to ``last_seq``, at ``changes``."""

    last_seq: int
    changes: int
    records: tuple[MessageRecord, ...]


_Windows = dict[str, "_Window | None"]
"""Windows known before a batch (and, after it, what to remember: None forgets one)."""


class _Appended(NamedTuple):
    """What an append just did: the session's counters after it, and the rows it stored
    as the database answers them (what reading them back would give)."""

    session_id: str
    last_seq: int
    changes: int
    records: tuple[MessageRecord, ...]


_ROWS_PER_INSERT = 100  # 1,000 parameters a statement, far below every backend's limit


class SqlMessageLog(MessageLog):
    """Messages of many sessions in SQL tables; share the store's database or open one.

    Args:
        conn: a :class:`~langmem_tiers.TieredMemoryStore` (its database is shared: one
            owner of the connection, so the log's and the store's transactions queue
            instead of interleaving), a ``Database``, or an ``sqlite3.Connection`` or
            psycopg connection/pool (sync or async).
        setup: run the log's migrations now (idempotent); on an async connection, at the
            first call (or :meth:`asetup`).

    Example:
        >>> from langmem_tiers import TieredMemoryStore
        >>> with TieredMemoryStore.from_url("sqlite:///:memory:") as store:
        ...     log = SqlMessageLog(store)
        ...     log.db is store.db
        True
    """

    def __init__(self, conn: Any, *, setup: bool = True) -> None:
        self.db = shared_database(conn)
        self._owned: Any = None
        self._windows: OrderedDict[str, _Window] = OrderedDict()
        self._windows_lock = threading.Lock()
        self._setup = setup
        if not self.db.is_async:
            self._ready()

    def _ready(self) -> None:
        # A history per request builds a log per request: migrate once per database.
        if self._setup and self.db not in _SET_UP:
            self.db.run(_in_transaction(_migrations(self.db.dialect)))
            _SET_UP.add(self.db)

    async def _aready(self) -> None:
        # On an async connection the tables are set up at the first call (the message
        # log's component is its own: a store's setup does not make them).
        if self._setup and self.db not in _SET_UP:
            await self.asetup()

    @classmethod
    def from_url(cls, url: str | None = None) -> SqlMessageLog:
        """Open a log on ``url`` (the embedded default when None); :meth:`close` closes it."""
        conn = open_connection(url)
        log = cls(conn)
        log._owned = conn
        return log

    def close(self) -> None:
        """Close the connection :meth:`from_url` opened (a shared one is left open)."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    async def asetup(self) -> None:
        """Run the migrations (for logs opened on an async connection)."""
        await self.db.arun(_in_transaction(_migrations(self.db.dialect)))
        _SET_UP.add(self.db)

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Run ``ops`` in order, in one transaction."""
        self._ready()
        windows = self._known(ops)
        results: list[Any] = self.db.run(
            _in_transaction(_batch_flow(self.db.dialect, ops, windows))
        )
        self._remember(windows)
        return results

    async def abatch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Async twin of :meth:`batch`."""
        await self._aready()
        windows = self._known(ops)
        results: list[Any] = await self.db.arun(
            _in_transaction(_batch_flow(self.db.dialect, ops, windows))
        )
        self._remember(windows)
        return results

    def _user_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        self._ready()
        found: UserSessions = self.db.run(
            _user_sessions_flow(self.db.dialect, user_id, with_records)
        )
        return found

    async def _auser_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        await self._aready()
        flow = _user_sessions_flow(self.db.dialect, user_id, with_records)
        found: UserSessions = await self.db.arun(flow)
        return found

    def _known(self, ops: Sequence[LogOp]) -> _Windows:
        with self._windows_lock:
            return {
                op.session_id: self._windows.get(op.session_id)
                for op in ops
                if isinstance(op, ReadOp) and op.last is None
            }

    def _remember(self, windows: _Windows) -> None:
        # Only after the transaction committed: a rolled-back batch teaches nothing.
        with self._windows_lock:
            for session_id, window in windows.items():
                if window is None:
                    self._windows.pop(session_id, None)
                    continue
                self._windows[session_id] = window
                self._windows.move_to_end(session_id)
            while len(self._windows) > _CACHED_SESSIONS:
                self._windows.popitem(last=False)


def shared_database(conn: Any) -> Database:
    """The :class:`Database` a log runs on: a store's own, a given one, or one on ``conn``."""
    if isinstance(conn, Database):
        return conn
    db = getattr(conn, "db", None)
    if isinstance(db, Database):
        return db
    return Database(conn)


def open_message_log(settings: Settings) -> SqlMessageLog:
    """The SQL log on ``settings.url`` (what the ``sql`` preset log kind opens)."""
    return SqlMessageLog.from_url(settings.url)


def _in_transaction(flow: Flow[Any]) -> Flow[Any]:
    return (yield Transaction(flow))


def _migrations(dialect: Dialect) -> Flow[None]:
    yield from schema.migrate_flow(dialect, [SHORT_TERM])


def _batch_flow(d: Dialect, ops: Sequence[LogOp], windows: _Windows) -> Flow[list[Any]]:
    results: list[Any] = []
    appended: _Appended | None = None  # by the op just before, if it was an append
    for op in ops:
        if isinstance(op, ReadOp) and op.last is None:
            results.append((yield from _window_flow(d, op.session_id, windows, appended)))
            appended = None
        elif isinstance(op, AppendOp):
            records, appended = yield from _append_flow(d, op)
            results.append(records)
        else:
            results.append((yield from _op_flow(d, op)))
            appended = None
    return results


def _user_sessions_flow(d: Dialect, user_id: str, with_records: bool) -> Flow[UserSessions]:
    """A user's sessions (and their messages), from the index on (user_id, session_id, seq)."""
    if not with_records:
        rows = yield Sql(
            f"SELECT DISTINCT session_id FROM {STM_MESSAGES} WHERE user_id = ? ORDER BY session_id",
            [user_id],
        )
        # Sorted here, not by the database's collation: every log answers in one order.
        return {session_id: [] for session_id in sorted(str(row[0]) for row in rows)}
    rows = yield Sql(
        f"SELECT session_id, {_COLUMNS} FROM {STM_MESSAGES} WHERE user_id = ?"
        " ORDER BY session_id, seq",
        [user_id],
    )
    found: UserSessions = {}
    for row in rows:
        found.setdefault(str(row[0]), []).append(_record(d, row[1:]))
    return dict(sorted(found.items()))


def _window_flow(
    d: Dialect, sid: str, windows: _Windows, appended: _Appended | None = None
) -> Flow[list[MessageRecord]]:
    """The whole window, reading only rows appended since the known one when it still holds.

    Right after an append to the session, nothing is read when the known window still
    holds and the append came right after it: the window is it plus the appended rows.
    """
    known = windows.get(sid)
    if (
        appended is not None
        and appended.session_id == sid
        and known is not None
        and known.changes == appended.changes
        and known.last_seq == appended.last_seq - len(appended.records)
    ):
        # The append's row lock (PostgreSQL) or the write transaction (SQLite) keeps
        # other writers out since the counters were read.
        records = known.records + appended.records
        windows[sid] = _Window(appended.last_seq, appended.changes, records)
        return list(records)
    # On PostgreSQL the row lock keeps writers of this session out until the transaction
    # ends, so the count and the rows read next are one state (SQLite is serial already).
    lock = d.for_update
    rows = yield Sql(
        f"SELECT last_seq, changes FROM {STM_SESSIONS} WHERE session_id = ?{lock}", [sid]
    )
    if not rows:
        windows[sid] = None
        return []
    last_seq, changes = int(rows[0][0]), int(rows[0][1])
    if known is not None and known.changes == changes and known.last_seq <= last_seq:
        rows = yield Sql(
            f"SELECT {_COLUMNS} FROM {STM_MESSAGES} WHERE session_id = ? AND seq > ? ORDER BY seq",
            [sid, known.last_seq],
        )
        records = known.records + tuple(_record(d, row) for row in rows)
    else:
        rows = yield Sql(
            f"SELECT {_COLUMNS} FROM {STM_MESSAGES} WHERE session_id = ? ORDER BY seq", [sid]
        )
        records = tuple(_record(d, row) for row in rows)
    windows[sid] = _Window(last_seq, changes, records)
    return list(records)


def _changed(sid: str) -> Sql:
    """Counts a change other than an append (taken first: sessions row, then messages)."""
    return Sql(f"UPDATE {STM_SESSIONS} SET changes = changes + 1 WHERE session_id = ?", [sid])


def _record(d: Dialect, row: Sequence[Any]) -> MessageRecord:
    return MessageRecord(
        id=format_message_id(int(row[0])),
        seq=int(row[0]),
        role=row[1],
        content=d.json_value(row[2]),
        tier1=row[3],
        tier2=row[4],
        required_tier_level=int(row[5]),
        created_at=row[6],
        extra=d.json_value(row[7]),
        user_id=row[8],
    )


def _append_flow(d: Dialect, op: AppendOp) -> Flow[tuple[list[MessageRecord], _Appended | None]]:
    """Store the drafts as the session's next ids; answers the records and what was done."""
    sid = op.session_id
    n = len(op.messages)
    if n == 0:
        return [], None
    rows = yield Sql(
        f"INSERT INTO {STM_SESSIONS} (session_id, last_seq) VALUES (?, ?)"
        f" ON CONFLICT (session_id) DO UPDATE"
        f" SET last_seq = {STM_SESSIONS}.last_seq + excluded.last_seq"
        " RETURNING last_seq, changes",
        [sid, n],
    )
    last_seq, changes = int(rows[0][0]), int(rows[0][1])
    first = last_seq - n + 1
    records = [draft.to_record(first + i) for i, draft in enumerate(op.messages)]
    params = [
        (
            sid,
            r.seq,
            r.role,
            d.json_param(r.content),
            r.tier1,
            r.tier2,
            r.required_tier_level,
            r.created_at,
            d.json_param(dict(r.extra)),
            r.user_id,
        )
        for r in records
    ]
    stored: list[MessageRecord] = []
    for start in range(0, n, _ROWS_PER_INSERT):
        chunk = params[start : start + _ROWS_PER_INSERT]
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
        rows = yield Sql(
            f"INSERT INTO {STM_MESSAGES} (session_id, {_COLUMNS}) VALUES {values}"
            f" RETURNING {_COLUMNS}",
            [value for row in chunk for value in row],
        )
        stored.extend(_record(d, row) for row in rows)
    stored.sort(key=lambda r: r.seq)  # RETURNING promises no order
    return records, _Appended(sid, last_seq, changes, tuple(stored))


def _op_flow(d: Dialect, op: LogOp) -> Flow[Any]:
    sid = op.session_id
    if isinstance(op, ReadOp):
        if op.last is not None and op.last <= 0:
            return []
        if op.last is None:
            rows = yield Sql(
                f"SELECT {_COLUMNS} FROM {STM_MESSAGES} WHERE session_id = ? ORDER BY seq", [sid]
            )
        else:
            rows = yield Sql(
                f"SELECT {_COLUMNS} FROM {STM_MESSAGES} WHERE session_id = ?"
                " ORDER BY seq DESC LIMIT ?",
                [sid, op.last],
            )
            rows = list(reversed(rows))
        return [_record(d, row) for row in rows]
    if isinstance(op, RemoveOp):
        seqs = _seqs(op.ids)
        if not seqs:
            return []
        in_seqs, params = d.in_list("seq", seqs, sql_type="bigint")
        yield _changed(sid)
        rows = yield Sql(
            f"DELETE FROM {STM_MESSAGES} WHERE session_id = ? AND {in_seqs} RETURNING seq",
            [sid, *params],
        )
        removed = {int(r[0]) for r in rows}
        return [format_message_id(s) for s in dict.fromkeys(seqs) if s in removed]
    if isinstance(op, SetTierLevelOp):
        seq = _seq(op.message_id)
        if seq is None:
            return None
        yield _changed(sid)
        rows = yield Sql(
            f"UPDATE {STM_MESSAGES} SET required_tier_level = CASE WHEN required_tier_level < ?"
            " THEN ? ELSE required_tier_level END WHERE session_id = ? AND seq = ?"
            f" RETURNING {_COLUMNS}",
            [op.level, op.level, sid, seq],
        )
        return _record(d, rows[0]) if rows else None
    if isinstance(op, UpdateTiersOp):
        updated: list[str] = []
        if op.tiers:
            yield _changed(sid)
        for message_id, tiers in op.tiers:
            seq = _seq(message_id)
            if seq is None:
                continue
            rows = yield Sql(
                f"UPDATE {STM_MESSAGES} SET tier1 = ?, tier2 = ? WHERE session_id = ? AND seq = ?"
                " RETURNING seq",
                [tiers.tier1, tiers.tier2, sid, seq],
            )
            if rows:
                updated.append(message_id)
        return updated
    if isinstance(op, NextIdOp):
        rows = yield Sql(f"SELECT last_seq FROM {STM_SESSIONS} WHERE session_id = ?", [sid])
        return format_message_id((int(rows[0][0]) if rows else 0) + 1)
    if isinstance(op, ClearOp):
        yield _changed(sid)
        rows = yield Sql(f"DELETE FROM {STM_MESSAGES} WHERE session_id = ? RETURNING seq", [sid])
        return [format_message_id(s) for s in sorted(int(r[0]) for r in rows)]
    if isinstance(op, ClaimOp):
        return (yield from _claim_flow(sid, op))
    if isinstance(op, ReleaseOp):
        rows = yield Sql(
            f"DELETE FROM {STM_LEASES} WHERE session_id = ? AND owner = ? RETURNING owner",
            [sid, op.owner],
        )
        return bool(rows)
    raise TypeError(f"unknown log operation {op!r}")


def _claim_flow(sid: str, op: ClaimOp) -> Flow[bool]:
    rows = yield Sql(f"SELECT owner, expires_at FROM {STM_LEASES} WHERE session_id = ?", [sid])
    holder, expires_at = (str(rows[0][0]), float(rows[0][1])) if rows else (None, None)
    now = time.time()
    if not lease_is_free(holder, expires_at, op.owner, now):
        return False
    # Compare and swap: the take succeeds only if the lease is still as it was read, so two
    # claimers that both saw it free cannot both win (the loser's upsert changes no row).
    rows = yield Sql(
        f"INSERT INTO {STM_LEASES} (session_id, owner, expires_at) VALUES (?, ?, ?)"
        " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
        f" expires_at = excluded.expires_at"
        f" WHERE {STM_LEASES}.owner = ? AND {STM_LEASES}.expires_at = ? RETURNING owner",
        [sid, op.owner, now + op.seconds, holder or "", expires_at or 0.0],
    )
    return bool(rows)


def _seq(message_id: str) -> int | None:
    try:
        return parse_message_id(message_id)
    except ValueError:
        return None


def _seqs(ids: Sequence[str]) -> list[int]:
    return [s for s in (_seq(i) for i in ids) if s is not None]
