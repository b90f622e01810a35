"""API keys: created once, stored hashed, verified in constant time, revocable; sync and async."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from langmem_tiers import TieredMemoryStore
from langmem_tiers.errors import InvalidNamespaceError, NotFoundError, ValidationError
from langmem_tiers.server.keys import ApiKeys, hash_key, parse_key
from langmem_tiers.sql.dialect import API_KEYS
from tests.conftest import Twin


@pytest.fixture(params=["sqlite", "postgres"])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TieredMemoryStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('keys') / 'keys.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    with TieredMemoryStore.from_url(url) as opened:
        yield opened


async def test_create_verify_list_revoke(store: TieredMemoryStore, mode: str) -> None:
    keys = Twin(ApiKeys(store.db), mode)
    created = await keys.create(scope="agent-a", name="ci")
    admin = await keys.create(admin=True)
    assert parse_key(created.key) == created.record.id
    assert created.record.scope == "agent-a"
    assert admin.record.is_admin
    assert admin.record.scope is None

    found = await keys.verify(created.key)
    assert found is not None
    assert (found.id, found.scope, found.is_admin) == (created.record.id, "agent-a", False)
    assert found.last_used_at is not None
    assert await keys.verify(created.key[:-1] + ("A" if created.key[-1] != "A" else "B")) is None
    assert await keys.verify("lmt_" + created.record.id + "_" + "x" * 43) is None
    assert await keys.verify("") is None
    assert await keys.verify("Bearer " + created.key) is None

    listed = await keys.list_keys()
    assert [k.id for k in listed] == [created.record.id, admin.record.id]
    assert [k.id for k in await keys.list_keys(scope="agent-a")] == [created.record.id]

    revoked = await keys.revoke(created.record.id)
    assert revoked.revoked_at is not None
    assert await keys.verify(created.key) is None
    assert (await keys.revoke(created.record.id)).revoked_at == revoked.revoked_at
    assert await keys.verify(admin.key) is not None
    with pytest.raises(NotFoundError, match="no API key with id"):
        await keys.revoke("000000000000")


def test_only_a_sha256_of_the_key_is_stored(store: TieredMemoryStore) -> None:
    created = ApiKeys(store.db).create(scope="agent-a")
    from langmem_tiers.sql.flow import Sql

    def rows():  # type: ignore[no-untyped-def]
        return (yield Sql(f"SELECT id, key_hash FROM {API_KEYS}"))

    stored = store.db.run(rows())
    assert stored == [(created.record.id, hashlib.sha256(created.key.encode()).hexdigest())]
    assert hash_key(created.key) == stored[0][1]
    assert created.key not in str(stored)


def test_keys_are_random_and_long(store: TieredMemoryStore) -> None:
    table = ApiKeys(store.db)
    made = {table.create(scope="a").key for _ in range(20)}
    assert len(made) == 20
    assert all(len(k) == len("lmt_") + 12 + 1 + 43 for k in made)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({}, InvalidNamespaceError),
        ({"scope": ""}, InvalidNamespaceError),
        ({"scope": "a\x00b"}, InvalidNamespaceError),
        ({"scope": "a" * 513}, InvalidNamespaceError),
        ({"scope": "a", "admin": True}, ValidationError),
        ({"scope": "a", "name": "n" * 201}, ValidationError),
    ],
)
def test_bad_key_requests_are_refused(
    store: TieredMemoryStore, kwargs: dict, error: type[Exception]
) -> None:
    table = ApiKeys(store.db)
    with pytest.raises(error):
        table.create(**kwargs)
    assert table.list_keys() == []


# Ids within the id limit whose encoded label is past the label limit ('.' and '%' are
# written as three characters), and one with a lone surrogate: every request with such a
# scope is refused, so no key may be made for it.
UNUSABLE_SCOPES = ["a." * 256, "%" * 200, "x" * 511 + ".", "agent\ud800"]


@pytest.mark.parametrize("scope", UNUSABLE_SCOPES, ids=["dots", "percents", "one-dot", "surrogate"])
def test_a_key_is_refused_for_a_scope_no_request_could_use(
    store: TieredMemoryStore, scope: str
) -> None:
    from fastapi.testclient import TestClient

    from langmem_tiers.server import create_app

    keys = ApiKeys(store.db)
    with pytest.raises(InvalidNamespaceError, match="could never be used"):
        keys.create(scope=scope)
    assert keys.list_keys() == []
    # The same scope through an admin key: the requests' own refusal (422).
    admin = keys.create(admin=True).key
    with TestClient(create_app(store)) as client:
        response = client.post(
            "/api/v1/memory/semantic",
            headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
            # ASCII JSON: a lone surrogate travels as its escape, as any client sends it.
            content=json.dumps({"content": "a fact", "agent_id": scope}).encode(),
        )
    assert response.status_code == 422


def test_a_scope_at_the_limits_gets_a_key_that_works(store: TieredMemoryStore) -> None:
    from fastapi.testclient import TestClient

    from langmem_tiers.server import create_app

    keys = ApiKeys(store.db)
    for scope in ("x" * 512, "%" * 170, "a." * 128):
        key = keys.create(scope=scope).key
        with TestClient(create_app(store)) as client:
            response = client.post(
                "/api/v1/memory/semantic",
                headers={"Authorization": f"Bearer {key}"},
                json={"content": "a fact"},
            )
        assert response.status_code == 201, response.text
