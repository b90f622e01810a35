"""Shared fixtures: throwaway databases and the sync/async twin driver.

PostgreSQL tests use ``LANGMEM_TIERS_TEST_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``). Each test gets its own schema, dropped
afterwards. Without a reachable server the tests skip, except with ``CI=true``, where
they fail: CI must prove the PostgreSQL path.
"""

from __future__ import annotations

import inspect
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
POSTGRES_URL = os.environ.get("LANGMEM_TIERS_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

_postgres_problem: str | None = None
_postgres_checked = False


def _check_postgres() -> str | None:
    """Why PostgreSQL with pgvector cannot be used, or None when it can."""
    global _postgres_checked, _postgres_problem
    if _postgres_checked:
        return _postgres_problem
    _postgres_checked = True
    try:
        import psycopg
    except ImportError:
        _postgres_problem = "psycopg is not installed (pip install -e '.[test]')"
        return _postgres_problem
    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as err:  # any failure means: not usable here
        _postgres_problem = f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"
    return _postgres_problem


def _postgres_or_skip() -> None:
    """Fail (under CI) or skip the test when PostgreSQL with pgvector is not usable."""
    problem = _check_postgres()
    if problem is not None:
        message = (
            f"PostgreSQL with pgvector is not reachable at {POSTGRES_URL} ({problem}). "
            "Start PostgreSQL, run scripts/install_pgvector.sh, or set "
            "LANGMEM_TIERS_TEST_POSTGRES_URL to enable these tests."
        )
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def _with_database(url: str, database: str) -> str:
    """``url`` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


@contextmanager
def _schema_factory(base_url: str) -> Iterator[Callable[[], str]]:
    """Hands out URLs of fresh schemas of the database at ``base_url``; drops them after."""
    import psycopg

    schemas: list[str] = []

    def new_schema_url() -> str:
        schema = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        schemas.append(schema)
        separator = "&" if "?" in base_url else "?"
        return f"{base_url}{separator}options={quote(f'-c search_path={schema},public')}"

    try:
        yield new_schema_url
    finally:
        if schemas:
            with psycopg.connect(base_url, autocommit=True) as conn:
                for schema in schemas:
                    conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def postgres_schemas() -> Iterator[Callable[[], str]]:
    """A factory of URLs, each with its own fresh schema; all dropped after the test."""
    _postgres_or_skip()
    with _schema_factory(POSTGRES_URL) as factory:
        yield factory


@pytest.fixture
def postgres_url(postgres_schemas: Callable[[], str]) -> str:
    """A URL whose search_path points at a fresh schema, dropped after the test."""
    return postgres_schemas()


# A database whose default collation is ICU's en-US: there '(' and '@' sort between '.'
# and '/', so any comparison that assumes byte order shows up as a cross-scope leak.
ICU_DATABASE_SQL = (
    "CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'"
    " LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"
)


@pytest.fixture(scope="session")
def postgres_icu_database() -> Iterator[str]:
    """The URL of a database created with an ICU collation for this session (then dropped).

    Fails under ``CI=true`` when it cannot be created: CI must prove that nothing relies
    on the byte order of the server's default collation.
    """
    _postgres_or_skip()
    import psycopg

    name = f"lmt_icu_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(ICU_DATABASE_SQL.format(name=name))
        url = _with_database(POSTGRES_URL, name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as err:
        message = f"cannot create a database with an ICU collation ({type(err).__name__}: {err})"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield url
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_icu_schemas(postgres_icu_database: str) -> Iterator[Callable[[], str]]:
    """Like :func:`postgres_schemas`, in the session's ICU-collated database."""
    with _schema_factory(postgres_icu_database) as factory:
        yield factory


@pytest.fixture
def postgres_icu_url(postgres_icu_schemas: Callable[[], str]) -> str:
    """A fresh schema of the ICU-collated database."""
    return postgres_icu_schemas()


@pytest.fixture(autouse=True)
def _isolated_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing a test does touches the user's data directory or reads their settings."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.chdir(home)  # no .env of the developer's is read
    for name in list(os.environ):
        if name.startswith("LANGMEM_TIERS_") and name != "LANGMEM_TIERS_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    for name in ("MEMORY_WINDOW_LIMIT", "SHORT_TERM_MEMORY_LIMIT", "MEM0_ENABLED"):
        monkeypatch.delenv(name, raising=False)


class Twin:
    """Calls the sync or the async twin of every method, so one test covers both.

    ``await twin.put(...)`` runs ``obj.put(...)`` in sync mode and ``await obj.aput(...)``
    in async mode. Attributes that are not methods pass through.
    """

    def __init__(self, obj: Any, mode: str) -> None:
        self.obj = obj
        self.mode = mode

    def __getattr__(self, name: str) -> Any:
        sync_attr = getattr(self.obj, name)
        if not callable(sync_attr):
            return sync_attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.mode == "async":
                result = getattr(self.obj, "a" + name)(*args, **kwargs)
                assert inspect.isawaitable(result), f"a{name} must be a coroutine"
                return await result
            return sync_attr(*args, **kwargs)

        return call


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    """Run the test once through the sync API and once through the async twin."""
    return str(request.param)


@pytest.fixture
def twin_of(mode: str) -> Callable[[Any], Twin]:
    """Wraps an object so each call goes to its sync method or its async twin."""
    return lambda obj: Twin(obj, mode)
