"""SQL for the long-term store: schema migrations and the query builders of each dialect.

SQL is written once with ``?`` placeholders; the PostgreSQL executor turns them into
``%s``. The two dialects differ only in column types, JSON access and parameter
adaptation, which live in the small :class:`SqliteDialect` / :class:`PostgresDialect`.
Values are always bound parameters; the only identifiers built into SQL are the fixed
table names below and validated JSON paths.
"""

from __future__ import annotations

import functools
import json
import math
import struct
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langmem_tiers.sql.flow import BULK_MIN_ROWS, BinaryValue, Flow, Sql

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ACCESS_COUNT_SQL",
    "COUNTED_COLUMNS",
    "ITEM_ACCESS",
    "LAST_ACCESSED_SQL",
    "Dialect",
    "PostgresDialect",
    "SqliteDialect",
    "compact_json",
    "item_columns",
]

ITEMS = "lmt_items"
TERMS = "lmt_terms"
#: What joins values packed into one text (:meth:`Dialect.packed_sql`): item ids are UUIDs,
#: and the analyzer's terms are letters, digits, marks and apostrophes, never a control
#: character.
PACKED_SEPARATOR = "\x1f"
#: PostgreSQL: the function that unpacks an item's packed terms into (term, tf) rows.
TERM_ROWS = "lmt_term_rows"
VECTORS = "lmt_vectors"
#: Each item's access count and last access, apart from its row (see
#: :meth:`Dialect.item_access_migration`); read through :data:`ACCESS_COUNT_SQL` and
#: :data:`LAST_ACCESSED_SQL`.
ITEM_ACCESS = "lmt_item_access"
#: The access count of the item of alias ``i`` (0 for one never returned by a search).
ACCESS_COUNT_SQL = f"coalesce((SELECT a.access_count FROM {ITEM_ACCESS} a WHERE a.id = i.id), 0)"
#: The last access of the item of alias ``i`` (NULL for one never returned by a search).
LAST_ACCESSED_SQL = f"(SELECT a.last_accessed_at FROM {ITEM_ACCESS} a WHERE a.id = i.id)"
META = "lmt_meta"
MIGRATIONS = "lmt_migrations"
STM_SESSIONS = "lmt_stm_sessions"
STM_MESSAGES = "lmt_stm_messages"
STM_LEASES = "lmt_stm_leases"
EVENTS = "lmt_events"
API_KEYS = "lmt_api_keys"
VERSIONS = "lmt_versions"
SCOPE_CHANGES = "lmt_scope_changes"
#: PostgreSQL: one row per counted move not yet added to :data:`SCOPE_CHANGES` (see
#: ``PostgresDialect.membership_change_upgrade_migration``).
SCOPE_MOVES = "lmt_scope_moves"
#: One row per counted change of an item: its namespace, the counter value the change
#: brought the namespace's count to, and the item (see :meth:`Dialect.change_log_migration`).
ITEM_CHANGES = "lmt_item_changes"
#: The entities of each scope its memories name, and which memory names which (see
#: :mod:`langmem_tiers.long_term.engine.entities`).
ENTITIES = "lmt_entities"
ENTITY_MENTIONS = "lmt_entity_mentions"
#: A namespace's log keeps at least its last this many changes (and fewer than twice as
#: many): a cache further behind reads the namespace again.
CHANGES_KEPT = 1024
#: The item times a search compares with its instants (validity, existence, expiry).
MEMBERSHIP_TIMES = ("valid_from", "valid_until", "expires_at", "event_at", "created_at")

MigrationStep = str | Callable[["Dialect"], Flow[Any]]
"""One step of a migration: a statement, or a flow for what SQL alone cannot do."""


