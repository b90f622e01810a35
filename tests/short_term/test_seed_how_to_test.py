"""The Dual-memory document's "How to Test", step by step, on SQLite and PostgreSQL.

1. Set ``SHORT_TERM_MEMORY_LIMIT=2``.
2. Chat three turns (the ``reset`` preset, long-term memory in a store).
3. ``SELECT * FROM long_term_memories ORDER BY created_at DESC;`` shows a new summary
   for the session.

The query is run verbatim on the database itself (sqlite3, psycopg), not through the
package; ``long_term_memories`` is a read-only view over the store's items.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings
from langmem_tiers.short_term.history import TieredChatMessageHistory

QUERY = "SELECT * FROM long_term_memories ORDER BY created_at DESC;"
SESSION = "session-7"
TURNS = [
    "Hi, I'm Jordan and I work on the RAI Chat project.",
    "Our launch is planned for March in Lisbon.",
    "Remind me: who leads the design team? It is Priya.",
]


def _rows(url: str, text: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Columns and rows of ``text`` run directly on the database behind ``url``."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            cursor = conn.execute(text)
            return [d[0] for d in cursor.description], cursor.fetchall()
    import psycopg

    with psycopg.connect(url) as conn:
        cursor = conn.execute(text)
        assert cursor.description is not None
        return [d.name for d in cursor.description], cursor.fetchall()


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_the_documents_steps_show_a_new_summary_for_the_session(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHORT_TERM_MEMORY_LIMIT", "2")
    settings = Settings.from_env()
    assert settings.short_term_memory_limit == 2
    model = GenericFakeChatModel(
        messages=iter(
            [AIMessage("Nice to meet you, Jordan."), AIMessage("Noted."), AIMessage("Priya.")]
        )
    )
    with TieredMemoryStore.from_url(url, settings=settings) as store:
        history = TieredChatMessageHistory(SESSION, store=store, preset="reset", settings=settings)
        for text in TURNS:
            question = HumanMessage(text)
            answer = model.invoke([*history.messages, question])
            history.add_messages([question, answer])

    columns, rows = _rows(url, QUERY)
    for name in ("session_id", "summary", "key_concepts", "first_message_id", "last_message_id"):
        assert name in columns
    assert rows, "no summary row after three turns with SHORT_TERM_MEMORY_LIMIT=2"
    newest = dict(zip(columns, rows[0], strict=True))
    assert newest["session_id"] == SESSION
    assert "Jordan" in newest["summary"]
    concepts = newest["key_concepts"]
    assert isinstance(json.loads(concepts) if isinstance(concepts, str) else concepts, list)
    # Three turns are six messages; the third user message passed the limit of two.
    assert (newest["first_message_id"], newest["last_message_id"]) == ("m1", "m6")
    assert newest["message_count"] == 6
    assert newest["category"] == "conversation_summary"
    # The summary row's own session column is filled, not only its JSON value.
    _, stored = _rows(
        url, "SELECT session_id FROM lmt_items WHERE category = 'conversation_summary'"
    )
    assert stored == [(SESSION,)]


def test_the_view_is_read_only(url: str) -> None:
    with TieredMemoryStore.from_url(url, settings=Settings()):
        pass
    for statement in (
        "DELETE FROM long_term_memories",
        "UPDATE long_term_memories SET summary = 'x'",
        "INSERT INTO long_term_memories (id) VALUES ('x')",
    ):
        with pytest.raises(Exception, match=r"(?i)view|cannot"):
            _rows(url, statement)
