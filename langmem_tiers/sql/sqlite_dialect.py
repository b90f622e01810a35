"""SQLite's dialect (see :mod:`langmem_tiers.sql.dialect`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langmem_tiers.sql import json_paths

if TYPE_CHECKING:
    pass
from langmem_tiers.sql.dialect_base import Dialect

__all__ = ["SqliteDialect"]


class SqliteDialect(Dialect):
    """SQLite: JSON as text, timestamps as ISO-8601 text in UTC, vectors as float32 blobs."""

    name = "sqlite"
    # SQLite enforces foreign keys only on connections that ask (PRAGMA foreign_keys), and
    # no client asks by default: a plain DELETE FROM lmt_items leaves the item's vectors.
    orphans_possible = True
    counts_scope_changes = True

    in_process = True

    logs_item_changes = True

    counts_membership_changes = True

    def json_extract(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        return json_paths.sqlite_json_extract(path)

    def json_compare(self, path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
        return json_paths.sqlite_json_compare(path, op, operand)

    def json_is_number(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        return json_paths.sqlite_json_is_number(path)
