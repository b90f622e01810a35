"""``langmem-tiers ingest FILE``: load a conversation into short- and long-term memory.

Two formats:

- **JSONL**: one message per line, ``{"role": "user" | "assistant" | "system", "content":
  "..."}`` (``human`` / ``ai`` too); an optional ``"session"`` puts a line in that session,
  an optional ``"at"`` (or ``"timestamp"``, ISO-8601) is when it was written: the message
  keeps that time, and so do the episodic memories made of it.
- **LoCoMo**: the dataset's JSON (a list of samples, or one sample): each
  ``session_<n>`` of a sample becomes session ``<sample_id>-session_<n>``, ``speaker_a``
  the user and ``speaker_b`` the assistant; image turns keep their caption as text.

Messages go through :class:`~langmem_tiers.conversation.ChatMemory` with the ``tiered`` preset
and the SQL message log in the store's database, exactly as a live conversation's turns
do: they are tiered and stored in the session, the user's facts and preferences become
semantic and procedural memories, and when the window is over its budget its oldest
exchanges are archived to episodic memory.

Example:
    >>> rows = list(read_jsonl('{"role": "user", "content": "hi"}\\n', "s1"))
    >>> rows[0].session, rows[0].role, rows[0].content
    ('s1', 'human', 'hi')
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langmem_tiers.errors import InvalidContentError
from langmem_tiers.long_term.store.records import parse_timestamp

__all__ = ["IngestMessage", "detect_format", "read_jsonl", "read_locomo", "run"]

_ROLES = {
    "user": "human",
    "human": "human",
    "assistant": "ai",
    "ai": "ai",
    "system": "system",
}


class IngestMessage(NamedTuple):
    """One message to ingest."""

    session: str
    role: str
    """``human``, ``ai`` or ``system``."""
    content: str
    scope: str | None = None
    """Whose long-term memory (LoCoMo: the sample id); None: the command's ``--scope``."""
    at: str | None = None
    """When the message was written (ISO-8601), if the file says."""


def detect_format(path: Path) -> str:
    """``locomo`` when the file is one JSON document, else ``jsonl``."""
    with path.open("r", encoding="utf-8") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith("["):
        return "locomo"
    if head.startswith("{"):
        first = head.split("\n", 1)[0]
        try:
            row = json.loads(first)
        except ValueError:
            return "locomo"  # a JSON object spread over several lines
        return "locomo" if isinstance(row, dict) and "conversation" in row else "jsonl"
    return "jsonl"


