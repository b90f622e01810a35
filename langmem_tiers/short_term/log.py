"""Message logs: where short-term memory keeps a session's messages.

Every log implements one seam, :meth:`MessageLog.batch` / :meth:`MessageLog.abatch`, over
a small set of operations; the named methods (``append``, ``read``...) are one-line
wrappers that build an operation. A batch is one round trip: the engine appends a batch of
messages and reads the window back in a single call.

Operations (each answers with the value named):

================  ===========================================================  ==============
operation         does                                                         result
================  ===========================================================  ==============
``AppendOp``      stores drafts as ``m<next>, m<next+1>...``                   the records
``ReadOp``        the session's stored messages, oldest first (``last``: tail)  records
``RemoveOp``      removes messages by id (ids are never reused)                ids removed
``SetTierLevelOp``  raises a message's ``required_tier_level`` (never lowers)  record / None
``UpdateTiersOp`` sets tier 1 and tier 2 of messages                           ids updated
``NextIdOp``      the id the next appended message will get                    ``"m<n>"``
``ClearOp``       removes every message (the id counter is kept)               ids removed
``ClaimOp``       takes or renews the session's consolidation lease            taken?
``ReleaseOp``     gives the lease back (only its owner can)                     released?
================  ===========================================================  ==============

Across sessions, :meth:`MessageLog.sessions_of` lists the sessions holding messages of a
user (records carry the ``user_id`` the caller gave) and :meth:`MessageLog.export_sessions`
exports that user's stored messages, session by session.

The lease makes consolidation happen once per window when several processes add to one
session: only the lease's owner reads, summarises and removes the window. A lease ends when
its owner releases it, when it expires, or at once when the owner was a process of this
machine that no longer runs (so a crashed writer never blocks a session).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from langmem_tiers.short_term.records import draft_from_message
    >>> log = InMemoryMessageLog()
    >>> [r.id for r in log.append("s1", [draft_from_message(HumanMessage("hi"), index=0)])]
    ['m1']
    >>> log.remove("s1", ["m1"]), log.next_id("s1"), log.read("s1")
    (['m1'], 'm2', [])
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langmem_tiers.short_term.records import (
    MessageDraft,
    MessageRecord,
    format_message_id,
    validate_session_id,
)
from langmem_tiers.tiers.base import MessageTiers

__all__ = [
    "AppendOp",
    "ClaimOp",
    "ClearOp",
    "InMemoryMessageLog",
    "LogOp",
    "MessageLog",
    "NextIdOp",
    "ReadOp",
    "ReleaseOp",
    "RemoveOp",
    "SessionState",
    "SetTierLevelOp",
    "UpdateTiersOp",
    "UserSessions",
    "lease_is_free",
    "new_lease_owner",
]


class AppendOp(NamedTuple):
    """Store ``messages`` as the next ids of the session; answers the new records."""

    session_id: str
    messages: tuple[MessageDraft, ...]


class ReadOp(NamedTuple):
    """The stored messages, oldest first; only the ``last`` ones when given."""

    session_id: str
    last: int | None = None


class RemoveOp(NamedTuple):
    """Remove messages by id (unknown ids are skipped); answers the ids removed."""

    session_id: str
    ids: tuple[str, ...]
    reason: str = "removed"
    """Why (``consolidated``, ``pruned``...): kept by logs that record removals."""


class SetTierLevelOp(NamedTuple):
    """Raise a message's ``required_tier_level`` to at least ``level``.

    Answers the record after the change, or ``None`` when the message is not stored.
    """

    session_id: str
    message_id: str
    level: int


class UpdateTiersOp(NamedTuple):
    """Set tier 1 and 2 of stored messages; answers the ids updated."""

    session_id: str
    tiers: tuple[tuple[str, MessageTiers], ...]


class NextIdOp(NamedTuple):
    """The id the next appended message will get."""

    session_id: str


class ClearOp(NamedTuple):
    """Remove every message of the session; the id counter is kept, so ids stay unique."""

    session_id: str


class ClaimOp(NamedTuple):
    """Take the session's consolidation lease for ``owner`` until ``seconds`` from now.

    Answers True when taken: nobody held it, ``owner`` held it (renewed), or the holder's
    lease had ended (see :func:`lease_is_free`). The check and the take are one atomic step.
    """

    session_id: str
    owner: str
    seconds: float


class ReleaseOp(NamedTuple):
    """Give the lease back; answers True when ``owner`` held it (anyone else's is kept)."""

    session_id: str
    owner: str


UserSessions = dict[str, list[MessageRecord]]
"""A user's stored messages by session id (sessions in id order, messages oldest first)."""


def users_records(records: Iterable[MessageRecord], user_id: str) -> list[MessageRecord]:
    """The records of ``user_id``, oldest first."""
    return sorted((r for r in records if r.user_id == user_id), key=lambda r: r.seq)


LogOp = (
    AppendOp
    | ReadOp
    | RemoveOp
    | SetTierLevelOp
    | UpdateTiersOp
    | NextIdOp
    | ClearOp
    | ClaimOp
    | ReleaseOp
)
"""Any log operation."""


def new_lease_owner() -> str:
    """A lease owner name unique to this call: ``<host>:<pid>:<random>``.

    The host and process id let another process of the same machine see that the owner
    is gone after a crash, instead of waiting for the lease to expire.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _owner_is_gone(owner: str) -> bool:
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False  # another machine's process: only expiry ends its lease
    try:
        os.kill(int(parts[1]), 0)  # signal 0 checks that the process exists
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # exists but not ours to signal, or no such pid form
        return False
    return False


def lease_is_free(holder: str | None, expires_at: float | None, owner: str, now: float) -> bool:
    """Whether ``owner`` may take a lease now held by ``holder`` until ``expires_at``.

    >>> lease_is_free(None, None, "me", now=0.0), lease_is_free("me", 9.0, "me", now=0.0)
    (True, True)
    >>> lease_is_free("other-host:1:x", 9.0, "me", now=0.0)
    False
    >>> lease_is_free("other-host:1:x", 9.0, "me", now=10.0)
    True
    """
    if holder is None or holder == owner:
        return True
    if expires_at is None or expires_at <= now:
        return True
    return _owner_is_gone(holder)


class SessionState:
    """The messages of one session in memory, and the last id ever given.

    The in-memory log keeps one per session; the JSONL log rebuilds one by replaying its
    file, through the same methods, so both answer identically.
    """

    __slots__ = ("_in_order", "_top_seq", "last_seq", "lease", "records")

    def __init__(self) -> None:
        self.records: dict[str, MessageRecord] = {}
        self.last_seq = 0
        self.lease: tuple[str, float] | None = None
        """The consolidation lease: (owner, expires at, as ``time.time()``)."""
        # Whether ``records`` is in seq order (appends come in order), so the window
        # need not be sorted on every read; ``_top_seq`` is the highest seq inserted.
        self._in_order = True
        self._top_seq = 0

    def copy(self) -> SessionState:
        """An independent copy of the messages and the id counter (not the lease)."""
        other = SessionState()
        other.records = dict(self.records)
        other.last_seq = self.last_seq
        other._in_order, other._top_seq = self._in_order, self._top_seq
        return other

    def claim(self, owner: str, seconds: float) -> bool:
        """Take or renew the lease (see :class:`ClaimOp`)."""
        now = time.time()
        holder, expires_at = self.lease if self.lease is not None else (None, None)
        if not lease_is_free(holder, expires_at, owner, now):
            return False
        self.lease = (owner, now + seconds)
        return True

    def release(self, owner: str) -> bool:
        """Give the lease back if ``owner`` holds it."""
        if self.lease is None or self.lease[0] != owner:
            return False
        self.lease = None
        return True

    def assign(self, drafts: Sequence[MessageDraft]) -> list[MessageRecord]:
        """Records for ``drafts`` with the next ids (not stored yet)."""
        return [d.to_record(self.last_seq + i) for i, d in enumerate(drafts, start=1)]

    def insert(self, records: Iterable[MessageRecord]) -> None:
        """Store records (already given ids)."""
        for record in records:
            known = self.records.get(record.id)
            if record.seq <= self._top_seq if known is None else record.seq != known.seq:
                self._in_order = False
            self.records[record.id] = record
            self._top_seq = max(self._top_seq, record.seq)
            self.last_seq = max(self.last_seq, record.seq)

    def remove(self, ids: Iterable[str]) -> list[str]:
        """Remove the stored ones of ``ids``; answers those removed."""
        removed = [i for i in dict.fromkeys(ids) if i in self.records]
        for message_id in removed:
            del self.records[message_id]
        return removed

    def raised_level(self, message_id: str, level: int) -> MessageRecord | None:
        """The record with its level raised to ``level`` (not stored), or None if absent."""
        record = self.records.get(message_id)
        if record is None:
            return None
        if record.required_tier_level >= level:
            return record
        return record.replace(required_tier_level=level)

    def update_tiers(self, tiers: Iterable[tuple[str, MessageTiers]]) -> list[str]:
        """Set tiers of stored messages; answers the ids updated."""
        updated: list[str] = []
        for message_id, new in tiers:
            record = self.records.get(message_id)
            if record is not None:
                self.records[message_id] = record.replace(tier1=new.tier1, tier2=new.tier2)
                updated.append(message_id)
        return updated

    def window(self, last: int | None) -> list[MessageRecord]:
        """Stored records oldest first; the ``last`` ones when given."""
        if self._in_order:
            records = list(self.records.values())
        else:
            records = sorted(self.records.values(), key=lambda r: r.seq)
        if last is not None:
            records = records[-last:] if last > 0 else []
        return records

    def next_id(self) -> str:
        """The id the next message will get."""
        return format_message_id(self.last_seq + 1)


class MessageLog(ABC):
    """Stores the messages of many sessions; implement :meth:`batch` and :meth:`abatch`.

    Operations in one batch run in order and, where the backend can, atomically. Logs
    trust their input: the engine validates at the public edge.
    """

    @abstractmethod
    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Run ``ops`` in order; answers one result per op (see the module table)."""

    @abstractmethod
    async def abatch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Async twin of :meth:`batch`."""

    # The named methods only build an operation, so every backend shares them.

    def append(self, session_id: str, messages: Sequence[MessageDraft]) -> list[MessageRecord]:
        """Store messages with the next ids; answers the records."""
        result: list[MessageRecord] = self.batch([AppendOp(session_id, tuple(messages))])[0]
        return result

    async def aappend(
        self, session_id: str, messages: Sequence[MessageDraft]
    ) -> list[MessageRecord]:
        """Async twin of :meth:`append`."""
        result: list[MessageRecord] = (await self.abatch([AppendOp(session_id, tuple(messages))]))[
            0
        ]
        return result

    def read(self, session_id: str, *, last: int | None = None) -> list[MessageRecord]:
        """Stored messages oldest first (the ``last`` ones when given)."""
        result: list[MessageRecord] = self.batch([ReadOp(session_id, last)])[0]
        return result

    async def aread(self, session_id: str, *, last: int | None = None) -> list[MessageRecord]:
        """Async twin of :meth:`read`."""
        result: list[MessageRecord] = (await self.abatch([ReadOp(session_id, last)]))[0]
        return result

    def remove(self, session_id: str, ids: Sequence[str], reason: str = "removed") -> list[str]:
        """Remove messages by id; answers the ids that were stored and are now removed."""
        result: list[str] = self.batch([RemoveOp(session_id, tuple(ids), reason)])[0]
        return result

    async def aremove(
        self, session_id: str, ids: Sequence[str], reason: str = "removed"
    ) -> list[str]:
        """Async twin of :meth:`remove`."""
        result: list[str] = (await self.abatch([RemoveOp(session_id, tuple(ids), reason)]))[0]
        return result

    def set_tier_level(self, session_id: str, message_id: str, level: int) -> MessageRecord | None:
        """Raise a message's level to at least ``level``; None if it is not stored."""
        result: MessageRecord | None = self.batch([SetTierLevelOp(session_id, message_id, level)])[
            0
        ]
        return result

    async def aset_tier_level(
        self, session_id: str, message_id: str, level: int
    ) -> MessageRecord | None:
        """Async twin of :meth:`set_tier_level`."""
        result: MessageRecord | None = (
            await self.abatch([SetTierLevelOp(session_id, message_id, level)])
        )[0]
        return result

    def update_tiers(self, session_id: str, tiers: Mapping[str, MessageTiers]) -> list[str]:
        """Set tier 1 and 2 of stored messages; answers the ids updated."""
        result: list[str] = self.batch([UpdateTiersOp(session_id, tuple(tiers.items()))])[0]
        return result

    async def aupdate_tiers(self, session_id: str, tiers: Mapping[str, MessageTiers]) -> list[str]:
        """Async twin of :meth:`update_tiers`."""
        result: list[str] = (await self.abatch([UpdateTiersOp(session_id, tuple(tiers.items()))]))[
            0
        ]
        return result

    def next_id(self, session_id: str) -> str:
        """The id the next appended message will get."""
        return str(self.batch([NextIdOp(session_id)])[0])

    async def anext_id(self, session_id: str) -> str:
        """Async twin of :meth:`next_id`."""
        return str((await self.abatch([NextIdOp(session_id)]))[0])

    def clear(self, session_id: str) -> list[str]:
        """Remove every message of the session; answers the ids removed."""
        result: list[str] = self.batch([ClearOp(session_id)])[0]
        return result

    async def aclear(self, session_id: str) -> list[str]:
        """Async twin of :meth:`clear`."""
        result: list[str] = (await self.abatch([ClearOp(session_id)]))[0]
        return result

    # Across sessions: a user's sessions. Backends answer ``_user_sessions``; messages
    # already moved to long-term memory (consolidated, archived, cleared) are not listed.

    def sessions_of(self, user_id: str) -> list[str]:
        """Ids of the sessions holding stored messages of ``user_id``, sorted.

        Raises:
            InvalidNamespaceError: ``user_id`` is not a valid id.

        >>> from langchain_core.messages import HumanMessage
        >>> from langmem_tiers.short_term.records import draft_from_message
        >>> log = InMemoryMessageLog()
        >>> draft = draft_from_message(HumanMessage("hi"), index=0)._replace(user_id="jordan")
        >>> _ = log.append("chat-2", [draft]), log.append("chat-1", [draft])
        >>> log.sessions_of("jordan")
        ['chat-1', 'chat-2']
        >>> [r.text for r in log.export_sessions("jordan")["chat-1"]]
        ['hi']
        """
        return list(self._user_sessions(validate_session_id(user_id, "user_id"), False))

    async def asessions_of(self, user_id: str) -> list[str]:
        """Async twin of :meth:`sessions_of`."""
        checked = validate_session_id(user_id, "user_id")
        return list(await self._auser_sessions(checked, False))

    def export_sessions(self, user_id: str) -> UserSessions:
        """The stored messages of ``user_id``, by session (only this user's messages).

        Raises:
            InvalidNamespaceError: ``user_id`` is not a valid id.
        """
        return self._user_sessions(validate_session_id(user_id, "user_id"), True)

    async def aexport_sessions(self, user_id: str) -> UserSessions:
        """Async twin of :meth:`export_sessions`."""
        return await self._auser_sessions(validate_session_id(user_id, "user_id"), True)

    def _user_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        """The user's sessions, sorted; their records only when ``with_records``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not list sessions by user; use one of the "
            "package's logs (memory, jsonl, sql)."
        )

    async def _auser_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        """Async twin of :meth:`_user_sessions` (by default, the sync one inline)."""
        return self._user_sessions(user_id, with_records)


def apply_op(state: SessionState, op: LogOp) -> Any:
    """Run one operation on a session's state and answer its result (the in-memory semantics)."""
    if isinstance(op, AppendOp):
        records = state.assign(op.messages)
        state.insert(records)
        return records
    if isinstance(op, ReadOp):
        return state.window(op.last)
    if isinstance(op, RemoveOp):
        return state.remove(op.ids)
    if isinstance(op, SetTierLevelOp):
        record = state.raised_level(op.message_id, op.level)
        if record is not None:
            state.insert([record])
        return record
    if isinstance(op, UpdateTiersOp):
        return state.update_tiers(op.tiers)
    if isinstance(op, NextIdOp):
        return state.next_id()
    if isinstance(op, ClearOp):
        return state.remove(list(state.records))
    if isinstance(op, ClaimOp):
        return state.claim(op.owner, op.seconds)
    if isinstance(op, ReleaseOp):
        return state.release(op.owner)
    raise TypeError(f"unknown log operation {op!r}")


class InMemoryMessageLog(MessageLog):
    """Messages in this process's memory (lost when it exits): the ``moving_window`` default.

    >>> InMemoryMessageLog().next_id("s1")
    'm1'
    """

    def __init__(self) -> None:
        self._sessions: dict[str, SessionState] = {}
        self._lock = threading.Lock()

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Run ``ops`` in order, atomically with respect to other threads."""
        with self._lock:
            results = []
            for op in ops:
                state = self._sessions.setdefault(op.session_id, SessionState())
                results.append(apply_op(state, op))
            return results

    async def abatch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Async twin of :meth:`batch` (no I/O, so it runs inline)."""
        return self.batch(ops)

    def _user_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        with self._lock:
            found = {
                session_id: users_records(state.records.values(), user_id)
                for session_id, state in sorted(self._sessions.items())
            }
        return {s: (rs if with_records else []) for s, rs in found.items() if rs}
