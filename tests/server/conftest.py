"""Fixtures of the HTTP API tests: the real app on SQLite and PostgreSQL, with keys."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from langmem_tiers import TieredMemoryStore
from langmem_tiers.server import ApiKeys, create_app


@dataclass
class Api:
    """A test client with one key per role."""

    client: TestClient
    store: TieredMemoryStore
    key_a: str
    key_b: str
    admin: str

    @staticmethod
    def auth(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    @property
    def a(self) -> dict[str, str]:
        return self.auth(self.key_a)

    @property
    def b(self) -> dict[str, str]:
        return self.auth(self.key_b)

    @property
    def root(self) -> dict[str, str]:
        return self.auth(self.admin)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'api.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def make_api(store: TieredMemoryStore, **options: object) -> Iterator[Api]:
    keys = ApiKeys(store.db)
    a = keys.create(scope="agent-a").key
    b = keys.create(scope="agent-b").key
    admin = keys.create(admin=True).key
    with TestClient(create_app(store, **options)) as client:  # type: ignore[arg-type]
        yield Api(client, store, a, b, admin)


@pytest.fixture
def api(store_url: str) -> Iterator[Api]:
    """The app over a store the test owns, on each backend."""
    with TieredMemoryStore.from_url(store_url) as store:
        yield from make_api(store)