def read_jsonl(text: str, session: str) -> Iterator[IngestMessage]:
    """Messages of a JSONL text; ``session`` for lines that name none."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as err:
            raise InvalidContentError(f"line {number} is not JSON: {line[:80]!r}") from err
        if not isinstance(row, dict):
            raise InvalidContentError(
                f"line {number} must be an object with 'role' and 'content', got {line[:80]!r}"
            )
        role = _ROLES.get(str(row.get("role", "")).lower())
        if role is None:
            raise InvalidContentError(
                f"line {number}: role must be user, assistant or system, got {row.get('role')!r}"
            )
        content = row.get("content")
        if not isinstance(content, str) or not content.strip():
            raise InvalidContentError(
                f"line {number}: content must be a non-empty string, got {content!r:.80}"
            )
        where = row.get("session", session)
        if not isinstance(where, str) or not where.strip():
            raise InvalidContentError(
                f"line {number}: session must be a non-empty string, got {where!r}"
            )
        at = row.get("at", row.get("timestamp"))
        if at is not None:
            parse_timestamp(at, field=f"line {number}: at")  # a clear error before any write
        yield IngestMessage(where, role, content, None, at)


def _sessions(conversation: dict[str, Any]) -> list[tuple[int, list[Any]]]:
    found = []
    for name, turns in conversation.items():
        suffix = name[len("session_") :]
        if name.startswith("session_") and suffix.isdigit() and isinstance(turns, list):
            found.append((int(suffix), turns))
    return sorted(found)


def _locomo_time(raw: Any) -> str | None:
    """A LoCoMo session time (``1:56 pm on 8 May, 2023``) as ISO-8601 UTC, or None."""
    if not isinstance(raw, str):
        return None
    try:
        parsed = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return parsed.replace(tzinfo=timezone.utc).isoformat()


def read_locomo(data: Any) -> Iterator[IngestMessage]:
    """Messages of LoCoMo samples, session by session (see the module docstring)."""
    samples = data if isinstance(data, list) else [data]
    for index, sample in enumerate(samples):
        conversation = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conversation, dict):
            raise InvalidContentError(
                f"LoCoMo sample {index} has no 'conversation' object; is this a LoCoMo file?"
            )
        sample_id = str(sample.get("sample_id") or f"sample-{index}")
        first = conversation.get("speaker_a")
        for number, turns in _sessions(conversation):
            session = f"{sample_id}-session_{number}"
            at = _locomo_time(conversation.get(f"session_{number}_date_time"))
            for turn in turns:
                if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                    continue
                text = turn["text"].strip()
                caption = turn.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text = f"{text} [shares {caption.strip()}]".strip()
                if not text:
                    continue
                role = "human" if turn.get("speaker") == first else "ai"
                yield IngestMessage(session, role, text, sample_id, at)


def _message(row: IngestMessage) -> BaseMessage:
    # The message's own time rides in additional_kwargs, where short-term memory reads it.
    kwargs: dict[str, Any] = {"created_at": row.at} if row.at is not None else {}
    if row.role == "human":
        return HumanMessage(row.content, additional_kwargs=kwargs)
    if row.role == "ai":
        return AIMessage(row.content, additional_kwargs=kwargs)
    return SystemMessage(row.content, additional_kwargs=kwargs)


def _turns(rows: Sequence[IngestMessage]) -> Iterator[list[IngestMessage]]:
    """Groups of one session: a user message with the replies that follow it."""
    group: list[IngestMessage] = []
    for row in rows:
        starts = row.role == "human" or bool(group and group[0].session != row.session)
        if group and starts:
            yield group
            group = []
        group.append(row)
    if group:
        yield group


def run(args: argparse.Namespace) -> int:
    """The ``ingest`` command."""
    from tqdm import tqdm

    from langmem_tiers.cli.main import CommandError, count, open_store, print_json, settings_for
    from langmem_tiers.conversation import ChatMemory
    from langmem_tiers.short_term.presets import get_preset
    from langmem_tiers.short_term.sql_log import SqlMessageLog

    path = Path(args.file)
    if not path.is_file():
        raise CommandError(f"no such file: {args.file}")
    fmt = detect_format(path) if args.format == "auto" else args.format
    if args.session and fmt == "locomo":
        raise CommandError("--session is for JSONL files; LoCoMo files name their sessions")
    text = path.read_text(encoding="utf-8")
    if fmt == "locomo":
        try:
            data = json.loads(text)
        except ValueError as err:
            raise InvalidContentError(f"{args.file} is not a LoCoMo JSON file: {err}") from err
        rows = list(read_locomo(data))
    else:
        rows = list(read_jsonl(text, args.session or path.stem))
    if args.limit is not None:
        rows = rows[: args.limit]
    if not rows:
        raise CommandError(f"{args.file} holds no messages")
    if fmt == "jsonl" and args.scope is None:
        raise CommandError("--scope is required for JSONL files: whose long-term memory?")

    settings = settings_for(args)
    summary: dict[str, Any] = {"file": str(path), "format": fmt, "messages": 0, "sessions": 0}
    pruned = 0
    errors: list[str] = []
    with open_store(args, settings) as store:
        memory = ChatMemory(
            store,
            preset=get_preset("tiered").with_changes(log="sql"),
            settings=settings,
            log=SqlMessageLog(store.conn),
        )
        sessions: set[tuple[str, str]] = set()
        bar = tqdm(
            total=len(rows),
            unit="msg",
            desc="ingest",
            disable=args.no_progress or args.json,
            file=sys.stderr,
        )
        with bar:
            for group in _turns(rows):
                scope = args.scope or group[0].scope
                assert scope is not None  # LoCoMo rows carry their sample id
                session = group[0].session
                sessions.add((scope, session))
                saved = memory.save_turn(session, scope, [_message(r) for r in group])
                errors.extend(saved.errors)
                pruned += len(saved.consolidated)
                bar.update(len(group))
        summary.update(
            messages=len(rows),
            sessions=len(sessions),
            scopes=sorted({scope for scope, _ in sessions}),
            archived_to_episodic=pruned,
            errors=errors,
        )
    if args.json:
        print_json(summary)
    else:
        scopes = ", ".join(summary["scopes"])
        print(
            f"ingested {count(len(rows), 'message')} in {count(len(sessions), 'session')} "
            f"into scope(s) {scopes}; {pruned} archived from the window to episodic memory"
        )
        for error in errors[:5]:
            print(f"  warning: {error}")
    return 0
