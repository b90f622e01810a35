"""Fixtures of the graph tests: a fresh store per test and the three ways to run a graph."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.config import Settings


@pytest.fixture
def settings() -> Settings:
    """Default settings with the seed's eager view (not read from the environment).

    The regenerate loop needs tiered lines to ask about; with the default budget policy a
    short test session is shown raw. The budget policy's graph specs set their own.
    """
    return Settings(context_policy="eager")


@pytest.fixture
def store(settings: Settings) -> Iterator[TieredMemoryStore]:
    """A throwaway embedded store."""
    with TieredMemoryStore.from_url("sqlite:///:memory:", settings=settings) as opened:
        yield opened


@pytest.fixture(params=["invoke", "ainvoke", "astream"])
def runner(request: pytest.FixtureRequest) -> str:
    """Each graph spec runs through invoke, ainvoke and astream."""
    return str(request.param)
