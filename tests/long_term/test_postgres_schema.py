"""A PostgreSQL URL that puts the store in a schema of its own (``search_path``).

Against the real server, in a throwaway database with pgvector in ``public``, as a new
user's database is: a missing schema and a path without pgvector's schema each fail with
a hint; the documented URL works and keeps the tables in the schema.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from langmem_tiers import TieredMemoryStore, namespace_for
from langmem_tiers.errors import BackendError
from tests.conftest import POSTGRES_URL, _postgres_or_skip, _with_database


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A throwaway database with pgvector created in ``public`` (dropped after)."""
    _postgres_or_skip()
    import psycopg

    name = f"lmt_schema_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = _with_database(POSTGRES_URL, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _in_schema(database: str, search_path: str) -> str:
    return f"{database}?options={quote(f'-c search_path={search_path}')}"


def _create_schema(database: str) -> str:
    import psycopg

    schema = f"s_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema


def test_a_schema_that_does_not_exist_says_to_create_it(database: str) -> None:
    url = _in_schema(database, "no_such_schema")
    match = r"InvalidSchemaName(?s:.*)Hint: .*CREATE SCHEMA"
    with pytest.raises(BackendError, match=match), TieredMemoryStore.from_url(url):
        pass


async def test_a_path_without_pgvector_s_schema_says_to_keep_it(database: str) -> None:
    url = _in_schema(database, _create_schema(database))
    match = r'type "vector" does not exist(?s:.*)Hint: .*search_path%3Dmyschema,public'
    with pytest.raises(BackendError, match=match), TieredMemoryStore.from_url(url):
        pass
    with pytest.raises(BackendError, match=match):
        async with TieredMemoryStore.afrom_url(url):
            pass


def test_the_documented_url_keeps_the_store_in_the_schema(database: str) -> None:
    import psycopg

    schema = _create_schema(database)
    url = f"{database}?options=-c%20search_path%3D{schema},public"  # as the README writes it
    with TieredMemoryStore.from_url(url) as store:
        store.put(namespace_for("alice", "semantic"), "k", {"content": "Alice prefers green tea"})
        assert store.search(namespace_for("alice", "semantic"), query="tea")[0].key == "k"
    with psycopg.connect(database) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name LIKE 'lmt_%'"
            )
        }
    assert tables == {schema}
