"""A message log kept as one append-only JSONL file per session.

File format (UTF-8, one JSON object per line, every line ends with ``\\n``)::

    {"op": "header", "format": "langmem-tiers/stm-log", "version": 1, "session_id": "s1",
        "last_seq": 0, "file_id": "9f2c...", "generation": 0}
    {"op": "append", "messages": [{"id": "m1", "seq": 1, "role": "human", "content": "...",
        "tier1": "...", "tier2": "...", "required_tier_level": 1, "created_at": "...",
        "extra": {}}]}
    {"op": "tiers", "tiers": {"m1": {"tier1": "...", "tier2": "..."}}}
    {"op": "level", "id": "m1", "level": 3}
    {"op": "remove", "ids": ["m1"], "reason": "consolidated", "at": "2026-01-01T00:00:00+00:00"}
    {"op": "batch", "ops": [ ...entries written by one batch... ]}

The state of a session is the file replayed from the top. Crash safety:

- Every batch is written with one ``write`` of whole lines and ``fsync``-ed before the call
  returns, so an acknowledged message is on disk. A batch with several changes is one
  ``batch`` line, so it lands whole or not at all.
- A crash mid-write leaves an unterminated last line. It is found when the file is next
  read: the torn bytes are moved to ``<file>.torn`` (logged, never silently dropped) and
  the file is cut back to its last complete line. Nothing acknowledged is in them.
- Removals are appended records. When removed messages outnumber the live ones, the file is
  compacted: the live state is written to a temporary file, ``fsync``-ed, and put in place
  with ``os.replace`` (atomic), so a crash leaves either the old or the new file.
- Writers in other processes are kept out by an advisory lock on ``<file>.lock`` (POSIX).
- A log caches each session's replayed state. Between its writes the file only grows,
  except when a compaction replaces it; each file a compaction (or the first write) makes
  has a new random ``file_id`` in its header (and the next ``generation``). So the header's
  ``file_id`` and the file's size change on every write by anyone, and a cache is used only
  when both still match (inode numbers do not do: ext4 gives the inode a compaction frees
  to the next compaction's file).
- The consolidation lease (see :class:`~langmem_tiers.short_term.log.ClaimOp`) is
  ``<file>.lease``, read and written under that lock; an unreadable one counts as free.

Example:
    >>> import tempfile
    >>> from langchain_core.messages import HumanMessage
    >>> from langmem_tiers.short_term.records import draft_from_message
    >>> log = JsonlMessageLog(tempfile.mkdtemp())
    >>> [r.id for r in log.append("s1", [draft_from_message(HumanMessage("hi"), index=0)])]
    ['m1']
    >>> [r.text for r in JsonlMessageLog(log.directory).read("s1")]
    ['hi']
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from langmem_tiers.errors import BackendError
from langmem_tiers.short_term.jsonl_files import (
    FORMAT,
    FORMAT_VERSION,
    dumps,
    file_id_of,
    header_entry,
    legacy_file_name,
    new_file_id,
    now_iso,
    session_file_name,
    session_of_file,
)
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
    SessionState,
    SetTierLevelOp,
    UpdateTiersOp,
    UserSessions,
    lease_is_free,
    users_records,
)
from langmem_tiers.short_term.records import MessageRecord
from langmem_tiers.tiers.base import MessageTiers

try:  # POSIX only; elsewhere writers in one process are still serialised by a lock
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT", "FORMAT_VERSION", "JsonlMessageLog", "session_file_name"]

logger = logging.getLogger(__name__)


class _Cache:
    """A session's replayed state and where in the file it was read up to."""

    __slots__ = ("appended", "file_id", "generation", "lines", "session_id", "size", "state")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.state = SessionState()
        self.size = 0
        self.file_id: str | None = None
        """The header's ``file_id`` of the file read (None: no file yet)."""
        self.generation = 0
        self.lines = 0
        self.appended = 0  # message records written to the file (live or removed since)

    def copy(self) -> _Cache:
        other = _Cache(self.session_id)
        other.state = self.state.copy()
        other.size, other.file_id, other.generation = self.size, self.file_id, self.generation
        other.lines, other.appended = self.lines, self.appended
        return other


