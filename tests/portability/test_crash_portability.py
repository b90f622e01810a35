"""An import or an erasure killed (SIGKILL) before any of its statements leaves each scope
as it was or done, and a re-run finishes it (the crash harness's kill points)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.portability import export_records, import_records
from tests.reliability.harness import process_context

from . import crash_workers
from .test_portability import _fill

# Kill points per test: spread over the statements of a run that lives (PostgreSQL's cost
# a fresh schema each).
KILL_POINTS = {"sqlite": 6, "postgres": 3}


@pytest.fixture(params=["sqlite", "postgres"])
def new_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    made: list[str] = []
    schemas = request.getfixturevalue("postgres_schemas") if request.param == "postgres" else None

    def new() -> str:
        made.append(schemas() if schemas else f"sqlite:///{tmp_path / f'c{len(made)}.db'}")
        return made[-1]

    new.points = KILL_POINTS[request.param]  # type: ignore[attr-defined]
    return new


def _scope_records(url: str, scope: str) -> list[dict[str, Any]]:
    with TieredMemoryStore.from_url(url) as store:
        return [r for r in export_records(store, [scope]) if r["type"] != "header"]


def _run(target: Callable[..., None], *args: Any) -> int:
    """Run a child to its end or its kill; answers its exit code."""
    child = process_context().Process(target=target, args=args)
    child.start()
    child.join(60)
    assert child.exitcode is not None, "the child hung"
    return child.exitcode


def _kill_points(total: int, points: int) -> list[int]:
    """``points`` statements spread from the first to the last of ``total``."""
    return sorted({1 + (total - 1) * i // max(1, points - 1) for i in range(points)})


def test_killed_imports_leave_each_scope_as_before_or_done(
    new_url: Callable[[], str], tmp_path: Path
) -> None:
    source = new_url()
    _fill(source, tmp_path, "dana")
    _fill(source, tmp_path, "erin")
    export = tmp_path / "all.jsonl"
    with TieredMemoryStore.from_url(source) as store:
        export.write_text("".join(json.dumps(r) + "\n" for r in export_records(store)))
    expected = {s: _scope_records(source, s) for s in ("dana", "erin")}
    counted = tmp_path / "count"
    assert _run(crash_workers.import_child, new_url(), str(export), 10**9, str(counted)) == 0
    for kill_at in _kill_points(int(counted.read_text()), new_url.points):  # type: ignore[attr-defined]
        target = new_url()
        assert _run(crash_workers.import_child, target, str(export), kill_at, str(counted)) != 0
        for scope, done in expected.items():
            now = _scope_records(target, scope)
            nothing = [r["type"] for r in now] == ["scope", "end"]
            assert nothing or now == done, f"half a scope after a kill at statement {kill_at}"
        with TieredMemoryStore.from_url(target) as store, open(export) as handle:
            import_records(store, (json.loads(line) for line in handle))
        assert {s: _scope_records(target, s) for s in expected} == expected


def test_killed_erasures_leave_the_scope_as_before_or_erased(
    new_url: Callable[[], str], tmp_path: Path
) -> None:
    source = new_url()
    _fill(source, tmp_path, "dana")
    with TieredMemoryStore.from_url(source) as store:
        exported = list(export_records(store))
    before = _scope_records(source, "dana")
    counted = tmp_path / "count"
    assert _run(crash_workers.erase_child, source, "dana", 10**9, str(counted)) == 0
    erased = _scope_records(source, "dana")
    assert {r["type"] for r in erased} == {"scope", "event", "end"}
    assert {r["event_type"] for r in erased if r["type"] == "event"} == {"memory.erased"}
    # The statements of an erasure of a copy as the kills below meet it: imported, with no
    # API keys (an export leaves them out, so the copy has no keys' table to erase from).
    probe = new_url()
    with TieredMemoryStore.from_url(probe) as store:
        import_records(store, exported)
    assert _run(crash_workers.erase_child, probe, "dana", 10**9, str(counted)) == 0
    assert _scope_records(probe, "dana") == erased
    for kill_at in _kill_points(int(counted.read_text()), new_url.points):  # type: ignore[attr-defined]
        target = new_url()
        with TieredMemoryStore.from_url(target) as store:
            import_records(store, exported)
        assert _run(crash_workers.erase_child, target, "dana", kill_at, str(counted)) != 0
        now = _scope_records(target, "dana")
        assert now in (before, erased), f"half an erasure after a kill at statement {kill_at}"
        with TieredMemoryStore.from_url(target) as store:
            MemoryEngine(store, auto_consolidate=False).erase_scope("dana")
        assert _scope_records(target, "dana") == erased
