"""Children of the crash tests: an import or an erasure killed before its k-th statement."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from langmem_tiers import TieredMemoryStore
from langmem_tiers.long_term.engine.engine import MemoryEngine
from langmem_tiers.portability import import_records
from tests.reliability.harness import _Steps


def _steps(kill_at: int) -> _Steps:
    steps = _Steps(SimpleNamespace(mode="step", kill_at=kill_at, torn_fraction=0.5))  # type: ignore[arg-type]
    steps.install()
    return steps


def import_child(url: str, export: str, kill_at: int, counted: str) -> None:
    """Import ``export`` into ``url``, dying before statement ``kill_at`` of the import
    (``counted``: where a run that lives writes how many statements it made)."""
    with TieredMemoryStore.from_url(url) as store:
        steps = _steps(kill_at)
        with open(export, encoding="utf-8") as handle:
            import_records(store, (json.loads(line) for line in handle))
        Path(counted).write_text(str(steps.last_statement))


def erase_child(url: str, scope: str, kill_at: int, counted: str) -> None:
    """Erase ``scope`` of ``url``, dying before statement ``kill_at`` of the erasure."""
    with TieredMemoryStore.from_url(url) as store:
        engine = MemoryEngine(store, auto_consolidate=False)
        steps = _steps(kill_at)
        engine.erase_scope(scope)
        Path(counted).write_text(str(steps.last_statement))
