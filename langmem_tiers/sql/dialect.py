"""The SQL dialects: parameter adapters and the query builders of SQLite and PostgreSQL.

SQL is written once with ``?`` placeholders; the PostgreSQL executor turns them into
``%s``. The two dialects differ in column types, JSON access, parameter adaptation and the
statements that let concurrent writers share a database, which live in the small
:class:`SqliteDialect` / :class:`PostgresDialect`. Values are always bound parameters; the
only identifiers built into SQL are the fixed table names (:mod:`langmem_tiers.sql.tables`,
re-exported here) and validated JSON paths (:mod:`langmem_tiers.sql.json_paths`). The
schema is not here: each component declares its migrations (:mod:`langmem_tiers.sql.migrations`).
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langmem_tiers.sql import json_paths
from langmem_tiers.sql.flow import BULK_MIN_ROWS, BinaryValue
from langmem_tiers.sql.tables import (
    ACCESS_COUNT_SQL,
    API_KEYS,
    CHANGES_KEPT,
    COUNTED_COLUMNS,
    ENTITIES,
    ENTITY_MENTIONS,
    EVENTS,
    ITEM_ACCESS,
    ITEM_CHANGES,
    ITEM_COLUMN_TYPES,
    ITEMS,
    KEEP_ON_UPDATE,
    LAST_ACCESSED_SQL,
    MEMBERSHIP_TIMES,
    META,
    PACKED_SEPARATOR,
    SCOPE_CHANGES,
    SCOPE_MOVES,
    STM_LEASES,
    STM_MESSAGES,
    STM_SESSIONS,
    TERM_ROWS,
    TERMS,
    UPDATE_COLUMN_TYPES,
    VECTORS,
    VERSIONS,
    item_columns,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ACCESS_COUNT_SQL",
    "API_KEYS",
    "CHANGES_KEPT",
    "COUNTED_COLUMNS",
    "ENTITIES",
    "ENTITY_MENTIONS",
    "EVENTS",
    "ITEMS",
    "ITEM_ACCESS",
    "ITEM_CHANGES",
    "ITEM_COLUMN_TYPES",
    "KEEP_ON_UPDATE",
    "LAST_ACCESSED_SQL",
    "MEMBERSHIP_TIMES",
    "META",
    "PACKED_SEPARATOR",
    "SCOPE_CHANGES",
    "SCOPE_MOVES",
    "STM_LEASES",
    "STM_MESSAGES",
    "STM_SESSIONS",
    "TERMS",
    "TERM_ROWS",
    "UPDATE_COLUMN_TYPES",
    "VECTORS",
    "VERSIONS",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "compact_json",
    "item_columns",
]


#: JSON text as the store writes it: compact, non-ASCII kept. One encoder made once
#: (``json.dumps`` with options builds a new one per call).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _as_is(text: str) -> str:
    return text


def _packed_array(column: str) -> str:
    """SQLite: a JSON array of the packed terms in ``column`` (``term``, count, ...)."""
    return f"('[\"' || replace({column}, char(31), '\",\"') || '\"]')"


class Dialect:
    """What differs between SQL engines, plus the query builders they share."""

    name: str = "sql"
    ts_type = "TEXT"
    #: Whether rows that reference an item (its vectors) may outlive it: another client
    #: deleted the item on a connection that does not enforce foreign keys. A writer then
    #: clears them before it writes a new item's.
    orphans_possible = False

    # -- parameter adaptation ------------------------------------------------------
    def json_param(self, value: Any) -> Any:
        return compact_json(value)

    def json_text_param(self, text: str) -> Any:
        """A JSON column's parameter from JSON text already encoded (not encoded again)."""
        return text

    def ts_param(self, value: datetime | None) -> Any:
        if value is None:
            return None
        return value.astimezone(timezone.utc).isoformat(timespec="microseconds")

    def ts_value(self, raw: Any) -> datetime | None:
        if raw is None:
            return None
        if isinstance(raw, datetime):
            return raw if raw.tzinfo else raw.replace(tzinfo=timezone.utc)
        return datetime.fromisoformat(str(raw))

    def json_value(self, raw: Any) -> Any:
        return json.loads(raw) if isinstance(raw, (str, bytes)) else raw

    def vector_param(self, vector: Sequence[float]) -> Any:
        return struct.pack(f"<{len(vector)}f", *vector)

    def vector_params(self, matrix: np.ndarray) -> list[Any]:
        """:meth:`vector_param` of each row of a 2-d array (the same values, batched)."""
        return [row.tobytes() for row in matrix.astype("<f4")]

    # -- JSON filters --------------------------------------------------------------
    def json_extract(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        """SQL that yields the value at ``path`` inside ``value``, comparable to params."""
        raise NotImplementedError

    def json_compare(self, path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
        """A WHERE clause comparing the value at ``path`` with ``operand``."""
        raise NotImplementedError

    def json_is_number(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        """A WHERE clause that holds when the value at ``path`` is a JSON number."""
        raise NotImplementedError

    # -- schema ----------------------------------------------------------------------
    #: The database keeps :data:`SCOPE_CHANGES` (see :meth:`scope_change_migration`), so a
    #: search may cache a namespace's terms and vectors in process.
    counts_scope_changes = False

    #: :data:`SCOPE_CHANGES` also counts, per namespace, the updates that may change which
    #: items a search selects (``moves``; see :meth:`membership_change_migration`), so a
    #: search may reuse the members an earlier one read.
    counts_membership_changes = False

    def next_time_sql(self, under: str, params: Sequence[Any], since: Any) -> tuple[str, list[Any]]:
        """A subquery: the earliest of the :data:`MEMBERSHIP_TIMES` after ``since`` (a
        parameter) of the items matching ``under`` (alias ``i``, bound to ``params``),
        NULL when there is none."""
        # One pass over the namespace's entries of the live index, which holds every time:
        # a branch per time read them once for each time.
        # Each row's earliest later time is the scalar min() of one value per time, '~'
        # (after every ISO-8601 text) standing for none, as SQLite's min() of a NULL is NULL.
        firsts = ", ".join(f"CASE WHEN i.{c} > ? THEN i.{c} ELSE '~' END" for c in MEMBERSHIP_TIMES)
        return (
            f"(SELECT nullif(min(min({firsts})), '~') FROM {ITEMS} i WHERE {under})",
            [*(since for _ in MEMBERSHIP_TIMES), *params],
        )

    def folding_moves(self, update: str) -> str:
        """``update`` (an UPDATE of items that may move them, with no RETURNING), made to
        also add the moves logged under the namespaces of the items it updates to their
        counters where it can without waiting (unchanged where moves are counted in
        place)."""
        return update

    def moves_sql(self, under: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        """An expression: the membership changes counted under the namespaces matching
        ``under`` (bound to ``params``; a condition on ``prefix``)."""
        return (
            f"(SELECT CAST(coalesce(sum(moves), 0) AS BIGINT) FROM {SCOPE_CHANGES} WHERE {under})",
            list(params),
        )

    #: The database logs the item of every change it counts (:data:`ITEM_CHANGES`; see
    #: :meth:`change_log_migration`), so a cache behind reads the changed items alone.
    logs_item_changes = False

    def lock_scope_changes_sql(self) -> str | None:
        """A statement taking the change counters of some namespaces (one ``?``: the list
        of joined namespaces) in one fixed order, before a write that may count in several.

        The counters are locked as the triggers count, until the transaction ends; where
        writers run concurrently, two writing the same namespaces in another order could
        otherwise each hold one counter the other waits for. Where moves are logged
        (PostgreSQL), the statement then adds the log of those namespaces to their
        counters. None where transactions are already serial.
        """
        return None

    #: The numpy dtype of the float32s :meth:`vector_bytes_sql` gives.
    vector_dtype = "<f4"

    def vector_bytes_sql(self, column: str) -> str:
        """An expression giving the vector in ``column`` (of :data:`VECTORS`) as the bytes of
        its float32s (:attr:`vector_dtype`), in a statement read with ``binary`` results."""
        return column

    #: Statements run in process, with no round trip to pay: a search that loads a
    #: namespace reads its candidates' rows in a statement of their own after ranking,
    #: instead of every member's row with the namespace (a table read per item that the
    #: load's index would otherwise answer alone).
    in_process = False

    def defer_foreign_keys_sql(self) -> list[str]:
        """Statements deferring foreign key checks to the end of the transaction."""
        return ["PRAGMA defer_foreign_keys = ON"]

    def table_exists_sql(self) -> str:
        """A query of one row whose value is true when the table named by ``?`` exists."""
        return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"

    def column_exists_sql(self) -> str:
        """A query of one row whose value is true when table ``?`` has column ``?``."""
        return "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?"

    def sync_serial_sql(self, table: str, column: str) -> str | None:
        """A statement moving the sequence of ``table``'s serial ``column`` past the largest
        value rows were inserted with (None: the engine does it as it inserts)."""
        return None

    # -- lists of values -------------------------------------------------------------------
    def in_list(
        self, column: str, values: Sequence[Any], *, sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        """``column IN values`` binding the whole list as ONE parameter.

        A placeholder per value fails past the engines' limits (65,535 parameters per
        PostgreSQL statement, 32,766 on SQLite), and chunking would change the meaning of
        a statement with ORDER BY, LIMIT or FOR UPDATE; so the list goes as one JSON
        array here, as a typed array on PostgreSQL. ``sql_type`` is the values' type.

        Example:
            >>> SqliteDialect().in_list("i.id", ["a", "b"])
            ('i.id IN (SELECT j.value FROM json_each(?) AS j)', ['["a","b"]'])
            >>> PostgresDialect().in_list("seq", [1, 2], sql_type="bigint")
            ('seq = ANY(?::bigint[])', [[1, 2]])
        """
        rows, params = self.list_rows_sql(values, sql_type=sql_type)
        return f"{column} IN ({rows})", params

    def list_rows_sql(
        self, values: Sequence[Any], *, sql_type: str = "text"
    ) -> tuple[str, list[Any]]:
        """A subquery whose rows are ``values``, bound as ONE parameter (see :meth:`in_list`),
        to join with other rows in one ``IN (... UNION ALL ...)``: an ``OR`` of two ``IN``
        conditions makes PostgreSQL's planner scan the whole table.

        Example:
            >>> SqliteDialect().list_rows_sql(["a", "b"])
            ('SELECT j.value FROM json_each(?) AS j', ['["a","b"]'])
            >>> PostgresDialect().list_rows_sql(["a"])
            ('SELECT unnest(?::text[])', [['a']])
        """
        return "SELECT j.value FROM json_each(?) AS j", [compact_json(list(values))]

    def not_indexed(self, expr: str) -> str:
        """``expr`` as the planner may not look it up in an index.

        SQLite without statistics prefers an index on an equality (a scope) over the id
        list or the covering index a statement is written for, and a unary ``+`` takes the
        column out of that choice.

        Example:
            >>> SqliteDialect().not_indexed("i.scope"), PostgresDialect().not_indexed("i.scope")
            ('+i.scope', 'i.scope')
        """
        return f"+{expr}"

    # -- byte order ------------------------------------------------------------------------
    def bytewise(self, expr: str) -> str:
        """``expr`` (text) compared in byte order, whatever the database's collation.

        SQLite compares text with memcmp (BINARY) unless a column says otherwise, which
        for UTF-8 is code point order.
        """
        return expr

    def filter_only(self, expr: str) -> str:
        """``expr`` (text) as no planner looks it up in an index, with or without
        statistics: for a condition on rows a statement finds another way (by id).

        Example:
            >>> SqliteDialect().filter_only("i.prefix"), PostgresDialect().filter_only("i.prefix")
            ('+i.prefix', "(i.prefix || '')")
        """
        return f"+{expr}"

    def under_namespace_sql(self, column: str, prefix: str) -> tuple[str, list[str]]:
        """A condition: the joined namespace in ``column`` is ``prefix`` or below it.

        Below means ``prefix``, a ``.``, then more labels. In byte order every such value
        lies strictly between ``prefix.`` and ``prefix/`` (``/`` follows ``.``) and no
        other does; a linguistic collation (ICU's, glibc's ``en_US``) ignores punctuation
        at first and would put ``alice@example.com`` or ``alice(evil)`` between
        ``alice.`` and ``alice/``, so the range is compared bytewise. The condition is
        one index range (from ``prefix`` to ``prefix/``) with the values between
        ``prefix`` and ``prefix.`` left out: an ``OR`` of the two ranges made the planner
        scan both and merge their rows (half the cost of listing a namespace).

        Example:
            >>> SqliteDialect().under_namespace_sql("prefix", "a")
            ('(prefix >= ? AND prefix < ? AND (prefix = ? OR prefix > ?))', ['a', 'a/', 'a', 'a.'])
            >>> PostgresDialect().under_namespace_sql("i.prefix", "a")[0]
            '(i.prefix COLLATE "C" >= ? AND i.prefix COLLATE "C" < ? AND NOT (i.prefix COLLATE "C" > ? AND i.prefix COLLATE "C" <= ?))'
        """
        c = self.bytewise(column)
        return (
            f"({c} >= ? AND {c} < ? AND ({column} = ? OR {c} > ?))",
            [prefix, prefix + "/", prefix, prefix + "."],
        )

    def created_events_sql(
        self, columns: Sequence[str], *, times: Sequence[str], floats: Sequence[str]
    ) -> str | None:
        """A statement appending the ``memory.created`` events of items just written, their
        snapshots built by the database from the rows (``columns`` of the item, in order;
        ``times`` and ``floats`` among them need formatting as the Python snapshot does).

        Parameters: the events' time, correlation id and actor, then the items' ids, event
        types and metadata (JSON text) as three lists, the events written in that order,
        then the ids again (the rows are found by their index, not joined by a scan).
        None where the snapshots are built in Python from the rows read back.
        """
        return None

    def lock_items_sql(self) -> str | None:
        """A statement taking transaction locks on item ids (one ``?``: the id list).

        None when transactions are already serial (SQLite's ``BEGIN IMMEDIATE``).
        """
        return None

    def add_accesses_sql(self) -> str | None:
        """A statement adding access counts to :data:`ITEM_ACCESS` for the items that
        exist, never waiting for a row another transaction holds, and returning the ids
        it counted, each with whether it was its first count (three ``?``: the ids, their
        counts and their last access times, as lists).

        None when transactions are already serial: :attr:`add_access_sql` for each item.
        """
        return None

    def update_items_sql(self, columns: Sequence[str]) -> str | None:
        """One statement setting ``columns`` of many items, each row its own values (one
        ``?`` per column and then one for the ids, each a list); None where one UPDATE an
        item costs no more (in process)."""
        return None

    def analyze_sql(self, table: str) -> str | None:
        """A statement refreshing the planner's statistics of ``table``; None where plans
        do not depend on them (SQLite keeps none unless asked to)."""
        return None

    def estimated_rows_sql(self, table: str) -> str:
        """A statement answering the planner's estimate of ``table``'s rows."""
        raise NotImplementedError(f"{self.name} keeps no estimate of a table's rows")

    #: Where transactions are serial, one item's access count added (``?``: the count,
    #: the time, the id); nothing for an item that no longer exists.
    add_access_sql = (
        f"INSERT INTO {ITEM_ACCESS} (id, access_count, last_accessed_at)"
        f" SELECT id, ?, ? FROM {ITEMS} WHERE id = ? ON CONFLICT (id) DO UPDATE SET"
        " access_count = access_count + excluded.access_count,"
        " last_accessed_at = excluded.last_accessed_at"
    )

    def lock_keys_sql(self, *, shared: bool = False) -> str | None:
        """A statement taking transaction locks on names (one ``?``: the list of names).

        For what has no row to lock yet (a fact about a subject nobody stated, a new
        procedural key). ``shared`` locks admit each other and exclude the exclusive lock
        of the same name. None when transactions are already serial.
        """
        return None

    #: Appended to a SELECT that reads rows the transaction will change: row locks where
    #: writers run concurrently (SQLite's write transaction already serialises them).
    for_update: str = ""

    def packed_sql(self, expr: str) -> str:
        """An aggregate of the text ``expr`` over a group's rows, joined by
        :data:`PACKED_SEPARATOR` (NULL for no rows): one value where thousands of rows
        would each cost a Python tuple."""
        return f"group_concat({expr}, char(31))"

    #: What CTE ``c`` of :meth:`scope_postings_sql` holds of each item of the set: the
    #: packed terms, unpacked in the statement from the rows the set was read from.
    postings_scope_columns = "i.id, i.doc_len, i.terms"

    def scope_postings_sql(self, term_set: str) -> str:
        """The terms (``t``) of the items of CTE ``c`` whose term is ``IN term_set`` (a
        list of values or a subquery), as ``(item_id, term, tf, doc_len)``: each item's
        packed terms unpacked (see :meth:`json_terms_view_migration`), the count read only
        for the terms asked for."""
        return (
            f"SELECT c.id, t.value, CAST(json_extract({_packed_array('c.terms')},"
            " '$[' || (t.key + 1) || ']') AS INTEGER), c.doc_len"
            f" FROM c, json_each({_packed_array('c.terms')}) AS t"
            f" WHERE t.key % 2 = 0 AND t.value IN {term_set}"
        )

    # -- statements --------------------------------------------------------------------
    def upsert_items_sql(self) -> str:
        cols = ", ".join(item_columns)
        marks = ", ".join(self.placeholder(c) for c in item_columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in item_columns if c not in KEEP_ON_UPDATE)
        return (
            f"INSERT INTO {ITEMS} ({cols}) VALUES ({marks}) "
            # The id is derived from (prefix, key), so it is the one arbiter both conflicts share.
            f"ON CONFLICT (id) DO UPDATE SET {updates}"
        )

    def upsert_items_arrays_sql(self) -> str | None:
        """:meth:`upsert_items_sql` for many rows in one statement, each column bound as one
        array (``item_columns`` order), rows written in array order; None where the rows
        go a statement each."""
        return None

    def placeholder(self, column: str) -> str:
        return "?"

    def expiry_sql(self) -> str:
        """``now + ttl_minutes`` of an item row, as :meth:`ts_param` would write it (one ``?``: now).

        SQLite keeps timestamps as ISO-8601 text, compared as text: the millisecond
        strftime output is padded to the microseconds and offset that ts_param writes.
        """
        return (
            "strftime('%Y-%m-%dT%H:%M:%f', ?, '+' || (ttl_minutes * 60.0) || ' seconds')"
            " || '000+00:00'"
        )

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


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
        # The prefix columns are "C" already (byte_order_migration); saying it here keeps the
        # comparison right on any column and lets the planner use those columns' indexes.
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
    ) -> str | None:
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
