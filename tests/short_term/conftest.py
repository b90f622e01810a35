"""Fixtures of the short-term memory tests: the log backends every spec runs against."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langmem_tiers.config import Settings
from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import InMemoryMessageLog, MessageLog

if TYPE_CHECKING:
    from conftest import Twin

LogFactory = Callable[[], MessageLog]
TwinOf = Callable[[Any], "Twin"]

# The SQL log joins every spec as soon as its module exists (it provides
# ``open_message_log(settings) -> MessageLog``).
_SQL_LOG = "langmem_tiers.short_term.sql_log"
LOG_KINDS = ["memory", "jsonl"] + (
    ["sqlite", "postgres"] if importlib.util.find_spec(_SQL_LOG) else []
)


@pytest.fixture(params=LOG_KINDS)
def log_kind(request: pytest.FixtureRequest) -> str:
    """Each spec runs on every message log."""
    return str(request.param)


@pytest.fixture
def make_log(log_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> LogFactory:
    """Opens a log of the current kind; logs opened twice in a test share their files."""

    # Resolved now, so the schema outlives the logs (teardown runs in reverse order).
    postgres_url = request.getfixturevalue("postgres_url") if log_kind == "postgres" else None

    def factory() -> MessageLog:
        if log_kind == "memory":
            return InMemoryMessageLog()
        if log_kind == "jsonl":
            return JsonlMessageLog(tmp_path / "sessions")
        url = postgres_url if postgres_url is not None else f"sqlite:///{tmp_path / 'messages.db'}"
        settings = Settings(url=url)
        log: MessageLog = importlib.import_module(_SQL_LOG).open_message_log(settings)
        return log

    return factory
