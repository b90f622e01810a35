"""Fixtures of the reliability tests: the seed, the backends, PostgreSQL connections by name.

Every random choice of these tests comes from ``SEED`` (``RELIABILITY_SEED`` in the
environment overrides it, to explore other schedules); a failure message names the seed
and the kill point, so it replays.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    pass

SEED = int(os.environ.get("RELIABILITY_SEED", "20261121"))
"""The seed of every random choice in this folder."""


def with_application_name(url: str) -> tuple[str, str]:
    """``url`` with a unique ``application_name``, so a test can find its own server connections.

    Other test runs may share the server: only connections with this name are ever
    terminated.
    """
    name = f"lmt_rel_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}application_name={name}", name


@pytest.fixture(params=["sqlite", "postgres"])
def sql_backend(request: pytest.FixtureRequest) -> str:
    """Each test runs on the embedded SQLite file and on PostgreSQL."""
    return str(request.param)


@pytest.fixture
def store_url(sql_backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database of the backend under test (a file, or a schema dropped afterwards).

    ``postgres_icu`` is PostgreSQL in a database whose default collation is ICU's en-US
    (see tests/conftest.py); tests that concern ordering of text parametrise over it.
    """
    if sql_backend == "postgres":
        yield request.getfixturevalue("postgres_url")
    elif sql_backend == "postgres_icu":
        yield request.getfixturevalue("postgres_icu_url")
    else:
        yield f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture(autouse=True)
def _soak_tests_only_on_request(request: pytest.FixtureRequest) -> None:
    """The ``slow`` variants here run for minutes: only when ``-m`` names ``slow``.

    ``pytest tests/reliability -m slow`` runs them; a plain ``pytest`` (CI) skips them, so
    the folder stays within a few minutes.
    """
    if request.node.get_closest_marker("slow") and "slow" not in (
        request.config.option.markexpr or ""
    ):
        pytest.skip("a soak variant: run it with -m slow")
