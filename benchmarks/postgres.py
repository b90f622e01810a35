"""PostgreSQL for the benchmarks: whether it can be used, and a throwaway schema per run.

Every benchmark that measures on PostgreSQL (a server with pgvector) asks
:func:`postgres_problem` first, reports the system as skipped with the reason when there
is one, and measures in a :func:`temporary_schema` so runs never see each other's tables.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_POSTGRES_URL",
    "postgres_problem",
    "temporary_schema",
    "vacuum_analyze_schema",
]

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_problem(url: str) -> str | None:
    """Why PostgreSQL with pgvector cannot be used at ``url``, or None when it can."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[bench]')"
    try:
        with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as err:  # any failure means: not usable here
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0]}"
    return None


def _with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-c search_path={schema},public"))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def vacuum_analyze_schema(url: str) -> None:
    """VACUUM ANALYZE the tables of the first schema on ``url``'s search path: what
    autovacuum does after a bulk load (statistics, and the visibility map that lets index-only
    scans skip the table), done at once so every system is measured settled."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'VACUUM ANALYZE "{table}"')


@contextmanager
def temporary_schema(url: str) -> Iterator[str]:
    """A URL whose ``search_path`` is a new schema ``bench_<uuid>``, dropped on exit.

    Example::

        with temporary_schema("postgresql://postgres@127.0.0.1:5432/test") as schema_url:
            ...  # tables created through schema_url live in the new schema
    """
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _with_search_path(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
