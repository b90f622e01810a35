"""Stored messages carry the user id the caller gave, so a user's sessions can be listed
and exported, on every message log, through the sync and async twins."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langmem_tiers.errors import InvalidNamespaceError
from langmem_tiers.short_term.history import TieredChatMessageHistory
from langmem_tiers.short_term.migrations import SHORT_TERM
from langmem_tiers.short_term.records import MessageDraft, draft_from_message
from langmem_tiers.short_term.sql_log import SqlMessageLog
from langmem_tiers.sql.database import Database
from langmem_tiers.sql.dialect import STM_MESSAGES, STM_SESSIONS, SqliteDialect
from langmem_tiers.sql.migrations import Component, migrate_flow

from .conftest import LogFactory, TwinOf


def drafts(*texts: str, user_id: str | None = None) -> list[MessageDraft]:
    return [
        draft_from_message(HumanMessage(t), index=i)._replace(user_id=user_id)
        for i, t in enumerate(texts)
    ]


async def test_records_keep_their_user_and_a_users_sessions_are_listed_and_exported(
    make_log: LogFactory, twin_of: TwinOf, log_kind: str
) -> None:
    log = twin_of(make_log())
    await log.append("s1", drafts("a1", "a2", user_id="alice"))
    await log.append("s2", drafts("b1", user_id="bob"))
    await log.append("s2", drafts("a3", user_id="alice"))
    await log.append("s3", drafts("nobody's"))
    await log.append("s4", drafts("gone", user_id="alice"))
    await log.clear("s4")
    assert [r.user_id for r in await log.read("s2")] == ["bob", "alice"]
    assert [r.user_id for r in await log.read("s3")] == [None]
    assert await log.sessions_of("alice") == ["s1", "s2"]
    assert await log.sessions_of("bob") == ["s2"]
    assert await log.sessions_of("carol") == []
    exported = await log.export_sessions("alice")
    assert {s: [(r.id, r.text) for r in rs] for s, rs in exported.items()} == {
        "s1": [("m1", "a1"), ("m2", "a2")],
        "s2": [("m2", "a3")],  # bob's message of the shared session is not alice's to export
    }
    if log_kind != "memory":
        reopened = twin_of(make_log())
        assert await reopened.sessions_of("alice") == ["s1", "s2"]
        assert [r.user_id for r in await reopened.read("s1")] == ["alice", "alice"]


@pytest.mark.parametrize("user_id", ["", "a\x00b", "x" * 513, 7, None])
async def test_a_bad_user_id_is_refused(
    make_log: LogFactory, twin_of: TwinOf, user_id: Any
) -> None:
    log = twin_of(make_log())
    with pytest.raises(InvalidNamespaceError, match="user_id"):
        await log.sessions_of(user_id)
    with pytest.raises(InvalidNamespaceError, match="user_id"):
        await log.export_sessions(user_id)


async def test_a_history_given_a_user_id_tags_what_it_stores(
    make_log: LogFactory, twin_of: TwinOf, tmp_path: Path
) -> None:
    log = make_log()
    for session in ("chat-1", "chat-2"):
        history = TieredChatMessageHistory(
            session, preset="moving_window", log=log, user_id="jordan"
        )
        await twin_of(history).add_messages([HumanMessage("I am Jordan."), AIMessage("Hi!")])
    anonymous = TieredChatMessageHistory("chat-3", preset="moving_window", log=log)
    await twin_of(anonymous).add_messages([HumanMessage("Who am I?")])
    shared = twin_of(log)
    assert await shared.sessions_of("jordan") == ["chat-1", "chat-2"]
    exported = await shared.export_sessions("jordan")
    assert [r.role for r in exported["chat-2"]] == ["human", "ai"]
    assert [r.user_id for r in await shared.read("chat-3")] == [None]


def test_a_message_table_from_before_user_ids_is_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = sqlite3.connect(tmp_path / "old.db", check_same_thread=False, isolation_level=None)
    db = Database(conn)
    every = SHORT_TERM.sqlite
    adds_user_id = next(
        i
        for i, m in enumerate(every)
        if any(isinstance(s, str) and "ADD COLUMN user_id" in s for s in m.steps)
    )
    # The component as it was before that migration.
    before = Component(SHORT_TERM.name, sqlite=every[:adds_user_id], postgres=())
    db.run(migrate_flow(SqliteDialect(), [before]))
    columns = "session_id, seq, role, content, required_tier_level, created_at, extra"
    conn.execute(f"INSERT INTO {STM_SESSIONS} (session_id, last_seq) VALUES ('s1', 1)")
    conn.execute(
        f"INSERT INTO {STM_MESSAGES} ({columns}) VALUES ('s1', 1, 'human', '\"hi\"', 1, 't', '{{}}')"
    )
    log = SqlMessageLog(conn)
    assert [(r.text, r.user_id) for r in log.read("s1")] == [("hi", None)]
    log.append("s1", drafts("tagged", user_id="alice"))
    assert log.sessions_of("alice") == ["s1"]
    SqlMessageLog(conn)  # setting up again changes nothing
    assert [r.user_id for r in log.read("s1")] == [None, "alice"]
