"""The files of the JSONL message log: their names, their header line, how entries are written.

A session's file is named after its id when the id is a safe file name (``sessA`` ->
``sessA.jsonl``); other characters are escaped, over-long names shortened with a hash, and
names a file system reserves avoided. A file's first line is its header: it names the
session (so a file of another session is refused, as on a case-insensitive file system),
the format and its version, and a random ``file_id`` that changes whenever a new file
replaces it.

Example:
    >>> session_file_name("sessA"), session_file_name("a/b")
    ('sessA.jsonl', 'a%2Fb.jsonl')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from langmem_tiers.errors import BackendError

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "HEADER_BYTES",
    "dumps",
    "file_id_of",
    "header_entry",
    "legacy_file_name",
    "new_file_id",
    "now_iso",
    "session_file_name",
    "session_of_file",
]


FORMAT = "langmem-tiers/stm-log"
FORMAT_VERSION = 1

# Characters every common file system and shell takes as they are. The rest (path
# separators, characters Windows refuses, spaces, controls, non-ASCII, and ``%`` and
# ``~`` themselves) are ``%XX``-escaped, so the name decodes back to exactly one id.
_SAFE = re.compile(r"[A-Za-z0-9._@+-]")
_MAX_NAME = 150
# Windows refuses these as a name's first part, whatever follows the dot.
_RESERVED = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{d}{n}" for d in ("COM", "LPT") for n in range(1, 10)]
)


def _escape(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def _shortened(name: str, session_id: str) -> str:
    # Long ids end in a hash so names stay within file system limits ("~" is always
    # escaped elsewhere, so a shortened name cannot be another id's name).
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
    return f"{name[:100]}~{digest}"


def session_file_name(session_id: str) -> str:
    """The file name of a session: the id itself when it is a safe name, else escaped.

    Only what a file system or shell could misread is ``%XX``-escaped: other characters
    than letters, digits and ``._@+-``, a leading dot (hidden files), and the first letter
    of a name Windows reserves. Two ids never get one name; on a file system that ignores
    case (macOS, Windows) ``Alice`` and ``alice`` are still one file, and the log refuses
    the second session instead of mixing them (the file's header names its session).

    >>> session_file_name("sessA")
    'sessA.jsonl'
    >>> session_file_name("alice@example.com/chat 1")
    'alice@example.com%2Fchat%201.jsonl'
    >>> session_file_name(".hidden"), session_file_name("con")
    ('%2Ehidden.jsonl', '%63on.jsonl')
    """
    chars = [c if _SAFE.fullmatch(c) else _escape(c) for c in session_id]
    if chars and chars[0] == ".":
        chars[0] = _escape(".")
    if session_id.split(".", 1)[0].upper() in _RESERVED:
        chars[0] = _escape(session_id[0])
    return _shortened("".join(chars), session_id) + ".jsonl"


def legacy_file_name(session_id: str) -> str:
    """The name earlier versions gave a session: everything but ``[a-z0-9_-]`` escaped."""
    chars = [c if re.fullmatch(r"[a-z0-9_-]", c) else _escape(c) for c in session_id]
    return _shortened("".join(chars), session_id) + ".jsonl"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def new_file_id() -> str:
    return uuid.uuid4().hex


def header_entry(session_id: str, last_seq: int, file_id: str, generation: int) -> dict[str, Any]:
    return {
        "op": "header",
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "session_id": session_id,
        "last_seq": last_seq,
        "file_id": file_id,
        "generation": generation,
    }


HEADER_BYTES = 16_384  # a header names its session: at most 512 characters, escaped


def session_of_file(path: Path) -> str | None:
    """The session a log file's header names (None: its first line is not complete yet)."""
    try:
        with open(path, "rb") as handle:
            line, newline, _ = handle.read(HEADER_BYTES).partition(b"\n")
    except FileNotFoundError:
        return None  # compacted or renamed meanwhile: found again under its name
    except OSError as err:
        raise BackendError(f"cannot read the message log {str(path)!r}: {err}.") from err
    if not newline:
        return None
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("op") != "header":
        raise BackendError(
            f"the message log {str(path)!r} does not start with a header line; it was "
            "written by something else. Move it out of the sessions directory."
        )
    session_id = header.get("session_id")
    return session_id if isinstance(session_id, str) else None


def file_id_of(handle: BinaryIO) -> str | None:
    """The ``file_id`` in the header of an open log file (None: it has none)."""
    handle.seek(0)
    line, newline, _ = handle.read(HEADER_BYTES).partition(b"\n")
    if newline:
        with contextlib.suppress(ValueError):
            header = json.loads(line)
            if isinstance(header, dict) and isinstance(header.get("file_id"), str):
                return str(header["file_id"])
    return None


def dumps(entry: dict[str, Any]) -> bytes:
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
