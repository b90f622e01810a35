"""PostgreSQL's dialect (see :mod:`langmem_tiers.sql.dialect`)."""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langmem_tiers.sql import json_paths
from langmem_tiers.sql.flow import BULK_MIN_ROWS, BinaryValue
from langmem_tiers.sql.tables import (
    EVENTS,
    ITEM_ACCESS,
    ITEM_COLUMN_TYPES,
    ITEMS,
    KEEP_ON_UPDATE,
    MEMBERSHIP_TIMES,
    SCOPE_CHANGES,
    SCOPE_MOVES,
    TERM_ROWS,
    UPDATE_COLUMN_TYPES,
    item_columns,
)

if TYPE_CHECKING:
    import numpy as np
from langmem_tiers.sql.dialect_base import Dialect

__all__ = ["PostgresDialect"]


def _as_is(text: str) -> str:
    return text


@functools.lru_cache(maxsize=16)
def _vector_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


# Advisory locks of item writes: the first key of the two-key form, and the buckets ids
# are hashed into, a power of two (see PostgresDialect.lock_items_sql).
_ITEM_LOCK_CLASS = 0x4C4D5401
_ITEM_LOCK_BUCKETS = 1024
# The same for the inserts of access counts (see PostgresDialect.add_accesses_sql).
_ACCESS_LOCK_CLASS = 0x4C4D5403
# ... and of named keys (lock_keys_sql).
_KEY_LOCK_CLASS = 0x4C4D5402