def add_column_flow(dialect: Dialect, table: str, column: str, definition: str) -> Flow[None]:
    """Add ``column`` to ``table`` unless it is there (a migration run again after its
    record was lost must not fail)."""
    rows = yield Sql(dialect.column_exists_sql(), [table, column])
    if not rows[0][0]:
        yield Sql(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


def _scope_moves_column(dialect: Dialect) -> Flow[None]:
    yield from add_column_flow(dialect, SCOPE_CHANGES, "moves", "BIGINT NOT NULL DEFAULT 0")


# Columns filled from a memory's value (see records.py), in insert order.
item_columns: tuple[str, ...] = (
    "id",
    "prefix",
    "key",
    "scope",
    "kind",
    "value",
    "created_at",
    "updated_at",
    "event_at",
    "session_id",
    "actor",
    "action_type",
    "subject",
    "category",
    "valid_from",
    "valid_until",
    "proc_key",
    "confidence",
    "importance",
    "status",
    "doc_len",
    "terms",
    "expires_at",
    "ttl_minutes",
)

# PostgreSQL's types of item_columns, for binding each as an array.
_ITEM_COLUMN_TYPES: dict[str, str] = {
    **dict.fromkeys(item_columns, "text"),
    "value": "jsonb",
    **dict.fromkeys(
        ("created_at", "updated_at", "event_at", "valid_from", "valid_until", "expires_at"),
        "timestamptz",
    ),
    **dict.fromkeys(("confidence", "importance", "ttl_minutes"), "float8"),
    "doc_len": "int4",
}

# PostgreSQL's types of the columns a change of a stored memory sets (update_items_sql).
_UPDATE_COLUMN_TYPES: dict[str, str] = {
    **_ITEM_COLUMN_TYPES,
    "last_used_at": "timestamptz",
    "version": "int4",
    "reinforcement_count": "int4",
    "consolidated_into_id": "text",
}

# The columns whose change counts as a change of an item's namespace on update (what a
# search keeps of a namespace depends on them; a put always sets updated_at).
_COUNTED_ON_UPDATE = ("prefix", "value", "doc_len", "terms", "updated_at")
#: The columns whose new value a namespace's change counter counts (so a writer setting
#: them takes the counters first, in one order).
COUNTED_COLUMNS = frozenset({"prefix", "value", "doc_len", "terms"})

# Columns an update must not overwrite: creation time and usage statistics.
_KEEP_ON_UPDATE = {"id", "prefix", "key", "created_at"}


#: JSON text as the store writes it: compact, non-ASCII kept. One encoder made once
#: (``json.dumps`` with options builds a new one per call).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _changed_values(*columns: str, distinct: str = "IS DISTINCT FROM") -> str:
    """A trigger's condition: one of ``columns`` has another value in NEW than in OLD
    (NULLs equal to each other: ``distinct`` is the operator that says so)."""
    return " OR ".join(f"OLD.{c} {distinct} NEW.{c}" for c in columns)


def _as_is(text: str) -> str:
    return text


def _packed_array(column: str) -> str:
    """SQLite: a JSON array of the packed terms in ``column`` (``term``, count, ...)."""
    return f"('[\"' || replace({column}, char(31), '\",\"') || '\"]')"


class Dialect:
    """What differs between SQL engines, plus the query builders they share."""

    name: str = "sql"
    json_type = "TEXT"
    ts_type = "TEXT"
    serial_key = "INTEGER PRIMARY KEY AUTOINCREMENT"
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
    #: The database keeps :data:`SCOPE_CHANGES` (see :meth:`scope_change_migration`), so a
    #: search may cache a namespace's terms and vectors in process.
    counts_scope_changes = False

    def scope_change_migration(self) -> list[MigrationStep]:
        """Statements that keep a change counter per namespace (none: no counter)."""
        return []

    #: :data:`SCOPE_CHANGES` also counts, per namespace, the updates that may change which
    #: items a search selects (``moves``; see :meth:`membership_change_migration`), so a
    #: search may reuse the members an earlier one read.
    counts_membership_changes = False

    def membership_change_migration(self) -> list[MigrationStep]:
        """Statements that count membership changes per namespace (none: not counted)."""
        return []

    def membership_change_upgrade_migration(self) -> list[MigrationStep]:
        """Statements that count membership changes on a database whose dialect did not
        count them then (none: SQLite has since :meth:`membership_change_migration`)."""
        return []

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

    def scope_change_upgrade_migration(self) -> list[MigrationStep]:
        """Statements that add :meth:`scope_change_migration`'s counter to a database whose
        dialect did not keep one then (none: SQLite has kept it since that migration)."""
        return []

    #: The database logs the item of every change it counts (:data:`ITEM_CHANGES`; see
    #: :meth:`change_log_migration`), so a cache behind reads the changed items alone.
    logs_item_changes = False

    def change_log_migration(self) -> list[MigrationStep]:
        """Statements that log, with every change the counters count, the item it changed
        (:data:`ITEM_CHANGES`), so a cache a few changes behind reads those items alone.

        Each count of one is one log row, numbered by the count it brought its namespace
        to: a namespace whose counter moved from ``a`` to ``b`` has ``b - a`` rows numbered
        above ``a`` while its log still holds them. The log is cut back to the last
        :data:`CHANGES_KEPT` changes each time a namespace's count reaches a multiple of it,
        so a reader finding fewer rows than the counter moved knows it is too far behind.
        None where changes are not counted.
        """
        return []

    def update_count_per_statement_migration(self) -> list[MigrationStep]:
        """Statements that count an update's changes once per statement, not per row,
        where a row trigger updated the counter per row (none: SQLite's row triggers
        count in place)."""
        return []

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

    def live_items_index_migration(self) -> list[MigrationStep]:
        """Statements for an index that answers which items of a namespace a search may
        return (status, validity, expiry; the engine also asks for scope and kind) and their
        lengths: with every column read in the index, one range of one index instead of a
        table row per item."""
        return [
            f"CREATE INDEX IF NOT EXISTS {ITEMS}_live ON {ITEMS} (prefix, status, id,"
            " valid_from, valid_until, expires_at, doc_len, scope, kind)"
        ]

    def postings_index_migration(self) -> list[MigrationStep]:
        """Statements for an index of the terms by term (none where a search reads each
        item's terms, see :meth:`scope_postings_sql`)."""
        return []

    def namespace_load_index_migration(self) -> list[MigrationStep]:
        """Statements that let one index answer what a search reads of every item when it
        loads a namespace (terms, lengths, kinds, the times it compares), where the load
        reads an index alone (none: it reads the table)."""
        return []

    def membership_times_index_migration(self) -> list[MigrationStep]:
        """Statements that put every time a search's members change at
        (:data:`MEMBERSHIP_TIMES`) in the live index, so the next such time of a namespace
        (:meth:`next_time_sql`) is read from the index alone (none where
        :meth:`namespace_load_index_migration` did)."""
        return []

    #: Statements run in process, with no round trip to pay: a search that loads a
    #: namespace reads its candidates' rows in a statement of their own after ranking,
    #: instead of every member's row with the namespace (a table read per item that the
    #: load's index would otherwise answer alone).
    in_process = False

    def terms_view_migration(self) -> list[MigrationStep]:
        """Statements replacing the terms table by a view of the items' packed terms, where
        the database unpacks them with a function of its own (PostgreSQL; none here, see
        :meth:`json_terms_view_migration`)."""
        return []

    def json_terms_view_migration(self) -> list[MigrationStep]:
        """Statements replacing the terms table by a view of the items' packed terms that
        JSON functions unpack, so a put writes its terms once (the packed ``terms`` column
        of the item), and statements of a process of an earlier release that still writes
        or deletes terms rows change nothing (none where :meth:`terms_view_migration` did).

        Each separator becomes an array's element boundary: terms hold no quote,
        backslash or control character (see ``bm25.analyze``). Every term row cost a put
        two B-tree inserts, about a quarter of its time.
        """
        return [
            f"DROP TABLE IF EXISTS {TERMS}",
            f"CREATE VIEW {TERMS} AS SELECT i.id AS item_id, t.value AS term,"
            f" CAST(json_extract({_packed_array('i.terms')}, '$[' || (t.key + 1) || ']')"
            " AS INTEGER) AS tf"
            f" FROM {ITEMS} i, json_each({_packed_array('i.terms')}) AS t WHERE t.key % 2 = 0",
            *(
                f"CREATE TRIGGER {TERMS}_{event.lower()}_ignored INSTEAD OF {event} ON {TERMS}"
                " BEGIN SELECT 1; END"
                for event in ("INSERT", "UPDATE", "DELETE")
            ),
        ]

    def terms_cascade_migration(self) -> list[MigrationStep]:
        """Statements replacing the terms' foreign key by a delete of an item's terms with
        the item (none: SQLite checks a key in process, for less than a trigger would cost)."""
        return []

    def terms_key_migration(self) -> list[MigrationStep]:
        """Statements re-keying the terms table on (item_id, term), with no second index
        (idempotent: running them again on a re-keyed table changes nothing).

        SQLite cannot change a primary key in place: the table is rebuilt WITHOUT ROWID,
        so the key is the table (tf is stored in the key's B-tree, read without a look-up).
        """
        return [
            f"DROP TABLE IF EXISTS {TERMS}_by_item",
            f"""CREATE TABLE {TERMS}_by_item (
                item_id TEXT NOT NULL REFERENCES {ITEMS} (id) ON DELETE CASCADE,
                term TEXT NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (item_id, term)
            ) WITHOUT ROWID""",
            f"INSERT INTO {TERMS}_by_item (item_id, term, tf)"
            f" SELECT item_id, term, tf FROM {TERMS} ORDER BY item_id, term",
            f"DROP TABLE {TERMS}",
            f"ALTER TABLE {TERMS}_by_item RENAME TO {TERMS}",
        ]

    def summaries_view_sql(self) -> str:
        """``long_term_memories``: one row per summary of a conversation (read-only).

        What the seed systems kept in a table of that name: the session, the summary, its
        key concepts and the range of messages it covers. Rows of summaries written before
        the ``session_id`` column was filled for them take it from the value.
        """
        return _SUMMARIES_VIEW.format(
            session=(
                "CASE WHEN json_type(i.value, '$.session_id') = 'text'"
                " THEN json_extract(i.value, '$.session_id') END"
            ),
            summary="json_extract(i.value, '$.content')",
            concepts="json_extract(i.value, '$.key_concepts')",
            first_id="json_extract(i.value, '$.source_message_ids[0]')",
            last_id="json_extract(i.value, '$.source_message_ids[#-1]')",
            count="json_array_length(i.value, '$.source_message_ids')",
            first_at="json_extract(i.value, '$.first_message_at')",
            last_at="json_extract(i.value, '$.last_message_at')",
        )

    def defer_foreign_keys_sql(self) -> list[str]:
        """Statements deferring foreign key checks to the end of the transaction."""
        return ["PRAGMA defer_foreign_keys = ON"]

    def table_exists_sql(self) -> str:
        """A query of one row whose value is true when the table named by ``?`` exists."""
        return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"

    def column_exists_sql(self) -> str:
        """A query of one row whose value is true when table ``?`` has column ``?``."""
        return "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?"

    def byte_order_migration(self) -> list[MigrationStep]:
        """Statements giving the namespace columns byte-order comparison (none on SQLite)."""
        return []

    def migration_lock_sql(self) -> str | None:
        """A statement that serialises concurrent migrations (None: the engine already does)."""
        return None

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

    def item_access_migration(self) -> list[MigrationStep]:
        """The access counts in :data:`ITEM_ACCESS`, copied from the items' rows.

        Counting a search's results rewrote whole item rows (on PostgreSQL each a new
        version of a wide row, which the next searches read); a row of an id,
        a count and a time is written instead. A deleted item's row goes with it. The
        items' columns stay for processes of an earlier release, which read and count
        there until they are upgraded; nothing of this one reads them.
        """
        return [
            f"CREATE TABLE IF NOT EXISTS {ITEM_ACCESS} (id TEXT PRIMARY KEY,"
            f" access_count BIGINT NOT NULL, last_accessed_at {self.ts_type})"
            f"{self.keyed_table_options}",
            f"INSERT INTO {ITEM_ACCESS} (id, access_count, last_accessed_at)"
            f" SELECT id, access_count, last_accessed_at FROM {ITEMS}"
            " WHERE access_count > 0 OR last_accessed_at IS NOT NULL ON CONFLICT (id) DO NOTHING",
            *self.forget_access_sql(),
        ]

    #: Appended to a table whose rows are found by their primary key alone.
    keyed_table_options = ""

    def forget_access_sql(self) -> list[str]:
        """Statements making a delete of items delete their :data:`ITEM_ACCESS` rows."""
        return [
            f"CREATE TRIGGER IF NOT EXISTS {ITEM_ACCESS}_forget AFTER DELETE ON {ITEMS}"
            f" BEGIN DELETE FROM {ITEM_ACCESS} WHERE id = OLD.id; END"
        ]

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

    def packed_terms_sql(self, item: str) -> str:
        """An expression of the terms of item ``item`` (an id column) as one text:
        ``term``, ``tf``, ``term``, ``tf``... joined by :data:`PACKED_SEPARATOR`."""
        return (
            f"(SELECT {self.packed_sql(f't.term || {self.packed_separator_sql} || t.tf')}"
            f" FROM {TERMS} t WHERE t.item_id = {item})"
        )

    packed_separator_sql = "char(31)"

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

    def vector_migrations(self, dims: int) -> list[str]:
        """Statements that create the vector table for ``dims``-dimensional vectors."""
        return [
            f"""CREATE TABLE {VECTORS} (
                item_id TEXT NOT NULL REFERENCES {ITEMS} (id) ON DELETE CASCADE,
                field TEXT NOT NULL,
                prefix TEXT NOT NULL,
                embedding BLOB NOT NULL,
                PRIMARY KEY (item_id, field)
            )""",
            f"CREATE INDEX {VECTORS}_prefix ON {VECTORS} (prefix)",
        ]

    # -- statements --------------------------------------------------------------------
    def upsert_items_sql(self) -> str:
        cols = ", ".join(item_columns)
        marks = ", ".join(self.placeholder(c) for c in item_columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in item_columns if c not in _KEEP_ON_UPDATE)
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

    def create_migrations_table(self) -> str:
        return (
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS} "
            f"(version INTEGER PRIMARY KEY, applied_at {self.ts_type} NOT NULL)"
        )

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


