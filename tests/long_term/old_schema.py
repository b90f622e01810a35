"""The PostgreSQL store as it was while its terms were a table of their own.

Tests that build a database with an older schema, then open it with this package to see it
upgraded, write the old database with the writer of that time: these statements are what
it wrote terms with and read a search's postings from.
"""

from __future__ import annotations

import pytest

from langmem_tiers.sql.dialect import TERMS, PostgresDialect


def _insert_terms_sql(self: PostgresDialect) -> str:
    return (
        f"INSERT INTO {TERMS} (item_id, term, tf)"
        " SELECT a.key, t.key, t.value::int"
        " FROM json_each(?::json) AS a, json_each_text(a.value) AS t ORDER BY 1, 2"
    )


def _scope_postings_sql(self: PostgresDialect, term_set: str) -> str:
    return (
        "SELECT t.item_id, t.term, t.tf, c.doc_len FROM c CROSS JOIN LATERAL"
        f" (SELECT t.item_id, t.term, t.tf FROM {TERMS} t WHERE t.item_id = c.id"
        f" OFFSET 0) t WHERE t.term IN {term_set}"
    )


def write_terms_table(patch: pytest.MonkeyPatch) -> None:
    """Make PostgreSQL stores write and read the terms table, as before the terms view."""
    patch.setattr(PostgresDialect, "writes_terms_rows", True)
    patch.setattr(PostgresDialect, "insert_terms_sql", _insert_terms_sql)
    patch.setattr(PostgresDialect, "scope_postings_sql", _scope_postings_sql)
    patch.setattr(PostgresDialect, "postings_scope_columns", "i.id, i.doc_len")
