"""What every SQL dialect shares: the parameter adapters' defaults and the query builders
written once for both engines (see :mod:`langmem_tiers.sql.dialect`).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langmem_tiers.sql.tables import (
    EVENTS,
    ITEM_ACCESS,
    ITEMS,
    KEEP_ON_UPDATE,
    MEMBERSHIP_TIMES,
    SCOPE_CHANGES,
    item_columns,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Dialect", "compact_json", "packed_array"]


#: JSON text as the store writes it: compact, non-ASCII kept. One encoder made once
#: (``json.dumps`` with options builds a new one per call).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def packed_array(column: str) -> str:
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

    def array_param(self, values: Sequence[Any]) -> Any:
        """A list bound as one parameter (SQLite: JSON text read with ``json_each``)."""
        return compact_json(list(values))

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
    #: The database keeps :data:`SCOPE_CHANGES` (see ``long_term/store/search/migrations.py``),
    #: so a search may cache a namespace's terms and vectors in process.
    counts_scope_changes = False

    #: :data:`SCOPE_CHANGES` also counts, per namespace, the updates that may change which
    #: items a search selects (``moves``), so a search may reuse the members an earlier one
    #: read.
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
    #: the ``scope_changes`` component), so a cache behind reads the changed items alone.
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
            >>> from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect
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
            >>> from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect
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
            >>> from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect
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
            >>> from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect
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
            >>> from langmem_tiers.sql.dialect import PostgresDialect, SqliteDialect
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
    ) -> str:
        """A statement appending the ``memory.created`` events of items just written, their
        snapshots built by the database from the rows (``columns`` of the item, in order;
        ``times`` and ``floats`` among them need formatting as the Python snapshot does).

        Parameters: the events' time, correlation id and actor, then the items' ids, event
        types and metadata (JSON text) as three lists, the events written in that order,
        then the ids again (the rows are found by their index, not joined by a scan);
        the lists bound with :meth:`array_param`.
        """

        # What events.snapshot() spells: times as datetime.isoformat() writes the stored
        # UTC text (no fraction when it is zero); floats with 17 significant digits and
        # their ".0", so they read back as the same floats.
        def field(column: str) -> str:
            c = f"i.{column}"
            if column == "value":
                return f"json({c})"
            if column in times:
                return (
                    f"CASE WHEN substr({c}, 20, 7) = '.000000'"
                    f" THEN substr({c}, 1, 19) || substr({c}, 27) ELSE {c} END"
                )
            if column in floats:
                return f"json(printf('%!.17g', {c}))"
            return c

        snapshot = ", ".join(f"'{column}', {field(column)}" for column in columns)
        # Numbered parameters: the event types and metadata are read by position in the
        # lists (SQLite parses each list once per statement, not once per row).
        return (
            f"INSERT INTO {EVENTS} (at, type, scope, kind, memory_id, prefix, key, before, after,"
            " metadata, correlation_id, actor)"
            " SELECT ?1, json_extract(?5, '$[' || n.key || ']'), i.scope, i.kind, i.id,"
            f" i.prefix, i.key, NULL, json_object({snapshot}),"
            " json_extract(?6, '$[' || n.key || ']'), ?2, ?3"
            f" FROM json_each(?4) AS n JOIN {ITEMS} AS i ON i.id = n.value"
            " WHERE i.id IN (SELECT value FROM json_each(?7)) ORDER BY n.key"
        )

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
        packed terms unpacked (the terms table became a view of them, ``legacy=28``), the
        count read only for the terms asked for."""
        return (
            f"SELECT c.id, t.value, CAST(json_extract({packed_array('c.terms')},"
            " '$[' || (t.key + 1) || ']') AS INTEGER), c.doc_len"
            f" FROM c, json_each({packed_array('c.terms')}) AS t"
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
