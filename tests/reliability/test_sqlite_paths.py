"""Opening SQLite where no database can be: a clear error naming the path, never a raw one.

A directory, a path whose parent is a file, and a place no file can be created (``/proc``
here; a read-only file system fails the same first write) each raise the package's own
error, naming the path and what to do, from the store and from the SQL message log.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from langmem_tiers.config import Settings
from langmem_tiers.errors import BackendError, ConfigurationError
from langmem_tiers.long_term.store.store import TieredMemoryStore
from langmem_tiers.short_term.sql_log import SqlMessageLog


def _open_store(url: str) -> None:
    with TieredMemoryStore.from_url(url, settings=Settings()):
        pass


def _open_log(url: str) -> None:
    SqlMessageLog.from_url(url).close()


OPENERS: dict[str, Callable[[str], Any]] = {"store": _open_store, "message log": _open_log}


@pytest.mark.parametrize("opener", OPENERS.values(), ids=OPENERS.keys())
def test_a_directory_is_refused_naming_it(tmp_path: Path, opener: Callable[[str], Any]) -> None:
    with pytest.raises(ConfigurationError, match="is a directory; name a file") as caught:
        opener(f"sqlite:///{tmp_path}")
    assert str(tmp_path) in str(caught.value)


@pytest.mark.parametrize("opener", OPENERS.values(), ids=OPENERS.keys())
def test_a_parent_that_is_a_file_is_refused_naming_it(
    tmp_path: Path, opener: Callable[[str], Any]
) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a directory")
    target = blocker / "memory.db"
    with pytest.raises(ConfigurationError, match="cannot create the directory") as caught:
        opener(f"sqlite:///{target}")
    assert str(target) in str(caught.value)
    assert blocker.read_text() == "a file, not a directory"


@pytest.mark.parametrize("opener", OPENERS.values(), ids=OPENERS.keys())
def test_a_place_no_file_can_be_written_is_a_backend_error_naming_it(
    opener: Callable[[str], Any],
) -> None:
    target = "/proc/langmem-tiers-memory.db"
    with pytest.raises(BackendError, match="cannot open the SQLite database") as caught:
        opener(f"sqlite:///{target}")
    assert target in str(caught.value)
    assert "writable" in str(caught.value)