def _sqlite_path(path: Sequence[str]) -> str:
    return "$" + "".join('."' + p.replace("\\", "\\\\").replace('"', '\\"') + '"' for p in path)


def _path_can_spell(key: str) -> bool:
    """Whether a JSON path label matches ``key`` literally on every SQLite version.

    A quoted label ends at the first ``"`` whatever precedes it, and before 3.45 a label
    is compared with the key's escaped JSON text, so a control character (stored as
    ``\\t``, ``\\u001f``...) never matches; json_each compares decoded keys instead.
    """
    return '"' not in key and all(c >= " " for c in key)


def _sqlite_lookup(path: Sequence[str]) -> tuple[str, str, list[Any]]:
    """SQL for the value at ``path`` and for its JSON type; both take the same params.

    Keys a path can spell keep json_extract/json_type; a key it cannot is found by its
    decoded text in json_each, and the keys after it are looked up in what that yields.
    The document is passed to json_each through a subquery in FROM: an unqualified
    ``value`` in a table function's arguments would name json_each's own column.
    """
    doc, params = "value", []
    start = 0
    for i, key in enumerate(path):
        if _path_can_spell(key):
            continue
        params.extend([_sqlite_path(path[start:i]), key])
        member = f"FROM (SELECT {doc} AS doc) AS d, json_each(d.doc, ?) AS e WHERE e.key = ?"
        if i == len(path) - 1:
            return f"(SELECT e.value {member})", f"(SELECT e.type {member})", params
        # Only an object has keys to descend into; any other value has none (NULL).
        doc = f"(SELECT e.value {member} AND e.type = 'object')"
        start = i + 1
    params.append(_sqlite_path(path[start:]))
    return f"json_extract({doc}, ?)", f"json_type({doc}, ?)", params