class PostgresDialect(Dialect):
    """PostgreSQL: JSONB values, TIMESTAMPTZ times, pgvector vectors."""

    name = "postgres"
    ts_type = "TIMESTAMPTZ"

    def json_param(self, value: Any) -> Any:
        from psycopg.types.json import Jsonb

        return Jsonb(value)

    def json_text_param(self, text: str) -> Any:
        from psycopg.types.json import Jsonb

        return Jsonb(text, dumps=_as_is)

    def array_param(self, values: Sequence[Any]) -> Any:
        return list(values)

    def ts_param(self, value: datetime | None) -> Any:
        return value

    def json_value(self, raw: Any) -> Any:
        return raw  # psycopg already decodes JSONB (a JSON string comes back as str)

    def vector_param(self, vector: Sequence[float]) -> Any:
        # pgvector keeps float4: nine significant digits round-trip one exactly, and one
        # %-format of the whole row is several times faster than a repr per element.
        return _vector_format(len(vector)) % tuple(vector)

    def vector_params(self, matrix: np.ndarray) -> list[Any]:
        # pgvector's binary form (dimensions, a reserved zero, big-endian float4s), loaded
        # by a binary COPY: formatting and parsing 256 numbers as text cost more than
        # everything else a put sends. Rows too few for a COPY go in INSERTs, as text of
        # their float4 values (exact in nine digits; a float8 could round differently).
        import numpy as np

        if len(matrix) < BULK_MIN_ROWS:
            return [self.vector_param(row) for row in matrix.astype(np.float32).tolist()]

        head = struct.pack("!hh", matrix.shape[1] if matrix.ndim == 2 else 0, 0)
        rows = np.ascontiguousarray(matrix, dtype=">f4")
        return [BinaryValue(head + row.tobytes()) for row in rows]

    def placeholder(self, column: str) -> str:
        return "?::vector" if column == "embedding" else "?"

    def expiry_sql(self) -> str:
        return "CAST(? AS TIMESTAMPTZ) + ttl_minutes * INTERVAL '1 minute'"

    def sync_serial_sql(self, table: str, column: str) -> str | None:
        return (
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
            f" GREATEST((SELECT max({column}) FROM {table}), 1))"
        )

    def defer_foreign_keys_sql(self) -> list[str]:
        # Foreign keys are created NOT DEFERRABLE: make those on the items deferrable
        # (still checked per statement unless deferred), then defer them.
        return [
            "DO $$ DECLARE c record; BEGIN FOR c IN SELECT conrelid::regclass AS t, conname"
            f" FROM pg_constraint WHERE contype = 'f' AND confrelid = '{ITEMS}'::regclass"
            " AND NOT condeferrable LOOP EXECUTE format('ALTER TABLE %s ALTER CONSTRAINT %I"
            " DEFERRABLE', c.t, c.conname); END LOOP; END $$",
            "SET CONSTRAINTS ALL DEFERRED",
        ]

    def table_exists_sql(self) -> str:
        return "SELECT to_regclass(?) IS NOT NULL"

    def column_exists_sql(self) -> str:
        return (
            "SELECT count(*) FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?"
        )

    def in_list(
        self, column: str, values: Sequence[Any], *, sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?::{sql_type}[])", [list(values)]

    def list_rows_sql(
        self, values: Sequence[Any], *, sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        return f"SELECT unnest(?::{sql_type}[])", [list(values)]

    def bytewise(self, expr: str) -> str:
        # The prefix columns are "C" already (the migration with legacy=12); saying it here
        # keeps the comparison right on any column and lets the planner use their indexes.
        return f'{expr} COLLATE "C"'

    def under_namespace_sql(self, column: str, prefix: str) -> tuple[str, list[str]]:
        # The same values as the base's condition, the ones between ``prefix`` and
        # ``prefix.`` left out by a NOT. The planner takes ``column = prefix`` and the range
        # as independent (a thousand rows of a namespace estimated as ten) and then counts
        # a search's members through the heap; estimated as the range they are counted in
        # the live index alone, in every warm search's check.
        c = self.bytewise(column)
        return (
            f"({c} >= ? AND {c} < ? AND NOT ({c} > ? AND {c} <= ?))",
            [prefix, prefix + "/", prefix, prefix + "."],
        )

    for_update = " FOR UPDATE"

    def add_accesses_sql(self) -> str | None:
        # Never waits for another transaction: a write transaction writes the counts
        # after its own rows, and a delete of items deletes their counts' rows, so
        # waiting could close a cycle. Counts another transaction holds are skipped; an
        # id with no count in the statement's snapshot is inserted only under its
        # bucket's advisory lock, taken without waiting, so it never meets an insert
        # still open (on a committed one it does nothing). The ids left out stay pending
        # (AccessBuffer.flush_flow).
        return (
            "WITH u AS (SELECT * FROM unnest(?::text[], ?::bigint[], ?::timestamptz[])"
            f" AS u(id, n, at)), taken AS (SELECT a.id FROM {ITEM_ACCESS} a JOIN u"
            " ON a.id = u.id ORDER BY a.id FOR UPDATE OF a SKIP LOCKED),"
            f" updated AS (UPDATE {ITEM_ACCESS} a SET access_count = a.access_count + u.n,"
            " last_accessed_at = u.at FROM u JOIN taken t ON t.id = u.id WHERE a.id = u.id"
            f" RETURNING a.id), added AS (INSERT INTO {ITEM_ACCESS} AS a"
            f" (id, access_count, last_accessed_at) SELECT u.id, u.n, u.at FROM u"
            f" JOIN {ITEMS} i ON i.id = u.id WHERE NOT EXISTS (SELECT 1 FROM {ITEM_ACCESS} o"
            f" WHERE o.id = u.id) AND pg_try_advisory_xact_lock({_ACCESS_LOCK_CLASS},"
            f" (hashtextextended(u.id, 11) & {_ITEM_LOCK_BUCKETS - 1})::int)"
            " ORDER BY u.id ON CONFLICT (id) DO NOTHING RETURNING a.id)"
            " SELECT id, false FROM updated UNION ALL SELECT id, true FROM added"
        )

    def update_items_sql(self, columns: Sequence[str]) -> str | None:
        # A statement a row cost the server a statement's work each (a decay of a scope
        # changes every memory in it).
        arrays = ", ".join(f"?::{UPDATE_COLUMN_TYPES[c]}[]" for c in columns)
        sets = ", ".join(f"{c} = u.{c}" for c in columns)
        return (
            f"UPDATE {ITEMS} i SET {sets} FROM unnest({arrays}, ?::text[])"
            f" AS u({', '.join(columns)}, id) WHERE i.id = u.id"
        )

    def analyze_sql(self, table: str) -> str | None:
        # Only one analysis at a time, the others skipped rather than queued: inside a
        # caller's transaction the table's lock is held to its end, and two such
        # transactions, each waiting for the other's rows next, would never end.
        return (
            f"DO $$ BEGIN IF pg_try_advisory_xact_lock({_ACCESS_LOCK_CLASS}, -1)"
            f" THEN ANALYZE {table}; END IF; END $$"
        )

    def estimated_rows_sql(self, table: str) -> str:
        return f"SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('{table}')"

    def not_indexed(self, expr: str) -> str:
        return expr

    def filter_only(self, expr: str) -> str:
        return f"({expr} || '')"

    def packed_sql(self, expr: str) -> str:
        return f"string_agg({expr}, chr(31))"

    def scope_postings_sql(self, term_set: str) -> str:
        return (
            "SELECT c.id, t.term, t.tf, c.doc_len FROM c"
            f" CROSS JOIN LATERAL {TERM_ROWS}(c.terms) AS t WHERE t.term IN {term_set}"
        )

    counts_scope_changes = True

    logs_item_changes = True

    def upsert_items_arrays_sql(self) -> str | None:
        # One statement: a statement per row cost a round trip's worth of work each.
        arrays = ", ".join(f"?::{ITEM_COLUMN_TYPES[c]}[]" for c in item_columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in item_columns if c not in KEEP_ON_UPDATE)
        return (
            f"INSERT INTO {ITEMS} ({', '.join(item_columns)}) SELECT * FROM unnest({arrays})"
            f" ON CONFLICT (id) DO UPDATE SET {updates}"
        )

    counts_membership_changes = True

    def next_time_sql(self, under: str, params: Sequence[Any], since: Any) -> tuple[str, list[Any]]:
        # One pass over the namespace's rows: a min() per time, each its own branch (as on
        # SQLite, where the live index holds every time), took far longer to plan than to
        # run, in every statement that reads a namespace.
        firsts = ", ".join(f"min(CASE WHEN i.{c} > ? THEN i.{c} END)" for c in MEMBERSHIP_TIMES)
        return (
            f"(SELECT least({firsts}) FROM {ITEMS} i WHERE {under})",
            [*(since for _ in MEMBERSHIP_TIMES), *params],
        )

    def folding_moves(self, update: str) -> str:
        # For statements that lock item rows and no counter (a TTL refresh): a counter
        # another transaction holds is skipped, never waited for, so the order writers
        # take locks in is not met from the other end. The update's own moves are logged
        # after its snapshot, for the next fold: without this, a namespace only ever read
        # would log a move per refreshed item per search, and its searches count the log.
        if not self.counts_membership_changes:
            return update
        return (
            f"WITH updated AS ({update} RETURNING prefix), taken AS (SELECT s.prefix FROM"
            f' {SCOPE_CHANGES} s WHERE s.prefix IN (SELECT prefix COLLATE "C" FROM updated)'
            " ORDER BY s.prefix FOR UPDATE SKIP LOCKED),"
            f" folded AS (DELETE FROM {SCOPE_MOVES} m USING taken t WHERE m.prefix = t.prefix"
            f" RETURNING m.prefix) {self._add_folded_sql()}"
        )

    @staticmethod
    def _add_folded_sql() -> str:
        # After a CTE ``folded`` of deleted log rows: their count added to each counter.
        return (
            f"UPDATE {SCOPE_CHANGES} s SET moves = s.moves + f.n"
            " FROM (SELECT prefix, count(*) AS n FROM folded GROUP BY prefix) f"
            " WHERE s.prefix = f.prefix"
        )

    def moves_sql(self, under: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        counted, counted_params = super().moves_sql(under, params)
        return (
            f"({counted} + (SELECT count(*) FROM {SCOPE_MOVES} WHERE {under}))",
            [*counted_params, *params],
        )

    def lock_scope_changes_sql(self) -> str | None:
        if self.counts_membership_changes:  # and folds the moves logged under them
            return f"SELECT {SCOPE_CHANGES}_take(?::text[])"
        return self._take_counters_sql("?::text[]")

    @staticmethod
    def _take_counters_sql(wanted: str) -> str:
        # Creates the counters not there yet, so that a first write of a namespace is
        # ordered too (two inserts of one new key wait for each other like row locks).
        return (
            f"INSERT INTO {SCOPE_CHANGES} AS s (prefix, changes)"
            f' SELECT p, 0 FROM (SELECT DISTINCT unnest({wanted}) COLLATE "C" AS p) x'
            " ORDER BY p ON CONFLICT (prefix) DO UPDATE SET changes = s.changes"
        )

    vector_dtype = ">f4"

    def vector_bytes_sql(self, column: str) -> str:
        # pgvector's binary form (vector_send: a 2-byte dimension count, 2 unused bytes,
        # then big-endian float4s) less its header, in the binary result format: the
        # bytes arrive as they are: no hex text to decode, no aggregate to build and no
        # vector text to parse, the ways this read was compared with.
        return f"substring(vector_send({column}) FROM 5)"

    def lock_keys_sql(self, *, shared: bool = False) -> str | None:
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        return (
            f"SELECT count({function}({_KEY_LOCK_CLASS}, hashtext(x)))"
            " FROM (SELECT DISTINCT unnest(?::text[]) AS x ORDER BY 1) AS names"
        )

    def created_events_sql(
        self, columns: Sequence[str], *, times: Sequence[str], floats: Sequence[str]
    ) -> str:
        # What events.snapshot() spells, spelled by the server: reading the rows back and
        # encoding their snapshots in Python cost about a quarter of a batch of puts.
        # Times as datetime.isoformat() writes them in the session's zone (no fraction
        # when it is zero); whole floats with their ".0", so they read back as floats.
        def field(column: str) -> str:
            c = f"i.{column}"
            if column in times:
                return (
                    f"to_char({c}, 'YYYY-MM-DD\"T\"HH24:MI:SS'"
                    f" || CASE WHEN date_part('microseconds', {c})::int % 1000000 = 0"
                    " THEN '' ELSE '.US' END || 'TZH:TZM')"
                )
            if column in floats:
                return f"CASE WHEN {c} = trunc({c}) THEN to_jsonb(trunc({c}::numeric, 1)) ELSE to_jsonb({c}) END"
            return c

        snapshot = ", ".join(f"'{column}', {field(column)}" for column in columns)
        return (
            f"INSERT INTO {EVENTS} (at, type, scope, kind, memory_id, prefix, key, before, after,"
            " metadata, correlation_id, actor)"
            f" SELECT CAST(? AS TIMESTAMPTZ), n.type, i.scope, i.kind, i.id, i.prefix, i.key, NULL,"
            f" jsonb_build_object({snapshot}), n.metadata, CAST(? AS TEXT), CAST(? AS TEXT)"
            f" FROM {ITEMS} i JOIN unnest(?::text[], ?::text[], ?::jsonb[]) WITH ORDINALITY"
            " AS n (id, type, metadata, ord) ON n.id = i.id WHERE i.id = ANY(?::text[])"
            " ORDER BY n.ord"
        )

    def lock_items_sql(self) -> str | None:
        # One lock per bucket of ids, not per id: a transaction holds at most
        # _ITEM_LOCK_BUCKETS advisory locks however large its batch (the server's lock
        # table has room for a few thousand), and two writers of one id always meet in
        # its bucket. Sorted, so two transactions locking overlapping sets cannot
        # deadlock; the two-key form keeps these locks apart from single-key ones.
        return (
            f"SELECT count(pg_advisory_xact_lock({_ITEM_LOCK_CLASS}, b))"
            f" FROM (SELECT DISTINCT (hashtextextended(x, 7) & {_ITEM_LOCK_BUCKETS - 1})::int"
            " AS b FROM unnest(?::text[]) AS x ORDER BY 1) AS buckets"
        )

    def json_extract(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        return json_paths.postgres_json_extract(path)

    def json_compare(self, path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
        return json_paths.postgres_json_compare(path, op, operand)

    def json_is_number(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        return json_paths.postgres_json_is_number(path)
