"""Reading a store's tables directly, and the database a test of one backend opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from langmem_tiers.sql.flow import Sql, Transaction


def store_rows(store: Any, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` run on ``store``'s database, in a transaction of its own."""

    def flow() -> Any:
        return (yield Sql(sql, params or []))

    def tx() -> Any:
        return (yield Transaction(flow()))

    return list(store.db.run(tx()))


def backend_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A new database of ``backend`` ("sqlite" or "postgres") for one test."""
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path}/memory.db"