# The view of conversation summaries (Dialect.summaries_view_sql); each dialect fills in
# its JSON accessors. FROM a subquery: PostgreSQL would make a view of one table
# updatable, and this one is only to read. Columns are named (no *), so later migrations
# of the other columns of the items are not tied to the view.
_SUMMARIES_VIEW = f"""CREATE VIEW long_term_memories AS
SELECT i.id AS id,
    i.scope AS scope,
    COALESCE(i.session_id, {{session}}) AS session_id,
    {{summary}} AS summary,
    {{concepts}} AS key_concepts,
    {{first_id}} AS first_message_id,
    {{last_id}} AS last_message_id,
    {{count}} AS message_count,
    {{first_at}} AS first_message_at,
    {{last_at}} AS last_message_at,
    i.category AS category,
    i.status AS status,
    i.created_at AS created_at,
    i.updated_at AS updated_at
FROM (SELECT id, scope, session_id, value, category, status, created_at, updated_at
    FROM {ITEMS} WHERE kind = 'semantic'
    AND category IN ('conversation_summary', 'episode_summary')) AS i"""


class SqliteDialect(Dialect):
    """SQLite: JSON as text, timestamps as ISO-8601 text in UTC, vectors as float32 blobs."""

    name = "sqlite"
    # SQLite enforces foreign keys only on connections that ask (PRAGMA foreign_keys), and
    # no client asks by default: a plain DELETE FROM lmt_items leaves the item's vectors.
    orphans_possible = True
    # One B-tree keyed by the id, not a table and an index of it.
    keyed_table_options = " WITHOUT ROWID"
    counts_scope_changes = True

    def scope_change_migration(self) -> list[MigrationStep]:
        # Triggers, so every writer counts: this process, others, and the engine's own SQL.
        # An update counts when it may change what the cache keeps (an item's terms and
        # vectors are only written with a change of its value or length). Statuses,
        # validity, access counts and the other columns do not: which items a search may
        # return is asked of the database at every search.
        bump = self._count_sql
        return [
            f"CREATE TABLE IF NOT EXISTS {SCOPE_CHANGES}"
            " (prefix TEXT PRIMARY KEY, changes INTEGER NOT NULL)",
            f"CREATE TRIGGER IF NOT EXISTS {SCOPE_CHANGES}_insert AFTER INSERT ON {ITEMS}"
            f" BEGIN {bump('NEW')} END",
            f"CREATE TRIGGER IF NOT EXISTS {SCOPE_CHANGES}_delete AFTER DELETE ON {ITEMS}"
            f" BEGIN {bump('OLD')} END",
            f"CREATE TRIGGER IF NOT EXISTS {SCOPE_CHANGES}_update"
            f" AFTER UPDATE OF id, prefix, value, doc_len ON {ITEMS}"
            f" BEGIN {bump('OLD')} {bump('NEW')} END",
        ]

    @staticmethod
    def _count_sql(row: str) -> str:
        # A trigger's count of one change of ``row`` (NEW or OLD) in its namespace.
        return (
            f"INSERT INTO {SCOPE_CHANGES} (prefix, changes) VALUES ({row}.prefix, 1)"
            " ON CONFLICT (prefix) DO UPDATE SET changes = changes + 1;"
        )

    @staticmethod
    def _move_trigger_sql(create: str, when: str) -> str:
        # The trigger counting moves: ``create`` is how it is created, ``when`` its
        # condition (empty for none).
        return (
            f"{create} {SCOPE_CHANGES}_move"
            f" AFTER UPDATE OF status, scope, kind, {', '.join(MEMBERSHIP_TIMES)} ON {ITEMS}"
            f"{when} BEGIN INSERT INTO {SCOPE_CHANGES} (prefix, changes, moves)"
            " VALUES (NEW.prefix, 0, 1) ON CONFLICT (prefix) DO UPDATE SET moves = moves + 1; END"
        )

    in_process = True

    def namespace_load_index_migration(self) -> list[MigrationStep]:
        # The live index, extended: a namespace is then read in one range of it instead
        # of a table row per item, and the next time
        # of an item a search compares with is a range of it too.
        return [
            f"DROP INDEX IF EXISTS {ITEMS}_live",
            f"CREATE INDEX {ITEMS}_live ON {ITEMS} (prefix, status, id, valid_from,"
            " valid_until, expires_at, doc_len, scope, kind, event_at, created_at, terms)",
        ]

    logs_item_changes = True

    def change_log_migration(self) -> list[MigrationStep]:
        # The counting triggers again, each count followed by its log row; the log's own
        # trigger cuts it when a count reaches a multiple of CHANGES_KEPT.
        def counted(row: str) -> str:
            return (
                f"{self._count_sql(row)} INSERT INTO {ITEM_CHANGES} (prefix, changes, item_id)"
                f" SELECT prefix, changes, {row}.id FROM {SCOPE_CHANGES}"
                f" WHERE prefix = {row}.prefix;"
            )

        return [
            f"CREATE TABLE IF NOT EXISTS {ITEM_CHANGES} (prefix TEXT NOT NULL,"
            " changes INTEGER NOT NULL, item_id TEXT NOT NULL, PRIMARY KEY (prefix, changes))"
            " WITHOUT ROWID",
            f"CREATE TRIGGER IF NOT EXISTS {ITEM_CHANGES}_cut AFTER INSERT ON {ITEM_CHANGES}"
            f" WHEN NEW.changes % {CHANGES_KEPT} = 0 BEGIN DELETE FROM {ITEM_CHANGES}"
            f" WHERE prefix = NEW.prefix AND changes <= NEW.changes - {CHANGES_KEPT}; END",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_insert",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_delete",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_update",
            f"CREATE TRIGGER {SCOPE_CHANGES}_insert AFTER INSERT ON {ITEMS}"
            f" BEGIN {counted('NEW')} END",
            f"CREATE TRIGGER {SCOPE_CHANGES}_delete AFTER DELETE ON {ITEMS}"
            f" BEGIN {counted('OLD')} END",
            f"CREATE TRIGGER {SCOPE_CHANGES}_update"
            f" AFTER UPDATE OF id, prefix, value, doc_len ON {ITEMS}"
            f" BEGIN {counted('OLD')} {counted('NEW')} END",
            # Moves only where a value changes, as PostgreSQL counts them: a put that
            # rewrites an item sets its status and times to what they were, and would
            # otherwise make searches read their members again.
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_move",
            self._move_trigger_sql(
                "CREATE TRIGGER",
                # SQLite's own spelling: IS DISTINCT FROM came with 3.39.
                " WHEN "
                + _changed_values("status", "scope", "kind", *MEMBERSHIP_TIMES, distinct="IS NOT"),
            ),
        ]

    counts_membership_changes = True

    def membership_change_migration(self) -> list[MigrationStep]:
        # Inserts, deletes and moves already count as changes (a full reload). An update
        # of a column that decides whether a search selects an item, or of a time a
        # search compares with its instants, counts as a move: the members are read
        # again, the terms and vectors stay. Access counts do not count.
        return [
            _scope_moves_column,
            self._move_trigger_sql("CREATE TRIGGER IF NOT EXISTS", ""),
        ]

    def json_is_number(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        _, typed, params = _sqlite_lookup(path)
        return f"({typed} IN ('integer', 'real'))", params

    def json_extract(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        expr, _, params = _sqlite_lookup(path)
        return expr, params

    def json_compare(self, path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
        expr, typed, params = _sqlite_lookup(path)
        if isinstance(operand, (dict, list)):
            literal = json.dumps(operand, ensure_ascii=False, separators=(",", ":"))
            if op == "$eq":
                return f"({expr} = json(?) AND {typed} IN ('object', 'array'))", [
                    *params,
                    literal,
                    *params,
                ]
            return f"(({expr} IS NOT json(?)) OR {typed} NOT IN ('object', 'array'))", [
                *params,
                literal,
                *params,
            ]
        if isinstance(operand, bool):
            # JSON true/false come out of json_extract as 1/0; check the JSON type too.
            kind = "true" if operand else "false"
            if op == "$eq":
                return f"({typed} = ?)", [*params, kind]
            return f"({typed} IS NOT ?)", [*params, kind]
        if operand is None:
            if op == "$eq":
                return f"({typed} = 'null')", params
            return f"({typed} IS NOT 'null')", params
        sql_op = _COMPARATORS[op]
        operand = _sqlite_number(operand)
        if op in ("$eq", "$ne"):
            # Strings only equal strings, numbers only numbers, as in JSON.
            type_ok = "('text')" if isinstance(operand, str) else "('integer', 'real')"
            if op == "$eq":
                return f"({expr} = ? AND {typed} IN {type_ok})", [*params, operand, *params]
            return f"({expr} IS NOT ? OR {typed} NOT IN {type_ok} OR {typed} IS NULL)", [
                *params,
                operand,
                *params,
                *params,
            ]
        if isinstance(operand, str):
            return f"({typed} = 'text' AND {expr} {sql_op} ?)", [*params, *params, operand]
        return f"({typed} IN ('integer', 'real') AND {expr} {sql_op} ?)", [
            *params,
            *params,
            operand,
        ]


_INT64 = (-(2**63), 2**63 - 1)


def _sqlite_number(operand: Any) -> Any:
    """``operand`` as SQLite can bind it: an integer beyond 64 bits as the nearest float
    (as SQLite's JSON functions read such a number in a value), beyond floats as an
    infinity; anything else as it is."""
    if isinstance(operand, bool) or not isinstance(operand, int):
        return operand
    if _INT64[0] <= operand <= _INT64[1]:
        return operand
    try:
        return float(operand)
    except OverflowError:
        return math.inf if operand > 0 else -math.inf


@functools.lru_cache(maxsize=16)
def _vector_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


_COMPARATORS = {"$eq": "=", "$ne": "<>", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


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
    json_type = "JSONB"
    ts_type = "TIMESTAMPTZ"
    serial_key = "BIGSERIAL PRIMARY KEY"

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

    def migration_lock_sql(self) -> str | None:
        return "SELECT pg_advisory_xact_lock(hashtext('langmem_tiers.migrations'))"

    def sync_serial_sql(self, table: str, column: str) -> str | None:
        return (
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
            f" GREATEST((SELECT max({column}) FROM {table}), 1))"
        )

    def byte_order_migration(self) -> list[MigrationStep]:
        # The vector table is created after the numbered migrations (it needs the
        # embedder's dimensions), so it may not exist yet; vector_migrations declares "C".
        return [
            f'ALTER TABLE {ITEMS} ALTER COLUMN prefix TYPE TEXT COLLATE "C"',
            f"DO $$ BEGIN IF to_regclass('{VECTORS}') IS NOT NULL THEN"
            f' ALTER TABLE {VECTORS} ALTER COLUMN prefix TYPE TEXT COLLATE "C"; END IF; END $$',
        ]

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

    def summaries_view_sql(self) -> str:
        ids = "i.value -> 'source_message_ids'"
        return _SUMMARIES_VIEW.format(
            session=(
                "CASE WHEN jsonb_typeof(i.value -> 'session_id') = 'string'"
                " THEN i.value ->> 'session_id' END"
            ),
            summary="i.value ->> 'content'",
            concepts="i.value -> 'key_concepts'",
            first_id=f"{ids} ->> 0",
            last_id=f"{ids} ->> (-1)",
            count=f"CASE WHEN jsonb_typeof({ids}) = 'array' THEN jsonb_array_length({ids}) END",
            first_at="i.value ->> 'first_message_at'",
            last_at="i.value ->> 'last_message_at'",
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
        arrays = ", ".join(f"?::{_UPDATE_COLUMN_TYPES[c]}[]" for c in columns)
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

    def forget_access_sql(self) -> list[str]:
        # Per statement, from its transition table: one join a delete, not a row's trigger.
        return [
            f"CREATE OR REPLACE FUNCTION {ITEM_ACCESS}_forget() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
            f" DELETE FROM {ITEM_ACCESS} a USING gone g WHERE a.id = g.id; RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {ITEM_ACCESS}_forget ON {ITEMS}",
            f"CREATE TRIGGER {ITEM_ACCESS}_forget AFTER DELETE ON {ITEMS}"
            " REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {ITEM_ACCESS}_forget()",
        ]

    def not_indexed(self, expr: str) -> str:
        return expr

    def filter_only(self, expr: str) -> str:
        return f"({expr} || '')"

    packed_separator_sql = "chr(31)"

    def packed_sql(self, expr: str) -> str:
        return f"string_agg({expr}, chr(31))"

    def scope_postings_sql(self, term_set: str) -> str:
        return (
            "SELECT c.id, t.term, t.tf, c.doc_len FROM c"
            f" CROSS JOIN LATERAL {TERM_ROWS}(c.terms) AS t WHERE t.term IN {term_set}"
        )

    counts_scope_changes = True

    def scope_change_upgrade_migration(self) -> list[MigrationStep]:
        # The same counts as SQLite's triggers (see SqliteDialect.scope_change_migration).
        # Inserts and deletes count per statement, from the statement's transition table:
        # a batch of 500 new items (one COPY) costs one upsert per namespace, not one per
        # row, and the namespaces' counters are locked in byte order. Transition tables
        # cannot go with a column list, and an update without one would count access counts
        # and statuses too (every search and every flush of access counts): updates count
        # per row, when the statement sets a column the cached data depends on.
        bump = (
            f"INSERT INTO {SCOPE_CHANGES} AS s (prefix, changes) {{rows}}"
            " ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + excluded.changes;"
        )
        statement = bump.format(
            rows="SELECT prefix, count(*) FROM changed_rows GROUP BY prefix ORDER BY prefix"
        )
        row = bump.format(
            rows="SELECT p, 1 FROM (SELECT DISTINCT unnest(ARRAY[OLD.prefix, NEW.prefix]) AS p) x"
            ' ORDER BY p COLLATE "C"'
        )
        return [
            f"CREATE TABLE IF NOT EXISTS {SCOPE_CHANGES}"
            ' (prefix TEXT COLLATE "C" PRIMARY KEY, changes BIGINT NOT NULL)',
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_statement() RETURNS trigger"
            f" LANGUAGE plpgsql AS $$ BEGIN {statement} RETURN NULL; END $$",
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_row() RETURNS trigger"
            f" LANGUAGE plpgsql AS $$ BEGIN {row} RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_insert ON {ITEMS}",
            f"CREATE TRIGGER {SCOPE_CHANGES}_insert AFTER INSERT ON {ITEMS}"
            " REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {SCOPE_CHANGES}_statement()",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_delete ON {ITEMS}",
            f"CREATE TRIGGER {SCOPE_CHANGES}_delete AFTER DELETE ON {ITEMS}"
            " REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {SCOPE_CHANGES}_statement()",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_update ON {ITEMS}",
            f"CREATE TRIGGER {SCOPE_CHANGES}_update"
            f" AFTER UPDATE OF id, prefix, value, doc_len ON {ITEMS}"
            f" FOR EACH ROW EXECUTE FUNCTION {SCOPE_CHANGES}_row()",
        ]

    logs_item_changes = True

    def change_log_migration(self) -> list[MigrationStep]:
        # The counting functions again, each count logged with its item. An insert or a
        # delete of n items of a namespace counts n at once, the log rows numbered from
        # the old count up; an update counts once per distinct (namespace, item) of its
        # old and new row, as SQLite's trigger does. The log's own row trigger cuts it when
        # a count reaches a multiple of CHANGES_KEPT (its condition, false for all other
        # rows, queues nothing).
        counted = self._count_changes_sql
        row = counted("pairs").replace(
            "WITH ",
            "WITH pairs AS (SELECT DISTINCT p AS prefix, i AS id FROM"
            " (VALUES (OLD.prefix, OLD.id), (NEW.prefix, NEW.id)) x (p, i)), ",
            1,
        )
        return [
            f'CREATE TABLE IF NOT EXISTS {ITEM_CHANGES} (prefix TEXT COLLATE "C" NOT NULL,'
            " changes BIGINT NOT NULL, item_id TEXT NOT NULL, PRIMARY KEY (prefix, changes))",
            f"CREATE OR REPLACE FUNCTION {ITEM_CHANGES}_cut() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
            f" DELETE FROM {ITEM_CHANGES} WHERE prefix = NEW.prefix"
            f" AND changes <= NEW.changes - {CHANGES_KEPT}; RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {ITEM_CHANGES}_cut ON {ITEM_CHANGES}",
            f"CREATE TRIGGER {ITEM_CHANGES}_cut AFTER INSERT ON {ITEM_CHANGES} FOR EACH ROW"
            f" WHEN (NEW.changes % {CHANGES_KEPT} = 0) EXECUTE FUNCTION {ITEM_CHANGES}_cut()",
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_statement() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS"
            f" $$ BEGIN {counted('changed_rows')} RETURN NULL; END $$",
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_row() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS"
            f" $$ BEGIN {row} RETURN NULL; END $$",
        ]

    @staticmethod
    def _count_changes_sql(changed: str) -> str:
        # The counters of the namespaces of ``changed`` (rows of prefix and id) moved by
        # their rows, each count logged with its item (see change_log_migration).
        return (
            f"WITH counted AS (SELECT prefix, count(*) AS n FROM {changed} GROUP BY prefix),"
            f" bumped AS (INSERT INTO {SCOPE_CHANGES} AS s (prefix, changes)"
            ' SELECT prefix, n FROM counted ORDER BY prefix COLLATE "C"'
            " ON CONFLICT (prefix) DO UPDATE SET changes = s.changes + excluded.changes"
            " RETURNING s.prefix, s.changes)"
            f" INSERT INTO {ITEM_CHANGES} (prefix, changes, item_id)"
            " SELECT r.prefix, b.changes + 1 - row_number() OVER"
            f" (PARTITION BY r.prefix ORDER BY r.id), r.id FROM {changed} r"
            " JOIN bumped b ON b.prefix = r.prefix;"
        )

    def update_count_per_statement_migration(self) -> list[MigrationStep]:
        # The row trigger ran the counting statement once per updated row, each a new
        # version of the namespace's counter row in the transaction, which the next one
        # walks to: each row cost more than the one before, quadratic in a statement's
        # rows. Counted from the statement's transition tables instead, once. A
        # statement trigger takes no column list with them, so the rows counted are those
        # whose cached columns differ: an access count, a TTL or a status alone counts
        # nothing, as before; a put always sets updated_at, so it always counts.
        differ = " OR ".join(f"o.{c} IS DISTINCT FROM n.{c}" for c in _COUNTED_ON_UPDATE)
        pairs = (
            "WITH pairs AS (SELECT o.prefix, o.id FROM old_rows o"
            f" LEFT JOIN new_rows n ON n.id = o.id WHERE n.id IS NULL OR {differ}"
            " UNION SELECT n.prefix, n.id FROM new_rows n"
            f" LEFT JOIN old_rows o ON o.id = n.id WHERE o.id IS NULL OR {differ}), "
        )
        statement = self._count_changes_sql("pairs").replace("WITH ", pairs, 1)
        return [
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_updated() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS"
            f" $$ BEGIN {statement} RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {SCOPE_CHANGES}_update ON {ITEMS}",
            f"CREATE TRIGGER {SCOPE_CHANGES}_update AFTER UPDATE ON {ITEMS}"
            " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {SCOPE_CHANGES}_updated()",
            f"DROP FUNCTION IF EXISTS {SCOPE_CHANGES}_row()",
        ]

    def upsert_items_arrays_sql(self) -> str | None:
        # One statement: a statement per row cost a round trip's worth of work each.
        arrays = ", ".join(f"?::{_ITEM_COLUMN_TYPES[c]}[]" for c in item_columns)
        updates = ", ".join(f"{c} = excluded.{c}" for c in item_columns if c not in _KEEP_ON_UPDATE)
        return (
            f"INSERT INTO {ITEMS} ({', '.join(item_columns)}) SELECT * FROM unnest({arrays})"
            f" ON CONFLICT (id) DO UPDATE SET {updates}"
        )

    counts_membership_changes = True

    def membership_change_upgrade_migration(self) -> list[MigrationStep]:
        # The same moves as SQLite's trigger counts, logged rather than counted in place:
        # a row trigger updating a namespace's counter would take it inside statements
        # that lock item rows first (a TTL refresh, status changes), while the writer
        # takes counters before its rows, an order two transactions could meet from both
        # ends. An insert locks no row anyone else holds. Writers, holding the counters,
        # fold the log into them; a search sums both in its snapshot.
        changed = _changed_values("status", "scope", "kind", *MEMBERSHIP_TIMES)
        return [
            _scope_moves_column,
            f'CREATE TABLE IF NOT EXISTS {SCOPE_MOVES} (prefix TEXT COLLATE "C" NOT NULL)',
            # What a writer's one statement does (lock_scope_changes_sql): the counters in
            # byte order, then, holding them, the fold. Each statement of the function
            # has its own snapshot, so a fold sees what the one before it left, and rows
            # logged by transactions still open stay for a later one.
            f"CREATE OR REPLACE FUNCTION {SCOPE_CHANGES}_take(wanted text[]) RETURNS void"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
            f" {self._take_counters_sql('wanted')};"
            f" WITH folded AS (DELETE FROM {SCOPE_MOVES} WHERE prefix = ANY(wanted)"
            f" RETURNING prefix) {self._add_folded_sql()}; END $$",
            f"CREATE INDEX IF NOT EXISTS {SCOPE_MOVES}_prefix ON {SCOPE_MOVES} (prefix)",
            f"CREATE OR REPLACE FUNCTION {SCOPE_MOVES}_row() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
            f" INSERT INTO {SCOPE_MOVES} (prefix) VALUES (NEW.prefix); RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {SCOPE_MOVES}_update ON {ITEMS}",
            f"CREATE TRIGGER {SCOPE_MOVES}_update"
            f" AFTER UPDATE OF status, scope, kind, {', '.join(MEMBERSHIP_TIMES)} ON {ITEMS}"
            f" FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION {SCOPE_MOVES}_row()",
        ]

    def next_time_sql(self, under: str, params: Sequence[Any], since: Any) -> tuple[str, list[Any]]:
        # One pass over the namespace's rows: a min() per time, each its own branch (as on
        # SQLite, where the live index holds every time), took far longer to plan than to
        # run, in every statement that reads a namespace.
        firsts = ", ".join(f"min(CASE WHEN i.{c} > ? THEN i.{c} END)" for c in MEMBERSHIP_TIMES)
        return (
            f"(SELECT least({firsts}) FROM {ITEMS} i WHERE {under})",
            [*(since for _ in MEMBERSHIP_TIMES), *params],
        )

    def membership_times_index_migration(self) -> list[MigrationStep]:
        # Without the two last times, that pass read every row of the namespace from the
        # table: where namespaces interleave, a page per item, in a namespace's first
        # search.
        live = ["prefix", "status", "id", "valid_from", "valid_until", "expires_at", "doc_len"]
        live += ["scope", "kind", *(t for t in MEMBERSHIP_TIMES if t not in live)]
        return [
            f"DROP INDEX IF EXISTS {ITEMS}_live",
            f"CREATE INDEX {ITEMS}_live ON {ITEMS} ({', '.join(live)})",
        ]

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

    def postings_index_migration(self) -> list[MigrationStep]:
        return [f"CREATE INDEX IF NOT EXISTS {TERMS}_term ON {TERMS} (term, item_id) INCLUDE (tf)"]

    def terms_cascade_migration(self) -> list[MigrationStep]:
        # The key was checked row by row, half the cost of writing a put's terms, while
        # the store writes an item's terms only after the item in the same transaction.
        # What the key did on delete, a statement trigger does once per statement; its
        # search path is the schema's, whatever the deleting session's is.
        return [
            "DO $$ DECLARE c record; BEGIN FOR c IN SELECT conname FROM pg_constraint"
            f" WHERE conrelid = '{TERMS}'::regclass AND contype = 'f' LOOP"
            f" EXECUTE format('ALTER TABLE {TERMS} DROP CONSTRAINT %I', c.conname);"
            " END LOOP; END $$",
            f"CREATE OR REPLACE FUNCTION {TERMS}_of_deleted_items() RETURNS trigger"
            " LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ BEGIN"
            f" DELETE FROM {TERMS} t USING deleted d WHERE t.item_id = d.id;"
            " RETURN NULL; END $$",
            f"DROP TRIGGER IF EXISTS {TERMS}_of_deleted_items ON {ITEMS}",
            f"CREATE TRIGGER {TERMS}_of_deleted_items AFTER DELETE ON {ITEMS}"
            " REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {TERMS}_of_deleted_items()",
        ]

    def json_terms_view_migration(self) -> list[MigrationStep]:
        return []  # the terms were a view already (terms_view_migration)

    def terms_view_migration(self) -> list[MigrationStep]:
        # Every term row cost a B-tree insert into the key and another into the term
        # index, a dozen or more rows for each item put. The items keep their terms packed
        # beside them, which is what searches that cache a namespace read; searches in SQL
        # unpack them in the statement from the rows the set is read from. The view
        # keeps the table's rows readable for plain SQL. The function is a plain SQL one,
        # so the planner inlines it; OFFSET 0 splits the text once per item, not per term.
        return [
            f"DROP TRIGGER IF EXISTS {TERMS}_of_deleted_items ON {ITEMS}",
            f"DROP FUNCTION IF EXISTS {TERMS}_of_deleted_items()",
            f"DROP TABLE IF EXISTS {TERMS}",
            f"CREATE OR REPLACE FUNCTION {TERM_ROWS}(packed TEXT)"
            " RETURNS TABLE (term TEXT, tf INTEGER) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$"
            " SELECT s.a[2 * k - 1], s.a[2 * k]::integer"
            " FROM (SELECT string_to_array(packed, chr(31)) AS a OFFSET 0) AS s,"
            " generate_series(1, cardinality(s.a) / 2) AS k $$",
            f"CREATE VIEW {TERMS} AS SELECT i.id AS item_id, t.term, t.tf FROM {ITEMS} i"
            f" CROSS JOIN LATERAL {TERM_ROWS}(i.terms) AS t",
            # A process still on an earlier release writes and deletes terms rows beside
            # the packed column it also writes: those statements change nothing now, so
            # its puts go on working until it is upgraded too.
            f"CREATE OR REPLACE FUNCTION {TERMS}_rows_ignored() RETURNS trigger"
            " LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
            f"CREATE TRIGGER {TERMS}_rows_ignored INSTEAD OF INSERT OR UPDATE OR DELETE"
            f" ON {TERMS} FOR EACH ROW EXECUTE FUNCTION {TERMS}_rows_ignored()",
        ]

    def terms_key_migration(self) -> list[MigrationStep]:
        # One index with tf as an included column: the per-item range read stays
        # index-only, and a write maintains one B-tree instead of two.
        return [
            # The id migration before this one defers the foreign keys; their pending
            # checks are run now, since a table with pending trigger events cannot be altered.
            "SET CONSTRAINTS ALL IMMEDIATE",
            f"ALTER TABLE {TERMS} DROP CONSTRAINT IF EXISTS {TERMS}_pkey",
            f"DROP INDEX IF EXISTS {TERMS}_item_term",
            f"ALTER TABLE {TERMS} ADD CONSTRAINT {TERMS}_pkey PRIMARY KEY (item_id, term)"
            " INCLUDE (tf)",
        ]

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

    def vector_migrations(self, dims: int) -> list[str]:
        return [
            f"""CREATE TABLE {VECTORS} (
                item_id TEXT NOT NULL REFERENCES {ITEMS} (id) ON DELETE CASCADE,
                field TEXT NOT NULL,
                prefix TEXT COLLATE "C" NOT NULL,
                embedding vector({int(dims)}) NOT NULL,
                PRIMARY KEY (item_id, field)
            )""",
            f"CREATE INDEX {VECTORS}_prefix ON {VECTORS} (prefix)",
        ]

    def json_extract(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        return "(value #> ?::text[])", [list(path)]

    def json_is_number(self, path: Sequence[str]) -> tuple[str, list[Any]]:
        expr, params = self.json_extract(path)
        return f"(jsonb_typeof({expr}) = 'number')", params

    def json_compare(self, path: Sequence[str], op: str, operand: Any) -> tuple[str, list[Any]]:
        expr, params = self.json_extract(path)
        literal = json.dumps(operand, ensure_ascii=False)
        if op == "$eq":
            return f"({expr} = ?::jsonb)", [*params, literal]
        if op == "$ne":
            return f"({expr} IS DISTINCT FROM ?::jsonb)", [*params, literal]
        kind = "string" if isinstance(operand, str) else "number"
        return f"(jsonb_typeof({expr}) = ? AND {expr} {_COMPARATORS[op]} ?::jsonb)", [
            *params,
            kind,
            *params,
            literal,
        ]