class JsonlMessageLog(MessageLog):
    """One append-only, ``fsync``-ed JSONL file per session in ``directory``.

    Args:
        directory: where the files live (created if missing).
        fsync: ``fsync`` every write (turn off only for throwaway data).
        compact_min_lines: a file is never compacted below this many lines.
    """

    def __init__(
        self, directory: str | os.PathLike[str], *, fsync: bool = True, compact_min_lines: int = 256
    ) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.compact_min_lines = compact_min_lines
        self._cache: dict[str, _Cache] = {}
        self._lock = threading.RLock()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BackendError(
                f"cannot create the message log directory {str(self.directory)!r}: {err}. "
                "Pass a writable directory."
            ) from err

    def path_for(self, session_id: str) -> Path:
        """The JSONL file of a session."""
        return self.directory / session_file_name(session_id)

    # -- the seam -------------------------------------------------------------------

    def batch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Run ``ops`` in order; the changes of each session are written as one line."""
        sessions = sorted({op.session_id for op in ops})
        with self._lock, contextlib.ExitStack() as stack:
            for session_id in sessions:
                stack.enter_context(self._file_lock(session_id))
            work = {s: self._load(s).copy() for s in sessions}
            entries: dict[str, list[dict[str, Any]]] = {s: [] for s in sessions}
            results = [
                self._lease(op)
                if isinstance(op, (ClaimOp, ReleaseOp))
                else self._run(op, work[op.session_id], entries[op.session_id])
                for op in ops
            ]
            for session_id in sessions:
                if entries[session_id]:
                    self._commit(session_id, work[session_id], entries[session_id])
            return results

    async def abatch(self, ops: Sequence[LogOp]) -> list[Any]:
        """Async twin of :meth:`batch` (file I/O runs in a worker thread)."""
        return await asyncio.to_thread(self.batch, ops)

    def _user_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        # Every session file is read: the directory keeps no index by user.
        found: UserSessions = {}
        for path in sorted(self.directory.glob("*.jsonl")):
            session_id = session_of_file(path)
            if session_id is None or session_id in found:
                continue  # nothing acknowledged yet, or read already
            if path.name not in (session_file_name(session_id), legacy_file_name(session_id)):
                continue  # a copy under another session's name: reading that one refuses it
            records = users_records(self.read(session_id), user_id)
            if records:
                found[session_id] = records if with_records else []
        return dict(sorted(found.items()))

    async def _auser_sessions(self, user_id: str, with_records: bool) -> UserSessions:
        return await asyncio.to_thread(self._user_sessions, user_id, with_records)

    # -- operations -------------------------------------------------------------------

    def _run(self, op: LogOp, cache: _Cache, entries: list[dict[str, Any]]) -> Any:
        state = cache.state
        if isinstance(op, AppendOp):
            records = state.assign(op.messages)
            state.insert(records)
            cache.appended += len(records)
            entries.append({"op": "append", "messages": [r.to_json() for r in records]})
            return records
        if isinstance(op, ReadOp):
            return state.window(op.last)
        if isinstance(op, (RemoveOp, ClearOp)):
            ids = op.ids if isinstance(op, RemoveOp) else tuple(state.records)
            reason = op.reason if isinstance(op, RemoveOp) else "cleared"
            removed = state.remove(ids)
            if removed:
                entries.append({"op": "remove", "ids": removed, "reason": reason, "at": now_iso()})
            return removed
        if isinstance(op, SetTierLevelOp):
            before = state.records.get(op.message_id)
            record = state.raised_level(op.message_id, op.level)
            if record is not None and record is not before:
                state.insert([record])
                level = record.required_tier_level
                entries.append({"op": "level", "id": record.id, "level": level})
            return record
        if isinstance(op, UpdateTiersOp):
            updated = state.update_tiers(op.tiers)
            if updated:
                wanted = dict(op.tiers)
                entries.append({"op": "tiers", "tiers": {i: wanted[i]._asdict() for i in updated}})
            return updated
        if isinstance(op, NextIdOp):
            return state.next_id()
        raise TypeError(f"unknown log operation {op!r}")

    def _lease(self, op: ClaimOp | ReleaseOp) -> bool:
        """Claim or release the lease file (the caller holds the session's file lock)."""
        path = self.path_for(op.session_id).with_suffix(".lease")
        holder: str | None = None
        expires_at: float | None = None
        try:
            held = json.loads(path.read_bytes())
            holder, expires_at = str(held["owner"]), float(held["expires_at"])
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, KeyError) as err:
            logger.warning("the lease file %s is unreadable, taken as free: %s", path, err)
        now = time.time()
        if isinstance(op, ReleaseOp) and holder != op.owner:
            return False
        if isinstance(op, ClaimOp) and not lease_is_free(holder, expires_at, op.owner, now):
            return False
        try:
            if isinstance(op, ReleaseOp):
                path.unlink(missing_ok=True)
            else:
                temporary = path.with_name(path.name + ".tmp")
                temporary.write_bytes(dumps({"owner": op.owner, "expires_at": now + op.seconds}))
                os.replace(temporary, path)
        except OSError as err:
            raise BackendError(
                f"could not write the lease file {str(path)!r}: {err}; check that the "
                "directory is writable."
            ) from err
        return True

    # -- writing ----------------------------------------------------------------------

    def _commit(self, session_id: str, work: _Cache, entries: list[dict[str, Any]]) -> None:
        path = self.path_for(session_id)
        created = work.size == 0
        data = b""
        if created:
            work.file_id = new_file_id()
            data += dumps(header_entry(session_id, 0, work.file_id, work.generation))
            work.lines += 1
        entry = entries[0] if len(entries) == 1 else {"op": "batch", "ops": entries}
        data += dumps(entry)
        try:
            self._write_bytes(path, data)
            if created:
                self._fsync_directory()
            stat = path.stat()
        except OSError as err:
            # The file may now end in a partial line: forget the cache so the next read
            # replays the file and repairs it.
            self._cache.pop(session_id, None)
            raise BackendError(
                f"could not write the message log {str(path)!r}: {err}. Nothing of this "
                "batch was acknowledged; check that the disk is writable and not full."
            ) from err
        work.size = stat.st_size
        work.lines += 1
        self._cache[session_id] = work
        live = len(work.state.records)
        if work.lines >= self.compact_min_lines and work.appended - live > live:
            self._compact(session_id, work)

    def _write_bytes(self, path: Path, data: bytes) -> None:
        """Append ``data`` to ``path`` and ``fsync`` it (the one place bytes are written)."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def _fsync_directory(self) -> None:
        # A new or replaced file's directory entry must be durable too.
        if not self.fsync or os.name != "posix":
            return
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def compact(self, session_id: str) -> None:
        """Rewrite a session's file to its live state (atomically, via ``os.replace``)."""
        with self._lock, self._file_lock(session_id):
            self._compact(session_id, self._load(session_id).copy())

    def _compact(self, session_id: str, work: _Cache) -> None:
        path = self.path_for(session_id)
        if work.size == 0:
            return
        temporary = path.with_name(path.name + ".compact-tmp")
        file_id, generation = new_file_id(), work.generation + 1
        records = work.state.window(None)
        data = dumps(header_entry(session_id, work.state.last_seq, file_id, generation))
        if records:
            data += dumps({"op": "append", "messages": [r.to_json() for r in records]})
        try:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            self._write_bytes(temporary, data)
            os.replace(temporary, path)
            self._fsync_directory()
            stat = path.stat()
        except OSError as err:
            # The original file is untouched until os.replace succeeds, so nothing is lost.
            logger.warning("compaction of %s failed, the file is kept as it was: %s", path, err)
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        work.size, work.file_id, work.generation = stat.st_size, file_id, generation
        work.lines = 2 if records else 1
        work.appended = len(records)
        self._cache[session_id] = work

    @contextlib.contextmanager
    def _file_lock(self, session_id: str) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        lock_path = self.path_for(session_id).with_suffix(".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise BackendError(
                f"cannot open the lock file {str(lock_path)!r}: {err}; check the directory "
                "is writable."
            ) from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # -- reading ----------------------------------------------------------------------

    def _load(self, session_id: str) -> _Cache:
        """The session's state, replaying only what was appended since the last read."""
        path = self.path_for(session_id)
        handle = self._open(session_id, path)
        if handle is None:
            cache = _Cache(session_id)
            self._cache[session_id] = cache
            return cache
        with handle:
            try:
                size = os.fstat(handle.fileno()).st_size
                file_id = file_id_of(handle)
            except OSError as err:
                raise BackendError(f"cannot read the message log {str(path)!r}: {err}.") from err
            known = self._cache.get(session_id)
            same_file = known is not None and file_id is not None and known.file_id == file_id
            if same_file and known is not None and known.size == size:
                return known
            if known is None or not same_file or size < known.size:
                # Another file than the one read (a compaction replaced it), or none read yet.
                cache = _Cache(session_id)
                with contextlib.suppress(FileNotFoundError):
                    # A compaction interrupted before os.replace: the original file is whole.
                    path.with_name(path.name + ".compact-tmp").unlink()
            else:
                cache = known.copy()  # the same file, grown: read only the new lines
            self._replay(path, handle, cache)
        cache.file_id = file_id
        self._cache[session_id] = cache
        if file_id is None and cache.size:
            # Written before headers named their file (or its header was torn): rewrite it
            # once with one, so later reads can trust the cache again.
            self._compact(session_id, cache)
        return cache

    def _open(self, session_id: str, path: Path) -> BinaryIO | None:
        """The session's file open for reading, None when there is none yet."""
        for attempt in range(2):
            try:
                return open(path, "rb")
            except FileNotFoundError:
                if attempt or not self._adopt_legacy_file(session_id, path):
                    return None
            except OSError as err:
                raise BackendError(f"cannot read the message log {str(path)!r}: {err}.") from err
        return None

    def _adopt_legacy_file(self, session_id: str, path: Path) -> bool:
        """Give a file of the earlier naming its readable name; True when one was found.

        The caller holds the session's lock. The file is linked under the new name, never
        renamed over one: where the file system ignores case, the new name may already be
        another session's file, which must stay as it is (and is then refused on read).
        """
        legacy = self.directory / legacy_file_name(session_id)
        if legacy == path:
            return False
        try:
            os.link(legacy, path)
        except FileNotFoundError:
            return False
        except FileExistsError:
            return True  # another session's file by that name: reading it refuses it
        except OSError as err:
            raise BackendError(
                f"cannot give the message log {str(legacy)!r} its new name {path.name!r}: "
                f"{err}. Rename it by hand, or check that the directory is writable."
            ) from err
        try:
            legacy.unlink()
            for suffix in (".lock", ".lease"):
                with contextlib.suppress(FileNotFoundError):
                    legacy.with_suffix(suffix).unlink()
            self._fsync_directory()
        except OSError as err:  # both names are one file now: nothing can diverge
            logger.warning("could not remove the old name %s of %s: %s", legacy, path, err)
        logger.info("message log of session %r renamed from %s to %s", session_id, legacy, path)
        return True

    def _replay(self, path: Path, handle: BinaryIO, cache: _Cache) -> None:
        try:
            handle.seek(cache.size)
            data = handle.read()
        except OSError as err:
            raise BackendError(f"cannot read the message log {str(path)!r}: {err}.") from err
        offset = cache.size
        start = 0  # bytes of ``data`` accounted for (the file's size is offset + start)
        while start < len(data):
            end = data.find(b"\n", start)
            if end == -1:
                if self._repair_torn_tail(path, offset + start, data[start:]):
                    cache.lines += 1
                    self._apply(path, cache, json.loads(data[start:]), cache.lines)
                    start = len(data) + 1  # the repair wrote the missing newline
                break  # otherwise the torn bytes were cut off: the file ends at ``start``
            line = data[start:end]
            try:
                entry = json.loads(line)
                if not isinstance(entry, dict):
                    raise ValueError("not a JSON object")
            except ValueError as err:
                raise BackendError(
                    f"line {cache.lines + 1} of the message log {str(path)!r} is not a valid "
                    f"record ({err}) although complete lines are written whole: the file was "
                    "changed by something else. Restore it from a backup or move it aside."
                ) from err
            cache.lines += 1
            self._apply(path, cache, entry, cache.lines)
            start = end + 1
        cache.size = offset + start

    def _repair_torn_tail(self, path: Path, position: int, tail: bytes) -> bool:
        """Handle an unterminated last line; True when it was whole and is kept."""
        try:
            entry = json.loads(tail)
            whole = isinstance(entry, dict) and "op" in entry
        except ValueError:
            whole = False
        try:
            if whole:
                # Only the newline is missing: the record itself is intact, keep it.
                self._write_bytes(path, b"\n")
                logger.warning("message log %s: completed a last line missing its newline", path)
                return True
            sidecar = path.with_name(path.name + ".torn")
            with open(sidecar, "ab") as handle:
                handle.write(tail + b"\n")
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            with open(path, "r+b") as handle:
                handle.truncate(position)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
        except OSError as err:
            raise BackendError(
                f"the message log {str(path)!r} ends in a torn line (a crash mid-write) and "
                f"could not be repaired: {err}. Check the directory is writable."
            ) from err
        logger.warning(
            "message log %s ended in a torn line (a crash mid-write, never acknowledged); "
            "moved its %d bytes to %s",
            path,
            len(tail),
            sidecar,
        )
        return False

    def _apply(self, path: Path, cache: _Cache, entry: dict[str, Any], line: int) -> None:
        state = cache.state
        op = entry.get("op")
        try:
            if op == "header":
                if int(entry.get("version", 0)) > FORMAT_VERSION:
                    raise BackendError(
                        f"the message log {str(path)!r} has format version "
                        f"{entry.get('version')}, newer than this package reads "
                        f"({FORMAT_VERSION}); upgrade langmem-tiers."
                    )
                if entry.get("session_id") != cache.session_id:
                    raise BackendError(
                        f"the message log {str(path)!r} belongs to session "
                        f"{entry.get('session_id')!r}, not {cache.session_id!r}: either the "
                        "file system ignores case and the two ids differ only in case (use "
                        "ids that differ otherwise, or a case-sensitive directory), or the "
                        "file was renamed or copied by hand (move it back to its own name)."
                    )
                state.last_seq = max(state.last_seq, int(entry.get("last_seq", 0)))
                cache.generation = int(entry.get("generation", 0))
            elif op == "append":
                records = [MessageRecord.from_json(m) for m in entry["messages"]]
                state.insert(records)
                cache.appended += len(records)
            elif op == "remove":
                state.remove(entry["ids"])
            elif op == "level":
                record = state.raised_level(entry["id"], int(entry["level"]))
                if record is not None:
                    state.insert([record])
            elif op == "tiers":
                state.update_tiers(
                    (i, MessageTiers(t["tier1"], t["tier2"])) for i, t in entry["tiers"].items()
                )
            elif op == "batch":
                for inner in entry["ops"]:
                    self._apply(path, cache, inner, line)
            else:
                raise KeyError(f"unknown op {op!r}")
        except (KeyError, TypeError, ValueError) as err:
            raise BackendError(
                f"line {line} of the message log {str(path)!r} cannot be read ({err}); the "
                "file was written by something else or by a newer version."
            ) from err
