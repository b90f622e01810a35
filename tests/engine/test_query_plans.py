"""On SQLite the engine's reads of a scope go through the indexes they are written for.

Without statistics SQLite picks an index on an equality over a list of ids or a covering
index on a range, so a retrieve over a large scope read the whole scope's rows twice. These
tests look at the plan of every statement a retrieve runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.engine.engine import MemoryEngine

from .sqlite_trace import traced_statements


def _plans(store: Any, run: Any) -> list[tuple[str, str]]:
    conn = store.db.sync_io.conn
    _, statements = traced_statements(store, run)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    return [
        (s, " / ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")))
        for s in selects
    ]


def test_retrieve_reads_the_scope_through_the_covering_index(tmp_path: Path) -> None:
    with TieredMemoryStore.from_url(f"sqlite:///{tmp_path / 'm.db'}") as store:
        engine = MemoryEngine(store, settings=store.settings)
        for n in range(30):
            engine.add_episodic("agent-1", f"note {n}: the blue kettle is on shelf {n}")
        engine.retrieve("agent-1", "blue kettle")  # fills the namespace cache
        plans = _plans(store, lambda: engine.retrieve("agent-1", "kettle shelf"))
    assert plans
    for statement, plan in plans:
        assert "lmt_items_scope_kind" not in plan, (statement, plan)
        if "lmt_items i" in statement and "json_each" not in statement:
            assert "COVERING INDEX lmt_items_live" in plan, (statement, plan)
