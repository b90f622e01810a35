"""The snapshot in a creation event is the memory's row, however it was built.

The events of a batch of new memories are written by the database from the rows just
inserted (SQLite and PostgreSQL alike); every other event's snapshot is built in Python
from the rows read back. Both must spell the same JSON: replay and the timeline compare
them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from langgraph.store.base import PutOp

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.store.events import SNAPSHOT_COLUMNS, snapshot
from langmem_tiers.long_term.store.records import item_id
from langmem_tiers.long_term.store.writes import WriteNote
from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect

VALUES: dict[str, tuple[tuple[str, str], dict[str, Any]]] = {
    # A time with no fraction of a second, a float that is not short in decimal.
    "plain": (
        ("maya", "semantic"),
        {
            "content": "Maya moved to Lisbon",
            "valid_from": "2026-01-02T03:04:05+00:00",
            "confidence": 0.30000000000000004,
        },
    ),
    # A whole float given as an int, a fraction of a second, text outside ASCII.
    "whole": (
        ("maya", "episodic"),
        {
            "content": "Zoë asked for tea",
            "importance": 2,
            "event_timestamp": "2026-03-04T05:06:07.120000+00:00",
        },
    ),
    # Escapes, a number written as given, a nested value, a procedural key.
    "escaped": (
        ("maya", "procedural"),
        {
            "content": 'say "hi"\\ then\ttab \u2028 and \U0001f600',
            "key": "greeting",
            "nested": {"n": 12345678901234567890, "f": 1e-7, "list": [1, 2.5, None, True]},
            "confidence": 0.1,
        },
    ),
}


def _exact(value: Any) -> str:
    """JSON that tells 1 from 1.0."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_a_created_events_snapshot_spells_the_row_as_python_does(
    postgres_schemas: Callable[[], str], zone: str
) -> None:
    url = f"{postgres_schemas()}{quote(f' -c TimeZone={zone}')}"
    with TieredMemoryStore.from_url(url, index=None) as store:
        store.batch([])  # set up
        for key, (namespace, value) in VALUES.items():
            store.put(namespace, key, value)
        namespace, value = VALUES["whole"]
        store.put(namespace, "whole", {**value, "importance": 3})

    with psycopg.connect(url) as conn:
        events = conn.execute("SELECT key, type, after FROM lmt_events ORDER BY seq").fetchall()
        rows = {
            row[2]: row
            for row in conn.execute(f"SELECT {', '.join(SNAPSHOT_COLUMNS)} FROM lmt_items")
        }
    assert [(key, kind) for key, kind, _ in events] == [
        ("plain", "memory.created"),
        ("whole", "memory.created"),
        ("escaped", "memory.created"),
        ("whole", "memory.updated"),
    ]
    created_plain, created_whole, created_escaped, updated_whole = (after for _, _, after in events)
    # The update's snapshot was built in Python from the row read back: what a created
    # snapshot must equal, exactly, for the rows as they are.
    assert _exact(snapshot(PostgresDialect(), rows["plain"])) == _exact(created_plain)
    assert _exact(snapshot(PostgresDialect(), rows["escaped"])) == _exact(created_escaped)
    assert _exact(updated_whole) == _exact(snapshot(PostgresDialect(), rows["whole"]))
    assert created_plain["valid_from"].endswith(":05" + ("+00:00" if zone == "UTC" else "+05:30"))
    assert created_plain["confidence"] == 0.30000000000000004
    assert type(created_whole["importance"]) is float
    assert created_whole["importance"] == 2.0
    assert type(created_whole["confidence"]) is float
    assert created_whole["event_at"].split("T")[1].split(".")[1].startswith("120000")
    assert {
        k: v for k, v in created_whole.items() if k not in {"value", "importance", "updated_at"}
    } == {k: v for k, v in updated_whole.items() if k not in {"value", "importance", "updated_at"}}


def test_a_created_events_snapshot_spells_the_row_as_python_does_on_sqlite(
    tmp_path: Any,
) -> None:
    path = tmp_path / "memory.db"
    with TieredMemoryStore.from_url(f"sqlite:///{path}", index=None) as store:
        store.batch([PutOp(namespace, key, value) for key, (namespace, value) in VALUES.items()])
        namespace, value = VALUES["whole"]
        store.put(namespace, "whole", {**value, "importance": 3})

    with sqlite3.connect(path) as conn:
        events = conn.execute("SELECT key, type, after FROM lmt_events ORDER BY seq").fetchall()
        rows = {
            row[2]: row
            for row in conn.execute(f"SELECT {', '.join(SNAPSHOT_COLUMNS)} FROM lmt_items")
        }
    assert [(key, kind) for key, kind, _ in events] == [
        ("plain", "memory.created"),
        ("whole", "memory.created"),
        ("escaped", "memory.created"),
        ("whole", "memory.updated"),
    ]
    created = {key: json.loads(after) for key, kind, after in events if kind == "memory.created"}
    updated_whole = json.loads(events[-1][2])
    for key in ("plain", "escaped"):
        assert _exact(created[key]) == _exact(snapshot(SqliteDialect(), rows[key]))
    assert _exact(updated_whole) == _exact(snapshot(SqliteDialect(), rows["whole"]))
    assert created["plain"]["valid_from"] == "2026-01-02T03:04:05+00:00"
    assert created["plain"]["confidence"] == 0.30000000000000004
    assert created["escaped"]["value"] == VALUES["escaped"][1]
    assert type(created["whole"]["importance"]) is float
    assert created["whole"]["event_at"] == "2026-03-04T05:06:07.120000+00:00"
    assert {
        k: v for k, v in created["whole"].items() if k not in {"value", "importance", "updated_at"}
    } == {k: v for k, v in updated_whole.items() if k not in {"value", "importance", "updated_at"}}


def test_creation_events_keep_the_batch_order_the_engines_types_and_metadata(
    postgres_url: str,
) -> None:
    keys = [f"k{i:03d}" for i in range(300)][::-1]
    with TieredMemoryStore.from_url(postgres_url, index=None) as store:
        noted = item_id(("maya", "semantic"), keys[7])
        store.db.run(
            store.core.batch_flow(
                [PutOp(("maya", "semantic"), k, {"content": f"fact {k}"}) for k in keys],
                notes={noted: WriteNote(event_type="memory.reinforced", metadata={"why": "x"})},
            )
        )
    with psycopg.connect(postgres_url) as conn:
        events = conn.execute(
            "SELECT key, type, metadata, before FROM lmt_events ORDER BY seq"
        ).fetchall()
    assert [e[0] for e in events] == keys
    assert {e[1] for i, e in enumerate(events) if i != 7} == {"memory.created"}
    assert events[7][1:3] == ("memory.reinforced", {"why": "x"})
    assert all(e[2] == {} for i, e in enumerate(events) if i != 7)
    assert all(e[3] is None for e in events)
