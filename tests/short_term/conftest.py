"""Fixtures of the short-term memory tests: the log backends every spec runs against."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from langmem_tiers.short_term.jsonl_log import JsonlMessageLog
from langmem_tiers.short_term.log import InMemoryMessageLog, MessageLog

if TYPE_CHECKING:
    from conftest import Twin

LogFactory = Callable[[], MessageLog]
TwinOf = Callable[[Any], "Twin"]

# Found through pytest, not by import: several test folders have a "conftest" module.
_ROOT_CONFTEST = Path(__file__).resolve().parent.parent / "conftest.py"


@pytest.fixture
def twin_of(mode: str, request: pytest.FixtureRequest) -> TwinOf:
    """Wraps an object so each call goes to its sync method or its async twin."""
    root = request.config.pluginmanager.get_plugin(str(_ROOT_CONFTEST))
    assert root is not None, f"{_ROOT_CONFTEST} was not loaded"
    twin_class: type[Twin] = root.Twin
    return lambda obj: twin_class(obj, mode)


@pytest.fixture(params=["memory", "jsonl"])
def log_kind(request: pytest.FixtureRequest) -> str:
    """Each spec runs on the in-memory and the JSONL log."""
    return str(request.param)


@pytest.fixture
def make_log(log_kind: str, tmp_path: Path) -> LogFactory:
    """Opens a log of the current kind; JSONL logs opened twice share their directory."""

    def factory() -> MessageLog:
        if log_kind == "memory":
            return InMemoryMessageLog()
        return JsonlMessageLog(tmp_path / "sessions")

    return factory
